/**
 * Against BullMQ (not a test): the figures a user would compare this queue with BullMQ on, both
 * measured in one run, same workload, each step on a redis-server of its own started anew for it
 * (the harness's: the same redis-server binary, `--save '' --appendonly no`, stopped by PID).
 *
 *   npm run bench:bullmq
 *   BENCH_RATE=1000 BENCH_SECONDS=20 BENCH_DELAY_MS=1000 BENCH_HERD=50000 BENCH_INGEST=100000 npm run bench:bullmq
 *   BENCH_CALLGRIND=0 npm run bench:bullmq   # without the instructions step
 *
 * Here: the engine and the three Lambda roles in this process as `bench:steady` runs them (the
 * API's add, the sweeper, the fan-out, a topic handler that does nothing), on a topic with the
 * project's defaults (5 attempts, exponential backoff from 5 s, ttr 30 s, done jobs readable a day,
 * dead ones 7 days), concurrency 1,000. BullMQ (the version package.json pins): a Queue and a
 * Worker in this process, the worker's processor doing nothing, concurrency 1,000, its other
 * settings its defaults (lock 30 s, stalled check every 30 s); every job added with the same
 * guarantees as here: `attempts: 5`, `backoff: { type: 'exponential', delay: 5000 }`,
 * `removeOnComplete: { age: 86400 }`, `removeOnFail: { age: 604800 }`. Every body is 200 bytes of
 * JSON; ids are each side's own (random here, a counter in BullMQ). Both clients are ioredis.
 *
 * Steps, one side after the other:
 *   steady: BENCH_RATE (1,000) jobs a second added one a call (a burst every 10 ms), each due
 *     BENCH_DELAY_MS (1,000) after its add, for BENCH_SECONDS (20) after 2 s of warm-up. Redis CPU
 *     (INFO cpu, used_cpu_user + used_cpu_sys) from the window's start until every job of it is
 *     done, ÷ jobs; lateness (the handler's start − the job's due time, both on this host's clock)
 *     p50 / p99 / max; jobs delivered / added.
 *   herd: BENCH_HERD (50,000) jobs all due at one instant, added ahead of it in batches of 500:
 *     drain time (due instant → last handler start), Redis CPU ÷ jobs from the adds' end until
 *     every job is done.
 *   ingest: BENCH_INGEST (100,000) jobs due a day ahead, in batches of 500 (here `addMany`, the
 *     API's POST /jobs/batch; BullMQ `addBulk`), 4 batches in flight: jobs/s, and INFO memory's
 *     used_memory growth ÷ jobs (memory per delayed job).
 *   instructions: the steady workload at BENCH_INSTR_RATE (100) jobs a second for
 *     BENCH_INSTR_SECONDS (10) on a redis-server under valgrind's callgrind (about 50 times slower,
 *     so not at BENCH_RATE), counts zeroed after the warm-up: Redis instructions ÷ jobs. What Redis
 *     does each second whatever the jobs (its cron, each side's polling) is spread over fewer jobs
 *     than at BENCH_RATE. BENCH_CALLGRIND=0 (or no valgrind) leaves the step out.
 * Prints one Markdown table (figure | BullMQ | here | here ÷ BullMQ), one JSON line, and the load
 * average before and after. Results are in BENCHMARKS.md.
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue as BullQueue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { Engine, type Caller } from '../lib/engine';
import { queueOf } from '../test/support/queue';
import { hasValgrind, startUnderCallgrind, type CallgrindServer } from './harness/callgrind';
import { envInt } from './harness/env';
import { runBench } from './harness/lifecycle';
import { quantileFloor, redisCpu } from './harness/measure';
import { pool } from './harness/queue';
import { inProcessRoles } from './harness/roles';
import { connect, startServer, usedMemory } from './harness/redis';
import { fmt, machineOf, printJson, printTable, round } from './harness/report';

const N = {
  rate: envInt('BENCH_RATE', 1_000),
  seconds: envInt('BENCH_SECONDS', 20),
  delayMs: envInt('BENCH_DELAY_MS', 1_000),
  herd: envInt('BENCH_HERD', 50_000),
  ingest: envInt('BENCH_INGEST', 100_000),
  instrRate: envInt('BENCH_INSTR_RATE', 100),
  instrSeconds: envInt('BENCH_INSTR_SECONDS', 10),
};
const CALLGRIND = process.env.BENCH_CALLGRIND !== '0';
const CONCURRENCY = 1_000;
const BATCH = 500;
const IN_FLIGHT = 4;
const WARMUP_S = 2;
const TICK_MS = 10;
const FAR_MS = 86_400_000; // ingest: due a day ahead, so nothing runs
const BODY_BYTES = 200;
const TOPIC = 'bench';
const PRODUCER: Caller = { name: 'orders-service', scope: 'write', topics: null };
const BULL_JOB_OPTIONS = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 5_000 },
  removeOnComplete: { age: 86_400 },
  removeOnFail: { age: 604_800 },
};
const BULLMQ_VERSION = (JSON.parse(readFileSync(require.resolve('bullmq/package.json'), 'utf8')) as { version: string })
  .version;

type Body = { seq: number; note: string };
/** Job `seq`'s body: `{ seq, note }` whose JSON text is exactly BODY_BYTES bytes. */
function bodyOf(seq: number): Body {
  const pad = BODY_BYTES - JSON.stringify({ seq, note: '' }).length;
  return { seq, note: 'x'.repeat(pad) };
}

