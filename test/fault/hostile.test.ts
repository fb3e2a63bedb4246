/**
 * Hostile input and security, through serverless offline: seeded property-based requests
 * (fast-check) with random and malformed bodies, headers, paths, unicode, huge numbers, deep
 * nesting and wrong types must never get a 5xx, must get a documented 4xx code, and must leave
 * Redis unchanged when refused; topic and id values that try to escape the key space never reach
 * Redis; bad tokens of every kind get 401 and no token ever appears in the logs.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { deliverWebhook } from '../../lib/workers/webhook';
import { startOffline, type OfflineProcess } from '../support/offline';
import { startRedis, type RedisProcess } from '../support/redis';

const SEED = Number(process.env.FAULT_SEED ?? Date.now() % 2 ** 31);
const RUNS = Number(process.env.FAULT_PROPERTY_RUNS ?? 300);

/** The codes the README documents per status. */
const DOCUMENTED: Record<number, string[]> = {
  400: ['VALIDATION_FAILED', 'INVALID_JSON', 'UNKNOWN_TOPIC'],
  401: ['UNAUTHORIZED'],
  404: ['NOT_FOUND'],
  409: ['JOB_EXISTS', 'JOB_FINISHED'],
  413: ['PAYLOAD_TOO_LARGE'],
};

interface Reply {
  status: number;
  text: string;
  json: { error?: { code?: string } } | undefined;
}

