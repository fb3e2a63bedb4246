/**
 * Who did what: every change made through the API records the name of the key that made it
 * (`updatedBy`) on the job or schedule, against a real redis-server. Attempts (claim, ack, fail,
 * a ttr expiry) keep it; a schedule's occurrence, which the queue makes, has none.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Caller } from '../../lib/engine';
import { topicKeys } from '../../lib/testing';
import { makeQueue, TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';

const key = (name: string): Caller => ({ name, scope: 'write', topics: null });

describe('updatedBy: the key behind each change', () => {
  const redis = useRedisServer();

  it('add, put, cancel, redrive and a group cancel each record their key; attempts keep it', async () => {
    const topic = uniqueTopic('by');
    const clock = new TestClock();
    const q = makeQueue(redis.client(), { [topic]: { maxAttempts: 1, concurrency: 100 } }, { clock });

    const added = await q.add({ topic, id: 'a', delay: 60 }, key('producer'));
    assert.ok(added.status === 'created');
    assert.equal(added.job.updatedBy, 'producer');
    assert.equal((await q.get(topic, 'a'))?.updatedBy, 'producer');
    const [batch] = (await q.addMany([{ topic, id: 'b', delay: 60, group: 'g' }], key('importer'))).outcomes;
    assert.ok(batch?.status === 'created' && batch.job.updatedBy === 'importer');

    const replaced = await q.put(topic, 'a', { delay: 0 }, { by: 'editor' });
    assert.ok(replaced.status === 'replaced');
    assert.equal(replaced.job.updatedBy, 'editor');
    assert.equal((await q.get(topic, 'a'))?.updatedBy, 'editor');

    // an attempt that fails for good keeps the key of the last change; a redrive records its own
    await q.engine.sweep(100);
    const [claimed] = await q.engine.claim(topic, 1);
    assert.equal(claimed?.id, 'a');
    assert.equal((await q.engine.fail(topic, 'a', claimed!, 'boom')).outcome, 'dead');
    assert.equal((await q.get(topic, 'a'))?.updatedBy, 'editor');
    assert.equal((await q.redrive(topic, { ids: ['a'] }, 'operator')).redriven, 1);
    assert.deepEqual([(await q.get(topic, 'a'))?.state, (await q.get(topic, 'a'))?.updatedBy], ['delayed', 'operator']);

    assert.equal((await q.cancel(topic, 'a', { by: 'support' })).updatedBy, 'support');
    assert.deepEqual(await q.cancelGroup(topic, 'g', 'cleanup'), { cancelled: 1, running: 0 });
    assert.deepEqual(
      [(await q.get(topic, 'b'))?.state, (await q.get(topic, 'b'))?.updatedBy],
      ['cancelled', 'cleanup'],
    );
  });

  it("a record holds its key's number, not its name: a long name costs a job no byte", async () => {
    const topic = uniqueTopic('by-number');
    const q = makeQueue(redis.client(), { [topic]: {} }, { config: { partitions: 1 } });
    const long = 'k'.repeat(64);
    for (const [id, name] of [
      ['short', 'a'],
      ['long', long],
      ['again', 'a'],
      ['long2', long],
    ] as const)
      assert.equal((await q.add({ topic, id, delay: 60, body: { n: 1 } }, key(name))).status, 'created');
    const jobs = topicKeys(0, topic, 1).jobs;
    const lengths = await Promise.all(
      ['short', 'long', 'again', 'long2'].map((id) => redis.client().hstrlen(jobs, id)),
    );
    assert.ok(lengths[0]! > 0);
    assert.deepEqual(
      lengths.slice(1),
      [lengths[0], lengths[0], lengths[0]],
      'a record is as long whatever its key name',
    );
    // each name is stored once, in the jobs hash, beside the numbers that stand for it
    assert.deepEqual(await redis.client().hmget(jobs, '#by:a', `#by:${long}`, '#by=1', '#by=2', '#bys'), [
      '1',
      '2',
      'a',
      long,
      '2',
    ]);
    const read = await Promise.all(['short', 'long', 'again', 'long2'].map((id) => q.get(topic, id)));
    assert.deepEqual(
      read.map((j) => j?.updatedBy),
      ['a', long, 'a', long],
    );
    // a job just added was last changed when it was created
    assert.ok(read.every((j) => j?.updatedAt === j?.createdAt));
  });

  it('a schedule records the key that put it; its occurrence, made by the queue, has none', async () => {
    const topic = uniqueTopic('by-schedule');
    const clock = new TestClock();
    const q = makeQueue(redis.client(), { [topic]: {} }, { clock });
    const { schedule } = await q.putSchedule(topic, 'tick', { every: 60 }, 'scheduler');
    assert.equal(schedule.updatedBy, 'scheduler');
    assert.equal((await q.getSchedule(topic, 'tick'))?.updatedBy, 'scheduler');
    const occurrence = await q.get(topic, schedule.pending!.id);
    assert.equal(occurrence?.updatedBy, null);
    const { schedule: again } = await q.putSchedule(topic, 'tick', { every: 120 }, 'other');
    assert.equal(again.updatedBy, 'other');
  });
});
