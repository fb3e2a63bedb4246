/**
 * Steady-flow benchmark (issue 31; not a test): what a job costs Redis, and how late it starts,
 * when jobs flow in at a steady rate and fall due one after another. Starts its own redis-server
 * (nothing persisted) and runs the engine and the three Lambda roles in this process: the API's
 * add, the sweeper (`runSweeper`), the fan-out (`runFanout`) and a topic handler (`topicHandler`),
 * with an invoker that starts each invoked role in this process without waiting for it, as an
 * Event invoke does. No Lambda emulator: the figures are the engine's and Redis's alone
 * (`npm run bench:e2e` measures the same path through serverless offline).
 *
 *   npm run bench:steady
 *   BENCH_RATE=1000 BENCH_SECONDS=20 BENCH_DELAY_MS=1000 BENCH_PARTITIONS=1 npm run bench:steady
 *
 * Jobs are added one a request (the API's `POST /jobs` path: `Queue.add`) at BENCH_RATE a second
 * for BENCH_SECONDS, each due BENCH_DELAY_MS after its add, with a 150-byte body; the handler does
 * nothing but note when each job started. After 2 s of warm-up the measured window opens (INFO cpu
 * and commandstats of the redis-server) and closes when every job added in it has been acked.
 * Reported: Redis CPU (user + sys) per job, commands and script calls per job, the script calls
 * by function, and the engine's lateness (the handler's start on the Redis clock − runAt) p50, p99
 * and max; jobs never started or started twice. One Markdown table and one JSON line.
 * BENCH_PROFILE=1 also logs every command of the window (SLOWLOG at 0 µs, which costs Redis CPU of
 * its own: read the other figures from a run without it) and prints, per script and per plain
 * command, its calls and its Redis time per job.
 */
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { Engine, type Caller } from '../lib/engine';
import { queueOf, type Queue } from '../test/support/queue';
import { envInt, reniceRedis } from './harness/env';
import { runBench } from './harness/lifecycle';
import { commandStats, isInfoOrConfig, quantileFloor, redisCounters } from './harness/measure';
import { inProcessRoles, type Roles } from './harness/roles';
import { connect, functionName, info, logCommands, startServer } from './harness/redis';
import { fmt, machineOf, printJson, printTable, round } from './harness/report';

/** The key jobs are added with, as the API adds every job: its name is stored on each (updatedBy). */
const PRODUCER: Caller = { name: 'orders-service', scope: 'write', topics: null };

const N = {
  rate: envInt('BENCH_RATE', 1_000),
  seconds: envInt('BENCH_SECONDS', 20),
  delayMs: envInt('BENCH_DELAY_MS', 1_000),
  partitions: envInt('BENCH_PARTITIONS', 1),
};
const PROFILE = process.env.BENCH_PROFILE === '1';
const WARMUP_S = 2;
const TOPIC = 'steady';
const TICK_MS = 10; // adds are sent in a burst every 10 ms: rate / 100 at a time
const BODY = { order: 'x'.repeat(136) }; // 150 bytes as JSON

/** Redis CPU seconds (user + sys), commands, script calls, and socket reads with something to read, from INFO. */
async function counters(redis: Redis) {
  const { cpuS, commands, scriptCalls } = await redisCounters(redis);
  // requests: socket reads with something to read (a pipelined batch read at once counts once)
  const reads = Number(info(await redis.info('stats'), 'total_reads_processed'));
  return { cpuS, commands, scriptCalls, reads };
}

/** The run's jobs and when each started: each start's lateness (the handler's start on the Redis clock − runAt). */
class Flow {
  private added = 0;
  constructor(
    private readonly queue: Queue,
    readonly started: Map<string, number[]>,
  ) {}

