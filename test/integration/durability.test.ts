/**
 * Durability `replica` (lib/engine/durable.ts) against real redis-servers: a primary with one
 * replica, and a cluster of three primaries with one replica each. A replica is "cut off" by
 * freezing its process (SIGSTOP): it stays connected and acknowledges nothing, as a replica does
 * whose link lags or hangs. Every change the queue acknowledges must then be refused with 503
 * NOT_REPLICATED, and acknowledged again once the replica catches up.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { Redis, type Cluster } from 'ioredis';
import { addJob } from '../../lib/api/routes';
import { httpRoute } from '../../lib/api/http';
import { createRuntime } from '../../lib/platform/runtime';
import type { Queue } from '../support/queue';
import { postJob } from '../support/failover';
import { makeQueue, uniqueTopic } from '../support/queue';
import {
  startPrimaryWithReplica,
  startRedisCluster,
  type PrimaryWithReplica,
  type RedisClusterProcess,
} from '../support/redis';
import { HttpError, partitionOf, slotOf, syncKey } from '../../lib/testing';

/** The replica wait of the queues that must refuse: a paused replica never answers, so 200 ms is enough to see it. */
const TIMEOUT_S = 0.2;
/** The replica wait of the queues whose changes must be acknowledged: the longest allowed, for a busy machine. */
const PATIENT_S = 1.5;

async function refusedNotReplicated(promise: Promise<unknown>): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof HttpError, String(error));
    assert.equal(error.status, 503);
    assert.equal(error.code, 'NOT_REPLICATED');
    assert.equal(error.retryAfterSeconds, 1);
    return true;
  });
}

