/**
 * Job priorities (an add's `priority`, includes/priority.lua) against a real redis-server with a
 * fixed clock: among a topic's ready jobs a higher priority is claimed first, first come first
 * within one priority; retries, give-backs and timeouts keep a job's priority; the listing and the
 * counts show prioritized ready jobs; several partitions; a flow topic.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TopicInput } from '../../lib/core/queue-config';
import { makeQueue, TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';

describe('priorities', () => {
  const redis = useRedisServer();

  function setup(extra: TopicInput = {}, partitions = 1) {
    const topic = uniqueTopic('prio');
    const clock = new TestClock();
    const q = makeQueue(
      redis.client(),
      { [topic]: { maxAttempts: 3, ttr: 60, backoff: '10s', concurrency: 1000, ...extra } },
      { clock, config: { retention: 60, partitions } },
    );
    return { topic, clock, q };
  }

  /** Adds jobs `[id, priority]` in this order, due now, and sweeps them to ready. */
  async function addReady(q: ReturnType<typeof makeQueue>, topic: string, jobs: [string, number][]) {
    for (const [id, priority] of jobs) await q.add({ topic, id, delay: 0, ...(priority ? { priority } : {}) });
    for (let more = true; more;) more = (await q.engine.sweep()).more;
  }

  it('claims the highest priority first, first come first within one, the unprioritized between', async () => {
    const { topic, q } = setup();
    await addReady(q, topic, [
      ['a', 0],
      ['b', -5],
      ['c', 10],
      ['d', 0],
      ['e', 10],
      ['f', 1000],
      ['g', -1000],
      ['h', 3],
    ]);
    const order: string[] = [];
    for (let c = await q.engine.claim(topic, 3); c.length > 0; c = await q.engine.claim(topic, 3)) {
      order.push(...c.map((j) => j.id));
    }
    assert.deepEqual(order, ['f', 'c', 'e', 'h', 'a', 'd', 'b', 'g']);
  });

  it("a priority below 0 waits for the whole ready list, its mark taking a place in the claim's read", async () => {
    const { topic, q } = setup();
    await addReady(q, topic, [
      ['neg', -1],
      ['a', 0],
      ['b', 0],
      ['c', 0],
    ]);
    assert.deepEqual(
      (await q.engine.claim(topic, 3)).map((j) => j.id),
      ['a', 'b'],
    );
    assert.deepEqual(
      (await q.engine.claim(topic, 3)).map((j) => j.id),
      ['c', 'neg'],
    );
  });

  it('a retry, a claim given back and a never-started claim keep their priority', async () => {
    const { topic, clock, q } = setup();
    await addReady(q, topic, [
      ['low', 0],
      ['high', 5],
    ]);
    const [first] = await q.engine.claim(topic, 1);
    assert.equal(first!.id, 'high');
    assert.equal(await q.engine.release([{ ...first!, topic }]), 1, 'given back');
    await q.add({ topic, id: 'later', delay: 0, priority: 5 });
    for (let more = true; more;) more = (await q.engine.sweep()).more;
    const [again] = await q.engine.claimStarted(topic, 1);
    assert.equal(again!.id, 'high', 'given back: first of its priority, before the later one');
    assert.equal((await q.engine.fail(topic, 'high', again!, 'boom')).outcome, 'retry');
    clock.advance(10_000);
    for (let more = true; more;) more = (await q.engine.sweep()).more;
    const order = (await q.engine.claim(topic, 10)).map((j) => j.id);
    assert.deepEqual(order, ['later', 'high', 'low'], 'the retry keeps priority 5, after the one ready before it');
  });

  it('a cancelled or rescheduled prioritized ready job is not claimed; counts and the job view see prioritized jobs', async () => {
    const { topic, clock, q } = setup();
    await addReady(q, topic, [
      ['p1', 7],
      ['p2', 7],
      ['p3', -2],
      ['plain', 0],
    ]);
    assert.equal((await q.get(topic, 'p1'))!.state, 'ready');
    assert.equal((await q.get(topic, 'p1'))!.priority, 7);
    assert.equal((await q.stats(topic)).ready, 4);
    await q.cancel(topic, 'p1');
    await q.reschedule(topic, 'p2', { delay: 60 });
    assert.equal((await q.get(topic, 'p2'))!.state, 'delayed');
    const claimed = await q.engine.claimStarted(topic, 10);
    assert.deepEqual(
      claimed.map((j) => j.id),
      ['plain', 'p3'],
    );
    for (const c of claimed) assert.equal(await q.engine.ack(topic, c.id, c), 'done');
    assert.equal((await q.stats(topic)).ready, 0);
    clock.advance(60_000);
    for (let more = true; more;) more = (await q.engine.sweep()).more;
    assert.equal((await q.stats(topic)).ready, 1);
    assert.deepEqual(
      (await q.engine.claim(topic, 10)).map((j) => j.id),
      ['p2'],
    );
  });

  it('a ttr expiry of a claim never started gives it back within its priority', async () => {
    const { topic, clock, q } = setup({ ttr: 5 });
    await addReady(q, topic, [
      ['a', 0],
      ['b', 2],
    ]);
    assert.deepEqual(
      (await q.engine.claim(topic, 1)).map((j) => j.id),
      ['b'],
    );
    clock.advance(6_000);
    for (let more = true; more;) more = (await q.engine.sweep()).more;
    assert.deepEqual(
      (await q.engine.claim(topic, 10)).map((j) => j.id),
      ['b', 'a'],
    );
  });

  it('several partitions: a partition holding only prioritized jobs is claimed from, highest first in each', async () => {
    const { topic, q } = setup({}, 4);
    const jobs: [string, number][] = Array.from({ length: 40 }, (_, i) => [`j${i}`, (i % 4) * 10]);
    await addReady(q, topic, jobs);
    assert.equal((await q.stats(topic)).ready, 40);
    const claimed = await q.engine.claim(topic, 40);
    assert.equal(claimed.length, 40);
    const byPartition = new Map<number, number[]>();
    for (const c of claimed) {
      const p = q.engine.partitionOf(topic, c.id);
      byPartition.set(p, [...(byPartition.get(p) ?? []), Number(c.id.slice(1)) % 4]);
    }
    for (const [, prios] of byPartition) {
      assert.deepEqual(
        prios,
        [...prios].sort((x, y) => y - x),
        'each partition: highest priority first',
      );
    }
    assert.equal((await q.stats(topic)).ready, 0);
  });

  it('a paused topic claims no prioritized job', async () => {
    const { topic, q } = setup();
    await addReady(q, topic, [['a', 3]]);
    await q.pauseTopic(topic);
    assert.deepEqual(await q.engine.claim(topic, 10), []);
    await q.resumeTopic(topic);
    assert.deepEqual(
      (await q.engine.claim(topic, 10)).map((j) => j.id),
      ['a'],
    );
  });
});
