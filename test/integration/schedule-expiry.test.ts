/**
 * A schedule's occurrences carry an expiry, against a real redis-server with a fixed clock: the schedule's own
 * `expireAfter` (seconds after each occurrence's due time), else its topic's `expireAfter` default, as a plain add
 * takes it. An occurrence whose start comes at or after its expiry does not run and ends `expired`; one started in time
 * runs. The expiry rides through the sweeper's advance, a put that makes the pending occurrence again, a pause and a
 * resume's catch-up, and a move to another partition. Every test checks that no attempt started at or after its job's
 * expiry (on the test's clock, which the scripts take as Redis's).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TopicInput } from '../../lib/core/queue-config';
import type { Job } from '../../lib/engine';
import { occurrenceId } from '../../lib/core/schedule';
import { makeQueue, rejects, TestClock, uniqueTopic, type Queue } from '../support/queue';
import { useRedisServer } from '../support/redis';
import { engineContext, moveSchedules } from '../../lib/testing';

const SEC = 1000;
const MIN = 60 * SEC;
const iso = (ms: number) => new Date(ms).toISOString();

/** Attempts of `job` that started at or after its expiresAt (its history, and the attempt running or done): none. */
function startsAfterExpiry(job: Job): number {
  if (job.expiresAt === null) return 0;
  const expires = Date.parse(job.expiresAt);
  return job.attemptHistory.filter((a) => Date.parse(a.startedAt) >= expires).length;
}

