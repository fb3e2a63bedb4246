/**
 * Every answer of a change is as durable as the state it reports (durability `replica`, issue 30
 * item 1). A change answered 503 NOT_REPLICATED is on the primary but not on the replica; its
 * retry, sent by another Lambda (another connection, so WAIT does not cover the first one's write),
 * meets that state and answers 404, 412 or "nothing to do". Such an answer must wait for the
 * replica too: while the link is cut it is 503 as well, because a failover undoes the state it
 * reports. Each case cuts a real replication link, then fails over to the replica to show what the
 * retry's answer would have promised.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import type { QueueConfigInput, TopicInput } from '../../lib/core/queue-config';
import type { Queue } from '../support/queue';
import { until } from '../../scripts/support/process';
import { startCuttableReplica, type CuttableReplica } from '../support/failover';
import { makeQueue, rejects, uniqueTopic } from '../support/queue';

// the refused calls wait this long; the calls that must be acknowledged wait up to the longest
// timeout the configuration takes, so a busy machine does not turn them into 503s
const TIMEOUT_S = 0.2;
const PATIENT_S = 1.5;

/**
 * Runs `body` over a primary with a cuttable replica: `setup` is the API on the primary, `first`
 * and `retry` that of two more Lambdas (each its own connection) with the short timeout;
 * `on(url)` gives the API on another server.
 */
async function withCuttableReplica(
  topics: Record<string, TopicInput>,
  config: Omit<QueueConfigInput, 'topics'>,
  body: (ctx: {
    pair: CuttableReplica;
    setup: Queue;
    first: Queue;
    retry: Queue;
    on: (url: string) => Queue;
  }) => Promise<void>,
): Promise<void> {
  const pair = await startCuttableReplica();
  const clients: Redis[] = [];
  const on = (url: string, timeoutS = PATIENT_S) => {
    const client = new Redis(url);
    clients.push(client);
    return makeQueue(client, topics, { config: { durability: 'replica', durabilityTimeout: timeoutS, ...config } });
  };
  try {
    const url = pair.primary.url;
    await body({ pair, setup: on(url), first: on(url, TIMEOUT_S), retry: on(url, TIMEOUT_S), on: (u) => on(u) });
  } finally {
    for (const c of clients) c.disconnect();
    await pair.stop();
  }
}