/** When each job was delivered: its lateness (ms) for each start, and the latest start, by seq. */
class Deliveries {
  readonly late = new Map<number, number[]>();
  readonly at = new Map<number, number>();
  count = 0;

  deliver(seq: number, dueAt: number): void {
    const now = performance.timeOrigin + performance.now();
    this.count++;
    const seen = this.late.get(seq);
    if (seen) seen.push(now - dueAt);
    else this.late.set(seq, [now - dueAt]);
    this.at.set(seq, now);
  }

  /** Resolves once every seq of [from, to) was delivered, or `limitMs` from now. */
  async all(from: number, to: number, limitMs: number): Promise<void> {
    const limit = Date.now() + limitMs;
    for (let seq = from; seq < to;) {
      if (this.late.has(seq)) seq++;
      else if (Date.now() > limit) return;
      else await sleep(20);
    }
  }

  /** Of [from, to): the first starts' lateness (sorted), the latest start, how many never started or twice. */
  outcome(from: number, to: number) {
    const late: number[] = [];
    let last = 0;
    let missing = 0;
    let twice = 0;
    for (let seq = from; seq < to; seq++) {
      const seen = this.late.get(seq);
      if (!seen) missing++;
      else {
        late.push(seen[0]!);
        if (seen.length > 1) twice++;
        last = Math.max(last, this.at.get(seq)!);
      }
    }
    return { late: late.sort((a, b) => a - b), last, missing, twice };
  }
}

/** How a job is scheduled: `delayMs` after its add, or at `atMs` (epoch ms). */
type When = { delayMs: number } | { atMs: number };

/** One side of the comparison on its own redis-server: how it adds, and when all its work is done. */
interface Side {
  admin: Redis;
  deliveries: Deliveries;
  add(seq: number, when: When): Promise<void>;
  addBatch(seqs: readonly number[], when: When): Promise<void>;
  /** True when every job delivered is done (acked, or completed). */
  idle(): boolean;
  close(): Promise<void>;
}

type SideName = 'BullMQ' | 'here';

/** A side's redis-server: the harness's, or one under callgrind. */
type Server = { port: number; url: string; pid: number; stop(): Promise<void> };

