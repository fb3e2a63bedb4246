/**
 * A schedule's flow key against a real redis-server: on a flow topic every occurrence carries the
 * schedule's `key`, so it is claimed under that key, within the key's limits and pause; a put with
 * another key remakes the pending occurrence under it, while one handed over already runs under
 * the key it was made with. A schedule without a key runs under the key ''. Fixed clock.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ClaimedJob } from '../../lib/engine';
import type { Queue } from '../support/queue';
import { makeQueue, rejects, TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';

const W = { name: 'producer', scope: 'write', topics: null } as const;
const MIN = 60_000;

describe('a schedule on a flow topic carries its key', () => {
  const redis = useRedisServer();

  function setup() {
    const topic = uniqueTopic('sched-flow');
    const plain = uniqueTopic('sched-plain');
    const clock = new TestClock();
    // 4 partitions: the schedule and its occurrences are in the flow topic's one partition; a ttr of
    // 10 minutes outlasts the minutes a test moves its clock by, so a claimed occurrence stays running
    const q = makeQueue(
      redis.client(),
      { [topic]: { concurrency: 50, ttr: 600, maxAttempts: 3, flow: { concurrency: 1 } }, [plain]: {} },
      { clock, config: { partitions: 4 } },
    );
    return { topic, plain, clock, q };
  }

  /** Sweeps until nothing is left to move (schedules advanced, due jobs in their keys' lanes). */
  async function sweep(q: Queue): Promise<void> {
    for (let i = 0; i < 10 && (await q.engine.sweep()).more; i++);
  }

  async function claimAll(q: Queue, topic: string): Promise<ClaimedJob[]> {
    return q.engine.claim(topic, 10);
  }

  async function ackAll(q: Queue, topic: string, jobs: readonly ClaimedJob[]): Promise<void> {
    for (const job of jobs) assert.equal(await q.engine.ack(topic, job.id, job), 'done');
  }

  it("its occurrences are claimed under the schedule's key, within that key's concurrency and pause", async () => {
    const { topic, clock, q } = setup();
    const put = await q.putSchedule(topic, 'sync', { every: 60, key: 'k1', body: { partner: 'acme' } });
    assert.equal(put.schedule.key, 'k1');
    assert.equal((await q.getSchedule(topic, 'sync'))?.key, 'k1', 'GET shows the key');
    assert.deepEqual(
      (await q.listSchedules(topic)).schedules.map((s) => [s.id, s.key]),
      [['sync', 'k1']],
      'the listing shows it too',
    );
    const first = put.schedule.pending!.id;
    assert.equal((await q.get(topic, first))?.key, 'k1', 'the pending occurrence carries the key');

    clock.advance(MIN);
    await sweep(q);
    const claimed = await claimAll(q, topic);
    assert.deepEqual(
      claimed.map((j) => j.id),
      [first],
    );
    assert.equal((await q.engine.flowKey(topic, 'k1')).running, 1, 'claimed under k1');
    const none = await q.engine.flowKey(topic, '');
    assert.deepEqual([none.running, none.ready], [0, 0], "nothing under the key ''");

    // k1's concurrency is 1: while the occurrence runs, another job of k1 waits; one of k2 goes
    const { outcomes } = await q.addMany(
      [
        { topic, id: 'other-k1', delay: 0, key: 'k1' },
        { topic, id: 'other-k2', delay: 0, key: 'k2' },
      ],
      W,
    );
    assert.ok(outcomes.every((o) => o.status === 'created'));
    await sweep(q);
    const others = await claimAll(q, topic);
    assert.deepEqual(
      others.map((j) => j.id),
      ['other-k2'],
      'k1 is at its concurrency while its occurrence runs',
    );
    await ackAll(q, topic, [...claimed, ...others]);
    const afterAck = await claimAll(q, topic);
    assert.deepEqual(
      afterAck.map((j) => j.id),
      ['other-k1'],
      "the occurrence's ack gave k1's slot back",
    );
    await ackAll(q, topic, afterAck);

    // k1 paused: the next occurrence is held back in k1's lane until k1 resumes
    await q.engine.setFlowKey(topic, 'k1', { paused: true });
    clock.advance(MIN);
    await sweep(q);
    const second = (await q.getSchedule(topic, 'sync'))!.lastRunAt;
    assert.equal(second, new Date(clock.now).toISOString(), 'the second occurrence was handed over');
    assert.deepEqual(await claimAll(q, topic), [], 'k1 is paused');
    assert.equal((await q.engine.flowKey(topic, 'k1')).ready, 1, "the occurrence waits in k1's lane");
    await q.engine.setFlowKey(topic, 'k1', { paused: false });
    const resumed = await claimAll(q, topic);
    assert.equal(resumed.length, 1);
    assert.match(resumed[0]!.id, /^sync:/);
    assert.equal((await q.get(topic, resumed[0]!.id))?.key, 'k1');
    assert.equal((await q.engine.flowKey(topic, 'k1')).running, 1);
    await ackAll(q, topic, resumed);
  });

  it('a put with another key remakes the pending occurrence under it; one handed over runs under the key it was made with', async () => {
    const { topic, clock, q } = setup();
    const put = await q.putSchedule(topic, 'swap', { every: 60, key: 'k1' });
    const first = put.schedule.pending!.id;
    clock.advance(MIN);
    await sweep(q); // the first handed over (ready in k1's lane), the second pending
    const second = (await q.getSchedule(topic, 'swap'))!.pending!.id;
    const replaced = await q.putSchedule(topic, 'swap', { every: 60, key: 'k2' });
    assert.equal(replaced.status, 'replaced');
    assert.equal(replaced.schedule.key, 'k2');
    assert.equal(replaced.schedule.pending!.id, second, 'the same run time');
    assert.equal((await q.get(topic, first))?.key, 'k1', 'handed over before the put: its key stays');
    assert.equal((await q.get(topic, second))?.key, 'k2', 'pending at the put: made again under the new key');

    const one = await claimAll(q, topic);
    assert.deepEqual(
      one.map((j) => j.id),
      [first],
    );
    assert.equal((await q.engine.flowKey(topic, 'k1')).running, 1);
    clock.advance(MIN);
    await sweep(q);
    const two = await claimAll(q, topic);
    assert.deepEqual(
      two.map((j) => j.id),
      [second],
      "k2's slot is free though k1's is taken",
    );
    assert.equal((await q.engine.flowKey(topic, 'k2')).running, 1);
    await ackAll(q, topic, [...one, ...two]);

    // a put once the pending occurrence's run time came, before the sweep moved the schedule on: it is left to run
    // (under k2), the next is made under k3
    clock.advance(MIN);
    const due = (await q.getSchedule(topic, 'swap'))!.pending!.id;
    const kept = await q.putSchedule(topic, 'swap', { every: 60, key: 'k3' });
    assert.equal((await q.get(topic, due))?.key, 'k2', 'due at the put: left to run under its key');
    assert.equal((await q.get(topic, kept.schedule.pending!.id))?.key, 'k3');
    await sweep(q);
    const three = await claimAll(q, topic);
    assert.deepEqual(
      three.map((j) => j.id),
      [due],
    );
    assert.equal((await q.engine.flowKey(topic, 'k2')).running, 1);
    await ackAll(q, topic, three);
  });

  it("a schedule without a key: its key is null, its occurrences run under the key ''; a pause and a resume keep a key", async () => {
    const { topic, clock, q } = setup();
    const put = await q.putSchedule(topic, 'plain', { every: 60 });
    assert.equal(put.schedule.key, null);
    assert.equal((await q.get(topic, put.schedule.pending!.id))?.key, '');
    clock.advance(MIN);
    await sweep(q);
    const claimed = await claimAll(q, topic);
    assert.equal(claimed.length, 1);
    assert.equal((await q.engine.flowKey(topic, '')).running, 1);
    await ackAll(q, topic, claimed);

    await q.putSchedule(topic, 'keyed', { every: 60, key: 'k1' });
    assert.equal((await q.pauseSchedule(topic, 'keyed', true)).key, 'k1');
    const resumed = await q.pauseSchedule(topic, 'keyed', false);
    assert.equal(resumed.key, 'k1');
    assert.equal((await q.get(topic, resumed.pending!.id))?.key, 'k1', 'made on resume under the key');
  });

  it("a key on a topic without flow is 400 VALIDATION_FAILED naming key, as a job's; a schedule there shows key null", async () => {
    const { plain, q } = setup();
    const refused = await rejects(q.putSchedule(plain, 'nightly', { every: 60, key: 'k1' }), 400, 'VALIDATION_FAILED');
    assert.deepEqual(
      (refused.details as { path: string }[]).map((d) => d.path),
      ['key'],
    );
    assert.equal((await q.putSchedule(plain, 'nightly', { every: 60 })).schedule.key, null);
  });
});
