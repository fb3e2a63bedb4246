/**
 * A batch add's jobs without ids of their own are given ids that place each run of up to 100 of them (one addJobs
 * call's worth) in one partition, the runs taking the partitions in turn: a batch costs as many script calls on 12
 * partitions as on one. Jobs with the caller's ids are placed by those ids, as ever. Script calls counted by Redis
 * itself (INFO commandstats) on a redis-server of the test's own.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { makeQueue, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';

/** Script calls (FCALL) the redis-server answered so far. */
async function scriptCalls(redis: Redis): Promise<number> {
  return Number(/^cmdstat_fcall:calls=(\d+)/m.exec(await redis.info('commandstats'))?.[1] ?? 0);
}

const BODY = { orderId: 'order-1' };

describe('ids given to a batch add place its jobs together (real redis-server, 12 partitions)', () => {
  const server = useRedisServer();

  it('250 jobs without ids: 3 addJobs calls (100, 100, 50), each job found where it was written', async () => {
    const topic = uniqueTopic('ids');
    const q = makeQueue(server.client(), { [topic]: {} }, { config: { partitions: 12 } });
    await q.add({ topic, id: 'warm', delay: 60, body: BODY }); // the library loaded: its calls not counted
    const before = await scriptCalls(server.client());
    const { outcomes } = await q.addMany(Array.from({ length: 250 }, () => ({ topic, delay: 60, body: BODY })));
    const calls = (await scriptCalls(server.client())) - before;
    const ids = outcomes.map((o) => (o.status === 'created' ? o.job.id : assert.fail(`not created: ${o.status}`)));
    assert.equal(calls, 3, `addJobs calls for 250 jobs on 12 partitions: ${calls}`);
    assert.equal(new Set(ids).size, 250, 'every id is its own');
    for (const id of ids) assert.match(id, /^[A-Za-z0-9_-]{16}$/, 'a 16-character id, as any generated one');
    const places = ids.map((id) => q.engine.partitionOf(topic, id));
    assert.equal(new Set(places.slice(0, 100)).size, 1, 'the first 100 in one partition');
    assert.equal(new Set(places.slice(100, 200)).size, 1, 'the next 100 in one partition');
    assert.equal(new Set(places.slice(200)).size, 1, 'the last 50 in one partition');
    assert.equal(new Set(places).size, 3, 'three partitions in turn');
    for (const id of ids) assert.equal((await q.get(topic, id))?.state, 'delayed', `job ${id} is found by its id`);
  });

  it('successive batches take the partitions in turn: 12 batches of 100 put 100 jobs in each partition', async () => {
    const topic = uniqueTopic('turns');
    const q = makeQueue(server.client(), { [topic]: {} }, { config: { partitions: 12 } });
    const perPartition = new Array<number>(12).fill(0);
    for (let b = 0; b < 12; b++) {
      const { outcomes } = await q.addMany(Array.from({ length: 100 }, () => ({ topic, delay: 60, body: BODY })));
      for (const o of outcomes) {
        if (o.status !== 'created') assert.fail(`not created: ${o.status}`);
        perPartition[q.engine.partitionOf(topic, o.job.id)]! += 1;
      }
    }
    assert.deepEqual(perPartition, new Array(12).fill(100));
  });

  it("jobs with the caller's ids are placed by them; those without ids of the same batch together", async () => {
    const topic = uniqueTopic('mixed');
    const q = makeQueue(server.client(), { [topic]: {} }, { config: { partitions: 12 } });
    const given = Array.from({ length: 24 }, (_, i) => `order-${i}`);
    const inputs = [
      ...given.map((id) => ({ topic, id, delay: 60, body: BODY })),
      ...Array.from({ length: 24 }, () => ({ topic, delay: 60, body: BODY })),
    ];
    const { outcomes } = await q.addMany(inputs);
    const ids = outcomes.map((o) => (o.status === 'created' ? o.job.id : assert.fail(`not created: ${o.status}`)));
    assert.deepEqual(ids.slice(0, 24), given);
    assert.ok(
      new Set(given.map((id) => q.engine.partitionOf(topic, id))).size > 1,
      'the given ids spread by their hash',
    );
    assert.equal(new Set(ids.slice(24).map((id) => q.engine.partitionOf(topic, id))).size, 1, 'the others together');
    for (const id of ids) assert.equal((await q.get(topic, id))?.state, 'delayed', `job ${id} is found by its id`);
  });
});
