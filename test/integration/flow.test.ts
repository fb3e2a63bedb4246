/**
 * Flow control per key (lib/engine/flow.ts, lua/includes/flow.lua) against a real redis-server:
 * per-key concurrency and the combined cap, claims round the keys, per-key pace, slots that come
 * back however an attempt ends, pinned limits, and pause and resume of a topic and of a key with
 * their cut-off (no start after the pause answered).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import type { ClaimedJob } from '../../lib/engine';
import type { TopicInput } from '../../lib/core/queue-config';
import { makeQueue, rejects, TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';
import { rateKey, slotOf, topicKeys, topicRateKey, engineContext } from '../../lib/testing';

const W = { name: 'producer', scope: 'write', topics: null } as const;

/** Sums each key's running count from its state hash against the running zset's jobs by key: they must agree. */
async function checkSlots(redis: Redis, q: ReturnType<typeof makeQueue>, topic: string): Promise<Map<string, number>> {
  const jobs = `dq:{f:${topic}}:jobs:${topic}`;
  const running = await redis.zrange(`dq:{f:${topic}}:running:${topic}`, 0, -1);
  const byKey = new Map<string, number>();
  for (const id of running) {
    const job = await q.get(topic, id);
    byKey.set(job!.key!, (byKey.get(job!.key!) ?? 0) + 1);
  }
  const fields = await redis.hkeys(`${jobs}#flow`);
  for (const key of fields.filter((f) => !f.startsWith('#'))) {
    const state = await q.engine.flowKey(topic, key);
    assert.equal(
      state.running,
      byKey.get(key) ?? 0,
      `key ${key}: running count ${state.running} against ${byKey.get(key) ?? 0} in the running zset`,
    );
  }
  for (const [key, n] of byKey) assert.equal((await q.engine.flowKey(topic, key)).running, n, `key ${key}`);
  return byKey;
}