describe('durability replica: the retry of a change answered 503 waits for the replica too', () => {
  it('DELETE /schedules: the retry is 503, not 404, while the link is cut (the failover brings the schedule back)', async () => {
    const topic = uniqueTopic('ans-s');
    await withCuttableReplica({ [topic]: {} }, {}, async ({ pair, setup, first, retry, on }) => {
      await setup.putSchedule(topic, 's1', { every: 60, body: { n: 1 } });
      pair.cutLink();
      await rejects(first.deleteSchedule(topic, 's1'), 503, 'NOT_REPLICATED');
      await rejects(retry.deleteSchedule(topic, 's1'), 503, 'NOT_REPLICATED');
      const promoted = on((await pair.failover()).url);
      assert.notEqual(
        await promoted.getSchedule(topic, 's1'),
        null,
        'the delete no replica had is undone: a 404 would have been wrong',
      );
      await promoted.deleteSchedule(topic, 's1');
      assert.equal(await promoted.getSchedule(topic, 's1'), null, 'the retry on the new primary deletes it');
    });
  });

  it('DELETE /jobs with retention 0: the retry is 503, not 404, while the link is cut (the failover brings the job back)', async () => {
    const topic = uniqueTopic('ans-c');
    await withCuttableReplica({ [topic]: {} }, { retention: 0 }, async ({ pair, setup, first, retry, on }) => {
      await setup.add({ topic, id: 'j1', delay: 60 });
      pair.cutLink();
      await rejects(first.cancel(topic, 'j1'), 503, 'NOT_REPLICATED');
      await rejects(retry.cancel(topic, 'j1'), 503, 'NOT_REPLICATED');
      const promoted = on((await pair.failover()).url);
      assert.equal(
        (await promoted.get(topic, 'j1'))?.state,
        'delayed',
        'the cancel no replica had is undone: a 404 would have been wrong',
      );
      assert.equal((await promoted.cancel(topic, 'j1')).state, 'cancelled');
    });
  });

  it('PUT with If-Match: the retry is 503, not 412 with a body the failover loses', async () => {
    const topic = uniqueTopic('ans-p');
    await withCuttableReplica({ [topic]: {} }, {}, async ({ pair, setup, first, retry, on }) => {
      const v1 = (await setup.add({ topic, id: 'j1', delay: 60, body: 'one' })).job.version;
      pair.cutLink();
      await rejects(
        first.put(topic, 'j1', { delay: 60, body: 'two' }, { ifMatch: { version: v1 } }),
        503,
        'NOT_REPLICATED',
      );
      await rejects(
        retry.put(topic, 'j1', { delay: 60, body: 'two' }, { ifMatch: { version: v1 } }),
        503,
        'NOT_REPLICATED',
      );
      const promoted = on((await pair.failover()).url);
      const back = await promoted.get(topic, 'j1');
      assert.deepEqual(
        [back?.body, back?.version],
        ['one', v1],
        'the put no replica had is undone: a 412 showing "two" would have been wrong',
      );
      assert.equal(
        (await promoted.put(topic, 'j1', { delay: 60, body: 'two' }, { ifMatch: { version: v1 } })).status,
        'replaced',
      );
    });
  });

  it('redrive: the retry is 503, not { redriven: 0 }, while the link is cut (the failover leaves the job dead)', async () => {
    const topic = uniqueTopic('ans-r');
    await withCuttableReplica({ [topic]: { maxAttempts: 1 } }, {}, async ({ pair, setup, first, retry, on }) => {
      await setup.add({ topic, id: 'd1', delay: 0 });
      await setup.engine.sweep();
      const [claimed] = await setup.engine.claim(topic, 1);
      assert.ok(claimed);
      assert.equal((await setup.engine.fail(topic, 'd1', claimed, 'boom')).outcome, 'dead');
      const replica = new Redis(pair.replica.url);
      try {
        assert.ok(
          await until(async () => (await replica.zscore(`dq:{p0}:dead:${topic}`, 'd1')) !== null, 10_000, 20),
          'the replica has the dead job',
        );
      } finally {
        replica.disconnect();
      }
      pair.cutLink();
      await rejects(first.redrive(topic, { ids: ['d1'] }), 503, 'NOT_REPLICATED');
      await rejects(retry.redrive(topic, { ids: ['d1'] }), 503, 'NOT_REPLICATED');
      await rejects(retry.redrive(topic, { count: 10 }), 503, 'NOT_REPLICATED');
      const promoted = on((await pair.failover()).url);
      assert.equal(
        (await promoted.get(topic, 'd1'))?.state,
        'dead',
        'the redrive no replica had is undone: "redriven: 0" would have been wrong',
      );
      assert.equal((await promoted.redrive(topic, { ids: ['d1'] })).redriven, 1);
    });
  });

  it("reschedule (the engine's change without a route): a 404 about a cancel no replica has is 503 too", async () => {
    const topic = uniqueTopic('ans-m');
    await withCuttableReplica({ [topic]: {} }, { retention: 0 }, async ({ pair, setup, first, retry, on }) => {
      await setup.add({ topic, id: 'j1', delay: 60 });
      pair.cutLink();
      await rejects(first.cancel(topic, 'j1'), 503, 'NOT_REPLICATED');
      await rejects(retry.reschedule(topic, 'j1', { delay: 120 }), 503, 'NOT_REPLICATED');
      const promoted = on((await pair.failover()).url);
      assert.equal((await promoted.get(topic, 'j1'))?.state, 'delayed', 'the job is back: a 404 would have been wrong');
      assert.equal((await promoted.reschedule(topic, 'j1', { delay: 120 })).job.state, 'delayed');
    });
  });
});