describe('hostile input and security (serverless offline)', () => {
  let server: RedisProcess;
  let redis: Redis;
  let offline: OfflineProcess;
  before(async () => {
    server = await startRedis({ args: ['--enable-debug-command', 'local'] });
    redis = new Redis(server.url);
    offline = await startOffline({ redisUrl: server.url });
    // jobs that exist, so refusals have keys they could wrongly touch
    for (const [topic, id] of [
      ['example', 'seed-1'],
      ['webhook', 'seed-2'],
    ]) {
      const res = await send('POST', '/jobs', {
        body: JSON.stringify({ topic, id, delay: 3600, url: 'https://example.com/hook', body: { a: 1 } }),
      });
      assert.equal(res.status, 201, res.text);
    }
  });
  after(async () => {
    await offline?.stop();
    redis?.disconnect();
    await server?.stop();
  });

  async function send(
    method: string,
    path: string,
    options: { body?: string; headers?: Record<string, string>; token?: string | null } = {},
  ): Promise<Reply> {
    const token = options.token === undefined ? offline.token : options.token;
    const res = await fetch(offline.baseUrl + path, {
      method,
      headers: {
        ...(token !== null ? { authorization: `Bearer ${token}` } : {}),
        'content-type': 'application/json',
        ...options.headers,
      },
      ...(options.body !== undefined && method !== 'GET' ? { body: options.body } : {}),
    });
    const text = await res.text();
    let json;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, text, json };
  }

  /** DEBUG DIGEST-VALUE of every job key (the sweeper's own keys change with its ticks). */
  async function digest(): Promise<string> {
    const keys = (await redis.keys('dq:{p*')).sort();
    const values = keys.length ? ((await redis.call('DEBUG', 'DIGEST-VALUE', ...keys)) as string[]) : [];
    return keys.map((k, i) => `${k}=${values[i]}`).join('\n');
  }

  it(`random and malformed requests: never a 5xx, always a documented 4xx, nothing written when refused (seed ${SEED}, ${RUNS} runs)`, async (t) => {
    t.diagnostic(`fast-check seed ${SEED} (FAULT_SEED=${SEED} repeats it)`);
    const segment = fc.oneof(
      fc.constantFrom(
        'example',
        'webhook',
        'seed-1',
        'nope',
        '',
        '%7B',
        '%7D',
        'a%3Ab',
        '*',
        '%20',
        '%0A',
        '..',
        '%2F',
        'x'.repeat(200),
        'p0}:jobs',
        'é',
        '%F0%9F%98%80',
        '%00',
      ),
      fc.string({ unit: 'grapheme', maxLength: 20 }).map(encodeURIComponent),
      fc.string({ maxLength: 140 }).map(encodeURIComponent),
    );
    const route = fc.oneof(
      fc.record({ method: fc.constant('POST'), path: fc.constant('/jobs') }),
      fc.record({ method: fc.constant('POST'), path: fc.constant('/jobs/batch') }),
      fc.record({
        method: fc.constantFrom('GET', 'PUT', 'DELETE'),
        path: fc.tuple(segment, segment).map(([a, b]) => `/jobs/${a}/${b}`),
      }),
      fc.record({ method: fc.constant('GET'), path: segment.map((s) => `/topics/${s}/dead`) }),
      fc.record({ method: fc.constant('POST'), path: segment.map((s) => `/topics/${s}/dead/redrive`) }),
    );
    const hugeNumber = fc.oneof(
      fc.constantFrom(1e308, -1e308, 2 ** 53 + 1, -0, 1e-320, Number.MAX_SAFE_INTEGER),
      fc.double(),
    );
    const deep = fc.integer({ min: 50, max: 5000 }).map((n) => '['.repeat(n) + ']'.repeat(n));
    const wrongJob = fc.record(
      {
        topic: fc.oneof(
          fc.constantFrom('example', 'webhook', 'a{b}', 'a:b', 'a b', 'a\nb', '*', 'x'.repeat(65)),
          fc.anything(),
        ),
        id: fc.oneof(fc.constantFrom('a{b}', 'a b', 'a\nb', '*', 'x'.repeat(129), '😀'), fc.anything()),
        delay: fc.oneof(hugeNumber, fc.constantFrom(-1, '5', null, true, [], {})),
        runAt: fc.oneof(hugeNumber, fc.constantFrom('2030-02-30T00:00:00Z', 'yesterday', '1700000000', 1700000000)),
        body: fc.anything(),
        maxAttempts: fc.oneof(hugeNumber, fc.constantFrom(0, 1001, '3')),
        backoff: fc.oneof(fc.anything(), fc.constantFrom('15s 3m', 'forever', { type: 'ladder', delays: [] })),
        ttr: fc.oneof(hugeNumber, fc.constantFrom(0, 0.01, 86401)),
        url: fc.oneof(
          fc.constantFrom('javascript:alert(1)', 'http://user:pw@x', 'ftp://x', 'x'.repeat(3000)),
          fc.webUrl(),
        ),
        extra: fc.anything(),
      },
      { requiredKeys: [] },
    );
    const body = fc.oneof(
      fc.json(),
      fc.string({ unit: 'grapheme', maxLength: 200 }),
      deep,
      wrongJob.map((j) => JSON.stringify(j)),
      fc.array(wrongJob, { maxLength: 5 }).map((jobs) => JSON.stringify({ jobs })),
      fc.constantFrom(
        '',
        '{',
        '{"topic": "example", "delay": 1,}',
        'null',
        '[]',
        '{"jobs": []}',
        `{"jobs": [${'{},'.repeat(600)}{}]}`,
        '"\\ud800"',
        `{"body": "${'x'.repeat(70_000)}", "topic": "example", "delay": 1}`,
      ),
    );
    const headers = fc.oneof(
      fc.constant({}),
      fc.record({
        'content-type': fc.constantFrom(
          'text/plain',
          'application/x-www-form-urlencoded',
          'application/json; charset=latin1',
          '',
        ),
      }),
      fc.record({
        'x-forwarded-for': fc.constantFrom('169.254.169.254', '127.0.0.1'),
        'content-encoding': fc.constantFrom('gzip', 'identity'),
      }),
    );
    const seen: Record<string, number> = {};
    const outcome = await fc.check(
      fc.asyncProperty(route, body, headers, async ({ method, path }, text, extraHeaders) => {
        const before = await digest();
        const reply = await send(method, path, { body: text, headers: extraHeaders });
        const key = `${reply.status} ${reply.json?.error?.code ?? ''}`;
        seen[key] = (seen[key] ?? 0) + 1;
        if (reply.status >= 500) throw new Error(`${method} ${path} -> ${reply.status} ${reply.text.slice(0, 300)}`);
        if (reply.status >= 200 && reply.status < 300) return; // a valid request, written as asked
        const code = reply.json?.error?.code;
        // a request the gateway refuses itself (an unmatched route, say /topics//dead) never reaches
        // a Lambda: its body is the gateway's, without our error code
        if (typeof reply.json?.error === 'object' || ![400, 404].includes(reply.status)) {
          assert.ok(
            DOCUMENTED[reply.status]?.includes(code ?? ''),
            `${method} ${path} -> ${reply.status} ${reply.text.slice(0, 300)}`,
          );
        }
        if (reply.status !== 409)
          assert.equal(await digest(), before, `${method} ${path} (${reply.status}) changed Redis`);
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    if (outcome.failed) {
      assert.fail(
        `seed ${SEED}, after ${outcome.numRuns} runs: ${JSON.stringify(outcome.counterexample)}\n${String(outcome.errorInstance)}`,
      );
    }
    t.diagnostic(`answers: ${JSON.stringify(seen)}`);
  });

  it('topic and id values that try to escape the key space are refused before they reach Redis', async (t) => {
    const monitor = new Redis(server.url);
    const commands: string[][] = [];
    const m = await monitor.monitor(); // a connection of its own
    t.after(() => {
      m.disconnect();
      monitor.disconnect();
    });
    m.on('monitor', (_time: string, args: string[]) => commands.push(args));
    const hostile = [
      'a{b',
      'a}b',
      '{p0}',
      'a:b',
      'a*',
      '*',
      'a b',
      'a\nb',
      'a\r\nDEL x',
      't'.repeat(65),
      'x'.repeat(129),
      'é',
      '😀',
      '../x',
      'a%7Bb',
    ];
    const refused: string[] = [];
    for (const value of hostile) {
      for (const [field, other] of [
        ['topic', 'example'],
        ['id', 'ok-id'],
      ] as const) {
        const job =
          field === 'topic' ? { topic: value, id: other, delay: 1 } : { topic: 'example', id: value, delay: 1 };
        // valid ids: ':' is allowed (a hash field, never part of a key), and up to 128 characters
        if (field === 'id' && (value === 'a:b' || value === 't'.repeat(65))) continue;
        const r = await send('POST', '/jobs', { body: JSON.stringify(job) });
        assert.deepEqual(
          [r.status, r.json?.error?.code],
          [400, 'VALIDATION_FAILED'],
          `${field} ${JSON.stringify(value)}: ${r.text}`,
        );
        refused.push(value);
      }
      const enc = encodeURIComponent(value);
      const validId = value === 'a:b' || value === 't'.repeat(65);
      for (const path of validId ? [`/jobs/${enc}/ok-id`] : [`/jobs/${enc}/ok-id`, `/jobs/example/${enc}`]) {
        for (const method of ['GET', 'PUT', 'DELETE']) {
          const r = await send(method, path, { body: '{"delay":1}' });
          assert.ok(
            r.status === 400 || (r.status === 404 && r.json?.error === undefined),
            `${method} ${path}: ${r.status} ${r.text}`,
          );
          if (r.status === 400) assert.equal(r.json?.error?.code, 'VALIDATION_FAILED');
        }
      }
      const redrive = await send('POST', '/topics/example/dead/redrive', { body: JSON.stringify({ ids: [value] }) });
      if (!validId) assert.equal(redrive.status, 400, `redrive ${JSON.stringify(value)}: ${redrive.text}`);
    }
    await new Promise((r) => setTimeout(r, 300));
    m.disconnect();
    monitor.disconnect();
    // a value reaching Redis would be an argument (an id) or the end of a key name (a topic)
    const refusedValues = hostile.filter((v) => v !== 'a:b' && v !== 't'.repeat(65));
    const leaked = commands
      .filter((args) => args.some((a) => refusedValues.some((v) => a === v || a.endsWith(`:${v}`))))
      .map((args) => args.join(' ').slice(0, 200));
    assert.deepEqual(leaked, [], 'no hostile value reached Redis');
    assert.ok(refused.length > 20);
  });

  it('missing, wrong and near-miss tokens get 401, and no token appears in the logs', async () => {
    const real = offline.token;
    const wrong = [
      randomBytes(real.length / 2).toString('hex'), // same length
      real.slice(0, -1) + (real.endsWith('0') ? '1' : '0'), // differs in the last character only
      real.slice(0, 1), // shares the first character
      real.slice(0, -1), // a prefix
      `${real}0`, // a suffix added
      real.toUpperCase() === real ? real.toLowerCase() : real.toUpperCase(),
      ` ${real}`,
      '',
      'null',
    ];
    const sent: string[] = [];
    for (const token of wrong) {
      for (const [method, path] of [
        ['GET', '/topics'],
        ['POST', '/jobs'],
        ['DELETE', '/jobs/example/seed-1'],
      ]) {
        const r = await send(method!, path!, { token, body: '{"topic":"example","delay":1}' });
        assert.deepEqual([r.status, r.json?.error?.code], [401, 'UNAUTHORIZED'], `token ${JSON.stringify(token)}`);
        sent.push(token);
      }
    }
    for (const authorization of [
      `bearer ${real}`,
      `Basic ${Buffer.from(`u:${real}`).toString('base64')}`,
      real,
      `Bearer  ${real}`,
      `Token ${real}`,
    ]) {
      const r = await send('GET', '/topics', { token: null, headers: { authorization } });
      assert.equal(r.status, 401, authorization);
    }
    assert.equal((await send('GET', '/topics', { token: null })).status, 401);
    // and a good request with the token, which must not be logged either
    assert.equal((await send('GET', '/topics')).status, 200);
    assert.equal((await send('GET', '/jobs/example/nope')).status, 404);
    await new Promise((r) => setTimeout(r, 500));
    const logs = offline.logs();
    assert.ok(logs.includes('unauthorized request'), 'the 401s were logged');
    assert.equal(logs.includes(real), false, 'the real token appears in the logs');
    for (const token of wrong.filter((w) => w.trim().length >= 8))
      assert.equal(logs.includes(token.trim()), false, `a sent token appears in the logs: ${token}`);
  });

  it('webhooks on an AWS stage: an allowed host redirecting to the metadata address is not followed', async () => {
    let hits = 0;
    const target = createServer((req, res) => {
      hits += 1;
      res
        .writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/iam/security-credentials/?x=secret' })
        .end();
    });
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', () => r()));
    const port = (target.address() as { port: number }).port;
    try {
      const job = { topic: 'webhook', id: 'r1', attempt: 1, url: `http://localhost:${port}/hook`, body: { a: 1 } };
      // plain http is refused outright on AWS stages
      await assert.rejects(
        deliverWebhook(job, { secret: 's', allowPrivate: false, allowHosts: ['localhost'], timeoutMs: 2000 }),
        /refused: http URLs are not allowed/,
      );
      // local stage rules (http allowed) but the redirect target is never requested
      await assert.rejects(deliverWebhook(job, { secret: 's', allowPrivate: true, timeoutMs: 2000 }), (err: Error) => {
        assert.match(
          err.message,
          /^HTTP 302: redirect to http:\/\/169\.254\.169\.254\/latest\/meta-data\/iam\/security-credentials\/ not followed$/,
        );
        return true;
      });
      assert.equal(hits, 1);
    } finally {
      target.close();
    }
  });
});
