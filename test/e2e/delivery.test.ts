/**
 * End to end through `serverless offline` with a real redis-server: real HTTP calls to the API,
 * real Lambda-to-Lambda invokes (sweeper -> fan-out -> topic handlers), webhooks delivered to a
 * local receiver. Waits are bounded polls, never timing assertions.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { invokeFunction, startOffline, type OfflineProcess } from '../support/offline';
import { startReceiver, type Receiver } from '../support/receiver';
import { startRedis, type RedisProcess } from '../support/redis';
import { waitFor } from '../support/wait';
import { sweeperKeys } from '../../lib/testing';

const SECRET = 'e2e-webhook-secret';
// the stack signs with both while a new secret is rolled out (WEBHOOK_SECRET holds both)
const NEXT_SECRET = 'e2e-webhook-secret-next';

interface Reply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the JSON answer of any endpoint; each test reads the fields it checks
  body: any;
  headers: Headers;
}

describe('the stack under serverless offline', () => {
  let redisServer: RedisProcess;
  let redis: Redis;
  let offline: OfflineProcess;
  let receiver: Receiver;
  let seq = 0;
  const uid = (label: string) => `${label}-${process.pid}-${++seq}`;

  async function api(
    method: string,
    path: string,
    body?: unknown,
    token: string | null = offline.token,
    raw?: string,
  ): Promise<Reply> {
    const res = await fetch(offline.baseUrl + path, {
      method,
      headers: { ...(token !== null ? { authorization: `Bearer ${token}` } : {}), 'content-type': 'application/json' },
      ...(raw !== undefined ? { body: raw } : body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
  }

  const job = async (topic: string, id: string) => (await api('GET', `/jobs/${topic}/${id}`)).body?.job;
  const jobIn = (topic: string, id: string, ...states: string[]) =>
    waitFor(`job ${id} in state ${states.join('/')}`, async () => {
      const j = await job(topic, id);
      return states.includes(j?.state) ? j : undefined;
    });

  before(async () => {
    redisServer = await startRedis();
    redis = new Redis(redisServer.url);
    receiver = await startReceiver(SECRET, NEXT_SECRET);
    offline = await startOffline({ redisUrl: redisServer.url, env: { WEBHOOK_SECRET: `${NEXT_SECRET} ${SECRET}` } });
  });
  after(async () => {
    await offline?.stop();
    await receiver?.close();
    redis?.disconnect();
    await redisServer?.stop();
  });

  it('a job added with a 2 s delay reaches its handler once, then reads done with 1 attempt', async () => {
    const id = uid('once');
    const added = await api('POST', '/jobs', {
      topic: 'webhook',
      id,
      delay: 2,
      url: `${receiver.url}/ok/${id}`,
      body: { order: 42 },
    });
    assert.equal(added.status, 201);
    assert.equal(added.headers.get('location'), `/jobs/webhook/${id}`);
    const runAt = Date.parse(added.body.job.runAt);
    const done = await jobIn('webhook', id, 'done');
    assert.equal(done.attempts, 1);
    const got = receiver.of(id);
    assert.equal(got.length, 1);
    assert.ok(got[0]!.at >= runAt, 'not delivered before it was due');
    assert.equal(got[0]!.body, '{"order":42}');
    assert.equal(got[0]!.verified, true, 'the signature verifies with the shared secret');
    assert.deepEqual(
      got[0]!.verifiedBy,
      [SECRET, NEXT_SECRET],
      'a receiver that knows only the old secret, and one that knows only the new one, both verify it',
    );

    const exampleId = uid('example');
    assert.equal(
      (await api('POST', '/jobs', { topic: 'example', id: exampleId, delay: 2, body: { hello: 'world' } })).status,
      201,
    );
    const example = await jobIn('example', exampleId, 'done');
    assert.equal(example.attempts, 1);
    await sleep(1500);
    assert.equal(receiver.of(id).length, 1, 'still exactly one delivery');
  });

  it('a job deleted before it is due never runs; a rescheduled job runs at its new time', async () => {
    const gone = uid('gone');
    assert.equal(
      (await api('POST', '/jobs', { topic: 'webhook', id: gone, delay: 2, url: `${receiver.url}/ok/${gone}` })).status,
      201,
    );
    const deleted = await api('DELETE', `/jobs/webhook/${gone}`);
    assert.equal(deleted.status, 200);
    assert.equal(deleted.body.job.state, 'cancelled');

    const moved = uid('moved');
    assert.equal(
      (await api('POST', '/jobs', { topic: 'webhook', id: moved, delay: 300, url: `${receiver.url}/ok/${moved}` }))
        .status,
      201,
    );
    const put = await api('PUT', `/jobs/webhook/${moved}`, { delay: 1, url: `${receiver.url}/ok/${moved}` });
    assert.equal(put.status, 200);
    const newRunAt = Date.parse(put.body.job.runAt);
    await jobIn('webhook', moved, 'done');
    assert.ok(receiver.of(moved)[0]!.at >= newRunAt);
    await sleep(2500); // the deleted job's time has long passed
    assert.equal(receiver.of(gone).length, 0);
    assert.equal((await job('webhook', gone)).state, 'cancelled');
  });

  it('a handler that fails twice then succeeds: three attempts spaced by its backoff, then done', async () => {
    const id = uid('flaky');
    const added = await api('POST', '/jobs', {
      topic: 'webhook',
      id,
      delay: 0,
      url: `${receiver.url}/fail-2/${id}`,
      backoff: { type: 'fixed', delay: 1 },
      maxAttempts: 5,
    });
    assert.equal(added.status, 201);
    const done = await jobIn('webhook', id, 'done');
    assert.equal(done.attempts, 3);
    const got = receiver.of(id);
    assert.deepEqual(
      got.map((d) => d.attempt),
      ['1', '2', '3'],
    );
    for (let i = 1; i < got.length; i++)
      assert.ok(
        got[i]!.at - got[i - 1]!.at >= 1000,
        `attempt ${i + 1} came ${got[i]!.at - got[i - 1]!.at} ms after attempt ${i}`,
      );
  });

  it('a handler that always fails ends dead after maxAttempts, and comes back with redrive', async () => {
    const id = uid('doomed');
    await api('POST', '/jobs', {
      topic: 'webhook',
      id,
      delay: 0,
      url: `${receiver.url}/fail/${id}`,
      backoff: { type: 'fixed', delay: 0.5 },
      maxAttempts: 3,
    });
    const dead = await jobIn('webhook', id, 'dead');
    assert.equal(dead.attempts, 3);
    assert.match(dead.lastError, /HTTP 500/);
    assert.equal(receiver.of(id).length, 3);
    const list = await api('GET', '/topics/webhook/dead?limit=100');
    assert.equal(list.status, 200);
    assert.ok(
      list.body.jobs.some((j: { id: string; lastError: string }) => j.id === id && /HTTP 500/.test(j.lastError)),
    );

    // a receiver that failed once and then recovered: dead after its one attempt, redriven, delivered
    const healed = uid('healed');
    await api('POST', '/jobs', {
      topic: 'webhook',
      id: healed,
      delay: 0,
      url: `${receiver.url}/fail-1/${healed}`,
      maxAttempts: 1,
    });
    await jobIn('webhook', healed, 'dead');
    const redriven = await api('POST', '/topics/webhook/dead/redrive', { ids: [healed] });
    assert.deepEqual([redriven.status, redriven.body], [200, { redriven: 1 }]);
    const back = await jobIn('webhook', healed, 'done');
    assert.equal(back.attempts, 1, 'attempts start again after a redrive');
    assert.equal(receiver.of(healed).length, 2);
  });

  it('a handler that hangs past its ttr is retried', async () => {
    const id = uid('hang');
    await api('POST', '/jobs', {
      topic: 'webhook',
      id,
      delay: 0,
      url: `${receiver.url}/hang-1/${id}`,
      ttr: 2,
      backoff: { type: 'fixed', delay: 0.5 },
      maxAttempts: 3,
    });
    const done = await jobIn('webhook', id, 'done');
    assert.equal(done.attempts, 2);
    assert.equal(receiver.of(id).length, 2);
  });

  it('answers every error code with a real request, and a request without the token writes nothing', async () => {
    const before = (await api('GET', '/topics')).body.topics;
    const noToken = await api('POST', '/jobs', { topic: 'example', delay: 1 }, null);
    assert.deepEqual([noToken.status, noToken.body.error.code], [401, 'UNAUTHORIZED']);
    const wrongToken = await api('POST', '/jobs', { topic: 'example', delay: 1 }, offline.token.slice(0, -1) + 'x');
    assert.deepEqual([wrongToken.status, wrongToken.body.error.code], [401, 'UNAUTHORIZED']);
    assert.equal((await api('GET', '/topics', undefined, null)).status, 401);
    assert.deepEqual((await api('GET', '/topics')).body.topics, before, 'nothing was written');

    const invalid = await api('POST', '/jobs', { topic: 'example', delay: -5, maxAttempts: 0, extra: 1 });
    assert.equal(invalid.status, 400);
    assert.equal(invalid.body.error.code, 'VALIDATION_FAILED');
    assert.deepEqual(invalid.body.error.details.map((d: { path: string }) => d.path).sort(), [
      'delay',
      'extra',
      'maxAttempts',
    ]);
    const badJson = await api('POST', '/jobs', undefined, offline.token, '{"topic": ');
    assert.deepEqual([badJson.status, badJson.body.error.code], [400, 'INVALID_JSON']);
    const unknown = await api('POST', '/jobs', { topic: 'nope', delay: 1 });
    assert.deepEqual([unknown.status, unknown.body.error.code], [400, 'UNKNOWN_TOPIC']);
    const big = await api('POST', '/jobs', { topic: 'example', delay: 1, body: 'x'.repeat(70_000) });
    assert.deepEqual([big.status, big.body.error.code], [413, 'PAYLOAD_TOO_LARGE']);
    const missing = await api('GET', `/jobs/example/${uid('missing')}`);
    assert.deepEqual([missing.status, missing.body.error.code], [404, 'NOT_FOUND']);
    assert.equal((await api('DELETE', `/jobs/example/${uid('missing')}`)).status, 404);

    const id = uid('dup');
    assert.equal((await api('POST', '/jobs', { topic: 'example', id, delay: 60, body: 1 })).status, 201);
    const dup = await api('POST', '/jobs', { topic: 'example', id, delay: 60, body: 2 });
    assert.deepEqual([dup.status, dup.body.error.code, dup.body.job.body], [409, 'JOB_EXISTS', 1]);
    const doneId = uid('fin');
    await api('POST', '/jobs', { topic: 'example', id: doneId, delay: 0 });
    await jobIn('example', doneId, 'done');
    const finished = await api('PUT', `/jobs/example/${doneId}`, { delay: 5 });
    assert.deepEqual([finished.status, finished.body.error.code], [409, 'JOB_FINISHED']);
    assert.deepEqual((await api('DELETE', `/jobs/example/${doneId}`)).body.error.code, 'JOB_FINISHED');
    assert.equal((await api('DELETE', `/jobs/example/${id}`)).status, 200);

    const batch = await api('POST', '/jobs/batch', {
      jobs: [
        { topic: 'example', id: uid('b'), delay: 3600 },
        { topic: 'example', delay: -1 },
        { topic: 'example', id, delay: 1 },
      ],
    });
    assert.equal(batch.status, 200);
    assert.deepEqual(
      batch.body.results.map((r: { status: number }) => r.status),
      [201, 400, 409],
    );
    assert.equal(batch.body.results[1].error.code, 'VALIDATION_FAILED');
    assert.equal((await api('POST', '/jobs/batch', { jobs: [] })).status, 400);
  });

  it('the per-minute tick: the sweeper invoked through the Lambda API sweeps and reports', async () => {
    const tick = await invokeFunction(offline.lambdaUrl, 'sweeper', { source: 'tick' }, 'RequestResponse');
    assert.equal(tick.status, 200);
    assert.equal(tick.functionError, undefined);
    assert.ok(['idle', 'busy'].includes((tick.body as { outcome: string }).outcome), JSON.stringify(tick.body));
  });

  it('the sweeper does not poll Redis while nothing is due', async (t) => {
    await waitFor('nothing due within two minutes', async () => {
      const topics = (await api('GET', '/topics')).body.topics as {
        ready: number;
        running: number;
        nextDueAt: string | null;
      }[];
      return topics.every(
        (t) => t.ready + t.running === 0 && (t.nextDueAt === null || Date.parse(t.nextDueAt) > Date.now() + 120_000),
      );
    });
    // The window must hold no per-minute tick: offline fires it at second 0 of each minute, and on
    // a busy machine its sweeper may start seconds late and run for seconds. So the window is
    // [20 s, 50 s) into a minute, and opens only once no sweeper holds the lease.
    const WINDOW_MS = 10_000;
    const lease = sweeperKeys().lease;
    for (;;) {
      const intoMinute = Date.now() % 60_000;
      if (intoMinute < 20_000) await sleep(20_000 - intoMinute);
      else if (intoMinute + WINDOW_MS > 50_000) await sleep(60_000 - intoMinute + 20_000);
      await waitFor('no sweeper running', async () => (await redis.exists(lease)) === 0);
      const at = Date.now() % 60_000;
      if (at >= 20_000 && at + WINDOW_MS <= 50_000) break;
    }
    // What was sent, for the message if it fails (MONITOR shows commands scripts run, too).
    const monitor = await redis.monitor();
    const seen: string[] = [];
    monitor.on('monitor', (time: string, args: string[]) =>
      seen.push(`${time} ${args.slice(0, 3).join(' ').slice(0, 80)}`),
    );
    const count = async () => Number(/total_commands_processed:(\d+)/.exec(await redis.info('stats'))![1]);
    const first = await count();
    await sleep(WINDOW_MS);
    const commands = (await count()) - first - 1; // minus our own INFO
    monitor.disconnect();
    // A poller at even 10 Hz would send hundreds; an idle stack sends none.
    t.diagnostic(`${commands} Redis commands in 10 idle seconds`);
    assert.ok(commands <= 40, `${commands} Redis commands in 10 idle seconds:\n${seen.slice(0, 60).join('\n')}`);
  });

  it('answers 503 UNAVAILABLE while Redis is down and recovers by itself when it is back', async (t) => {
    const port = redisServer.port;
    redis.disconnect();
    await redisServer.stop();
    const asked = Date.now();
    const down = await api('GET', '/topics');
    t.diagnostic(`503 answered after ${Date.now() - asked} ms with Redis down`);
    assert.deepEqual([down.status, down.body.error.code], [503, 'UNAVAILABLE']);
    const add = await api('POST', '/jobs', { topic: 'example', delay: 1 });
    assert.equal(add.status, 503);
    redisServer = await startRedis({ port });
    redis = new Redis(redisServer.url);
    const back = await waitFor('the API to answer again', async () => {
      const r = await api('GET', '/topics');
      return r.status === 200 ? r : undefined;
    });
    assert.equal(back.body.topics.length, 3); // example, partner, webhook (serverless.yml)
    const id = uid('after-restart');
    assert.equal((await api('POST', '/jobs', { topic: 'example', id, delay: 0.5 })).status, 201);
    await jobIn('example', id, 'done');
  });
});
