/**
 * Expiry (expiresAt, expireAfter, a topic's expireAfter) against a real redis-server with a fixed
 * clock: an attempt due after its job's expiry never starts, judged in the script that would start
 * it (startAttempts-5, claimJobs-7 and claimFlow-6 with start), and the job ends `expired`, kept for
 * the retention in the done zset, counted in GET /topics. Every test checks that no attempt started
 * at or after its job's expiresAt (on the test's clock, which the scripts take as Redis's).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TopicInput } from '../../lib/core/queue-config';
import type { Job } from '../../lib/engine';
import { makeQueue, rejects, TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';
import { topicKeys } from '../../lib/testing';

const W = { name: 'producer', scope: 'write', topics: null } as const;

/** Attempts of `job` that started at or after its expiresAt: must be none. */
function startsAfterExpiry(job: Job): number {
  if (job.expiresAt === null) return 0;
  const expires = Date.parse(job.expiresAt);
  return job.attemptHistory.filter((a) => Date.parse(a.startedAt) >= expires).length;
}

describe('expiry', () => {
  const redis = useRedisServer();

  function setup(extra: TopicInput = {}) {
    const topic = uniqueTopic('exp');
    const clock = new TestClock();
    const q = makeQueue(
      redis.client(),
      { [topic]: { maxAttempts: 3, ttr: 3600, backoff: '10s', ...extra } },
      { clock, config: { retention: 600 } },
    );
    return { topic, clock, q };
  }

  async function expectExpired(q: ReturnType<typeof makeQueue>, topic: string, id: string, attempts: number) {
    const job = (await q.get(topic, id))!;
    assert.equal(job.state, 'expired');
    assert.equal(job.attempts, attempts, 'the claim never started is not counted');
    assert.equal(job.deadline, null);
    assert.equal(startsAfterExpiry(job), 0, 'no attempt started at or after its expiry');
    const k = topicKeys(0, topic, 1); // one partition
    assert.equal(await redis.client().zscore(k.running, id), null, 'out of running');
    assert.ok((await redis.client().zscore(k.done, id)) !== null, 'kept in the done zset for the retention');
    return job;
  }

  it('a job expiring before its first start never runs: claim, then start', async () => {
    const { topic, clock, q } = setup();
    const added = await q.add({ topic, id: 'a', delay: 0, expireAfter: 5 }, W);
    assert.equal(added.job.expiresAt, new Date(clock.now + 5000).toISOString());
    clock.advance(5000); // at its expiry: too late
    await q.engine.sweep();
    const claimed = await q.engine.claim(topic, 10);
    assert.equal(claimed.length, 1, 'a claim alone does not judge the expiry');
    const started = await q.engine.startTimed(topic, claimed);
    assert.deepEqual([started.live, started.expired], [[false], 1]);
    const job = await expectExpired(q, topic, 'a', 0);
    assert.equal(job.expiresAt, new Date(clock.now).toISOString());
    const stats = await q.stats(topic);
    assert.deepEqual([stats.expired, stats.running, stats.ready, stats.delayed], [1, 0, 0, 0]);
  });

  it("a handler's own claim (claimStarted) ends an expired job instead of handing it out", async () => {
    const { topic, clock, q } = setup();
    await q.add({ topic, id: 'late', delay: 0, expiresAt: clock.now + 1000 }, W);
    await q.add({ topic, id: 'fresh', delay: 0, expiresAt: new Date(clock.now + 60_000).toISOString() }, W);
    clock.advance(2000);
    await q.engine.sweep();
    const claim = await q.engine.claimStartedCounted(topic, 10);
    assert.deepEqual(
      claim.jobs.map((j) => j.id),
      ['fresh'],
    );
    assert.equal(claim.expired, 1);
    await expectExpired(q, topic, 'late', 0);
    assert.equal((await q.get(topic, 'fresh'))!.state, 'running');
    assert.equal((await q.stats(topic)).expired, 1);
  });

  it('a job started before its expiry runs, and its ack after the expiry ends it done', async () => {
    const { topic, clock, q } = setup();
    await q.add({ topic, id: 'a', delay: 0, expireAfter: '1m' }, W);
    clock.advance(59_999);
    await q.engine.sweep();
    const claimed = await q.engine.claim(topic, 1);
    assert.deepEqual(await q.engine.start(topic, claimed), [true]);
    clock.advance(10_000);
    assert.equal(await q.engine.ack(topic, 'a', claimed[0]!), 'done');
    const job = (await q.get(topic, 'a'))!;
    assert.equal(job.state, 'done');
    assert.equal(startsAfterExpiry(job), 0);
    assert.equal((await q.stats(topic)).expired, 0);
  });

  it("a retry due after the job's expiry is judged at its start: expired", async () => {
    const { topic, clock, q } = setup();
    await q.add({ topic, id: 'a', delay: 0, expireAfter: 5 }, W);
    await q.engine.sweep();
    const first = await q.engine.claim(topic, 1);
    assert.deepEqual(await q.engine.start(topic, first), [true]);
    const failed = await q.engine.fail(topic, 'a', first[0]!, 'boom');
    assert.equal(failed.outcome, 'retry'); // due 10 s on, after its expiry 5 s on
    clock.advance(10_000);
    await q.engine.sweep();
    const second = await q.engine.claim(topic, 1);
    assert.equal(second[0]!.attempt, 2);
    assert.deepEqual((await q.engine.startTimed(topic, second)).expired, 1);
    const job = await expectExpired(q, topic, 'a', 1);
    assert.equal(job.lastError, 'boom', 'the failure stays the last error');
    assert.equal(job.attemptHistory.length, 1, 'the failed attempt, started before the expiry');
  });

  it('a paused topic resumed after the expiry: the job expires at its start', async () => {
    const { topic, clock, q } = setup();
    await q.add({ topic, id: 'a', delay: 0, expireAfter: 30 }, W);
    await q.engine.sweep();
    const claimed = await q.engine.claim(topic, 1);
    await q.pauseTopic(topic);
    assert.deepEqual(await q.engine.start(topic, claimed), [false], 'held back while paused');
    assert.equal((await q.get(topic, 'a'))!.expiresAt, new Date(clock.now + 30_000).toISOString(), 'kept');
    clock.advance(60_000);
    await q.resumeTopic(topic);
    await q.engine.sweep();
    const again = await q.engine.claim(topic, 1);
    assert.equal(again.length, 1);
    assert.equal((await q.engine.startTimed(topic, again)).expired, 1);
    await expectExpired(q, topic, 'a', 0);
  });

  it("the topic's expireAfter applies to jobs that set none; a job's own wins", async () => {
    const { topic, clock, q } = setup({ expireAfter: 120 });
    const runAt = clock.now + 60_000;
    const a = await q.add({ topic, id: 'a', runAt }, W);
    const b = await q.add({ topic, id: 'b', runAt, expireAfter: 10 }, W);
    const c = await q.add({ topic, id: 'c', delay: 0 }, W);
    assert.equal(a.job.expiresAt, new Date(runAt + 120_000).toISOString());
    assert.equal(b.job.expiresAt, new Date(runAt + 10_000).toISOString());
    assert.equal(c.job.expiresAt, new Date(clock.now + 120_000).toISOString());
    assert.equal((await q.get(topic, 'a'))!.expiresAt, a.job.expiresAt, 'GET shows it');
  });

  it('a job without expiry keeps a header without the slot, and never expires', async () => {
    const { topic, clock, q } = setup();
    await q.add({ topic, id: 'a', delay: 0 }, W);
    assert.equal((await q.get(topic, 'a'))!.expiresAt, null);
    clock.advance(365 * 86_400_000);
    await q.engine.sweep();
    const claim = await q.engine.claimStartedCounted(topic, 1);
    assert.deepEqual([claim.jobs.length, claim.expired], [1, 0]);
  });

  it('a job with a group and an expiry expires, and its record stays an array (GET decodes it)', async () => {
    const { topic, clock, q } = setup();
    await q.add({ topic, id: 'g1', delay: 0, group: 'grp', expireAfter: 1 }, W);
    clock.advance(1000);
    await q.engine.sweep();
    assert.equal((await q.engine.claimStartedCounted(topic, 1)).expired, 1);
    await expectExpired(q, topic, 'g1', 0);
    assert.equal((await q.listGroup(topic, 'grp')).jobs[0]!.state, 'expired');
  });

  it('an expired job is purged after its retention, as done and cancelled ones are', async () => {
    const { topic, clock, q } = setup();
    await q.add({ topic, id: 'e', delay: 0, expireAfter: 1 }, W);
    await q.add({ topic, id: 'd', delay: 0 }, W);
    clock.advance(1000);
    await q.engine.sweep();
    const claimed = await q.engine.claim(topic, 10);
    const started = await q.engine.startTimed(topic, claimed);
    assert.deepEqual(
      claimed.map((c, i) => [c.id, started.live[i]]),
      [
        ['d', true],
        ['e', false],
      ],
    );
    assert.equal(await q.engine.ack(topic, 'd', claimed[0]!), 'done');
    assert.equal((await q.get(topic, 'e'))?.state, 'expired');
    clock.advance(601_000); // past the retention (600 s)
    await q.engine.sweep();
    assert.equal(await q.get(topic, 'd'), null, 'the done job is purged');
    assert.equal(await q.get(topic, 'e'), null, 'the expired job is purged too');
    assert.equal((await q.add({ topic, id: 'e', delay: 60 }, W)).status, 'created', 'its id is free again');
  });

  it('DELETE of an expired job is refused as finished (409 JOB_FINISHED), as a put is', async () => {
    const { topic, clock, q } = setup();
    await q.add({ topic, id: 'x', delay: 0, expireAfter: 1 }, W);
    clock.advance(1000);
    await q.engine.sweep();
    const claimed = await q.engine.claim(topic, 1);
    await q.engine.startTimed(topic, claimed);
    assert.equal((await q.get(topic, 'x'))?.state, 'expired');
    await rejects(q.cancel(topic, 'x'), 409, 'JOB_FINISHED');
    assert.equal((await q.get(topic, 'x'))?.state, 'expired', 'still expired');
  });

  it('validation: 400s that name the field', async () => {
    const { topic, clock, q } = setup();
    const fields = async (input: Record<string, unknown>) =>
      (
        (await rejects(q.add({ topic, id: 'v', ...input }, W), 400, 'VALIDATION_FAILED')).details as { path: string }[]
      ).map((d) => d.path);
    assert.deepEqual(await fields({ runAt: clock.now + 10_000, expiresAt: clock.now + 5000 }), ['expiresAt']);
    assert.deepEqual(await fields({ runAt: clock.now + 10_000, expiresAt: clock.now + 10_000 }), ['expiresAt']);
    assert.deepEqual(await fields({ delay: 0, expiresAt: clock.now + 5000, expireAfter: 5 }), ['expiresAt']);
    assert.deepEqual(await fields({ delay: 0, expiresAt: 'tomorrow' }), ['expiresAt']);
    assert.deepEqual(await fields({ delay: 0, expireAfter: 0 }), ['expireAfter']);
    assert.deepEqual(await fields({ delay: 0, expireAfter: 'soon' }), ['expireAfter']);
    assert.throws(
      () => makeQueue(redis.client(), { [topic]: { expireAfter: 0 } }),
      /topics\..*\.expireAfter must be a number of seconds/,
    );
  });
});