  /** Adds at N.rate a second for `seconds`: a burst every TICK_MS, each job due delayMs after its add; their ids. */
  async addFor(seconds: number): Promise<string[]> {
    const ids: string[] = [];
    const perTick = Math.max(1, Math.round((N.rate * TICK_MS) / 1000));
    const t0 = performance.now();
    const ticks = Math.round((seconds * 1000) / TICK_MS);
    for (let tick = 0; tick < ticks; tick++) {
      const burst = Array.from({ length: perTick }, () => `j${this.added++}`);
      ids.push(...burst);
      await Promise.all(
        burst.map((id) => this.queue.add({ topic: TOPIC, id, delay: N.delayMs / 1000, body: BODY }, PRODUCER)),
      );
      const wait = t0 + (tick + 1) * TICK_MS - performance.now();
      if (wait > 0) await sleep(wait);
    }
    return ids;
  }

  /** Resolves once every one of `ids` has started, or 2 minutes after they were due. */
  async allStarted(ids: readonly string[]): Promise<void> {
    const limit = Date.now() + N.delayMs + 120_000;
    while (ids.some((id) => !this.started.has(id)) && Date.now() <= limit) await sleep(50);
  }

  /** How late the first start of each of `ids` was (sorted), and how many never started or started twice. */
  outcome(ids: readonly string[]) {
    return {
      late: ids.flatMap((id) => this.started.get(id)?.slice(0, 1) ?? []).sort((a, b) => a - b),
      missing: ids.filter((id) => !this.started.has(id)).length,
      twice: ids.filter((id) => (this.started.get(id)?.length ?? 0) > 1).length,
    };
  }
}

/** The roles in this process; the handler notes when each job started. */
function startRoles(redisUrl: string, started: Map<string, number[]>): Roles {
  return inProcessRoles({
    redisUrl,
    config: { partitions: N.partitions, topics: { [TOPIC]: { handler: 'steadyHandler', concurrency: 1000 } } },
    engine: (redis, config, options) => new Engine(redis, config, options),
    handlerWakes: false,
    job: async (job, context) => {
      const lateness = context.now() - job.runAt;
      const seen = started.get(job.id);
      if (seen) seen.push(lateness);
      else started.set(job.id, [lateness]);
    },
  });
}

type Profile = Record<string, { callsPerJob: number; usPerJob: number }>;

/** BENCH_PROFILE: every command of the window from SLOWLOG, per script and per plain command, per job. */
async function readProfile(admin: Redis, jobs: number): Promise<Profile> {
  const profile: Profile = {};
  await logCommands(admin, 10000);
  for (const [, , us, args] of (await admin.slowlog('GET', -1)) as [number, number, number, string[]][]) {
    const [command = '?', first = ''] = args;
    const name = /^fcall$/i.test(command) ? `FCALL ${functionName(first)}` : command.toUpperCase();
    if (/^(SLOWLOG|CONFIG|INFO)$/.test(name)) continue;
    const row = (profile[name] ??= { callsPerJob: 0, usPerJob: 0 });
    row.callsPerJob += 1 / jobs;
    row.usPerJob += us / jobs;
  }
  return profile;
}

/**
 * The measured window: opens (RESETSTAT, counters) after the warm-up, adds for N.seconds, closes
 * when every job added in it has started and every handler is done (its acks answered).
 */
async function measureWindow(admin: Redis, flow: Flow, roles: Roles) {
  await admin.config('RESETSTAT');
  if (PROFILE) {
    await logCommands(admin, 0, N.rate * N.seconds * 60);
    await admin.slowlog('RESET');
  }
  const before = await counters(admin);
  const wallStart = performance.now();
  const load0 = loadavg()[0]!;
  const measured = await flow.addFor(N.seconds);
  await flow.allStarted(measured);
  while (roles.handlers.size > 0) await Promise.all([...roles.handlers]); // every handler done: its acks answered
  const after = await counters(admin);
  const wallS = (performance.now() - wallStart) / 1000;
  const stats = await commandStats(admin);
  const jobs = measured.length;
  const profile = PROFILE ? await readProfile(admin, jobs) : {};
  const byCommand = Object.fromEntries(
    [...stats]
      .filter(([name]) => !isInfoOrConfig(name))
      .map(([name, s]) => [name, round(s.calls / jobs, 3)] as const)
      .sort((a, b) => b[1] - a[1]),
  );
  return { measured, before, after, wallS, load0, byCommand, profile };
}

