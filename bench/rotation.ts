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
import { writeFileSync } from 'node:fs';
import { connect as connectSocket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request, type Dispatcher } from 'undici';
import { secretDigest } from '../lib/engine';
import { KEY_RECHECK_MS } from '../lib/testing';
import { groupCpuTicks } from '../scripts/support/process';
import { startOffline, type OfflineProcess } from '../test/support/offline';
import { envInt } from './harness/env';
import { runBench, track, whenStopping } from './harness/lifecycle';
import { loadNow, machineCpu, processCpu, quantile, sortNum } from './harness/measure';
import { connect, startServer, type RedisProcess } from './harness/redis';
import { fmt, machineOf, printJson, printTable, type Machine } from './harness/report';

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
const ROUTE_NAMES = Object.keys(ROUTES) as RouteName[];
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

/** The path of a request to `route`; `jobId` is the job a GET /jobs/{topic}/{id} reads. */
const pathOf = (route: RouteName, jobId: string | undefined) =>
  ({
    addJob: '/jobs',
    getJob: `/jobs/${TOPIC}/${jobId}`,
    topics: '/topics',
    listJobs: `/topics/${TOPIC}/jobs?limit=10`,
    whoami: '/whoami',
  })[route];

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
const ms = (n: number | null) => (n === null || Number.isNaN(n) ? '—' : `${fmt(n)} ms`);
const plusMs = (n: number | null) => (n === null ? '—' : `+${fmt(n)} ms`);
const met = (ok: boolean) => (ok ? 'met' : '**missed**');
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
/** How many of `answers` were accepted, refused (401), or neither. */
const fates = (answers: readonly Answer[]) => ({
  accepted: answers.filter(isOk).length,
  refused: answers.filter((a) => a.status === 401).length,
  other: answers.filter((a) => !isOk(a) && a.status !== 401).length,
});

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
  const machine = machineCpu();
  const own = process.cpuUsage();
  return {
    stack: (groupCpuTicks(offlinePgid) ?? 0) * tickMs,
    redis: processCpu(redisPid) * 1000,
    bench: (own.user + own.system) / 1000,
    busy: (machine?.busy ?? NaN) * 1000,
    all: (machine?.all ?? NaN) * 1000,
  };
}

/**
 * MONITOR on a connection of its own: `onCommand` gets each command Redis runs, with its time
 * (epoch ms, Redis's clock) and its quoted arguments (`"fcall" "dq_…_authKey" "4" …`). Resolves once
 * Redis has confirmed. A plain socket: ioredis's monitor mode misreads lines that come in the same
 * read as MONITOR's OK ("Command queue state error", seen with this stack's traffic).
 */
