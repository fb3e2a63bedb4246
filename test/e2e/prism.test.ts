/**
 * openapi.yaml as a third party reads it: Stoplight Prism's validating proxy (`prism proxy
 * --errors`) in front of the running stack (redis-server + serverless offline). Each scenario runs
 * twice, straight to the stack and through Prism, with keys of its own each time; every answer
 * through Prism must have the status the stack gave directly and carry no `sl-violations` header
 * (with --errors a response that breaks the document becomes Prism's own 500 problem+json, and a
 * request that breaks it Prism's own 422 without reaching the stack). A request the document
 * refuses goes through a second Prism that forwards it unchecked (--validate-request false), so
 * the stack's 400 is still checked against the document.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, killOnExit, stopChild } from '../../scripts/support/process';
import { PROJECT_ROOT, startOffline, type OfflineProcess } from '../support/offline';
import { startRedis, type RedisProcess } from '../support/redis';

const PRISM_BIN = join(PROJECT_ROOT, 'node_modules', '@stoplight', 'prism-cli', 'dist', 'index.js');
const PRISM_READY_MS = 30_000; // it reads and dereferences the 3,000-line document first: ~2 s here

interface Prism {
  url: string;
  pid: number;
  logs(): string;
  stop(): Promise<void>;
}

/** Starts `prism proxy openapi.yaml <upstream> --errors` on a free port; resolves once it listens. */
async function startPrism(upstream: string, extra: string[] = []): Promise<Prism> {
  const port = await freePort();
  const args = [PRISM_BIN, 'proxy', join(PROJECT_ROOT, 'openapi.yaml'), upstream, '--errors', '--port', String(port)];
  const child: ChildProcess = spawn(process.execPath, [...args, ...extra], {
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  killOnExit(child); // last resort: the suite stops it by PID
  let output = '';
  for (const stream of [child.stdout!, child.stderr!])
    stream.on('data', (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-1_000_000)));
  const stop = () => stopChild(child);
  const end = Date.now() + PRISM_READY_MS;
  while (!output.includes(`Prism is listening on http://127.0.0.1:${port}`)) {
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > end) {
      await stop();
      assert.fail(`prism proxy did not start on port ${port}:\n${output}`);
    }
    await sleep(50);
  }
  return { url: `http://127.0.0.1:${port}`, pid: child.pid!, logs: () => output, stop };
}

interface Reply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the JSON answer of any endpoint; each step reads what it checks
  body: any;
  headers: Headers;
  text: string;
}

/** One request of a scenario, as it went (`name` identifies the step in every run). */
interface Step {
  name: string;
  request: string;
  expected: number;
  reply: Reply;
}

/** A scenario's steps, and the checks of their bodies that failed (a failed step does not stop it). */
interface Run {
  steps: Step[];
  problems: string[];
}

