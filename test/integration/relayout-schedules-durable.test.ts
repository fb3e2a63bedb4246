/**
 * A schedule's move while the partition count changes, with durability `replica`, against a real
 * primary with one replica (lib/engine/relayout-schedules.ts): no step of a move goes on before a
 * replica has the one before it, so a failover never leaves two live copies (a freeze lost) nor
 * none (an adopt lost after the drop). A replica cut off (SIGSTOP) stops a move after its freeze;
 * once it catches up, the next move finishes it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { occurrenceId } from '../../lib/core/schedule';
import { makeQueue, TestClock, uniqueTopic } from '../support/queue';
import { startPrimaryWithReplica, type PrimaryWithReplica } from '../support/redis';
import { partitionOf, scheduleKeys, moveSchedules, engineContext } from '../../lib/testing';

const BEFORE = 2;
const AFTER = 3;

describe('moving schedules with durability replica', () => {
  let pair: PrimaryWithReplica;
  let redis: Redis;

  before(async () => {
    pair = await startPrimaryWithReplica();
    redis = new Redis({ port: pair.primary.port, lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
  });

  after(async () => {
    redis.disconnect();
    await pair.stop();
  });

  it('a move waits for the replica at each step: cut off, it stops after the freeze, and the next move finishes it', async () => {
    const clock = new TestClock();
    const topic = uniqueTopic('relayout-durable');
    const topics = { [topic]: { ttr: 30 } };
    const config = { durability: 'replica', durabilityTimeout: 0.2, retention: 0 };
    const old = makeQueue(redis, topics, { clock, config: { ...config, partitions: BEFORE } });
    const changing = makeQueue(redis, topics, {
      clock,
      config: { ...config, partitions: AFTER, formerPartitions: BEFORE },
    });
    await old.putSchedule(topic, 'd', { every: 60 });
    const inFormer = () => redis.hexists(scheduleKeys(partitionOf(topic, 'd', BEFORE), topic, BEFORE).schedules, 'd');
    const inCurrent = () => redis.hexists(scheduleKeys(partitionOf(topic, 'd', AFTER), topic, AFTER).schedules, 'd');
    pair.pauseReplica();
    try {
      const cut = await moveSchedules(engineContext(changing.engine), 10);
      assert.deepEqual([cut.moved, cut.busy, cut.left], [0, 1, true], 'not confirmed: not moved now');
      assert.deepEqual(
        [await inFormer(), await inCurrent()],
        [1, 0],
        'frozen in the former partition, no copy made yet',
      );
    } finally {
      pair.resumeReplica();
    }
    const moved = await moveSchedules(engineContext(changing.engine), 10);
    assert.equal(moved.moved, 1);
    assert.deepEqual([await inFormer(), await inCurrent()], [0, 1]);
    clock.advance(60_000);
    for (let i = 0; i < 5 && (await changing.engine.sweep()).more; i++);
    const claimed = await changing.engine.claim(topic, 10);
    assert.deepEqual(
      claimed.map((j) => j.id),
      [occurrenceId('d', clock.now)],
      'its occurrence runs once',
    );
  });
});
