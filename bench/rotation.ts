/**
 * Key rotation benchmark (issue 33, "Done when"; not a test): `npm run bench:rotation`.
 *
 * Starts a redis-server (nothing persisted) and `serverless offline` (stage local, LOG_LEVEL info)
 * on free ports, and stops both by PID and process group at the end, also on error and Ctrl-C.
 * An open-loop driver sends BENCH_ROTATION_RATE (200) requests a second, round robin over
 * BENCH_ROTATION_CLIENTS (20) clients; each client cycles through five API functions: POST /jobs
 * (topic `example`, due in a day, so no job runs; 4 in 10), GET /jobs/example/{id} of a job added
 * before (3 in 10), GET /topics, GET /topics/example/jobs?limit=10 and GET /whoami (1 in 10 each).
 * Requests go through undici's `request` (about half the client CPU of `fetch`, measured), on
 * connections not kept alive (as in the tests, test/support/no-keepalive.mjs): a pooled connection
 * that the server closes under a request would fail it for a reason that is not the keys'.
 *
 *  0. warm-up, with the deployment key (API_TOKEN): bursts of requests at once start instances,
 *     BENCH_ROTATION_INSTANCES (8) requests to addJob, to the others in proportion to their share
 *     of the mix (at least 2), one function after another (offline starts another worker when a
 *     function is called while its workers are busy, as Lambda starts another instance); then
 *     BENCH_ROTATION_WARM_SECONDS (20) of load, its rate ramped up from a tenth over the first half
 *     (a run with 10 s saw a backlog of up to 2.4 s form at full rate and drain over 12 s).
 *  1. old: POST /keys {name: old, scope: write}; every client sends with it once it is answered,
 *     for BENCH_ROTATION_OLD_SECONDS (5).
 *  2. move: POST /keys {name: new, scope: write}; over BENCH_ROTATION_MOVE_SECONDS (5), the clients
 *     but BENCH_ROTATION_STAY_PERCENT (30) % move to it one after another, evenly spread.
 *  3. revoke: after a further random wait under KEY_RECHECK_MS, DELETE /keys/old, while the other
 *     30 % still send with it; they go on for BENCH_ROTATION_AFTER_SECONDS (10) after its answer,
 *     then everything stops. The wait puts the revoke at a random point of the instances' recheck
 *     cycle: they all learnt the old key within a few ms, when the clients moved to it, so they
 *     recheck it together every 2 s, and a revoke a fixed time later lands at the same point of
 *     that cycle in every run.
 *
 * Every answer is kept with its client, key, route and the times it was sent and answered. The
 * time of a request is when it was sent: an old-key request accepted although sent X ms after the
 * revoke's answer shows the key still worked X ms after it. When requests queue in the stack, a
 * request is decided later than it was sent, so the server's side is measured too, on the
 * machine's wall clock: from the move on, a MONITOR connection records when Redis ran the revoke
 * and every lookup of the old key's digest (lua/authKey-4.lua): the last lookup that found the key
 * bounds how long any instance may trust it after the revoke; and the functions' own `request` log
 * lines (they name the key; their time is the answer's) give every old-key request accepted after
 * Redis ran the revoke. Their `cold_start` flags count the instances of each function.
 *
 * Goals (issue 33): 0 failed requests (non-2xx, or no answer) among those sent and answered before
 * the revoke was sent; 0 failed requests with the new key at any time; every old-key request sent
 * 5 s or more after the revoke's answer refused with 401, and none accepted by a function 5 s or
 * more after Redis ran the revoke. Exits 1 naming each goal missed. BENCH_ROTATION_LOG=<file>
 * writes the stack's output there.
 *
 * Results are in BENCHMARKS.md.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { Agent, request, type Dispatcher } from 'undici';
import { secretDigest } from '../lib/engine';
import { groupCpuTicks } from '../scripts/support/process';
import { startOffline, type OfflineProcess } from '../test/support/offline';
import { startRedis, type RedisProcess } from '../test/support/redis';
import { describeMachine, envInt, fmt, printTable } from './env';
import { KEY_RECHECK_MS } from '../lib/testing';

const N = {
  rate: envInt('BENCH_ROTATION_RATE', 200),
  clients: envInt('BENCH_ROTATION_CLIENTS', 20),
  warmSeconds: envInt('BENCH_ROTATION_WARM_SECONDS', 20),
  instances: envInt('BENCH_ROTATION_INSTANCES', 8),
  oldSeconds: envInt('BENCH_ROTATION_OLD_SECONDS', 5),
  moveSeconds: envInt('BENCH_ROTATION_MOVE_SECONDS', 5),
  afterSeconds: envInt('BENCH_ROTATION_AFTER_SECONDS', 10),
  stayPercent: envInt('BENCH_ROTATION_STAY_PERCENT', 30),
};
if (N.stayPercent >= 100) throw new Error('BENCH_ROTATION_STAY_PERCENT must be below 100');
const GOALS = { failedBeforeRevoke: 0, newKeyFailed: 0, refusedWithinMs: 5_000 };
const TOPIC = 'example'; // serverless.yml's topic; its jobs here are due in a day, so none runs
const JOB_DELAY_S = 86_400;
const REQUEST_TIMEOUT_MS = 15_000; // an answer later than this counts as none (a failure)

type KeyName = 'deployment' | 'old' | 'new';
type RouteName = 'addJob' | 'getJob' | 'topics' | 'listJobs' | 'whoami';

/**
 * Each route: its function (serverless.yml) is its name; `routeKey` as the functions log it; `ok` the status it
 * answers.
 */
