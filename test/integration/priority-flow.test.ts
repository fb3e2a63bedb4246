/**
 * Priorities on a flow topic (lua/claimFlow-6.lua, includes/flow.lua: a key's prioritized ready ids
 * in <jobs>#lanep:<key> beside its lane) against a real redis-server with a fixed clock: within one
 * key a higher priority first, first come first within one, the unprioritized between those above
 * and below 0; across keys the claims still go round the keys; retries, given-back claims and a
 * hold-back at a paused topic's start keep a job's priority; a key's view counts its prioritized ids.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TopicInput } from '../../lib/core/queue-config';
import { makeQueue, TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';

const W = { name: 'producer', scope: 'write', topics: null } as const;

describe('priorities on a flow topic', () => {
  const redis = useRedisServer();

  function setup(flow: TopicInput['flow'] = {}) {
    const topic = uniqueTopic('prio-flow');
    const clock = new TestClock();
    const q = makeQueue(
      redis.client(),
      { [topic]: { maxAttempts: 3, ttr: 60, backoff: '10s', concurrency: 1000, flow } },
      { clock, config: { retention: 60 } },
    );
    return { topic, clock, q };
  }

  /** Adds jobs `[id, key, priority]` in this order, due now, and sweeps them to ready. */
  async function addReady(q: ReturnType<typeof makeQueue>, topic: string, jobs: [string, string, number][]) {
    for (const [id, key, priority] of jobs) {
      await q.add({ topic, id, key, delay: 0, ...(priority ? { priority } : {}) }, W);
    }
    for (let more = true; more;) more = (await q.engine.sweep()).more;
  }

  /** Claims `n` at a time until none is left: the ids in claim order. */
  async function drain(q: ReturnType<typeof makeQueue>, topic: string, n: number): Promise<string[]> {
    const order: string[] = [];
    for (let c = await q.engine.claim(topic, n); c.length > 0; c = await q.engine.claim(topic, n)) {
      order.push(...c.map((j) => j.id));
    }
    return order;
  }

  const ONE_KEY: [string, string, number][] = [
    ['a', 'k', 0],
    ['n1', 'k', -1],
    ['p5', 'k', 5],
    ['b', 'k', 0],
    ['p9', 'k', 9],
    ['n2', 'k', -3],
    ['p5b', 'k', 5],
    ['c', 'k', 0],
    ['n3', 'k', -1],
  ];
  const ONE_KEY_ORDER = ['p9', 'p5', 'p5b', 'a', 'b', 'c', 'n1', 'n3', 'n2'];

  for (const n of [1, 3, 100]) {
    it(`within one key: highest first, first come first within one (claims of ${n})`, async () => {
      const { topic, q } = setup();
      await addReady(q, topic, ONE_KEY);
      assert.equal((await q.engine.flowKey(topic, 'k')).ready, 9, "the key's view counts them all");
      assert.equal((await q.engine.counts(topic)).ready, 9);
      assert.deepEqual(await drain(q, topic, n), ONE_KEY_ORDER);
      assert.equal((await q.engine.flowKey(topic, 'k')).ready, 0);
      assert.equal((await q.engine.counts(topic)).ready, 0);
    });
  }

  it('a key with only prioritized jobs enters the ring; its view shows the first in claim order', async () => {
    const { topic, q } = setup();
    await addReady(q, topic, [
      ['x1', 'k', 2],
      ['x2', 'k', 7],
    ]);
    const view = await q.engine.flowKey(topic, 'k');
    assert.equal(view.ready, 2);
    assert.deepEqual(await drain(q, topic, 1), ['x2', 'x1']);
  });

  it('across keys the claims still go round the keys: high priorities do not starve another key', async () => {
    const { topic, q } = setup();
    const jobs: [string, string, number][] = [];
    for (let i = 0; i < 6; i++) jobs.push([`hi${i}`, 'hot', 100 - i]);
    for (let i = 0; i < 3; i++) jobs.push([`lo${i}`, 'cold', 0]);
    await addReady(q, topic, jobs);
    const order = await drain(q, topic, 1);
    assert.deepEqual(order, ['hi0', 'lo0', 'hi1', 'lo1', 'hi2', 'lo2', 'hi3', 'hi4', 'hi5']);
  });

  it('a new higher priority jumps ahead within its key, the round of keys unchanged', async () => {
    const { topic, q } = setup({ concurrency: 1 });
    await addReady(q, topic, [
      ['a1', 'a', 0],
      ['a2', 'a', 0],
      ['b1', 'b', 0],
    ]);
    const [first] = await q.engine.claim(topic, 1);
    assert.equal(first!.id, 'a1');
    await addReady(q, topic, [['a-urgent', 'a', 50]]);
    assert.equal(await q.engine.ack(topic, first!.id, first!), 'done');
    assert.deepEqual(await drain(q, topic, 1), ['b1', 'a-urgent']);
    // a2 waits for a-urgent's slot (concurrency 1)
    const running = await q.engine.claim(topic, 1);
    assert.deepEqual(running, []);
  });

  it('a retry and a given-back claim keep their priority', async () => {
    const { topic, clock, q } = setup();
    await addReady(q, topic, [
      ['low', 'k', 0],
      ['high', 'k', 5],
      ['mid', 'k', 2],
    ]);
    const [first] = await q.engine.claim(topic, 1);
    assert.equal(first!.id, 'high');
    assert.equal(await q.engine.release([{ ...first!, topic }]), 1, 'given back');
    const [again] = await q.engine.claim(topic, 1);
    assert.equal(again!.id, 'high', 'given back: first again, before mid');
    assert.equal((await q.engine.fail(topic, again!.id, again!, 'boom', 10_000)).outcome, 'retry');
    await addReady(q, topic, [['low2', 'k', 0]]);
    clock.advance(11_000);
    for (let more = true; more;) more = (await q.engine.sweep()).more;
    assert.deepEqual(await drain(q, topic, 10), ['high', 'mid', 'low', 'low2'], 'the retry keeps priority 5');
  });

  it('a paused topic claims none; claims held back at the start keep their priority', async () => {
    const { topic, q } = setup();
    await addReady(q, topic, [
      ['low', 'k', 0],
      ['high', 'k', 5],
      ['neg', 'k', -2],
      ['mid', 'k', 2],
    ]);
    const claimed = await q.engine.claim(topic, 2);
    assert.deepEqual(
      claimed.map((j) => j.id),
      ['high', 'mid'],
    );
    await q.engine.pauseTopic(topic, 'op');
    assert.deepEqual(await q.engine.start(topic, claimed), [false, false], 'held back at the start');
    assert.deepEqual(await q.engine.claim(topic, 10), []);
    await q.add({ topic, id: 'top', key: 'k', delay: 0, priority: 9 }, W);
    await q.engine.resumeTopic(topic, 'op');
    for (let more = true; more;) more = (await q.engine.sweep()).more;
    const after = await q.engine.claimStarted(topic, 10);
    assert.deepEqual(
      after.map((j) => j.id),
      ['top', 'high', 'mid', 'low', 'neg'],
    );
  });

  it('a paused key keeps its prioritized jobs until it is resumed', async () => {
    const { topic, q } = setup();
    await addReady(q, topic, [
      ['a', 'k', 0],
      ['b', 'k', 3],
    ]);
    await q.engine.setFlowKey(topic, 'k', { paused: true });
    assert.deepEqual(await q.engine.claim(topic, 10), []);
    await q.engine.setFlowKey(topic, 'k', { paused: false });
    assert.deepEqual(await drain(q, topic, 10), ['b', 'a']);
  });
});
