/**
 * `dq` run whole in-process (lib/cli/main.ts runCli) against a scripted API behind the client's
 * `fetch`: the request each command sends, what it prints with and without --json, the exit code
 * of each kind of failure, help for every command, and that a usage error sends nothing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FlowKeyState, Job, Schedule } from '../../lib/client';
import { COMMANDS, GROUPS } from '../../lib/cli/commands';
import { EXIT } from '../../lib/cli/errors';
import { runCli } from '../../lib/cli/main';

interface Sent {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body: unknown;
}
type Answer = { status: number; body?: unknown; headers?: Record<string, string> };

const NOW = Date.parse('2030-01-01T12:00:00.000Z');

function job(fields: Partial<Job> = {}): Job {
  const t = new Date(NOW).toISOString();
  return {
    topic: 'example',
    id: 'j1',
    state: 'delayed',
    runAt: t,
    createdAt: t,
    updatedAt: t,
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
function schedule(fields: Partial<Schedule> = {}): Schedule {
  const t = new Date(NOW).toISOString();
  return {
    topic: 'example',
    id: 's1',
    every: 60,
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
    createdAt: t,
    updatedAt: t,
    updatedBy: null,
    pending: null,
    lastRunAt: null,
    nextRuns: [],
    ...fields,
  };
}
const apiError = (status: number, code: string, message: string, extra: Record<string, unknown> = {}): Answer => ({
  status,
  body: { error: { code, message }, ...extra },
});

/** Runs dq with `argv` against `answer`, which sees each request; returns the exit code, output and requests. */
async function dq(
  argv: string[],
  answer: (req: Sent) => Answer = () => ({ status: 500 }),
  extra: { env?: Record<string, string>; stdin?: string; files?: Record<string, string> } = {},
) {
  const sent: Sent[] = [];
  let stdout = '';
  let stderr = '';
  const fetchFn: typeof fetch = async (input, init) => {
    const url = new URL(String(input));
    const headers = Object.fromEntries(
      Object.entries((init?.headers ?? {}) as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]),
    );
    const req: Sent = {
      method: init?.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers,
      body: init?.body ? JSON.parse(String(init.body)) : undefined,
    };
    sent.push(req);
    const a = answer(req);
    return new Response(a.body === undefined ? '' : JSON.stringify(a.body), {
      status: a.status,
      headers: { 'content-type': 'application/json', ...a.headers },
    });
  };
  const files = extra.files ?? {};
  const code = await runCli({
    argv,
    env: { DQ_CONFIG: '/nonexistent/dq.json', ...extra.env },
    home: '/nonexistent',
    stdout: (t) => void (stdout += t),
    stderr: (t) => void (stderr += t),
    readConfig: () => undefined,
    text: {
      file: async (path) => {
        if (files[path] === undefined) throw new Error(`ENOENT: ${path}`);
        return files[path];
      },
      stdin: async () => extra.stdin ?? '',
    },
    fetch: fetchFn,
    now: () => NOW,
  });
  return { code, stdout, stderr, sent };
}

