/**
 * The counts a claim reads before it claims on several partitions (ZCARD running, LLEN ready of
 * each, lib/engine/attempts.ts): one request per node, not one per partition, counted on the
 * client's own sockets (every write to Redis is a request); and the topic's maxRunning still caps
 * all partitions together, also when the node's request fails and the partitions are read alone.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Cluster, Redis } from 'ioredis';
import { makeQueue, TestClock, uniqueTopic } from '../support/queue';
import { moveSlot, slotOwner, useRedisCluster, useRedisServer } from '../support/redis';
import { slotOf, topicKeys } from '../../lib/testing';

const PARTITIONS = 12;
const ZCARD = '$5\r\nzcard\r\n'; // the command as ioredis writes it (a script's text says ZCARD in capitals)

/** Requests written to `nodes` while `fn` runs that carry a ZCARD, and the ZCARDs in them. */
async function probes(
  nodes: readonly Redis[],
  fn: () => Promise<unknown>,
): Promise<{ requests: number; zcards: number }> {
  const seen = { requests: 0, zcards: 0 };
  const restore = nodes.map((node) => {
    const stream = node.stream;
    const write = stream.write;
    stream.write = function (this: typeof stream, chunk: unknown, ...rest: unknown[]) {
      const n = String(chunk).split(ZCARD).length - 1;
      if (n > 0) {
        seen.requests++;
        seen.zcards += n;
      }
      return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
    } as typeof stream.write;
    return () => void (stream.write = write);
  });
  try {
    await fn();
  } finally {
    for (const undo of restore) undo();
  }
  return seen;
}

/** A queue on `redis` with `n` jobs of a new topic (concurrency 10) ready over PARTITIONS partitions. */
async function readyJobs(redis: Redis | Cluster, n: number) {
  const clock = new TestClock();
  const topic = uniqueTopic('probe');
  const q = makeQueue(redis, { [topic]: { concurrency: 10 } }, { clock, config: { partitions: PARTITIONS } });
  await q.addMany(Array.from({ length: n }, (_, i) => ({ topic, id: `j-${i}`, delay: 1 })));
  clock.advance(1000);
  for (let more = true; more;) more = (await q.engine.sweep()).more;
  const running = async () => {
    let sum = 0;
    for (let p = 0; p < PARTITIONS; p++) sum += await redis.zcard(topicKeys(p, topic, PARTITIONS).running);
    return sum;
  };
  return { q, topic, running };
}

/**
 * Claims of a topic with concurrency 10 over all partitions: 4, then the 6 left of the cap, then none; 3 more after 3
 * acks.
 */
async function capHolds(redis: Redis | Cluster): Promise<void> {
  const { q, topic, running } = await readyJobs(redis, 120);
  assert.equal((await q.engine.claim(topic, 4)).length, 4);
  const more = await q.engine.claim(topic, 100);
  assert.equal(more.length, 6, 'the cap leaves 6 of 10');
  assert.equal((await q.engine.claim(topic, 100)).length, 0, 'the cap is full');
  assert.equal(await running(), 10, 'running attempts over all partitions');
  for (const job of more.slice(0, 3)) assert.equal(await q.engine.ack(topic, job.id, job), 'done');
  assert.equal((await q.engine.claim(topic, 100)).length, 3, '3 acked: 3 more');
  assert.equal(await running(), 10);
}

describe('a claim over 12 partitions on a single node', () => {
  const server = useRedisServer();

  it("reads every partition's counts in one request", async () => {
    const { q, topic } = await readyJobs(server.client(), 60);
    const seen = await probes([server.client()], () => q.engine.claim(topic, 10));
    assert.deepEqual(seen, { requests: 1, zcards: PARTITIONS });
  });

  it('keeps maxRunning over all partitions together', async () => {
    await capHolds(server.client());
  });

  it('reads each partition alone when the one request fails, and keeps the cap', async () => {
    const client = server.client();
    const { q, topic, running } = await readyJobs(client, 120);
    assert.equal((await q.engine.claim(topic, 7)).length, 7);
    // the next pipeline (the claim's counts) is refused before it is sent
    const pipeline = client.pipeline.bind(client);
    client.pipeline = ((...args: Parameters<Redis['pipeline']>) => {
      client.pipeline = pipeline;
      const refused = pipeline(...args);
      refused.exec = () =>
        Promise.reject(new Error('All keys in the pipeline should belong to the same slots allocation group'));
      return refused;
    }) as Redis['pipeline'];
    const seen = await probes([client], async () =>
      assert.equal((await q.engine.claim(topic, 100)).length, 3, 'the cap leaves 3 of 10'),
    );
    assert.equal(client.pipeline, pipeline, 'the refused pipeline was made');
    assert.deepEqual(seen, { requests: PARTITIONS, zcards: PARTITIONS }, 'each partition read alone');
    assert.equal(await running(), 10);
  });
});

describe('a claim over 12 partitions on a 3-master Redis Cluster', () => {
  const cluster = useRedisCluster(3);

  it('reads the counts in one request per master', async () => {
    const client = cluster.client();
    const { q, topic } = await readyJobs(client, 60);
    await q.engine.claim(topic, 1); // every master's connection is up
    const seen = await probes(client.nodes('master'), () => q.engine.claim(topic, 10));
    assert.deepEqual(seen, { requests: 3, zcards: PARTITIONS });
  });

  it('keeps maxRunning over all partitions together', async () => {
    await capHolds(cluster.client());
  });

  it('keeps the cap when a partition moved to another master unknown to the client', async () => {
    const client = cluster.client();
    const { q, topic, running } = await readyJobs(client, 120);
    assert.equal((await q.engine.claim(topic, 7)).length, 7);
    const slot = slotOf(topicKeys(0, topic, PARTITIONS).ready);
    await moveSlot(cluster.cluster(), slot, ((await slotOwner(cluster.cluster(), slot)) + 1) % 3);
    assert.equal((await q.engine.claim(topic, 100)).length, 3, 'the cap leaves 3 of 10');
    assert.equal(await running(), 10);
    const seen = await probes(client.nodes('master'), () => q.engine.claim(topic, 100));
    assert.deepEqual(seen, { requests: 3, zcards: PARTITIONS }, 'one request per master again, the move learnt');
  });
});
