/** Attempts: start, time-to-run, give-back, release, concurrency, retention, stats and sweep limits. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SEC, type SuiteHelpers, type SuiteTarget } from './shared';
import { partitionOf } from '../../../lib/testing';

/** Declares the describe 'time-to-run, release, concurrency and retention'. */
export function attempts(target: SuiteTarget, h: SuiteHelpers): void {
  const { setup, claimOne, sweep } = h;

  describe('time-to-run, release, concurrency and retention', () => {
    it('an attempt not acked within its ttr fails, is retried, and its late ack is refused', async () => {
      const { q, topic, clock } = setup({ ttr: 30, maxAttempts: 2, backoff: { type: 'fixed', delay: 5 } });
      await q.add({ topic, id: 'slow', delay: 0 });
      await sweep(q);
      const first = await claimOne(q, topic);
      assert.deepEqual(await q.engine.start(topic, [first]), [true], 'a handler started it');
      assert.deepEqual(
        await q.engine.start(topic, [first]),
        [false],
        'a duplicate event of the same attempt does not run it again',
      );
      clock.advance(30 * SEC - 1);
      assert.equal((await sweep(q)).retried, 0, 'not expired 1 ms before the deadline');
      clock.advance(1);
      const swept = await sweep(q);
      assert.equal(swept.retried, 1);
      const timedOut = await q.get(topic, 'slow');
      assert.equal(timedOut?.state, 'delayed');
      assert.equal(timedOut?.runAt, new Date(clock.now + 5 * SEC).toISOString());
      assert.match(timedOut?.lastError ?? '', /timed out/);
      assert.equal(
        await q.engine.ack(topic, 'slow', first),
        'stale',
        'the late ack of the timed-out attempt changes nothing',
      );
      assert.equal((await q.engine.fail(topic, 'slow', first, 'late')).outcome, 'stale');
      assert.deepEqual(
        await q.engine.start(topic, [first, { id: 'gone', attempt: 1, claim: 'x' }]),
        [false, false],
        'ended, or not found',
      );

      clock.advance(5 * SEC);
      await sweep(q);
      const second = await claimOne(q, topic);
      assert.equal(second.attempt, 2);
      clock.advance(30 * SEC);
      const lost = await sweep(q);
      assert.equal(lost.givenBack, 1, 'no handler started attempt 2: given back, not counted');
      assert.equal((await q.get(topic, 'slow'))?.state, 'ready');
      const third = await claimOne(q, topic);
      assert.equal(third.attempt, 2);
      assert.notEqual(third.claim, second.claim, 'every claim has its own token');
      assert.equal(await q.engine.ack(topic, 'slow', second), 'stale', 'the given-back claim is stale');
      assert.deepEqual(await q.engine.start(topic, [third]), [true]);
      clock.advance(30 * SEC);
      const last = await sweep(q);
      assert.equal(last.deadLettered, 1);
      assert.equal((await q.get(topic, 'slow'))?.state, 'dead');
    });

    it('a job-level ttr overrides the topic', async () => {
      const { q, topic, clock } = setup({ ttr: 30 });
      await q.add({ topic, id: 't', delay: 0, ttr: 2 });
      await sweep(q);
      const job = await claimOne(q, topic);
      assert.equal(job.deadline, clock.now + 2 * SEC);
    });

    it('release gives claimed jobs back without counting an attempt', async () => {
      const { q, topic } = setup();
      await q.add({ topic, id: 'r1', delay: 0 });
      await q.add({ topic, id: 'r2', delay: 0 });
      await sweep(q);
      const claimed = await q.engine.claim(topic, 2);
      assert.equal(await q.engine.release(claimed), 2);
      assert.equal(await q.engine.release(claimed), 0, 'a second release finds nothing running');
      const stats = await q.stats(topic);
      assert.equal(stats.ready, 2);
      assert.equal(stats.running, 0);
      const again = await q.engine.claim(topic, 2);
      assert.deepEqual(again.map((j) => j.attempt).sort(), [1, 1]);
    });

    it('claim keeps a topic under its concurrency', async () => {
      const { q, topic } = setup({ concurrency: 3 });
      for (let i = 0; i < 5; i++) await q.add({ topic, id: `c${i}`, delay: 0 });
      await sweep(q);
      const first = await q.engine.claim(topic, 10);
      assert.equal(first.length, 3);
      assert.deepEqual(await q.engine.claim(topic, 10), []);
      await q.engine.ack(topic, first[0]!.id, first[0]!);
      assert.equal((await q.engine.claim(topic, 10)).length, 1);
    });

    it('purges done and cancelled jobs after the retention, dead ones after the dead retention', async () => {
      const { q, topic, clock } = setup({ maxAttempts: 1 }, { retention: 60, deadRetention: 600 });
      await q.add({ topic, id: 'ok', delay: 0 });
      await q.add({ topic, id: 'bad', delay: 0 });
      await q.add({ topic, id: 'cx', delay: 100 });
      await sweep(q);
      for (const job of await q.engine.claim(topic, 2)) {
        if (job.id === 'ok') await q.engine.ack(topic, job.id, job);
        else await q.engine.fail(topic, job.id, job, 'x');
      }
      await q.cancel(topic, 'cx');
      clock.advance(60 * SEC);
      assert.equal((await sweep(q)).purged, 2);
      assert.equal(await q.get(topic, 'ok'), null);
      assert.equal(await q.get(topic, 'cx'), null);
      assert.equal((await q.get(topic, 'bad'))?.state, 'dead');
      assert.equal((await q.add({ topic, id: 'ok', delay: 0 })).status, 'created', 'a purged id can be used again');
      clock.advance(540 * SEC + 1);
      assert.equal((await sweep(q)).purged, 1);
      assert.equal(await q.get(topic, 'bad'), null);
      assert.equal((await q.stats(topic)).dead, 0);
    });

    it('stats count each state and give the next due time', async () => {
      const { q, topic, clock } = setup();
      await q.add({ topic, id: 's1', delay: 0 });
      await q.add({ topic, id: 's2', delay: 0 });
      await q.add({ topic, id: 's3', delay: 50 });
      await sweep(q);
      await q.engine.claim(topic, 1);
      const { lateness, oldestReadyAgeMs, lastHour, ...counts } = await q.stats(topic);
      assert.deepEqual(counts, {
        topic,
        flow: false,
        delayed: 1,
        ready: 1,
        running: 1,
        dead: 0,
        expired: 0,
        nextDueAt: new Date(clock.now + 50 * SEC).toISOString(),
        paused: false,
      });
      assert.equal(oldestReadyAgeMs, 0, 'the ready job fell due at the (fixed) present');
      assert.deepEqual(
        lateness,
        { windowSeconds: 300, started: 0, p50Ms: null, p99Ms: null, maxMs: null },
        'no handler started anything',
      );
      assert.equal(lastHour.length, 60);
    });

    it('sweep reports the next due time and TTR deadline, and more when it hit its limit', async () => {
      const { q, topic, clock } = setup({ ttr: 5 });
      // all in one partition, so the per-partition limit of 3 is what stops the first sweep
      const ids = Array.from({ length: 500 }, (_, i) => `n${i}`).filter(
        (id) => partitionOf(topic, id, target.partitions) === 0,
      );
      for (const id of ids.slice(0, 5)) await q.add({ topic, id, delay: 0 });
      await q.add({ topic, id: ids[5]!, delay: 60 });
      const first = await q.engine.sweep(3);
      assert.equal(first.moved, 3);
      assert.equal(first.more, true);
      const second = await q.engine.sweep(3);
      assert.equal(second.moved, 2);
      assert.equal(second.more, false);
      assert.equal(second.nextAt, clock.now + 60 * SEC);
      await q.engine.claim(topic, 1);
      assert.equal((await q.engine.sweep()).nextAt, clock.now + 5 * SEC, 'a TTR deadline counts as next');
    });
  });
}