describe('dq commands against a scripted API', () => {
  it('jobs add: every flag becomes its field; the key and URL come from the environment', async () => {
    const r = await dq(
      [
        'jobs',
        'add',
        'webhook',
        'order-7',
        '--delay',
        '10m',
        '--body',
        '@job.json',
        '--max-attempts',
        '3',
        '--backoff',
        '15s 3m',
        '--ttr',
        '20',
        '--webhook-url',
        'https://h.example.com/x',
        '--group',
        'g1',
        '--jitter',
        '5s',
      ],
      (req) => ({
        status: 201,
        body: { job: job({ topic: 'webhook', id: 'order-7', body: req.body && (req.body as { body: unknown }).body }) },
      }),
      { env: { DQ_URL: 'https://q.example.com', DQ_KEY: 'k-1' }, files: { 'job.json': '{"orderId":7}' } },
    );
    assert.equal(r.code, EXIT.ok, r.stderr);
    assert.equal(r.sent.length, 1);
    assert.deepEqual(
      [r.sent[0]!.method, r.sent[0]!.path, r.sent[0]!.headers.authorization],
      ['POST', '/jobs', 'Bearer k-1'],
    );
    assert.deepEqual(r.sent[0]!.body, {
      topic: 'webhook',
      id: 'order-7',
      delay: '10m',
      body: { orderId: 7 },
      maxAttempts: 3,
      backoff: '15s 3m',
      ttr: 20,
      url: 'https://h.example.com/x',
      group: 'g1',
      jitter: '5s',
    });
    assert.match(r.stdout, /^added webhook\/order-7\n/);
    assert.match(r.stdout, /^body +\{"orderId":7\}$/m);
  });

  it("--json prints the API's answer body; --run-at, a body from stdin, and a made-up id", async () => {
    const r = await dq(
      ['--json', 'jobs', 'add', 'example', '--run-at', '2030-01-02T00:00:00Z', '--body', '-'],
      (req) => ({ status: 201, body: { job: job({ id: (req.body as { id: string }).id }) } }),
      { stdin: '[1,2]' },
    );
    assert.equal(r.code, EXIT.ok, r.stderr);
    const sent = r.sent[0]!.body as { id: string; runAt: string; body: unknown };
    assert.match(sent.id, /^[0-9a-f-]{36}$/);
    assert.deepEqual([sent.runAt, sent.body], ['2030-01-02T00:00:00Z', [1, 2]]);
    assert.deepEqual(JSON.parse(r.stdout), { job: job({ id: sent.id }) });
    assert.equal(r.stderr, '');
  });

  it('jobs get: a job, or NOT_FOUND with exit 3 (as JSON on stderr with --json)', async () => {
    const found = await dq(['jobs', 'get', 'example', 'j1', '--url', 'http://127.0.0.1:9'], () => ({
      status: 200,
      body: { job: job() },
    }));
    assert.equal(found.code, EXIT.ok);
    assert.equal(found.sent[0]!.headers.authorization, 'Bearer dev-token', 'a loopback URL gets the dev key');
    assert.equal(found.sent[0]!.path, '/jobs/example/j1');
    assert.match(found.stdout, /^job +example\/j1$/m);

    const missing = await dq(['jobs', 'get', 'example', 'nope'], () => apiError(404, 'NOT_FOUND', 'no such job'));
    assert.deepEqual(
      [missing.code, missing.stdout, missing.stderr],
      [EXIT.notFound, '', 'dq: NOT_FOUND: no job example/nope\n'],
    );
    const asJson = await dq(['jobs', 'get', 'example', 'nope', '--json'], () =>
      apiError(404, 'NOT_FOUND', 'no such job'),
    );
    assert.equal(asJson.code, EXIT.notFound);
    assert.deepEqual(JSON.parse(asJson.stderr), { error: { code: 'NOT_FOUND', message: 'no job example/nope' } });
  });

  it('jobs put and cancel send If-Match; refusals exit 1 naming the code and showing the job as it is', async () => {
    const put = await dq(
      ['jobs', 'put', 'example', 'j1', '--delay', '90', '--body', '{"a":1}', '--if-match', '3'],
      () => ({ status: 200, body: { job: job({ version: 4 }) } }),
    );
    assert.equal(put.code, EXIT.ok, put.stderr);
    assert.deepEqual(
      [put.sent[0]!.method, put.sent[0]!.path, put.sent[0]!.headers['if-match'], put.sent[0]!.body],
      ['PUT', '/jobs/example/j1', '"3"', { delay: 90, body: { a: 1 } }],
    );
    assert.match(put.stdout, /^replaced example\/j1\n/);

    const stale = await dq(['jobs', 'cancel', 'example', 'j1', '--if-match', '*'], () =>
      apiError(412, 'VERSION_MISMATCH', 'the job is at version 5', { job: job({ version: 5 }) }),
    );
    assert.equal(stale.sent[0]!.headers['if-match'], '*');
    assert.equal(stale.code, EXIT.api);
    assert.equal(
      stale.stderr,
      'dq: VERSION_MISMATCH (HTTP 412): the job is at version 5\n  the job as it is: example/j1, state delayed, version 5\n',
    );

    const invalid = await dq(['jobs', 'add', 'example', '--delay', '99999999999', '--json'], () =>
      apiError(400, 'VALIDATION_FAILED', 'the job has 1 invalid field', {
        error: {
          code: 'VALIDATION_FAILED',
          message: 'the job has 1 invalid field',
          details: [{ path: 'delay', message: 'too far' }],
        },
      }),
    );
    assert.equal(invalid.code, EXIT.api);
    assert.deepEqual(JSON.parse(invalid.stderr), {
      error: {
        code: 'VALIDATION_FAILED',
        message: 'the job has 1 invalid field',
        status: 400,
        details: [{ path: 'delay', message: 'too far' }],
      },
    });
  });

  it('exit 4 for no answer and for 503; exit 1 for 401 and for a 500', async () => {
    const unavailable = await dq(['jobs', 'cancel', 'example', 'j1'], () =>
      apiError(503, 'UNAVAILABLE', 'Redis is unavailable'),
    );
    assert.deepEqual(
      [unavailable.code, unavailable.stderr],
      [EXIT.unavailable, 'dq: UNAVAILABLE (HTTP 503): Redis is unavailable\n'],
    );
    const replica = await dq(['schedules', 'delete', 'example', 's1'], () =>
      apiError(503, 'NOT_REPLICATED', 'no replica confirmed'),
    );
    assert.equal(replica.code, EXIT.unavailable);
    const gateway = await dq(['groups', 'cancel', 'example', 'g', '--yes'], () => ({
      status: 504,
      body: { message: 'Endpoint request timed out' },
    }));
    assert.deepEqual(
      [gateway.code, gateway.stderr],
      [EXIT.unavailable, 'dq: BAD_RESPONSE (HTTP 504): unexpected HTTP 504 answer\n'],
    );
    const refused = await dq(['jobs', 'cancel', 'example', 'j1', '--url', 'http://127.0.0.1:9', '--key', 'k'], () => {
      throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:9') });
    });
    assert.deepEqual(
      [refused.code, refused.stderr],
      [
        EXIT.unavailable,
        'dq: NETWORK_ERROR (no answer): DELETE /jobs/example/j1 failed: fetch failed (connect ECONNREFUSED 127.0.0.1:9)\n',
      ],
    );
    const unauthorized = await dq(['topics', 'stats'], () =>
      apiError(401, 'UNAUTHORIZED', 'missing or wrong bearer token'),
    );
    assert.deepEqual(
      [unauthorized.code, unauthorized.stderr],
      [EXIT.api, 'dq: UNAUTHORIZED (HTTP 401): missing or wrong bearer token\n'],
    );
    const internal = await dq(['jobs', 'cancel', 'example', 'j1'], () => apiError(500, 'INTERNAL', 'request id abc'));
    assert.equal(internal.code, EXIT.api);
  });

  it('jobs list: state, window, limit and cursor as the query; --all follows next; the next cursor printed', async () => {
    const one = await dq(
      [
        'jobs',
        'list',
        'example',
        '--state',
        'dead',
        '--from',
        '1893456000000',
        '--to',
        '2030-01-02T00:00:00Z',
        '--limit',
        '2',
        '--cursor',
        'c1',
      ],
      () => ({
        status: 200,
        body: { jobs: [job(), job({ id: 'j2' })], next: 'c2' },
      }),
    );
    assert.equal(one.code, EXIT.ok, one.stderr);
    assert.deepEqual(
      [one.sent[0]!.path, one.sent[0]!.query],
      [
        '/topics/example/jobs',
        { state: 'dead', from: '1893456000000', to: '2030-01-02T00:00:00Z', limit: '2', cursor: 'c1' },
      ],
    );
    assert.match(one.stdout, /^j2 +delayed/m);
    assert.match(one.stdout, /^more: --cursor c2$/m);

    const pages: Record<string, { jobs: Job[]; next: string | null }> = {
      first: { jobs: [job()], next: 'p2' },
      p2: { jobs: [job({ id: 'j2' })], next: null },
    };
    const all = await dq(['--json', 'jobs', 'list', 'example', '--all'], (req) => ({
      status: 200,
      body: pages[req.query.cursor ?? 'first'],
    }));
    assert.deepEqual(
      all.sent.map((s) => s.query.cursor),
      [undefined, 'p2'],
    );
    assert.deepEqual(JSON.parse(all.stdout), { jobs: [job(), job({ id: 'j2' })], next: null });

    for (const [args, message] of [
      [['--state', 'done'], /--state must be one of delayed, ready, running, dead/],
      [['--limit', '501'], /--limit must be a whole number from 1 to 500/],
    ] as const) {
      const bad = await dq(['jobs', 'list', 'example', ...args]);
      assert.deepEqual([bad.code, bad.sent.length], [EXIT.usage, 0]);
      assert.match(bad.stderr, message);
    }
  });

  it('groups list and cancel (cancel only with --yes)', async () => {
    const list = await dq(['groups', 'list', 'example', 'order-7', '--limit', '10'], () => ({
      status: 200,
      body: { jobs: [job({ group: 'order-7' })], next: null },
    }));
    assert.deepEqual(
      [list.code, list.sent[0]!.path, list.sent[0]!.query],
      [EXIT.ok, '/topics/example/groups/order-7', { limit: '10' }],
    );
    const refused = await dq(['groups', 'cancel', 'example', 'order-7']);
    assert.deepEqual([refused.code, refused.sent.length], [EXIT.usage, 0]);
    assert.match(refused.stderr, /add --yes to do it/);
    const cancel = await dq(['groups', 'cancel', 'example', 'order-7', '--yes', '--json'], () => ({
      status: 200,
      body: { cancelled: 3, running: 1 },
    }));
    assert.deepEqual(
      [cancel.code, cancel.sent[0]!.method, JSON.parse(cancel.stdout)],
      [EXIT.ok, 'DELETE', { cancelled: 3, running: 1 }],
    );
  });

  it("dead list pages with --cursor (the API's after); redrive by ids, by --count, or the 100 oldest", async () => {
    const list = await dq(['dead', 'list', 'webhook', '--cursor', 'abc', '--limit', '100'], () => ({
      status: 200,
      body: { jobs: [{ ...job({ state: 'dead' }), diedAt: new Date(NOW).toISOString() }], next: null },
    }));
    assert.deepEqual(
      [list.code, list.sent[0]!.path, list.sent[0]!.query],
      [EXIT.ok, '/topics/webhook/dead', { after: 'abc', limit: '100' }],
    );
    assert.match(list.stdout, /^j1 +2030-01-01T12:00:00.000Z \(now\)/m);
    const redrive = (argv: string[]) =>
      dq(['dead', 'redrive', 'webhook', ...argv], () => ({ status: 200, body: { redriven: 2 } }));
    assert.deepEqual((await redrive(['a', 'b'])).sent[0]!.body, { ids: ['a', 'b'] });
    assert.deepEqual((await redrive(['--count', '5'])).sent[0]!.body, { count: 5 });
    const oldest = await redrive([]);
    assert.deepEqual([oldest.sent[0]!.body, oldest.stdout], [{ count: 100 }, 'redriven 2 dead jobs of webhook\n']);
    const both = await redrive(['a', '--count', '5']);
    assert.deepEqual([both.code, both.sent.length], [EXIT.usage, 0]);
  });

  it('schedules put, get, list, delete', async () => {
    const put = await dq(
      [
        'schedules',
        'put',
        'example',
        'daily',
        '--cron',
        '0 9 * * 1-5',
        '--timezone',
        'Europe/Berlin',
        '--catch-up',
        'none',
        '--paused',
        '--body',
        '{"r":1}',
      ],
      () => ({
        status: 201,
        body: { schedule: schedule({ id: 'daily', paused: true }) },
      }),
    );
    assert.equal(put.code, EXIT.ok, put.stderr);
    assert.deepEqual(
      [put.sent[0]!.method, put.sent[0]!.path, put.sent[0]!.body],
      [
        'PUT',
        '/schedules/example/daily',
        { cron: '0 9 * * 1-5', timezone: 'Europe/Berlin', catchUp: 'none', paused: true, body: { r: 1 } },
      ],
    );
    assert.match(put.stdout, /^created schedule example\/daily\n/);
    assert.deepEqual(
      (
        await dq(['schedules', 'put', 'example', 'e', '--every', '10m'], () => ({
          status: 200,
          body: { schedule: schedule() },
        }))
      ).sent[0]!.body,
      { every: '10m' },
    );
    const keyed = await dq(['schedules', 'put', 'partner', 'sync', '--every', '10m', '--flow-key', 'acme'], () => ({
      status: 201,
      body: { schedule: schedule({ topic: 'partner', id: 'sync', key: 'acme' }) },
    }));
    assert.deepEqual([keyed.code, keyed.sent[0]!.body], [EXIT.ok, { every: '10m', key: 'acme' }], keyed.stderr);
    assert.match(keyed.stdout, /^key +acme$/m);
    const neither = await dq(['schedules', 'put', 'example', 'e']);
    assert.deepEqual([neither.code, neither.sent.length], [EXIT.usage, 0]);
    assert.match(neither.stderr, /give one of --cron and --every/);

    const missing = await dq(['schedules', 'get', 'example', 'nope'], () =>
      apiError(404, 'NOT_FOUND', 'no such schedule'),
    );
    assert.deepEqual([missing.code, missing.stderr], [EXIT.notFound, 'dq: NOT_FOUND: no schedule example/nope\n']);
    const list = await dq(['schedules', 'list', 'example', '--json'], () => ({
      status: 200,
      body: { schedules: [schedule()], next: null },
    }));
    assert.deepEqual(
      [list.sent[0]!.path, list.sent[0]!.query, JSON.parse(list.stdout)],
      ['/schedules', { topic: 'example' }, { schedules: [schedule()], next: null }],
    );
    const del = await dq(['schedules', 'delete', 'example', 's1'], () => ({ status: 200, body: { deleted: true } }));
    assert.deepEqual([del.code, del.sent[0]!.method, del.stdout], [EXIT.ok, 'DELETE', 'deleted schedule example/s1\n']);
    const gone = await dq(['schedules', 'delete', 'example', 's1'], () =>
      apiError(404, 'NOT_FOUND', 'no such schedule'),
    );
    assert.equal(gone.code, EXIT.notFound);
  });

  it('schedules pause and resume: requests, output, 404, usage errors', async () => {
    const paused = await dq(['schedules', 'pause', 'example', 'daily'], () => ({
      status: 200,
      body: { schedule: schedule({ id: 'daily', paused: true, nextRuns: [] }) },
    }));
    assert.deepEqual(
      [paused.code, paused.sent[0]!.method, paused.sent[0]!.path, paused.sent[0]!.body],
      [EXIT.ok, 'POST', '/schedules/example/daily/pause', undefined],
    );
    assert.match(paused.stdout, /^paused schedule example\/daily\n/);
    assert.match(paused.stdout, /^paused +true$/m);
    const resumed = await dq(['--json', 'schedules', 'resume', 'example', 'daily'], () => ({
      status: 200,
      body: { schedule: schedule({ id: 'daily' }) },
    }));
    assert.deepEqual(
      [resumed.code, resumed.sent[0]!.path, JSON.parse(resumed.stdout)],
      [EXIT.ok, '/schedules/example/daily/resume', { schedule: schedule({ id: 'daily' }) }],
    );
    for (const action of ['pause', 'resume']) {
      const gone = await dq(['schedules', action, 'example', 'nope'], () =>
        apiError(404, 'NOT_FOUND', 'schedule example/nope not found'),
      );
      assert.deepEqual([gone.code, gone.sent.length], [EXIT.notFound, 1], action);
      const usage = await dq(['schedules', action, 'example']);
      assert.deepEqual([usage.code, usage.sent.length], [EXIT.usage, 0], `schedules ${action} without an id`);
      assert.match(usage.stderr, new RegExp(`^dq: USAGE: missing <id>\nusage: dq schedules ${action} <topic> <id>\n`));
    }
  });

  it('topics pause and resume; flows get, set, clear, pause, resume; jobs add --flow-key: requests, output, usage errors', async () => {
    const state = (fields: Partial<FlowKeyState> = {}): FlowKeyState => ({
      topic: 'partner',
      key: 'acme',
      running: 1,
      ready: 4,
      paused: false,
      heldUntil: null,
      limits: { concurrency: 2, rate: { count: 10, per: 1, burst: 1 } },
      pinned: null,
      updatedBy: null,
      updatedAt: null,
      ...fields,
    });
    const paused = await dq(['topics', 'pause', 'partner'], () => ({
      status: 200,
      body: { topic: 'partner', paused: true },
    }));
    assert.deepEqual(
      [paused.code, paused.sent[0]!.method, paused.sent[0]!.path, paused.stdout],
      [EXIT.ok, 'POST', '/topics/partner/pause', 'paused topic partner\n'],
    );
    const resumed = await dq(['--json', 'topics', 'resume', 'partner'], () => ({
      status: 200,
      body: { topic: 'partner', paused: false },
    }));
    assert.deepEqual(
      [resumed.sent[0]!.path, JSON.parse(resumed.stdout)],
      ['/topics/partner/resume', { topic: 'partner', paused: false }],
    );

    const got = await dq(['flows', 'get', 'partner', 'acme'], () => ({
      status: 200,
      body: state({ heldUntil: new Date(NOW + 500).toISOString() }),
    }));
    assert.deepEqual(
      [got.code, got.sent[0]!.method, got.sent[0]!.path],
      [EXIT.ok, 'GET', '/topics/partner/flows/acme'],
    );
    assert.match(got.stdout, /^flow +partner\/acme$/m);
    assert.match(got.stdout, /^rate +10 per 1s, burst 1$/m);
    assert.match(got.stdout, /^pinned +- \(the topic's defaults\)$/m);
    assert.doesNotMatch(got.stdout, /^updated/m, 'nothing pinned: no updated line');
    const set = await dq(
      ['flows', 'set', 'partner', 'acme', '--concurrency', '1', '--rate', '5', '--per', '2s', '--burst', '2'],
      () => ({
        status: 200,
        body: state({
          pinned: { concurrency: 1, rate: { count: 5, per: 2, burst: 2 } },
          updatedBy: 'ops',
          updatedAt: new Date(NOW).toISOString(),
        }),
      }),
    );
    assert.deepEqual(
      [set.code, set.sent[0]!.method, set.sent[0]!.body],
      [EXIT.ok, 'PUT', { concurrency: 1, rate: { count: 5, per: '2s', burst: 2 } }],
    );
    assert.match(set.stdout, /^pinned +concurrency 1; rate 5 per 2s, burst 2$/m);
    assert.match(set.stdout, /^updated +.* by ops$/m);
    const back = await dq(['flows', 'set', 'partner', 'acme', '--rate', 'default', '--concurrency', 'default'], () => ({
      status: 200,
      body: state(),
    }));
    assert.deepEqual(back.sent[0]!.body, { concurrency: null, rate: null });
    for (const [name, method, path] of [
      ['clear', 'DELETE', '/topics/partner/flows/acme'],
      ['pause', 'POST', '/topics/partner/flows/acme/pause'],
      ['resume', 'POST', '/topics/partner/flows/acme/resume'],
    ] as const) {
      const r = await dq(['flows', name, 'partner', 'acme'], () => ({
        status: 200,
        body: state({ paused: name === 'pause' }),
      }));
      assert.deepEqual([r.code, r.sent[0]!.method, r.sent[0]!.path], [EXIT.ok, method, path], name);
    }
    for (const argv of [
      ['flows', 'set', 'partner', 'acme'],
      ['flows', 'set', 'partner', 'acme', '--per', '1s'],
      ['flows', 'set', 'partner', 'acme', '--concurrency', '0'],
      ['flows', 'set', 'partner', 'acme', '--rate', 'default', '--burst', '2'],
    ]) {
      const r = await dq(argv);
      assert.deepEqual([r.code, r.sent.length], [EXIT.usage, 0], argv.join(' '));
    }
    const refused = await dq(['flows', 'get', 'example', 'acme'], () =>
      apiError(400, 'VALIDATION_FAILED', 'topic example has no flow control'),
    );
    assert.equal(refused.code, EXIT.api);

    const added = await dq(['jobs', 'add', 'partner', 'p-1', '--delay', '0', '--flow-key', 'acme'], () => ({
      status: 201,
      body: { job: job({ topic: 'partner', id: 'p-1', key: 'acme' }) },
    }));
    assert.deepEqual((added.sent[0]!.body as { key: string }).key, 'acme');
    assert.match(added.stdout, /^key +acme$/m);
  });

  it('jobs add and put --callback-topic, --callback-url, --callback-on: the callback sent; jobs get shows it', async () => {
    const hooked = job({ callback: { topic: 'webhook', url: 'https://orders.example/cb', on: ['done', 'expired'] } });
    const added = await dq(
      [
        'jobs',
        'add',
        'example',
        'j1',
        '--delay',
        '0',
        '--callback-url',
        'https://orders.example/cb',
        '--callback-on',
        'done,expired',
      ],
      () => ({ status: 201, body: { job: hooked } }),
    );
    assert.equal(added.code, EXIT.ok, added.stderr);
    assert.deepEqual(added.sent[0]!.body, {
      topic: 'example',
      id: 'j1',
      delay: 0,
      callback: { url: 'https://orders.example/cb', on: ['done', 'expired'] },
    });
    assert.match(added.stdout, /^callback +webhook on done,expired to https:\/\/orders\.example\/cb$/m);

    const put = await dq(['jobs', 'put', 'example', 'j1', '--delay', '5', '--callback-topic', 'after'], () => ({
      status: 200,
      body: { job: job({ callback: { topic: 'after', on: ['done', 'dead'] } }) },
    }));
    assert.equal(put.code, EXIT.ok, put.stderr);
    assert.deepEqual(put.sent[0]!.body, { delay: 5, callback: { topic: 'after' } }, 'no --callback-on: the default');
    const got = await dq(['jobs', 'get', 'example', 'j1'], () => ({
      status: 200,
      body: { job: job({ callback: { topic: 'after', on: ['done', 'dead'] } }) },
    }));
    assert.match(got.stdout, /^callback +after on done,dead$/m);
    const none = await dq(['jobs', 'put', 'example', 'j1', '--delay', '5'], () => ({
      status: 200,
      body: { job: job() },
    }));
    assert.equal((none.sent[0]!.body as { callback?: unknown }).callback, undefined, "no flag: the topic's default");
    assert.doesNotMatch(none.stdout, /^callback/m, 'no callback line for a job without one');
  });

  it('jobs add --priority, --dedupe-key, --debounce-key: the fields sent, no id made up, and what the add did', async () => {
    const standing = job({ id: 'order-7::0123456789abcdef', priority: -5 });
    const created = await dq(
      [
        'jobs',
        'add',
        'example',
        '--delay',
        '1m',
        '--priority',
        '-5',
        '--dedupe-key',
        'order-7',
        '--dedupe-window',
        '1d',
      ],
      () => ({ status: 201, body: { job: standing } }),
    );
    assert.equal(created.code, EXIT.ok, created.stderr);
    assert.deepEqual(created.sent[0]!.body, {
      topic: 'example',
      delay: '1m',
      priority: -5,
      dedupe: { key: 'order-7', window: '1d' },
    });
    assert.match(created.stdout, /^added example\/order-7::0123456789abcdef\n/);
    assert.match(created.stdout, /^priority +-5$/m);

    const duplicate = await dq(['jobs', 'add', 'example', '--delay', '1', '--dedupe-key', 'order-7'], () => ({
      status: 200,
      body: { job: standing, duplicateOf: standing.id },
    }));
    assert.equal(duplicate.code, EXIT.ok, duplicate.stderr);
    assert.match(duplicate.stdout, /^duplicate of example\/order-7::0123456789abcdef: nothing changed/);
    assert.match(duplicate.stdout, /^job +example\/order-7::0123456789abcdef$/m);
    const purged = await dq(['--json', 'jobs', 'add', 'example', '--delay', '1', '--dedupe-key', 'order-7'], () => ({
      status: 200,
      body: { job: null, duplicateOf: standing.id },
    }));
    assert.deepEqual([purged.code, JSON.parse(purged.stdout)], [EXIT.ok, { job: null, duplicateOf: standing.id }]);
    const purgedText = await dq(['jobs', 'add', 'example', '--delay', '1', '--dedupe-key', 'order-7'], () => ({
      status: 200,
      body: { job: null, duplicateOf: standing.id },
    }));
    assert.match(purgedText.stdout, /^duplicate of example\/order-7::0123456789abcdef.*\n\(that job was purged/);

    const folded = job({ id: 'reindex::0123456789abcdef', body: { v: 2 } });
    const debounced = await dq(
      [
        'jobs',
        'add',
        'example',
        '--body',
        '{"v":2}',
        '--debounce-key',
        'reindex',
        '--debounce-period',
        '5s',
        '--debounce-max-wait',
        '60',
      ],
      () => ({ status: 200, body: { job: folded, debounced: true } }),
    );
    assert.equal(debounced.code, EXIT.ok, debounced.stderr);
    assert.deepEqual(debounced.sent[0]!.body, {
      topic: 'example',
      body: { v: 2 },
      debounce: { key: 'reindex', period: '5s', maxWait: 60 },
    });
    assert.match(debounced.stdout, /^debounced into example\/reindex::0123456789abcdef/);
    const json = await dq(
      ['--json', 'jobs', 'add', 'example', '--debounce-key', 'r', '--debounce-period', '1'],
      () => ({
        status: 200,
        body: { job: folded, debounced: true },
      }),
    );
    assert.deepEqual(JSON.parse(json.stdout), { job: folded, debounced: true });
  });

  it('topics stats: every topic, or those named; an unknown one exits 3', async () => {
    const stats = (topic: string) => ({
      topic,
      delayed: 1,
      ready: 0,
      running: 0,
      dead: 0,
      nextDueAt: null,
      lateness: { windowSeconds: 300, started: 0, p50Ms: null, p99Ms: null, maxMs: null },
      oldestReadyAgeMs: null,
      lastHour: [],
    });
    const answer = () => ({ status: 200, body: { topics: [stats('example'), stats('webhook')] } });
    const all = await dq(['topics', 'stats'], answer);
    assert.match(all.stdout, /^example +1 +0/m);
    assert.match(all.stdout, /^webhook /m);
    assert.deepEqual(JSON.parse((await dq(['topics', 'stats', 'webhook', '--json'], answer)).stdout), {
      topics: [stats('webhook')],
    });
    const unknown = await dq(['topics', 'stats', 'nope'], answer);
    assert.deepEqual(
      [unknown.code, unknown.stderr],
      [EXIT.notFound, 'dq: NOT_FOUND: no topic nope (topics: example, webhook)\n'],
    );
  });
});

describe('dq help and usage errors', () => {
  it('--help on every group and command, on stdout with exit 0; `dq help <group> <command>` the same', async () => {
    const top = await dq(['--help']);
    assert.equal(top.code, EXIT.ok);
    for (const c of COMMANDS)
      assert.ok(top.stdout.includes(`${c.group} ${c.name}`), `dq --help lists ${c.group} ${c.name}`);
    assert.match(top.stdout, /Exit codes:\n {2}0 +done\n {2}1 .*\n {2}2 .*\n {2}3 .*\n {2}4 /);
    for (const g of GROUPS) {
      const r = await dq([g.name, '--help']);
      assert.deepEqual([r.code, r.stderr], [EXIT.ok, '']);
      assert.match(r.stdout, new RegExp(`^dq ${g.name}: `));
    }
    for (const c of COMMANDS) {
      const r = await dq([c.group, c.name, '-h']);
      assert.deepEqual([r.code, r.sent.length], [EXIT.ok, 0]);
      assert.match(r.stdout, new RegExp(`^Usage: dq ${c.group} ${c.name}`));
      for (const o of c.options)
        assert.ok(r.stdout.includes(`--${o.name}`), `${c.group} ${c.name} --help names --${o.name}`);
      assert.equal((await dq(['help', c.group, c.name])).stdout, r.stdout);
    }
  });

  it('usage errors exit 2, say what is wrong and where to read, and send nothing', async () => {
    const cases: [string[], RegExp][] = [
      [[], /^dq: operate a delay queue/],
      [
        ['nope'],
        /^dq: USAGE: unknown command "nope" \(groups: jobs, groups, dead, schedules, topics, flows, keys\)\n\(see dq --help\)\n$/,
      ],
      [['jobs'], /^dq: USAGE: dq jobs needs a command: add, get, put, cancel, list\n\(see dq jobs --help\)\n$/],
      [['jobs', 'nope', '--help'], /unknown command "jobs nope"/],
      [
        ['jobs', 'get', 'example'],
        /^dq: USAGE: missing <id>\nusage: dq jobs get <topic> <id>\n\(see dq jobs get --help\)\n$/,
      ],
      [['jobs', 'get', 'example', 'a', 'b'], /too many arguments: b/],
      [['jobs', 'add', 'example', '--dealy', '5'], /unknown option --dealy\n\(see dq jobs add --help\)/],
      [['jobs', 'add', 'example'], /give one of --delay and --run-at/],
      [['jobs', 'add', 'example', '--delay', '5', '--run-at', '1'], /give one of --delay and --run-at/],
      [
        ['jobs', 'add', 'example', '--delay', 'soon'],
        /--delay must be seconds or a duration.*\n\(see dq jobs add --help\)\n$/,
      ],
      [['jobs', 'add', 'example', '--delay', '5', '--body', '{x'], /--body is not JSON/],
      [['jobs', 'add', 'example', '--delay', '5', '--body', '@missing.json'], /cannot read missing.json/],
      [['jobs', 'add', 'example', '--delay', '5', '--priority', 'high'], /--priority must be a whole number/],
      [
        ['jobs', 'add', 'example', '--delay', '5', '--callback-topic', 'b', '--callback-on', 'done,finished'],
        /--callback-on must be ends separated by commas, of done, dead, cancelled, expired, not "done,finished"/,
      ],
      [
        ['jobs', 'put', 'example', 'j1', '--delay', '5', '--callback-on', 'done'],
        /--callback-on goes with --callback-topic or --callback-url\n\(see dq jobs put --help\)/,
      ],
      [
        ['jobs', 'add', 'example', '--delay', '5', '--dedupe-key', 'a', '--debounce-key', 'b'],
        /give --dedupe-key or --debounce-key, not both/,
      ],
      [['jobs', 'add', 'example', '--delay', '5', '--dedupe-window', '1h'], /--dedupe-window goes with --dedupe-key/],
      [['jobs', 'add', 'example', '--debounce-key', 'b'], /--debounce-key needs --debounce-period/],
      [
        ['jobs', 'add', 'example', '--delay', '5', '--debounce-key', 'b', '--debounce-period', '1'],
        /a debounce add is due its period after the last add: give no --delay or --run-at/,
      ],
      [['jobs', 'add', 'example', '--delay', '5', '--debounce-period', '1'], /go with --debounce-key/],
      [
        ['topics', 'stats', '--profile', 'prod'],
        /profile "prod" asked for \(--profile\), but there is no profile file \/nonexistent\/dq.json/,
      ],
      [['topics', 'stats', '--url', 'https://q.example.com'], /no API key for https:\/\/q.example.com/],
    ];
    for (const [argv, message] of cases) {
      const r = await dq(argv);
      assert.deepEqual([r.code, r.sent.length, r.stdout], [EXIT.usage, 0, ''], `dq ${argv.join(' ')}`);
      assert.match(r.stderr, message, `dq ${argv.join(' ')}`);
    }
    const json = await dq(['--json', 'jobs', 'get', 'example']);
    assert.deepEqual(
      [json.code, JSON.parse(json.stderr)],
      [EXIT.usage, { error: { code: 'USAGE', message: 'missing <id>\nusage: dq jobs get <topic> <id>' } }],
    );
    const early = await dq(['--json', 'jobs', 'add', 'x', '--nope']);
    assert.deepEqual(
      JSON.parse(early.stderr),
      { error: { code: 'USAGE', message: 'unknown option --nope' } },
      'a parse error is JSON too',
    );
  });
});
