/**
 * A flow key's pace (`rate: { count, per, burst }`, a GCRA: one start every per/count, with a
 * tolerance of burst - 1 of those intervals) measured against a real redis-server on a fixed
 * clock: a key with a backlog is swept and claimed every 10 ms for a few `per`, and the starts in
 * every window of `per` are counted. From rest a window holds count + burst - 1 starts (burst at
 * once, then one every per/count), never more; once the backlog keeps the key busy, count. The
 * README and openapi.yaml state that bound.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { makeQueue, TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';

const W = { name: 'producer', scope: 'write', topics: null } as const;

/** The most of `times` (sorted, ms) in any window [s, s + perMs) that starts at or after `from`. */
function mostInWindow(times: readonly number[], perMs: number, from = -Infinity): number {
  let most = 0;
  for (let i = 0; i < times.length; i++) {
    if (times[i]! < from) continue;
    let n = 0;
    for (let j = i; j < times.length && times[j]! < times[i]! + perMs; j++) n++;
    most = Math.max(most, n);
  }
  return most;
}

describe("a flow key's pace", () => {
  const redis = useRedisServer();

  /** Claim times (ms from the first) of a backlog of `jobs` of one key, swept and claimed every 10 ms for `forMs`. */
  async function starts(rate: { count: number; per: number; burst: number }, jobs: number, forMs: number) {
    const topic = uniqueTopic('pace');
    const clock = new TestClock();
    const q = makeQueue(redis.client(), { [topic]: { concurrency: 1000, ttr: 3600, flow: { rate } } }, { clock });
    const { outcomes } = await q.addMany(
      Array.from({ length: jobs }, (_, i) => ({ topic, id: `j${i}`, delay: 0, key: 'k' })),
      W,
    );
    assert.ok(outcomes.every((o) => o.status === 'created'));
    const start = clock.now;
    const times: number[] = [];
    for (let t = 0; t <= forMs; t += 10, clock.advance(10)) {
      await q.engine.sweep();
      for (let got = await q.engine.claim(topic, 100); got.length > 0; got = await q.engine.claim(topic, 100))
        times.push(...got.map(() => clock.now - start));
    }
    assert.ok(times.length < jobs, 'the backlog lasted');
    return times;
  }

  for (const rate of [
    { count: 10, per: 1, burst: 5 },
    { count: 10, per: 1, burst: 10 },
    { count: 10, per: 1, burst: 1 },
    { count: 4, per: 2, burst: 3 },
  ])
    it(`count ${rate.count}, per ${rate.per}, burst ${rate.burst}: count + burst - 1 in a window of per from rest, count once busy`, async () => {
      const perMs = rate.per * 1000;
      const times = await starts(rate, 200, 3 * perMs);
      assert.deepEqual(
        times.slice(0, rate.burst),
        Array.from({ length: rate.burst }, () => 0),
        'burst at once from rest',
      );
      assert.equal(mostInWindow(times, perMs), rate.count + rate.burst - 1, 'the most in any window of per');
      assert.equal(mostInWindow(times, perMs, 1), rate.count, 'the most in a window after the first instant');
      const interval = perMs / rate.count;
      assert.deepEqual(
        times.slice(rate.burst),
        Array.from({ length: times.length - rate.burst }, (_, i) => (i + 1) * interval),
        'then one every per/count',
      );
    });

  it('the docs state that bound, not count per per', () => {
    const root = join(__dirname, '../..');
    const read = (file: string) => readFileSync(join(root, file), 'utf8');
    const docs = existsSync(join(root, 'docs'))
      ? readdirSync(join(root, 'docs'))
          .filter((f) => f.endsWith('.md'))
          .map((f) => `docs/${f}`)
      : [];
    for (const file of ['README.md', ...docs, 'openapi.yaml', 'lib/client.ts'])
      assert.ok(!read(file).includes('at most `count` starts per `per` seconds'), `${file} says count per per`);
    for (const file of ['openapi.yaml', 'lib/client.ts'])
      assert.ok(read(file).includes('`count + burst - 1`'), `${file} names count + burst - 1`);
    assert.ok(
      ['README.md', ...docs].some((file) => read(file).includes('`count + burst - 1`')),
      'the README (or docs/) names count + burst - 1',
    );
  });
});
