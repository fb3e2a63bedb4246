/**
 * A handler that drains its topic acks its last job and claims its next in one script call
 * (engine.ackAndClaimStarted: claimJobs-7 ends the attempts it is given as done, as ackJobs-4
 * does, before it claims): in a herd a job costs one script call, not two. Each ack still answers
 * for its own attempt, a done end still notifies its callback, and a topic whose claim cannot carry
 * the ack (flow, rate-limited) acks first on its own. Script calls counted by Redis itself (INFO
 * commandstats) on a redis-server of the test's own.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import type { TopicInput } from '../../lib/core/queue-config';
import { toWire, type HandlerEvent } from '../../lib/workers/fanout';
import { topicHandler } from '../../lib/workers/handler';
import { partitionOf } from '../../lib/testing';
import { apiOf, makeQueue, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';
import { useTestRuntime } from '../support/runtime';

/** Calls of `command` the redis-server answered so far (those scripts made included). */
async function commandCalls(redis: Redis, command: string): Promise<number> {
  const m = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(await redis.info('commandstats'));
  return m ? Number(m[1]) : 0;
}

/** Script calls (FCALL) the redis-server answered so far. */
const scriptCalls = (redis: Redis) => commandCalls(redis, 'fcall');

describe('a draining handler acks its last job and claims its next in one script call (real redis-server)', () => {
  const runtime = useTestRuntime({ orders: { handler: 'h', batchSize: 1 } });

  it('6 jobs, one in the event: a start, then one call a job (before: an ack and a claim a job)', async () => {
    const rt = runtime();
    const queue = apiOf(rt);
    const ids = Array.from({ length: 6 }, (_, i) => `o${i}`);
    await queue.addMany(ids.map((id) => ({ topic: 'orders', id, delay: 0 })));
    await queue.engine.sweep();
    const claimed = await queue.engine.claim('orders', 1);
    const ran: string[] = [];
    const handler = topicHandler(
      async (job) => void ran.push(job.id),
      () => rt,
    );
    const event: HandlerEvent = { topic: 'orders', jobs: claimed.map(toWire), more: true };
    const calls = await scriptCalls(rt.redis as Redis);
    const report = await handler(event, { awsRequestId: 'r', getRemainingTimeInMillis: () => 60_000 });
    const made = (await scriptCalls(rt.redis as Redis)) - calls;
    assert.deepEqual(ran, ids);
    assert.deepEqual(report, { done: 6, retried: 0, dead: 0, stale: 0, expired: 0 });
    for (const id of ids) assert.equal((await queue.get('orders', id))?.state, 'done', id);
    // the event's start, then 6 calls that each ack a job and claim the next (the last finds none)
    assert.equal(made, 7, `script calls: ${made}`);
  });

  it('an ack the claim carries still answers for its own attempt: a job cancelled while it ran is stale', async () => {
    const rt = runtime();
    const queue = apiOf(rt);
    await queue.addMany(['c0', 'c1', 'c2'].map((id) => ({ topic: 'orders', id, delay: 0 })));
    await queue.engine.sweep();
    const claimed = await queue.engine.claim('orders', 1);
    const ran: string[] = [];
    const handler = topicHandler(
      async (job) => {
        ran.push(job.id);
        if (job.id === 'c1') await queue.cancel('orders', 'c1');
      },
      () => rt,
    );
    const report = await handler(
      { topic: 'orders', jobs: claimed.map(toWire), more: true },
      { awsRequestId: 'r', getRemainingTimeInMillis: () => 60_000 },
    );
    assert.deepEqual(ran, ['c0', 'c1', 'c2'], 'the claim after the stale ack still took the next job');
    assert.deepEqual(report, { done: 2, retried: 0, dead: 0, stale: 1, expired: 0 });
    assert.equal((await queue.get('orders', 'c1'))?.state, 'cancelled');
    assert.equal((await queue.get('orders', 'c2'))?.state, 'done');
  });
});