describe("schedules' occurrences expire", () => {
  const redis = useRedisServer();

  function setup(extra: TopicInput = {}) {
    const topic = uniqueTopic('sched-exp');
    const clock = new TestClock(); // 2030-01-01T00:00:00Z, on the hour
    const q = makeQueue(
      redis.client(),
      { [topic]: { ttr: 300, maxAttempts: 3, backoff: { type: 'fixed', delay: 10 }, concurrency: 100, ...extra } },
      { clock, config: { retention: 600 } },
    );
    return { topic, clock, q };
  }

  const sweepAll = async (q: Queue) => {
    for (let i = 0; i < 10 && (await q.engine.sweep()).more; i++);
  };

  /** The occurrence of schedule `id` at run time `ms`, as GET /jobs shows it. */
  const occurrence = async (q: Queue, topic: string, id: string, ms: number) =>
    (await q.get(topic, occurrenceId(id, ms)))!;

  it('an occurrence started after its expiry ends expired; the next, started in time, runs and ends done', async () => {
    const { topic, clock, q } = setup();
    const t0 = clock.now;
    const put = await q.putSchedule(topic, 'tick', { every: 60, expireAfter: 30, body: { n: 1 } });
    assert.equal(put.schedule.expireAfter, 30, 'the view shows it');
    assert.equal((await q.getSchedule(topic, 'tick'))!.expireAfter, 30, 'GET shows it');
    const first = await occurrence(q, topic, 'tick', t0 + MIN);
    assert.deepEqual([first.state, first.expiresAt], ['delayed', iso(t0 + MIN + 30 * SEC)], '30 s after its due time');

    clock.advance(MIN);
    await sweepAll(q); // the first ready, the schedule moved on: its next occurrence made by the advance
    const second = await occurrence(q, topic, 'tick', t0 + 2 * MIN);
    assert.equal(second.expiresAt, iso(t0 + 2 * MIN + 30 * SEC), 'the advance gives the next one its expiry too');
    const claimed = await q.engine.claim(topic, 10);
    assert.deepEqual(
      claimed.map((j) => j.id),
      [first.id],
    );
    clock.advance(30 * SEC); // at its expiry: too late to start
    const started = await q.engine.startTimed(topic, claimed);
    assert.deepEqual([started.live, started.expired], [[false], 1]);
    const expired = await occurrence(q, topic, 'tick', t0 + MIN);
    assert.deepEqual([expired.state, expired.attempts, startsAfterExpiry(expired)], ['expired', 0, 0]);

    clock.advance(30 * SEC); // the second one's due time
    await sweepAll(q);
    const run = await q.engine.claimStartedCounted(topic, 10);
    assert.deepEqual([run.jobs.map((j) => j.id), run.expired], [[second.id], 0], 'started in time');
    clock.advance(45 * SEC); // its ack may come after its expiry: it started before
    assert.equal(await q.engine.ack(topic, second.id, run.jobs[0]!), 'done');
    const done = await occurrence(q, topic, 'tick', t0 + 2 * MIN);
    assert.deepEqual([done.state, done.attempts, startsAfterExpiry(done)], ['done', 1, 0]);
    assert.equal(Date.parse(done.attemptHistory.at(-1)!.startedAt), t0 + 2 * MIN);
    assert.equal((await q.stats(topic)).expired, 1);
  });

  it("a handler's own claim (claimStarted) ends an expired occurrence instead of handing it out", async () => {
    const { topic, clock, q } = setup();
    const t0 = clock.now;
    await q.putSchedule(topic, 'late', { every: 60, expireAfter: '10s' });
    await q.putSchedule(topic, 'fresh', { every: 60 });
    clock.advance(MIN + 10 * SEC); // both due, the first at its expiry
    await sweepAll(q);
    const claim = await q.engine.claimStartedCounted(topic, 10);
    assert.deepEqual([claim.jobs.map((j) => j.id), claim.expired], [[occurrenceId('fresh', t0 + MIN)], 1]);
    const late = await occurrence(q, topic, 'late', t0 + MIN);
    assert.deepEqual([late.state, late.expiresAt, late.attempts], ['expired', iso(t0 + MIN + 10 * SEC), 0]);
    assert.equal((await occurrence(q, topic, 'fresh', t0 + MIN)).expiresAt, null, 'no expiry: none given, no default');
    assert.equal((await q.getSchedule(topic, 'fresh'))!.expireAfter, null);
  });

  it("the topic's expireAfter applies to a schedule that sets none; a schedule's own wins", async () => {
    const { topic, clock, q } = setup({ expireAfter: 120 });
    const t0 = clock.now;
    const byTopic = await q.putSchedule(topic, 'by-topic', { every: 60 });
    const own = await q.putSchedule(topic, 'own', { every: 60, expireAfter: '1m' });
    assert.deepEqual([byTopic.schedule.expireAfter, own.schedule.expireAfter], [120, 60]);
    assert.equal((await occurrence(q, topic, 'by-topic', t0 + MIN)).expiresAt, iso(t0 + MIN + 120 * SEC));
    assert.equal((await occurrence(q, topic, 'own', t0 + MIN)).expiresAt, iso(t0 + MIN + 60 * SEC));
    // a plain add on the same topic takes the same default
    const added = await q.add({ topic, id: 'plain', runAt: t0 + MIN }, { name: 'p', scope: 'write', topics: null });
    assert.equal(added.job!.expiresAt, iso(t0 + MIN + 120 * SEC));
  });

  it("an occurrence's expiry follows its due time, jitter included", async () => {
    const { topic, clock, q } = setup({ jitter: 20 });
    const t0 = clock.now;
    await q.putSchedule(topic, 'spread', { every: 60, expireAfter: 5 });
    const job = await occurrence(q, topic, 'spread', t0 + MIN);
    assert.equal(Date.parse(job.expiresAt!) - Date.parse(job.runAt), 5 * SEC);
  });

  it('a retry due after the occurrence expired is judged at its start: expired', async () => {
    const { topic, clock, q } = setup();
    const t0 = clock.now;
    await q.putSchedule(topic, 'retry', { every: 3600, expireAfter: 5 });
    clock.advance(60 * MIN);
    await sweepAll(q);
    const [first] = await q.engine.claimStarted(topic, 1);
    assert.ok(first);
    assert.equal((await q.engine.fail(topic, first.id, first, 'boom')).outcome, 'retry'); // 10 s on: after its expiry
    clock.advance(10 * SEC);
    await sweepAll(q);
    const again = await q.engine.claimStartedCounted(topic, 10);
    assert.deepEqual([again.jobs.length, again.expired], [0, 1]);
    const job = await occurrence(q, topic, 'retry', t0 + 60 * MIN);
    assert.deepEqual([job.state, job.attempts, job.lastError, startsAfterExpiry(job)], ['expired', 1, 'boom', 0]);
    assert.equal(job.attemptHistory.length, 1, 'the failed attempt, started in time');
  });

  it('a put with another expireAfter makes the pending occurrence again with it; pause and resume keep it, and a catch-up whose expiry passed while paused expires', async () => {
    const { topic, clock, q } = setup();
    const t0 = clock.now;
    await q.putSchedule(topic, 'p', { every: 60, expireAfter: 30, catchUp: 'latest' });
    await q.putSchedule(topic, 'p', { every: 60, expireAfter: 40, catchUp: 'latest' });
    assert.equal((await occurrence(q, topic, 'p', t0 + MIN)).expiresAt, iso(t0 + MIN + 40 * SEC));
    await q.putSchedule(topic, 'p', { every: 60, catchUp: 'latest' });
    assert.equal((await occurrence(q, topic, 'p', t0 + MIN)).expiresAt, null, 'none now');
    await q.putSchedule(topic, 'p', { every: 60, expireAfter: 30, catchUp: 'latest' });
    clock.advance(MIN);
    await sweepAll(q);
    const [ran] = await q.engine.claimStarted(topic, 10);
    assert.equal(ran?.id, occurrenceId('p', t0 + MIN));
    assert.equal(await q.engine.ack(topic, ran.id, ran), 'done');

    const paused = await q.pauseSchedule(topic, 'p', true, 'ops');
    assert.deepEqual([paused.paused, paused.expireAfter], [true, 30]);
    clock.advance(9 * MIN + 45 * SEC); // the latest missed run (10 min on) 45 s ago: past its expiry
    const resumed = await q.pauseSchedule(topic, 'p', false, 'ops');
    assert.deepEqual([resumed.paused, resumed.expireAfter], [false, 30], 'the definition kept its expiry');
    await sweepAll(q);
    const caughtUp = await q.engine.claimStartedCounted(topic, 10);
    assert.deepEqual([caughtUp.jobs.length, caughtUp.expired], [0, 1], 'the catch-up came too late to run');
    const missed = await occurrence(q, topic, 'p', t0 + 10 * MIN);
    assert.deepEqual([missed.state, missed.expiresAt], ['expired', iso(t0 + 10 * MIN + 30 * SEC)]);

    clock.advance(15 * SEC); // the next run, on time
    await sweepAll(q);
    const next = await q.engine.claimStartedCounted(topic, 10);
    assert.deepEqual([next.jobs.map((j) => j.id), next.expired], [[occurrenceId('p', t0 + 11 * MIN)], 0]);
  });

  it('validation: 400s that name expireAfter (as a job) and expiresAt (not a schedule field)', async () => {
    const { topic, q } = setup();
    const fields = async (input: Record<string, unknown>) =>
      (
        (await rejects(q.putSchedule(topic, 'v', { every: 60, ...input }), 400, 'VALIDATION_FAILED')).details as {
          path: string;
          message: string;
        }[]
      ).map((d) => d.path);
    for (const bad of [0, -1, 0.5, 'soon', '', null, true, 10 * 365 * 86_400 + 1, { s: 1 }])
      assert.deepEqual(await fields({ expireAfter: bad }), ['expireAfter'], JSON.stringify(bad));
    assert.deepEqual(await fields({ expiresAt: '2030-01-01T00:05:00Z' }), ['expiresAt']);
    assert.deepEqual(await fields({ expireAfter: 0, jitter: -1 }), ['jitter', 'expireAfter'], 'every problem at once');
    const err = await rejects(q.putSchedule(topic, 'v', { every: 60, expireAfter: 'soon' }), 400, 'VALIDATION_FAILED');
    assert.match(
      (err.details as { message: string }[])[0]!.message,
      /seconds from 1 to 315360000, or a duration like "10m"/,
    );
    assert.equal(await q.getSchedule(topic, 'v'), null, 'nothing written');
    for (const [given, seconds] of [
      [1, 1],
      ['90s', 90],
      ['2h', 7200],
      [10 * 365 * 86_400, 10 * 365 * 86_400],
    ] as const) {
      const put = await q.putSchedule(topic, `ok-${seconds}`, { every: 60, expireAfter: given });
      assert.equal(put.schedule.expireAfter, seconds);
    }
  });
});