describe('openapi.yaml as a Prism validating proxy reads it', () => {
  let redisServer: RedisProcess;
  let offline: OfflineProcess;
  let prism: Prism;
  let unchecked: Prism;
  let seq = 0;
  const uid = (label: string) => `${label}-${process.pid}-${++seq}`;

  /**
   * One request on a connection of its own (no keep-alive: a reused socket the proxy or the stack has
   * just closed fails a request that never reached them).
   */
  function send(base: string, method: string, path: string, body?: unknown): Promise<Reply> {
    const payload = body !== undefined ? JSON.stringify(body) : undefined;
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        new URL(base + path),
        {
          method,
          agent: false,
          headers: {
            authorization: `Bearer ${offline.token}`,
            ...(payload !== undefined
              ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
              : {}),
          },
        },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
          res.on('end', () => {
            let parsed: unknown = text;
            try {
              parsed = JSON.parse(text);
            } catch {}
            const headers = new Headers();
            for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers.set(k, v);
            resolve({ status: res.statusCode ?? 0, body: parsed, headers, text });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  /**
   * The new fields and answers, and the common old routes: every request with the status the
   * stack must give. `base` is the stack or a proxy in front of it; each run uses its own keys.
   * A step or check that fails is recorded and the run goes on, so one run shows every objection.
   */
  async function scenario(base: string): Promise<Run> {
    const run: Run = { steps: [], problems: [] };
    const step = async (name: string, expected: number, method: string, path: string, body?: unknown) => {
      const reply = await send(base, method, path, body);
      run.steps.push({ name, request: `${method} ${path}`, expected, reply });
      return reply;
    };
    const check = (name: string, actual: unknown, expected: unknown) => {
      try {
        assert.deepEqual(actual, expected);
      } catch {
        run.problems.push(`${name}: ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`);
      }
    };
    const [dedupeKey, debounceKey, scheduleId] = [uid('dd'), uid('db'), uid('sched')];

    const prioritized = await step('add with priority', 201, 'POST', '/jobs', {
      topic: 'example',
      delay: 3600,
      priority: 7,
      body: { orderId: 7 },
    });
    const read = await step('read the prioritized job', 200, 'GET', `/jobs/example/${prioritized.body?.job?.id}`);
    check('its priority', read.body?.job?.priority, 7);

    const first = await step('dedupe: first add', 201, 'POST', '/jobs', {
      topic: 'example',
      delay: 3600,
      dedupe: { key: dedupeKey, window: '1h' },
      body: 1,
    });
    const duplicate = await step('dedupe: second add', 200, 'POST', '/jobs', {
      topic: 'example',
      delay: 60,
      dedupe: { key: dedupeKey },
      body: 2,
    });
    check('duplicateOf', duplicate.body?.duplicateOf, first.body?.job?.id);

    const waiting = await step('debounce: first add', 201, 'POST', '/jobs', {
      topic: 'example',
      debounce: { key: debounceKey, period: '1h', maxWait: '2h' },
      body: 1,
    });
    const folded = await step('debounce: second add', 200, 'POST', '/jobs', {
      topic: 'example',
      debounce: { key: debounceKey, period: 3600 },
      body: 2,
    });
    check('debounced into the first', [folded.body?.debounced, folded.body?.job?.id], [true, waiting.body?.job?.id]);

    const batch = await step('batch of plain, keyed and prioritized adds', 200, 'POST', '/jobs/batch', {
      jobs: [
        { topic: 'example', delay: 3600, priority: -3 },
        { topic: 'example', delay: 1, dedupe: { key: dedupeKey } },
        { topic: 'example', body: 3, debounce: { key: debounceKey, period: 3600 } },
        { topic: 'example', runAt: new Date(Date.now() + 3_600_000).toISOString(), dedupe: { key: uid('dd') } },
      ],
    });
    check(
      'batch results',
      (batch.body?.results ?? []).map((r: { status: number; duplicateOf?: string; debounced?: boolean }) => [
        r.status,
        r.duplicateOf ?? r.debounced ?? null,
      ]),
      [
        [201, null],
        [200, first.body?.job?.id],
        [200, true],
        [201, null],
      ],
    );
    const batched = await step('read the batch job', 200, 'GET', `/jobs/example/${batch.body?.results?.[0]?.job?.id}`);
    check('its priority', batched.body?.job?.priority, -3);

    const path = `/schedules/example/${scheduleId}`;
    const put = await step('schedule put with priority and expireAfter', 201, 'PUT', path, {
      every: 3600,
      priority: 5,
      expireAfter: '30m',
      body: { report: 'hourly' },
    });
    check('put: priority, expireAfter', [put.body?.schedule?.priority, put.body?.schedule?.expireAfter], [5, 1800]);
    const got = await step('schedule read', 200, 'GET', path);
    check('read: priority, expireAfter', [got.body?.schedule?.priority, got.body?.schedule?.expireAfter], [5, 1800]);

    await step('add a ready job', 201, 'POST', '/jobs', { topic: 'example', delay: 0, priority: 2 });
    await step('list ready jobs', 200, 'GET', '/topics/example/jobs?state=ready&limit=10');
    const topics = await step('topic counts', 200, 'GET', '/topics');
    check('topics is a list', Array.isArray(topics.body?.topics), true);
    return run;
  }

  /** Prism's objections to an answer, or '' when it made none. */
  function violations(reply: Reply): string {
    const header = reply.headers.get('sl-violations');
    const problem = (reply.headers.get('content-type') ?? '').includes('application/problem+json');
    return header !== null || problem ? `sl-violations: ${header ?? '(none)'}; body: ${reply.text}` : '';
  }

  /** Every way `run` (through `via`) differs from the direct run, one line each. */
  function differences(via: string, run: Run, direct: Run): string[] {
    const lines = run.problems.map((p) => `${via}: ${p}`);
    run.steps.forEach((s, i) => {
      const status = direct.steps[i]?.reply.status;
      const objection = violations(s.reply);
      if (s.reply.status !== status || objection !== '')
        lines.push(`${via}: ${s.name} (${s.request}) → ${s.reply.status}, directly ${status}. ${objection}`);
    });
    return lines;
  }

  /** The add the document refuses: a dedupe key with `::`. */
  const badKey = () => ({ topic: 'example', delay: 1, dedupe: { key: `${uid('bad')}::x` } });

  before(async () => {
    redisServer = await startRedis();
    offline = await startOffline({ redisUrl: redisServer.url });
    [prism, unchecked] = await Promise.all([
      startPrism(offline.baseUrl),
      startPrism(offline.baseUrl, ['--validate-request', 'false']),
    ]);
  });
  after(async () => {
    await prism?.stop();
    await unchecked?.stop();
    await offline?.stop();
    await redisServer?.stop();
  });

  it('answers every request of the scenario as the stack does, with no violation', async () => {
    const direct = await scenario(offline.baseUrl);
    assert.deepEqual(direct.problems, []);
    assert.deepEqual(
      direct.steps.map((s) => [s.name, s.reply.status]),
      direct.steps.map((s) => [s.name, s.expected]),
    );
    // the checking proxy finds what Prism makes of requests and answers; the unchecked one forwards
    // every request, so an answer's violations show even when Prism refused a request before it
    const [checked, forwarded] = [await scenario(prism.url), await scenario(unchecked.url)];
    const lines = [...differences('prism', checked, direct), ...differences('prism (unchecked)', forwarded, direct)];
    if (lines.length > 0) assert.fail(`Prism's objections:\n${lines.join('\n')}`);
    assert.doesNotMatch(prism.logs() + unchecked.logs(), /Violation:/);
  });

  it('a 400 for a bad dedupe.key: Prism refuses it as the document says, and passes the stack answer unchanged', async () => {
    const direct = await send(offline.baseUrl, 'POST', '/jobs', badKey());
    assert.deepEqual(
      [direct.status, direct.body.error?.code, direct.body.error?.details?.map((d: { path: string }) => d.path)],
      [400, 'VALIDATION_FAILED', ['dedupe.key']],
    );

    // checked: Prism reads the key's pattern and refuses the request itself (422), without forwarding it
    const refused = await send(prism.url, 'POST', '/jobs', badKey());
    assert.equal(refused.status, 422, refused.text);
    assert.deepEqual(
      refused.body.validation?.map((v: { location: string[] }) => v.location.join('.')),
      ['body.dedupe.key'],
      refused.text,
    );

    // unchecked: forwarded; the stack's 400 matches the document's answer
    const forwarded = await send(unchecked.url, 'POST', '/jobs', badKey());
    assert.deepEqual([forwarded.status, forwarded.body.error?.code], [400, 'VALIDATION_FAILED']);
    assert.equal(violations(forwarded), '');
  });
});