/** This queue: the engine and the Lambda roles in this process, its handler noting each start. */
function startHere(server: Server): Side {
  const deliveries = new Deliveries();
  const roles = inProcessRoles({
    redisUrl: server.url,
    config: { partitions: 1, topics: { [TOPIC]: { handler: 'benchHandler', concurrency: CONCURRENCY } } },
    engine: (redis, config, options) => new Engine(redis, config, options),
    handlerWakes: false,
    job: async (job) => deliveries.deliver((job.body as Body).seq, job.runAt),
  });
  const queue = queueOf(roles.rt.engine);
  const input = (seq: number, when: When) => ({
    topic: TOPIC,
    body: bodyOf(seq),
    ...('delayMs' in when ? { delay: when.delayMs / 1000 } : { runAt: when.atMs }),
  });
  const admin = connect(server);
  return {
    admin,
    deliveries,
    add: async (seq, when) => void (await queue.add(input(seq, when), PRODUCER)),
    async addBatch(seqs, when) {
      const { outcomes } = await queue.addMany(
        seqs.map((seq) => input(seq, when)),
        PRODUCER,
      );
      const failed = outcomes.find((o) => o.status !== 'created');
      if (failed) throw new Error(`an add was ${failed.status}: ${'error' in failed ? failed.error.message : ''}`);
    },
    idle: () => roles.handlers.size === 0,
    async close() {
      // the sweeper exits once nothing is due within its horizon (10 s at most once all is done)
      const limit = Date.now() + 30_000;
      while (roles.running.size > 0 && Date.now() < limit) await sleep(100);
      roles.rt.redis.disconnect();
      admin.disconnect();
    },
  };
}

/** BullMQ: a Queue and a Worker whose processor notes each start; resolves once both are connected. */
async function startBullMQ(server: Server): Promise<Side> {
  const deliveries = new Deliveries();
  const connection = { host: '127.0.0.1', port: server.port, maxRetriesPerRequest: null };
  const queue = new BullQueue<Body>(TOPIC, { connection, defaultJobOptions: BULL_JOB_OPTIONS });
  const worker = new Worker<Body>(
    TOPIC,
    async (job) => deliveries.deliver(job.data.seq, job.timestamp + (job.opts.delay ?? 0)),
    { connection, concurrency: CONCURRENCY },
  );
  let completed = 0;
  worker.on('completed', () => completed++);
  worker.on('error', (error) => console.error('BullMQ worker:', error));
  queue.on('error', (error) => console.error('BullMQ queue:', error));
  await Promise.all([queue.waitUntilReady(), worker.waitUntilReady()]);
  // due at `atMs` exactly: created now, delayed by the rest
  const opts = (when: When, now = Date.now()) =>
    'delayMs' in when ? { delay: when.delayMs } : { timestamp: now, delay: when.atMs - now };
  const admin = connect(server);
  return {
    admin,
    deliveries,
    add: async (seq, when) => void (await queue.add('job', bodyOf(seq), opts(when))),
    async addBatch(seqs, when) {
      const o = opts(when);
      await queue.addBulk(seqs.map((seq) => ({ name: 'job', data: bodyOf(seq), opts: o })));
    },
    idle: () => completed >= deliveries.count,
    async close() {
      await worker.close();
      await queue.close();
      admin.disconnect();
    },
  };
}

/**
 * Adds at `rate` a second for `seconds`, one job a call, in a burst every TICK_MS (every 1 / rate
 * at lower rates), from seq `first`; resolves the next seq.
 */
async function addFor(side: Side, seconds: number, first: number, rate = N.rate): Promise<number> {
  const tickMs = Math.max(TICK_MS, 1000 / rate);
  const perTick = Math.max(1, Math.round((rate * tickMs) / 1000));
  const ticks = Math.round((seconds * 1000) / tickMs);
  const t0 = performance.now();
  let seq = first;
  for (let tick = 0; tick < ticks; tick++) {
    const burst = Array.from({ length: perTick }, () => seq++);
    await Promise.all(burst.map((s) => side.add(s, { delayMs: N.delayMs })));
    const wait = t0 + (tick + 1) * tickMs - performance.now();
    if (wait > 0) await sleep(wait);
  }
  return seq;
}

/** Adds seqs [0, count) in batches of BATCH, IN_FLIGHT batches at once. */
async function addAll(side: Side, count: number, when: When): Promise<void> {
  await pool(Math.ceil(count / BATCH), IN_FLIGHT, async (b) => {
    const seqs = [];
    for (let seq = b * BATCH; seq < Math.min(count, (b + 1) * BATCH); seq++) seqs.push(seq);
    await side.addBatch(seqs, when);
  });
}

/** Waits until every seq of [from, to) was delivered (or `limitMs` passed) and every delivered job is done. */
async function settle(side: Side, from: number, to: number, limitMs: number): Promise<void> {
  await side.deliveries.all(from, to, limitMs);
  const limit = Date.now() + 60_000;
  while (!side.idle() && Date.now() < limit) await sleep(10);
}

