/** Adding and reading jobs: one whole lifecycle, idempotent adds, batches, wake-ups, runAt, refusals. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { rejects } from '../../support/queue';
import { HOUR, MIN, SEC, type SuiteHelpers, type SuiteTarget } from './shared';

/** Declares the describe 'add, get, claim, ack'. */
export function addGet(target: SuiteTarget, h: SuiteHelpers): void {
  const { setup, claimOne, sweep } = h;

  describe('add, get, claim, ack', () => {
    it('runs the whole lifecycle on the Redis clock the test fixes', async () => {
      const { q, topic, clock } = setup();
      const added = await q.add({ topic, id: 'order-1', delay: 60, body: { order: 1 } });
      assert.equal(added.status, 'created');
      assert.equal(added.wake, true);
      assert.equal(added.job.state, 'delayed');
      assert.equal(added.job.runAt, new Date(clock.now + MIN).toISOString());
      assert.deepEqual(added.job.body, { order: 1 });

      let got = await q.get(topic, 'order-1');
      assert.equal(got?.state, 'delayed');
      assert.equal(got?.attempts, 0);
      assert.equal(got?.maxAttempts, 3);
      assert.equal(got?.ttr, 30);

      clock.advance(MIN - 1);
      assert.equal((await sweep(q)).moved, 0, 'not due 1 ms early');
      assert.deepEqual(await q.engine.claim(topic, 10), []);
      clock.advance(1);
      const swept = await sweep(q);
      assert.equal(swept.moved, 1);
      assert.deepEqual(swept.readyByTopic, { [topic]: 1 });
      assert.equal((await q.get(topic, 'order-1'))?.state, 'ready');

      clock.advance(250);
      const job = await claimOne(q, topic);
      assert.equal(job.id, 'order-1');
      assert.equal(job.attempt, 1);
      assert.equal(job.latenessMs, 250);
      assert.equal(job.deadline, clock.now + 30 * SEC);
      assert.deepEqual(job.body, { order: 1 });
      got = await q.get(topic, 'order-1');
      assert.equal(got?.state, 'running');
      assert.equal(got?.attempts, 1);
      assert.equal(got?.deadline, new Date(job.deadline).toISOString());

      assert.equal(await q.engine.ack(topic, 'order-1', job), 'done');
      got = await q.get(topic, 'order-1');
      assert.equal(got?.state, 'done');
      assert.equal(got?.deadline, null);
      assert.equal(await q.engine.ack(topic, 'order-1', job), 'stale', 'an attempt is finished at most once');
      assert.deepEqual((await q.engine.fail(topic, 'order-1', job, 'late')).outcome, 'stale');
      assert.equal(await q.engine.ack(topic, 'nope', job), 'not_found');
      assert.deepEqual((await q.engine.fail(topic, 'nope', job, 'x')).outcome, 'not_found');
      assert.equal(await q.get(topic, 'nope'), null);
    });

    it('is idempotent by (topic, id): a second add changes nothing and returns the job', async () => {
      const { q, topic } = setup();
      await q.add({ topic, id: 'a', delay: 10, body: { v: 1 } });
      const again = await q.add({ topic, id: 'a', delay: 99, body: { v: 2 } });
      assert.equal(again.status, 'exists');
      assert.equal(again.wake, false);
      assert.ok(again.status === 'exists' && again.error.code === 'JOB_EXISTS');
      assert.deepEqual(again.job.body, { v: 1 });
      assert.deepEqual((await q.get(topic, 'a'))?.body, { v: 1 });
      assert.equal((await q.stats(topic)).delayed, 1);
    });

    it('generates ids, and adds many at once with one outcome per job, in order', async () => {
      const { q, topic } = setup();
      const { outcomes, wake } = await q.addMany([
        { topic, body: 1, delay: 5 },
        { topic, id: 'x', body: 2, delay: 1 },
        { topic, id: 'x', body: 3, delay: 1 },
        { topic, body: 4 },
        { topic: 'not-configured', id: 'y', delay: 1 },
      ]);
      assert.equal(wake, true);
      assert.deepEqual(
        outcomes.map((o) => o.status),
        ['created', 'created', 'exists', 'invalid', 'invalid'],
      );
      assert.match(outcomes[0]!.status === 'created' ? outcomes[0]!.job.id : '', /^[A-Za-z0-9_-]{16}$/);
      assert.ok(outcomes[3]!.status === 'invalid' && outcomes[3]!.error.code === 'VALIDATION_FAILED');
      assert.ok(outcomes[4]!.status === 'invalid' && outcomes[4]!.error.code === 'UNKNOWN_TOPIC');
      assert.equal((await q.stats(topic)).delayed, 2);
    });

    it('says wake whenever a job becomes the earliest due of its partition', async () => {
      const { q, topic } = setup();
      // one partition: a later job never wakes; several: it may (the head of its own partition),
      // which costs the sweeper one look. An earlier job always wakes.
      assert.equal((await q.add({ topic, id: 'late', delay: 100 })).wake, true);
      const later = await q.add({ topic, id: 'later', delay: 200 });
      if (target.partitions === 1) assert.equal(later.wake, false);
      assert.equal((await q.add({ topic, id: 'early', delay: 50 })).wake, true);
    });

    it('takes runAt as epoch ms or ISO-8601, and a past runAt is due at once', async () => {
      const { q, topic, clock } = setup();
      const iso = new Date(clock.now + HOUR).toISOString();
      assert.equal((await q.add({ topic, id: 'iso', runAt: iso })).job.runAt, iso);
      assert.equal(
        (await q.add({ topic, id: 'ms', runAt: clock.now + 5 * SEC })).job.runAt,
        new Date(clock.now + 5 * SEC).toISOString(),
      );
      await q.add({ topic, id: 'past', runAt: clock.now - HOUR });
      assert.equal((await sweep(q)).moved, 1);
      assert.equal((await claimOne(q, topic)).id, 'past');
    });

    it('rejects invalid jobs listing every problem, unknown topics and large bodies, and writes nothing', async () => {
      const { q, topic } = setup({}, {});
      const error = await rejects(
        q.add({ topic, id: 'has space', delay: -1, runAt: 5, maxAttempts: 0, ttr: 'x', dealy: 3 }),
        400,
        'VALIDATION_FAILED',
      );
      const paths = (error.details as { path: string }[]).map((d) => d.path).sort();
      assert.deepEqual(paths, ['dealy', 'delay', 'id', 'maxAttempts', 'ttr']);
      await rejects(q.add({ topic: 'other-topic', delay: 1 }), 400, 'UNKNOWN_TOPIC');
      await rejects(q.add({ topic, delay: 1, body: 'x'.repeat(64 * 1024) }), 413, 'PAYLOAD_TOO_LARGE');
      const stats = await q.stats(topic);
      assert.equal(stats.delayed + stats.ready + stats.running + stats.dead, 0);
    });
  });
}
