/**
 * The engine's lifecycle suite: every return code of every script, on whatever Redis the caller
 * provides (a single node, or a cluster with several partitions). Timing uses a fixed clock.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Cluster, Redis } from 'ioredis';
import type { TopicInput } from '../../lib/rules/config';
import * as script from '../../lib/engine/scripts';
import { groupBucketKey, groupChunkKey, groupKey, topicKeys, partitionOf } from '../../lib/engine/keys';
import { bucketField, bucketSlots, bucketState, firstChunk } from '../support/group-layout';
import type { Queue } from '../../lib/edge/queue';
import type { Job } from '../../lib/engine';
import { run } from '../../lib/engine/lua';
import type { JobsQuery } from '../../lib/edge/validation';
import { listWholeGroup, makeQueue, rejects, TestClock, uniqueTopic } from '../support/queue';

export interface SuiteTarget {
  redis(): Redis | Cluster;
  partitions: number;
  /** SCRIPT FLUSH on every node. */
  flushScripts(): Promise<void>;
}

const SEC = 1000;
const MIN = 60 * SEC;
const HOUR = 60 * MIN;

export function lifecycleSuite(target: SuiteTarget): void {
  function setup(topic: TopicInput = {}, extra: { retention?: number; deadRetention?: number } = {}) {
    const name = uniqueTopic();
    const clock = new TestClock();
    const q = makeQueue(target.redis(), { [name]: { ttr: 30, maxAttempts: 3, backoff: { type: 'fixed', delay: 10 }, ...topic } }, {
      clock,
      config: { partitions: target.partitions, ...extra },
    });
    return { q, topic: name, clock };
  }

  async function claimOne(q: Queue, topic: string) {
    const claimed = await q.engine.claim(topic, 1);
    assert.equal(claimed.length, 1, 'expected one job to claim');
    return claimed[0]!;
  }

  /** Moves due jobs of every partition of the queue's topics. */
  async function sweep(q: Queue) {
    return q.engine.sweep();
  }

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
      assert.deepEqual(outcomes.map((o) => o.status), ['created', 'created', 'exists', 'invalid', 'invalid']);
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
      assert.equal((await q.add({ topic, id: 'ms', runAt: clock.now + 5 * SEC })).job.runAt, new Date(clock.now + 5 * SEC).toISOString());
      await q.add({ topic, id: 'past', runAt: clock.now - HOUR });
      assert.equal((await sweep(q)).moved, 1);
      assert.equal((await claimOne(q, topic)).id, 'past');
    });

    it('rejects invalid jobs listing every problem, unknown topics and large bodies, and writes nothing', async () => {
      const { q, topic } = setup({}, {});
      const error = await rejects(q.add({ topic, id: 'has space', delay: -1, runAt: 5, maxAttempts: 0, ttr: 'x', dealy: 3 }), 400, 'VALIDATION_FAILED');
      const paths = (error.details as { path: string }[]).map((d) => d.path).sort();
      assert.deepEqual(paths, ['dealy', 'delay', 'id', 'maxAttempts', 'ttr']);
      await rejects(q.add({ topic: 'other-topic', delay: 1 }), 400, 'UNKNOWN_TOPIC');
      await rejects(q.add({ topic, delay: 1, body: 'x'.repeat(64 * 1024) }), 413, 'PAYLOAD_TOO_LARGE');
      const stats = await q.stats(topic);
      assert.equal(stats.delayed + stats.ready + stats.running + stats.dead, 0);
    });
  });

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
      assert.deepEqual(claimed.map((j) => j.id), ['r2']);
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

  describe('retries and backoff', () => {
    /** Fails attempt after attempt; returns the delays (ms) between each failure and the retry. */
    async function failAll(q: Queue, topic: string, clock: TestClock, id: string): Promise<{ delays: number[]; final: string }> {
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
      const q = makeQueue(target.redis(), { [name]: { maxAttempts: 3, backoff: { type: 'exponential', delay: 10, jitter: 0.5 } } }, { clock, random: 0.5, config: { partitions: target.partitions } });
      await q.add({ topic: name, id: 'j', delay: 0 });
      const { delays } = await failAll(q, name, clock, 'j');
      assert.deepEqual(delays, [7500, 15000]); // d − d·0.5·0.5
    });

    it('the notify-until-2xx ladder 15s 3m 10m 30m 30m 1h 2h 6h 15h, then dead', async () => {
      const { q, topic, clock } = setup({ ttr: 10 });
      const added = await q.add({ topic, id: 'notify', delay: 0, backoff: '15s 3m 10m 30m 30m 1h 2h 6h 15h' });
      assert.equal(added.job.maxAttempts, 10, 'a ladder of 9 steps allows 10 attempts');
      assert.deepEqual(added.job.backoff, { type: 'ladder', delays: [15, 180, 600, 1800, 1800, 3600, 7200, 21600, 54000] });
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
      assert.deepEqual(page.jobs.map((j) => [j.id, j.lastError, j.state]), [['d1', 'broke d1', 'dead'], ['d2', 'broke d2', 'dead']]);
      assert.ok(page.next !== null);
      const rest = await q.listDead(topic, { limit: 2, after: page.next });
      assert.deepEqual(rest.jobs.map((j) => j.id), ['d3']);
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
      assert.deepEqual(again.map((j) => j.attempt), [1, 1, 1]);
      for (const job of again) assert.equal(await q.engine.ack(topic, job.id, job), 'done');
    });
  });

  describe('time-to-run, release, concurrency and retention', () => {
    it('an attempt not acked within its ttr fails, is retried, and its late ack is refused', async () => {
      const { q, topic, clock } = setup({ ttr: 30, maxAttempts: 2, backoff: { type: 'fixed', delay: 5 } });
      await q.add({ topic, id: 'slow', delay: 0 });
      await sweep(q);
      const first = await claimOne(q, topic);
      assert.deepEqual(await q.engine.start(topic, [first]), [true], 'a handler started it');
      assert.deepEqual(await q.engine.start(topic, [first]), [false], 'a duplicate event of the same attempt does not run it again');
      clock.advance(30 * SEC - 1);
      assert.equal((await sweep(q)).retried, 0, 'not expired 1 ms before the deadline');
      clock.advance(1);
      const swept = await sweep(q);
      assert.equal(swept.retried, 1);
      const timedOut = await q.get(topic, 'slow');
      assert.equal(timedOut?.state, 'delayed');
      assert.equal(timedOut?.runAt, new Date(clock.now + 5 * SEC).toISOString());
      assert.match(timedOut?.lastError ?? '', /timed out/);
      assert.equal(await q.engine.ack(topic, 'slow', first), 'stale', 'the late ack of the timed-out attempt changes nothing');
      assert.equal((await q.engine.fail(topic, 'slow', first, 'late')).outcome, 'stale');
      assert.deepEqual(await q.engine.start(topic, [first, { id: 'gone', attempt: 1, claim: 'x' }]), [false, false], 'ended, or not found');

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
      assert.deepEqual(counts, { topic, delayed: 1, ready: 1, running: 1, dead: 0, nextDueAt: new Date(clock.now + 50 * SEC).toISOString() });
      assert.equal(oldestReadyAgeMs, 0, 'the ready job fell due at the (fixed) present');
      assert.deepEqual(lateness, { windowSeconds: 300, started: 0, p50Ms: null, p99Ms: null, maxMs: null }, 'no handler started anything');
      assert.equal(lastHour.length, 60);
    });

    it('sweep reports the next due time and TTR deadline, and more when it hit its limit', async () => {
      const { q, topic, clock } = setup({ ttr: 5 });
      // all in one partition, so the per-partition limit of 3 is what stops the first sweep
      const ids = Array.from({ length: 500 }, (_, i) => `n${i}`).filter((id) => partitionOf(topic, id, target.partitions) === 0);
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

  describe('groups, listings and versions', () => {
    /** Every job of a listing, following `next`. */
    async function listAll(q: Queue, topic: string, query: JobsQuery) {
      const jobs: Job[] = [];
      let page = await q.listJobs(topic, query);
      jobs.push(...page.jobs);
      for (let pages = 1; page.next !== null; pages++) {
        assert.ok(pages <= 100, 'paging ends');
        page = await q.listJobs(topic, { ...query, cursor: page.next });
        jobs.push(...page.jobs);
      }
      return jobs;
    }

    it('cancels a whole group: delayed, ready and running jobs, not other groups; a job added afterwards runs', async () => {
      const { q, topic, clock } = setup({ concurrency: 100 });
      const ids = Array.from({ length: 30 }, (_, i) => `m-${String(i).padStart(2, '0')}`);
      for (const [i, id] of ids.entries()) await q.add({ topic, id, delay: i < 10 ? 0 : 60 + i, group: 'meeting-1', body: { i } });
      await q.add({ topic, id: 'other', delay: 0, group: 'meeting-2' });
      await q.add({ topic, id: 'loose', delay: 0 });
      await sweep(q);
      // the ten due jobs of the group start, and the two others
      const claimed = await q.engine.claim(topic, 20);
      const running = claimed.filter((j) => ids.includes(j.id));
      assert.equal(running.length, 10, 'ten jobs of the group run');
      const listed = await listWholeGroup(q, topic, 'meeting-1', 7);
      assert.deepEqual(listed.map((j) => j.id).sort(), ids, 'the listing pages through the whole group, each job once');
      assert.ok(listed.every((j) => j.group === 'meeting-1'));

      const result = await q.cancelGroup(topic, 'meeting-1');
      const cancelled = (await listWholeGroup(q, topic, 'meeting-1', 100)).filter((j) => j.state === 'cancelled').length;
      assert.equal(cancelled, 30, 'every job of the group is cancelled');
      assert.equal(result.cancelled + result.running, 30);
      assert.equal(result.running, 10, 'the ten claimed jobs were running');
      for (const job of running) assert.equal(await q.engine.ack(topic, job.id, job), 'cancelled', 'a running attempt finishes, but its ack is dropped');
      assert.equal((await q.get(topic, 'other'))?.state, 'running', 'another group is untouched');
      assert.equal((await q.get(topic, 'loose'))?.state, 'running', 'a job without a group is untouched');
      for (const job of claimed.filter((j) => !ids.includes(j.id))) assert.equal(await q.engine.ack(topic, job.id, job), 'done');

      clock.advance(HOUR);
      assert.equal((await sweep(q)).moved, 0, 'no job of the group falls due any more');
      await q.add({ topic, id: 'after', delay: 0, group: 'meeting-1' });
      await sweep(q);
      assert.deepEqual((await q.engine.claim(topic, 10)).map((j) => j.id), ['after'], 'a job added after the cancel runs');
      assert.deepEqual(await q.cancelGroup(topic, 'meeting-1'), { cancelled: 0, running: 1 }, 'cancelling again finds only the new one');
      assert.deepEqual(await q.listGroup(topic, 'nobody'), { jobs: [], next: null }, 'a group without jobs lists empty');
    });

    it('a job of the group that falls due while the cancel is under way does not start', async () => {
      const { q, topic, clock } = setup({ concurrency: 100 });
      const ids = Array.from({ length: 12 }, (_, i) => `due-${i}`);
      for (const id of ids) await q.add({ topic, id, delay: 5, group: 'g' });
      // the cancel's first step in every partition marks the group and cancels one job; the rest
      // wait for the next steps, as with a large group while the sweeper and fan-out are busy
      const steps = [];
      for (let p = 0; p < target.partitions; p++) {
        const k = topicKeys(p, topic);
        const keys = [k.jobs, k.bodies, k.delayed, k.running, k.done, groupKey(p, topic, 'g')] as const;
        const [cancelled, running, done, chunk, cursor, mark, last] = await run(target.redis(), script.cancelGroup(keys, { clock: clock.now, group: 'g', mark: '', chunk: '', cursor: '-inf', last: '', limit: 1, maxBytes: 1 << 20, retentionMs: HOUR }));
        steps.push({ keys, cancelled, running, done, chunk, cursor, mark, last });
      }
      clock.advance(10 * SEC);
      assert.equal((await sweep(q)).moved, ids.length - steps.reduce((n, s) => n + s.cancelled, 0), 'the jobs not yet reached fall due');
      assert.deepEqual(await q.engine.claim(topic, 100), [], 'none of them starts');
      const cancelledByClaim = (await Promise.all(ids.map((id) => q.get(topic, id)))).filter((j) => j?.lastError?.startsWith('cancelled with its group'));
      assert.equal(cancelledByClaim.length, ids.length - steps.reduce((n, s) => n + s.cancelled, 0), 'the claim cancelled them, and says why');
      // the cancel goes on to the end and counts them
      let total = 0;
      for (const step of steps) {
        total += step.cancelled;
        let { chunk, cursor, done } = step;
        while (done !== 1) {
          const reply = await run(target.redis(), script.cancelGroup(step.keys, { clock: clock.now, group: 'g', mark: step.mark, chunk, cursor, last: step.last, limit: 1, maxBytes: 1 << 20, retentionMs: HOUR }));
          total += reply[0];
          [, , done, chunk, cursor] = reply;
        }
      }
      assert.equal(total, ids.length, 'every job is counted once as cancelled');
      await q.add({ topic, id: 'later', delay: 0, group: 'g' });
      await sweep(q);
      assert.deepEqual((await q.engine.claim(topic, 10)).map((j) => j.id), ['later'], 'the mark is gone: new jobs of the group run');
    });

    it('a put that moves a job to another group, and the purge of a finished job, take it out of the group', async () => {
      const { q, topic, clock } = setup({}, { retention: 60 });
      await q.add({ topic, id: 'mover', delay: 100, group: 'a' });
      await q.add({ topic, id: 'stayer', delay: 0, group: 'a' });
      await q.put(topic, 'mover', { delay: 100, group: 'b' });
      assert.deepEqual((await q.listGroup(topic, 'a')).jobs.map((j) => j.id), ['stayer']);
      assert.deepEqual((await q.listGroup(topic, 'b')).jobs.map((j) => j.id), ['mover']);
      const groupSize = async (group: string) => {
        let n = 0;
        for (let p = 0; p < target.partitions; p++) n += (await firstChunk(target.redis(), p, topic, group)).ids.length;
        return n;
      };
      assert.equal(await groupSize('a'), 1, 'the moved job left the old group (its bucket slot)');
      await sweep(q);
      const job = await claimOne(q, topic);
      await q.engine.ack(topic, job.id, job);
      clock.advance(61 * SEC);
      assert.equal((await sweep(q)).purged, 1);
      assert.equal(await groupSize('a'), 0, 'the purged job left its group: no key is left behind');
      assert.deepEqual((await q.listGroup(topic, 'a')).jobs, []);
    });

    it('a group of more than 128 jobs per partition is kept in zsets of at most 128 (listpacks, never a skiplist); list, put, cancel and purge go through all of them and leave no key behind', async () => {
      const { q, topic, clock } = setup({ concurrency: 10_000 }, { retention: 60 });
      const n = 300 * target.partitions;
      const ids = Array.from({ length: n }, (_, i) => `big-${String(i).padStart(5, '0')}`);
      for (let i = 0; i < n; i += 100) {
        const { outcomes } = await q.addMany(ids.slice(i, i + 100).map((id, j) => ({ topic, id, delay: 5 + i + j, group: 'big' })));
        assert.ok(outcomes.every((o) => o.status === 'created'));
      }
      const redis = target.redis();
      /** The group's zsets in partition `p`: its key, then `<key>#1`, `<key>#2`, ... while they exist. */
      const zsets = async (p: number) => {
        const found: { key: string; size: number; encoding: string }[] = [];
        for (let c = 0; c < 64; c++) {
          const key = groupChunkKey(groupKey(p, topic, 'big'), c);
          const size = await redis.zcard(key);
          if (size === 0) continue;
          found.push({ key, size, encoding: String(await redis.object('ENCODING', key)) });
        }
        return found;
      };
      let stored = 0;
      for (let p = 0; p < target.partitions; p++) {
        const found = await zsets(p);
        for (const z of found) {
          assert.ok(z.size <= 128, `${z.key} holds ${z.size} members, more than 128`);
          assert.equal(z.encoding, 'listpack', `${z.key} is a ${z.encoding}`);
        }
        assert.ok(found.length >= 2, `partition ${p}: ${found.length} zset(s) for ${ids.filter((id) => partitionOf(topic, id, target.partitions) === p).length} jobs`);
        stored += found.reduce((sum, z) => sum + z.size, 0);
      }
      assert.equal(stored, n, 'every job of the group is a member of one of its zsets, once');

      const listed = await listWholeGroup(q, topic, 'big', 70);
      assert.equal(listed.length, n);
      assert.deepEqual([...listed.map((j) => j.id)].sort(), ids, 'the listing goes through every zset of the group, each job once');
      for (let p = 0; p < target.partitions; p++) {
        const inP = listed.filter((j) => partitionOf(topic, j.id, target.partitions) === p).map((j) => j.id);
        assert.deepEqual(inP, [...inP].sort(), `partition ${p}: in the order the jobs joined`);
      }

      // a put moves the last job (in the newest zset) to another group; the first five start
      const moved = ids[n - 1]!;
      await q.put(topic, moved, { delay: 60, group: 'elsewhere' });
      assert.deepEqual((await q.listGroup(topic, 'elsewhere')).jobs.map((j) => j.id), [moved]);
      clock.advance(9 * SEC);
      await sweep(q);
      const running = await q.engine.claim(topic, 100);
      assert.deepEqual(running.map((j) => j.id).sort(), ids.slice(0, 5));

      const result = await q.cancelGroup(topic, 'big');
      assert.deepEqual(result, { cancelled: n - 6, running: 5 }, 'every job of the group, in every zset, once; not the one that moved');
      const after = await listWholeGroup(q, topic, 'big', 500);
      assert.equal(after.length, n - 1);
      assert.ok(after.every((j) => j.state === 'cancelled'));
      for (const job of running) assert.equal(await q.engine.ack(topic, job.id, job), 'cancelled');

      clock.advance(61 * SEC);
      let purged = 0;
      for (let i = 0; i < 100; i++) {
        const swept = await sweep(q);
        purged += swept.purged;
        if (swept.purged === 0 && !swept.more) break;
      }
      assert.equal(purged, n - 1, 'every cancelled job of the group is purged');
      for (let p = 0; p < target.partitions; p++) {
        assert.deepEqual(await zsets(p), [], `partition ${p}: no zset of the group is left behind`);
        const home = p === partitionOf(topic, moved, target.partitions);
        const jobsKey = topicKeys(p, topic).jobs;
        assert.equal(await redis.hlen(jobsKey) - (await redis.hexists(jobsKey, '#seq')) - (await redis.hexists(jobsKey, '#gbuckets')), home ? 1 : 0, `partition ${p}: nothing but the moved job, the version counter and the small groups' bucket count in the jobs hash`);
        assert.equal((await bucketState(redis, p, topic)).count, home ? 1 : 0, `partition ${p}: one small group in a bucket, the moved job's`);
      }
      await q.add({ topic, id: 'again', delay: 0, group: 'big' });
      assert.deepEqual((await q.listGroup(topic, 'big')).jobs.map((j) => j.id), ['again'], 'the group starts over');
    });

    it('a job purged and added to its group again before it left the old zset is listed once; the leave takes out only the old member', async () => {
      const { q, topic, clock } = setup({}, { retention: 60 });
      // 130 jobs of one partition: 128 in the group's first zset, 2 in the second
      const ids: string[] = [];
      for (let i = 0; ids.length < 130; i++) if (partitionOf(topic, `re-${i}`, target.partitions) === 0) ids.push(`re-${i}`);
      await q.addMany(ids.slice(0, 100).map((id) => ({ topic, id, delay: 600, group: 'g' })));
      await q.addMany(ids.slice(100).map((id) => ({ topic, id, delay: 600, group: 'g' })));
      const base = groupKey(0, topic, 'g');
      const first = ids[0]!;
      assert.equal(await target.redis().zcard(base), 128);
      assert.equal(await target.redis().zcard(groupChunkKey(base, 1)), 2);
      // the first job is cancelled, and purged by a moveDue whose leave has not run yet
      await q.cancel(topic, first);
      clock.advance(61 * SEC);
      const k = topicKeys(0, topic);
      const reply = await run(target.redis(), script.moveDue([k.delayed, k.ready, k.running, k.jobs, k.bodies, k.dead, k.done], { clock: clock.now, limit: 100, maxAttempts: 3, backoff: 'f:10', random: 0, deadRetentionMs: HOUR, maxBytes: 1 << 20 }));
      assert.deepEqual(reply[9], ['g', first, 0], 'the purge names the group and the zset the job was in');
      // added again: it joins the newest zset, while its old member is still in the first
      await q.add({ topic, id: first, delay: 600, group: 'g' });
      assert.notEqual(await target.redis().zscore(base, first), null);
      assert.notEqual(await target.redis().zscore(groupChunkKey(base, 1), first), null);
      const listed = (await q.listGroup(topic, 'g', { limit: 500 })).jobs.map((j) => j.id);
      assert.equal(listed.filter((id) => id === first).length, 1, 'listed once, where it joined last');
      assert.equal(listed.at(-1), first);
      // the leave the sweeper would have run takes out the old member only
      assert.equal(await run(target.redis(), script.leaveGroup([k.jobs, base], { group: 'g', members: [{ id: first, chunk: 0 }] })), 1);
      assert.equal(await target.redis().zscore(base, first), null);
      assert.notEqual(await target.redis().zscore(groupChunkKey(base, 1), first), null, 'the job stays in the group');
      assert.deepEqual(await q.cancelGroup(topic, 'g'), { cancelled: 130, running: 0 });
    });

    it('a cancel under way leaves alone the jobs that join after its mark, even when the group emptied in between and starts over', async () => {
      const { q, topic, clock } = setup();
      const inP0 = (prefix: string, n: number) => {
        const ids: string[] = [];
        for (let i = 0; ids.length < n; i++) if (partitionOf(topic, `${prefix}-${i}`, target.partitions) === 0) ids.push(`${prefix}-${i}`);
        return ids;
      };
      const before = inP0('before', 3);
      for (const id of before) await q.add({ topic, id, delay: 60, group: 'r' });
      const k = topicKeys(0, topic);
      const keys = [k.jobs, k.bodies, k.delayed, k.running, k.done, groupKey(0, topic, 'r')] as const;
      // the cancel marks the group in partition 0 (a step of 0 members), then waits
      let [, , done, chunk, cursor, mark, last] = await run(target.redis(), script.cancelGroup(keys, { clock: clock.now, group: 'r', mark: '', chunk: '', cursor: '-inf', last: '', limit: 0, maxBytes: 1 << 20, retentionMs: HOUR }));
      // every job of the group leaves it (a put moves it), and new ones join the emptied group
      for (const id of before) await q.put(topic, id, { delay: 60, group: 'elsewhere' });
      assert.deepEqual((await q.listGroup(topic, 'r')).jobs, []);
      const after = inP0('after', 3);
      for (const id of after) await q.add({ topic, id, delay: 60, group: 'r' });
      let cancelled = 0;
      while (done !== 1) {
        const reply = await run(target.redis(), script.cancelGroup(keys, { clock: clock.now, group: 'r', mark, chunk, cursor, last, limit: 1, maxBytes: 1 << 20, retentionMs: HOUR }));
        cancelled += reply[0];
        [, , done, chunk, cursor, mark, last] = reply;
      }
      assert.equal(cancelled, 0, 'the cancel found none of the jobs that were in the group at its mark');
      for (const id of after) assert.equal((await q.get(topic, id))?.state, 'delayed', `${id} joined after the mark: it runs`);
    });

    /** `n` ids starting with `prefix` that fall in partition 0 of the suite's partitions. */
    const inPartition0 = (topic: string, prefix: string, n: number) => {
      const ids: string[] = [];
      for (let i = 0; ids.length < n; i++) if (partitionOf(topic, `${prefix}-${i}`, target.partitions) === 0) ids.push(`${prefix}-${i}`);
      return ids;
    };

    /** Every bucket of small groups of `topic` in partition 0, with its fields and encoding. */
    const bucketsOf = async (topic: string) => {
      const { level, split, count } = await bucketState(target.redis(), 0, topic);
      const found: { key: string; fields: number; encoding: string }[] = [];
      for (let b = 0; b < 2 ** level + split; b++) {
        const key = groupBucketKey(topicKeys(0, topic).jobs, b);
        const fields = await target.redis().hlen(key);
        if (fields > 0) found.push({ key, fields, encoding: String(await target.redis().object('ENCODING', key)) });
      }
      return { level, split, count, found };
    };

    it('a group of at most 3 jobs in a partition has no key of its own: its jobs are slots in a bucket shared with other small groups; a 4th job moves them to the group zset at their places, and a listing under way carries on', async () => {
      const { q, topic } = setup();
      const redis = target.redis();
      const ids = inPartition0(topic, 'sm', 4);
      for (const id of ids.slice(0, 3)) await q.add({ topic, id, delay: 600, group: 'small' });
      assert.deepEqual(await firstChunk(redis, 0, topic, 'small'), { form: 'bucket', ids: ids.slice(0, 3) });
      assert.equal(await redis.exists(groupKey(0, topic, 'small')), 0, 'no key of its own');
      assert.deepEqual((await q.listGroup(topic, 'small')).jobs.map((j) => j.id), ids.slice(0, 3));

      // a listing reads the first job; then a 4th job joins, and the group moves to its zset
      const first = await q.listGroup(topic, 'small', { limit: 1 });
      assert.deepEqual(first.jobs.map((j) => j.id), [ids[0]]);
      await q.add({ topic, id: ids[3]!, delay: 600, group: 'small' });
      assert.deepEqual(await redis.zrange(groupKey(0, topic, 'small'), 0, -1, 'WITHSCORES'), [ids[0], '1', ids[1], '2', ids[2], '3', ids[3], '4']);
      assert.deepEqual(await bucketSlots(redis, 0, topic, 'small'), [], 'its bucket field is gone');
      assert.equal((await bucketState(redis, 0, topic)).count, 0, 'and counted out');
      const rest: string[] = [];
      for (let cursor = first.next; cursor !== null; ) {
        const page = await q.listGroup(topic, 'small', { limit: 1, cursor });
        rest.push(...page.jobs.map((j) => j.id));
        cursor = page.next;
      }
      assert.deepEqual(rest, ids.slice(1), 'the listing goes on after its first job: each job once, in order');
    });

    it('a small group keeps the places of its jobs when one leaves: the slot stays empty, later jobs come after it, and the move to the zset keeps the gap', async () => {
      const { q, topic } = setup();
      const redis = target.redis();
      const [a, b, c, d] = inPartition0(topic, 'gap', 4) as [string, string, string, string];
      await q.add({ topic, id: a, delay: 600, group: 'g' });
      await q.add({ topic, id: b, delay: 600, group: 'g' });
      await q.put(topic, a, { delay: 600, group: 'elsewhere' });
      assert.deepEqual(await bucketSlots(redis, 0, topic, 'g'), ['', b], 'the moved job left its slot empty');
      await q.add({ topic, id: c, delay: 600, group: 'g' });
      assert.deepEqual(await bucketSlots(redis, 0, topic, 'g'), ['', b, c]);
      assert.deepEqual((await q.listGroup(topic, 'g')).jobs.map((j) => j.id), [b, c]);
      await q.add({ topic, id: d, delay: 600, group: 'g' });
      assert.deepEqual(await redis.zrange(groupKey(0, topic, 'g'), 0, -1, 'WITHSCORES'), [b, '2', c, '3', d, '4']);
      assert.deepEqual((await q.listGroup(topic, 'g')).jobs.map((j) => j.id), [b, c, d]);
      assert.deepEqual((await q.listGroup(topic, 'elsewhere')).jobs.map((j) => j.id), [a]);
    });

    it('a cancel of a small group cancels the jobs in its bucket, due or not, and none starts; jobs that join after it run; purged, the group leaves no bucket and no count behind', async () => {
      const { q, topic, clock } = setup({}, { retention: 60 });
      const redis = target.redis();
      const [due1, due2, later, other, after] = inPartition0(topic, 'sc', 5) as [string, string, string, string, string];
      await q.add({ topic, id: due1, delay: 0, group: 'sg' });
      await q.add({ topic, id: due2, delay: 0, group: 'sg' });
      await q.add({ topic, id: later, delay: 600, group: 'sg' });
      await q.add({ topic, id: other, delay: 600, group: 'og' });
      await sweep(q);
      assert.equal((await firstChunk(redis, 0, topic, 'sg')).form, 'bucket');
      assert.deepEqual(await q.cancelGroup(topic, 'sg'), { cancelled: 3, running: 0 });
      assert.deepEqual(await q.engine.claim(topic, 10), [], 'no job of the cancelled group starts');
      assert.equal((await q.get(topic, other))?.state, 'delayed', 'another small group is left alone');
      await q.add({ topic, id: after, delay: 0, group: 'sg' });
      await sweep(q);
      const job = await claimOne(q, topic);
      assert.equal(job.id, after, 'a job that joined after the cancel runs');
      assert.equal(await q.engine.ack(topic, job.id, job), 'done');
      assert.deepEqual((await q.listGroup(topic, 'sg')).jobs.map((j) => [j.id, j.state]), [[due1, 'cancelled'], [due2, 'cancelled'], [later, 'cancelled'], [after, 'done']]);
      assert.deepEqual(await q.cancelGroup(topic, 'og'), { cancelled: 1, running: 0 });
      clock.advance(61 * SEC);
      let purged = 0;
      for (let i = 0; i < 10; i++) {
        const swept = await sweep(q);
        purged += swept.purged;
        if (!swept.more) break;
      }
      assert.equal(purged, 5);
      for (const group of ['sg', 'og']) assert.deepEqual((await q.listGroup(topic, group)).jobs, [], group);
      assert.deepEqual(await bucketsOf(topic), { level: 0, split: 0, count: 0, found: [] }, 'no bucket, no count');
      assert.equal(await redis.exists(groupKey(0, topic, 'sg')), 0, 'no zset');
    });

    it('buckets split as small groups come, and stay listpacks; every group lists its own jobs; purged, nothing is left', async () => {
      const { q, topic, clock } = setup({}, { retention: 60 });
      const ids = inPartition0(topic, 'sp', 600);
      const groupOf = (i: number) => `m-${Math.floor(i / 2)}`;
      for (let i = 0; i < ids.length; i += 2) {
        const { outcomes } = await q.addMany([0, 1].map((j) => ({ topic, id: ids[i + j]!, delay: 600, group: groupOf(i) })));
        assert.ok(outcomes.every((o) => o.status === 'created'));
      }
      const buckets = await bucketsOf(topic);
      assert.equal(buckets.count, 300);
      assert.ok(2 ** buckets.level + buckets.split >= 4, `300 groups in ${2 ** buckets.level + buckets.split} bucket(s)`);
      assert.equal(buckets.found.reduce((sum, b) => sum + b.fields, 0), 300, 'every group in one bucket, once');
      for (const b of buckets.found) {
        assert.ok(b.fields < 256, `${b.key} holds ${b.fields} groups`);
        assert.equal(b.encoding, 'listpack', b.key);
      }
      for (let i = 0; i < ids.length; i += 2) {
        assert.deepEqual((await q.listGroup(topic, groupOf(i))).jobs.map((j) => j.id), [ids[i], ids[i + 1]], groupOf(i));
      }
      for (const id of ids) await q.cancel(topic, id);
      clock.advance(61 * SEC);
      for (let i = 0; i < 100; i++) if (!(await sweep(q)).more) break;
      assert.deepEqual(await bucketsOf(topic), { level: 0, split: 0, count: 0, found: [] }, 'no bucket, no count');
    });

    it('buckets stay listpacks at every fill, not only when a round of splits ends: after every 50 groups no bucket holds 256 groups, half of hash-max-listpack-entries, and a bucket whose turn to split has not come is no exception', async () => {
      // linear hashing: a bucket not yet split this round holds twice the groups of one that was
      // (about 2 * 96), so the split rule must keep that under Redis's hash-max-listpack-entries
      // (512 by default), or the fullest buckets turn into hashtables (several times the bytes), for good
      const { q, topic } = setup();
      const ids = inPartition0(topic, 'lf', 1200);
      let most = 0;
      for (let i = 0; i < ids.length; i += 50) {
        const { outcomes } = await q.addMany(ids.slice(i, i + 50).map((id, j) => ({ topic, id, delay: 600, group: `f-${i + j}` })));
        assert.ok(outcomes.every((o) => o.status === 'created'));
        const buckets = await bucketsOf(topic);
        assert.equal(buckets.count, i + 50);
        for (const b of buckets.found) {
          most = Math.max(most, b.fields);
          assert.ok(b.fields < 256, `${i + 50} groups in ${buckets.found.length} buckets: ${b.key} holds ${b.fields}`);
          assert.equal(b.encoding, 'listpack', `${i + 50} groups: ${b.key} (${b.fields} groups)`);
        }
      }
      assert.ok(most > 128, `the buckets fill past the 96 a bucket holds on average (the fullest held ${most} groups)`);
    });

    it('a bucket that went past the listpack limit anyway is a listpack again once it splits', async () => {
      const { q, topic } = setup();
      const redis = target.redis();
      const ids = inPartition0(topic, 'lh', 300);
      await q.add({ topic, id: ids[0]!, delay: 600, group: 'h-0' });
      const bucket = groupBucketKey(topicKeys(0, topic).jobs, 0);
      // a value longer than hash-max-listpack-value turns the hash into a hashtable, for good
      await redis.hset(bucket, 'x', 'x'.repeat(100));
      await redis.hdel(bucket, 'x');
      assert.equal(await redis.object('ENCODING', bucket), 'hashtable');
      let added = 1;
      while ((await bucketsOf(topic)).found.length < 2) {
        assert.ok(added < ids.length, `${added} groups and still one bucket`);
        await q.add({ topic, id: ids[added]!, delay: 600, group: `h-${added}` });
        added++;
      }
      const buckets = await bucketsOf(topic);
      assert.deepEqual(buckets.found.map((b) => b.encoding), ['listpack', 'listpack'], `split at ${added} groups`);
      assert.equal(buckets.count, added);
      for (let i = 0; i < added; i++) assert.deepEqual((await q.listGroup(topic, `h-${i}`)).jobs.map((j) => j.id), [ids[i]]);
    });

    it('two small groups whose names hash alike share a bucket field: the second to come goes to its zset; each lists, moves and cancels only its own jobs', async () => {
      // 'gwuw' and 'g2whj': the same first 4 bytes of SHA-1 (9356a5fc)
      const { q, topic } = setup();
      const redis = target.redis();
      assert.deepEqual(bucketField('gwuw').field, bucketField('g2whj').field);
      const [a1, a2, b1, b2] = inPartition0(topic, 'hc', 4) as [string, string, string, string];
      await q.add({ topic, id: a1, delay: 600, group: 'gwuw' });
      await q.add({ topic, id: a2, delay: 600, group: 'gwuw' });
      await q.add({ topic, id: b1, delay: 600, group: 'g2whj' });
      assert.deepEqual(await firstChunk(redis, 0, topic, 'gwuw'), { form: 'bucket', ids: [a1, a2] });
      assert.deepEqual(await firstChunk(redis, 0, topic, 'g2whj'), { form: 'zset', ids: [b1] });
      assert.deepEqual((await q.listGroup(topic, 'gwuw')).jobs.map((j) => j.id), [a1, a2]);
      assert.deepEqual((await q.listGroup(topic, 'g2whj')).jobs.map((j) => j.id), [b1]);
      // a job of the bucket group moves to the zset group: its slot empties
      await q.put(topic, a2, { delay: 600, group: 'g2whj' });
      assert.deepEqual(await bucketSlots(redis, 0, topic, 'gwuw'), [a1, '']);
      assert.deepEqual((await q.listGroup(topic, 'gwuw')).jobs.map((j) => j.id), [a1]);
      assert.deepEqual((await q.listGroup(topic, 'g2whj')).jobs.map((j) => j.id), [b1, a2]);
      // a job of the zset group moves to the bucket group: it takes a slot, which the leave from
      // the zset group leaves alone
      await q.put(topic, b1, { delay: 600, group: 'gwuw' });
      assert.deepEqual(await bucketSlots(redis, 0, topic, 'gwuw'), [a1, '', b1]);
      assert.deepEqual((await q.listGroup(topic, 'gwuw')).jobs.map((j) => j.id), [a1, b1]);
      await q.add({ topic, id: b2, delay: 600, group: 'g2whj' });
      assert.deepEqual((await q.listGroup(topic, 'g2whj')).jobs.map((j) => j.id), [a2, b2]);
      assert.deepEqual(await q.cancelGroup(topic, 'gwuw'), { cancelled: 2, running: 0 });
      assert.equal((await q.get(topic, a2))?.state, 'delayed');
      assert.equal((await q.get(topic, b2))?.state, 'delayed');
      assert.deepEqual(await q.cancelGroup(topic, 'g2whj'), { cancelled: 2, running: 0 });
      assert.deepEqual((await q.listGroup(topic, 'gwuw')).jobs.map((j) => [j.id, j.state]), [[a1, 'cancelled'], [b1, 'cancelled']]);
    });

    it('two small groups whose names hash alike, both kept in one bucket field: the next job of either moves its group whole to its zset, so the group lists and cancels every job', async () => {
      // a job of the bucket group 'gwuw' moves to 'g2whj', which has no zset: it keeps its slot,
      // now 'g2whj''s, beside a job of 'gwuw'. The next join of 'gwuw' cannot append to a field
      // holding another group's slots; it goes to the group's zset and must take the group's
      // slots along, or the job left in the bucket is seen by no list and no cancel.
      const { q, topic, clock } = setup();
      const redis = target.redis();
      const [a1, a2, a3, b2] = inPartition0(topic, 'hm', 4) as [string, string, string, string];
      await q.add({ topic, id: a1, delay: 600, group: 'gwuw' });
      await q.add({ topic, id: a2, delay: 1, group: 'gwuw' });
      await q.put(topic, a1, { delay: 600, group: 'g2whj' });
      assert.deepEqual(await bucketSlots(redis, 0, topic, 'gwuw'), [a1, a2], "the moved job's slot is now the other group's");
      assert.deepEqual((await q.listGroup(topic, 'gwuw')).jobs.map((j) => j.id), [a2]);
      assert.deepEqual((await q.listGroup(topic, 'g2whj')).jobs.map((j) => j.id), [a1]);
      await q.add({ topic, id: a3, delay: 600, group: 'gwuw' });
      await q.add({ topic, id: b2, delay: 600, group: 'g2whj' });
      assert.deepEqual((await q.listGroup(topic, 'gwuw')).jobs.map((j) => j.id), [a2, a3]);
      assert.deepEqual((await q.listGroup(topic, 'g2whj')).jobs.map((j) => j.id), [a1, b2]);
      assert.deepEqual(await firstChunk(redis, 0, topic, 'gwuw'), { form: 'zset', ids: [a2, a3] });
      assert.deepEqual(await firstChunk(redis, 0, topic, 'g2whj'), { form: 'bucket', ids: [a1, b2] }, "the field is the other group's alone again: its job joins it there");
      assert.deepEqual(await q.cancelGroup(topic, 'gwuw'), { cancelled: 2, running: 0 });
      clock.advance(2 * SEC);
      await sweep(q);
      assert.deepEqual(await q.engine.claim(topic, 10), [], 'no job of the cancelled group starts');
      assert.equal((await q.get(topic, a2))?.state, 'cancelled');
      assert.deepEqual(await q.cancelGroup(topic, 'g2whj'), { cancelled: 2, running: 0 });
    });

    it('a job of a small group purged and added to it again before its leave ran keeps one slot; a slot whose job is gone is emptied by the next join', async () => {
      const { q, topic, clock } = setup({}, { retention: 60 });
      const redis = target.redis();
      const [x, y, z] = inPartition0(topic, 'st', 3) as [string, string, string];
      await q.add({ topic, id: x, delay: 600, group: 'st' });
      await q.add({ topic, id: y, delay: 600, group: 'st' });
      const k = topicKeys(0, topic);
      const purgeWithoutLeave = async (id: string) => {
        await q.cancel(topic, id);
        clock.advance(61 * SEC);
        const reply = await run(redis, script.moveDue([k.delayed, k.ready, k.running, k.jobs, k.bodies, k.dead, k.done], { clock: clock.now, limit: 100, maxAttempts: 3, backoff: 'f:10', random: 0, deadRetentionMs: HOUR, maxBytes: 1 << 20 }));
        assert.deepEqual(reply[9], ['st', id, 0], 'the purge names the group and the chunk');
      };
      await purgeWithoutLeave(x);
      assert.deepEqual(await bucketSlots(redis, 0, topic, 'st'), [x, y], 'its slot is still there');
      await q.add({ topic, id: x, delay: 600, group: 'st' });
      assert.deepEqual(await bucketSlots(redis, 0, topic, 'st'), [x, y], 'added again: the same slot');
      assert.deepEqual((await q.listGroup(topic, 'st')).jobs.map((j) => j.id), [x, y]);
      const base = groupKey(0, topic, 'st');
      assert.equal(await run(redis, script.leaveGroup([k.jobs, base], { group: 'st', members: [{ id: x, chunk: 0 }] })), 0, 'the late leave leaves it in the group');
      await purgeWithoutLeave(y);
      await q.add({ topic, id: z, delay: 600, group: 'st' });
      assert.deepEqual(await bucketSlots(redis, 0, topic, 'st'), [x, '', z], "the join emptied the gone job's slot");
      assert.deepEqual((await q.listGroup(topic, 'st')).jobs.map((j) => j.id), [x, z]);
      assert.equal(await run(redis, script.leaveGroup([k.jobs, base], { group: 'st', members: [{ id: y, chunk: 0 }] })), 0);
      assert.deepEqual(await q.cancelGroup(topic, 'st'), { cancelled: 2, running: 0 });
    });

    it('versions grow with every change; put and cancel honour If-Match', async () => {
      const { q, topic } = setup();
      const created = (await q.add({ topic, id: 'v', delay: 60 })).job;
      assert.ok(created.version > 0);
      assert.equal((await q.get(topic, 'v'))?.version, created.version, 'GET shows the version the add answered');
      const moved = (await q.reschedule(topic, 'v', { delay: 120 })).job;
      assert.ok(moved.version > created.version, 'a reschedule is a new version');
      const stale = await rejects(q.put(topic, 'v', { delay: 5 }, { ifMatch: { version: created.version } }), 412, 'VERSION_MISMATCH');
      assert.equal((stale.details as { job: Job }).job.version, moved.version, 'the 412 carries the job as it stands');
      assert.equal((await q.get(topic, 'v'))?.runAt, moved.runAt, 'a refused put changed nothing');
      const put = await q.put(topic, 'v', { delay: 5, body: 'new' }, { ifMatch: { version: moved.version } });
      assert.equal(put.status, 'replaced');
      assert.ok(put.job.version > moved.version);
      await rejects(q.cancel(topic, 'v', { ifMatch: { version: moved.version } }), 412, 'VERSION_MISMATCH');
      assert.equal((await q.cancel(topic, 'v', { ifMatch: { version: put.job.version } })).state, 'cancelled');
      const missing = await rejects(q.cancel(topic, 'nope', { ifMatch: '*' }), 412, 'VERSION_MISMATCH');
      assert.deepEqual(missing.details, { job: null });
      await rejects(q.put(topic, 'nope', { delay: 1 }, { ifMatch: '*' }), 412, 'VERSION_MISMATCH');
      assert.equal(await q.get(topic, 'nope'), null, 'If-Match * creates nothing');
      // a cancelled job created anew by put gets a version no earlier incarnation had
      const again = await q.put(topic, 'v', { delay: 5 });
      assert.equal(again.status, 'created');
      assert.ok(again.job.version > put.job.version);
    });

    it('lists upcoming jobs across partitions by due time, paged, within from and to', async () => {
      const { q, topic, clock } = setup();
      const dues = Array.from({ length: 40 }, (_, i) => ({ id: `up-${String(i).padStart(2, '0')}`, delay: 10 + (i % 7) * 60 }));
      for (const d of dues) await q.add({ topic, id: d.id, delay: d.delay, group: d.id.endsWith('3') ? 'g3' : undefined });
      const expected = [...dues].sort((a, b) => a.delay - b.delay || (a.id < b.id ? -1 : 1)).map((d) => d.id);
      const all = await listAll(q, topic, { state: 'delayed', limit: 6 });
      assert.deepEqual(all.map((j) => j.id), expected, 'every delayed job once, by (due time, id)');
      assert.equal(all.find((j) => j.id === 'up-13')?.group, 'g3');
      const from = clock.now + 70 * SEC;
      const to = clock.now + 190 * SEC;
      const window = await listAll(q, topic, { state: 'delayed', limit: 5, from, to });
      assert.deepEqual(window.map((j) => j.id), expected.filter((id) => { const d = dues.find((x) => x.id === id)!.delay * SEC + clock.now; return d >= from && d <= to; }));
      assert.ok(window.length > 0);
      // ready, running and dead listings
      clock.advance(75 * SEC);
      await sweep(q);
      const ready = await listAll(q, topic, { state: 'ready', limit: 4 });
      assert.deepEqual(ready.map((j) => j.id).sort(), dues.filter((d) => d.delay <= 75).map((d) => d.id).sort(), 'the ready jobs, each once');
      assert.ok(ready.every((j) => j.state === 'ready'));
      const claimed = await q.engine.claim(topic, 3);
      assert.deepEqual((await listAll(q, topic, { state: 'running', limit: 2 })).map((j) => j.id).sort(), claimed.map((j) => j.id).sort());
      assert.equal((await listAll(q, topic, { state: 'ready', limit: 100 })).length, ready.length - 3);
      await rejects(q.listJobs(topic, { state: 'delayed', cursor: 'not-a-cursor!' }), 400, 'VALIDATION_FAILED');
      const deadPage = await q.listJobs(topic, { state: 'delayed', limit: 1 });
      await rejects(q.listJobs(topic, { state: 'dead', cursor: deadPage.next! }), 400, 'VALIDATION_FAILED');
      await rejects(q.listGroup(topic, 'g3', { cursor: deadPage.next! }), 400, 'VALIDATION_FAILED');
      await rejects(q.listJobs('no-such-topic', { state: 'delayed' }), 400, 'UNKNOWN_TOPIC');
    });
  });

  it('runs the lifecycle after SCRIPT FLUSH (EVALSHA falls back to EVAL)', async () => {
    const { q, topic } = setup();
    await q.add({ topic, id: 'warm', delay: 0 });
    await target.flushScripts();
    await q.add({ topic, id: 'f', delay: 0 });
    assert.equal((await sweep(q)).moved, 2);
    const claimed = await q.engine.claim(topic, 2);
    assert.equal(claimed.length, 2);
    await target.flushScripts();
    for (const job of claimed) assert.equal(await q.engine.ack(topic, job.id, job), 'done');
    assert.equal((await q.get(topic, 'f'))?.state, 'done');
  });

  it('keeps every key of a job in its partition (one cluster slot per script)', async () => {
    const { q, topic } = setup();
    const ids = Array.from({ length: 20 }, (_, i) => `slot-${i}`);
    for (const id of ids) await q.add({ topic, id, delay: 0 });
    const partitions = new Set(ids.map((id) => partitionOf(topic, id, target.partitions)));
    if (target.partitions === 1) assert.deepEqual([...partitions], [0]);
    let total = 0;
    for (let p = 0; p < target.partitions; p++) total += await target.redis().zcard(topicKeys(p, topic).delayed);
    assert.equal(total, 20);
    if (target.partitions > 1) assert.ok(partitions.size > 1, 'jobs spread over partitions');
  });
}