describe('durability replica on a primary with one replica', () => {
  let pair: PrimaryWithReplica;
  let redis: Redis;
  let replicaClient: Redis;
  const topic = uniqueTopic('dur');
  /** Refuses fast while the replica is paused. */
  let durable: Queue;
  /** The same durability, for the changes that must be acknowledged (PATIENT_S). */
  let patient: Queue;
  let fast: Queue;

  before(async () => {
    pair = await startPrimaryWithReplica();
    redis = new Redis(pair.primary.url);
    replicaClient = new Redis(pair.replica.url);
    durable = makeQueue(redis, { [topic]: {} }, { config: { durability: 'replica', durabilityTimeout: TIMEOUT_S } });
    patient = makeQueue(redis, { [topic]: {} }, { config: { durability: 'replica', durabilityTimeout: PATIENT_S } });
    fast = makeQueue(redis, { [topic]: {} }, { config: { durability: 'none' } });
  });
  after(async () => {
    pair.resumeReplica();
    redis.disconnect();
    replicaClient.disconnect();
    await pair.stop();
  });

  const onReplica = async (id: string) => replicaClient.hexists(`dq:{p0}:jobs:${topic}`, id);

  it('an acknowledged add, put, cancel and redrive are on the replica when the call returns', async () => {
    const added = await patient.add({ topic, id: 'a1', delay: 60, body: { n: 1 } });
    assert.equal(added.status, 'created');
    assert.equal(await onReplica('a1'), 1, 'the replica has the job the moment the add is acknowledged');
    const batch = await patient.addMany([
      { topic, id: 'a2', delay: 60 },
      { topic, id: 'a3', delay: 60 },
    ]);
    assert.deepEqual(
      batch.outcomes.map((o) => o.status),
      ['created', 'created'],
    );
    assert.deepEqual([await onReplica('a2'), await onReplica('a3')], [1, 1]);
    await patient.put(topic, 'a4', { delay: 60 });
    assert.equal(await onReplica('a4'), 1);
    const cancelled = await patient.cancel(topic, 'a1');
    assert.equal(cancelled.state, 'cancelled');
  });

  it('answers 503 NOT_REPLICATED, never success, to every change while the replica acknowledges nothing', async () => {
    pair.pauseReplica();
    try {
      await refusedNotReplicated(durable.add({ topic, id: 'b1', delay: 60 }));
      await refusedNotReplicated(durable.addMany([{ topic, id: 'b2', delay: 60 }]));
      await refusedNotReplicated(durable.put(topic, 'b3', { delay: 60 }));
      await refusedNotReplicated(durable.cancel(topic, 'a2'));
      await refusedNotReplicated(durable.reschedule(topic, 'a3', { delay: 120 }));
      // the same calls with durability none are acknowledged at once: the primary has them
      assert.equal((await fast.add({ topic, id: 'b4', delay: 60 })).status, 'created');
    } finally {
      pair.resumeReplica();
    }
  });

  it('a retry after the replica caught up is acknowledged, and there is exactly one job', async () => {
    const retried = await patient.add({ topic, id: 'b1', delay: 60 });
    assert.equal(retried.status, 'exists', 'the 503 changed the primary; the retry finds the job');
    assert.equal(await onReplica('b1'), 1);
    assert.equal((await patient.cancel(topic, 'a2')).state, 'cancelled', 'cancelling again is acknowledged');
    assert.equal(await redis.hlen(`dq:{p0}:jobs:${topic}`), await replicaClient.hlen(`dq:{p0}:jobs:${topic}`));
  });

  it('an answer that wrote nothing is covered too: "exists" for a job another connection added while the replica was cut off is refused', async () => {
    pair.pauseReplica();
    try {
      // another writer without durability: the primary has c1, the frozen replica does not
      assert.equal((await fast.add({ topic, id: 'c1', delay: 60 })).status, 'created');
      // this connection wrote nothing for c1: WAIT alone would return at once and acknowledge it
      await refusedNotReplicated(durable.add({ topic, id: 'c1', delay: 60 }));
    } finally {
      pair.resumeReplica();
    }
    assert.equal((await patient.add({ topic, id: 'c1', delay: 60 })).status, 'exists');
    assert.equal(await onReplica('c1'), 1);
  });

  it('answers that wrote nothing in many partitions cost one sync bump per primary, not one per partition', async () => {
    const wide = uniqueTopic('dur-wide');
    const partitions = 8;
    const q = makeQueue(
      redis,
      { [wide]: {} },
      { config: { partitions, durability: 'replica', durabilityTimeout: PATIENT_S } },
    );
    const bumps = async () => {
      const values = await Promise.all(Array.from({ length: partitions }, (_, p) => redis.get(syncKey(p, partitions))));
      return values.reduce((sum, v) => sum + Number(v ?? 0), 0);
    };
    const before = await bumps();
    assert.deepEqual(
      await q.redrive(wide, { count: 10 }),
      { redriven: 0, wake: false },
      'looked in all 8 partitions, redrove nothing',
    );
    assert.equal((await bumps()) - before, 1, 'one bump covers every partition of the one primary');
    assert.deepEqual(await q.cancelGroup(wide, 'g'), { cancelled: 0, running: 0 });
    assert.equal((await bumps()) - before, 2, 'a group cancel over 8 partitions: one more');
  });

  it('redrive is acknowledged only once replicated', async () => {
    const dead = uniqueTopic('dur-dead');
    const q = makeQueue(
      redis,
      { [dead]: { maxAttempts: 1 } },
      { config: { durability: 'replica', durabilityTimeout: TIMEOUT_S } },
    );
    const setup = makeQueue(
      redis,
      { [dead]: { maxAttempts: 1 } },
      { config: { durability: 'replica', durabilityTimeout: PATIENT_S } },
    );
    await setup.add({ topic: dead, id: 'd1', delay: 0 });
    await setup.engine.sweep();
    const [claimed] = await setup.engine.claim(dead, 1);
    assert.ok(claimed);
    await setup.engine.fail(dead, 'd1', claimed, 'boom');
    pair.pauseReplica();
    try {
      await refusedNotReplicated(q.redrive(dead, { ids: ['d1'] }));
    } finally {
      pair.resumeReplica();
    }
    assert.equal((await q.get(dead, 'd1'))?.state, 'delayed');
  });

  it('the HTTP API answers 503 with code NOT_REPLICATED and Retry-After, then 201 once replicated', async () => {
    const rt = createRuntime({
      DQ_CONFIG: JSON.stringify({ topics: { [topic]: {} } }),
      REDIS_URL: pair.primary.url,
      API_TOKEN: 't',
      DQ_FUNCTION_PREFIX: 'x-',
      DQ_WAKE_INVOKES: 'false',
      LOG_LEVEL: 'error',
      DQ_DURABILITY: 'replica',
      // the 503 waits it out; the 409 and 201 after it need it on a busy machine
      DQ_DURABILITY_TIMEOUT_MS: String(PATIENT_S * 1000),
    });
    const route = httpRoute(addJob, () => rt);
    const post = (id: string) => postJob(route, { topic, id, delay: 60 });
    try {
      pair.pauseReplica();
      let res: APIGatewayProxyStructuredResultV2;
      try {
        res = await post('h1');
      } finally {
        pair.resumeReplica();
      }
      assert.equal(res.statusCode, 503);
      assert.equal(res.headers?.['retry-after'], '1');
      assert.equal((JSON.parse(String(res.body)) as { error: { code: string } }).error.code, 'NOT_REPLICATED');
      const again = await post('h1');
      assert.equal(
        again.statusCode,
        409,
        'the retry meets the job the 503 left on the primary (lib/client.ts takes that as added)',
      );
      assert.equal((await post('h2')).statusCode, 201);
    } finally {
      rt.redis.disconnect();
    }
  });
});

