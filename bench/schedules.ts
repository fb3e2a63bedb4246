/**
 * Schedules benchmark (issue 15, "Measure"; not a test): prints a table per step and one JSON
 * line, with the load average at every result (this machine is often shared with a soak).
 *
 *   npm run bench:schedules
 *   # quick: BENCH_SCHEDULES=1000 BENCH_PRECISION_SECONDS=10 npm run bench:schedules
 *   # one step: BENCH_ONLY=sweep or BENCH_ONLY=precision
 *
 * 1. Sweep (own redis-server, nothing persisted, stopped by PID also on error). BENCH_SCHEDULES
 *    (10,000) schedules through Queue.putSchedule, half `every: 60`, half cron `*\/5 * * * *`
 *    in Europe/Berlin, each with a BENCH_BODY_BYTES (200) JSON body, BENCH_PUTS_IN_FLIGHT (32) at
 *    once, on the engine's fixed clock (QueueOptions.clock, ARGV[1] of every script) set 30 s before
 *    a 5-minute boundary B, so every schedule's pending occurrence is due at B. Memory: INFO
 *    used_memory before and after the puts, divided by the schedules (a schedule and its pending
 *    occurrence, a job), and MEMORY USAGE (every element) of each key, which separates the two.
 *    Then the clock is set to B and `sweep()` runs until it says nothing more is due: wall time,
 *    calls, CPU of this process (the client plans each advance: croner for a cron) and of
 *    redis-server (INFO cpu), Redis script time per sweep call (INFO commandstats, eval and
 *    evalsha), and the slowest command from SLOWLOG at 1 ms (read and reset after each call).
 *    Everything is done again from empty with `slowlog-log-slower-than 0`, which names every
 *    command's time (a script's own commands are logged too, and inside its time), at a cost: the
 *    logging of a script's own commands lengthens it. Also timed: one catchUpPlan (the client's
 * arithmetic per due schedule) for each kind. After each run the bench checks that every schedule advanced exactly
 * once: sweep
 *    reports BENCH_SCHEDULES advances and moved occurrences; the jobs hash holds, per schedule,
 *    exactly its occurrence at B (in the ready list, once) and the next one (every: B + 60 s, cron:
 *    B + 5 min, in the delayed zset), and nothing else; each schedule's view names that next one as
 *    pending and B as its last run.
 * 2. Precision (the real stack: `npm run dev`, its own redis-server and serverless offline, on
 *    free ports, in its own process group, stopped with SIGTERM to that group, also on error and
 *    Ctrl-C, and its children by PID if they outlive it). npm run dev keeps its Redis data
 *    (.data/redis): on Ctrl-C the bench deletes its schedules first (at most 15 s), and each run
 *    deletes the `prec-*` schedules a killed run left there. After a warm-up (3 rounds of 100 jobs of
 *    the `example` topic due in 0.5 s, as bench/e2e.ts, and 10 DELETEs of absent schedules at once,
 *    answered 404, so that the deletes at the end meet warm functions), BENCH_PRECISION_SCHEDULES (100) schedules
 *    `every: 1` on the `example` topic through PUT /schedules (10 at once); they fire for
 *    BENCH_PRECISION_SECONDS (60) after the last put answered, then are deleted (DELETE, 10 at
 *    once), and the bench waits until the topic has nothing delayed, ready or running (at most
 *    30 s). A start is the handler's "job started" log line (written by lib/workers/handler.ts after the
 *    attempt was marked started, right before the job function runs); its `timestamp` minus the
 *    nominal time in the occurrence id (`<schedule id>:YYYYMMDDTHHMMSSZ`) is the lateness.
 *    Expected: for each schedule, every whole second from its first occurrence (the put's
 *    `pending.runAt`) up to 1 s before its own DELETE was sent; the later ones, up to the DELETE's
 *    answer, are a margin (the delete may withdraw one not yet advanced), counted apart. "Steady"
 *    are the expected ones due at least 1 s before the first DELETE. Missed: an expected time with
 *    no start; doubled: an occurrence with more than one start.
 *    Where the time goes: the fan-out's claim lateness (its EMF `lateness` metric: claim − due,
 *    Redis clock; the handler's own further claims log none), the lateness of each second's first,
 *    10th, 50th and last start, and, while the schedules fire, how long the stack's threads ran on a
 *    CPU and waited on a run queue for one (/proc/<pid>/task/<tid>/schedstat).
 *    Goal (issue 15): p99 ≤ 100 ms, missed 0, doubled 0.
 *
 * Results are in BENCHMARKS.md.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { Schedule } from '../lib/engine';
import { catchUpPlan, occurrenceId } from '../lib/core/schedule';
import { scheduleKeys, topicKeys } from '../lib/testing';
import { DevStack, type StackKind } from './harness/dev-stack';
import { envInt, envOnly, runs } from './harness/env';
import { runBench, track, whenStopping } from './harness/lifecycle';
import { commandStats, loadNow, quantile, redisCpu, sortNum, stopwatch, total } from './harness/measure';
import { paddedBody, pool, queueOn, type Queue } from './harness/queue';
import { connect, logCommands, memoryUsage, slowlogReader, usedMemory, withRedis, type Logged } from './harness/redis';
import {
  fmt,
  machineLine,
  machineOf,
  printJson,
  printTable,
  round,
  verdict,
  type Machine,
  type Row,
} from './harness/report';

const N = {
  schedules: envInt('BENCH_SCHEDULES', 10_000),
  putsInFlight: envInt('BENCH_PUTS_IN_FLIGHT', 32),
  bodyBytes: envInt('BENCH_BODY_BYTES', 200), // as bench/engine.ts, so the occurrence's bytes compare with its step 4
  settleMs: envInt('BENCH_SETTLE_MS', 1_000),
  precisionSchedules: envInt('BENCH_PRECISION_SCHEDULES', 100),
  precisionSeconds: envInt('BENCH_PRECISION_SECONDS', 60),
  devReadySeconds: envInt('BENCH_DEV_READY_SECONDS', 600),
};
const ONLY = envOnly(['sweep', 'precision'] as const);

const TARGETS = { p99Ms: 100, missed: 0, doubled: 0 };
const TOPIC = 'bench-sched';
const PRECISION_TOPIC = 'example'; // serverless.yml's topic with a no-op handler
const FIVE_MIN = 300_000;
// Berlin's offset is whole hours: due on UTC's 5-minute boundaries too
const CRON = { cron: '*/5 * * * *', timezone: 'Europe/Berlin' } as const;
const EVERY = { every: 60 } as const;
const IN_FLIGHT_HTTP = 10;
const DRAIN_MS = 30_000;
// the first sweep logs only commands of 1 ms or more: a script's own commands (µs each) stay out, and cost nothing
const SLOWLOG_LIGHT_US = 1_000;

