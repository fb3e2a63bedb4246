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
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { Engine, type Caller } from '../lib/engine';
import { queueOf } from '../test/support/queue';
import type { Invoker } from '../lib/platform/lambda';
import { createRuntime, type Runtime } from '../lib/platform/runtime';
import { runFanout, type HandlerEvent } from '../lib/workers/fanout';
import { topicHandler } from '../lib/workers/handler';
import { runSweeper } from '../lib/workers/sweeper';
import { startRedis, type RedisProcess } from '../test/support/redis';
import { describeMachine, envInt, fmt, info, printTable, reniceRedis, round } from './env';

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
const ROLE_TIMEOUT_MS = { sweeper: 120_000, fanout: 60_000, handler: 60_000 };

/** Redis CPU seconds (user + sys), commands, and script calls by function, from INFO. */
async function redisCounters(redis: Redis) {
  const cpu = await redis.info('cpu');
  const stats = await redis.info('commandstats');
  let commands = 0;
  let scriptCalls = 0;
  for (const [, name, calls] of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (name === 'info' || name!.startsWith('config')) continue;
    commands += Number(calls);
    if (name === 'fcall' || name === 'evalsha' || name === 'eval') scriptCalls += Number(calls);
  }
  const net = await redis.info('stats');
  // requests: socket reads with something to read (a pipelined batch read at once counts once)
  return {
    cpuS: Number(info(cpu, 'used_cpu_user')) + Number(info(cpu, 'used_cpu_sys')),
    commands,
    scriptCalls,
    reads: Number(info(net, 'total_reads_processed')),
  };
}

const quantile = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