const ROUTES: Record<RouteName, { routeKey: string; ok: number }> = {
  addJob: { routeKey: 'POST /jobs', ok: 201 },
  getJob: { routeKey: 'GET /jobs/{topic}/{id}', ok: 200 },
  topics: { routeKey: 'GET /topics', ok: 200 },
  listJobs: { routeKey: 'GET /topics/{topic}/jobs', ok: 200 },
  whoami: { routeKey: 'GET /whoami', ok: 200 },
};
/** The mix a client cycles through: 4 adds, 3 reads of a job, 1 each of the others. */
const MIX: RouteName[] = [
  'addJob',
  'getJob',
  'addJob',
  'topics',
  'getJob',
  'addJob',
  'listJobs',
  'getJob',
  'addJob',
  'whoami',
];

/** One request's record. Times are epoch ms with a fraction; status 0: no answer (`error` says why). */
interface Answer {
  n: number;
  client: number;
  key: KeyName;
  route: RouteName;
  dueAt: number;
  sentAt: number;
  answeredAt: number;
  status: number;
  code?: string;
  error?: string;
}

const now = () => performance.timeOrigin + performance.now();
const loadNow = () => loadavg().map((l) => Number(l.toFixed(2)));
/** The `q` quantile (0..1) of sorted `values`, nearest rank. */
const quantile = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN;
const sortNum = (values: readonly number[]) => [...values].sort((a, b) => a - b);
const ms = (n: number | null) => (n === null || Number.isNaN(n) ? '—' : `${fmt(n)} ms`);
const plusMs = (n: number | null) => (n === null ? '—' : `+${fmt(n)} ms`);
const isOk = (a: Answer) => a.status >= 200 && a.status < 300;
const latencies = (answers: readonly Answer[]) => {
  const sorted = sortNum(answers.filter((a) => a.status !== 0).map((a) => a.answeredAt - a.sentAt));
  return {
    n: sorted.length,
    p50: Math.round(quantile(sorted, 0.5)),
    p99: Math.round(quantile(sorted, 0.99)),
    max: Math.round(sorted.at(-1) ?? NaN),
  };
};
/** "N (401 ×a, 500 ×b, no answer ×c)": how `answers` failed. */
const failures = (answers: readonly Answer[]) => {
  const failed = answers.filter((a) => !isOk(a));
  const by = new Map<string, number>();
  for (const a of failed) {
    const what = a.status === 0 ? `no answer: ${a.error}` : `${a.status}${a.code ? ` ${a.code}` : ''}`;
    by.set(what, (by.get(what) ?? 0) + 1);
  }
  return {
    count: failed.length,
    by: Object.fromEntries(by),
    text: `${fmt(failed.length)}${by.size ? ` (${[...by].map(([w, c]) => `${w} ×${c}`).join(', ')})` : ''}`,
  };
};

/**
 * How the old key stopped among `answers` (old-key requests sent after the revoke's answer at
 * `from`): the send time, after `from`, of the last one accepted (2xx), and the send time from
 * which every one was refused with 401 (null: the last one was not).
 */
function cutOff(answers: readonly Answer[], from: number) {
  const sorted = [...answers].sort((a, b) => a.sentAt - b.sentAt);
  const accepted = sorted.filter(isOk);
  const refused = sorted.filter((a) => a.status === 401);
  let first = sorted.length;
  while (first > 0 && sorted[first - 1]!.status === 401) first--;
  return {
    sent: sorted.length,
    accepted: accepted.length,
    refused: refused.length,
    other: sorted.length - accepted.length - refused.length,
    lastAcceptedMs: accepted.length ? Math.round(accepted.at(-1)!.sentAt - from) : null,
    allRefusedFromMs: first < sorted.length ? Math.round(sorted[first]!.sentAt - from) : null,
  };
}

/**
 * CPU ms used so far: by the stack (offline's process group), redis-server, this process, and the whole machine (busy
 * and all, from /proc/stat).
 */
