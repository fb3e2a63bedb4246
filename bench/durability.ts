/**
 * What durability `replica` costs (issue 13; not a test): on a local primary with one replica
 * (nothing persisted), the same adds through two engines on the same primary, one with durability
 * `none` and one with `replica` (each change then waits for the replica's confirmation, WAIT 1).
 * Rounds alternate between the two so that load from elsewhere on the machine falls on both alike;
 * the ratios are the result. Stops both servers by PID.
 *
 *   npm run bench:durability
 *
 * BENCH_DURABILITY_SINGLE (2,000 sequential adds per mode), BENCH_DURABILITY_BATCHES (200 batches
 * of 100 jobs per mode, 4 in flight) and BENCH_DURABILITY_ROUNDS (10) set the sizes.
 * Results are in BENCHMARKS.md.
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { startPrimaryWithReplica } from '../test/support/redis';
import { envInt } from './harness/env';
import { runBench, track } from './harness/lifecycle';
import { quantileFloor, sortNum } from './harness/measure';
import { addInBatches, queueOn, type Queue } from './harness/queue';
import { connect } from './harness/redis';
import { printJson } from './harness/report';

const SINGLE = envInt('BENCH_DURABILITY_SINGLE', 2000);
const BATCHES = envInt('BENCH_DURABILITY_BATCHES', 200);
const ROUNDS = envInt('BENCH_DURABILITY_ROUNDS', 10);
const BATCH = 100;
const IN_FLIGHT = 4;
const BODY = { orderId: 'order-000001', note: 'x'.repeat(150) };
const GOALS = { batchedRatio: 0.8, singleP99Ratio: 2 };
const MODES = ['none', 'replica'] as const;

type Mode = (typeof MODES)[number];

/** What each mode's adds took: every single add's latency (ms), and the batched adds' wall time and jobs. */
type Timings = Record<Mode, { latencies: number[]; batchMs: number; batchJobs: number }>;

let seq = 0;
const job = (prefix: string) => ({ topic: 'bench', id: `${prefix}${++seq}`, delay: 3600, body: BODY });

/** One round of a mode: SINGLE / ROUNDS adds one after another, then BATCHES / ROUNDS batches, IN_FLIGHT at once. */
async function round(q: Queue, timings: Timings[Mode]): Promise<void> {
  for (let i = 0; i < SINGLE / ROUNDS; i++) {
    const started = performance.now();
    await q.add(job('s'));
    timings.latencies.push(performance.now() - started);
  }
  const batches = Math.max(1, Math.floor(BATCHES / ROUNDS));
  timings.batchMs += await addInBatches(q, batches * BATCH, () => job('b'), { batch: BATCH, inFlight: IN_FLIGHT });
  timings.batchJobs += batches * BATCH;
}

/** Rounds alternating between the modes (none first in even rounds), after a warm-up of 50 adds each. */
async function measure(queues: Record<Mode, Queue>): Promise<Timings> {
  const timings: Timings = {
    none: { latencies: [], batchMs: 0, batchJobs: 0 },
    replica: { latencies: [], batchMs: 0, batchJobs: 0 },
  };
  // warm-up: scripts loaded, connections up
  for (const mode of MODES) for (let i = 0; i < 50; i++) await queues[mode].add(job('w'));
  for (let r = 0; r < ROUNDS; r++) {
    const order: Mode[] = r % 2 === 0 ? ['none', 'replica'] : ['replica', 'none'];
    for (const mode of order) await round(queues[mode], timings[mode]);
  }
  return timings;
}

function summarise(t: Timings[Mode]) {
  const sorted = sortNum(t.latencies);
  return {
    p50: quantileFloor(sorted, 0.5),
    p99: quantileFloor(sorted, 0.99),
    jobsPerSec: t.batchJobs / (t.batchMs / 1000),
  };
}

function report(timings: Timings): void {
  const none = summarise(timings.none);
  const replica = summarise(timings.replica);
  const ratios = {
    batched: replica.jobsPerSec / none.jobsPerSec,
    singleP50: replica.p50 / none.p50,
    singleP99: replica.p99 / none.p99,
  };
  const ms = (n: number) => n.toFixed(3);
  const goal = (ok: boolean) => (ok ? 'met' : 'NOT met');
  console.log(
    `durability cost on a local primary + replica (${ROUNDS} alternating rounds; load average ${loadavg()[0]!.toFixed(1)} at the end)`,
  );
  console.log(
    '| durability | single add p50 ms | single add p99 ms | batched ingest jobs/s (100 per batch, 4 in flight) |',
  );
  console.log('|---|---|---|---|');
  console.log(`| none | ${ms(none.p50)} | ${ms(none.p99)} | ${Math.round(none.jobsPerSec)} |`);
  console.log(`| replica | ${ms(replica.p50)} | ${ms(replica.p99)} | ${Math.round(replica.jobsPerSec)} |`);
  console.log(
    `replica / none: batched ingest ${ratios.batched.toFixed(2)}x (goal >= ${GOALS.batchedRatio}x: ${goal(ratios.batched >= GOALS.batchedRatio)}), ` +
      `single add p50 ${ratios.singleP50.toFixed(2)}x, p99 ${ratios.singleP99.toFixed(2)}x (goal <= ${GOALS.singleP99Ratio}x: ${goal(ratios.singleP99 <= GOALS.singleP99Ratio)})`,
  );
  printJson(
    { single: SINGLE, batches: BATCHES, rounds: ROUNDS, none, replica, ratios, loadavg: loadavg() },
    'BENCH-DURABILITY ',
  );
}

async function main(): Promise<void> {
  const pair = await startPrimaryWithReplica();
  const stopPair = track(() => pair.stop());
  const clients = MODES.map(() => connect(pair.primary));
  try {
    const [none, replica] = MODES.map((mode, i) => queueOn(clients[i]!, { bench: {} }, { durability: mode }));
    report(await measure({ none: none!, replica: replica! }));
  } finally {
    for (const c of clients) c.disconnect();
    await stopPair();
  }
}

runBench(main);