describe('flow control per key', () => {
  const redis = useRedisServer();

  function setup(flow: TopicInput['flow'], extra: TopicInput = {}) {
    const topic = uniqueTopic('flow');
    const clock = new TestClock();
    const q = makeQueue(
      redis.client(),
      { [topic]: { concurrency: 50, maxAttempts: 3, ttr: 10, flow, ...extra } },
      { clock },
    );
    return { topic, clock, q };
  }

  async function addDue(q: ReturnType<typeof makeQueue>, topic: string, jobs: { id: string; key?: string }[]) {
    const { outcomes } = await q.addMany(
      jobs.map((j) => ({ topic, id: j.id, delay: 0, ...(j.key !== undefined ? { key: j.key } : {}) })),
      W,
    );
    assert.ok(outcomes.every((o) => o.status === 'created'));
  }

  it('keeps each key within its concurrency and the topic within its cap, and goes round the keys', async () => {
    const { topic, q } = setup({ concurrency: 2 }, { concurrency: 5 });
    await addDue(q, topic, [
      ...Array.from({ length: 20 }, (_, i) => ({ id: `hot-${i}`, key: 'hot' })),
      { id: 'cold-1', key: 'cold' },
      { id: 'warm-1', key: 'warm' },
      { id: 'none-1' },
    ]);
    await q.engine.sweep();
    const claimed = await q.engine.claim(topic, 10);
    const byKey = await checkSlots(redis.client(), q, topic);
    assert.equal(claimed.length, 5, 'the topic cap stops the claim');
    assert.ok((byKey.get('hot') ?? 0) <= 2, 'hot within its concurrency');
    assert.deepEqual(
      new Set(claimed.map((j) => j.id.split('-')[0])),
      new Set(['hot', 'cold', 'warm', 'none']),
      'every key got a turn: the hot backlog holds nobody back',
    );
    assert.equal((await q.get(topic, 'none-1'))?.key, '', 'a job without a key has the key ""');
  });

  it("goes round the keys a turn at a time: up to 4 of a key's jobs, and a turn the claim's end cut short goes on in the next claim", async () => {
    const { topic, q } = setup({});
    await addDue(
      q,
      topic,
      ['a', 'b', 'c'].flatMap((key) => Array.from({ length: 6 }, (_, i) => ({ id: `${key}${i + 1}`, key }))),
    );
    await q.engine.sweep();
    const ids = async (n: number) => (await q.engine.claim(topic, n)).map((j) => j.id);
    assert.deepEqual(await ids(10), ['a1', 'a2', 'a3', 'a4', 'b1', 'b2', 'b3', 'b4', 'c1', 'c2']);
    assert.deepEqual(
      await ids(10),
      ['c3', 'c4', 'a5', 'a6', 'b5', 'b6', 'c5', 'c6'],
      "the rest of c's turn first (the last claim ended in it), then round again",
    );
    await addDue(
      q,
      topic,
      ['a', 'b'].flatMap((key) => Array.from({ length: 3 }, (_, i) => ({ id: `${key}${i + 7}`, key }))),
    );
    await q.engine.sweep();
    assert.deepEqual(await ids(1), ['a7'], 'one job a claim: its turn is the one job');
    assert.deepEqual(await ids(1), ['b7']);
    assert.deepEqual(await ids(2), ['a8', 'a9']);
    await checkSlots(redis.client(), q, topic);
  });

  it('a slot comes back however the attempt ends: ack, fail, timeout, cancel, release', async () => {
    const { topic, clock, q } = setup({ concurrency: 1 });
    await addDue(
      q,
      topic,
      ['a', 'b', 'c', 'd', 'e', 'f'].map((id) => ({ id, key: 'k' })),
    );
    await q.engine.sweep();
    const next = async (): Promise<ClaimedJob> => {
      const [job, more] = await q.engine.claim(topic, 5);
      assert.ok(job, 'a job is claimed once the slot is back');
      assert.equal(more, undefined, 'one at a time');
      assert.deepEqual(await q.engine.claim(topic, 5), [], 'the key is at its concurrency');
      await checkSlots(redis.client(), q, topic);
      return job;
    };
    let job = await next();
    assert.equal(await q.engine.ack(topic, job.id, job), 'done');
    job = await next();
    assert.equal((await q.engine.fail(topic, job.id, job, 'boom', 3_600_000)).outcome, 'retry');
    job = await next();
    clock.advance(11_000); // past its ttr
    await q.engine.sweep();
    job = await next();
    await q.cancel(topic, job.id, { by: 'op' });
    job = await next();
    assert.equal(await q.engine.release([{ ...job, topic }], 'test'), 1);
    const again = await next();
    assert.equal(again.id, job.id, 'a released job goes back to the head of its lane');
    assert.equal(await q.engine.ack(topic, again.id, again), 'done');
    const state = await q.engine.flowKey(topic, 'k');
    assert.equal(state.running, 0);
  });

  it("starts a key's ready jobs in the order they fell due, through its head, its lane, a give-back and a later sweep", async () => {
    const { topic, clock, q } = setup({ concurrency: 100 });
    const ids = (from: number, to: number) =>
      Array.from({ length: to - from }, (_, i) => `k-${String(from + i).padStart(2, '0')}`);
    await addDue(
      q,
      topic,
      ids(0, 10).map((id) => ({ id, key: 'k' })),
    );
    await q.engine.sweep();
    assert.equal((await q.engine.flowKey(topic, 'k')).ready, 10);
    const claim = async (n: number) => (await q.engine.claim(topic, n)).map((j) => j.id);
    const [first] = await q.engine.claim(topic, 1);
    assert.equal(first?.id, 'k-00');
    assert.equal(await q.engine.release([{ ...first!, topic }], 'test'), 1);
    assert.equal((await q.engine.flowKey(topic, 'k')).ready, 10, 'the given-back job is ready again');
    assert.deepEqual(await claim(1), ['k-00'], 'a given-back job is first again');
    assert.deepEqual(await claim(5), ids(1, 6), 'across the head and the lane');
    clock.advance(1);
    await addDue(
      q,
      topic,
      ids(10, 13).map((id) => ({ id, key: 'k' })),
    );
    await q.engine.sweep();
    assert.equal((await q.engine.flowKey(topic, 'k')).ready, 7, 'the later ones behind the rest');
    const rest: string[] = [];
    for (let got = await claim(1); got.length > 0; got = await claim(1)) rest.push(...got);
    assert.deepEqual(rest, ids(6, 13));
    assert.equal((await q.engine.flowKey(topic, 'k')).ready, 0);
    await checkSlots(redis.client(), q, topic);
  });

  it('paces each key: count per per with its burst, the rest waiting for the sweep to let it go', async () => {
    const { topic, clock, q } = setup({ rate: { count: 2, per: 1, burst: 2 } });
    await addDue(q, topic, [...['a1', 'a2', 'a3', 'a4'].map((id) => ({ id, key: 'a' })), { id: 'b1', key: 'b' }]);
    await q.engine.sweep();
    const first = await q.engine.claim(topic, 10);
    assert.deepEqual(first.map((j) => j.id).sort(), ['a1', 'a2', 'b1'], 'a burst of 2 for a, 1 for b');
    const held = await q.engine.flowKey(topic, 'a');
    assert.equal(held.heldUntil, clock.now + 500, 'its pace lets a go again in 500 ms');
    assert.deepEqual(await q.engine.claim(topic, 10), []);
    clock.advance(499);
    await q.engine.sweep();
    assert.deepEqual(await q.engine.claim(topic, 10), [], 'not before');
    clock.advance(1);
    await q.engine.sweep();
    const third = await q.engine.claim(topic, 10);
    assert.deepEqual(
      third.map((j) => j.id),
      ['a3'],
    );
    for (const j of [...first, ...third]) assert.equal(await q.engine.ack(topic, j.id, j), 'done');
    clock.advance(10_000);
    await q.engine.sweep();
    assert.deepEqual(
      (await q.engine.claim(topic, 10)).map((j) => j.id),
      ['a4'],
    );
  });

  it('pinned limits override the defaults and say who pinned them and when; clear returns to the defaults', async () => {
    const { topic, q } = setup({ concurrency: 1 });
    await addDue(
      q,
      topic,
      ['a', 'b', 'c'].map((id) => ({ id, key: 'vip' })),
    );
    await q.engine.sweep();
    assert.equal((await q.engine.claim(topic, 10)).length, 1);
    const before = await q.engine.flowKey(topic, 'vip');
    assert.deepEqual(
      [before.pinned, before.updatedBy, before.updatedAt],
      [null, null, null],
      'nothing pinned: no maker',
    );
    const jobs = `dq:{f:${topic}}:jobs:${topic}`;
    assert.equal(
      await redis.client().hexists(jobs, '#pinned'),
      0,
      'no key pinned: claims and starts read no pinned record',
    );
    const pinned = await q.engine.setFlowKey(topic, 'vip', { concurrency: 3 }, 'ops');
    assert.deepEqual(
      [pinned.limits.concurrency, pinned.pinned, pinned.running, pinned.ready],
      [3, { concurrency: 3 }, 1, 2],
    );
    assert.equal(await redis.client().hexists(jobs, '#pinned'), 1, 'a key pinned: said beside the pause mark');
    assert.equal(pinned.updatedBy, 'ops');
    assert.equal(typeof pinned.updatedAt, 'number');
    assert.equal((await q.engine.claim(topic, 10)).length, 2, 'the key got room at once');
    const paused = await q.engine.setFlowKey(topic, 'vip', { paused: true }, 'oncall');
    assert.deepEqual(
      [paused.pinned, paused.paused, paused.updatedBy],
      [{ concurrency: 3 }, true, 'oncall'],
      'the last change names its maker; the limits stay',
    );
    const read = await q.engine.flowKey(topic, 'vip');
    assert.deepEqual([read.updatedBy, read.updatedAt], ['oncall', paused.updatedAt], 'a read shows the same');
    const anonymous = await q.engine.setFlowKey(topic, 'vip', { paused: false });
    assert.deepEqual(
      [anonymous.updatedBy, anonymous.pinned],
      [null, { concurrency: 3 }],
      'a change made without a key names none',
    );
    const cleared = await q.engine.setFlowKey(topic, 'vip', 'clear', 'ops');
    assert.deepEqual(
      [cleared.limits.concurrency, cleared.pinned, cleared.updatedBy, cleared.updatedAt],
      [1, null, null, null],
    );
    assert.equal(await redis.client().hexists(jobs, '#pinned'), 0, 'the last pinned record cleared');
    await checkSlots(redis.client(), q, topic);
  });

  it('a paused topic starts nothing after the pause answered, not even jobs claimed before; resume hands them out', async () => {
    for (const flow of [undefined, {}] as const) {
      const { topic, q } = setup(flow);
      await addDue(
        q,
        topic,
        ['a', 'b', 'c'].map((id) => ({ id })),
      );
      await q.engine.sweep();
      const claimed = await q.engine.claim(topic, 2);
      await q.engine.pauseTopic(topic, 'op');
      assert.equal((await q.engine.counts(topic)).paused, true);
      assert.deepEqual(
        await q.engine.start(topic, claimed),
        [false, false],
        'claimed before the pause, held back at its start',
      );
      assert.deepEqual(await q.engine.claim(topic, 10), []);
      assert.deepEqual(await q.engine.claimStarted(topic, 10), []);
      assert.equal((await q.get(topic, claimed[0]!.id))?.attempts, 0, 'held back uncounted');
      await q.add({ topic, id: 'late', delay: 0 }, W);
      await q.engine.resumeTopic(topic, 'op');
      await q.engine.sweep();
      const after = await q.engine.claimStarted(topic, 10);
      assert.deepEqual(
        after.map((j) => j.id),
        ['a', 'b', 'c', 'late'],
        `${flow ? 'flow' : 'plain'} topic: all start after the resume, the held-back first in the order they were claimed`,
      );
    }
  });

  it('claims given back together, released or timed out before their start, come back in the order they were claimed', async () => {
    for (const flow of [undefined, {}] as const) {
      const { topic, clock, q } = setup(flow);
      await addDue(
        q,
        topic,
        ['a', 'b', 'c'].map((id) => ({ id })),
      );
      await q.engine.sweep();
      const claimed = await q.engine.claim(topic, 2);
      assert.deepEqual(
        claimed.map((j) => j.id),
        ['a', 'b'],
      );
      assert.equal(await q.engine.release(claimed.map((j) => ({ ...j, topic }))), 2);
      const again = await q.engine.claim(topic, 2);
      assert.deepEqual(
        again.map((j) => j.id),
        ['a', 'b'],
        `${flow ? 'flow' : 'plain'} topic: released, in claim order`,
      );
      clock.advance(10_001); // past their ttr (10 s), never started
      await q.engine.sweep();
      assert.deepEqual(
        (await q.engine.claim(topic, 3)).map((j) => j.id),
        ['a', 'b', 'c'],
        `${flow ? 'flow' : 'plain'} topic: timed out unstarted, given back in claim order`,
      );
    }
  });

  it('claims of several keys given back together come back in the order of their keys: released, held back at their start, timed out before it', async () => {
    const { topic, clock, q } = setup({});
    const ids = ['a1', 'b1', 'c1', 'd1'];
    await addDue(
      q,
      topic,
      ids.map((id) => ({ id, key: id[0]! })),
    );
    await q.engine.sweep();
    const claimed = await q.engine.claim(topic, 4);
    assert.deepEqual(
      claimed.map((j) => j.id),
      ids,
    );
    // released after a failed invoke (releaseJobs-5)
    assert.equal(await q.engine.release(claimed.map((j) => ({ ...j, topic }))), 4);
    const released = await q.engine.claim(topic, 4);
    assert.deepEqual(
      released.map((j) => j.id),
      ids,
      'released: their keys back in the ring in claim order',
    );
    // held back at their start by a pause of the topic (startAttempts-5)
    await q.engine.pauseTopic(topic, 'op');
    assert.deepEqual(await q.engine.start(topic, released), [false, false, false, false]);
    await q.engine.resumeTopic(topic, 'op');
    const held = await q.engine.claim(topic, 4);
    assert.deepEqual(
      held.map((j) => j.id),
      ids,
      'held back at their start: their keys back in the ring in claim order',
    );
    // timed out before their start (moveDue-8)
    clock.advance(10_001);
    await q.engine.sweep();
    assert.deepEqual(
      (await q.engine.claim(topic, 4)).map((j) => j.id),
      ids,
      'timed out unstarted: their keys back in the ring in claim order',
    );
    await checkSlots(redis.client(), q, topic);
  });

  it('a paused key: its jobs wait, other keys go on; its claimed attempts are held back', async () => {
    const { topic, q } = setup({});
    await addDue(q, topic, [
      ...['a1', 'a2'].map((id) => ({ id, key: 'a' })),
      ...['b1', 'b2'].map((id) => ({ id, key: 'b' })),
    ]);
    await q.engine.sweep();
    const first = await q.engine.claim(topic, 3);
    assert.deepEqual(
      first.map((j) => j.id),
      ['a1', 'a2', 'b1'],
      "a key's turn: up to 4 of its jobs (here its 2), then the next key",
    );
    const paused = await q.engine.setFlowKey(topic, 'a', { paused: true });
    assert.equal(paused.paused, true);
    assert.deepEqual(
      await q.engine.start(topic, first),
      first.map((j) => !j.id.startsWith('a')),
    );
    assert.deepEqual(
      (await q.engine.claim(topic, 10)).map((j) => j.id),
      ['b2'],
    );
    await checkSlots(redis.client(), q, topic);
    await q.engine.setFlowKey(topic, 'a', { paused: false });
    assert.deepEqual(
      (await q.engine.claim(topic, 10)).map((j) => j.id),
      ['a1', 'a2'],
      'resumed: its lane in order, the held-back jobs first',
    );
  });

  it("a flow topic's rateLimit paces all its keys together from a hash in the topic's own slot", async () => {
    const topic = uniqueTopic('flow-rate');
    const clock = new TestClock();
    const q = makeQueue(
      redis.client(),
      { [topic]: { concurrency: 50, flow: {}, rateLimit: { count: 2, per: 1 } } },
      { clock, config: { partitions: 4 } },
    );
    const t = q.engine.topic(topic);
    const layout = engineContext(q.engine).layout;
    const jobs = topicKeys(layout.placeOf(t, 'any'), topic, layout).jobs;
    assert.equal(
      jobs,
      `dq:{f:${topic}}:jobs:${topic}`,
      'a flow topic has a partition of its own, whatever the partition count',
    );
    await addDue(
      q,
      topic,
      ['a', 'b', 'c'].map((id) => ({ id, key: id })),
    );
    await q.engine.sweep();
    assert.equal(
      (await q.engine.claim(topic, 10)).length,
      1,
      'one start every 500 ms across the keys (2 a second, paced)',
    );
    const rate = topicRateKey(t, layout);
    assert.equal(slotOf(rate), slotOf(jobs), "the rate hash shares the slot of the topic's jobs and keys");
    assert.ok((await redis.client().exists(rate)) === 1);
    assert.equal(await redis.client().exists(rateKey(topic)), 0, 'nothing in the shared {rate} slot');
    assert.deepEqual(await q.engine.claim(topic, 10), []);
    clock.advance(500);
    assert.equal((await q.engine.claim(topic, 10)).length, 1);
  });

  it("a flow topic's ready jobs are not listed as a topic's (they wait in their keys' lanes): 400 naming state, never an empty page", async () => {
    const { topic, q } = setup({});
    await addDue(q, topic, [{ id: 'a', key: 'k' }]);
    await q.engine.sweep();
    const error = await rejects(q.listJobs(topic, { state: 'ready' }), 400, 'VALIDATION_FAILED');
    assert.match(error.message, /flow/);
    assert.deepEqual(
      (error.details as { path: string }[]).map((d) => d.path),
      ['state'],
    );
    assert.equal((await q.listJobs(topic, { state: 'delayed' })).jobs.length, 0, 'the other states list as ever');
    const stats = await q.stats(topic);
    assert.deepEqual(
      [stats.ready, stats.oldestReadyAgeMs],
      [1, 0],
      "GET /topics counts it ready, its age from the lanes' heads",
    );
  });

  it("the keys' state hash is a hashtable from its first write (a key's state found in O(1), not scanned for in a listpack)", async () => {
    const { topic, q } = setup({ concurrency: 2 });
    await addDue(
      q,
      topic,
      ['a', 'b', 'c'].map((id) => ({ id, key: `tenant-${id}` })),
    );
    await q.engine.sweep();
    const state = `dq:{f:${topic}}:jobs:${topic}#flow`;
    assert.equal(await redis.client().object('ENCODING', state), 'hashtable', 'after the sweep wrote the keys');
    for (const j of await q.engine.claim(topic, 10)) await q.engine.ack(topic, j.id, j);
    assert.equal(await redis.client().object('ENCODING', state), 'hashtable', 'after claims and acks');
  });

  it('an idle key costs nothing once its jobs ended and its pace ran out', async () => {
    const { topic, clock, q } = setup({ concurrency: 2, rate: { count: 10, per: 1 } });
    await addDue(
      q,
      topic,
      ['x', 'y'].map((id) => ({ id, key: `tenant-${id}` })),
    );
    await q.engine.sweep();
    for (const j of await q.engine.claim(topic, 10)) await q.engine.ack(topic, j.id, j);
    clock.advance(1000);
    await q.engine.sweep();
    const left = (await redis.client().keys(`dq:{f:${topic}}:jobs:${topic}#*`)).sort();
    const fields = (await redis.client().hkeys(`dq:{f:${topic}}:jobs:${topic}#flow`)).sort();
    assert.deepEqual(
      fields,
      ['#dict', '#ready'],
      "no key state left: the topic's ready count and the hashtable marker only",
    );
    assert.deepEqual(left, [`dq:{f:${topic}}:jobs:${topic}#flow`], 'no lane, ring or wait zset left');
  });
});