describe('durability replica on a cluster: the wait reaches the shard that owns the partition', () => {
  let cluster: RedisClusterProcess;
  let client: Cluster;
  const topic = uniqueTopic('dur-c');
  const partitions = 12;
  /** Refuses fast: a frozen replica never answers. */
  let q: Queue;
  /** For the changes that must be acknowledged: the longest wait allowed (1.5 s), for a busy machine. */
  let patient: Queue;

  before(async () => {
    cluster = await startRedisCluster(3, 1);
    client = cluster.client();
    if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
    q = makeQueue(
      client,
      { [topic]: {} },
      { config: { partitions, durability: 'replica', durabilityTimeout: TIMEOUT_S } },
    );
    patient = makeQueue(
      client,
      { [topic]: {} },
      { config: { partitions, durability: 'replica', durabilityTimeout: PATIENT_S } },
    );
  });
  after(async () => {
    for (const node of cluster.nodes) {
      try {
        process.kill(node.pid, 'SIGCONT');
      } catch {
        // already stopped
      }
    }
    client.disconnect();
    await cluster.stop();
  });

  /** Ids of `topic` whose partition lives on each primary, by the primary's port. */
  async function idsByPrimary(): Promise<Map<number, string[]>> {
    const slots = (await client.cluster('SLOTS')) as unknown as [number, number, [string, number]][];
    const portOf = (slot: number) => slots.find(([from, to]) => slot >= from && slot <= to)![2][1];
    const byPort = new Map<number, string[]>();
    for (let i = 0; i < 200; i++) {
      const id = `j${i}`;
      const port = portOf(slotOf(syncKey(partitionOf(topic, id, partitions), partitions)));
      byPort.set(port, [...(byPort.get(port) ?? []), id]);
    }
    return byPort;
  }

  it("with one shard's replica frozen, only that shard's changes are refused", async () => {
    const byPort = await idsByPrimary();
    assert.equal(byPort.size, 3, 'the partitions spread over all three primaries');
    const [frozenPrimary, ...others] = [...byPort.keys()];
    // the replica of frozenPrimary: the node whose INFO says it replicates that port
    const replicaOf = new Map<number, number>();
    for (const node of cluster.nodes) {
      const r = new Redis(node.port);
      const info = await r.info('replication');
      r.disconnect();
      const master = /master_port:(\d+)/.exec(info)?.[1];
      if (master) replicaOf.set(Number(master), node.pid);
    }
    const frozenPid = replicaOf.get(frozenPrimary!);
    assert.ok(frozenPid, 'each primary has a replica');

    // everything is acknowledged while all replicas answer
    const all = [...byPort.values()].map((ids) => ids[0]!);
    for (const id of all) assert.equal((await patient.add({ topic, id, delay: 60 })).status, 'created');

    process.kill(frozenPid, 'SIGSTOP');
    try {
      await refusedNotReplicated(q.add({ topic, id: byPort.get(frozenPrimary!)![1]!, delay: 60 }));
      for (const port of others)
        assert.equal(
          (await patient.add({ topic, id: byPort.get(port)![1]!, delay: 60 })).status,
          'created',
          `primary ${port}'s replica answers`,
        );
      // a batch touching every shard is refused as a whole: one of its shards did not confirm
      await refusedNotReplicated(q.addMany([...byPort.values()].map((ids) => ({ topic, id: ids[2]!, delay: 60 }))));
    } finally {
      process.kill(frozenPid, 'SIGCONT');
    }
    assert.equal(
      (await patient.add({ topic, id: byPort.get(frozenPrimary!)![1]!, delay: 60 })).status,
      'exists',
      'the retry is acknowledged once the replica answers',
    );
  });
});