const load = () => loadNow().join(' / ');
const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** A JSON body whose text is exactly `bytes` bytes. */
const makeBody = (n: number, bytes: number) => paddedBody({ report: `r-${pad(n, 9)}`, note: '' }, bytes);

// ---------------------------------------------------------------------------------------------
// 1. 10,000 schedules due at once

const scheduleId = (i: number) => `sched-${pad(i, 6)}`;
const specOf = (i: number) => (i % 2 === 0 ? EVERY : CRON);

/** Microseconds Redis has spent in script calls (FCALL, EVAL, EVALSHA and their _RO forms), from INFO commandstats. */
async function scriptUsec(redis: Redis): Promise<number> {
  const scripts = /^(?:fcall|fcall_ro|eval|evalsha|eval_ro|evalsha_ro)$/;
  return total(await commandStats(redis), (name) => scripts.test(name), 'usec');
}

const redisCpuMs = async (redis: Redis) => (await redisCpu(redis)).seconds * 1000;

interface SweepRun {
  /** slowlog-log-slower-than during the sweep, µs. */
  slowlogUs: number;
  putMs: number;
  putsPerSecond: number;
  calls: number;
  wallMs: number;
  /**
   * CPU time over the sweep calls: this Node process (the client computing the advances), and redis-server (INFO
   * used_cpu_*).
   */
  clientCpuMs: number;
  redisCpuMs: number;
  advanced: number;
  moved: number;
  /** Redis time of each sweep call: its script calls' time from INFO commandstats (eval, evalsha), ms. */
  redisMsPerCall: number[];
  /** The same from SLOWLOG (only complete at slowlog-log-slower-than 0), ms. */
  slowlogMsPerCall: number[];
  commandsPerCall: number[];
  slowest: { ms: number; name: string } | null;
  /** Commands the client sent that SLOWLOG logged (all at 0), by script. */
  byScript: Record<string, { calls: number; p50Ms: number; maxMs: number }>;
  loggedInside: number;
  slowlogOverflow: boolean;
  check: { ok: boolean; problems: string[] };
  load: number[];
}

interface MemoryResult {
  bytesPerSchedule: number;
  keys: Record<string, number>;
  scheduleAlone: number;
  occurrence: number;
  recordBytes: number;
}

/** Puts every schedule at `t0`; throws unless each is created with its pending occurrence at `due`. */
async function putAll(queue: Queue, due: number): Promise<number> {
  const t = performance.now();
  await pool(N.schedules, N.putsInFlight, async (i) => {
    const { status, schedule } = await queue.putSchedule(TOPIC, scheduleId(i), {
      ...specOf(i),
      body: makeBody(i, N.bodyBytes),
    });
    if (status !== 'created' || schedule.pending?.runAt !== new Date(due).toISOString())
      throw new Error(`schedule ${scheduleId(i)}: ${status}, pending ${JSON.stringify(schedule.pending)}`);
  });
  return performance.now() - t;
}

/** When schedule `i`'s next occurrence after `due` falls: every: B + 60 s, cron: B + 5 min. */
const nextOf = (i: number, due: number) => due + (specOf(i) === EVERY ? 60_000 : FIVE_MIN);

/**
 * The jobs hash holds, per schedule, exactly its occurrence at `due` (in the ready list, once) and
 * the next one (in the delayed zset), and nothing else; the problems found, the first 10 of each kind.
 */
async function checkJobs(admin: Redis, due: number): Promise<string[]> {
  const problems: string[] = [];
  const k = topicKeys(0, TOPIC, 1);
  const jobIds = new Set<string>();
  let cursor = '0';
  do {
    const [next, fields] = await admin.hscan(k.jobs, cursor, 'COUNT', 1000);
    cursor = next;
    for (let j = 0; j < fields.length; j += 2) if (!fields[j]!.startsWith('#')) jobIds.add(fields[j]!);
  } while (cursor !== '0');
  const ready = await admin.lrange(k.ready, 0, -1);
  const readySet = new Set(ready);
  if (ready.length !== readySet.size) problems.push(`the ready list holds ${ready.length - readySet.size} ids twice`);
  const delayed = new Map<string, number>();
  const scored = await admin.zrange(k.delayed, 0, -1, 'WITHSCORES');
  for (let j = 0; j < scored.length; j += 2) delayed.set(scored[j]!, Number(scored[j + 1]));
  const expected = new Set<string>();
  const bad: string[] = [];
  for (let i = 0; i < N.schedules; i++) {
    const ran = occurrenceId(scheduleId(i), due);
    const next = occurrenceId(scheduleId(i), nextOf(i, due));
    expected.add(ran).add(next);
    if (!jobIds.has(ran) || !readySet.has(ran)) bad.push(`${ran} not a ready job`);
    if (!jobIds.has(next) || delayed.get(next) !== nextOf(i, due))
      bad.push(`${next} not delayed to ${new Date(nextOf(i, due)).toISOString()}`);
  }
  if (bad.length) problems.push(`${bad.length} occurrences wrong: ${bad.slice(0, 10).join('; ')}`);
  const extra = [...jobIds].filter((id) => !expected.has(id));
  if (extra.length) problems.push(`${extra.length} jobs that should not exist: ${extra.slice(0, 10).join(', ')}`);
  if (jobIds.size !== 2 * N.schedules) problems.push(`${jobIds.size} jobs, not ${2 * N.schedules}`);
  return problems;
}

/** Through the API: each schedule's view names the next occurrence as pending and `due` as its last run. */
async function checkViews(queue: Queue, due: number): Promise<string[]> {
  const problems: string[] = [];
  const views: Schedule[] = [];
  let page: string | undefined;
  do {
    const { schedules, next } = await queue.listSchedules(TOPIC, { limit: 100, ...(page ? { cursor: page } : {}) });
    views.push(...schedules);
    page = next ?? undefined;
  } while (page);
  if (views.length !== N.schedules) problems.push(`listSchedules shows ${views.length} schedules`);
  const wrong = views.filter((v) => {
    const i = Number(v.id.slice('sched-'.length));
    return v.pending?.id !== occurrenceId(v.id, nextOf(i, due)) || v.lastRunAt !== new Date(due).toISOString();
  });
  if (wrong.length)
    problems.push(
      `${wrong.length} schedule views with another pending occurrence or last run: ${wrong
        .slice(0, 5)
        .map((v) => `${v.id} ${JSON.stringify(v.pending)} ${v.lastRunAt}`)
        .join('; ')}`,
    );
  return problems;
}

