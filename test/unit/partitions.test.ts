import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { batchesByPartition, chunk, forEachPartition, groupBy, partitionsInOrder, Rotation } from '../../lib/testing';

describe('partition helpers', () => {
  it('groupBy keeps first-seen order of groups and of items', () => {
    assert.deepEqual(
      [...groupBy([3, 1, 4, 1, 5, 9, 2, 6], (n) => n % 3)],
      [
        [0, [3, 9, 6]],
        [1, [1, 4, 1]],
        [2, [5, 2]],
      ],
    );
  });

  it('chunk cuts runs of at most size', () => {
    assert.deepEqual(chunk([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]);
    assert.deepEqual(chunk([], 2), []);
  });

  it('batchesByPartition: per partition, one batch list per topic, each batch of one topic and at most size', () => {
    const items = [
      { p: 1, t: 'a', n: 1 },
      { p: 0, t: 'b', n: 2 },
      { p: 1, t: 'b', n: 3 },
      { p: 1, t: 'a', n: 4 },
      { p: 1, t: 'a', n: 5 },
      { p: 0, t: 'b', n: 6 },
    ];
    const batches = batchesByPartition(items, { partition: (i) => i.p, topic: (i) => i.t }, 2);
    const ns = [...batches].map(([p, bs]) => [p, bs.map((b) => b.map((i) => i.n))]);
    assert.deepEqual(ns, [
      [1, [[1, 4], [5], [3]]],
      [0, [[2, 6]]],
    ]);
  });

  it('forEachPartition runs every partition, results in partition order', async () => {
    assert.deepEqual(await forEachPartition(4, async (p) => p * 10), [0, 10, 20, 30]);
    assert.deepEqual(partitionsInOrder(3), [0, 1, 2]);
  });

  it('a Rotation starts one partition further each time', () => {
    const r = new Rotation();
    assert.deepEqual(
      [r.order(3), r.order(3), r.order(3), r.order(3)],
      [
        [0, 1, 2],
        [1, 2, 0],
        [2, 0, 1],
        [0, 1, 2],
      ],
    );
    assert.deepEqual(new Rotation().order(1), [0]);
  });
});

describe('Rotation.spread (where a batch add puts each run of ids it generates)', () => {
  it('takes every partition once in each round of `count` calls, from wherever it starts', () => {
    for (const count of [2, 3, 12, 36, 100]) {
      const r = new Rotation(7);
      for (let round = 0; round < 3; round++) {
        const taken = Array.from({ length: count }, () => r.spread(count));
        assert.deepEqual(
          [...taken].sort((a, b) => a - b),
          Array.from({ length: count }, (_, i) => i),
          `${count}: round ${round}`,
        );
      }
    }
  });

  it('spreads a round over the primaries: each holds within 2 runs of its share after any number of calls', () => {
    // a primary holds a run of consecutive partitions (36 on 9 primaries: 4 each)
    for (const [count, primaries] of [
      [12, 3],
      [36, 9],
      [24, 6],
    ] as const) {
      for (let start = 0; start < count; start++) {
        const r = new Rotation(start);
        const per = new Array<number>(primaries).fill(0);
        for (let k = 1; k <= 2 * count; k++) {
          per[Math.floor(r.spread(count) / (count / primaries))]! += 1;
          for (const n of per)
            assert.ok(Math.abs(n - k / primaries) <= 2, `${count}/${primaries} from ${start}: ${per}`);
        }
      }
    }
  });
});
