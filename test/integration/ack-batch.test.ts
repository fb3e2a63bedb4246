/**
 * Acks made in one turn of the event loop go to Redis together (lib/engine/attempts.ts, ackJob):
 * one ackJobs-4 call per partition and up to 100 attempts, each ack still answering for its own
 * attempt. Counted by Redis itself (INFO commandstats) on a redis-server of its own.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { makeQueue, TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';
import { partitionOf } from '../../lib/testing';

async function scriptCalls(redis: Redis): Promise<number> {
  const m = /^cmdstat_fcall:calls=(\d+)/m.exec(await redis.info('commandstats'));
  return m ? Number(m[1]) : 0;
}

describe('acks made together (real redis-server)', () => {
  const server = useRedisServer();

  /** A queue with `n` jobs of a new topic claimed (and started), on `partitions` partitions. */
  async function claimed(n: number, partitions = 1) {
    const redis = server.client();
    const clock = new TestClock();
    const topic = uniqueTopic('ackb');
    const q = makeQueue(redis, { [topic]: { concurrency: 10_000 } }, { clock, config: { partitions } });
    await q.addMany(Array.from({ length: n }, (_, i) => ({ topic, id: `j-${i}`, delay: 1 })));
    clock.advance(1000);
    for (let more = true; more;) more = (await q.engine.sweep()).more;
    const jobs = [];
    while (jobs.length < n) jobs.push(...(await q.engine.claim(topic, 100)));
    await q.engine.start(topic, jobs);
    return { redis, q, topic, jobs };
  }

  it('answers each ack for its own attempt, in one script call', async () => {
    const { redis, q, topic, jobs } = await claimed(5);
    const [a, b, c, d, e] = jobs as [
      (typeof jobs)[0],
      (typeof jobs)[0],
      (typeof jobs)[0],
      (typeof jobs)[0],
      (typeof jobs)[0],
    ];
    assert.equal((await q.cancel(topic, c.id)).state, 'cancelled');
    await redis.config('RESETSTAT');
    const outcomes = await Promise.all([
      q.engine.ack(topic, a.id, a),
      q.engine.ack(topic, b.id, { attempt: b.attempt, claim: 'not-its-claim' }),
      q.engine.ack(topic, c.id, c),
      q.engine.ack(topic, 'no-such-job', d),
      q.engine.ack(topic, d.id, d),
      q.engine.ack(topic, d.id, d), // the same ack twice in one call: the second finds it done
      q.engine.ack(topic, e.id, e),
    ]);
    assert.deepEqual(outcomes, ['done', 'stale', 'cancelled', 'not_found', 'done', 'stale', 'done']);
    assert.equal(await scriptCalls(redis), 1);
    assert.equal((await q.get(topic, a.id))?.state, 'done');
    assert.equal((await q.get(topic, b.id))?.state, 'running', 'a refused ack changes nothing');
    assert.equal(await q.engine.ack(topic, b.id, b), 'done', 'and the attempt can still be acked');
  });

  it('sends at most 100 attempts a call, and one call per partition', async () => {
    const { redis, q, topic, jobs } = await claimed(250, 4);
    await redis.config('RESETSTAT');
    const outcomes = await Promise.all(jobs.map((job) => q.engine.ack(topic, job.id, job)));
    assert.ok(outcomes.every((o) => o === 'done'));
    const perPartition = [0, 1, 2, 3].map((p) => jobs.filter((job) => partitionOf(topic, job.id, 4) === p).length);
    const expected = perPartition.reduce((sum, n) => sum + Math.ceil(n / 100), 0);
    assert.equal(await scriptCalls(redis), expected, `jobs per partition ${perPartition.join(', ')}`);
    assert.equal((await q.engine.counts(topic)).running, 0);
  });

  it('fails every ack of a call that fails, and the attempts stay running', async () => {
    const { redis, q, topic, jobs } = await claimed(3);
    const broken = new Redis(server.server().url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    const qb = makeQueue(broken, { [topic]: { concurrency: 10_000 } });
    broken.disconnect();
    const settled = await Promise.allSettled(jobs.map((job) => qb.engine.ack(topic, job.id, job)));
    assert.deepEqual(
      settled.map((s) => s.status),
      ['rejected', 'rejected', 'rejected'],
    );
    assert.equal((await q.engine.counts(topic)).running, 3);
    assert.ok(redis.status === 'ready');
  });
});