describe("a schedule's expiry while the partition count changes", () => {
  const server = useRedisServer();

  it('a moved schedule keeps its expireAfter, and the occurrences it makes again in its new partition keep their expiry', async () => {
    const redis = server.client();
    const clock = new TestClock();
    const t0 = clock.now;
    const topic = uniqueTopic('sched-exp-move');
    const topics = { [topic]: { ttr: 30, maxAttempts: 3, concurrency: 100 } };
    const before = makeQueue(redis, topics, { clock, config: { partitions: 2, retention: 600 } });
    const after = makeQueue(redis, topics, { clock, config: { partitions: 3, formerPartitions: 2, retention: 600 } });
    const ids = Array.from({ length: 8 }, (_, i) => `m${i}`);
    for (const id of ids) await before.putSchedule(topic, id, { every: 60, expireAfter: 20 });
    for (let i = 0; i < 20; i++) {
      const step = await moveSchedules(engineContext(after.engine), 100);
      if (!step.more && step.busy === 0) break;
    }
    for (const id of ids) {
      assert.equal((await after.getSchedule(topic, id))!.expireAfter, 20, id);
      assert.equal((await after.get(topic, occurrenceId(id, t0 + MIN)))!.expiresAt, iso(t0 + MIN + 20 * SEC), id);
    }
    clock.advance(MIN + 20 * SEC); // every first occurrence at its expiry
    for (let i = 0; i < 10 && (await after.engine.sweep()).more; i++);
    const claim = await after.engine.claimStartedCounted(topic, 100);
    assert.deepEqual([claim.jobs.length, claim.expired], [0, ids.length]);
    const next = await after.get(topic, occurrenceId(ids[0]!, t0 + 2 * MIN));
    assert.equal(next!.expiresAt, iso(t0 + 2 * MIN + 20 * SEC), 'made by the advance in the new partition');
  });
});