/** Redis CPU seconds (user + sys) of the side's redis-server so far. */
const cpuOf = async (side: Side) => (await redisCpu(side.admin)).seconds;

/** Step steady: jobs one a call at N.rate, each due N.delayMs after its add; CPU, lateness, delivered. */
async function steady(side: Side) {
  const warm = await addFor(side, WARMUP_S, 0);
  await settle(side, 0, warm, N.delayMs + 120_000);
  const cpu0 = await cpuOf(side);
  const end = await addFor(side, N.seconds, warm);
  await settle(side, warm, end, N.delayMs + 120_000);
  const cpuS = (await cpuOf(side)) - cpu0;
  const jobs = end - warm;
  const { late, missing, twice } = side.deliveries.outcome(warm, end);
  return {
    jobs,
    delivered: jobs - missing,
    twice,
    redisCpuUsPerJob: round((cpuS * 1e6) / jobs, 1),
    latenessMs: {
      p50: round(quantileFloor(late, 0.5), 1),
      p99: round(quantileFloor(late, 0.99), 1),
      max: round(late.at(-1) ?? NaN, 1),
    },
  };
}

/** Step herd: N.herd jobs due at one instant, added ahead of it; drain time and CPU per job. */
async function herd(side: Side) {
  const leadMs = 5_000 + Math.round(N.herd / 5); // time enough to add them at 5,000 jobs a second
  const atMs = Date.now() + leadMs;
  await addAll(side, N.herd, { atMs });
  if (Date.now() > atMs - 100) throw new Error(`adding the herd took over ${leadMs} ms: lower BENCH_HERD`);
  const cpu0 = await cpuOf(side);
  await settle(side, 0, N.herd, leadMs + 300_000);
  const cpuS = (await cpuOf(side)) - cpu0;
  const { last, missing, twice } = side.deliveries.outcome(0, N.herd);
  return {
    jobs: N.herd,
    delivered: N.herd - missing,
    twice,
    drainMs: round(last - atMs, 0),
    redisCpuUsPerJob: round((cpuS * 1e6) / N.herd, 1),
  };
}

/** Step ingest: N.ingest jobs due a day ahead, in batches; jobs a second and used_memory's growth per job. */
async function ingest(side: Side) {
  const memory0 = await usedMemory(side.admin);
  const t0 = performance.now();
  await addAll(side, N.ingest, { delayMs: FAR_MS });
  const seconds = (performance.now() - t0) / 1000;
  const bytes = (await usedMemory(side.admin)) - memory0;
  return { jobs: N.ingest, jobsPerSec: Math.round(N.ingest / seconds), bytesPerJob: round(bytes / N.ingest, 1) };
}

/**
 * Step instructions: the steady workload at N.instrRate a second for N.instrSeconds on a
 * redis-server under callgrind (counts zeroed after the warm-up); Redis instructions per job.
 */
async function instructions(side: Side, server: CallgrindServer) {
  const warm = await addFor(side, WARMUP_S, 0, N.instrRate);
  await settle(side, 0, warm, N.delayMs + 120_000);
  server.zero();
  const end = await addFor(side, N.instrSeconds, warm, N.instrRate);
  await settle(side, warm, end, N.delayMs + 120_000);
  const total = await server.dump('window');
  const jobs = end - warm;
  return { jobs, delivered: jobs - side.deliveries.outcome(warm, end).missing, perJob: Math.round(total / jobs) };
}

/** A redis-server of the harness's, started anew. */
const fresh = () => startServer();

type Machine = Awaited<ReturnType<typeof machineOf>>;
let machine: Machine | undefined;

/** Runs `step` on side `name`, on a redis-server `start` starts for it, stopped after. */
async function onSide<S extends Server, T>(
  name: SideName,
  step: (side: Side, server: S) => Promise<T>,
  start: () => Promise<S>,
): Promise<T> {
  const server = await start();
  try {
    const side = name === 'here' ? startHere(server) : await startBullMQ(server);
    try {
      machine ??= await machineOf(side.admin, server.pid);
      return await step(side, server);
    } finally {
      await side.close();
    }
  } finally {
    await server.stop();
  }
}