async function monitorRedis(port: number, onCommand: (time: number, args: string) => void): Promise<void> {
  const socket = connectSocket(port, '127.0.0.1');
  whenStopping(async () => void socket.destroy());
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
// the driver: requests at their due times, each kept with its client, key, route and times

class Driver {
  readonly agent = new Agent({ pipelining: 0 }); // no keep-alive (see the top of this file)
  readonly secrets: Partial<Record<KeyName, string>>;
  readonly ids: string[] = []; // jobs added (201), for GET /jobs/{topic}/{id}
  readonly answers: Answer[] = [];
  readonly inFlight = new Set<Promise<void>>();
  maxInFlight = 0;
  readonly movers = Math.round((N.clients * (100 - N.stayPercent)) / 100);
  moveStart: number | undefined;
  stopAt = Infinity;

  constructor(readonly offline: OfflineProcess) {
    this.secrets = { deployment: offline.token };
    track(() => this.agent.close());
  }

  /** The key client `c` sends with at time `t`. */
  keyOf(c: number, t: number): KeyName {
    if (this.secrets.old === undefined) return 'deployment';
    if (this.secrets.new === undefined || this.moveStart === undefined) return 'old';
    return c < this.movers && t >= this.moveStart + (c / this.movers) * N.moveSeconds * 1000 ? 'new' : 'old';
  }

  /** An admin call with the deployment key; throws unless it answers `expect`. */
  async admin(method: string, path: string, expect: number, body?: unknown): Promise<Record<string, unknown>> {
    const res = await request(this.offline.baseUrl + path, {
      method: method as Dispatcher.HttpMethod,
      headers: { authorization: `Bearer ${this.offline.token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      dispatcher: this.agent,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await res.body.text();
    if (res.statusCode !== expect)
      throw new Error(`${method} ${path} answered ${res.statusCode}, not ${expect}: ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  }

  /** Request `n`: its client, route and key follow from n and the time. */
  async send(n: number, dueAt: number): Promise<void> {
    const client = n % N.clients;
    let route = MIX[(Math.floor(n / N.clients) + client) % MIX.length]!; // every client goes through the whole mix
    if (route === 'getJob' && this.ids.length === 0) route = 'addJob';
    const id = `rot-${n}`;
    const path = pathOf(route, this.ids[Math.floor(Math.random() * this.ids.length)]);
    const sentAt = now();
    const key = this.keyOf(client, sentAt);
    const answer: Answer = { n, client, key, route, dueAt, sentAt, answeredAt: NaN, status: 0 };
    try {
      const res = await request(this.offline.baseUrl + path, {
        method: route === 'addJob' ? 'POST' : 'GET',
        headers: { authorization: `Bearer ${this.secrets[key]}`, 'content-type': 'application/json' },
        ...(route === 'addJob' ? { body: JSON.stringify({ topic: TOPIC, id, delay: JOB_DELAY_S, body: { n } }) } : {}),
        dispatcher: this.agent,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const text = await res.body.text();
      answer.answeredAt = now();
      answer.status = res.statusCode;
      if (res.statusCode === ROUTES[route].ok && route === 'addJob') this.ids.push(id);
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
    this.answers.push(answer);
  }

  /**
   * Sends requests, each at its due time (late ones at once), until stopAt: N.rate a second, after
   * a ramp from a tenth of it over the warm-up's first half (offline starts a worker for each
   * request that finds a function's workers busy; 200 a second on cold functions started dozens
   * at once and timed out).
   */
  async drive(): Promise<void> {
    const t0 = now();
    const rampMs = (N.warmSeconds * 1000) / 2;
    const rateAt = (t: number) => N.rate * Math.min(1, 0.1 + (0.9 * (t - t0)) / rampMs);
    for (let n = 0, due = t0; due < this.stopAt;) {
      if (due > now()) {
        await sleep(due - now());
        continue;
      }
      const p = this.send(n++, due).finally(() => this.inFlight.delete(p));
      this.inFlight.add(p);
      this.maxInFlight = Math.max(this.maxInFlight, this.inFlight.size);
      due += 1000 / rateAt(due);
    }
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  /** BENCH_ROTATION_LOG: a file to write the stack's output to, for a closer look. */
  saveLogs(): void {
    if (process.env.BENCH_ROTATION_LOG) writeFileSync(process.env.BENCH_ROTATION_LOG, this.offline.logs());
  }
}

/**
 * Instances started before the load, one function at a time: a burst of k requests at once
 * finds one idle instance and starts up to k − 1 more (fewer when one is done before the burst's
 * last request comes in: 4–8 for addJob's 8). Started under load instead, each takes a few
 * hundred ms of CPU from the others, requests queue, more instances start: on 2 cores 200 a
 * second on cold functions never caught up.
 */
async function startInstances(d: Driver): Promise<void> {
  await d.admin('POST', '/jobs', 201, { topic: TOPIC, id: 'warm', delay: JOB_DELAY_S });
  d.ids.push('warm');
  await d.admin('GET', '/keys', 200);
  const adds = MIX.filter((r) => r === 'addJob').length;
  for (const route of ROUTE_NAMES) {
    const k = Math.max(2, Math.round((N.instances * MIX.filter((r) => r === route).length) / adds));
    const path = pathOf(route, 'warm');
    await Promise.all(
      Array.from({ length: k }, (_, i) =>
        route === 'addJob'
          ? d.admin('POST', path, 201, { topic: TOPIC, id: `warm-${i}`, delay: JOB_DELAY_S })
          : d.admin('GET', path, 200),
      ),
    );
  }
}

// ---------------------------------------------------------------------------------------------
// the run: warm-up, old key, move, revoke

/** Times of the run's events (this process's clock, epoch ms with a fraction). */
type Marks = Record<string, number>;
/** What Redis ran (its clock, epoch ms): every lookup of the old key's digest, the revoke, and when it was sent. */
type RedisSide = { lookups: number[]; revokedAt?: number; revokeSentWall?: number };

interface Stack {
  redis: RedisProcess;
  offline: OfflineProcess;
  machine: Machine;
}

async function startStack(loadStart: number[]): Promise<Stack> {
  const redis = await startServer();
  const probe = connect(redis);
  const machine = await machineOf(probe, redis.pid);
  probe.disconnect();
  const offline = await startOffline({
    redisUrl: redis.url,
    env: { LOG_LEVEL: 'info' },
    maxLogBytes: 256 * 1024 * 1024,
  });
  track(() => offline.stop());
  console.log(
    `machine: ${machine.cpus} CPUs (${machine.cpuModel}), node ${machine.node}, redis ${machine.redis}; load average ${loadStart.join(' / ')}`,
  );
  console.log(`serverless offline ready in ${fmt(offline.startupMs)} ms; options ${JSON.stringify(N)}`);
  return { redis, offline, machine };
}

/** From the move on, every lookup of the old key's digest, and the revoke itself, as Redis ran them. */
async function watchOldKey(s: Stack, d: Driver, redisSide: RedisSide): Promise<void> {
  const oldSha = secretDigest(d.secrets.old!);
  await monitorRedis(s.redis.port, (time, line) => {
    if (!/^"(fcall|fcall_ro|evalsha|eval)"/i.test(line)) return; // the scripts' own commands are echoed too
    if (line.includes(`"${oldSha}"`)) redisSide.lookups.push(time);
    else if (redisSide.revokedAt === undefined && line.includes('revokeKey"') && line.includes(' "old" '))
      redisSide.revokedAt = time;
  });
}

/** While the driver sends: the warm-up, key old made, key new made and moved to, key old revoked. */
async function rotate(s: Stack, d: Driver, t: Marks, redisSide: RedisSide) {
  await sleep(N.warmSeconds * 1000);
  t.oldCreateSent = now();
  d.secrets.old = String((await d.admin('POST', '/keys', 201, { name: 'old', scope: 'write' })).secret);
  t.oldCreated = now();
  const cpuFrom = cpuNow(s.offline.pid, s.redis.pid);
  console.log(`warm-up done; key old created; every client sends with it for ${N.oldSeconds} s`);
  await sleep(N.oldSeconds * 1000);
  t.newCreateSent = now();
  const created = await d.admin('POST', '/keys', 201, { name: 'new', scope: 'write' });
  t.newCreated = now();
  d.moveStart = t.newCreated;
  d.secrets.new = String(created.secret);
  console.log(`key new created; ${d.movers} of ${N.clients} clients move to it over ${N.moveSeconds} s`);
  await watchOldKey(s, d, redisSide);
  // the revoke at a random point of the instances' recheck cycle
  await sleep(N.moveSeconds * 1000 + Math.random() * KEY_RECHECK_MS);
  t.revokeSent = now();
  redisSide.revokeSentWall = Date.now();
  await d.admin('DELETE', '/keys/old', 200);
  t.revokeAnswered = now();
  console.log(
    `key old revoked (answered in ${fmt(t.revokeAnswered - t.revokeSent)} ms); ${N.clients - d.movers} clients keep sending with it for ${N.afterSeconds} s`,
  );
  d.stopAt = t.revokeAnswered + N.afterSeconds * 1000;
  return cpuFrom;
}

/** Everything the run recorded. */
interface Run {
  s: Stack;
  d: Driver;
  t: Marks;
  redisSide: RedisSide;
  cpu: ReturnType<typeof cpuNow> & { others: number };
  logs: string;
  loadStart: number[];
  loadEnd: number[];
}

/** The whole run, the driver sending throughout; what it recorded, the CPU counted from the key old on. */
async function runRotation(s: Stack, loadStart: number[]): Promise<Run> {
  const d = new Driver(s.offline);
  const t: Marks = {};
  const redisSide: RedisSide = { lookups: [] };
  await startInstances(d);
  t.warmStart = now();
  const driving = d.drive();
  let cpuFrom: ReturnType<typeof cpuNow>;
  try {
    cpuFrom = await rotate(s, d, t, redisSide);
  } catch (error) {
    d.stopAt = 0; // stop sending, let what is in flight end, then fail
    await driving;
    console.error(`answers so far: ${fmt(d.answers.length)}, failed ${failures(d.answers).text}`);
    d.saveLogs();
    throw error;
  }
  await driving;
  t.stopped = now();
  const cpuTo = cpuNow(s.offline.pid, s.redis.pid);
  const cpuMs = Object.fromEntries(
    Object.entries(cpuTo).map(([k, v]) => [k, Math.round(v - cpuFrom[k as keyof typeof cpuTo])]),
  ) as typeof cpuTo;
  // 0, not a few ticks below it: the counters tick at 10 ms
  const cpu = { ...cpuMs, others: Math.max(0, cpuMs.busy - cpuMs.stack - cpuMs.redis - cpuMs.bench) };
  await sleep(1000); // the last log lines
  d.saveLogs();
  return { s, d, t, redisSide, cpu, logs: s.offline.logs(), loadStart, loadEnd: loadNow() };
}

// ---------------------------------------------------------------------------------------------
// what happened

const PHASES = ['warm-up', 'old', 'move', 'revoking', 'after'] as const;
type PhaseName = (typeof PHASES)[number];

/** The requests by the phase they were sent in, and the rate each phase sent at. */
function byPhaseOf({ d, t }: Run) {
  const phaseOf = (a: Answer): PhaseName =>
    a.key === 'deployment'
      ? 'warm-up'
      : a.sentAt < t.newCreated!
        ? 'old'
        : a.sentAt < t.revokeSent!
          ? 'move'
          : a.sentAt < t.revokeAnswered!
            ? 'revoking'
            : 'after';
  const byPhase = Object.fromEntries(PHASES.map((p) => [p, d.answers.filter((a) => phaseOf(a) === p)])) as Record<
    PhaseName,
    Answer[]
  >;
  const spanOf = (list: readonly Answer[]) =>
    list.length < 2 ? NaN : (Math.max(...list.map((a) => a.dueAt)) - Math.min(...list.map((a) => a.dueAt))) / 1000;
  const rateOf = (list: readonly Answer[]) => list.length / (spanOf(list) || NaN);
  const keyed = d.answers.filter((a) => a.key !== 'deployment');
  const loadSpanS = (t.stopped! - t.oldCreated!) / 1000;
  return {
    byPhase,
    keyed,
    loadSpanS,
    rates: { old: rateOf(byPhase.old), move: rateOf(byPhase.move), after: rateOf(byPhase.after) },
  };
}

type Phases = ReturnType<typeof byPhaseOf>;

/** The clients' side: failures before the revoke and with the new key, how the old key stopped, latencies. */
function clientSide(r: Run, p: Phases) {
  const { d, t } = r;
  const beforeRevoke = p.keyed.filter((a) => a.answeredAt < t.revokeSent!);
  const newKey = d.answers.filter((a) => a.key === 'new');
  const oldAfter = p.byPhase.after.filter((a) => a.key === 'old');
  return {
    beforeRevoke,
    failedBefore: failures(beforeRevoke),
    newKey,
    failedNew: failures(newKey),
    oldAcross: d.answers.filter((a) => a.key === 'old' && a.sentAt < t.revokeSent! && a.answeredAt >= t.revokeSent!),
    oldRevoking: p.byPhase.revoking.filter((a) => a.key === 'old'),
    oldAfter,
    overall: cutOff(oldAfter, t.revokeAnswered!),
    perRoute: Object.fromEntries(
      ROUTE_NAMES.map((route) => [
        route,
        cutOff(
          oldAfter.filter((a) => a.route === route),
          t.revokeAnswered!,
        ),
      ]),
    ) as Record<RouteName, ReturnType<typeof cutOff>>,
    warmFailed: failures(p.byPhase['warm-up']),
    latBefore: latencies(beforeRevoke),
    latAfterNew: latencies(p.byPhase.after.filter((a) => a.key === 'new')),
    latAfterOld: latencies(oldAfter),
    driverLagMs: Math.round(Math.max(0, ...d.answers.map((a) => a.sentAt - a.dueAt))),
  };
}

type Clients = ReturnType<typeof clientSide>;

interface LogLine {
  message?: string;
  timestamp?: string;
  key?: string;
  path?: string;
  cold_start?: boolean;
  status?: number;
}

/** The functions' log lines (those a cut log buffer left whole). */
function logLines(logs: string): LogLine[] {
  const lines: LogLine[] = [];
  for (const line of logs.split('\n')) {
    if (!line.startsWith('{') || !line.includes('"function_request_id"')) continue;
    try {
      lines.push(JSON.parse(line) as LogLine);
    } catch {} // a line cut by the log buffer
  }
  return lines;
}

/**
 * The server's side: Redis's lookups of the old key around the revoke, and from the functions' log
 * lines the old-key requests accepted after Redis ran the revoke, the instances started, the 5xx.
 * Redis's and the functions' clocks are this machine's wall clock; the bench's own times are not
 * (performance.now).
 */
function serverSide({ redisSide, logs, t }: Run) {
  const routeOfKey = new Map(Object.entries(ROUTES).map(([name, r]) => [r.routeKey, name as RouteName]));
  // no FCALL seen (scripts by EVALSHA): the revoke's sending, earlier
  const inRedisAt = redisSide.revokedAt ?? redisSide.revokeSentWall!;
  const lookupsBefore = redisSide.lookups.filter((at) => at < inRedisAt);
  const lookupsIn = (from: number, to: number) =>
    redisSide.lookups.filter((at) => at >= inRedisAt + from && at < inRedisAt + to).length;
  const serverOld: Partial<Record<RouteName | 'all', { accepted: number; lastMs: number }>> = {};
  const instances: Partial<Record<RouteName, { all: number; afterWarmUp: number }>> = {};
  let serverErrors = 0;
  for (const l of logLines(logs)) {
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
  return {
    inRedisAt,
    // how long before the revoke the last lookup found the key
    lastFoundMs: lookupsBefore.length ? Math.round(inRedisAt - Math.max(...lookupsBefore)) : null,
    lookupsBefore: lookupsIn(-KEY_RECHECK_MS, 0),
    lookupsAfter: lookupsIn(0, KEY_RECHECK_MS),
    serverOld,
    instances,
    serverErrors,
  };
}

type Server = ReturnType<typeof serverSide>;

function goalsOf(c: Clients, sv: Server) {
  return {
    failedBeforeRevoke: c.failedBefore.count <= GOALS.failedBeforeRevoke,
    newKeyFailed: c.failedNew.count <= GOALS.newKeyFailed,
    refusedWithin5s: c.overall.allRefusedFromMs !== null && c.overall.allRefusedFromMs <= GOALS.refusedWithinMs,
    acceptedByFunctionsWithin5s: (sv.serverOld.all?.lastMs ?? 0) <= GOALS.refusedWithinMs,
  };
}

type Goals = ReturnType<typeof goalsOf>;

// ---------------------------------------------------------------------------------------------
// the tables and the JSON line

/** What was sent, and how the requests fared before the revoke and with the new key. */
function requestRows({ d }: Run, p: Phases, c: Clients, goals: Goals): string[][] {
  return [
    [
      'requests sent: warm-up (deployment key) / old key only / moving / while the revoke ran / after it',
      `${PHASES.map((ph) => fmt(p.byPhase[ph].length)).join(' / ')}`,
      '',
    ],
    [
      '  after the revoke: old key / new key',
      `${fmt(c.oldAfter.length)} / ${fmt(p.byPhase.after.length - c.oldAfter.length)}`,
      '',
    ],
    [
      'request rate sent: old / move / after; all from the key old on',
      `${fmt(p.rates.old, 1)} / ${fmt(p.rates.move, 1)} / ${fmt(p.rates.after, 1)}; ${fmt(p.keyed.length / p.loadSpanS, 1)} /s`,
      `${fmt(N.rate)} /s`,
    ],
    ['driver: most in flight; latest send after its due time', `${fmt(d.maxInFlight)}; ${ms(c.driverLagMs)}`, ''],
    [
      `failed, sent with old or new and answered before the revoke was sent (of ${fmt(c.beforeRevoke.length)})`,
      c.failedBefore.text,
      `${GOALS.failedBeforeRevoke}: ${met(goals.failedBeforeRevoke)}`,
    ],
    [
      `failed with the new key, any time (of ${fmt(c.newKey.length)})`,
      c.failedNew.text,
      `${GOALS.newKeyFailed}: ${met(goals.newKeyFailed)}`,
    ],
  ];
}

/** How the old key stopped: at the clients, in Redis, and in the functions' logs. */
function oldKeyRows({ redisSide }: Run, c: Clients, sv: Server, goals: Goals): string[][] {
  const f = (x: { accepted: number; refused: number; other: number }) =>
    `${fmt(x.accepted)} / ${fmt(x.refused)} / ${fmt(x.other)}`;
  const ranAt =
    redisSide.revokedAt === undefined
      ? 'not seen: from its sending'
      : `+${fmt(sv.inRedisAt - redisSide.revokeSentWall!)} ms after it was sent`;
  const lastFound =
    sv.lastFoundMs === null
      ? '—'
      : `${fmt(sv.lastFoundMs)} ms before: no instance trusts it past +${fmt(KEY_RECHECK_MS - sv.lastFoundMs)} ms`;
  return [
    ['old key, sent before the revoke, answered after it: accepted / refused / other', f(fates(c.oldAcross)), ''],
    ['old key, sent while the revoke ran: accepted / refused / other', f(fates(c.oldRevoking)), ''],
    ['old key, sent after the revoke answer: accepted / refused (401) / other', f(c.overall), ''],
    [
      'last old-key request accepted, sent after the revoke answer',
      plusMs(c.overall.lastAcceptedMs),
      `(instances recheck every ${fmt(KEY_RECHECK_MS)} ms)`,
    ],
    [
      'every old-key request refused from',
      plusMs(c.overall.allRefusedFromMs),
      `≤ +${fmt(GOALS.refusedWithinMs)} ms: ${met(goals.refusedWithin5s)}`,
    ],
    [
      `Redis: lookups of the old key in the ${fmt(KEY_RECHECK_MS)} ms before the revoke ran / after; the last that found it`,
      `${fmt(sv.lookupsBefore)} / ${fmt(sv.lookupsAfter)}; ${lastFound}`,
      '',
    ],
    [
      `functions' logs: old-key requests accepted after the revoke ran in Redis (${ranAt}): count; the last`,
      `${fmt(sv.serverOld.all?.accepted ?? 0)}; ${plusMs(sv.serverOld.all?.lastMs ?? null)}`,
      `≤ +${fmt(GOALS.refusedWithinMs)} ms: ${met(goals.acceptedByFunctionsWithin5s)}`,
    ],
  ];
}

/** Latencies, failures of the warm-up and the stack, and what CPU the run took. */
function costRows(r: Run, p: Phases, c: Clients, sv: Server): string[][] {
  const lat = (l: ReturnType<typeof latencies>) => `${ms(l.p50)} / ${ms(l.p99)} / ${ms(l.max)}`;
  const { cpu } = r;
  return [
    ['latency p50 / p99 / max: before the revoke', lat(c.latBefore), ''],
    ['  after the revoke: new key / old key', `${lat(c.latAfterNew)}; ${lat(c.latAfterOld)}`, ''],
    ['warm-up (deployment key): failed', c.warmFailed.text, ''],
    ["5xx in the functions' logs", fmt(sv.serverErrors), ''],
    [
      `CPU from the key old on (${fmt(p.loadSpanS, 1)} s, ${r.s.machine.cpus} cores): stack / redis-server / bench / other processes; machine busy`,
      `${fmt(cpu.stack / 1000, 1)} / ${fmt(cpu.redis / 1000, 1)} / ${fmt(cpu.bench / 1000, 1)} / ${fmt(cpu.others / 1000, 1)} s; ${fmt((100 * cpu.busy) / cpu.all)} %`,
      '',
    ],
    ['  stack CPU a request', `${fmt(cpu.stack / p.keyed.length, 2)} ms`, ''],
    ['load average start / end', `${r.loadStart.join(' ')} / ${r.loadEnd.join(' ')}`, ''],
  ];
}

/** Per route: its instances, and how the old key stopped there. */
function printRoutes(c: Clients, sv: Server): void {
  printTable(
    ROUTE_NAMES.map((route) => {
      const x = c.perRoute[route];
      return [
        `${ROUTES[route].routeKey} (${route})`,
        `${sv.instances[route]?.all ?? 0} (${sv.instances[route]?.afterWarmUp ?? 0})`,
        `${fmt(x.sent)} / ${fmt(x.accepted)} / ${fmt(x.refused)} / ${fmt(x.other)}`,
        plusMs(x.lastAcceptedMs),
        plusMs(x.allRefusedFromMs),
        `${fmt(sv.serverOld[route]?.accepted ?? 0)}; ${plusMs(sv.serverOld[route]?.lastMs ?? null)}`,
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
}

/** A line a second: what was sent, how it fared, how long it took. */
function printSeconds({ d, t }: Run): void {
  const answers = d.answers;
  const seconds = Math.ceil((Math.max(...answers.map((a) => a.dueAt)) - t.warmStart!) / 1000);
  const inSecond = (v: number, i: number) => Math.floor((v - t.warmStart!) / 1000) === i;
  printTable(
    Array.from({ length: seconds }, (_, i) => {
      const sec = answers.filter((a) => inSecond(a.dueAt, i));
      const l = latencies(sec);
      const keys = (['deployment', 'old', 'new'] as const)
        .map((k) => fmt(sec.filter((a) => a.key === k).length))
        .join(' / ');
      const marks = Object.entries(t)
        .filter(([name, v]) => name !== 'warmStart' && name !== 'stopped' && inSecond(v, i))
        .map(([name]) => name)
        .join(', ');
      const { accepted, refused, other } = fates(sec);
      return [
        String(i),
        fmt(sec.length),
        keys,
        fmt(accepted),
        fmt(refused),
        fmt(other),
        `${ms(l.p50)} / ${ms(l.p99)}`,
        marks,
      ];
    }),
    ['second', 'sent', 'deployment / old / new', '2xx', '401', 'other', 'latency p50 / p99', 'events'],
  );
}

function resultOf(r: Run, at: string, { p, c, sv, goals }: { p: Phases; c: Clients; sv: Server; goals: Goals }) {
  const { t, redisSide } = r;
  const across = fates(c.oldAcross);
  const revoking = fates(c.oldRevoking);
  return {
    bench: 'rotation',
    at,
    options: N,
    keyRecheckMs: KEY_RECHECK_MS,
    times: Object.fromEntries(Object.entries(t).map(([k, v]) => [k, Math.round(v - t.warmStart!)])),
    revokeMs: Math.round(t.revokeAnswered! - t.revokeSent!),
    sent: Object.fromEntries(PHASES.map((ph) => [ph, p.byPhase[ph].length])),
    ratePerSecond: { ...p.rates, fromOld: p.keyed.length / p.loadSpanS },
    maxInFlight: r.d.maxInFlight,
    driverLagMs: c.driverLagMs,
    failedBeforeRevoke: { of: c.beforeRevoke.length, count: c.failedBefore.count, by: c.failedBefore.by },
    newKeyFailed: { of: c.newKey.length, count: c.failedNew.count, by: c.failedNew.by },
    oldAcrossRevoke: { accepted: across.accepted, refused: across.refused },
    oldWhileRevoking: { accepted: revoking.accepted, refused: revoking.refused },
    oldAfterRevoke: c.overall,
    oldAfterRevokeByRoute: c.perRoute,
    acceptedByFunctionsAfterRedis: sv.serverOld,
    redis: {
      revokeRanMsAfterSent:
        redisSide.revokedAt === undefined ? null : Math.round(redisSide.revokedAt - redisSide.revokeSentWall!),
      lookupsBefore: sv.lookupsBefore,
      lookupsAfter: sv.lookupsAfter,
      lastFoundMsBefore: sv.lastFoundMs,
      lookupsAroundMs: redisSide.lookups
        .map((at) => Math.round(at - sv.inRedisAt))
        .filter((x) => Math.abs(x) <= 2 * KEY_RECHECK_MS),
    },
    instances: sv.instances,
    latencyMs: { beforeRevoke: c.latBefore, afterNew: c.latAfterNew, afterOld: c.latAfterOld },
    warmUpFailed: c.warmFailed.count,
    cpuMsFromOld: r.cpu,
    serverErrors: sv.serverErrors,
    goals,
    loadAverage: { start: r.loadStart, end: r.loadEnd },
    machine: r.s.machine,
  };
}

/** Each goal missed, said; the bench then exits 1. */
function goalsMissed(c: Clients, sv: Server, goals: Goals): string[] {
  return [
    !goals.failedBeforeRevoke &&
      `${c.failedBefore.count} requests failed before the revoke (goal ${GOALS.failedBeforeRevoke})`,
    !goals.newKeyFailed && `${c.failedNew.count} requests with the new key failed (goal ${GOALS.newKeyFailed})`,
    !goals.refusedWithin5s &&
      `old-key requests were not all refused from +${GOALS.refusedWithinMs} ms on (all refused from ${plusMs(c.overall.allRefusedFromMs)}; last accepted ${plusMs(c.overall.lastAcceptedMs)})`,
    !goals.acceptedByFunctionsWithin5s &&
      `the functions accepted the old key ${plusMs(sv.serverOld.all?.lastMs ?? null)} after Redis ran the revoke (goal ≤ +${GOALS.refusedWithinMs} ms)`,
  ].filter((m): m is string => typeof m === 'string');
}

async function main(): Promise<void> {
  const at = new Date().toISOString();
  const loadStart = loadNow();
  const stack = await startStack(loadStart);
  const run = await runRotation(stack, loadStart);
  const phases = byPhaseOf(run);
  const clients = clientSide(run, phases);
  const server = serverSide(run);
  const goals = goalsOf(clients, server);
  console.log('');
  console.log(
    `key rotation through serverless offline: ${fmt(N.rate)} requests/s from ${N.clients} clients over ${ROUTE_NAMES.length} functions; key recheck every ${fmt(KEY_RECHECK_MS)} ms`,
  );
  printTable([
    ...requestRows(run, phases, clients, goals),
    ...oldKeyRows(run, clients, server, goals),
    ...costRows(run, phases, clients, server),
  ]);
  printRoutes(clients, server);
  printSeconds(run);
  printJson(resultOf(run, at, { p: phases, c: clients, sv: server, goals }));
  const missed = goalsMissed(clients, server, goals);
  for (const m of missed) console.error(`GOAL MISSED: ${m}`);
  if (missed.length > 0) process.exitCode = 1;
}

runBench(main);