function cpuNow(offlinePgid: number, redisPid: number) {
  const tickMs = 10; // USER_HZ is 100 on Linux
  let redisTicks = 0;
  try {
    const stat = readFileSync(`/proc/${redisPid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    redisTicks = Number(f[11]) + Number(f[12]);
  } catch {} // not Linux: no figure
  const [, ...fields] = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/);
  const n = fields.map(Number);
  const all = n.slice(0, 8).reduce((a, b) => a + b, 0); // user nice system idle iowait irq softirq steal
  const idle = (n[3] ?? 0) + (n[4] ?? 0);
  const own = process.cpuUsage();
  return {
    stack: (groupCpuTicks(offlinePgid) ?? 0) * tickMs,
    redis: redisTicks * tickMs,
    bench: (own.user + own.system) / 1000,
    busy: (all - idle) * tickMs,
    all: all * tickMs,
  };
}

// ---------------------------------------------------------------------------------------------
// processes: every one started is stopped in a finally, and on Ctrl-C

const cleanups: (() => Promise<void>)[] = [];
async function stopEverything(): Promise<void> {
  for (const stop of cleanups.splice(0).reverse())
    await stop().catch((error: unknown) => console.error('cleanup failed:', error));
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\ngot ${signal}: stopping every process this bench started`);
    void stopEverything().finally(() => process.exit(130));
  });
}

/**
 * MONITOR on a connection of its own: `onCommand` gets each command Redis runs, with its time
 * (epoch ms, Redis's clock) and its quoted arguments (`"fcall" "dq_…_authKey" "4" …`). Resolves once
 * Redis has confirmed. A plain socket: ioredis's monitor mode misreads lines that come in the same
 * read as MONITOR's OK ("Command queue state error", seen with this stack's traffic).
 */
