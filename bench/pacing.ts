/**
 * Pacing benchmark (issue 15, item 4; not a test): starts its own redis-server (nothing
 * persisted), drives the real Queue API, prints a table and one JSON line, and stops redis by
 * PID (also on error).
 *
 *   npm run bench:pacing
 *   # quick: BENCH_PACING_JOBS=5000 BENCH_FANOUT_JOBS=2000 npm run bench:pacing
 *
 * 1. BENCH_PACING_JOBS (50,000) jobs due at once (addMany, 500 a batch, delay 0, moved to ready by
 *    sweeps) on a topic with `rateLimit: { count: BENCH_RATE (1000), per: 1 }` and a concurrency
 *    that never binds, drained by two claim loops, each with its own Queue and connection:
 *    `claimPaced(topic, 100)`, sleeping the `waitMs` it answers. Each job's start is its claim
 *    time on the Redis clock (runAt + latenessMs).
 * 2. The same through the fan-out code path: BENCH_FANOUT_JOBS (20,000) jobs, two concurrent
 *    runFanout calls (each its own Queue and connection, batchSize 10) with an invoker that
 *    records the events (no Lambda); starts are the events' claimedAt.
 * Measured for each: the delivered rate per second (jobs over the span from first to last start),
 * the starts in each whole 1-s window from the first start (min, max), the busiest span of 1 s
 * anywhere, jobs lost (never started) and started twice. Goal: within ±5 % of BENCH_RATE, none lost.
 * Results are in BENCHMARKS.md.
 */
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { runFanout, type HandlerEvent } from '../lib/workers/fanout';
import type { Invoker } from '../lib/platform/lambda';
import { createLogger } from '../lib/platform/log';
import { envInt } from './harness/env';
import { runBench } from './harness/lifecycle';
import { loadText } from './harness/measure';
import { addInBatches, queueOn, sweepAll, type Queue } from './harness/queue';
import { connect, withRedis } from './harness/redis';
import { machineLine, machineOf, printJson, printTable, verdict, type Row } from './harness/report';

const N = {
  jobs: envInt('BENCH_PACING_JOBS', 50_000),
  fanoutJobs: envInt('BENCH_FANOUT_JOBS', 20_000),
  rate: envInt('BENCH_RATE', 1_000),
};
const TOLERANCE = 0.05; // the issue's ±5 %
const load = () => loadText(2, ' / ');
const log = createLogger('bench', {}, 'error', () => undefined);

interface Run {
  path: string;
  jobs: number;
  started: number;
  lost: number;
  doubled: number;
  spanMs: number;
  meanPerSecond: number;
  windows: number;
  minWindow: number;
  maxWindow: number;
  busiestSecond: number;
  maxLatenessMs: number;
  wallMs: number;
}

function summarise(
  path: string,
  jobs: number,
  starts: { id: string; at: number; latenessMs: number }[],
  wallMs: number,
): Run {
  const ids = new Set(starts.map((s) => s.id));
  const times = starts.map((s) => s.at).sort((a, b) => a - b);
  const first = times[0] ?? 0;
  const last = times[times.length - 1] ?? 0;
  const spanMs = Math.max(1, last - first);
  const whole = Math.floor(spanMs / 1000); // the last, partial window is left out
  const counts = new Array<number>(whole).fill(0);
  for (const t of times) {
    const w = Math.floor((t - first) / 1000);
    if (w < whole) counts[w]! += 1;
  }
  let busiest = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (times[j]! < times[i]! - 999) j++;
    busiest = Math.max(busiest, i - j + 1);
  }
  return {
    path,
    jobs,
    started: starts.length,
    lost: jobs - ids.size,
    doubled: starts.length - ids.size,
    spanMs,
    meanPerSecond: Math.round(((starts.length - 1) / spanMs) * 1000 * 10) / 10,
    windows: whole,
    minWindow: whole ? Math.min(...counts) : 0,
    maxWindow: whole ? Math.max(...counts) : 0,
    busiestSecond: busiest,
    maxLatenessMs: Math.max(0, ...starts.map((s) => s.latenessMs)),
    wallMs: Math.round(wallMs),
  };
}

/** `jobs` jobs due at once, added 500 a call and swept to ready. */
async function fill(queue: Queue, topic: string, jobs: number): Promise<void> {
  await addInBatches(queue, jobs, (i) => ({ topic, id: `job-${i}`, delay: 0, body: { n: i } }));
  await sweepAll(queue.engine);
}

/** A queue of its own connection on the topic, paced at N.rate a second. */
function pacedQueue(port: number, topic: string, handler?: string): { queue: Queue; redis: Redis } {
  const redis = connect({ port });
  // concurrency 10,000 never binds: the claim loops pass a higher maxRunning, the fan-outs' handler acks
  const queue = queueOn(redis, {
    [topic]: {
      concurrency: 10_000,
      batchSize: 10,
      rateLimit: { count: N.rate, per: 1 },
      ...(handler ? { handler } : {}),
    },
  });
  return { queue, redis };
}