type Results = Record<
  SideName,
  {
    steady: Awaited<ReturnType<typeof steady>>;
    herd: Awaited<ReturnType<typeof herd>>;
    ingest: Awaited<ReturnType<typeof ingest>>;
    instructions?: Awaited<ReturnType<typeof instructions>>;
  }
>;

/** The table's rows: figure, BullMQ, here, here ÷ BullMQ. */
function rowsOf({ BullMQ: b, here: h }: Results): string[][] {
  const row = (figure: string, of: (r: Results[SideName]) => number, digits: number) => {
    const [x, y] = [of(b), of(h)];
    return [figure, fmt(x, digits), fmt(y, digits), `${fmt(y / x, 2)}×`];
  };
  const delivered = (r: Results[SideName]) => `${fmt(r.steady.delivered)} / ${fmt(r.steady.jobs)}`;
  return [
    row('steady: Redis CPU per job, µs', (r) => r.steady.redisCpuUsPerJob, 1),
    row('steady: lateness p50, ms', (r) => r.steady.latenessMs.p50, 1),
    row('steady: lateness p99, ms', (r) => r.steady.latenessMs.p99, 1),
    row('steady: lateness max, ms', (r) => r.steady.latenessMs.max, 1),
    [
      'steady: delivered / added',
      delivered(b),
      delivered(h),
      `${fmt(h.steady.delivered / h.steady.jobs / (b.steady.delivered / b.steady.jobs), 2)}×`,
    ],
    row('herd: drain time, ms', (r) => r.herd.drainMs, 0),
    row('herd: Redis CPU per job, µs', (r) => r.herd.redisCpuUsPerJob, 1),
    row('ingest in batches, jobs/s', (r) => r.ingest.jobsPerSec, 0),
    row('memory per delayed job, bytes', (r) => r.ingest.bytesPerJob, 1),
    ...(b.instructions && h.instructions
      ? [row(`steady at ${N.instrRate}/s: Redis instructions per job`, (r) => r.instructions!.perJob, 0)]
      : []),
  ];
}

const loadLine = () =>
  `load average: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(', ')}`;

/**
 * Drops the handler's metric lines (CloudWatch EMF, one a handler invocation, tens of thousands a
 * run) from this process's stdout, so the table and the JSON line stay readable.
 */
function dropMetricLines(): void {
  const write = process.stdout.write.bind(process.stdout) as (chunk: unknown, ...rest: unknown[]) => boolean;
  process.stdout.write = ((chunk: unknown, ...rest: unknown[]) =>
    typeof chunk === 'string' && chunk.startsWith('{"_aws"')
      ? true
      : write(chunk, ...rest)) as typeof process.stdout.write;
}

async function main(): Promise<void> {
  dropMetricLines();
  const loadBefore = loadavg();
  console.log(`before: ${loadLine()}`);
  console.log(`settings: ${JSON.stringify({ ...N, concurrency: CONCURRENCY, batch: BATCH, bodyBytes: BODY_BYTES })}`);
  const results = {} as Results;
  const sides: SideName[] = ['BullMQ', 'here'];
  for (const name of sides) results[name] = {} as Results[SideName];
  for (const name of sides) results[name].steady = await onSide(name, steady, fresh);
  for (const name of sides) results[name].herd = await onSide(name, herd, fresh);
  for (const name of sides) results[name].ingest = await onSide(name, ingest, fresh);
  if (CALLGRIND && hasValgrind())
    for (const name of sides) results[name].instructions = await onSide(name, instructions, startUnderCallgrind);
  else console.log('instructions: skipped (BENCH_CALLGRIND=0, or no valgrind)');
  const loadAfter = loadavg();
  printTable(rowsOf(results), ['figure', `BullMQ ${BULLMQ_VERSION}`, 'here', 'here ÷ BullMQ']);
  console.log(`after: ${loadLine()}`);
  printJson({
    bench: 'bullmq',
    settings: { ...N, concurrency: CONCURRENCY, batch: BATCH, inFlight: IN_FLIGHT, bodyBytes: BODY_BYTES },
    bullmq: { version: BULLMQ_VERSION, jobOptions: BULL_JOB_OPTIONS },
    results,
    loadAvg: { before: loadBefore.map((l) => round(l, 2)), after: loadAfter.map((l) => round(l, 2)) },
    machine,
  });
}

runBench(main, { forceExit: true });
