/**
 * openapi.yaml against the running stack (redis-server + serverless offline): real requests for
 * every operation and every error code that can be produced on purpose, each answer checked
 * against the document (status, content type, required headers, body schema; accepted request
 * bodies against the request schema). Ends by requiring that every operation was exercised.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { PROJECT_ROOT, startOffline, type OfflineProcess } from '../support/offline';
import { Contract } from '../support/openapi';
import { startReceiver, type Receiver } from '../support/receiver';
import { startRedis, type RedisProcess } from '../support/redis';

const SECRET = 'openapi-webhook-secret';
// the Python openapi-spec-validator checks the document against the OAS 3.1 schema; optional
const SPEC_VALIDATOR = spawnSync('sh', ['-c', 'command -v openapi-spec-validator'], { encoding: 'utf8' }).stdout.trim();

interface Reply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the JSON answer of any endpoint; each test reads the fields it checks
  body: any;
  headers: Headers;
}

describe('openapi.yaml matches what the stack answers', () => {
  const contract = new Contract();
  let redisServer: RedisProcess;
  let offline: OfflineProcess;
  let receiver: Receiver;
  let seq = 0;
  const uid = (label: string) => `${label}-${process.pid}-${++seq}`;

  /**
   * A real request; its answer is checked against the document before it is returned, and an
   * answer that carries one job must send that job's version as its ETag.
   */
  async function call(
    method: string,
    url: string,
    body?: unknown,
    options: { token?: string | null; raw?: string; headers?: Record<string, string> } = {},
  ): Promise<Reply> {
    const token = options.token === undefined ? offline.token : options.token;
    const payload = options.raw ?? (body !== undefined ? JSON.stringify(body) : undefined);
    const res = await fetch(offline.baseUrl + url, {
      method,
      headers: {
        ...options.headers,
        ...(token !== null ? { authorization: `Bearer ${token}` } : {}),
        ...(payload !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(payload !== undefined ? { body: payload } : {}),
    });
    const text = await res.text();
    contract.check({
      method,
      url,
      ...(options.raw === undefined && body !== undefined ? { requestBody: body } : {}),
      status: res.status,
      headers: res.headers,
      text,
    });
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
    const job = (parsed as { job?: { version?: unknown } | null } | null)?.job;
    if (job !== undefined)
      assert.equal(
        res.headers.get('etag'),
        job === null ? null : `"${String(job.version)}"`,
        `${method} ${url} → ${res.status}: ETag of ${text.slice(0, 300)}`,
      );
    return { status: res.status, body: parsed, headers: res.headers };
  }

  /** Every page of a listing (`url` without cursor), following `next`; the pages' sizes and their jobs in order. */
  async function allPages(
    url: string,
  ): Promise<{ sizes: number[]; jobs: { id: string; state: string; runAt: string; group: string | null }[] }> {
    const sizes: number[] = [];
    const jobs = [];
    let next: string | null = null;
    do {
      const page: Reply = await call(
        'GET',
        next === null ? url : `${url}${url.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(next)}`,
      );
      assert.equal(page.status, 200, JSON.stringify(page.body));
      sizes.push(page.body.jobs.length);
      jobs.push(...page.body.jobs);
      next = page.body.next;
      if (sizes.length > 100) assert.fail(`${url}: more than 100 pages`);
    } while (next !== null);
    return { sizes, jobs };
  }

  /** The details paths of a 400 VALIDATION_FAILED. */
  function invalidPaths(reply: Reply): string[] {
    expectError(reply, 400, 'VALIDATION_FAILED');
    return reply.body.error.details.map((d: { path: string }) => d.path);
  }

  async function waitForState(topic: string, id: string, state: string): Promise<void> {
    // a ceiling, so a stuck job fails the test instead of hanging it: a slow machine only waits longer
    const end = Date.now() + 120_000;
    while ((await call('GET', `/jobs/${topic}/${id}`)).body.job?.state !== state) {
      if (Date.now() > end) assert.fail(`job ${topic}/${id} never reached ${state}`);
      await sleep(100);
    }
  }

  const expectError = (reply: Reply, status: number, code: string) =>
    assert.deepEqual([reply.status, reply.body?.error?.code], [status, code]);

  before(async () => {
    [redisServer, receiver] = await Promise.all([startRedis(), startReceiver(SECRET)]);
    offline = await startOffline({ redisUrl: redisServer.url, env: { WEBHOOK_SECRET: SECRET } });
  });
  after(async () => {
    await offline?.stop();
    await receiver?.close();
    await redisServer?.stop();
  });

  it('the document itself: its schemas compile in strict mode and every example matches its schema', () => {
    assert.equal(contract.doc.openapi, '3.1.0');
    for (const name of Object.keys(contract.doc.components.schemas))
      contract.validator({ $ref: `#/components/schemas/${name}` }, `schema ${name}`);
    assert.ok(contract.checkExamples() >= 15);
  });

  it(
    'the document is valid OpenAPI 3.1 (openapi-spec-validator, when installed)',
    { skip: SPEC_VALIDATOR === '' && 'openapi-spec-validator is not installed' },
    () => {
      const run = spawnSync(SPEC_VALIDATOR, [join(PROJECT_ROOT, 'openapi.yaml')], { encoding: 'utf8' });
      assert.equal(run.status, 0, run.stdout + run.stderr);
      assert.match(run.stdout, /OK/);
    },
  );

  it('routes in serverless.yml and paths in the document are the same set', () => {
    const yml = readFileSync(join(PROJECT_ROOT, 'serverless.yml'), 'utf8');
    const routes = [...yml.matchAll(/httpApi:\s*\{\s*method:\s*(\w+),\s*path:\s*(?:'([^']+)'|([^\s,}]+))/g)].map(
      (m) => `${m[1]!.toUpperCase()} ${m[2] ?? m[3]}`,
    );
    assert.deepEqual(routes.sort(), contract.operations().sort());
  });

  it('adds: 201, 409 JOB_EXISTS, 400 VALIDATION_FAILED / INVALID_JSON / UNKNOWN_TOPIC, 401, 413', async () => {
    const id = uid('add');
    const created = await call('POST', '/jobs', { topic: 'example', id, delay: 3600, body: { orderId: 7 } });
    assert.equal(created.status, 201);
    assert.equal(created.headers.get('location'), `/jobs/example/${id}`);
    assert.equal(
      (
        await call('POST', '/jobs', {
          topic: 'example',
          runAt: new Date(Date.now() + 60_000).toISOString(),
          backoff: '15s 3m 10m',
          ttr: 5,
          body: 'text',
        })
      ).status,
      201,
    );
    assert.equal(
      (
        await call('POST', '/jobs', {
          topic: 'example',
          runAt: Date.now() + 60_000,
          backoff: { type: 'fixed', delay: 3 },
          maxAttempts: 2,
          body: [1, null],
        })
      ).status,
      201,
    );
    assert.equal(
      (await call('POST', '/jobs', { topic: 'example', delay: 60, backoff: { type: 'exponential', delay: 1 } })).status,
      201,
    );
    assert.equal(
      (
        await call('POST', '/jobs', {
          topic: 'webhook',
          delay: 3600,
          url: `${receiver.url}/ok/x`,
          backoff: { type: 'ladder', delays: [1, 2] },
        })
      ).status,
      201,
    );

    const exists = await call('POST', '/jobs', { topic: 'example', id, delay: 1, body: { orderId: 8 } });
    expectError(exists, 409, 'JOB_EXISTS');
    assert.deepEqual(exists.body.job.body, { orderId: 7 });

    const invalid = await call('POST', '/jobs', { topic: 'example', delay: -1, dealy: 3 });
    expectError(invalid, 400, 'VALIDATION_FAILED');
    assert.equal(invalid.body.error.details.length, 2);
    expectError(
      await call('POST', '/jobs', { topic: 'example', delay: 1, runAt: 0, backoff: 'soon' }),
      400,
      'VALIDATION_FAILED',
    );
    expectError(await call('POST', '/jobs', [1, 2]), 400, 'VALIDATION_FAILED');
    expectError(await call('POST', '/jobs', undefined, { raw: '{"topic":' }), 400, 'INVALID_JSON');
    expectError(await call('POST', '/jobs', undefined, { raw: '' }), 400, 'INVALID_JSON');
    expectError(await call('POST', '/jobs', { topic: 'nope', delay: 1 }), 400, 'UNKNOWN_TOPIC');
    expectError(await call('POST', '/jobs', { topic: 'example', delay: 1 }, { token: null }), 401, 'UNAUTHORIZED');
    expectError(await call('POST', '/jobs', { topic: 'example', delay: 1 }, { token: 'wrong' }), 401, 'UNAUTHORIZED');
    expectError(
      await call('POST', '/jobs', { topic: 'example', delay: 1, body: 'x'.repeat(70_000) }),
      413,
      'PAYLOAD_TOO_LARGE',
    );
  });

  it('keyed adds: 201, then 200 duplicateOf (with the job) or debounced; 400 naming the field; batch results too', async () => {
    const key = uid('dd');
    const first = await call('POST', '/jobs', { topic: 'example', delay: 3600, priority: 7, dedupe: { key } });
    assert.equal(first.status, 201);
    assert.match(first.body.job.id, new RegExp(`^${key}::[A-Za-z0-9_-]{16}$`));
    assert.equal(first.body.job.priority, 7);
    const again = await call('POST', '/jobs', { topic: 'example', delay: 1, dedupe: { key, window: '1h' } });
    assert.deepEqual(
      [again.status, again.body.duplicateOf, again.body.job.id],
      [200, first.body.job.id, first.body.job.id],
    );

    const bkey = uid('db');
    const waiting = await call('POST', '/jobs', { topic: 'example', body: 1, debounce: { key: bkey, period: '1h' } });
    assert.equal(waiting.status, 201);
    const folded = await call('POST', '/jobs', { topic: 'example', body: 2, debounce: { key: bkey, period: 3600 } });
    assert.deepEqual(
      [folded.status, folded.body.debounced, folded.body.job.id, folded.body.job.body],
      [200, true, waiting.body.job.id, 2],
    );
    for (const [input, path] of [
      [{ topic: 'example', delay: 1, debounce: { key: bkey, period: 1 } }, 'delay'],
      [{ topic: 'example', delay: 1, dedupe: { key }, id: 'other' }, 'id'],
      [{ topic: 'example', delay: 1, dedupe: { key: 'a::b' } }, 'dedupe.key'],
      [{ topic: 'example', delay: 1, priority: 1001 }, 'priority'],
    ] as const) {
      const refused = await call('POST', '/jobs', input);
      expectError(refused, 400, 'VALIDATION_FAILED');
      assert.ok(
        refused.body.error.details.some((d: { path: string }) => d.path === path),
        `${JSON.stringify(input)} names ${path}`,
      );
    }

    const batch = await call('POST', '/jobs/batch', {
      jobs: [
        { topic: 'example', delay: 1, dedupe: { key } },
        { topic: 'example', body: 3, debounce: { key: bkey, period: 3600 } },
        { topic: 'example', delay: 3600, dedupe: { key: uid('dd') } },
      ],
    });
    assert.deepEqual(
      batch.body.results.map((r: { status: number; duplicateOf?: string; debounced?: boolean }) => [
        r.status,
        r.duplicateOf ?? r.debounced ?? null,
      ]),
      [
        [200, first.body.job.id],
        [200, true],
        [201, null],
      ],
    );
  });

  it('batch adds: 200 with 201 / 400 / 409 / 413 results, 400 for an empty or malformed batch, 401', async () => {
    const id = uid('batch');
    const batch = await call('POST', '/jobs/batch', {
      jobs: [
        { topic: 'example', id, delay: 3600 },
        { topic: 'example', delay: -1 },
        { topic: 'example', id, delay: 1 },
        { topic: 'example', delay: 1, body: 'x'.repeat(70_000) },
        { topic: 'nope', delay: 1 },
      ],
    });
    assert.equal(batch.status, 200);
    assert.deepEqual(
      batch.body.results.map((r: { status: number }) => r.status),
      [201, 400, 409, 413, 400],
    );
    expectError(await call('POST', '/jobs/batch', { jobs: [] }), 400, 'VALIDATION_FAILED');
    expectError(
      await call('POST', '/jobs/batch', { jobs: Array.from({ length: 501 }, () => ({ topic: 'example', delay: 1 })) }),
      400,
      'VALIDATION_FAILED',
    );
    expectError(await call('POST', '/jobs/batch', undefined, { raw: 'jobs' }), 400, 'INVALID_JSON');
    expectError(await call('POST', '/jobs/batch', { jobs: [] }, { token: null }), 401, 'UNAUTHORIZED');
  });

  it('read, replace, cancel: 200, 201, 404, 409 JOB_FINISHED, 400', async () => {
    const id = uid('job');
    await call('POST', '/jobs', { topic: 'example', id, delay: 3600, body: { v: 1 } });
    const got = await call('GET', `/jobs/example/${id}`);
    assert.deepEqual([got.status, got.body.job.state, got.body.job.body], [200, 'delayed', { v: 1 }]);
    expectError(await call('GET', `/jobs/example/${uid('missing')}`), 404, 'NOT_FOUND');
    expectError(await call('GET', '/jobs/example/bad%20id'), 400, 'VALIDATION_FAILED');
    expectError(await call('GET', `/jobs/nope/${id}`), 400, 'UNKNOWN_TOPIC');
    expectError(await call('GET', `/jobs/example/${id}`, undefined, { token: null }), 401, 'UNAUTHORIZED');

    const replaced = await call('PUT', `/jobs/example/${id}`, { delay: 7200, body: { v: 2 } });
    assert.deepEqual([replaced.status, replaced.body.job.body], [200, { v: 2 }]);
    const fresh = uid('put');
    const created = await call('PUT', `/jobs/example/${fresh}`, {
      runAt: new Date(Date.now() + 3_600_000).toISOString(),
      topic: 'example',
      id: fresh,
    });
    assert.equal(created.status, 201);
    assert.equal(created.headers.get('location'), `/jobs/example/${fresh}`);
    expectError(await call('PUT', `/jobs/example/${id}`, { id: 'other', delay: 1 }), 400, 'VALIDATION_FAILED');
    expectError(await call('PUT', `/jobs/example/${id}`, undefined, { raw: '{' }), 400, 'INVALID_JSON');
    expectError(
      await call('PUT', `/jobs/example/${id}`, { delay: 1, body: 'x'.repeat(70_000) }),
      413,
      'PAYLOAD_TOO_LARGE',
    );

    const cancelled = await call('DELETE', `/jobs/example/${id}`);
    assert.deepEqual([cancelled.status, cancelled.body.job.state], [200, 'cancelled']);
    expectError(await call('DELETE', `/jobs/example/${uid('missing')}`), 404, 'NOT_FOUND');
    expectError(await call('DELETE', '/jobs/example/bad%20id'), 400, 'VALIDATION_FAILED');

    const done = uid('done');
    await call('POST', '/jobs', { topic: 'example', id: done, delay: 0 });
    await waitForState('example', done, 'done');
    const finished = await call('PUT', `/jobs/example/${done}`, { delay: 5 });
    expectError(finished, 409, 'JOB_FINISHED');
    assert.equal(finished.body.job.state, 'done');
    const notCancelled = await call('DELETE', `/jobs/example/${done}`);
    expectError(notCancelled, 409, 'JOB_FINISHED');
    expectError(await call('DELETE', `/jobs/example/${done}`, undefined, { token: null }), 401, 'UNAUTHORIZED');
    expectError(await call('PUT', `/jobs/example/${done}`, { delay: 5 }, { token: null }), 401, 'UNAUTHORIZED');
  });

  it('topics, dead jobs and redrive: 200, 400, 401', async () => {
    const topics = await call('GET', '/topics');
    assert.deepEqual(topics.body.topics.map((t: { topic: string }) => t.topic).sort(), [
      'example',
      'partner',
      'webhook',
    ]);
    expectError(await call('GET', '/topics', undefined, { token: null }), 401, 'UNAUTHORIZED');

    const ids = [uid('dead'), uid('dead')];
    for (const id of ids)
      await call('POST', '/jobs', {
        topic: 'webhook',
        id,
        delay: 0,
        url: `${receiver.url}/fail/${id}`,
        maxAttempts: 1,
      });
    for (const id of ids) await waitForState('webhook', id, 'dead');
    const page = await call('GET', '/topics/webhook/dead?limit=1');
    assert.equal(page.body.jobs.length, 1);
    assert.match(page.body.jobs[0].lastError, /HTTP 500/);
    assert.equal(typeof page.body.next, 'string');
    const rest = await call('GET', `/topics/webhook/dead?limit=100&after=${page.body.next}`);
    assert.equal(rest.status, 200);
    assert.ok(
      !rest.body.jobs.some((j: { id: string }) => j.id === page.body.jobs[0].id),
      'the next page starts after the cursor',
    );
    expectError(await call('GET', '/topics/webhook/dead?after=0'), 400, 'VALIDATION_FAILED');
    expectError(await call('GET', '/topics/webhook/dead?after=not-a-cursor'), 400, 'VALIDATION_FAILED');
    assert.equal((await call('GET', '/topics/webhook/dead')).body.jobs.length, 2);
    expectError(await call('GET', '/topics/webhook/dead?limit=0'), 400, 'VALIDATION_FAILED');
    expectError(await call('GET', '/topics/nope/dead'), 400, 'UNKNOWN_TOPIC');
    expectError(await call('GET', '/topics/webhook/dead', undefined, { token: null }), 401, 'UNAUTHORIZED');

    assert.deepEqual((await call('POST', '/topics/webhook/dead/redrive', { ids: [ids[0]] })).body, { redriven: 1 });
    assert.equal((await call('POST', '/topics/webhook/dead/redrive', { count: 5 })).status, 200);
    assert.equal((await call('POST', '/topics/webhook/dead/redrive')).status, 200);
    expectError(
      await call('POST', '/topics/webhook/dead/redrive', { ids: [], count: 0, extra: 1 }),
      400,
      'VALIDATION_FAILED',
    );
    expectError(await call('POST', '/topics/webhook/dead/redrive', undefined, { raw: '[' }), 400, 'INVALID_JSON');
    expectError(await call('POST', '/topics/nope/dead/redrive', { count: 1 }), 400, 'UNKNOWN_TOPIC');
    expectError(await call('POST', '/topics/webhook/dead/redrive', {}, { token: null }), 401, 'UNAUTHORIZED');
  });

  it('versions: ETag "<version>" on single-job answers; If-Match on PUT and DELETE: 200, 412 VERSION_MISMATCH with the current job, 400 naming If-Match', async () => {
    const id = uid('ver');
    const created = await call('POST', '/jobs', {
      topic: 'example',
      id,
      delay: 3600,
      group: 'ver-group',
      body: { v: 1 },
    });
    assert.equal(created.status, 201);
    assert.deepEqual([typeof created.body.job.version, created.body.job.group], ['number', 'ver-group']);
    const v1: number = created.body.job.version;
    const got = await call('GET', `/jobs/example/${id}`);
    assert.equal(got.headers.get('etag'), `"${v1}"`);
    const exists = await call('POST', '/jobs', { topic: 'example', id, delay: 1 });
    assert.deepEqual([exists.status, exists.headers.get('etag')], [409, `"${v1}"`]);

    const stale = await call(
      'PUT',
      `/jobs/example/${id}`,
      { delay: 60, body: { v: 'stale' } },
      { headers: { 'if-match': `"${v1 + 1}"` } },
    );
    expectError(stale, 412, 'VERSION_MISMATCH');
    assert.deepEqual(stale.body.job, got.body.job, 'the job as it is, unchanged');
    assert.deepEqual((await call('GET', `/jobs/example/${id}`)).body.job, got.body.job);

    const replaced = await call(
      'PUT',
      `/jobs/example/${id}`,
      { delay: 7200, body: { v: 2 } },
      { headers: { 'if-match': `"${v1}"` } },
    );
    assert.deepEqual([replaced.status, replaced.body.job.body], [200, { v: 2 }]);
    const v2: number = replaced.body.job.version;
    assert.ok(v2 > v1, `version ${v1} -> ${v2}`);
    const any = await call(
      'PUT',
      `/jobs/example/${id}`,
      { delay: 7200, body: { v: 3 } },
      { headers: { 'if-match': '*' } },
    );
    assert.equal(any.status, 200);
    const v3: number = any.body.job.version;
    assert.ok(v3 > v2, `version ${v2} -> ${v3}`);

    const absent = uid('ver-absent');
    const none = await call('PUT', `/jobs/example/${absent}`, { delay: 60 }, { headers: { 'if-match': '*' } });
    expectError(none, 412, 'VERSION_MISMATCH');
    assert.equal(none.body.job, null);
    expectError(await call('GET', `/jobs/example/${absent}`), 404, 'NOT_FOUND');

    const notCancelled = await call('DELETE', `/jobs/example/${id}`, undefined, { headers: { 'if-match': `"${v2}"` } });
    expectError(notCancelled, 412, 'VERSION_MISMATCH');
    assert.deepEqual([notCancelled.body.job.state, notCancelled.body.job.version], ['delayed', v3]);
    const cancelled = await call('DELETE', `/jobs/example/${id}`, undefined, { headers: { 'if-match': `"${v3}"` } });
    assert.deepEqual([cancelled.status, cancelled.body.job.state], [200, 'cancelled']);
    assert.ok(cancelled.body.job.version > v3);

    for (const value of ['3', 'W/"3"', '"abc"', '"3", "4"', '**']) {
      assert.deepEqual(
        invalidPaths(await call('PUT', `/jobs/example/${id}`, { delay: 1 }, { headers: { 'if-match': value } })),
        ['If-Match'],
        `PUT If-Match: ${value}`,
      );
      assert.deepEqual(
        invalidPaths(await call('DELETE', `/jobs/example/${id}`, undefined, { headers: { 'if-match': value } })),
        ['If-Match'],
        `DELETE If-Match: ${value}`,
      );
    }
    assert.equal(
      (await call('GET', `/jobs/example/${id}`)).body.job.state,
      'cancelled',
      'a refused If-Match changed nothing',
    );
    expectError(await call('PUT', `/jobs/example/${id}`, { delay: 1, group: 'bad group' }), 400, 'VALIDATION_FAILED');
  });

  it('groups: a cancel of 50 answers cancelled 50 and they end cancelled; a job added afterwards runs; pages with a cursor; 400, 401', async () => {
    const group = uid('grp');
    const ids = Array.from({ length: 50 }, (_, i) => `${group}-${String(i).padStart(2, '0')}`);
    const batch = await call('POST', '/jobs/batch', {
      jobs: ids.map((id) => ({ topic: 'example', id, delay: 3600, group, body: { id } })),
    });
    assert.deepEqual(
      batch.body.results.map((r: { status: number }) => r.status),
      ids.map(() => 201),
    );

    const before = await allPages(`/topics/example/groups/${group}?limit=20`);
    assert.ok(before.sizes.length >= 3 && before.sizes.every((n) => n <= 20), `page sizes ${before.sizes}`);
    assert.deepEqual(before.jobs.map((j) => j.id).sort(), ids, 'every job once');
    assert.ok(before.jobs.every((j) => j.group === group && j.state === 'delayed'));

    const cancel = await call('DELETE', `/topics/example/groups/${group}`);
    assert.deepEqual([cancel.status, cancel.body], [200, { cancelled: 50, running: 0 }]);
    const after = await allPages(`/topics/example/groups/${group}?limit=500`);
    assert.deepEqual(
      after.jobs.map((j) => [j.id, j.state]).sort(),
      ids.map((id) => [id, 'cancelled']),
    );
    assert.deepEqual(
      (await call('DELETE', `/topics/example/groups/${group}`)).body,
      { cancelled: 0, running: 0 },
      'cancelling twice is fine',
    );

    const later = `${group}-later`;
    assert.equal((await call('POST', '/jobs', { topic: 'example', id: later, delay: 0, group })).status, 201);
    await waitForState('example', later, 'done');
    const final = await allPages(`/topics/example/groups/${group}`);
    assert.deepEqual(
      final.jobs.map((j) => [j.id, j.state]).sort(),
      [...ids.map((id) => [id, 'cancelled']), [later, 'done']].sort(),
    );

    assert.deepEqual((await call('GET', `/topics/example/groups/${uid('empty')}`)).body, { jobs: [], next: null });
    assert.deepEqual((await call('DELETE', `/topics/example/groups/${uid('empty')}`)).body, {
      cancelled: 0,
      running: 0,
    });
    assert.deepEqual(invalidPaths(await call('GET', '/topics/example/groups/bad%20group')), ['group']);
    assert.deepEqual(invalidPaths(await call('DELETE', '/topics/example/groups/bad%20group')), ['group']);
    assert.deepEqual(invalidPaths(await call('GET', `/topics/example/groups/${'g'.repeat(129)}`)), ['group']);
    for (const limit of ['0', '501', 'ten'])
      assert.deepEqual(
        invalidPaths(await call('GET', `/topics/example/groups/${group}?limit=${limit}`)),
        ['limit'],
        `limit=${limit}`,
      );
    for (const cursor of ['%25%25%25', 'not-a-cursor'])
      assert.deepEqual(
        invalidPaths(await call('GET', `/topics/example/groups/${group}?cursor=${cursor}`)),
        ['cursor'],
        `cursor=${cursor}`,
      );
    expectError(await call('GET', `/topics/nope/groups/${group}`), 400, 'UNKNOWN_TOPIC');
    expectError(await call('DELETE', `/topics/nope/groups/${group}`), 400, 'UNKNOWN_TOPIC');
    expectError(await call('GET', `/topics/example/groups/${group}`, undefined, { token: null }), 401, 'UNAUTHORIZED');
    expectError(
      await call('DELETE', `/topics/example/groups/${group}`, undefined, { token: 'wrong' }),
      401,
      'UNAUTHORIZED',
    );
  });

  it('groups: no job of a cancelled group due in 3 s is delivered (but a job of another group due then is)', async () => {
    const group = uid('hooks');
    const ids = Array.from({ length: 10 }, (_, i) => `${group}-${i}`);
    const control = uid('control');
    const batch = await call('POST', '/jobs/batch', {
      jobs: [
        ...ids.map((id) => ({ topic: 'webhook', id, delay: 3, group, url: `${receiver.url}/ok/${id}` })),
        { topic: 'webhook', id: control, delay: 3, group: `${group}-other`, url: `${receiver.url}/ok/${control}` },
      ],
    });
    assert.ok(batch.body.results.every((r: { status: number }) => r.status === 201));
    const cancel = await call('DELETE', `/topics/webhook/groups/${group}`);
    assert.equal(cancel.status, 200);
    assert.equal(cancel.body.cancelled + cancel.body.running, ids.length, JSON.stringify(cancel.body));

    await waitForState('webhook', control, 'done'); // the pipeline delivered jobs due then
    await sleep(2000); // and a little longer, for any wrongly claimed job of the group to arrive
    const delivered = ids.filter((id) => receiver.of(id).length > 0);
    assert.ok(
      delivered.length <= cancel.body.running,
      `delivered ${delivered.length}, running at the cancel ${cancel.body.running}`,
    );
    const states = await allPages(`/topics/webhook/groups/${group}`);
    assert.deepEqual(
      states.jobs.map((j) => j.state),
      ids.map(() => 'cancelled'),
    );
  });

  it('listing a topic by state: delayed jobs page in runAt order (ties by id) within from..to inclusive; 400 per field, 401', async () => {
    const base = Date.now() + 200 * 86_400_000; // far after every other job of this file
    const prefix = uid('list');
    const jobs = Array.from({ length: 25 }, (_, i) => ({
      id: `${prefix}-${String((i * 7) % 25).padStart(2, '0')}`,
      runAt: base + (((i * 7) % 25) % 12) * 1000,
    }));
    const outside = [
      { id: `${prefix}-before`, runAt: base - 1 },
      { id: `${prefix}-after`, runAt: base + 11_001 },
    ];
    const batch = await call('POST', '/jobs/batch', {
      jobs: [...jobs, ...outside].map((j) => ({ topic: 'example', ...j })),
    });
    assert.ok(batch.body.results.every((r: { status: number }) => r.status === 201));
    const expected = [...jobs]
      .sort((a, b) => a.runAt - b.runAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((j) => [j.id, new Date(j.runAt).toISOString()]);

    const bounds = `from=${encodeURIComponent(new Date(base).toISOString())}&to=${base + 11_000}`;
    const listed = await allPages(`/topics/example/jobs?state=delayed&${bounds}&limit=10`);
    assert.ok(listed.sizes.length >= 3 && listed.sizes.every((n) => n <= 10), `page sizes ${listed.sizes}`);
    assert.deepEqual(
      listed.jobs.map((j) => [j.id, j.runAt]),
      expected,
    );
    assert.ok(listed.jobs.every((j) => j.state === 'delayed'));
    const byDefault = await call('GET', `/topics/example/jobs?${bounds}&limit=500`);
    assert.deepEqual(
      [byDefault.body.jobs.map((j: { id: string }) => j.id), byDefault.body.next],
      [expected.map(([id]) => id), null],
      'state defaults to delayed',
    );
    for (const state of ['ready', 'running', 'dead']) {
      const page = await call('GET', `/topics/example/jobs?state=${state}`);
      assert.equal(page.status, 200);
      assert.ok(
        page.body.jobs.every((j: { state: string }) => j.state === state),
        state,
      );
    }

    const first = await call('GET', `/topics/example/jobs?${bounds}&limit=5`);
    await call('POST', '/jobs/batch', {
      jobs: [1, 2].map(() => ({ topic: 'example', delay: 3600, group: `${prefix}-g` })),
    });
    const groupPage = await call('GET', `/topics/example/groups/${prefix}-g?limit=1`);
    assert.equal(typeof groupPage.body.next, 'string');
    for (const [query, field] of [
      ['state=done', 'state'],
      ['state=everything', 'state'],
      ['from=yesterday', 'from'],
      ['to=2027-13-45T00:00:00Z', 'to'],
      [`from=${base + 1000}&to=${base}`, 'from'],
      ['limit=0', 'limit'],
      ['limit=501', 'limit'],
      ['limit=1.5', 'limit'],
      ['cursor=%25%25%25', 'cursor'],
      ['cursor=not-a-cursor', 'cursor'],
      [`state=dead&cursor=${encodeURIComponent(first.body.next)}`, 'cursor'],
      [`cursor=${encodeURIComponent(groupPage.body.next ?? 'none')}`, 'cursor'],
    ] as const) {
      assert.deepEqual(invalidPaths(await call('GET', `/topics/example/jobs?${query}`)), [field], query);
    }
    expectError(await call('GET', '/topics/nope/jobs'), 400, 'UNKNOWN_TOPIC');
    expectError(await call('GET', '/topics/example/jobs', undefined, { token: null }), 401, 'UNAUTHORIZED');
  });

  it('schedules: put 201 then 200 (the pending occurrence replaced), get with its next 5 runs, pages by id, delete; 400 naming each field, 404, 401, 413', async () => {
    const compact = (at: string) => `${at.slice(0, 19).replace(/[-:]/g, '')}Z`;
    const prefix = uid('sched');
    const id = `${prefix}-a`;
    // at half past: the hourly schedule that replaces it (whole UTC hours) never has the same run time
    const created = await call('PUT', `/schedules/example/${id}`, {
      cron: '30 9 * * 1-5',
      timezone: 'Europe/Berlin',
      body: { report: 'daily' },
      catchUp: 'none',
      maxAttempts: 2,
      backoff: '15s 1m',
      ttr: 5,
      group: `${prefix}-g`,
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.headers.get('location'), `/schedules/example/${id}`);
    const schedule = created.body.schedule;
    assert.equal(schedule.nextRuns.length, 5);
    assert.deepEqual(schedule.pending, { id: `${id}:${compact(schedule.nextRuns[0])}`, runAt: schedule.nextRuns[0] });
    const got = await call('GET', `/schedules/example/${id}`);
    assert.deepEqual([got.status, got.body.schedule], [200, schedule]);
    assert.equal(
      (await call('GET', `/jobs/example/${encodeURIComponent(schedule.pending.id)}`)).body.job.state,
      'delayed',
    );

    const replaced = await call('PUT', `/schedules/example/${id}`, {
      every: 3600,
      body: { report: 'hourly' },
      jitter: 600,
    });
    assert.equal(replaced.status, 200);
    assert.notEqual(replaced.body.schedule.pending.id, schedule.pending.id);
    assert.equal(replaced.body.schedule.jitter, 600);
    const occurrence = (await call('GET', `/jobs/example/${encodeURIComponent(replaced.body.schedule.pending.id)}`))
      .body.job;
    const offset = Date.parse(occurrence.runAt) - Date.parse(replaced.body.schedule.pending.runAt);
    assert.ok(offset >= 0 && offset < 600_000, `the occurrence's job moves within the jitter: ${offset} ms`);
    // cancelled until the sweeper purges it
    const withdrawn = await call('GET', `/jobs/example/${encodeURIComponent(schedule.pending.id)}`);
    assert.ok(
      withdrawn.status === 404 || withdrawn.body.job.state === 'cancelled',
      `the old pending occurrence is withdrawn: ${JSON.stringify(withdrawn.body)}`,
    );
    const paused = await call('PUT', `/schedules/example/${id}`, { every: 60, paused: true });
    assert.deepEqual([paused.status, paused.body.schedule.pending, paused.body.schedule.nextRuns], [200, null, []]);
    const resumed = await call('POST', `/schedules/example/${id}/resume`);
    assert.deepEqual(
      [
        resumed.status,
        resumed.body.schedule.paused,
        resumed.body.schedule.every,
        resumed.body.schedule.nextRuns.length,
      ],
      [200, false, 60, 5],
      JSON.stringify(resumed.body),
    );
    assert.notEqual(resumed.body.schedule.pending, null, 'resumed: an occurrence is pending');
    const pausedAgain = await call('POST', `/schedules/example/${id}/pause`);
    assert.deepEqual(
      [
        pausedAgain.status,
        pausedAgain.body.schedule.paused,
        pausedAgain.body.schedule.pending,
        pausedAgain.body.schedule.nextRuns,
      ],
      [200, true, null, []],
    );
    assert.deepEqual(
      (await call('GET', `/schedules/example/${id}`)).body.schedule,
      pausedAgain.body.schedule,
      'a pause answers the schedule as GET shows it',
    );

    const ids = [id, ...['b', 'c', 'd', 'e'].map((x) => `${prefix}-${x}`)];
    for (const other of ids.slice(1))
      assert.equal((await call('PUT', `/schedules/example/${other}`, { every: 86400 })).status, 201);
    const listed: string[] = [];
    const sizes: number[] = [];
    let next: string | null = null;
    do {
      const page: Reply = await call(
        'GET',
        `/schedules?topic=example&limit=2${next === null ? '' : `&cursor=${encodeURIComponent(next)}`}`,
      );
      assert.equal(page.status, 200, JSON.stringify(page.body));
      sizes.push(page.body.schedules.length);
      listed.push(...page.body.schedules.map((x: { id: string }) => x.id));
      next = page.body.next;
      if (sizes.length > 20) assert.fail('more than 20 pages');
    } while (next !== null);
    assert.deepEqual(listed, ids, 'every schedule once, by id');
    assert.ok(sizes.length >= 3 && sizes.every((n) => n <= 2), `page sizes ${sizes}`);
    assert.deepEqual((await call('GET', '/schedules?topic=webhook')).body, { schedules: [], next: null });

    const deleted = await call('DELETE', `/schedules/example/${ids[1]}`);
    assert.deepEqual([deleted.status, deleted.body], [200, { deleted: true }]);
    expectError(await call('GET', `/schedules/example/${ids[1]}`), 404, 'NOT_FOUND');
    expectError(await call('DELETE', `/schedules/example/${ids[1]}`), 404, 'NOT_FOUND');

    for (const [body, field] of [
      [{ cron: '61 * * * *' }, 'cron'],
      [{ cron: '0 9 * * *', timezone: 'Mars/Olympus' }, 'timezone'],
      [{ cron: '0 9 * * *', every: 60 }, 'cron'],
      [{ body: 1 }, 'cron'],
      [{ every: 0 }, 'every'],
      [{ every: 5, timezone: 'UTC' }, 'timezone'],
      [{ every: 5, delay: 1 }, 'delay'],
    ] as const) {
      assert.deepEqual(
        invalidPaths(await call('PUT', `/schedules/example/${prefix}-bad`, body)),
        [field],
        JSON.stringify(body),
      );
    }
    assert.deepEqual(invalidPaths(await call('PUT', `/schedules/example/${'x'.repeat(112)}`, { every: 5 })), ['id']);
    assert.deepEqual(invalidPaths(await call('PUT', '/schedules/example/bad%20id', { every: 5 })), ['id']);
    expectError(await call('GET', `/schedules/example/${prefix}-bad`), 404, 'NOT_FOUND');
    const unknown = await call('PUT', `/schedules/nope/${prefix}`, { every: 5 });
    expectError(unknown, 400, 'UNKNOWN_TOPIC');
    assert.match(unknown.body.error.message, /topic "nope"/);
    expectError(await call('PUT', `/schedules/example/${id}`, undefined, { raw: '{' }), 400, 'INVALID_JSON');
    expectError(
      await call('PUT', `/schedules/example/${id}`, { every: 5, body: 'x'.repeat(70_000) }),
      413,
      'PAYLOAD_TOO_LARGE',
    );
    assert.deepEqual(invalidPaths(await call('GET', '/schedules/example/bad%20id')), ['id']);
    assert.deepEqual(invalidPaths(await call('DELETE', '/schedules/example/bad%20id')), ['id']);
    for (const action of ['pause', 'resume']) {
      expectError(await call('POST', `/schedules/example/${ids[1]}/${action}`), 404, 'NOT_FOUND');
      assert.deepEqual(invalidPaths(await call('POST', `/schedules/example/bad%20id/${action}`)), ['id'], action);
      expectError(await call('POST', `/schedules/nope/${id}/${action}`), 400, 'UNKNOWN_TOPIC');
      expectError(
        await call('POST', `/schedules/example/${id}/${action}`, undefined, { token: null }),
        401,
        'UNAUTHORIZED',
      );
    }
    expectError(await call('GET', `/schedules/nope/${id}`), 400, 'UNKNOWN_TOPIC');
    expectError(await call('DELETE', `/schedules/nope/${id}`), 400, 'UNKNOWN_TOPIC');
    assert.deepEqual(invalidPaths(await call('GET', '/schedules')), ['topic']);
    for (const limit of ['0', '101', 'ten'])
      assert.deepEqual(
        invalidPaths(await call('GET', `/schedules?topic=example&limit=${limit}`)),
        ['limit'],
        `limit=${limit}`,
      );
    for (const cursor of ['%25%25%25', 'not-a-cursor'])
      assert.deepEqual(
        invalidPaths(await call('GET', `/schedules?topic=example&cursor=${cursor}`)),
        ['cursor'],
        `cursor=${cursor}`,
      );
    expectError(await call('GET', '/schedules?topic=nope'), 400, 'UNKNOWN_TOPIC');
    expectError(await call('PUT', `/schedules/example/${id}`, { every: 5 }, { token: null }), 401, 'UNAUTHORIZED');
    expectError(await call('GET', `/schedules/example/${id}`, undefined, { token: 'wrong' }), 401, 'UNAUTHORIZED');
    expectError(await call('DELETE', `/schedules/example/${id}`, undefined, { token: null }), 401, 'UNAUTHORIZED');
    expectError(await call('GET', '/schedules?topic=example', undefined, { token: null }), 401, 'UNAUTHORIZED');
    assert.deepEqual(
      (await call('GET', `/schedules/example/${id}`)).body.schedule.every,
      60,
      'refused puts changed nothing',
    );
  });

  it('topic pause and resume; flow keys: read, pin, clear, pause, resume: 200, 400 (no flow control, bad key or change, unknown topic), 401', async () => {
    assert.deepEqual((await call('POST', '/topics/partner/pause')).body, { topic: 'partner', paused: true });
    assert.equal(
      (await call('GET', '/topics')).body.topics.find((t: { topic: string }) => t.topic === 'partner').paused,
      true,
    );
    assert.deepEqual((await call('POST', '/topics/partner/resume')).body, { topic: 'partner', paused: false });
    for (const action of ['pause', 'resume']) {
      expectError(await call('POST', `/topics/nope/${action}`), 400, 'UNKNOWN_TOPIC');
      expectError(await call('POST', `/topics/partner/${action}`, undefined, { token: null }), 401, 'UNAUTHORIZED');
    }

    const key = uid('tenant');
    const base = `/topics/partner/flows/${key}`;
    const read = await call('GET', base);
    assert.deepEqual([read.status, read.body.key, read.body.paused, read.body.pinned], [200, key, false, null]);
    const pinned = await call('PUT', base, { concurrency: 1, rate: { count: 3, per: '2s' } });
    assert.deepEqual(
      [pinned.status, pinned.body.limits],
      [200, { concurrency: 1, rate: { count: 3, per: 2, burst: 1 } }],
    );
    assert.deepEqual((await call('POST', `${base}/pause`)).body.paused, true);
    assert.deepEqual((await call('POST', `${base}/resume`)).body.paused, false);
    const cleared = await call('DELETE', base);
    assert.deepEqual([cleared.status, cleared.body.pinned], [200, null]);

    assert.deepEqual(
      invalidPaths(await call('PUT', base, { concurrency: 10_001, rate: { count: 0 }, paused: 1 })).sort(),
      ['concurrency', 'paused', 'rate.count'],
    );
    expectError(await call('PUT', base, undefined, { raw: '{' }), 400, 'INVALID_JSON');
    for (const [method, suffix] of [
      ['GET', ''],
      ['PUT', ''],
      ['DELETE', ''],
      ['POST', '/pause'],
      ['POST', '/resume'],
    ] as const) {
      const body = method === 'PUT' ? { paused: true } : undefined;
      assert.deepEqual(
        invalidPaths(await call(method, `/topics/example/flows/${key}${suffix}`, body)),
        ['topic'],
        `${method} on a topic with no flow control`,
      );
      assert.deepEqual(
        invalidPaths(await call(method, `/topics/partner/flows/bad%20key${suffix}`, body)),
        ['key'],
        `${method} with a bad key`,
      );
      expectError(await call(method, `/topics/nope/flows/${key}${suffix}`, body), 400, 'UNKNOWN_TOPIC');
      expectError(await call(method, `${base}${suffix}`, body, { token: null }), 401, 'UNAUTHORIZED');
    }
  });

  it('the dashboard page: 200 text/html without a token, with its CSP and nosniff', async () => {
    const page = await call('GET', '/dashboard', undefined, { token: null });
    assert.equal(page.status, 200);
    assert.match(String(page.body), /<title>Delay queue<\/title>/);
  });

  it('GET / links to the dashboard and the API description, which GET /openapi.yaml serves: no token needed', async () => {
    const index = await call('GET', '/', undefined, { token: null });
    assert.equal(index.status, 200);
    assert.deepEqual([index.body.dashboard, index.body.api], ['/dashboard', '/openapi.yaml']);
    assert.match(index.headers.get('link') ?? '', /<\/openapi\.yaml>; rel="service-desc"/);
    const description = await call('GET', '/openapi.yaml', undefined, { token: null });
    assert.equal(description.status, 200);
    assert.equal(
      description.body,
      readFileSync(join(PROJECT_ROOT, 'openapi.yaml'), 'utf8'),
      "the repository's openapi.yaml",
    );
  });

  it('keys: every route × scope answers 403 FORBIDDEN below its scope and not above; topic limits; create 201/400/409, list without secrets, whoami, revoke 200/404 and refused within seconds, 409 for the last admin key', async () => {
    const make = async (name: string, scope: string, topics?: string[]) => {
      const reply = await call('POST', '/keys', { name, scope, ...(topics ? { topics } : {}) });
      assert.equal(reply.status, 201, JSON.stringify(reply.body));
      assert.equal(reply.headers.get('location'), `/keys/${name}`);
      assert.deepEqual(
        [reply.body.key.name, reply.body.key.scope, reply.body.key.createdBy, reply.body.key.source],
        [name, scope, 'deployment', 'api'],
      );
      return reply.body.secret as string;
    };
    const names = { read: uid('reader'), write: uid('writer'), admin: uid('admin'), limited: uid('limited') };
    const secrets = {
      read: await make(names.read, 'read'),
      write: await make(names.write, 'write'),
      admin: await make(names.admin, 'admin'),
      limited: await make(names.limited, 'write', ['example']),
    };
    assert.deepEqual(
      invalidPaths(
        await call('POST', '/keys', { name: 'deployment', scope: 'root', topics: ['nope'], extra: 1 }),
      ).sort(),
      ['extra', 'name', 'scope', 'topics.0'],
    );
    expectError(await call('POST', '/keys', { name: names.read, scope: 'read' }), 409, 'KEY_EXISTS');

    const who = await call('GET', '/whoami', undefined, { token: secrets.limited });
    assert.deepEqual(who.body, { key: { name: names.limited, scope: 'write', topics: ['example'] } });

    // who did what: each change records the key that made it
    const byId = uid('by');
    assert.equal(
      (await call('POST', '/jobs', { topic: 'example', id: byId, delay: 3600 }, { token: secrets.write })).body.job
        .updatedBy,
      names.write,
    );
    assert.equal((await call('GET', `/jobs/example/${byId}`)).body.job.updatedBy, names.write);
    assert.equal(
      (await call('DELETE', `/jobs/example/${byId}`, undefined, { token: secrets.admin })).body.job.updatedBy,
      names.admin,
    );
    assert.equal(
      (await call('PUT', `/schedules/example/${byId}`, { every: 3600, paused: true }, { token: secrets.limited })).body
        .schedule.updatedBy,
      names.limited,
    );
    assert.equal((await call('POST', '/jobs', { topic: 'example', delay: 3600 })).body.job.updatedBy, 'deployment');

    // every route of serverless.yml but the static ones, with the scope it needs
    const yml = readFileSync(join(PROJECT_ROOT, 'serverless.yml'), 'utf8');
    const routes = [...yml.matchAll(/httpApi:\s*\{\s*method:\s*(\w+),\s*path:\s*(?:'([^']+)'|([^\s,}]+))/g)]
      .map((m) => ({ method: m[1]!.toUpperCase(), path: (m[2] ?? m[3])! }))
      .filter((r) => !['/', '/dashboard', '/openapi.yaml'].includes(r.path));
    const needs = (r: { method: string; path: string }) =>
      r.path.startsWith('/keys') ? 'admin' : r.method === 'GET' ? 'read' : 'write';
    const rank: Record<string, number> = { read: 1, write: 2, admin: 3 };
    assert.ok(routes.length >= 28, `${routes.length} routes`);
    for (const route of routes) {
      const url =
        route.path
          .replace('{topic}', 'example')
          .replace('{id}', uid('walk'))
          .replace('{group}', uid('g'))
          .replace('{key}', uid('k'))
          .replace('{name}', uid('no-such-key')) + (route.path === '/schedules' ? '?topic=example' : '');
      // a pause or resume takes none
      const takesBody = route.method === 'PUT' || (route.method === 'POST' && !/\/(pause|resume)$/.test(route.path));
      const body = takesBody ? {} : undefined;
      for (const scope of ['read', 'write', 'admin'] as const) {
        const reply = await call(route.method, url, body, { token: secrets[scope] });
        const what = `${route.method} ${route.path} with a ${scope} key → ${reply.status} ${JSON.stringify(reply.body).slice(0, 200)}`;
        if (rank[scope]! < rank[needs(route)]!) {
          expectError(reply, 403, 'FORBIDDEN');
          assert.match(reply.body.error.message, new RegExp(`needs scope ${needs(route)}`), what);
        } else assert.ok(reply.status !== 403 && reply.status !== 401, what);
      }
      if (route.path.includes('{topic}')) {
        const other = await call(route.method, url.replace('/example', '/webhook'), body, { token: secrets.limited });
        expectError(other, 403, 'FORBIDDEN');
        assert.match(other.body.error.message, /may not use topic webhook/);
      }
    }
    assert.equal(
      (await call('POST', '/topics/example/resume')).status,
      200,
      'the walk paused topic example, and resumed it',
    );

    // a key limited to topic example: other topics are refused wherever the topic comes from
    const limited = { token: secrets.limited };
    expectError(await call('GET', `/jobs/webhook/${uid('x')}`, undefined, limited), 403, 'FORBIDDEN');
    expectError(
      await call('POST', '/jobs', { topic: 'webhook', delay: 60, url: 'https://example.com/hook' }, limited),
      403,
      'FORBIDDEN',
    );
    expectError(await call('GET', '/schedules?topic=webhook', undefined, limited), 403, 'FORBIDDEN');
    const batch = await call(
      'POST',
      '/jobs/batch',
      {
        jobs: [
          { topic: 'example', delay: 60 },
          { topic: 'webhook', delay: 60, url: 'https://example.com/hook' },
        ],
      },
      limited,
    );
    assert.deepEqual(
      batch.body.results.map((r: { status: number }) => r.status),
      [201, 403],
    );
    assert.deepEqual(
      (await call('GET', '/topics', undefined, limited)).body.topics.map((t: { topic: string }) => t.topic),
      ['example'],
    );

    const listed = await call('GET', '/keys');
    assert.equal(listed.body.keys[0].name, 'deployment');
    for (const [scope, name] of Object.entries(names))
      assert.ok(
        listed.body.keys.some((k: { name: string }) => k.name === name),
        `${scope} key listed`,
      );
    for (const secret of Object.values(secrets))
      assert.ok(!JSON.stringify(listed.body).includes(secret), 'no secret in the listing');
    assert.ok(
      listed.body.keys.find((k: { name: string }) => k.name === names.read).lastUsedAt !== null,
      'the reader was used',
    );

    // revoked: refused on the warm instance within seconds (it looks again 2 s after it last did)
    assert.deepEqual((await call('DELETE', `/keys/${names.read}`, undefined, { token: secrets.admin })).body, {
      revoked: true,
    });
    expectError(await call('DELETE', `/keys/${names.read}`), 404, 'NOT_FOUND');
    const end = Date.now() + 30_000;
    while ((await call('GET', '/whoami', undefined, { token: secrets.read })).status !== 401) {
      if (Date.now() > end) assert.fail('the revoked key still works after 30 s');
      await sleep(100);
    }
    expectError(await call('GET', '/topics', undefined, { token: secrets.read }), 401, 'UNAUTHORIZED');
    for (const name of [names.write, names.admin, names.limited])
      assert.equal((await call('DELETE', `/keys/${name}`)).status, 200);
    // no named admin key left: the deployment's key is the last that may manage keys, and stays
    const last = await call('DELETE', '/keys/deployment');
    expectError(last, 409, 'LAST_ADMIN_KEY');
    assert.match(last.body.error.message, /last key with the admin scope/);
    assert.equal((await call('GET', '/keys')).status, 200, 'the deployment key still works');
  });

  it('503 UNAVAILABLE with Retry-After while Redis is down; then every operation was exercised', async () => {
    const port = redisServer.port;
    await redisServer.stop();
    expectError(await call('GET', '/topics'), 503, 'UNAVAILABLE');
    expectError(await call('POST', '/jobs', { topic: 'example', delay: 1 }), 503, 'UNAVAILABLE');
    expectError(await call('GET', '/jobs/example/x'), 503, 'UNAVAILABLE');
    expectError(await call('GET', '/topics/example/jobs'), 503, 'UNAVAILABLE');
    expectError(await call('GET', '/topics/example/groups/g'), 503, 'UNAVAILABLE');
    expectError(await call('DELETE', '/topics/example/groups/g'), 503, 'UNAVAILABLE');
    expectError(await call('PUT', '/schedules/example/s', { every: 5 }), 503, 'UNAVAILABLE');
    expectError(await call('GET', '/schedules/example/s'), 503, 'UNAVAILABLE');
    expectError(await call('DELETE', '/schedules/example/s'), 503, 'UNAVAILABLE');
    expectError(await call('GET', '/schedules?topic=example'), 503, 'UNAVAILABLE');
    expectError(await call('POST', '/schedules/example/s/pause'), 503, 'UNAVAILABLE');
    expectError(await call('POST', '/schedules/example/s/resume'), 503, 'UNAVAILABLE');
    redisServer = await startRedis({ port });

    const missing = contract.operations().filter((op) => !contract.seen.has(op));
    assert.deepEqual(missing, [], 'operations never exercised');
    const seen = Object.fromEntries([...contract.seen].map(([op, statuses]) => [op, [...statuses].sort()]));
    assert.deepEqual(seen, {
      'POST /jobs': [200, 201, 400, 401, 403, 409, 413, 503],
      'POST /jobs/batch': [200, 400, 401, 403],
      'GET /jobs/{topic}/{id}': [200, 400, 401, 403, 404, 503],
      'PUT /jobs/{topic}/{id}': [200, 201, 400, 401, 403, 409, 412, 413],
      'DELETE /jobs/{topic}/{id}': [200, 400, 401, 403, 404, 409, 412],
      'GET /topics': [200, 401, 503],
      'GET /topics/{topic}/dead': [200, 400, 401, 403],
      'POST /topics/{topic}/dead/redrive': [200, 400, 401, 403],
      'GET /topics/{topic}/jobs': [200, 400, 401, 403, 503],
      'GET /topics/{topic}/groups/{group}': [200, 400, 401, 403, 503],
      'DELETE /topics/{topic}/groups/{group}': [200, 400, 401, 403, 503],
      'POST /topics/{topic}/pause': [200, 400, 401, 403],
      'POST /topics/{topic}/resume': [200, 400, 401, 403],
      'GET /topics/{topic}/flows/{key}': [200, 400, 401, 403],
      'PUT /topics/{topic}/flows/{key}': [200, 400, 401, 403],
      'DELETE /topics/{topic}/flows/{key}': [200, 400, 401, 403],
      'POST /topics/{topic}/flows/{key}/pause': [200, 400, 401, 403],
      'POST /topics/{topic}/flows/{key}/resume': [200, 400, 401, 403],
      'PUT /schedules/{topic}/{id}': [200, 201, 400, 401, 403, 413, 503],
      'GET /schedules/{topic}/{id}': [200, 400, 401, 403, 404, 503],
      'DELETE /schedules/{topic}/{id}': [200, 400, 401, 403, 404, 503],
      'POST /schedules/{topic}/{id}/pause': [200, 400, 401, 403, 404, 503],
      'POST /schedules/{topic}/{id}/resume': [200, 400, 401, 403, 404, 503],
      'GET /schedules': [200, 400, 401, 403, 503],
      'POST /keys': [201, 400, 403, 409],
      'GET /keys': [200, 403],
      'DELETE /keys/{name}': [200, 403, 404, 409],
      'GET /whoami': [200, 401],
      'GET /dashboard': [200],
      'GET /': [200],
      'GET /openapi.yaml': [200],
    });
  });
});
