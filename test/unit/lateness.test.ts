import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { binUpperMs, parseMinutes, percentileMs } from '../../lib/testing';

/** The bin lua/includes/lateness.lua puts `ms` in. */
const binOf = (ms: number) => Math.floor((4 * Math.log(ms + 1)) / Math.log(2));

describe('lateness histogram (issue 14, item 5)', () => {
  it("a bin's upper bound is at or above every value in it, and at most 19 % (+1 ms) above it", () => {
    for (const ms of [0, 1, 2, 3, 7, 10, 99, 100, 1000, 12_345, 60_000, 3_600_000, 86_400_000]) {
      const upper = binUpperMs(binOf(ms));
      assert.ok(upper >= ms, `${ms} ms: upper ${upper}`);
      assert.ok(upper <= ms * 1.19 + 1, `${ms} ms: upper ${upper}`);
    }
  });

  it('percentiles come from merged bins; empty gives null', () => {
    const bins = new Map<number, number>();
    for (let ms = 1; ms <= 100; ms++) bins.set(binOf(ms), (bins.get(binOf(ms)) ?? 0) + 1);
    const p50 = percentileMs(bins, 50)!;
    const p99 = percentileMs(bins, 99)!;
    assert.ok(p50 >= 50 && p50 <= 50 * 1.19 + 1, `p50 ${p50}`);
    assert.ok(p99 >= 99 && p99 <= 99 * 1.19 + 1, `p99 ${p99}`);
    assert.equal(percentileMs(new Map(), 99), null);
  });

  it('parses the stored minutes of a stats hash, each with its bins and their sum, and passes over what is not one', () => {
    assert.deepEqual(
      parseMinutes({
        m0: '29529000|250',
        'm0/0': '1',
        'm0/31': '2',
        m1: '29529001|4',
        'm1/9': '1',
        'm2/5': '7',
        'm1:3': '1',
        m3: 'garbage',
        m4: '29529004|1|4',
        other: '1',
      }),
      [
        {
          minute: 29529000,
          n: 3,
          max: 250,
          bins: new Map([
            [0, 1],
            [31, 2],
          ]),
        },
        { minute: 29529001, n: 1, max: 4, bins: new Map([[9, 1]]) },
      ],
    );
    assert.deepEqual(parseMinutes({}), []);
  });
});