async function claimLoops(port: number): Promise<Run> {
  const topic = 'paced-claim';
  const a = pacedQueue(port, topic);
  const b = pacedQueue(port, topic);
  try {
    await fill(a.queue, topic, N.jobs);
    const starts: { id: string; at: number; latenessMs: number }[] = [];
    const begun = performance.now();
    const loop = async (queue: Queue) => {
      for (;;) {
        const { jobs, waitMs } = await queue.engine.claimPaced(topic, 100, 1e9); // running never binds
        for (const j of jobs) starts.push({ id: j.id, at: j.runAt + j.latenessMs, latenessMs: j.latenessMs });
        if (jobs.length === 0 && waitMs === null) return; // drained
        if (waitMs !== null) await sleep(waitMs);
      }
    };
    await Promise.all([loop(a.queue), loop(b.queue)]);
    return summarise('two claim loops (claimPaced)', N.jobs, starts, performance.now() - begun);
  } finally {
    a.redis.disconnect();
    b.redis.disconnect();
  }
}

/**
 * Stands in for the Lambda API and the handler: records each event's jobs and acks them, so the topic's concurrency
 * never binds.
 */
class AckingInvoker implements Invoker {
  starts: { id: string; at: number; latenessMs: number }[] = [];
  acks: Promise<unknown>[] = [];
  constructor(private readonly queue: Queue) {}
  async invokeAsync(_name: string, payload: unknown): Promise<void> {
    const event = payload as HandlerEvent;
    for (const j of event.jobs) {
      this.starts.push({ id: j.id, at: j.claimedAt, latenessMs: j.claimedAt - j.runAt });
      this.acks.push(this.queue.engine.ack(event.topic, j.id, { attempt: j.attempt, claim: j.claim! }));
    }
  }
}

async function fanouts(port: number): Promise<Run> {
  const topic = 'paced-fanout';
  const a = pacedQueue(port, topic, 'h');
  const b = pacedQueue(port, topic, 'h');
  try {
    await fill(a.queue, topic, N.fanoutJobs);
    const ackClient = pacedQueue(port, topic, 'h');
    const invoker = new AckingInvoker(ackClient.queue);
    // a fan-out with Lambda's longest timeout: this bench measures the pace, not the hand-over
    const remainingMs = () => 900_000;
    const begun = performance.now();
    for (let left = N.fanoutJobs; left > 0;) {
      await Promise.all([
        runFanout({ engine: a.queue.engine, invoker, log, remainingMs }, { topics: [topic] }),
        runFanout({ engine: b.queue.engine, invoker, log, remainingMs }, { topics: [topic] }),
      ]);
      const stats = await a.queue.stats(topic);
      if (stats.ready === left) break; // nothing moved: report what was delivered
      left = stats.ready;
    }
    const wallMs = performance.now() - begun;
    await Promise.all(invoker.acks);
    ackClient.redis.disconnect();
    return summarise('two fan-outs (runFanout)', N.fanoutJobs, invoker.starts, wallMs);
  } finally {
    a.redis.disconnect();
    b.redis.disconnect();
  }
}

/** Five rows a run: its mean rate, its whole 1-s windows, its busiest second, lost and doubled, its last lateness. */
function rowsOf(r: Run): Row[] {
  const lo = N.rate * (1 - TOLERANCE);
  const hi = N.rate * (1 + TOLERANCE);
  return [
    [
      `${r.path}: ${r.jobs} jobs, delivered mean`,
      `${r.meanPerSecond}/s over ${(r.spanMs / 1000).toFixed(1)} s`,
      `${lo}–${hi}/s: ${verdict(r.meanPerSecond >= lo && r.meanPerSecond <= hi)}`,
    ],
    [
      '  per whole 1-s window: min / max',
      `${r.minWindow} / ${r.maxWindow} (${r.windows} windows)`,
      `${lo}–${hi}: ${verdict(r.minWindow >= lo && r.maxWindow <= hi)}`,
    ],
    ['  busiest 1-s span anywhere', `${r.busiestSecond}`, `≤ ${N.rate}: ${verdict(r.busiestSecond <= N.rate)}`],
    ['  lost / started twice', `${r.lost} / ${r.doubled}`, `0 / 0: ${verdict(r.lost === 0 && r.doubled === 0)}`],
    ['  lateness of the last start', `${(r.maxLatenessMs / 1000).toFixed(1)} s`, ''],
  ];
}

async function main(): Promise<void> {
  const at = new Date();
  const loadAtStart = loadavg();
  await withRedis(async (server, admin) => {
    const machine = await machineOf(admin, server.pid);
    console.log(`${machineLine(machine)} (pid ${server.pid}); load average ${load()}`);
    console.log(`counts: ${JSON.stringify(N)}`);
    const runs = [await claimLoops(server.port)];
    console.log(`1. done; load average ${load()}`);
    runs.push(await fanouts(server.port));
    console.log(`2. done; load average ${load()}`);
    printTable(runs.flatMap(rowsOf));
    printJson({
      bench: 'pacing',
      at: at.toISOString(),
      loadAverage: { start: loadAtStart, end: loadavg() },
      counts: N,
      results: runs,
    });
  });
}

runBench(main);
