/**
 * Script calls on a Redis Cluster whose slots stay put are never refused: each goes to its keys'
 * node at once. ioredis groups an auto-pipeline by the node of a command's first argument, which
 * for FCALL is the function's name: calls of one function to several nodes in the same tick would
 * share a pipeline ioredis refuses whole, and the runner would send them again (lib/platform/redis.ts).
 * A batch add sends the calls to the partitions of one node in one pipeline (script-runner.ts, runByNode).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Cluster } from 'ioredis';
import { createRedis } from '../../lib/platform/redis';
import { makeQueue, uniqueTopic } from '../support/queue';
import { slotOwner, startRedisCluster, type RedisClusterProcess } from '../support/redis';
import { resentCalls, slotOf, topicKeys } from '../../lib/testing';

describe('script calls on a cluster', () => {
  let cluster: RedisClusterProcess;
  before(async () => {
    cluster = await startRedisCluster(3);
  });
  after(async () => {
    await cluster?.stop();
  });

  it('concurrent calls to partitions on every node each go to their node, none refused and sent again', async () => {
    const client = createRedis({ url: cluster.nodes[0]!.url, cluster: true });
    try {
      const topic = uniqueTopic('cluster-calls');
      const q = makeQueue(client, { [topic]: { concurrency: 1000 } }, { config: { partitions: 12 } });
      const nodes = new Set(
        await Promise.all(
          Array.from({ length: 12 }, (_, p) => slotOwner(cluster, slotOf(topicKeys(p, topic, 12).jobs))),
        ),
      );
      assert.equal(nodes.size, 3, 'the partitions are on every node');
      const ids = Array.from({ length: 240 }, (_, i) => `j${i}`);
      await q.addMany(ids.map((id) => ({ topic, id, delay: 0, body: id })));
      for (let r = await q.engine.sweep(); r.more; r = await q.engine.sweep());
      const was = resentCalls(client);
      // claims, starts and acks of all partitions at once, as many workers of one process send them
      const claimed = (await Promise.all(Array.from({ length: 24 }, () => q.engine.claim(topic, 10)))).flat();
      assert.equal(claimed.length, 240);
      const live = await Promise.all(claimed.map((job) => q.engine.start(topic, [job])));
      assert.ok(live.every(([ok]) => ok));
      assert.deepEqual(
        new Set(await Promise.all(claimed.map((job) => q.engine.ack(topic, job.id, job)))),
        new Set(['done']),
      );
      assert.equal(resentCalls(client) - was, 0, 'no call refused unrun and sent again');
    } finally {
      client.disconnect();
    }
  });

  it('a batch add over 12 partitions on 3 nodes sends one request to each node', async () => {
    const client = createRedis({ url: cluster.nodes[0]!.url, cluster: true }) as Cluster;
    try {
      const topic = uniqueTopic('cluster-batch');
      const q = makeQueue(client, { [topic]: { concurrency: 1000 } }, { config: { partitions: 12 } });
      await q.add({ topic, id: 'warm', delay: 60, body: 'warm' }); // connected, the library loaded
      let pipelines = 0;
      const pipeline = client.pipeline.bind(client);
      client.pipeline = (...args: Parameters<Cluster['pipeline']>) => {
        pipelines += 1;
        return pipeline(...args);
      };
      const ids = Array.from({ length: 240 }, (_, i) => `b${i}`);
      const { outcomes } = await q.addMany(ids.map((id) => ({ topic, id, delay: 60, body: id })));
      assert.deepEqual(new Set(outcomes.map((o) => o.status)), new Set(['created']));
      assert.equal(pipelines, 3, "the 12 partitions' calls went in one pipeline to each of the 3 nodes");
      assert.equal((await q.engine.get(topic, 'b239'))?.id, 'b239');
    } finally {
      client.disconnect();
    }
  });
});
