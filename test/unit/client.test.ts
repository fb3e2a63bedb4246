/**
 * DelayQueueClient against a local HTTP server that plays the API and fails on cue: lost
 * answers, 5xx, 503 with Retry-After, hangs, non-JSON pages. Checks retries (and only of what is
 * safe to retry), the JOB_EXISTS-after-retry rule, timeouts, typed errors and request shapes.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { after, before, beforeEach, describe, it } from 'node:test';
import {
  DelayQueueClient,
  DelayQueueError,
  type FlowKeyState,
  type Job as ClientJob,
  type NewJob,
  type Schedule as ClientSchedule,
  type TopicStats as ClientTopicStats,
} from '../../lib/client';
import type { Job, Schedule, TopicStatsView as TopicStats } from '../../lib/engine';

// The client repeats the API's types so it can be copied alone; these keep the two in step.
const sameJob: [ClientJob extends Job ? true : false, Job extends ClientJob ? true : false] = [true, true];
const sameStats: [
  ClientTopicStats extends TopicStats ? true : false,
  TopicStats extends ClientTopicStats ? true : false,
] = [true, true];
const sameSchedule: [ClientSchedule extends Schedule ? true : false, Schedule extends ClientSchedule ? true : false] = [
  true,
  true,
];
// the same fields too: an optional field the client left out (a job's callback) passes the checks above
type SameKeys<A, B> = [Exclude<keyof A, keyof B>, Exclude<keyof B, keyof A>] extends [never, never] ? true : false;
const sameJobFields: SameKeys<ClientJob, Job> = true;
const sameCallback: [
  Required<ClientJob>['callback'] extends Required<Job>['callback'] ? true : false,
  Required<Job>['callback'] extends Required<ClientJob>['callback'] ? true : false,
] = [true, true];
void sameJob;
void sameJobFields;
void sameCallback;
void sameStats;
void sameSchedule;

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the JSON the test server received; each test reads the fields it checks
  body: any;
}
type Script = (req: Seen, res: ServerResponse, n: number) => void;

const TOKEN = 'unit-token';

function job(fields: Partial<ClientJob> = {}): ClientJob {
  const now = new Date().toISOString();
  return {
    topic: 'example',
    id: 'j1',
    state: 'delayed',
    runAt: now,
    createdAt: now,
    updatedAt: now,
    attempts: 0,
    maxAttempts: 5,
    ttr: 30,
    backoff: { type: 'fixed', delay: 1 },
    url: null,
    lastError: null,
    deadline: null,
    expiresAt: null,
    priority: 0,
    version: 1,
    group: null,
    key: null,
    updatedBy: null,
    body: null,
    attemptHistory: [],
    ...fields,
  };
}
function schedule(fields: Partial<ClientSchedule> = {}): ClientSchedule {
  const now = new Date().toISOString();
  return {
    topic: 'example',
    id: 's1',
    every: 10,
    catchUp: 'latest',
    paused: false,
    body: null,
    maxAttempts: 5,
    ttr: 30,
    backoff: { type: 'fixed', delay: 1 },
    url: null,
    group: null,
    key: null,
    jitter: null,
    expireAfter: null,
    priority: 0,
    version: 1,
    createdAt: now,
    updatedAt: now,
    updatedBy: null,
    pending: null,
    lastRunAt: null,
    nextRuns: [],
    ...fields,
  };
}
const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers }).end(JSON.stringify(body));
const apiError = (
  res: ServerResponse,
  status: number,
  code: string,
  extra: Record<string, unknown> = {},
  details?: unknown,
) =>
  json(res, status, {
    error: { code, message: `${code.toLowerCase()} happened`, ...(details !== undefined ? { details } : {}) },
    ...extra,
  });

describe('DelayQueueClient', () => {
  let server: Server;
  let baseUrl: string;
  let script: Script;
  let seen: Seen[];

  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const entry: Seen = {
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          body: text ? JSON.parse(text) : undefined,
        };
        seen.push(entry);
        script(entry, res, seen.length);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  beforeEach(() => {
    seen = [];
  });

  const client = (options: { retries?: number; timeoutMs?: number } = {}) =>
    new DelayQueueClient({ baseUrl, token: TOKEN, retryDelayMs: 5, ...options });

  it('add: sends the job with a bearer token and an id made on the client, returns the job', async () => {
    script = (req, res) => json(res, 201, { job: job({ id: req.body.id, body: req.body.body }) });
    const added = await client().add({ topic: 'example', delay: 5, body: { orderId: 1 } });
    assert.equal(seen.length, 1);
    assert.deepEqual([seen[0]!.method, seen[0]!.url], ['POST', '/jobs']);
    assert.equal(seen[0]!.headers.authorization, `Bearer ${TOKEN}`);
    assert.match(seen[0]!.headers['content-type'] ?? '', /^application\/json/);
    assert.match(seen[0]!.body.id, /^[0-9a-f-]{36}$/, 'a UUID, so a retry sends the same id');
    assert.deepEqual(seen[0]!.body, { topic: 'example', delay: 5, body: { orderId: 1 }, id: seen[0]!.body.id });
    assert.equal(added.id, seen[0]!.body.id);
    assert.deepEqual(added.body, { orderId: 1 });
  });

  it('add: retries a 503 (honouring Retry-After) and a 500, with the same id, then succeeds', async () => {
    script = (req, res, n) => {
      if (n === 1) return apiError(res, 503, 'UNAVAILABLE');
      if (n === 2) return apiError(res, 500, 'INTERNAL');
      json(res, 201, { job: job({ id: req.body.id }) });
    };
    const added = await client().add({ topic: 'example', id: 'order-1', delay: 5 });
    assert.equal(seen.length, 3);
    assert.deepEqual(
      seen.map((s) => s.body.id),
      ['order-1', 'order-1', 'order-1'],
    );
    assert.equal(added.id, 'order-1');
  });

  it('add: waits Retry-After seconds on a 503 before the retry', async () => {
    script = (req, res, n) => {
      if (n === 1) return json(res, 503, { error: { code: 'UNAVAILABLE', message: 'down' } }, { 'retry-after': '1' });
      json(res, 201, { job: job({ id: req.body.id }) });
    };
    const started = Date.now();
    await client().add({ topic: 'example', delay: 1 });
    const waited = Date.now() - started;
    assert.equal(seen.length, 2);
    // at least Retry-After; no upper bound: a busy machine stretches any wait
    assert.ok(waited >= 950, `waited ${waited} ms`);
  });

  it('add: an answer lost after the write, then JOB_EXISTS with the same body, is a success', async () => {
    let stored: ClientJob | undefined;
    script = (req, res, n) => {
      if (n === 1) {
        stored = job({ id: req.body.id, body: req.body.body });
        return res.destroy(); // written, but the answer never arrives
      }
      apiError(res, 409, 'JOB_EXISTS', { job: stored });
    };
    const added = await client().add({ topic: 'example', delay: 5, body: { a: [1, 2], b: 'x' } });
    assert.equal(seen.length, 2);
    assert.equal(seen[1]!.body.id, seen[0]!.body.id);
    assert.deepEqual(added, stored);
  });

  it('add: JOB_EXISTS with a different body after a retry, or on the first try, is an error carrying the job', async () => {
    script = (req, res, n) =>
      n === 1
        ? res.destroy()
        : apiError(res, 409, 'JOB_EXISTS', { job: job({ id: req.body.id, body: { other: true } }) });
    const retried = await client()
      .add({ topic: 'example', id: 'taken', delay: 5, body: { mine: true } })
      .catch((e: unknown) => e);
    assert.ok(retried instanceof DelayQueueError);
    assert.deepEqual([retried.status, retried.code, retried.job?.body], [409, 'JOB_EXISTS', { other: true }]);

    seen = [];
    script = (req, res) => apiError(res, 409, 'JOB_EXISTS', { job: job({ id: req.body.id, body: { mine: true } }) });
    const first = await client()
      .add({ topic: 'example', id: 'taken', delay: 5, body: { mine: true } })
      .catch((e: unknown) => e);
    assert.ok(first instanceof DelayQueueError);
    assert.equal(first.code, 'JOB_EXISTS');
    assert.equal(seen.length, 1, 'a 409 is not retried');
  });

  it('add: a 400 is not retried and carries code, status and every problem', async () => {
    const details = [
      { path: 'delay', message: 'must be ≥ 0' },
      { path: 'dealy', message: 'is not a job field' },
    ];
    script = (_req, res) => apiError(res, 400, 'VALIDATION_FAILED', {}, details);
    const error = await client()
      .add({ topic: 'example', delay: -1 })
      .catch((e: unknown) => e);
    assert.ok(error instanceof DelayQueueError);
    assert.deepEqual(
      [error.status, error.code, error.details, error.retryable, error.attempts],
      [400, 'VALIDATION_FAILED', details, false, 1],
    );
    assert.equal(error.message, 'validation_failed happened');
    assert.equal(seen.length, 1);
  });

  it('add: gives up after `retries` retries and reports the last failure', async () => {
    script = (_req, res) => apiError(res, 500, 'INTERNAL');
    const error = await client({ retries: 2 })
      .add({ topic: 'example', delay: 1 })
      .catch((e: unknown) => e);
    assert.ok(error instanceof DelayQueueError);
    assert.deepEqual([error.status, error.code, error.attempts], [500, 'INTERNAL', 3]);
    assert.equal(seen.length, 3);
    seen = [];
    await client({ retries: 0 })
      .add({ topic: 'example', delay: 1 })
      .catch(() => undefined);
    assert.equal(seen.length, 1);
  });

  it('times out a request that hangs (TIMEOUT, status 0), retries it, and succeeds when the server answers', async () => {
    script = (req, res, n) => {
      if (n === 1) return; // never answered
      json(res, 201, { job: job({ id: req.body.id }) });
    };
    const started = Date.now();
    await client({ timeoutMs: 300 }).add({ topic: 'example', delay: 1 });
    assert.equal(seen.length, 2);
    assert.ok(Date.now() - started >= 300);

    seen = [];
    script = () => undefined;
    const error = await client({ timeoutMs: 200, retries: 1 })
      .add({ topic: 'example', delay: 1 })
      .catch((e: unknown) => e);
    assert.ok(error instanceof DelayQueueError);
    assert.deepEqual([error.code, error.status, error.attempts, error.retryable], ['TIMEOUT', 0, 2, true]);
  });

  it('a connection refused is NETWORK_ERROR; a page that is not the API is BAD_RESPONSE', async () => {
    const closed = new DelayQueueClient({ baseUrl: 'http://127.0.0.1:1', token: TOKEN, retries: 1, retryDelayMs: 1 });
    const refused = await closed.topics().catch((e: unknown) => e);
    assert.ok(refused instanceof DelayQueueError);
    assert.deepEqual([refused.code, refused.status, refused.attempts], ['NETWORK_ERROR', 0, 2]);

    script = (_req, res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<html>Bad Gateway</html>');
    const bad = await client({ retries: 1 })
      .topics()
      .catch((e: unknown) => e);
    assert.ok(bad instanceof DelayQueueError);
    assert.deepEqual([bad.code, bad.status, bad.attempts], ['BAD_RESPONSE', 502, 2]);
  });

  it('the caller’s AbortSignal stops a call and its retries', async () => {
    const controller = new AbortController();
    // the caller gives up once the request has arrived (and its answer is still to come): no timer to race
    script = () => controller.abort(new Error('caller gave up'));
    const error = await client({ timeoutMs: 5000 })
      .add({ topic: 'example', delay: 1 }, { signal: controller.signal })
      .catch((e: unknown) => e);
    assert.equal((error as Error).message, 'caller gave up');
    assert.equal(seen.length, 1);
  });

  it('put, cancel and redrive are sent once, even on a 503', async () => {
    script = (_req, res) => apiError(res, 503, 'UNAVAILABLE');
    const c = client();
    for (const call of [
      () => c.put('example', 'j1', { delay: 1 }),
      () => c.cancel('example', 'j1'),
      () => c.redrive('example'),
    ]) {
      seen = [];
      const error = await call().catch((e: unknown) => e);
      assert.ok(error instanceof DelayQueueError);
      assert.equal(error.code, 'UNAVAILABLE');
      assert.equal(seen.length, 1);
    }
  });

  it('get (null on NOT_FOUND), put (created or replaced), cancel, topics, dead, redrive: paths, bodies, results', async () => {
    const stats: ClientTopicStats[] = [
      {
        topic: 'example',
        flow: false,
        paused: false,
        expired: 0,
        delayed: 1,
        ready: 0,
        running: 0,
        dead: 2,
        nextDueAt: null,
        lateness: { windowSeconds: 300, started: 0, p50Ms: null, p99Ms: null, maxMs: null },
        oldestReadyAgeMs: null,
        lastHour: [],
      },
    ];
    script = (req, res) => {
      const route = `${req.method} ${req.url}`;
      if (route === 'GET /jobs/example/a%3Ab') return json(res, 200, { job: job({ id: 'a:b' }) });
      if (route === 'GET /jobs/example/gone') return apiError(res, 404, 'NOT_FOUND');
      if (route === 'PUT /jobs/example/new') return json(res, 201, { job: job({ id: 'new' }) });
      if (route === 'PUT /jobs/example/old') return json(res, 200, { job: job({ id: 'old' }) });
      if (route === 'PUT /jobs/example/done')
        return apiError(res, 409, 'JOB_FINISHED', { job: job({ id: 'done', state: 'done' }) });
      if (route === 'DELETE /jobs/example/old') return json(res, 200, { job: job({ id: 'old', state: 'cancelled' }) });
      if (route === 'DELETE /jobs/example/done')
        return json(res, 409, {
          error: { code: 'JOB_FINISHED', message: 'no' },
          job: job({ id: 'done', state: 'done' }),
        });
      if (route === 'GET /topics') return json(res, 200, { topics: stats });
      if (route === 'GET /topics/example/dead?limit=10&after=MTIz')
        return json(res, 200, { jobs: [{ ...job({ state: 'dead' }), diedAt: new Date().toISOString() }], next: null });
      if (route === 'POST /topics/example/dead/redrive')
        return json(res, 200, { redriven: req.body.ids?.length ?? req.body.count });
      apiError(res, 404, 'NOT_FOUND');
    };
    const c = client();
    assert.equal((await c.get('example', 'a:b'))?.id, 'a:b');
    assert.equal(await c.get('example', 'gone'), null);
    assert.deepEqual(await c.put('example', 'new', { delay: 1 }).then((r) => [r.created, r.job.id]), [true, 'new']);
    assert.deepEqual(
      await c.put('example', 'old', { runAt: '2030-01-01T00:00:00Z', body: 2 }).then((r) => [r.created, r.job.id]),
      [false, 'old'],
    );
    assert.deepEqual(seen.at(-1)!.body, { runAt: '2030-01-01T00:00:00Z', body: 2 });
    const finished = await c.put('example', 'done', { delay: 1 }).catch((e: unknown) => e);
    assert.ok(finished instanceof DelayQueueError);
    assert.deepEqual([finished.code, finished.job?.state], ['JOB_FINISHED', 'done']);
    assert.equal((await c.cancel('example', 'old')).state, 'cancelled');
    const notCancelled = await c.cancel('example', 'done').catch((e: unknown) => e);
    assert.ok(notCancelled instanceof DelayQueueError);
    assert.deepEqual(
      [notCancelled.code, notCancelled.job?.state],
      ['JOB_FINISHED', 'done'],
      'a 409 on cancel carries the job too',
    );
    assert.deepEqual(await c.topics(), stats);
    const page = await c.dead('example', { limit: 10, after: 'MTIz' });
    assert.deepEqual([page.jobs.length, page.next], [1, null]);
    assert.equal(await c.redrive('example', { ids: ['x', 'y'] }), 2);
    assert.equal(await c.redrive('example', { count: 7 }), 7);
    assert.equal(await c.redrive('example'), 100);
  });

  it('flow control: pauseTopic, resumeTopic and the flow key changes are sent once; flowKey is a read, retried; key on add; paths, bodies, results', async () => {
    const state = (fields: Partial<FlowKeyState> = {}): FlowKeyState => ({
      topic: 'partner',
      key: 'p:1',
      running: 0,
      ready: 2,
      paused: false,
      heldUntil: null,
      limits: { concurrency: 2, rate: null },
      pinned: null,
      updatedBy: null,
      updatedAt: null,
      ...fields,
    });
    let flaky = 0;
    script = (req, res) => {
      const route = `${req.method} ${req.url}`;
      if (route === 'POST /topics/partner/pause') return json(res, 200, { topic: 'partner', paused: true });
      if (route === 'POST /topics/partner/resume') return json(res, 200, { topic: 'partner', paused: false });
      if (route === 'GET /topics/partner/flows/p%3A1')
        return ++flaky === 1 ? apiError(res, 503, 'UNAVAILABLE') : json(res, 200, state());
      if (route === 'PUT /topics/partner/flows/p%3A1')
        return json(
          res,
          200,
          state({
            limits: { concurrency: req.body.concurrency, rate: null },
            pinned: { concurrency: req.body.concurrency },
          }),
        );
      if (route === 'DELETE /topics/partner/flows/p%3A1') return json(res, 200, state());
      if (route === 'POST /topics/partner/flows/p%3A1/pause') return json(res, 200, state({ paused: true }));
      if (route === 'POST /topics/partner/flows/p%3A1/resume') return json(res, 200, state());
      if (route === 'POST /topics/example/flows/k/pause') return apiError(res, 503, 'UNAVAILABLE');
      if (route === 'POST /jobs')
        return json(res, 201, { job: job({ topic: 'partner', id: req.body.id, key: req.body.key }) });
      apiError(res, 404, 'NOT_FOUND');
    };
    const c = client();
    await c.pauseTopic('partner');
    await c.resumeTopic('partner');
    assert.deepEqual(
      seen.map((r) => `${r.method} ${r.url} ${JSON.stringify(r.body)}`),
      ['POST /topics/partner/pause undefined', 'POST /topics/partner/resume undefined'],
    );
    assert.deepEqual(await c.flowKey('partner', 'p:1'), state());
    assert.equal(flaky, 2, 'the read was retried after the 503');
    seen = [];
    assert.deepEqual((await c.setFlowKey('partner', 'p:1', { concurrency: 1, rate: { count: 2, per: '1m' } })).pinned, {
      concurrency: 1,
    });
    assert.deepEqual(seen[0]!.body, { concurrency: 1, rate: { count: 2, per: '1m' } });
    assert.equal((await c.pauseFlowKey('partner', 'p:1')).paused, true);
    assert.equal((await c.resumeFlowKey('partner', 'p:1')).paused, false);
    assert.equal((await c.clearFlowKey('partner', 'p:1')).pinned, null);
    assert.deepEqual(
      seen.map((r) => `${r.method} ${r.url}`),
      [
        'PUT /topics/partner/flows/p%3A1',
        'POST /topics/partner/flows/p%3A1/pause',
        'POST /topics/partner/flows/p%3A1/resume',
        'DELETE /topics/partner/flows/p%3A1',
      ],
    );
    seen = [];
    const refused = await c.pauseFlowKey('example', 'k').catch((e: unknown) => e);
    assert.ok(refused instanceof DelayQueueError);
    assert.deepEqual([refused.code, seen.length], ['UNAVAILABLE', 1], 'a change is sent once');
    const added = await c.add({ topic: 'partner', delay: 1, key: 'p:1' });
    assert.equal(added.key, 'p:1');
    assert.equal(seen.at(-1)!.body.key, 'p:1');
  });

  it('put and cancel with ifMatch send If-Match "<version>" or *, and none without it; a bad ifMatch sends nothing', async () => {
    script = (req, res) =>
      json(res, 200, { job: job({ id: 'j1', version: 4, state: req.method === 'DELETE' ? 'cancelled' : 'delayed' }) });
    const c = client();
    await c.put('example', 'j1', { delay: 1 }, { ifMatch: 3 });
    await c.put('example', 'j1', { delay: 1 }, { ifMatch: 0 });
    await c.cancel('example', 'j1', { ifMatch: '*' });
    await c.cancel('example', 'j1', { ifMatch: 12 });
    await c.put('example', 'j1', { delay: 1 });
    await c.cancel('example', 'j1');
    assert.deepEqual(
      seen.map((s) => [s.method, s.headers['if-match']]),
      [
        ['PUT', '"3"'],
        ['PUT', '"0"'],
        ['DELETE', '*'],
        ['DELETE', '"12"'],
        ['PUT', undefined],
        ['DELETE', undefined],
      ],
    );
    seen = [];
    for (const ifMatch of [-1, 1.5, Number.NaN, '3' as unknown as number]) {
      await assert.rejects(c.put('example', 'j1', { delay: 1 }, { ifMatch }), TypeError, String(ifMatch));
      await assert.rejects(c.cancel('example', 'j1', { ifMatch }), TypeError, String(ifMatch));
    }
    assert.equal(seen.length, 0);
  });

  it('a 412 is VERSION_MISMATCH carrying the current job (none when the job does not exist), not retried', async () => {
    const current = job({ id: 'j1', version: 5, body: { v: 5 } });
    script = (req, res) =>
      req.url === '/jobs/example/gone'
        ? json(res, 412, { error: { code: 'VERSION_MISMATCH', message: 'job example/gone does not exist' }, job: null })
        : json(
            res,
            412,
            { error: { code: 'VERSION_MISMATCH', message: 'job example/j1 is at version 5' }, job: current },
            { etag: '"5"' },
          );
    const c = client();
    for (const call of [
      () => c.put('example', 'j1', { delay: 1 }, { ifMatch: 4 }),
      () => c.cancel('example', 'j1', { ifMatch: 4 }),
    ]) {
      seen = [];
      const error = await call().catch((e: unknown) => e);
      assert.ok(error instanceof DelayQueueError);
      assert.deepEqual(
        [error.status, error.code, error.job, error.retryable, error.message],
        [412, 'VERSION_MISMATCH', current, false, 'job example/j1 is at version 5'],
      );
      assert.equal(seen.length, 1);
    }
    const gone = await c.cancel('example', 'gone', { ifMatch: '*' }).catch((e: unknown) => e);
    assert.ok(gone instanceof DelayQueueError);
    assert.deepEqual([gone.status, gone.code, gone.job], [412, 'VERSION_MISMATCH', undefined]);
  });

  it('cancelGroup is sent once; listGroup and listJobs are reads (retried), with their query', async () => {
    const page = { jobs: [job({ id: 'a', group: 'g:1' })], next: 'c2' };
    script = (req, res, n) => {
      if (req.method === 'DELETE')
        return n === 1 ? apiError(res, 503, 'UNAVAILABLE') : json(res, 200, { cancelled: 50, running: 2 });
      if (n % 2 === 1) return apiError(res, 503, 'UNAVAILABLE'); // every read fails once first
      json(res, 200, page);
    };
    const c = client();
    const once = await c.cancelGroup('example', 'g:1').catch((e: unknown) => e);
    assert.ok(once instanceof DelayQueueError);
    assert.deepEqual([once.code, seen.length], ['UNAVAILABLE', 1]);
    assert.deepEqual(await c.cancelGroup('example', 'g:1'), { cancelled: 50, running: 2 });
    assert.deepEqual(seen.at(-1)!.url, '/topics/example/groups/g%3A1');

    seen = [];
    assert.deepEqual(await c.listGroup('example', 'g:1'), page);
    assert.deepEqual(await c.listGroup('example', 'g:1', { limit: 20, cursor: 'c1' }), page);
    const at = new Date('2027-01-02T03:04:05.678Z');
    assert.deepEqual(await c.listJobs('example'), page);
    assert.deepEqual(
      await c.listJobs('example', { state: 'dead', from: at, to: at.getTime() + 1000, limit: 500, cursor: 'a_b-c' }),
      page,
    );
    assert.deepEqual(
      await c.listJobs('example', { state: 'running', from: '2027-01-02T03:04:05Z', to: '2027-01-03T00:00:00+01:00' }),
      page,
    );
    assert.deepEqual(
      seen.map((s) => `${s.method} ${s.url}`),
      [
        'GET /topics/example/groups/g%3A1',
        'GET /topics/example/groups/g%3A1',
        'GET /topics/example/groups/g%3A1?limit=20&cursor=c1',
        'GET /topics/example/groups/g%3A1?limit=20&cursor=c1',
        'GET /topics/example/jobs',
        'GET /topics/example/jobs',
        `GET /topics/example/jobs?state=dead&from=${at.getTime()}&to=${at.getTime() + 1000}&limit=500&cursor=a_b-c`,
        `GET /topics/example/jobs?state=dead&from=${at.getTime()}&to=${at.getTime() + 1000}&limit=500&cursor=a_b-c`,
        'GET /topics/example/jobs?state=running&from=2027-01-02T03%3A04%3A05Z&to=2027-01-03T00%3A00%3A00%2B01%3A00',
        'GET /topics/example/jobs?state=running&from=2027-01-02T03%3A04%3A05Z&to=2027-01-03T00%3A00%3A00%2B01%3A00',
      ],
    );
  });

  it('schedules: putSchedule (created or replaced) and deleteSchedule are sent once; getSchedule (null on NOT_FOUND) and listSchedules are reads, retried; paths, bodies, query', async () => {
    let failed = false;
    script = (req, res) => {
      const route = `${req.method} ${req.url}`;
      if (!failed && req.method === 'GET') {
        failed = true;
        return apiError(res, 503, 'UNAVAILABLE'); // the first read fails once
      }
      if (route === 'PUT /schedules/example/daily%3Areport')
        return json(res, 201, {
          schedule: schedule({
            id: 'daily:report',
            cron: req.body.cron,
            timezone: req.body.timezone,
            every: undefined,
          }),
        });
      if (route === 'PUT /schedules/example/s1')
        return json(res, 200, { schedule: schedule({ every: req.body.every }) });
      if (route === 'PUT /schedules/example/bad')
        return apiError(res, 400, 'VALIDATION_FAILED', {}, [{ path: 'cron', message: 'must be a cron expression' }]);
      if (route === 'PUT /schedules/example/down') return apiError(res, 503, 'UNAVAILABLE');
      if (route === 'GET /schedules/example/s1') return json(res, 200, { schedule: schedule() });
      if (route === 'GET /schedules/example/gone') return apiError(res, 404, 'NOT_FOUND');
      if (route === 'DELETE /schedules/example/s1') return json(res, 200, { deleted: true });
      if (route === 'DELETE /schedules/example/down') return apiError(res, 503, 'UNAVAILABLE');
      if (route.startsWith('GET /schedules?')) return json(res, 200, { schedules: [schedule()], next: 'c2' });
      apiError(res, 404, 'NOT_FOUND');
    };
    const c = client();
    const created = await c.putSchedule('example', 'daily:report', {
      cron: '0 9 * * 1-5',
      timezone: 'Europe/Berlin',
      body: { r: 1 },
    });
    assert.deepEqual(
      [created.created, created.schedule.cron, created.schedule.timezone],
      [true, '0 9 * * 1-5', 'Europe/Berlin'],
    );
    assert.deepEqual(seen.at(-1)!.body, { cron: '0 9 * * 1-5', timezone: 'Europe/Berlin', body: { r: 1 } });
    assert.deepEqual(await c.putSchedule('example', 's1', { every: 5 }).then((r) => [r.created, r.schedule.every]), [
      false,
      5,
    ]);
    const invalid = await c.putSchedule('example', 'bad', { cron: '61 * * * *' }).catch((e: unknown) => e);
    assert.ok(invalid instanceof DelayQueueError);
    assert.deepEqual([invalid.code, (invalid.details as { path: string }[])[0]!.path], ['VALIDATION_FAILED', 'cron']);

    seen = [];
    assert.equal((await c.getSchedule('example', 's1'))?.id, 's1');
    assert.equal(await c.getSchedule('example', 'gone'), null);
    assert.equal(await c.deleteSchedule('example', 's1'), undefined);
    const missing = await c.deleteSchedule('example', 'gone').catch((e: unknown) => e);
    assert.ok(missing instanceof DelayQueueError);
    assert.deepEqual([missing.status, missing.code], [404, 'NOT_FOUND']);
    const listed = await c.listSchedules('example');
    assert.deepEqual([listed.schedules.map((x) => x.id), listed.next], [['s1'], 'c2']);
    await c.listSchedules('my-topic', { limit: 20, cursor: 'c2' });
    assert.deepEqual(
      seen.map((x) => `${x.method} ${x.url}`),
      [
        'GET /schedules/example/s1',
        'GET /schedules/example/s1',
        'GET /schedules/example/gone',
        'DELETE /schedules/example/s1',
        'DELETE /schedules/example/gone',
        'GET /schedules?topic=example',
        'GET /schedules?topic=my-topic&limit=20&cursor=c2',
      ],
    );

    for (const call of [
      () => c.putSchedule('example', 'down', { every: 1 }),
      () => c.deleteSchedule('example', 'down'),
    ]) {
      seen = [];
      const error = await call().catch((e: unknown) => e);
      assert.ok(error instanceof DelayQueueError);
      assert.deepEqual([error.code, seen.length], ['UNAVAILABLE', 1]);
    }
  });

  it('schedules: pauseSchedule and resumeSchedule are sent once and answer the schedule; NOT_FOUND throws; paths, no body', async () => {
    script = (req, res) => {
      const route = `${req.method} ${req.url}`;
      if (route === 'POST /schedules/example/daily%3Areport/pause')
        return json(res, 200, { schedule: schedule({ id: 'daily:report', paused: true }) });
      if (route === 'POST /schedules/example/daily%3Areport/resume')
        return json(res, 200, { schedule: schedule({ id: 'daily:report', nextRuns: ['2026-11-24T08:00:00.000Z'] }) });
      if (route === 'POST /schedules/example/down/pause') return apiError(res, 503, 'UNAVAILABLE');
      apiError(res, 404, 'NOT_FOUND');
    };
    const c = client();
    const paused = await c.pauseSchedule('example', 'daily:report');
    assert.deepEqual([paused.id, paused.paused, paused.pending], ['daily:report', true, null]);
    const resumed = await c.resumeSchedule('example', 'daily:report');
    assert.deepEqual([resumed.paused, resumed.nextRuns], [false, ['2026-11-24T08:00:00.000Z']]);
    assert.deepEqual(
      seen.map((r) => `${r.method} ${r.url} ${JSON.stringify(r.body)}`),
      [
        'POST /schedules/example/daily%3Areport/pause undefined',
        'POST /schedules/example/daily%3Areport/resume undefined',
      ],
    );
    for (const action of ['pauseSchedule', 'resumeSchedule'] as const) {
      const missing = await c[action]('example', 'gone').catch((e: unknown) => e);
      assert.ok(missing instanceof DelayQueueError);
      assert.deepEqual([missing.status, missing.code], [404, 'NOT_FOUND'], action);
    }
    seen = [];
    const down = await c.pauseSchedule('example', 'down').catch((e: unknown) => e);
    assert.ok(down instanceof DelayQueueError);
    assert.deepEqual([down.code, seen.length], ['UNAVAILABLE', 1], 'a pause is sent once');
  });

  it('a listing that is not a page is BAD_RESPONSE; a 400 names the field', async () => {
    script = (_req, res) => json(res, 200, { jobs: 'nope' });
    const bad = await client({ retries: 0 })
      .listJobs('example')
      .catch((e: unknown) => e);
    assert.ok(bad instanceof DelayQueueError);
    assert.deepEqual([bad.status, bad.code], [200, 'BAD_RESPONSE']);
    const details = [{ path: 'state', message: 'must be one of delayed, ready, running, dead' }];
    script = (_req, res) => apiError(res, 400, 'VALIDATION_FAILED', {}, details);
    seen = [];
    const invalid = await client()
      .listJobs('example', { state: 'done' as 'dead' })
      .catch((e: unknown) => e);
    assert.ok(invalid instanceof DelayQueueError);
    assert.deepEqual([invalid.code, invalid.details, seen.length], ['VALIDATION_FAILED', details, 1]);
  });

  it('addMany: ids made on the client, requests of at most 500, results in order; JOB_EXISTS with the same body after a retry counts as added', async () => {
    const stored = new Map<string, unknown>();
    let lose = true;
    script = (req, res) => {
      const results = (req.body.jobs as { id: string; body?: unknown; delay: number }[]).map((j) => {
        if (j.delay < 0)
          return {
            status: 400,
            error: { code: 'VALIDATION_FAILED', message: 'bad', details: [{ path: 'delay', message: 'must be ≥ 0' }] },
          };
        if (stored.has(j.id))
          return {
            status: 409,
            error: { code: 'JOB_EXISTS', message: 'exists' },
            job: job({ id: j.id, body: stored.get(j.id) }),
          };
        stored.set(j.id, j.body ?? null);
        return { status: 201, job: job({ id: j.id, body: j.body ?? null }) };
      });
      if (lose) {
        lose = false;
        return res.destroy(); // the first request's jobs were written, its answer is lost
      }
      json(res, 200, { results });
    };
    stored.set('taken', { someone: 'else' });
    const jobs: NewJob[] = [
      ...Array.from({ length: 600 }, (_, i) => ({ topic: 'example', delay: 1, body: { i } })),
      { topic: 'example', delay: -1 },
      { topic: 'example', id: 'taken', delay: 1, body: { mine: true } },
    ];
    const results = await client().addMany(jobs);
    assert.equal(results.length, 602);
    assert.deepEqual(
      seen.map((s) => s.body.jobs.length),
      [500, 500, 102],
      'the first chunk twice (retried), then the rest',
    );
    assert.deepEqual(
      seen[0]!.body.jobs.map((j: { id: string }) => j.id),
      seen[1]!.body.jobs.map((j: { id: string }) => j.id),
    );
    assert.ok(
      results.slice(0, 600).every((r, i) => r.ok && r.outcome === 'created' && (r.job.body as { i: number }).i === i),
    );
    const [invalid, taken] = results.slice(600);
    assert.ok(invalid && !invalid.ok && invalid.error.code === 'VALIDATION_FAILED' && invalid.status === 400);
    assert.ok(taken && !taken.ok && taken.error.code === 'JOB_EXISTS', 'a different body is still a conflict');
  });

  it('a keyed add is sent without a made-up id; addKeyed says created, duplicate (job or null) or debounced', async () => {
    const answers: [number, unknown][] = [
      [201, { job: job({ id: 'order-7::abcdefgh12345678', priority: 5 }) }],
      [200, { job: job({ id: 'order-7::abcdefgh12345678' }), duplicateOf: 'order-7::abcdefgh12345678' }],
      [200, { job: null, duplicateOf: 'order-7::abcdefgh12345678' }],
      [200, { job: job({ id: 'search::0123456789abcdef', body: { q: 'ab' } }), debounced: true }],
    ];
    script = (_req, res, n) => json(res, ...answers[n - 1]!);
    const c = client();
    const dedupe = { topic: 'example', delay: 60, priority: 5, dedupe: { key: 'order-7', window: '1h' as const } };
    const created = await c.addKeyed(dedupe);
    assert.deepEqual(seen[0]!.body, dedupe, 'no id: the server makes <key>::…');
    assert.deepEqual([created.outcome, created.id, created.job?.priority], ['created', 'order-7::abcdefgh12345678', 5]);
    const duplicate = await c.addKeyed(dedupe);
    assert.deepEqual([duplicate.outcome, duplicate.id, duplicate.job?.id], ['duplicate', duplicate.id, duplicate.id]);
    const purged = await c.addKeyed(dedupe);
    assert.deepEqual(purged, { outcome: 'duplicate', job: null, id: 'order-7::abcdefgh12345678' });
    const debounce = { topic: 'example', body: { q: 'ab' }, debounce: { key: 'search', period: 2, maxWait: '10s' } };
    const folded = await c.addKeyed(debounce as NewJob);
    assert.deepEqual(seen[3]!.body, debounce);
    assert.deepEqual(
      [folded.outcome, folded.id, folded.job?.body],
      ['debounced', 'search::0123456789abcdef', { q: 'ab' }],
    );
    assert.equal(seen.length, 4, 'a 200 is an answer, not retried');
  });

  it('add and put send a callback (or null) as given; the job answered carries it', async () => {
    const callback = { topic: 'webhook', url: 'https://orders.example/cb', on: ['done', 'dead'] as const };
    script = (req, res) =>
      json(res, req.method === 'PUT' ? 200 : 201, { job: job({ callback: { ...callback, on: [...callback.on] } }) });
    const c = client();
    const added = await c.add({ topic: 'example', delay: 1, callback: { url: callback.url, on: ['done', 'dead'] } });
    assert.deepEqual(seen[0]!.body.callback, { url: callback.url, on: ['done', 'dead'] });
    assert.deepEqual(added.callback, callback);
    await c.put('example', 'j1', { delay: 1, callback: null });
    assert.equal(seen[1]!.method, 'PUT');
    assert.ok('callback' in seen[1]!.body && seen[1]!.body.callback === null, 'null is sent: it opts out');
  });

  it('add: returns the job of a duplicate or a fold; a duplicate whose job was purged throws DUPLICATE_PURGED', async () => {
    const standing = job({ id: 'k::0123456789abcdef' });
    let answer: unknown = { job: standing, duplicateOf: standing.id };
    script = (_req, res) => json(res, 200, answer);
    assert.deepEqual(await client().add({ topic: 'example', delay: 1, dedupe: { key: 'k' } }), standing);
    answer = { job: standing, debounced: true };
    assert.deepEqual(await client().add({ topic: 'example', debounce: { key: 'k', period: 1 } }), standing);
    answer = { job: null, duplicateOf: standing.id };
    const gone = await client()
      .add({ topic: 'example', delay: 1, dedupe: { key: 'k' } })
      .catch((e: unknown) => e);
    assert.ok(gone instanceof DelayQueueError);
    assert.deepEqual([gone.code, gone.status, gone.retryable], ['DUPLICATE_PURGED', 200, false]);
    assert.match(gone.message, /k::0123456789abcdef/);
    answer = { job: standing };
    const bad = await client()
      .add({ topic: 'example', delay: 1, dedupe: { key: 'k' } })
      .catch((e: unknown) => e);
    assert.ok(bad instanceof DelayQueueError);
    assert.equal(bad.code, 'BAD_RESPONSE', 'a 200 that is neither a duplicate nor a fold');
  });

  it('a keyed add retried after a lost answer comes back as the duplicate (or fold) of the first try: one job', async () => {
    const made = job({ id: 'pay-9::0123456789abcdef', body: { n: 1 } });
    script = (_req, res, n) => (n === 1 ? res.destroy() : json(res, 200, { job: made, duplicateOf: made.id }));
    const added = await client().addKeyed({ topic: 'example', delay: 5, body: { n: 1 }, dedupe: { key: 'pay-9' } });
    assert.equal(seen.length, 2);
    assert.equal(seen[1]!.body.id, undefined, 'the retry sends no id either');
    assert.deepEqual(added, { outcome: 'duplicate', job: made, id: made.id });

    seen = [];
    script = (_req, res, n) =>
      n === 1 ? apiError(res, 503, 'UNAVAILABLE') : json(res, 200, { job: made, debounced: true });
    const folded = await client().add({ topic: 'example', body: { n: 1 }, debounce: { key: 'pay-9', period: '5s' } });
    assert.deepEqual([seen.length, folded], [2, made]);
  });

  it('addMany: each result carries its outcome; keyed jobs go without an id, plain ones with one', async () => {
    const dup = job({ id: 'd::0123456789abcdef' });
    script = (req, res) =>
      json(res, 200, {
        results: [
          { status: 201, job: job({ id: req.body.jobs[0].id }) },
          { status: 200, job: dup, duplicateOf: dup.id },
          { status: 200, job: null, duplicateOf: 'd::fedcba9876543210' },
          { status: 200, job: job({ id: 'b::0123456789abcdef' }), debounced: true },
        ],
      });
    const results = await client().addMany([
      { topic: 'example', delay: 1 },
      { topic: 'example', delay: 1, dedupe: { key: 'd' } },
      { topic: 'example', delay: 1, dedupe: { key: 'd', window: 60 } },
      { topic: 'example', debounce: { key: 'b', period: 0.5 } },
    ]);
    const ids = seen[0]!.body.jobs.map((j: { id?: string }) => j.id);
    assert.match(ids[0], /^[0-9a-f-]{36}$/);
    assert.deepEqual(ids.slice(1), [undefined, undefined, undefined]);
    assert.deepEqual(
      results.map((r) => (r.ok ? [r.status, r.outcome, r.id, r.job?.id ?? null] : r.status)),
      [
        [201, 'created', ids[0], ids[0]],
        [200, 'duplicate', dup.id, dup.id],
        [200, 'duplicate', 'd::fedcba9876543210', null],
        [200, 'debounced', 'b::0123456789abcdef', 'b::0123456789abcdef'],
      ],
    );
  });
});