async function monitorRedis(port: number, onCommand: (time: number, args: string) => void): Promise<void> {
  const socket = connect(port, '127.0.0.1');
  cleanups.push(async () => void socket.destroy());
  let buffer = '';
  let confirmed: () => void = () => undefined;
  const ok = new Promise<void>((resolve, reject) => {
    confirmed = resolve;
    socket.once('error', reject);
  });
  socket.on('error', () => undefined); // after the start: the monitor ends with the run
  socket.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('latin1');
    for (let end = buffer.indexOf('\r\n'); end >= 0; end = buffer.indexOf('\r\n')) {
      const line = buffer.slice(0, end); // arguments are escaped: a line holds no CRLF
      buffer = buffer.slice(end + 2);
      if (line === '+OK') confirmed();
      const m = /^\+(\d+\.\d+) \[[^\]]*\] (.*)$/.exec(line);
      if (m) onCommand(Number(m[1]) * 1000, m[2]!);
    }
  });
  socket.write('MONITOR\r\n');
  await ok;
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const at = new Date().toISOString();
  const loadStart = loadNow();
  const redis: RedisProcess = await startRedis();
  cleanups.push(() => redis.stop());
  const probe = new Redis(redis.url);
  const machine = describeMachine(await probe.info('server'), redis.pid);
  probe.disconnect();
  const offline: OfflineProcess = await startOffline({
    redisUrl: redis.url,
    env: { LOG_LEVEL: 'info' },
    maxLogBytes: 256 * 1024 * 1024,
  });
  cleanups.push(() => offline.stop());
  console.log(
    `machine: ${machine.cpus} CPUs (${machine.cpuModel}), node ${machine.node}, redis ${machine.redis}; load average ${loadStart.join(' / ')}`,
  );
  console.log(`serverless offline ready in ${fmt(offline.startupMs)} ms; options ${JSON.stringify(N)}`);

  const agent = new Agent({ pipelining: 0 }); // no keep-alive (see the top of this file)
  cleanups.push(() => agent.close());
  const secrets: Partial<Record<KeyName, string>> = { deployment: offline.token };
  const ids: string[] = []; // jobs added (201), for GET /jobs/{topic}/{id}
  const answers: Answer[] = [];
  const inFlight = new Set<Promise<void>>();
  let maxInFlight = 0;
  const movers = Math.round((N.clients * (100 - N.stayPercent)) / 100);
  let moveStart: number | undefined;
  let stopAt = Infinity;

  /** The key client `c` sends with at time `t`. */
  const keyOf = (c: number, t: number): KeyName => {
    if (secrets.old === undefined) return 'deployment';
    if (secrets.new === undefined || moveStart === undefined) return 'old';
    return c < movers && t >= moveStart + (c / movers) * N.moveSeconds * 1000 ? 'new' : 'old';
  };

  /** An admin call with the deployment key; throws unless it answers `expect`. */
  const admin = async (method: string, path: string, expect: number, body?: unknown) => {
    const res = await request(offline.baseUrl + path, {
      method: method as Dispatcher.HttpMethod,
      headers: { authorization: `Bearer ${offline.token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      dispatcher: agent,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await res.body.text();
    if (res.statusCode !== expect)
      throw new Error(`${method} ${path} answered ${res.statusCode}, not ${expect}: ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };

  /** Request `n`: its client, route and key follow from n and the time. */
  const send = async (n: number, dueAt: number): Promise<void> => {
    const client = n % N.clients;
    let route = MIX[(Math.floor(n / N.clients) + client) % MIX.length]!; // every client goes through the whole mix
    if (route === 'getJob' && ids.length === 0) route = 'addJob';
    const id = `rot-${n}`;
    const path = {
      addJob: '/jobs',
      getJob: `/jobs/${TOPIC}/${ids[Math.floor(Math.random() * ids.length)]}`,
      topics: '/topics',
      listJobs: `/topics/${TOPIC}/jobs?limit=10`,
      whoami: '/whoami',
    }[route];
    const sentAt = now();
    const key = keyOf(client, sentAt);
    const answer: Answer = { n, client, key, route, dueAt, sentAt, answeredAt: NaN, status: 0 };
    try {
      const res = await request(offline.baseUrl + path, {
        method: route === 'addJob' ? 'POST' : 'GET',
        headers: { authorization: `Bearer ${secrets[key]}`, 'content-type': 'application/json' },
        ...(route === 'addJob' ? { body: JSON.stringify({ topic: TOPIC, id, delay: JOB_DELAY_S, body: { n } }) } : {}),
        dispatcher: agent,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const text = await res.body.text();
      answer.answeredAt = now();
      answer.status = res.statusCode;
      if (res.statusCode === ROUTES[route].ok && route === 'addJob') ids.push(id);
      if (!isOk(answer)) {
        try {
          answer.code = (JSON.parse(text) as { error?: { code?: string } }).error?.code;
        } catch {} // not JSON: the status says enough
      }
    } catch (error) {
      answer.answeredAt = now();
      const code = [(error as { code?: unknown }).code, (error as { cause?: { code?: unknown } }).cause?.code].find(
        (c) => typeof c === 'string',
      ); // not a DOMException's number
      answer.error = error instanceof Error ? `${error.name}${code ? ` ${code}` : ''}` : String(error);
    }
    answers.push(answer);
  };

  /**
   * Sends requests, each at its due time (late ones at once), until stopAt: N.rate a second, after
   * a ramp from a tenth of it over the warm-up's first half (offline starts a worker for each
   * request that finds a function's workers busy; 200 a second on cold functions started dozens
   * at once and timed out).
   */
  const drive = async () => {
    const t0 = now();
    const rampMs = (N.warmSeconds * 1000) / 2;
    const rateAt = (t: number) => N.rate * Math.min(1, 0.1 + (0.9 * (t - t0)) / rampMs);
    for (let n = 0, due = t0; due < stopAt;) {
      if (due > now()) {
        await sleep(due - now());
        continue;
      }
      const p = send(n++, due).finally(() => inFlight.delete(p));
      inFlight.add(p);
      maxInFlight = Math.max(maxInFlight, inFlight.size);
      due += 1000 / rateAt(due);
    }
    while (inFlight.size > 0) await Promise.all([...inFlight]);
  };

  /** BENCH_ROTATION_LOG: a file to write the stack's output to, for a closer look. */
  const saveLogs = () =>
    process.env.BENCH_ROTATION_LOG && writeFileSync(process.env.BENCH_ROTATION_LOG, offline.logs());

  const t: Record<string, number> = {};
  let cpuFrom: ReturnType<typeof cpuNow> | undefined;
  const redisSide: { lookups: number[]; revokedAt?: number; revokeSentWall?: number } = { lookups: [] };
  // Instances started before the load, one function at a time: a burst of k requests at once
  // finds one idle instance and starts up to k − 1 more (fewer when one is done before the burst's
  // last request comes in: 4–8 for addJob's 8). Started under load instead, each takes a few
  // hundred ms of CPU from the others, requests queue, more instances start: on 2 cores 200 a
  // second on cold functions never caught up.
  await admin('POST', '/jobs', 201, { topic: TOPIC, id: 'warm', delay: JOB_DELAY_S });
  ids.push('warm');
  await admin('GET', '/keys', 200);
  for (const route of Object.keys(ROUTES) as RouteName[]) {
    const k = Math.max(
      2,
      Math.round((N.instances * MIX.filter((r) => r === route).length) / MIX.filter((r) => r === 'addJob').length),
    );
    const path = {
      addJob: '/jobs',
      getJob: `/jobs/${TOPIC}/warm`,
      topics: '/topics',
      listJobs: `/topics/${TOPIC}/jobs?limit=10`,
      whoami: '/whoami',
    }[route];
    await Promise.all(
      Array.from({ length: k }, (_, i) =>
        route === 'addJob'
          ? admin('POST', path, 201, { topic: TOPIC, id: `warm-${i}`, delay: JOB_DELAY_S })
          : admin('GET', path, 200),
      ),
    );
  }
  t.warmStart = now();
  const driving = drive();
  try {
    await sleep(N.warmSeconds * 1000);
    t.oldCreateSent = now();
    secrets.old = String((await admin('POST', '/keys', 201, { name: 'old', scope: 'write' })).secret);
    t.oldCreated = now();
    cpuFrom = cpuNow(offline.pid, redis.pid);
    console.log(`warm-up done; key old created; every client sends with it for ${N.oldSeconds} s`);
    await sleep(N.oldSeconds * 1000);
    t.newCreateSent = now();
    const created = await admin('POST', '/keys', 201, { name: 'new', scope: 'write' });
    t.newCreated = now();
    moveStart = t.newCreated;
    secrets.new = String(created.secret);
    console.log(`key new created; ${movers} of ${N.clients} clients move to it over ${N.moveSeconds} s`);
    // every lookup of the old key's digest, and the revoke itself, as Redis ran them (its clock, epoch ms)
    const oldSha = secretDigest(secrets.old);
    await monitorRedis(redis.port, (time, line) => {
      if (!/^"(fcall|fcall_ro|evalsha|eval)"/i.test(line)) return; // the scripts' own commands are echoed too
      if (line.includes(`"${oldSha}"`)) redisSide.lookups.push(time);
      else if (redisSide.revokedAt === undefined && line.includes('revokeKey"') && line.includes(' "old" '))
        redisSide.revokedAt = time;
    });
    // the revoke at a random point of the instances' recheck cycle
    await sleep(N.moveSeconds * 1000 + Math.random() * KEY_RECHECK_MS);
    t.revokeSent = now();
    redisSide.revokeSentWall = Date.now();
    await admin('DELETE', '/keys/old', 200);
    t.revokeAnswered = now();
    console.log(
      `key old revoked (answered in ${fmt(t.revokeAnswered - t.revokeSent)} ms); ${N.clients - movers} clients keep sending with it for ${N.afterSeconds} s`,
    );
    stopAt = t.revokeAnswered + N.afterSeconds * 1000;
  } catch (error) {
    stopAt = 0; // stop sending, let what is in flight end, then fail
    await driving;
    console.error(`answers so far: ${fmt(answers.length)}, failed ${failures(answers).text}`);
    saveLogs();
    throw error;
  }
  await driving;
  t.stopped = now();
  const cpuTo = cpuNow(offline.pid, redis.pid);
  const cpuMs = Object.fromEntries(
    Object.entries(cpuTo).map(([k, v]) => [k, Math.round(v - cpuFrom![k as keyof typeof cpuTo])]),
  ) as typeof cpuTo;
  // 0, not a few ticks below it: the counters tick at 10 ms
  const cpu = { ...cpuMs, others: Math.max(0, cpuMs.busy - cpuMs.stack - cpuMs.redis - cpuMs.bench) };
  await sleep(1000); // the last log lines
  saveLogs();
  const logs = offline.logs();
  const loadEnd = loadNow();

  // -------------------------------------------------------------------------------------------
  // what happened

  const revoked = t.revokeAnswered!;
  const phaseOf = (a: Answer) =>
    a.key === 'deployment'
      ? 'warm-up'
      : a.sentAt < t.newCreated!
        ? 'old'
        : a.sentAt < t.revokeSent!
          ? 'move'
          : a.sentAt < revoked
            ? 'revoking'
            : 'after';
  const phases = ['warm-up', 'old', 'move', 'revoking', 'after'] as const;
  const byPhase = Object.fromEntries(phases.map((p) => [p, answers.filter((a) => phaseOf(a) === p)])) as Record<
    (typeof phases)[number],
    Answer[]
  >;
  const spanOf = (list: readonly Answer[]) =>
    list.length < 2 ? NaN : (Math.max(...list.map((a) => a.dueAt)) - Math.min(...list.map((a) => a.dueAt))) / 1000;
  const rateOf = (list: readonly Answer[]) => list.length / (spanOf(list) || NaN);
  const keyed = answers.filter((a) => a.key !== 'deployment');
  const loadSpanS = (t.stopped - t.oldCreated!) / 1000;

  const beforeRevoke = keyed.filter((a) => a.answeredAt < t.revokeSent!);
  const failedBefore = failures(beforeRevoke);
  const newKey = answers.filter((a) => a.key === 'new');
  const failedNew = failures(newKey);
  const oldAcross = answers.filter((a) => a.key === 'old' && a.sentAt < t.revokeSent! && a.answeredAt >= t.revokeSent!);
  const oldRevoking = byPhase.revoking.filter((a) => a.key === 'old');
  const oldAfter = byPhase.after.filter((a) => a.key === 'old');
  const overall = cutOff(oldAfter, revoked);
  const perRoute = Object.fromEntries(
    (Object.keys(ROUTES) as RouteName[]).map((r) => [
      r,
      cutOff(
        oldAfter.filter((a) => a.route === r),
        revoked,
      ),
    ]),
  ) as Record<RouteName, ReturnType<typeof cutOff>>;
  const warmFailed = failures(byPhase['warm-up']);

  // the functions' log lines: accepted old-key requests after the revoke, as the server saw them, and instances started
  interface LogLine {
    message?: string;
    timestamp?: string;
    key?: string;
    path?: string;
    cold_start?: boolean;
    status?: number;
  }
  const lines: LogLine[] = [];
  for (const line of logs.split('\n')) {
    if (!line.startsWith('{') || !line.includes('"function_request_id"')) continue;
    try {
      lines.push(JSON.parse(line) as LogLine);
    } catch {} // a line cut by the log buffer
  }
  const routeOfKey = new Map(Object.entries(ROUTES).map(([name, r]) => [r.routeKey, name as RouteName]));
  // old-key requests the functions accepted after Redis ran the revoke: how many, and the last one's log time after it
  // Redis's and the functions' clocks are this machine's wall clock; the bench's own times are not (performance.now)
  // no FCALL seen (scripts by EVALSHA): the revoke's sending, earlier
  const inRedisAt = redisSide.revokedAt ?? redisSide.revokeSentWall!;
  const lookupsBefore = redisSide.lookups.filter((at) => at < inRedisAt);
  // how long before the revoke the last lookup found the key
  const lastFoundMs = lookupsBefore.length ? Math.round(inRedisAt - Math.max(...lookupsBefore)) : null;
  const lookupsIn = (from: number, to: number) =>
    redisSide.lookups.filter((at) => at >= inRedisAt + from && at < inRedisAt + to).length;
  const serverOld: Partial<Record<RouteName | 'all', { accepted: number; lastMs: number }>> = {};
  const instances: Partial<Record<RouteName, { all: number; afterWarmUp: number }>> = {};
  let serverErrors = 0;
  for (const l of lines) {
    const route = routeOfKey.get(l.path ?? '');
    const time = Date.parse(l.timestamp ?? '');
    if (l.status !== undefined && l.status >= 500) serverErrors++;
    if (route && l.cold_start === true) {
      const count = (instances[route] ??= { all: 0, afterWarmUp: 0 });
      count.all++;
      if (time >= t.oldCreated!) count.afterWarmUp++;
    }
    if (l.message === 'request' && l.key === 'old' && time >= inRedisAt) {
      for (const k of route ? (['all', route] as const) : (['all'] as const)) {
        const o = (serverOld[k] ??= { accepted: 0, lastMs: 0 });
        o.accepted++;
        o.lastMs = Math.max(o.lastMs, Math.round(time - inRedisAt));
      }
    }
  }

  const latBefore = latencies(beforeRevoke);
  const latAfterNew = latencies(byPhase.after.filter((a) => a.key === 'new'));
  const latAfterOld = latencies(oldAfter);
  const driverLagMs = Math.round(Math.max(0, ...answers.map((a) => a.sentAt - a.dueAt)));

  const goals = {
    failedBeforeRevoke: failedBefore.count <= GOALS.failedBeforeRevoke,
    newKeyFailed: failedNew.count <= GOALS.newKeyFailed,
    refusedWithin5s: overall.allRefusedFromMs !== null && overall.allRefusedFromMs <= GOALS.refusedWithinMs,
    acceptedByFunctionsWithin5s: (serverOld.all?.lastMs ?? 0) <= GOALS.refusedWithinMs,
  };
  const met = (ok: boolean) => (ok ? 'met' : '**missed**');

  console.log('');
  console.log(
    `key rotation through serverless offline: ${fmt(N.rate)} requests/s from ${N.clients} clients over ${Object.keys(ROUTES).length} functions; key recheck every ${fmt(KEY_RECHECK_MS)} ms`,
  );
  printTable([
    [
      'requests sent: warm-up (deployment key) / old key only / moving / while the revoke ran / after it',
      `${phases.map((p) => fmt(byPhase[p].length)).join(' / ')}`,
      '',
    ],
    [
      '  after the revoke: old key / new key',
      `${fmt(oldAfter.length)} / ${fmt(byPhase.after.length - oldAfter.length)}`,
      '',
    ],
    [
      'request rate sent: old / move / after; all from the key old on',
      `${fmt(rateOf(byPhase.old), 1)} / ${fmt(rateOf(byPhase.move), 1)} / ${fmt(rateOf(byPhase.after), 1)}; ${fmt(keyed.length / loadSpanS, 1)} /s`,
      `${fmt(N.rate)} /s`,
    ],
    ['driver: most in flight; latest send after its due time', `${fmt(maxInFlight)}; ${ms(driverLagMs)}`, ''],
    [
      `failed, sent with old or new and answered before the revoke was sent (of ${fmt(beforeRevoke.length)})`,
      failedBefore.text,
      `${GOALS.failedBeforeRevoke}: ${met(goals.failedBeforeRevoke)}`,
    ],
    [
      `failed with the new key, any time (of ${fmt(newKey.length)})`,
      failedNew.text,
      `${GOALS.newKeyFailed}: ${met(goals.newKeyFailed)}`,
    ],
    [
      'old key, sent before the revoke, answered after it: accepted / refused / other',
      `${fmt(oldAcross.filter(isOk).length)} / ${fmt(oldAcross.filter((a) => a.status === 401).length)} / ${fmt(oldAcross.filter((a) => !isOk(a) && a.status !== 401).length)}`,
      '',
    ],
    [
      'old key, sent while the revoke ran: accepted / refused / other',
      `${fmt(oldRevoking.filter(isOk).length)} / ${fmt(oldRevoking.filter((a) => a.status === 401).length)} / ${fmt(oldRevoking.filter((a) => !isOk(a) && a.status !== 401).length)}`,
      '',
    ],
    [
      'old key, sent after the revoke answer: accepted / refused (401) / other',
      `${fmt(overall.accepted)} / ${fmt(overall.refused)} / ${fmt(overall.other)}`,
      '',
    ],
    [
      'last old-key request accepted, sent after the revoke answer',
      plusMs(overall.lastAcceptedMs),
      `(instances recheck every ${fmt(KEY_RECHECK_MS)} ms)`,
    ],
    [
      'every old-key request refused from',
      plusMs(overall.allRefusedFromMs),
      `≤ +${fmt(GOALS.refusedWithinMs)} ms: ${met(goals.refusedWithin5s)}`,
    ],
    [
      `Redis: lookups of the old key in the ${fmt(KEY_RECHECK_MS)} ms before the revoke ran / after; the last that found it`,
      `${fmt(lookupsIn(-KEY_RECHECK_MS, 0))} / ${fmt(lookupsIn(0, KEY_RECHECK_MS))}; ${lastFoundMs === null ? '—' : `${fmt(lastFoundMs)} ms before: no instance trusts it past +${fmt(KEY_RECHECK_MS - lastFoundMs)} ms`}`,
      '',
    ],
    [
      `functions' logs: old-key requests accepted after the revoke ran in Redis (${redisSide.revokedAt === undefined ? 'not seen: from its sending' : `+${fmt(inRedisAt - redisSide.revokeSentWall!)} ms after it was sent`}): count; the last`,
      `${fmt(serverOld.all?.accepted ?? 0)}; ${plusMs(serverOld.all?.lastMs ?? null)}`,
      `≤ +${fmt(GOALS.refusedWithinMs)} ms: ${met(goals.acceptedByFunctionsWithin5s)}`,
    ],
    [
      'latency p50 / p99 / max: before the revoke',
      `${ms(latBefore.p50)} / ${ms(latBefore.p99)} / ${ms(latBefore.max)}`,
      '',
    ],
    [
      '  after the revoke: new key / old key',
      `${ms(latAfterNew.p50)} / ${ms(latAfterNew.p99)} / ${ms(latAfterNew.max)}; ${ms(latAfterOld.p50)} / ${ms(latAfterOld.p99)} / ${ms(latAfterOld.max)}`,
      '',
    ],
    ['warm-up (deployment key): failed', warmFailed.text, ''],
    ["5xx in the functions' logs", fmt(serverErrors), ''],
    [
      `CPU from the key old on (${fmt(loadSpanS, 1)} s, ${machine.cpus} cores): stack / redis-server / bench / other processes; machine busy`,
      `${fmt(cpu.stack / 1000, 1)} / ${fmt(cpu.redis / 1000, 1)} / ${fmt(cpu.bench / 1000, 1)} / ${fmt(cpu.others / 1000, 1)} s; ${fmt((100 * cpu.busy) / cpu.all)} %`,
      '',
    ],
    ['  stack CPU a request', `${fmt(cpu.stack / keyed.length, 2)} ms`, ''],
    ['load average start / end', `${loadStart.join(' ')} / ${loadEnd.join(' ')}`, ''],
  ]);
  printTable(
    (Object.keys(ROUTES) as RouteName[]).map((r) => {
      const c = perRoute[r];
      return [
        `${ROUTES[r].routeKey} (${r})`,
        `${instances[r]?.all ?? 0} (${instances[r]?.afterWarmUp ?? 0})`,
        `${fmt(c.sent)} / ${fmt(c.accepted)} / ${fmt(c.refused)} / ${fmt(c.other)}`,
        plusMs(c.lastAcceptedMs),
        plusMs(c.allRefusedFromMs),
        `${fmt(serverOld[r]?.accepted ?? 0)}; ${plusMs(serverOld[r]?.lastMs ?? null)}`,
      ];
    }),
    [
      'route (function)',
      'instances (started after the warm-up)',
      'old key after the revoke: sent / accepted / refused / other',
      'last accepted, sent',
      'all refused from',
      "functions' logs: accepted after Redis ran the revoke; the last",
    ],
  );

  // a line a second: what was sent, how it fared, how long it took
  const seconds = Math.ceil((Math.max(...answers.map((a) => a.dueAt)) - t.warmStart!) / 1000);
  printTable(
    Array.from({ length: seconds }, (_, i) => {
      const sec = answers.filter((a) => Math.floor((a.dueAt - t.warmStart!) / 1000) === i);
      const l = latencies(sec);
      const keys = (['deployment', 'old', 'new'] as const)
        .map((k) => fmt(sec.filter((a) => a.key === k).length))
        .join(' / ');
      const marks = Object.entries(t)
        .filter(
          ([name, v]) => name !== 'warmStart' && name !== 'stopped' && Math.floor((v - t.warmStart!) / 1000) === i,
        )
        .map(([name]) => name)
        .join(', ');
      return [
        String(i),
        fmt(sec.length),
        keys,
        fmt(sec.filter(isOk).length),
        fmt(sec.filter((a) => a.status === 401).length),
        fmt(sec.filter((a) => !isOk(a) && a.status !== 401).length),
        `${ms(l.p50)} / ${ms(l.p99)}`,
        marks,
      ];
    }),
    ['second', 'sent', 'deployment / old / new', '2xx', '401', 'other', 'latency p50 / p99', 'events'],
  );

  console.log(
    JSON.stringify({
      bench: 'rotation',
      at,
      options: N,
      keyRecheckMs: KEY_RECHECK_MS,
      times: Object.fromEntries(Object.entries(t).map(([k, v]) => [k, Math.round(v - t.warmStart!)])),
      revokeMs: Math.round(t.revokeAnswered! - t.revokeSent!),
      sent: Object.fromEntries(phases.map((p) => [p, byPhase[p].length])),
      ratePerSecond: {
        old: rateOf(byPhase.old),
        move: rateOf(byPhase.move),
        after: rateOf(byPhase.after),
        fromOld: keyed.length / loadSpanS,
      },
      maxInFlight,
      driverLagMs,
      failedBeforeRevoke: { of: beforeRevoke.length, count: failedBefore.count, by: failedBefore.by },
      newKeyFailed: { of: newKey.length, count: failedNew.count, by: failedNew.by },
      oldAcrossRevoke: {
        accepted: oldAcross.filter(isOk).length,
        refused: oldAcross.filter((a) => a.status === 401).length,
      },
      oldWhileRevoking: {
        accepted: oldRevoking.filter(isOk).length,
        refused: oldRevoking.filter((a) => a.status === 401).length,
      },
      oldAfterRevoke: overall,
      oldAfterRevokeByRoute: perRoute,
      acceptedByFunctionsAfterRedis: serverOld,
      redis: {
        revokeRanMsAfterSent:
          redisSide.revokedAt === undefined ? null : Math.round(redisSide.revokedAt - redisSide.revokeSentWall!),
        lookupsBefore: lookupsIn(-KEY_RECHECK_MS, 0),
        lookupsAfter: lookupsIn(0, KEY_RECHECK_MS),
        lastFoundMsBefore: lastFoundMs,
        lookupsAroundMs: redisSide.lookups
          .map((at) => Math.round(at - inRedisAt))
          .filter((ms) => Math.abs(ms) <= 2 * KEY_RECHECK_MS),
      },
      instances,
      latencyMs: { beforeRevoke: latBefore, afterNew: latAfterNew, afterOld: latAfterOld },
      warmUpFailed: warmFailed.count,
      cpuMsFromOld: cpu,
      serverErrors,
      goals,
      loadAverage: { start: loadStart, end: loadEnd },
      machine,
    }),
  );
  const missed = [
    !goals.failedBeforeRevoke &&
      `${failedBefore.count} requests failed before the revoke (goal ${GOALS.failedBeforeRevoke})`,
    !goals.newKeyFailed && `${failedNew.count} requests with the new key failed (goal ${GOALS.newKeyFailed})`,
    !goals.refusedWithin5s &&
      `old-key requests were not all refused from +${GOALS.refusedWithinMs} ms on (all refused from ${plusMs(overall.allRefusedFromMs)}; last accepted ${plusMs(overall.lastAcceptedMs)})`,
    !goals.acceptedByFunctionsWithin5s &&
      `the functions accepted the old key ${plusMs(serverOld.all?.lastMs ?? null)} after Redis ran the revoke (goal ≤ +${GOALS.refusedWithinMs} ms)`,
  ].filter((m): m is string => typeof m === 'string');
  for (const m of missed) console.error(`GOAL MISSED: ${m}`);
  if (missed.length > 0) process.exitCode = 1;
}

main()
  .catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  })
  .finally(() => stopEverything());
