/**
 * Flow control per key through the stack (redis-server + serverless offline), with the client:
 * jobs with a `key` on the flow topic `partner` (serverless.yml), a key's state, limits pinned and
 * cleared, a key and a topic paused and resumed (a paused one's due job does not start while a job
 * of the same pipeline does; after the resume it runs), a schedule's key (its occurrences run under
 * it, held while it is paused), 400 for a `key` on a topic with no flow control (a job's and a
 * schedule's) and for the flow routes there, 403 for a read key on the change routes. Every answer is
 * checked against openapi.yaml. Each test waits for a condition, never for a fixed time.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { DelayQueueClient, DelayQueueError, type Job } from '../../lib/client';
import { startOffline, type OfflineProcess } from '../support/offline';
import { checkingFetch, Contract } from '../support/openapi';
import { startRedis, type RedisProcess } from '../support/redis';

const TOPIC_DEFAULTS = { concurrency: 2, rate: { count: 10, per: 1, burst: 1 } }; // serverless.yml, topic partner

describe('flow control per key through the stack', () => {
  const contract = new Contract();
  let redisServer: RedisProcess;
  let offline: OfflineProcess;
  let queue: DelayQueueClient;
  let seq = 0;
  const uid = (label: string) => `${label}-${process.pid}-${++seq}`;

  /** Polls until job topic/id is in `state` (120 s at most). */
  async function until(topic: string, id: string, state: string): Promise<Job> {
    // a ceiling, so a stuck job fails the test instead of hanging it: a slow machine only waits longer
    const end = Date.now() + 120_000;
    for (;;) {
      const job = await queue.get(topic, id);
      if (job?.state === state) return job;
      if (Date.now() > end) assert.fail(`job ${topic}/${id} never reached ${state} (it is ${job?.state})`);
      await sleep(100);
    }
  }

  /** The error a call fails with: its status, code and the paths of its details. */
  async function refusal(call: Promise<unknown>): Promise<[number, string, string[]]> {
    const error = await call.then(
      () => assert.fail('expected a refusal'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof DelayQueueError, String(error));
    const paths = Array.isArray(error.details) ? (error.details as { path: string }[]).map((d) => d.path).sort() : [];
    return [error.status, error.code, paths];
  }

  before(async () => {
    redisServer = await startRedis();
    offline = await startOffline({ redisUrl: redisServer.url });
    queue = new DelayQueueClient({
      baseUrl: offline.baseUrl,
      token: offline.token,
      fetch: checkingFetch(contract, offline.baseUrl),
    });
  });
  after(async () => {
    await offline?.stop();
    await redisServer?.stop();
  });

  it('jobs carry their key on the flow topic and run; a key on a topic with no flow control is 400 naming key, in a batch too', async () => {
    const id = uid('keyed');
    const added = await queue.add({ topic: 'partner', id, delay: 0, key: 'acme', body: { n: 1 } });
    assert.equal(added.key, 'acme');
    const done = await until('partner', id, 'done');
    assert.equal(done.key, 'acme');
    const plain = await queue.add({ topic: 'partner', delay: 3600 });
    assert.equal(plain.key, '', "a key is optional on a flow topic: the jobs without one share the key ''");
    assert.equal((await queue.add({ topic: 'example', delay: 3600 })).key, null);

    assert.deepEqual(await refusal(queue.add({ topic: 'example', delay: 1, key: 'acme' })), [
      400,
      'VALIDATION_FAILED',
      ['key'],
    ]);
    assert.deepEqual(await refusal(queue.add({ topic: 'partner', delay: 1, key: 'has space' })), [
      400,
      'VALIDATION_FAILED',
      ['key'],
    ]);
    const batch = await queue.addMany([
      { topic: 'partner', delay: 3600, key: 'acme' },
      { topic: 'example', delay: 3600, key: 'acme' },
    ]);
    assert.deepEqual(
      batch.map((r) => r.status),
      [201, 400],
    );
    assert.ok(!batch[1]!.ok && (batch[1]!.error.details as { path: string }[]).some((d) => d.path === 'key'));
  });

  it("a key's state shows the topic's defaults; limits pinned, a bad change refused whole, cleared; 400 on a topic with no flow control, UNKNOWN_TOPIC, a bad key", async () => {
    const key = uid('tenant');
    const fresh = await queue.flowKey('partner', key);
    assert.deepEqual(fresh, {
      topic: 'partner',
      key,
      running: 0,
      ready: 0,
      paused: false,
      heldUntil: null,
      limits: TOPIC_DEFAULTS,
      pinned: null,
      updatedBy: null,
      updatedAt: null,
    });

    const pinned = await queue.setFlowKey('partner', key, { concurrency: 1, rate: { count: 5, per: 2, burst: 2 } });
    assert.deepEqual(pinned.limits, { concurrency: 1, rate: { count: 5, per: 2, burst: 2 } });
    assert.deepEqual(pinned.pinned, { concurrency: 1, rate: { count: 5, per: 2, burst: 2 } });
    assert.deepEqual((await queue.flowKey('partner', key)).limits, pinned.limits, 'a read shows what was pinned');
    assert.equal(pinned.updatedBy, 'deployment', 'the pin names the API key that made it');
    assert.ok(
      pinned.updatedAt !== null && Math.abs(Date.parse(pinned.updatedAt) - Date.now()) < 3_600_000,
      `updatedAt ${pinned.updatedAt} is an ISO time of today`,
    );

    const back = await queue.setFlowKey('partner', key, { rate: null });
    assert.deepEqual(back.limits, { concurrency: 1, rate: TOPIC_DEFAULTS.rate }, "null: the topic's default again");
    assert.equal(back.pinned?.concurrency, 1);

    assert.deepEqual(
      await refusal(
        queue.setFlowKey('partner', key, { concurrency: 0, rate: { count: 2, burst: 3 }, extra: 1 } as never),
      ),
      [400, 'VALIDATION_FAILED', ['concurrency', 'extra', 'rate.burst']],
    );
    assert.deepEqual(await refusal(queue.setFlowKey('partner', key, {})), [400, 'VALIDATION_FAILED', ['']]);
    assert.deepEqual((await queue.flowKey('partner', key)).limits, back.limits, 'a refused change changed nothing');

    const cleared = await queue.clearFlowKey('partner', key);
    assert.deepEqual([cleared.limits, cleared.pinned, cleared.paused], [TOPIC_DEFAULTS, null, false]);

    assert.deepEqual(await refusal(queue.flowKey('example', key)), [400, 'VALIDATION_FAILED', ['topic']]);
    assert.deepEqual(await refusal(queue.pauseFlowKey('example', key)), [400, 'VALIDATION_FAILED', ['topic']]);
    assert.deepEqual(await refusal(queue.setFlowKey('example', key, { paused: true })), [
      400,
      'VALIDATION_FAILED',
      ['topic'],
    ]);
    assert.deepEqual(await refusal(queue.flowKey('nope', key)), [400, 'UNKNOWN_TOPIC', []]);
    assert.deepEqual(await refusal(queue.flowKey('partner', 'has space')), [400, 'VALIDATION_FAILED', ['key']]);
  });

  it("a paused key's due job does not start while another key's does; after the resume it runs", async () => {
    const [held, free] = [uid('held'), uid('free')];
    assert.equal((await queue.pauseFlowKey('partner', held)).paused, true);
    const waiting = await queue.add({ topic: 'partner', id: uid('w'), delay: 0, key: held });
    const other = await queue.add({ topic: 'partner', id: uid('o'), delay: 0, key: free });
    await until('partner', other.id, 'done'); // the pipeline ran a job of the topic due at the same time
    const state = await queue.flowKey('partner', held);
    assert.deepEqual([state.paused, state.running], [true, 0]);
    assert.ok(
      ['delayed', 'ready'].includes((await queue.get('partner', waiting.id))!.state),
      'the paused key’s job has not started',
    );

    assert.equal((await queue.resumeFlowKey('partner', held)).paused, false);
    const done = await until('partner', waiting.id, 'done');
    assert.equal(done.attempts, 1);
    const paused = await queue.setFlowKey('partner', held, { paused: true }); // PUT pauses too
    assert.equal(paused.paused, true);
    assert.equal((await queue.setFlowKey('partner', held, { paused: false })).paused, false);
  });

  it("a schedule's key: its occurrences carry it, wait while the key is paused and run after the resume; 400 naming key on a topic with no flow control", async () => {
    const [key, id] = [uid('sched-key'), uid('sync')];
    assert.equal((await queue.pauseFlowKey('partner', key)).paused, true);
    const { schedule, created } = await queue.putSchedule('partner', id, { every: 1, key, body: { n: 1 } });
    assert.deepEqual([created, schedule.key], [true, key]);
    assert.equal((await queue.getSchedule('partner', id))?.key, key);
    const first = schedule.pending!.id;
    assert.equal((await queue.get('partner', first))?.key, key, 'the pending occurrence carries the key');
    // a ceiling, so a stuck job fails the test instead of hanging it: a slow machine only waits longer
    const end = Date.now() + 120_000;
    while ((await queue.flowKey('partner', key)).ready === 0) {
      if (Date.now() > end) assert.fail(`no occurrence of ${id} reached the lane of key ${key}`);
      await sleep(100);
    }
    assert.equal((await queue.get('partner', first))?.state, 'ready', 'due, in the paused key’s lane, not started');
    assert.equal((await queue.flowKey('partner', key)).running, 0);

    assert.equal((await queue.resumeFlowKey('partner', key)).paused, false);
    const done = await until('partner', first, 'done');
    assert.deepEqual([done.key, done.attempts], [key, 1]);
    await queue.deleteSchedule('partner', id);
    assert.deepEqual(await refusal(queue.putSchedule('example', uid('s'), { every: 60, key: 'acme' })), [
      400,
      'VALIDATION_FAILED',
      ['key'],
    ]);
    assert.equal((await queue.putSchedule('example', uid('s'), { every: 3600, paused: true })).schedule.key, null);
  });

  it("a paused topic's due job does not start while another topic's does; GET /topics shows paused; after the resume it runs", async () => {
    await queue.pauseTopic('partner');
    await queue.pauseTopic('partner'); // twice is fine
    const topics = await queue.topics();
    assert.deepEqual(topics.map((t) => [t.topic, t.paused]).sort(), [
      ['example', false],
      ['partner', true],
      ['webhook', false],
    ]);
    const waiting = await queue.add({ topic: 'partner', id: uid('tp'), delay: 0, key: 'acme' });
    const control = await queue.add({ topic: 'example', id: uid('ctl'), delay: 0 });
    await until('example', control.id, 'done');
    assert.ok(
      ['delayed', 'ready'].includes((await queue.get('partner', waiting.id))!.state),
      'the paused topic’s job has not started',
    );

    await queue.resumeTopic('partner');
    await until('partner', waiting.id, 'done');
    assert.equal((await queue.topics()).find((t) => t.topic === 'partner')?.paused, false);
    assert.deepEqual(await refusal(queue.pauseTopic('nope')), [400, 'UNKNOWN_TOPIC', []]);
  });

  it('a read key reads a flow key but gets 403 on every change; a key limited to another topic gets 403', async () => {
    const make = async (scope: 'read' | 'write', topics?: string[]) => {
      const { secret } = await queue.createKey({ name: uid(scope), scope, ...(topics ? { topics } : {}) });
      return new DelayQueueClient({
        baseUrl: offline.baseUrl,
        token: secret,
        fetch: checkingFetch(contract, offline.baseUrl),
      });
    };
    const reader = await make('read');
    const key = uid('r');
    assert.equal((await reader.flowKey('partner', key)).key, key);
    for (const change of [
      () => reader.setFlowKey('partner', key, { concurrency: 1 }),
      () => reader.clearFlowKey('partner', key),
      () => reader.pauseFlowKey('partner', key),
      () => reader.resumeFlowKey('partner', key),
      () => reader.pauseTopic('partner'),
      () => reader.resumeTopic('partner'),
    ]) {
      assert.deepEqual(await refusal(change()), [403, 'FORBIDDEN', []]);
    }
    assert.equal((await queue.flowKey('partner', key)).paused, false, 'nothing changed');
    assert.equal((await queue.topics()).find((t) => t.topic === 'partner')?.paused, false);

    const limited = await make('write', ['example']);
    assert.deepEqual(await refusal(limited.flowKey('partner', key)), [403, 'FORBIDDEN', []]);
    assert.deepEqual(await refusal(limited.pauseTopic('partner')), [403, 'FORBIDDEN', []]);
  });
});