describe('expiry on a flow topic', () => {
  const redis = useRedisServer();

  function setup() {
    const topic = uniqueTopic('expflow');
    const clock = new TestClock();
    const q = makeQueue(
      redis.client(),
      { [topic]: { concurrency: 50, maxAttempts: 3, ttr: 3600, flow: { concurrency: 1 } } },
      { clock, config: { retention: 600 } },
    );
    return { topic, clock, q };
  }

  it("claimed, then expired at its start: the key's slot is free again", async () => {
    const { topic, clock, q } = setup();
    await q.add({ topic, id: 'e', delay: 0, key: 'k', expireAfter: 1 }, W);
    await q.add({ topic, id: 'ok', delay: 0, key: 'k' }, W);
    await q.engine.sweep();
    const claimed = await q.engine.claim(topic, 10);
    assert.deepEqual(
      claimed.map((j) => j.id),
      ['e'],
      'the key at its concurrency of 1',
    );
    assert.equal((await q.engine.flowKey(topic, 'k')).running, 1);
    clock.advance(1000);
    assert.equal((await q.engine.startTimed(topic, claimed)).expired, 1);
    assert.equal((await q.engine.flowKey(topic, 'k')).running, 0, 'the slot given back, as an ack would');
    const job = (await q.get(topic, 'e'))!;
    assert.deepEqual([job.state, job.attempts, startsAfterExpiry(job)], ['expired', 0, 0]);
    const next = await q.engine.claimStarted(topic, 10);
    assert.deepEqual(
      next.map((j) => j.id),
      ['ok'],
      'the key claims its next job',
    );
    assert.equal((await q.stats(topic)).expired, 1);
  });

  it("a flow claim that starts what it claims expires the job, never taking the key's slot", async () => {
    const { topic, clock, q } = setup();
    await q.add({ topic, id: 'e', delay: 0, key: 'k', expireAfter: 1 }, W);
    await q.add({ topic, id: 'ok', delay: 0, key: 'k' }, W);
    clock.advance(1000);
    await q.engine.sweep();
    const claim = await q.engine.claimStartedCounted(topic, 10);
    assert.deepEqual([claim.jobs.map((j) => j.id), claim.expired], [['ok'], 1]);
    assert.equal((await q.engine.flowKey(topic, 'k')).running, 1, 'the one running job');
    const job = (await q.get(topic, 'e'))!;
    assert.deepEqual([job.state, job.attempts, startsAfterExpiry(job)], ['expired', 0, 0]);
  });
});