/** Every schedule advanced exactly once at `due` (see the file's header). */
async function checkAdvanced(
  queue: Queue,
  admin: Redis,
  due: number,
  swept: { advanced: number; moved: number },
): Promise<{ ok: boolean; problems: string[] }> {
  const problems: string[] = [];
  if (swept.advanced !== N.schedules) problems.push(`sweep advanced ${swept.advanced}, not ${N.schedules}`);
  if (swept.moved !== N.schedules) problems.push(`sweep moved ${swept.moved} occurrences, not ${N.schedules}`);
  problems.push(...(await checkJobs(admin, due)), ...(await checkViews(queue, due)));
  return { ok: problems.length === 0, problems };
}

/** Puts every schedule from empty, each settled; used_memory's growth, and MEMORY USAGE of each key. */
async function fillSchedules(
  queue: Queue,
  admin: Redis,
  due: number,
): Promise<{ putMs: number; memory: MemoryResult }> {
  // a first put loads the scripts and sizes the client's buffers; then nothing is left of it
  await queue.putSchedule(TOPIC, 'warm-up', { ...EVERY, body: makeBody(0, N.bodyBytes) });
  await admin.flushall();
  await admin.call('MEMORY', 'PURGE');
  await sleep(N.settleMs);
  const before = await usedMemory(admin);
  const putMs = await putAll(queue, due);
  await sleep(N.settleMs);
  const after = await usedMemory(admin);
  const sk = scheduleKeys(0, TOPIC, 1);
  const k = topicKeys(0, TOPIC, 1);
  const keys: Record<string, number> = {};
  for (const [name, key] of [
    ['schedules hash', sk.schedules],
    ['schedule-ids zset', sk.ids],
    ['schedule-next zset', sk.next],
    ['jobs hash', k.jobs],
    ['delayed zset', k.delayed],
  ] as const) {
    keys[name] = round((await memoryUsage(admin, [key])) / N.schedules, 1);
  }
  const sample = ((await admin.call('HRANDFIELD', sk.schedules, '1000')) as string[]).filter((f) => !f.startsWith('#'));
  const lengths = await Promise.all(sample.map((f) => admin.hstrlen(sk.schedules, f)));
  const memory: MemoryResult = {
    bytesPerSchedule: round((after - before) / N.schedules, 1),
    keys,
    scheduleAlone: round(keys['schedules hash']! + keys['schedule-ids zset']! + keys['schedule-next zset']!, 1),
    occurrence: round(keys['jobs hash']! + keys['delayed zset']!, 1),
    recordBytes: round(lengths.reduce((a, b) => a + b, 0) / Math.max(1, lengths.length), 1),
  };
  console.log(
    `1. ${fmt(N.schedules)} schedules put in ${fmt(putMs / 1000, 1)} s (${fmt((N.schedules / putMs) * 1000)}/s); ${fmt(memory.bytesPerSchedule, 1)} bytes each with its occurrence; load average ${load()}`,
  );
  return { putMs, memory };
}

/** A sweep run before its first call. */
function newSweepRun(slowlogUs: number, putMs: number): SweepRun {
  return {
    slowlogUs,
    slowlogMsPerCall: [],
    putMs: Math.round(putMs),
    putsPerSecond: Math.round((N.schedules / putMs) * 1000),
    calls: 0,
    wallMs: 0,
    clientCpuMs: 0,
    redisCpuMs: 0,
    advanced: 0,
    moved: 0,
    redisMsPerCall: [],
    commandsPerCall: [],
    slowest: null,
    byScript: {},
    loggedInside: 0,
    slowlogOverflow: false,
    check: { ok: false, problems: [] },
    load: [],
  };
}

/** One sweep call: its wall and CPU times, its Redis script time, and what SLOWLOG logged of it. Resolves `more`. */
async function sweepOnce(
  queue: Queue,
  admin: Redis,
  run: SweepRun,
  readSlowlog: (redis: Redis) => Promise<Logged[]>,
  byScript: Map<string, number[]>,
): Promise<boolean> {
  await admin.call('SLOWLOG', 'RESET');
  const redisCpu = await redisCpuMs(admin);
  const scripts = await scriptUsec(admin);
  const clock = stopwatch();
  const result = await queue.engine.sweep();
  run.wallMs += clock.wallMs();
  run.clientCpuMs += clock.cpuMs();
  run.redisCpuMs += (await redisCpuMs(admin)) - redisCpu;
  run.redisMsPerCall.push(round(((await scriptUsec(admin)) - scripts) / 1000));
  run.calls += 1;
  run.advanced += result.schedulesAdvanced;
  run.moved += result.moved;
  const logged = await readSlowlog(admin);
  if (logged.length >= 1_000_000) run.slowlogOverflow = true;
  // not the bench's own
  const sent = logged.filter((l) => l.fromClient && !['SLOWLOG', 'INFO', 'CONFIG'].includes(l.name));
  run.loggedInside += logged.length - logged.filter((l) => l.fromClient).length;
  run.slowlogMsPerCall.push(round(sent.reduce((s, l) => s + l.us, 0) / 1000));
  run.commandsPerCall.push(sent.length);
  for (const l of sent) {
    byScript.set(l.name, [...(byScript.get(l.name) ?? []), l.us / 1000]);
    if (!run.slowest || l.us / 1000 > run.slowest.ms) run.slowest = { ms: l.us / 1000, name: l.name };
  }
  return result.more;
}

/** Sweeps until nothing more is due, SLOWLOG at `slowlogUs`, each call measured. */
async function sweepDue(queue: Queue, admin: Redis, slowlogUs: number, putMs: number): Promise<SweepRun> {
  const readSlowlog = slowlogReader();
  await logCommands(admin, slowlogUs, 1000000);
  const run = newSweepRun(slowlogUs, putMs);
  const byScript = new Map<string, number[]>();
  for (let more = true; more;) {
    more = await sweepOnce(queue, admin, run, readSlowlog, byScript);
    if (run.calls > 10 * Math.ceil(N.schedules / 1000) + 10)
      throw new Error(`sweep still says more after ${run.calls} calls`);
  }
  await logCommands(admin, -1);
  run.wallMs = round(run.wallMs, 1);
  run.clientCpuMs = round(run.clientCpuMs, 1);
  run.redisCpuMs = round(run.redisCpuMs, 1);
  for (const [name, ms] of byScript) {
    const sorted = sortNum(ms);
    run.byScript[name] = { calls: ms.length, p50Ms: round(quantile(sorted, 0.5)), maxMs: round(sorted.at(-1)!) };
  }
  return run;
}