describe('engine.ackAndClaimStarted (real redis-server)', () => {
  const server = useRedisServer();

  /** A queue whose topic (options `input`) has `n` jobs ready, the first claimed and started. */
  async function oneRunning(input: TopicInput, n: number, partitions = 1) {
    const topic = uniqueTopic('ackclaim');
    const notices = uniqueTopic('ackclaimcb');
    const q = makeQueue(
      server.client(),
      { [topic]: { concurrency: 1, ...input }, [notices]: {} },
      { config: { partitions, retention: 600 } },
    );
    await q.addMany(
      Array.from({ length: n }, (_, i) => ({ topic, id: `j${i}`, delay: 0, callback: { topic: notices } })),
    );
    for (let more = true; more;) more = (await q.engine.sweep()).more;
    const [first] = await q.engine.claimStarted(topic, 1);
    assert.ok(first);
    return { q, topic, notices, first };
  }

  for (const [name, input, partitions] of [
    ['a plain topic', {}, 1],
    ['a plain topic of 8 partitions', {}, 8],
    ['a flow topic (acked on its own first)', { flow: {} }, 1],
    ['a rate-limited topic (acked on its own first)', { rateLimit: { count: 100, per: 1 } }, 1],
  ] as const) {
    it(`${name}: the slot the ack frees takes the next job (concurrency 1); the done end notifies`, async () => {
      const { q, topic, notices, first } = await oneRunning(input, 2, partitions);
      assert.equal((await q.engine.claimStarted(topic, 1)).length, 0, 'at its concurrency');
      const { ack, jobs } = await q.engine.ackAndClaimStarted(topic, first.id, first, 1);
      assert.equal(ack, 'done');
      assert.equal((await q.get(topic, first.id))?.state, 'done');
      assert.deepEqual(
        jobs.map((j) => j.id),
        ['j0', 'j1'].filter((id) => id !== first.id),
      );
      const created = Date.parse((await q.get(topic, first.id))!.createdAt);
      assert.ok(await q.get(notices, `${topic}.${first.id}.done.${created}`), 'the callback job is there');
      // acked again (a retried call): stale, and nothing claimed twice
      const again = await q.engine.ackAndClaimStarted(topic, first.id, first, 1);
      assert.deepEqual([again.ack, again.jobs.length], ['stale', 0]);
    });
  }

  it('an ack of a job that is gone answers not_found; the claim still takes the next', async () => {
    const { q, topic, first } = await oneRunning({ concurrency: 2 }, 2);
    const { ack, jobs } = await q.engine.ackAndClaimStarted(topic, 'gone', first, 1);
    assert.equal(ack, 'not_found');
    assert.deepEqual(
      jobs.map((j) => j.id),
      ['j0', 'j1'].filter((id) => id !== first.id),
    );
  });

  /**
   * A queue of 12 partitions whose topic (concurrency `concurrency`) has `perPartition` jobs ready in each of `spread`
   * partitions, one of them claimed and started.
   */
  async function onTwelve(concurrency: number, spread: number, perPartition: number) {
    const topic = uniqueTopic('inplace');
    const place = (id: string) => partitionOf(topic, id, 12);
    const ids: string[] = [];
    const per = new Map<number, number>();
    for (let i = 0; ids.length < spread * perPartition; i++) {
      const p = place(`k${i}`);
      const n = per.get(p) ?? 0;
      if (n < perPartition && (n > 0 || per.size < spread)) {
        ids.push(`k${i}`);
        per.set(p, n + 1);
      }
    }
    const q = makeQueue(server.client(), { [topic]: { concurrency } }, { config: { partitions: 12 } });
    await q.addMany(ids.map((id) => ({ topic, id, delay: 0 })));
    for (let more = true; more;) more = (await q.engine.sweep()).more;
    const [first] = await q.engine.claimStarted(topic, 1);
    assert.ok(first);
    return { q, topic, first, place };
  }

  it("on 12 partitions, a claim of one job with its ack goes in the acked job's place, counting no partition", async () => {
    const { q, topic, first, place } = await onTwelve(5, 12, 2); // whichever is claimed, another waits beside it
    const redis = server.client();
    const before = await Promise.all(['fcall', 'llen', 'zcard'].map((c) => commandCalls(redis, c)));
    const { ack, jobs } = await q.engine.ackAndClaimStarted(topic, first.id, first, 1);
    const after = await Promise.all(['fcall', 'llen', 'zcard'].map((c) => commandCalls(redis, c)));
    assert.equal(ack, 'done');
    assert.equal(jobs.length, 1);
    assert.equal(place(jobs[0]!.id), place(first.id), "the next job of the acked job's partition");
    // one script call, whose own ZCARD of its running zset is the only count: no LLEN or ZCARD of the 12 partitions
    assert.deepEqual(
      after.map((n, i) => n - before[i]!),
      [1, 0, 1],
    );
  });

  it('on 12 partitions, where the acked job left its partition empty, the claim counts and takes a job elsewhere', async () => {
    const { q, topic, first, place } = await onTwelve(5, 6, 1); // one job in each of 6 partitions
    const { ack, jobs } = await q.engine.ackAndClaimStarted(topic, first.id, first, 1);
    assert.equal(ack, 'done');
    assert.equal(jobs.length, 1);
    assert.notEqual(place(jobs[0]!.id), place(first.id));
  });

  it('on 12 partitions at the concurrency, a stale ack frees no slot: nothing is claimed in its place', async () => {
    const { q, topic, first } = await onTwelve(1, 12, 2);
    const { ack, jobs } = await q.engine.ackAndClaimStarted(topic, first.id, { ...first, claim: 'not.its.claim' }, 1);
    assert.deepEqual([ack, jobs.length], ['stale', 0]);
    assert.equal((await q.get(topic, first.id))?.state, 'running', 'the attempt still runs, alone');
    assert.equal((await q.engine.claimStarted(topic, 1)).length, 0, 'at its concurrency');
  });
});
