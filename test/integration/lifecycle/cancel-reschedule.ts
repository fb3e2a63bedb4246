/** Changing a pending job: cancel in every state, reschedule, and put (create, replace, re-create). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { rejects } from '../../support/queue';
import { HOUR, SEC, type SuiteHelpers, type SuiteTarget } from './shared';

/** Declares the describes 'cancel' and 'reschedule and put'. */
export function cancelReschedule(_target: SuiteTarget, h: SuiteHelpers): void {
  const { setup, claimOne, sweep } = h;

  describe('cancel', () => {
    it('cancels a delayed job: it never becomes ready', async () => {
      const { q, topic, clock } = setup();
      await q.add({ topic, id: 'c', delay: 10 });
      const cancelled = await q.cancel(topic, 'c');
      assert.equal(cancelled.state, 'cancelled');
      assert.equal((await q.cancel(topic, 'c')).state, 'cancelled', 'cancelling twice is fine');
      clock.advance(HOUR);
      assert.equal((await sweep(q)).moved, 0);
      assert.deepEqual(await q.engine.claim(topic, 10), []);
      assert.equal((await q.get(topic, 'c'))?.state, 'cancelled');
    });

    it('cancels a ready job: claim pops and skips its id', async () => {
      const { q, topic } = setup();
      await q.add({ topic, id: 'r1', delay: 0 });
      await q.add({ topic, id: 'r2', delay: 0 });
      await sweep(q);
      await q.cancel(topic, 'r1');
      const claimed = await q.engine.claim(topic, 10);
      assert.deepEqual(
        claimed.map((j) => j.id),
        ['r2'],
      );
      assert.equal((await q.stats(topic)).ready, 0);
    });

    it('cancels a running job: its ack and fail are dropped and its TTR never retries it', async () => {
      const { q, topic, clock } = setup();
      await q.add({ topic, id: 'run', delay: 0 });
      await sweep(q);
      const job = await claimOne(q, topic);
      await q.cancel(topic, 'run');
      assert.equal(await q.engine.ack(topic, 'run', job), 'cancelled');
      assert.equal((await q.engine.fail(topic, 'run', job, 'boom')).outcome, 'cancelled');
      clock.advance(HOUR);
      const swept = await sweep(q);
      assert.equal(swept.retried + swept.moved, 0);
      assert.equal((await q.get(topic, 'run'))?.state, 'cancelled');
    });

    it('refuses to cancel a done or dead job, and a missing one', async () => {
      const { q, topic } = setup({ maxAttempts: 1 });
      await q.add({ topic, id: 'd', delay: 0 });
      await q.add({ topic, id: 'x', delay: 0 });
      await sweep(q);
      const [a, b] = await q.engine.claim(topic, 2);
      await q.engine.ack(topic, a!.id, a!);
      assert.equal((await q.engine.fail(topic, b!.id, b!, 'no')).outcome, 'dead');
      const err = await rejects(q.cancel(topic, a!.id), 409, 'JOB_FINISHED');
      assert.equal((err.details as { job: { state: string } }).job.state, 'done');
      await rejects(q.cancel(topic, b!.id), 409, 'JOB_FINISHED');
      await rejects(q.cancel(topic, 'missing'), 404, 'NOT_FOUND');
    });

    it('deletes a cancelled job at once when retention is 0', async () => {
      const { q, topic } = setup({}, { retention: 0 });
      await q.add({ topic, id: 'gone', delay: 5 });
      assert.equal((await q.cancel(topic, 'gone')).state, 'cancelled');
      assert.equal(await q.get(topic, 'gone'), null);
    });
  });

  describe('reschedule and put', () => {
    it('moves a delayed job later or earlier, and changes its body', async () => {
      const { q, topic, clock } = setup();
      await q.add({ topic, id: 'm', delay: 60, body: 'old' });
      let r = await q.reschedule(topic, 'm', { delay: 120 });
      assert.equal(r.job.runAt, new Date(clock.now + 120 * SEC).toISOString());
      assert.equal(r.wake, false);
      r = await q.reschedule(topic, 'm', { runAt: clock.now + 5 * SEC, body: 'new' });
      assert.equal(r.wake, true);
      assert.deepEqual(r.job.body, 'new');
      clock.advance(5 * SEC);
      assert.equal((await sweep(q)).moved, 1);
      const job = await claimOne(q, topic);
      assert.deepEqual(job.body, 'new');
    });

    it('sends a ready job back to delayed; its stale ready id is skipped', async () => {
      const { q, topic, clock } = setup();
      await q.add({ topic, id: 'back', delay: 0 });
      await sweep(q);
      await q.reschedule(topic, 'back', { delay: 30 });
      assert.equal((await q.get(topic, 'back'))?.state, 'delayed');
      assert.deepEqual(await q.engine.claim(topic, 5), []);
      clock.advance(30 * SEC);
      await sweep(q);
      assert.equal((await claimOne(q, topic)).id, 'back');
    });

    it('changes only the body of a ready job, keeping it ready', async () => {
      const { q, topic } = setup();
      await q.add({ topic, id: 'b', delay: 0, body: 1 });
      await sweep(q);
      const r = await q.reschedule(topic, 'b', { body: 2 });
      assert.equal(r.job.state, 'ready');
      assert.deepEqual((await claimOne(q, topic)).body, 2);
    });

    it('refuses running, done and missing jobs, and an empty change', async () => {
      const { q, topic } = setup();
      await q.add({ topic, id: 'r', delay: 0 });
      await sweep(q);
      await claimOne(q, topic);
      await rejects(q.reschedule(topic, 'r', { delay: 1 }), 409, 'JOB_FINISHED');
      await rejects(q.reschedule(topic, 'missing', { delay: 1 }), 404, 'NOT_FOUND');
      await rejects(q.reschedule(topic, 'r', {}), 400, 'VALIDATION_FAILED');
    });

    it('put creates, replaces a pending job, re-creates a cancelled one, refuses a finished one', async () => {
      const { q, topic, clock } = setup();
      const created = await q.put(topic, 'p', { delay: 10, body: 1 });
      assert.equal(created.status, 'created');
      const replaced = await q.put(topic, 'p', { delay: 20, body: 2, maxAttempts: 7 });
      assert.equal(replaced.status, 'replaced');
      assert.equal(replaced.job.runAt, new Date(clock.now + 20 * SEC).toISOString());
      assert.equal(replaced.job.maxAttempts, 7);
      assert.deepEqual(replaced.job.body, 2);
      await q.cancel(topic, 'p');
      const again = await q.put(topic, 'p', { delay: 0, body: 3 });
      assert.equal(again.status, 'created');
      await sweep(q);
      const job = await claimOne(q, topic);
      assert.equal(job.attempt, 1);
      const finished = await q.put(topic, 'p', { delay: 0 });
      assert.equal(finished.status, 'finished');
      await rejects(q.put(topic, 'p', { id: 'other', delay: 0 }), 400, 'VALIDATION_FAILED');
    });
  });
}