/** One run of step 1: the schedules put from empty, then all swept at once and checked. */
async function sweepRun(
  port: number,
  admin: Redis,
  slowlogUs: number,
): Promise<{ run: SweepRun; memory: MemoryResult }> {
  const due = Math.ceil((Date.now() + 10 * 60_000) / FIVE_MIN) * FIVE_MIN;
  let clock = due - 30_000; // every: 60 and */5 both have their next run at `due`
  const redis = connect({ port });
  try {
    const queue = queueOn(redis, { [TOPIC]: {} }, {}, { clock: () => clock });
    const { putMs, memory } = await fillSchedules(queue, admin, due);
    clock = due; // all due at once
    const run = await sweepDue(queue, admin, slowlogUs, putMs);
    run.check = await checkAdvanced(queue, admin, due, run);
    run.load = loadNow();
    return { run, memory };
  } finally {
    redis.disconnect();
  }
}

/**
 * Mean µs of one catchUpPlan (the client's arithmetic for one due schedule) of `spec` at `due`, over 2,000 calls: wall
 * and CPU.
 */
function planMicros(spec: typeof EVERY | typeof CRON, due: number): { wall: number; cpu: number } {
  const full = { ...spec, catchUp: 'latest' as const, paused: false };
  const calls = 2_000;
  catchUpPlan(full, due, due);
  const clock = stopwatch();
  for (let i = 0; i < calls; i++) catchUpPlan(full, due, due);
  const wall = clock.wallMs();
  const cpuMs = clock.cpuMs();
  return { wall: round((wall * 1000) / calls, 1), cpu: round((cpuMs * 1000) / calls, 1) };
}

type SweepStep = {
  memory: MemoryResult;
  runs: SweepRun[];
  planUs: { every: { wall: number; cpu: number }; cron: { wall: number; cpu: number } };
  machine: Machine;
};

async function sweepStep(): Promise<SweepStep> {
  return withRedis(async (server, admin) => {
    const machine = await machineOf(admin, server.pid);
    console.log(`${machineLine(machine)}; load average ${load()}`);
    await logCommands(admin, -1);
    const first = await sweepRun(server.port, admin, SLOWLOG_LIGHT_US);
    printSweep(first.run);
    const second = await sweepRun(server.port, admin, 0);
    printSweep(second.run);
    const due = Math.ceil(Date.now() / FIVE_MIN) * FIVE_MIN;
    const planUs = { every: planMicros(EVERY, due), cron: planMicros(CRON, due) };
    console.log(
      `1. one advance planned in ${planUs.every.wall} µs wall, ${planUs.every.cpu} µs CPU (every: 60), ${planUs.cron.wall} µs wall, ${planUs.cron.cpu} µs CPU (cron in Berlin); load average ${load()}`,
    );
    return { memory: first.memory, runs: [first.run, second.run], planUs, machine };
  });
}

function printSweep(r: SweepRun): void {
  const perCall = sortNum(r.redisMsPerCall);
  console.log(
    `1. sweep with slowlog-log-slower-than ${r.slowlogUs}: ${r.calls} calls, ${fmt(r.wallMs, 1)} ms wall (CPU: client ${fmt(r.clientCpuMs)} ms, redis-server ${fmt(r.redisCpuMs)} ms), advanced ${fmt(r.advanced)}, moved ${fmt(r.moved)}` +
      `; Redis script time per call median ${fmt(quantile(perCall, 0.5), 2)} ms, max ${fmt(perCall.at(-1) ?? NaN, 2)} ms; slowest command ${r.slowest ? `${fmt(r.slowest.ms, 2)} ms (${r.slowest.name})` : 'none logged'}` +
      `; check ${r.check.ok ? 'passed' : `FAILED: ${r.check.problems.join(' | ')}`}; load average ${r.load.join(' / ')}`,
  );
}

// ---------------------------------------------------------------------------------------------
// 2. Precision through `npm run dev`

interface Start {
  id: string;
  at: number;
  latenessMs: number;
  attempt: number;
  requestId: string | undefined;
  coldStart: boolean;
}

/** What the bench reads from the stack's JSON log lines. */
class DevOutput {
  starts: Start[] = [];
  claims: { at: number; lateness: number[] }[] = [];
  /** Log lines of level WARN or ERROR, by message: how many, and the first few. */
  warnings = new Map<string, { count: number; samples: string[] }>();
  constructor(private readonly prefix: string) {}
  entry(entry: Record<string, unknown>, line: string): void {
    if (entry.level === 'WARN' || entry.level === 'ERROR') {
      const key = `${entry.level} ${String(entry.message)}`;
      const seen = this.warnings.get(key) ?? { count: 0, samples: [] };
      seen.count += 1;
      if (seen.samples.length < 3) seen.samples.push(line.slice(0, 600));
      this.warnings.set(key, seen);
    }
    if (entry.message === 'job started' && typeof entry.jobId === 'string' && entry.jobId.startsWith(this.prefix)) {
      this.starts.push({
        id: entry.jobId,
        at: Date.parse(String(entry.timestamp)),
        latenessMs: Number(entry.latenessMs),
        attempt: Number(entry.attempt),
        requestId: entry.function_request_id as string | undefined,
        coldStart: entry.cold_start === true,
      });
    } else if (entry._aws && entry.topic === PRECISION_TOPIC && Array.isArray(entry.lateness)) {
      this.claims.push({
        at: Number((entry._aws as { Timestamp: number }).Timestamp),
        lateness: entry.lateness as number[],
      });
    }
  }
}

/**
 * Deletes schedules `ids` of the precision topic, 10 at once; `done` is called with each id and when its DELETE was
 * sent.
 */
async function deleteAll(
  stack: DevStack,
  ids: readonly string[],
  done: (id: string, sentAt: number) => void,
): Promise<void> {
  await pool(ids.length, IN_FLIGHT_HTTP, async (i) => {
    const start = Date.now();
    const { status } = await stack.api('DELETE', `/schedules/${PRECISION_TOPIC}/${ids[i]}`);
    if (status !== 200 && status !== 404) throw new Error(`DELETE schedule ${ids[i]}: ${status}`);
    done(ids[i]!, start);
  });
}

/**
 * Schedules of the precision topic named like this bench's (`prec-…`): left by a run that was killed before deleting
 * them.
 */