type Window = Awaited<ReturnType<typeof measureWindow>>;

function resultOf(w: Window, flow: Flow) {
  const jobs = w.measured.length;
  const { late, missing, twice } = flow.outcome(w.measured);
  return {
    bench: 'steady',
    ...N,
    jobs,
    redisCpuUsPerJob: round(((w.after.cpuS - w.before.cpuS) * 1e6) / jobs, 1),
    commandsPerJob: round((w.after.commands - w.before.commands) / jobs, 2),
    scriptCallsPerJob: round((w.after.scriptCalls - w.before.scriptCalls) / jobs, 3),
    readsPerJob: round((w.after.reads - w.before.reads) / jobs, 3),
    latenessMs: { p50: quantileFloor(late, 0.5), p99: quantileFloor(late, 0.99), max: late.at(-1) ?? NaN },
    missing,
    twice,
    wallS: round(w.wallS, 1),
    loadAvg: [round(w.load0, 2), round(loadavg()[0]!, 2)],
  };
}

function printResult(result: ReturnType<typeof resultOf>, cpuUsPerJob: number, w: Window): void {
  printTable([
    ['jobs (one a request)', `${fmt(result.jobs)} at ${fmt(N.rate)}/s, due ${fmt(N.delayMs)} ms after their add`, ''],
    ['Redis CPU per job (add and deliver)', `${fmt(cpuUsPerJob, 1)} µs`, '≤ 60 µs'],
    [
      'commands / script calls / socket reads per job',
      `${fmt(result.commandsPerJob, 2)} / ${fmt(result.scriptCallsPerJob, 3)} / ${fmt(result.readsPerJob, 3)}`,
      '',
    ],
    [
      'lateness p50 / p99 / max',
      `${fmt(result.latenessMs.p50, 1)} / ${fmt(result.latenessMs.p99, 1)} / ${fmt(result.latenessMs.max, 1)} ms`,
      'p99 ≤ 5 ms',
    ],
    ['never started / started twice', `${result.missing} / ${result.twice}`, '0 / 0'],
    ['load average (1 min) at start / end', `${result.loadAvg[0]} / ${result.loadAvg[1]}`, ''],
  ]);
  console.log(`commands per job: ${JSON.stringify(w.byCommand)}`);
  if (!PROFILE) return;
  printTable(
    Object.entries(w.profile)
      .sort((a, b) => b[1].usPerJob - a[1].usPerJob)
      .map(([name, row]) => [
        name,
        fmt(row.callsPerJob, 3),
        fmt(row.usPerJob, 2),
        fmt(row.usPerJob / row.callsPerJob, 1),
      ]),
    ['call (SLOWLOG, every command)', 'calls per job', 'Redis µs per job', 'µs per call'],
  );
}

async function main(): Promise<void> {
  const server = await startServer();
  const nice = reniceRedis(server.pid);
  const admin = connect(server);
  let roles: Roles | undefined;
  try {
    const started = new Map<string, number[]>(); // id -> lateness of each start
    roles = startRoles(server.url, started);
    const flow = new Flow(queueOf(roles.rt.engine), started);
    await flow.allStarted(await flow.addFor(WARMUP_S));
    const w = await measureWindow(admin, flow, roles);
    const result = resultOf(w, flow);
    const cpuUsPerJob = ((w.after.cpuS - w.before.cpuS) * 1e6) / result.jobs;
    printResult(result, cpuUsPerJob, w);
    const machine = await machineOf(admin, server.pid);
    printJson({
      ...result,
      redisNice: nice,
      byCommand: w.byCommand,
      ...(PROFILE ? { profile: w.profile } : {}),
      machine,
    });
  } finally {
    roles?.rt.redis.disconnect();
    admin.disconnect();
    await server.stop();
  }
}

runBench(main, { forceExit: true });