async function main(): Promise<void> {
  let server: RedisProcess | undefined;
  let rt: Runtime | undefined;
  let admin: Redis | undefined;
  try {
    server = await startRedis();
    const nice = reniceRedis(server.pid);
    admin = new Redis(server.url);
    const base = createRuntime({
      DQ_CONFIG: JSON.stringify({
        partitions: N.partitions,
        topics: { [TOPIC]: { handler: 'steadyHandler', concurrency: 1000 } },
      }),
      REDIS_URL: server.url,
      API_TOKEN: 't',
      WEBHOOK_SECRET: 's',
      DQ_FUNCTION_PREFIX: 'bench-',
      LOG_LEVEL: 'error',
    });
    const redis = base.redis;
    const started = new Map<string, number[]>(); // id -> lateness of each start
    const handlers = new Set<Promise<unknown>>(); // handler invocations not finished (their acks included)
    const track = (p: Promise<unknown>, set?: Set<Promise<unknown>>) => {
      set?.add(p);
      void p.finally(() => set?.delete(p)).catch(() => undefined);
    };
    const invoker: Invoker = {
      async invokeAsync(name, payload) {
        const endsAt = Date.now() + (ROLE_TIMEOUT_MS[name as keyof typeof ROLE_TIMEOUT_MS] ?? ROLE_TIMEOUT_MS.handler);
        const remainingMs = () => endsAt - Date.now();
        const context = { awsRequestId: randomBytes(8).toString('hex'), getRemainingTimeInMillis: remainingMs };
        setImmediate(() => {
          const r = rt!;
          const deps = { ...r, timings: r.config.timings, remainingMs };
          if (name === 'sweeper') track(runSweeper(deps));
          else if (name === 'fanout') track(runFanout(deps, payload as { token?: string }));
          else track(handle(payload as HandlerEvent, context), handlers);
        });
      },
    };
    // an engine of its own (not base.engine): it wakes the sweeper through this process's invoker
    const engine = new Engine(redis, base.config.queue, {
      wake: {
        horizonMs: base.config.timings.sweeperHorizonMs,
        startSweeper: () => invoker.invokeAsync('sweeper', { source: 'wake' }),
        onError: () => undefined,
      },
    });
    rt = { ...base, engine, invoker };
    // each handler invocation with an engine of its own, as each Lambda instance has: what one
    // engine gathers into one call (acks made together) stays within one invocation
    const handle = topicHandler(
      async (job, context) => {
        const lateness = context.now() - job.runAt;
        const seen = started.get(job.id);
        if (seen) seen.push(lateness);
        else started.set(job.id, [lateness]);
      },
      () => ({ ...rt!, engine: new Engine(redis, base.config.queue) }),
    );
    const queue = queueOf(engine);
    const body = { order: 'x'.repeat(136) }; // 150 bytes as JSON

    // adds at N.rate a second: a burst every TICK_MS, each job due delayMs after its add
    let added = 0;
    const addFor = async (seconds: number, ids: string[]) => {
      const perTick = Math.max(1, Math.round((N.rate * TICK_MS) / 1000));
      const t0 = performance.now();
      const ticks = Math.round((seconds * 1000) / TICK_MS);
      for (let tick = 0; tick < ticks; tick++) {
        const burst = Array.from({ length: perTick }, () => `j${added++}`);
        ids.push(...burst);
        await Promise.all(burst.map((id) => queue.add({ topic: TOPIC, id, delay: N.delayMs / 1000, body }, PRODUCER)));
        const next = t0 + (tick + 1) * TICK_MS;
        const wait = next - performance.now();
        if (wait > 0) await sleep(wait);
      }
    };
    const allStarted = async (ids: readonly string[]) => {
      const limit = Date.now() + N.delayMs + 120_000;
      while (ids.some((id) => !started.has(id))) {
        if (Date.now() > limit) break;
        await sleep(50);
      }
    };

    const warm: string[] = [];
    await addFor(WARMUP_S, warm);
    await allStarted(warm);
    const measured: string[] = [];
    await admin.config('RESETSTAT');
    if (PROFILE) {
      await admin.config('SET', 'slowlog-max-len', String(N.rate * N.seconds * 60));
      await admin.config('SET', 'slowlog-log-slower-than', '0');
      await admin.slowlog('RESET');
    }
    const before = await redisCounters(admin);
    const wallStart = performance.now();
    const load0 = loadavg()[0]!;
    await addFor(N.seconds, measured);
    await allStarted(measured);
    while (handlers.size > 0) await Promise.all([...handlers]); // every handler done: its acks answered
    const after = await redisCounters(admin);
    const wallS = (performance.now() - wallStart) / 1000;
    const stats = await admin.info('commandstats');
    const jobs = measured.length;
    const profile: Record<string, { callsPerJob: number; usPerJob: number }> = {};
    if (PROFILE) {
      await admin.config('SET', 'slowlog-log-slower-than', '10000');
      for (const [, , us, args] of (await admin.slowlog('GET', -1)) as [number, number, number, string[]][]) {
        const [command = '?', first = ''] = args;
        const name = /^fcall$/i.test(command) ? `FCALL ${first.replace(/^dq_[0-9a-f]+_/, '')}` : command.toUpperCase();
        if (/^(SLOWLOG|CONFIG|INFO)$/.test(name)) continue;
        const row = (profile[name] ??= { callsPerJob: 0, usPerJob: 0 });
        row.callsPerJob += 1 / jobs;
        row.usPerJob += us / jobs;
      }
    }
    const late = measured.flatMap((id) => started.get(id)?.slice(0, 1) ?? []).sort((a, b) => a - b);
    const missing = measured.filter((id) => !started.has(id)).length;
    const twice = measured.filter((id) => (started.get(id)?.length ?? 0) > 1).length;
    const cpuUsPerJob = ((after.cpuS - before.cpuS) * 1e6) / jobs;
    const byCommand = Object.fromEntries(
      [...stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)]
        .filter(([, name]) => name !== 'info' && !name!.startsWith('config'))
        .map(([, name, calls]) => [name!, round(Number(calls) / jobs, 3)])
        .sort((a, b) => Number(b[1]) - Number(a[1])),
    );
    const result = {
      bench: 'steady',
      ...N,
      jobs,
      redisCpuUsPerJob: round(cpuUsPerJob, 1),
      commandsPerJob: round((after.commands - before.commands) / jobs, 2),
      scriptCallsPerJob: round((after.scriptCalls - before.scriptCalls) / jobs, 3),
      readsPerJob: round((after.reads - before.reads) / jobs, 3),
      latenessMs: { p50: quantile(late, 0.5), p99: quantile(late, 0.99), max: late.at(-1) ?? NaN },
      missing,
      twice,
      wallS: round(wallS, 1),
      loadAvg: [round(load0, 2), round(loadavg()[0]!, 2)],
      redisNice: nice,
      byCommand,
      ...(PROFILE ? { profile } : {}),
      machine: describeMachine(await admin.info('server'), server.pid),
    };
    printTable([
      ['jobs (one a request)', `${fmt(jobs)} at ${fmt(N.rate)}/s, due ${fmt(N.delayMs)} ms after their add`, ''],
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
      ['never started / started twice', `${missing} / ${twice}`, '0 / 0'],
      ['load average (1 min) at start / end', `${result.loadAvg[0]} / ${result.loadAvg[1]}`, ''],
    ]);
    console.log(`commands per job: ${JSON.stringify(byCommand)}`);
    if (PROFILE) {
      const rows = Object.entries(profile).sort((a, b) => b[1].usPerJob - a[1].usPerJob);
      printTable(
        rows.map(([name, row]) => [
          name,
          fmt(row.callsPerJob, 3),
          fmt(row.usPerJob, 2),
          fmt(row.usPerJob / row.callsPerJob, 1),
        ]),
        ['call (SLOWLOG, every command)', 'calls per job', 'Redis µs per job', 'µs per call'],
      );
    }
    console.log(JSON.stringify(result));
  } finally {
    rt?.redis.disconnect();
    admin?.disconnect();
    await server?.stop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