async function leftoverSchedules(stack: DevStack): Promise<string[]> {
  const found: string[] = [];
  let cursor: string | null = null;
  do {
    const { status, body } = await stack.api(
      'GET',
      `/schedules?topic=${PRECISION_TOPIC}&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    if (status !== 200) throw new Error(`GET /schedules: ${status}`);
    found.push(...(body.schedules as { id: string }[]).map((s) => s.id).filter((id) => id.startsWith('prec-')));
    cursor = body.next as string | null;
  } while (cursor);
  return found;
}

interface PrecisionResult {
  schedules: number;
  seconds: number;
  readyMs: number;
  expected: number;
  started: number;
  missed: number;
  /** Missed occurrences by whole seconds from their nominal time to their schedule's DELETE. */
  missedBySecondsBeforeDelete: Record<string, number>;
  doubled: number;
  retried: number;
  marginNominal: number;
  marginStarted: number;
  unexpectedStarts: number;
  latenessMs: { p50: number; p90: number; p99: number; max: number; min: number };
  /** Largest difference between the log line's latenessMs (Redis clock) and timestamp − nominal. */
  latenessFieldDiffMaxMs: number;
  claimLatenessMs: { claims: number; p50: number; p99: number; max: number };
  /**
   * The same over the occurrences due at least 1 s before the first DELETE was sent (steady firing, no deletes under
   * way).
   */
  steady: { expected: number; missed: number; latenessMs: { p50: number; p90: number; p99: number; max: number } };
  /**
   * While the schedules fired, per second: seconds the stack's threads ran on a CPU and waited on
   * a run queue (ready to run, but the CPUs were busy): serverless offline (its Lambdas run in
   * it), redis-server, the rest (npm, scripts/dev.ts, esbuild).
   */
  stackCpu: Record<StackKind, { run: number; wait: number }>;
  /**
   * Missed occurrences that were their schedule's first, and those whose schedule's next
   * occurrence started (the schedule moved on past them), with the median lateness of that start.
   */
  missedFirst: number;
  missedNextStarted: { count: number; p50Ms: number };
  /**
   * The first 20 missed: their id, whether it was its schedule's first occurrence, and how late the schedule's next one
   * started.
   */
  missedSamples: { id: string; first: boolean; nextLatenessMs: number | null }[];
  /** Median over the nominal seconds of the lateness of that second's first, 10th, 50th and last start. */
  byRankP50Ms: { first: number; tenth: number; fiftieth: number; last: number };
  handlerInvocationsPerSecond: number;
  coldStarts: number;
  /** The stack's WARN and ERROR log lines over the whole run, by message. */
  warnings: Record<string, { count: number; samples: string[] }>;
  putMs: number;
  deleteMs: number;
  drained: boolean;
  load: { start: number[]; during: number[][]; end: number[] };
}

/** Jobs of the precision topic delayed, ready or running. */
async function pending(stack: DevStack): Promise<number> {
  const { body } = await stack.api('GET', '/topics');
  const t = (body.topics as { topic: string; delayed: number; ready: number; running: number }[]).find(
    (s) => s.topic === PRECISION_TOPIC,
  );
  return t ? t.delayed + t.ready + t.running : 0;
}

/** The stack ready, without the schedules an interrupted run left in its Redis; resolves how long it took. */
async function stackReady(stack: DevStack): Promise<number> {
  const { http, lambda, redis } = stack.ports;
  console.log(
    `2. npm run dev on ports ${http} (HTTP), ${lambda} (Lambda), ${redis} (redis); waiting for it (load average ${load()})`,
  );
  const readyMs = await stack.ready(N.devReadySeconds * 1000);
  const leftover = await leftoverSchedules(stack);
  if (leftover.length > 0) {
    await deleteAll(stack, leftover, () => undefined);
    console.log(`2. deleted ${leftover.length} schedules an interrupted earlier run left in npm run dev's Redis`);
  }
  console.log(`2. ready in ${fmt(readyMs / 1000, 1)} s; warming up (load average ${load()})`);
  return readyMs;
}

/** 3 rounds of 100 jobs due in 0.5 s, each run to the end, then 10 DELETEs of absent schedules at once. */
async function warmUp(stack: DevStack, tag: string): Promise<void> {
  for (let r = 0; r < 3; r++) {
    const jobs = Array.from({ length: 100 }, (_, i) => ({
      topic: PRECISION_TOPIC,
      id: `warm-${tag}-${r}-${i}`,
      delay: 0.5,
    }));
    const { status } = await stack.api('POST', '/jobs/batch', { jobs });
    if (status !== 200) throw new Error(`warm-up batch: ${status}`);
    const end = Date.now() + 60_000;
    while ((await pending(stack)) > 0 && Date.now() < end) await sleep(200);
  }
  // the deletes at the end go 10 at once: warm 10 deleteSchedule workers now (404s), so that
  // their cold starts do not take the 2 cores from the stack while schedules still fire (on
  // AWS an API function's cold start runs elsewhere). Run E, before this, is in BENCHMARKS.md.
  const absent = Array.from({ length: IN_FLIGHT_HTTP }, (_, i) => `warm-${tag}-absent-${i}`);
  await deleteAll(stack, absent, () => undefined);
}

/** Puts the schedules, every 1 s, 10 at once; each one's first occurrence (ms), and the wall time. */
async function putSchedules(stack: DevStack, ids: readonly string[]) {
  const first = new Map<string, number>();
  const putStart = Date.now();
  await pool(ids.length, IN_FLIGHT_HTTP, async (i) => {
    const { status, body } = await stack.api('PUT', `/schedules/${PRECISION_TOPIC}/${ids[i]}`, {
      every: 1,
      body: { n: i },
    });
    if (status !== 201 || !body.schedule.pending)
      throw new Error(`PUT schedule ${ids[i]}: ${status} ${JSON.stringify(body)}`);
    first.set(ids[i]!, Date.parse(body.schedule.pending.runAt));
  });
  const putMs = Date.now() - putStart;
  console.log(
    `2. ${ids.length} schedules every 1 s put in ${putMs} ms; firing for ${N.precisionSeconds} s (load average ${load()})`,
  );
  return { first, putMs };
}

/** N.precisionSeconds while the schedules fire: the load every 10 s, and the stack's threads' CPU per second. */
async function fire(stack: DevStack) {
  const cpuBefore = stack.cpu();
  const firingStart = performance.now();
  const during: number[][] = [];
  for (let left = N.precisionSeconds * 1000; left > 0; left -= 10_000) {
    await sleep(Math.min(10_000, left));
    during.push(loadNow());
    if (stack.child.exitCode !== null) throw new Error(`npm run dev exited. Its last lines:\n${stack.lastLines()}`);
  }
  const stackCpu = stack.cpu();
  const firingS = (performance.now() - firingStart) / 1000;
  for (const kind of ['offline', 'redis', 'other'] as const) {
    stackCpu[kind] = {
      run: round((stackCpu[kind].run - cpuBefore[kind].run) / firingS, 2),
      wait: round((stackCpu[kind].wait - cpuBefore[kind].wait) / firingS, 2),
    };
  }
  return { stackCpu, during };
}

/** Deletes every schedule (10 at once), then waits until the topic has nothing delayed, ready or running. */
async function deleteAndDrain(stack: DevStack, ids: readonly string[]) {
  const deleteStart = Date.now();
  const deleted = new Map<string, { start: number; end: number }>();
  await deleteAll(stack, ids, (id, start) => deleted.set(id, { start, end: Date.now() }));
  const deleteEnd = Date.now();
  const drainEnd = Date.now() + DRAIN_MS;
  let drained = false;
  while (!(drained = (await pending(stack)) === 0) && Date.now() < drainEnd) await sleep(250);
  await sleep(2_000); // the last log lines
  return { deleted, deleteStart, deleteMs: deleteEnd - deleteStart, drained };
}

/** What the precision run recorded, read back once the schedules are deleted and the topic drained. */
interface Fired {
  ids: readonly string[];
  /** Each schedule's first occurrence (ms). */
  first: ReadonlyMap<string, number>;
  /** When each schedule's DELETE was sent and answered. */
  deleted: ReadonlyMap<string, { start: number; end: number }>;
  deleteStart: number;
  output: DevOutput;
}

/**
 * Expected occurrences (up to 1 s before their schedule's DELETE was sent) with their nominal
 * times, the margin after, each one's schedule's DELETE start, and the starts of each.
 */
function occurrences(f: Fired) {
  const expected = new Map<string, number>(); // occurrence id -> nominal ms
  const margin = new Set<string>();
  const deleteOf = new Map<string, number>(); // occurrence id -> its schedule's DELETE start
  for (const id of f.ids) {
    const { start, end } = f.deleted.get(id)!;
    for (let s = f.first.get(id)!; s <= end; s += 1_000) {
      const occurrence = occurrenceId(id, s);
      if (s <= start - 1_000) expected.set(occurrence, s);
      else margin.add(occurrence);
      deleteOf.set(occurrence, start);
    }
  }
  const startsOf = new Map<string, Start[]>();
  for (const s of f.output.starts) startsOf.set(s.id, [...(startsOf.get(s.id) ?? []), s]);
  return { expected, margin, deleteOf, startsOf };
}

type Occurrences = ReturnType<typeof occurrences>;

/** The lateness of each expected occurrence's first start, also by nominal second, and the handler invocations. */
function latenessOf({ expected, startsOf }: Occurrences) {
  const lateness: number[] = [];
  let fieldDiff = 0;
  const perSecond = new Map<number, number[]>();
  const requestsPerSecond = new Map<number, Set<string>>();
  for (const [id, nominal] of expected) {
    const s = startsOf.get(id)?.[0];
    if (!s) continue;
    const late = s.at - nominal;
    lateness.push(late);
    fieldDiff = Math.max(fieldDiff, Math.abs(s.latenessMs - late));
    perSecond.set(nominal, [...(perSecond.get(nominal) ?? []), late]);
    if (s.requestId) requestsPerSecond.set(nominal, (requestsPerSecond.get(nominal) ?? new Set()).add(s.requestId));
  }
  // median over the nominal seconds where every schedule started of that second's r-th start
  const rank = (r: number | 'last') => {
    const values = [...perSecond.values()]
      .filter((v) => v.length >= N.precisionSchedules)
      .map((v) => sortNum(v)[r === 'last' ? v.length - 1 : r - 1]!);
    return quantile(sortNum(values), 0.5);
  };
  const sorted = sortNum(lateness);
  return {
    started: lateness.length,
    latenessMs: {
      p50: quantile(sorted, 0.5),
      p90: quantile(sorted, 0.9),
      p99: quantile(sorted, 0.99),
      max: sorted.at(-1) ?? NaN,
      min: sorted[0] ?? NaN,
    },
    latenessFieldDiffMaxMs: fieldDiff,
    byRankP50Ms: {
      first: rank(1),
      tenth: rank(10),
      fiftieth: rank(Math.min(50, N.precisionSchedules)),
      last: rank('last'),
    },
    handlerInvocationsPerSecond: round(
      [...requestsPerSecond.values()].reduce((a, s) => a + s.size, 0) / Math.max(1, requestsPerSecond.size),
      1,
    ),
  };
}

/** Expected occurrences that never started: by seconds before their DELETE, their schedule's first, the next one. */
function missedOf(f: Fired, { expected, deleteOf, startsOf }: Occurrences) {
  const missedIds = [...expected.keys()].filter((id) => !startsOf.has(id));
  const scheduleOf = (id: string) => id.slice(0, id.lastIndexOf(':'));
  const nextStart = (id: string) => {
    const nominal = expected.get(id)! + 1_000;
    const s = startsOf.get(occurrenceId(scheduleOf(id), nominal))?.[0];
    return s ? s.at - nominal : null;
  };
  const nextLateness = sortNum(missedIds.flatMap((id) => nextStart(id) ?? []));
  const missedBy: Record<string, number> = {};
  for (const id of missedIds) {
    const key = String(Math.floor((deleteOf.get(id)! - expected.get(id)!) / 1000));
    missedBy[key] = (missedBy[key] ?? 0) + 1;
  }
  const isFirst = (id: string) => f.first.get(scheduleOf(id)) === expected.get(id);
  return {
    missed: missedIds.length,
    missedBySecondsBeforeDelete: missedBy,
    missedFirst: missedIds.filter(isFirst).length,
    missedNextStarted: { count: nextLateness.length, p50Ms: quantile(nextLateness, 0.5) },
    missedSamples: missedIds.slice(0, 20).map((id) => ({ id, first: isFirst(id), nextLatenessMs: nextStart(id) })),
  };
}

/** The occurrences due at least 1 s before the first DELETE was sent: expected, missed, and their lateness. */
function steadyOf(f: Fired, { expected, startsOf }: Occurrences) {
  const steadyIds = [...expected].filter(([, nominal]) => nominal <= f.deleteStart - 1_000).map(([id]) => id);
  const steadyLate = sortNum(
    steadyIds.flatMap((id) => {
      const s = startsOf.get(id)?.[0];
      return s ? [s.at - expected.get(id)!] : [];
    }),
  );
  return {
    expected: steadyIds.length,
    missed: steadyIds.filter((id) => !startsOf.has(id)).length,
    latenessMs: {
      p50: quantile(steadyLate, 0.5),
      p90: quantile(steadyLate, 0.9),
      p99: quantile(steadyLate, 0.99),
      max: steadyLate.at(-1) ?? NaN,
    },
  };
}

/** The fan-out's claim lateness (its EMF metric) while the schedules fired, before the deletes. */
function claimLatenessOf(f: Fired) {
  const firstNominal = Math.min(...f.first.values());
  const claimValues = sortNum(
    f.output.claims.filter((c) => c.at >= firstNominal && c.at <= f.deleteStart).flatMap((c) => c.lateness),
  );
  return {
    claims: claimValues.length,
    p50: quantile(claimValues, 0.5),
    p99: quantile(claimValues, 0.99),
    max: claimValues.at(-1) ?? NaN,
  };
}

/** Step 2: `npm run dev`, warmed up; the schedules put, fired, deleted, drained; what started when. */
async function precisionStep(): Promise<PrecisionResult> {
  const tag = Date.now().toString(36);
  const prefix = `prec-${tag}-`;
  const output = new DevOutput(prefix);
  const stack = await DevStack.start((entry, line) => output.entry(entry, line));
  const stopStack = track(() => stack.stop());
  const ids = Array.from({ length: N.precisionSchedules }, (_, i) => `${prefix}${pad(i, 3)}`);
  // on Ctrl-C: npm run dev keeps its Redis data (.data/redis): schedules left there would fire in the next run
  let putAny = false;
  const forgetDeletes = whenStopping(async () => {
    console.error("deleting the bench's schedules (at most 15 s), then stopping npm run dev");
    if (putAny) await Promise.race([deleteAll(stack, ids, () => undefined).catch(() => undefined), sleep(15_000)]);
  });
  const loadStart = loadNow();
  try {
    const readyMs = await stackReady(stack);
    await warmUp(stack, tag);
    putAny = true;
    const { first, putMs } = await putSchedules(stack, ids);
    const { stackCpu, during } = await fire(stack);
    const { deleted, deleteStart, deleteMs, drained } = await deleteAndDrain(stack, ids);
    const loadEnd = loadNow();
    const f: Fired = { ids, first, deleted, deleteStart, output };
    const o = occurrences(f);
    const { started, latenessMs, latenessFieldDiffMaxMs, byRankP50Ms, handlerInvocationsPerSecond } = latenessOf(o);
    return {
      schedules: ids.length,
      seconds: N.precisionSeconds,
      readyMs,
      expected: o.expected.size,
      started,
      ...missedOf(f, o),
      doubled: [...o.startsOf.values()].filter((s) => s.length > 1).length,
      retried: output.starts.filter((s) => s.attempt > 1).length,
      marginNominal: o.margin.size,
      marginStarted: [...o.margin].filter((id) => o.startsOf.has(id)).length,
      unexpectedStarts: [...o.startsOf.keys()].filter((id) => !o.expected.has(id) && !o.margin.has(id)).length,
      latenessMs,
      latenessFieldDiffMaxMs,
      claimLatenessMs: claimLatenessOf(f),
      steady: steadyOf(f, o),
      stackCpu,
      byRankP50Ms,
      handlerInvocationsPerSecond,
      coldStarts: output.starts.filter((s) => o.expected.has(s.id) && s.coldStart).length,
      warnings: Object.fromEntries(output.warnings),
      putMs,
      deleteMs,
      drained,
      load: { start: loadStart, during, end: loadEnd },
    };
  } finally {
    forgetDeletes();
    await stopStack();
  }
}

// ---------------------------------------------------------------------------------------------
// the tables and the JSON line

/** Redis script time per sweep call of a run: "median / max / total ms". */
function perCall(r: SweepRun): string {
  const sorted = sortNum(r.redisMsPerCall);
  return `${fmt(quantile(sorted, 0.5), 2)} / ${fmt(sorted.at(-1) ?? NaN, 2)} / ${fmt(
    sorted.reduce((a, b) => a + b, 0),
    1,
  )} ms`;
}

/** What a run of the sweep cost: wall and calls, CPU, script time per call, its slowest command. */
function sweepRunRows(label: string, r: SweepRun): Row[] {
  const slowest = r.slowest ? `${fmt(r.slowest.ms, 2)} ms (${r.slowest.name})` : `none of ${r.slowlogUs} µs or more`;
  return [
    [
      `sweep, all ${fmt(N.schedules)} due at once, ${label}: wall / calls`,
      `${fmt(r.wallMs, 1)} ms / ${r.calls} calls (load ${r.load.join(' / ')})`,
      '',
    ],
    ['  CPU over those calls: client (Node) / redis-server', `${fmt(r.clientCpuMs)} / ${fmt(r.redisCpuMs)} ms`, ''],
    ['  Redis script time per sweep call (commandstats): median / max / total', perCall(r), ''],
    ['  slowest single command', slowest, ''],
  ];
}

function sweepRows(sweep: SweepStep): Row[] {
  const [light, every] = sweep.runs as [SweepRun, SweepRun];
  const m = sweep.memory;
  const ok = light.check.ok && every.check.ok;
  return [
    [
      `put ${fmt(N.schedules)} schedules (putSchedule, ${N.putsInFlight} in flight), run 1; run 2`,
      `${fmt(light.putMs / 1000, 1)} s = ${fmt(light.putsPerSecond)}/s; ${fmt(every.putMs / 1000, 1)} s = ${fmt(every.putsPerSecond)}/s`,
      '',
    ],
    ['memory per schedule with its pending occurrence (used_memory)', `${fmt(m.bytesPerSchedule, 1)} bytes`, ''],
    [
      '  the schedule alone: schedules hash + ids zset + next zset (MEMORY USAGE)',
      `${fmt(m.scheduleAlone, 1)} = ${fmt(m.keys['schedules hash']!, 1)} + ${fmt(m.keys['schedule-ids zset']!, 1)} + ${fmt(m.keys['schedule-next zset']!, 1)} bytes (record ${fmt(m.recordBytes, 1)} bytes)`,
      '',
    ],
    [
      '  its occurrence: jobs hash + delayed zset (MEMORY USAGE)',
      `${fmt(m.occurrence, 1)} = ${fmt(m.keys['jobs hash']!, 1)} + ${fmt(m.keys['delayed zset']!, 1)} bytes`,
      '',
    ],
    ...sweepRunRows(`run 1, SLOWLOG from ${SLOWLOG_LIGHT_US} µs`, light),
    ...sweepRunRows('run 2, SLOWLOG at 0 (every command)', every),
    [
      '  run 2: commands sent per sweep call: median / max',
      `${quantile(sortNum(every.commandsPerCall), 0.5)} / ${Math.max(...every.commandsPerCall)}`,
      '',
    ],
    ...Object.entries(every.byScript)
      .sort((a, b) => b[1].maxMs - a[1].maxMs)
      .map(([name, s]): Row => [
        `  run 2: ${name}: calls, median / slowest`,
        `${fmt(s.calls)}, ${fmt(s.p50Ms, 3)} / ${fmt(s.maxMs, 3)} ms`,
        '',
      ]),
    [
      'client: one advance planned (catchUpPlan), every: 60 / cron in Berlin, CPU',
      `${fmt(sweep.planUs.every.cpu, 1)} / ${fmt(sweep.planUs.cron.cpu, 1)} µs (wall ${fmt(sweep.planUs.every.wall, 1)} / ${fmt(sweep.planUs.cron.wall, 1)})`,
      '',
    ],
    [
      'every schedule advanced exactly once (both runs)',
      ok
        ? `yes: ${fmt(N.schedules)} advanced, ${fmt(N.schedules)} occurrences created, none doubled`
        : `NO: ${[...light.check.problems, ...every.check.problems].join(' | ')}`,
      `all: ${verdict(ok)}`,
    ],
  ];
}

/** The precision run's starts: expected, started, missed, doubled, and how late. */
function precisionStartRows(p: PrecisionResult): Row[] {
  return [
    [`${p.schedules} schedules every 1 s for ${p.seconds} s: occurrences expected`, fmt(p.expected), ''],
    [
      '  started / missed / doubled',
      `${fmt(p.started)} / ${fmt(p.missed)} / ${fmt(p.doubled)}`,
      `missed 0, doubled 0: ${verdict(p.missed === 0 && p.doubled === 0)}`,
    ],
    [
      '  lateness (job started − nominal): p50 / p90 / p99 / max',
      `${p.latenessMs.p50} / ${p.latenessMs.p90} / ${p.latenessMs.p99} / ${p.latenessMs.max} ms (min ${p.latenessMs.min})`,
      `p99 ≤ ${TARGETS.p99Ms} ms: ${verdict(p.latenessMs.p99 <= TARGETS.p99Ms)}`,
    ],
    [
      '  missed, by seconds from nominal to its DELETE',
      Object.entries(p.missedBySecondsBeforeDelete)
        .map(([k, v]) => `${k} s: ${v}`)
        .join(', ') || 'none',
      '',
    ],
    [
      `  steady (due ≥ 1 s before the first DELETE): expected / missed`,
      `${fmt(p.steady.expected)} / ${fmt(p.steady.missed)}`,
      '',
    ],
    [
      '  steady: lateness p50 / p90 / p99 / max',
      `${p.steady.latenessMs.p50} / ${p.steady.latenessMs.p90} / ${p.steady.latenessMs.p99} / ${p.steady.latenessMs.max} ms`,
      `p99 ≤ ${TARGETS.p99Ms} ms: ${verdict(p.steady.latenessMs.p99 <= TARGETS.p99Ms)}`,
    ],
    [
      "  missed: its schedule's first occurrence; its schedule's next one started (median lateness)",
      `${fmt(p.missedFirst)}; ${fmt(p.missedNextStarted.count)} (${p.missedNextStarted.p50Ms} ms)`,
      '',
    ],
  ];
}

/** Where the precision run's time went: the stack's CPU, the claims, the starts by rank, and what it logged. */
function precisionStackRows(p: PrecisionResult): Row[] {
  return [
    [
      '  stack threads per s while firing, offline / redis-server / rest: on CPU',
      `${p.stackCpu.offline.run} / ${p.stackCpu.redis.run} / ${p.stackCpu.other.run} s`,
      '',
    ],
    [
      '  the same, waiting for a CPU (run queue)',
      `${p.stackCpu.offline.wait} / ${p.stackCpu.redis.wait} / ${p.stackCpu.other.wait} s`,
      '',
    ],
    [
      '  fan-out claim lateness (EMF): p50 / p99 / max',
      `${p.claimLatenessMs.p50} / ${p.claimLatenessMs.p99} / ${p.claimLatenessMs.max} ms (${fmt(p.claimLatenessMs.claims)} claimed)`,
      '',
    ],
    [
      "  each second's 1st / 10th / 50th / last start, median",
      `${p.byRankP50Ms.first} / ${p.byRankP50Ms.tenth} / ${p.byRankP50Ms.fiftieth} / ${p.byRankP50Ms.last} ms`,
      '',
    ],
    ['  handler invocations per second; cold starts', `${p.handlerInvocationsPerSecond}; ${p.coldStarts}`, ''],
    [
      '  margin (nominal after deletes − 1 s): started of',
      `${p.marginStarted} of ${p.marginNominal}; unexpected starts ${p.unexpectedStarts}; retried ${p.retried}`,
      '',
    ],
    [
      '  WARN / ERROR lines of the stack',
      Object.entries(p.warnings)
        .map(([m, w]) => `${w.count}× ${m}`)
        .join('; ') || 'none',
      '',
    ],
    ['  load average start / end', `${p.load.start.join(' / ')} → ${p.load.end.join(' / ')}`, ''],
  ];
}

async function main(): Promise<void> {
  const at = new Date();
  const loadAtStart = loadNow();
  console.log(`counts: ${JSON.stringify(N)}; load average ${load()}`);
  let sweep: SweepStep | undefined;
  if (runs(ONLY, 'sweep')) {
    sweep = await sweepStep();
    printTable(sweepRows(sweep));
  }
  let precision: PrecisionResult | undefined;
  if (runs(ONLY, 'precision')) {
    precision = await precisionStep();
    printTable([...precisionStartRows(precision), ...precisionStackRows(precision)]);
  }
  printJson({
    bench: 'schedules',
    at: at.toISOString(),
    machine: sweep?.machine,
    loadAverage: { start: loadAtStart, end: loadNow() },
    counts: N,
    results: { sweep: sweep && { memory: sweep.memory, planUs: sweep.planUs, runs: sweep.runs }, precision },
    targets: TARGETS,
  });
}

runBench(main);
