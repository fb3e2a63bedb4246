/** Failed attempts: every backoff, Retry-After, dead letters, dead pages and redrive. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Queue } from '../../support/queue';
import { makeQueue, TestClock, uniqueTopic } from '../../support/queue';
import { HOUR, MIN, SEC, type SuiteHelpers, type SuiteTarget } from './shared';

/** Declares the describe 'retries and backoff'. */
export function retriesDead(target: SuiteTarget, h: SuiteHelpers): void {
  const { setup, claimOne, sweep } = h;

  describe('retries and backoff', () => {
    /** Fails attempt after attempt; returns the delays (ms) between each failure and the retry. */
    async function failAll(
      q: Queue,
      topic: string,
      clock: TestClock,
      id: string,
    ): Promise<{ delays: number[]; final: string }> {
      const delays: number[] = [];
      for (;;) {
        await sweep(q);
        const job = await claimOne(q, topic);
        assert.equal(job.id, id);
        const failed = await q.engine.fail(topic, id, job, `attempt ${job.attempt} failed`);
        if (failed.outcome === 'dead') return { delays, final: 'dead' };
        assert.equal(failed.outcome, 'retry');
        delays.push(failed.runAt - clock.now);
        const job2 = await q.get(topic, id);
        assert.equal(job2?.state, 'delayed');
        assert.equal(job2?.lastError, `attempt ${job.attempt} failed`);
        clock.advance(failed.runAt - clock.now - 1);
        assert.equal((await sweep(q)).moved, 0, 'a retry is not due before its backoff');
        clock.advance(1);
      }
    }

    it('fixed backoff, then dead after maxAttempts', async () => {
      const { q, topic, clock } = setup({ maxAttempts: 4, backoff: { type: 'fixed', delay: 7 } });
      await q.add({ topic, id: 'f', delay: 0 });
      const { delays, final } = await failAll(q, topic, clock, 'f');
      assert.deepEqual(delays, [7000, 7000, 7000]);
      assert.equal(final, 'dead');
      const dead = await q.get(topic, 'f');
      assert.equal(dead?.state, 'dead');
      assert.equal(dead?.attempts, 4);
      assert.equal(dead?.lastError, 'attempt 4 failed');
    });

    it('exponential backoff doubles up to its cap', async () => {
      const { q, topic, clock } = setup({ maxAttempts: 7, backoff: { type: 'exponential', delay: 1, max: 20 } });
      await q.add({ topic, id: 'e', delay: 0 });
      const { delays } = await failAll(q, topic, clock, 'e');
      assert.deepEqual(delays, [1000, 2000, 4000, 8000, 16000, 20000]);
    });

    it('exponential backoff with jitter takes up to jitter × delay off', async () => {
      const name = uniqueTopic();
      const clock = new TestClock();
      const q = makeQueue(
        target.redis(),
        { [name]: { maxAttempts: 3, backoff: { type: 'exponential', delay: 10, jitter: 0.5 } } },
        { clock, random: 0.5, config: { partitions: target.partitions } },
      );
      await q.add({ topic: name, id: 'j', delay: 0 });
      const { delays } = await failAll(q, name, clock, 'j');
      assert.deepEqual(delays, [7500, 15000]); // d − d·0.5·0.5
    });

    it('the notify-until-2xx ladder 15s 3m 10m 30m 30m 1h 2h 6h 15h, then dead', async () => {
      const { q, topic, clock } = setup({ ttr: 10 });
      const added = await q.add({ topic, id: 'notify', delay: 0, backoff: '15s 3m 10m 30m 30m 1h 2h 6h 15h' });
      assert.equal(added.job.maxAttempts, 10, 'a ladder of 9 steps allows 10 attempts');
      assert.deepEqual(added.job.backoff, {
        type: 'ladder',
        delays: [15, 180, 600, 1800, 1800, 3600, 7200, 21600, 54000],
      });
      const { delays, final } = await failAll(q, topic, clock, 'notify');
      assert.deepEqual(delays, [15 * SEC, 3 * MIN, 10 * MIN, 30 * MIN, 30 * MIN, HOUR, 2 * HOUR, 6 * HOUR, 15 * HOUR]);
      assert.equal(final, 'dead');
    });

    it('a ladder shorter than maxAttempts repeats its last step', async () => {
      const { q, topic, clock } = setup();
      await q.add({ topic, id: 'l', delay: 0, backoff: { type: 'ladder', delays: [1, 5] }, maxAttempts: 5 });
      const { delays } = await failAll(q, topic, clock, 'l');
      assert.deepEqual(delays, [1000, 5000, 5000, 5000]);
    });

    it('fail can ask for a specific retry delay (Retry-After)', async () => {
      const { q, topic, clock } = setup();
      await q.add({ topic, id: 'ra', delay: 0 });
      await sweep(q);
      const job = await claimOne(q, topic);
      const failed = await q.engine.fail(topic, 'ra', job, '429', 42_000);
      assert.ok(failed.outcome === 'retry' && failed.runAt === clock.now + 42_000);
    });

    it('dead jobs are listed with their last error and redriven back to delayed', async () => {
      const { q, topic, clock } = setup({ maxAttempts: 1 });
      for (const id of ['d1', 'd2', 'd3']) await q.add({ topic, id, delay: 0 });
      await sweep(q);
      for (const job of (await q.engine.claim(topic, 3)).sort((a, b) => a.id.localeCompare(b.id))) {
        clock.advance(1);
        assert.equal((await q.engine.fail(topic, job.id, job, `broke ${job.id}`)).outcome, 'dead');
      }
      const page = await q.listDead(topic, { limit: 2 });
      assert.deepEqual(
        page.jobs.map((j) => [j.id, j.lastError, j.state]),
        [
          ['d1', 'broke d1', 'dead'],
          ['d2', 'broke d2', 'dead'],
        ],
      );
      assert.ok(page.next !== null);
      const rest = await q.listDead(topic, { limit: 2, after: page.next });
      assert.deepEqual(
        rest.jobs.map((j) => j.id),
        ['d3'],
      );
      assert.equal((await q.stats(topic)).dead, 3);

      const one = await q.redrive(topic, { ids: ['d2', 'not-dead'] });
      assert.equal(one.redriven, 1);
      const d2 = await q.get(topic, 'd2');
      assert.equal(d2?.state, 'delayed');
      assert.equal(d2?.attempts, 0);
      assert.equal((await q.redrive(topic, { count: 10 })).redriven, 2);
      assert.equal((await q.stats(topic)).dead, 0);
      assert.equal((await q.redrive(topic)).redriven, 0);
      await sweep(q);
      const again = await q.engine.claim(topic, 3);
      assert.deepEqual(
        again.map((j) => j.attempt),
        [1, 1, 1],
      );
      for (const job of again) assert.equal(await q.engine.ack(topic, job.id, job), 'done');
    });
  });
}
