/**
 * Priority benchmark (not a test): drains BENCH_PRIO_JOBS (100,000) jobs of mixed priorities
 * (-2..3, a third with none) through the engine's claim path (sweep, claimStarted in calls of 100,
 * ack) under a backlog, on a redis-server of its own, and checks each claim against a ledger of the
 * ready jobs: a violation is a job started while a job of higher priority of the same topic and
 * partition was ready (claims go partition by partition, so the order holds per partition), or
 * started before one of its priority that became ready before it (FIFO). Jobs come in waves of
 * 10,000, each wave swept, then half of the ready jobs drained, so old and new jobs mix.
 *
 *   npm run bench:priority
 *   BENCH_PRIO_PARTITIONS=4 npm run bench:priority   # several partitions
 */
import { envInt } from './harness/env';
import { runBench } from './harness/lifecycle';
import { printJson } from './harness/report';
import { withRedis } from './harness/redis';
import { queueOn, sweepAll } from './harness/queue';

const JOBS = envInt('BENCH_PRIO_JOBS', 100_000);
const PARTITIONS = envInt('BENCH_PRIO_PARTITIONS', 1);
const WAVE = 10_000;

/** A job's priority in the bench's mix (-2..3, a third with none). */
const priorityOf = (i: number) => [0, 0, 1, 2, 3, -1, -2, 0, 1][(i * 7919) % 9]!;
const TOPIC = 'prio';

type BenchQueue = ReturnType<typeof queueOn>;

/** The ready jobs per partition (priority -> ids in the order they became ready), and what the claims broke. */
class Ledger {
  readonly ready = new Map<number, Map<number, string[]>>();
  violations = 0;
  fifo = 0;
  started = 0;

  /** Notes jobs `ids` of partitions `partitionOf` as ready, in order. */
  becameReady(jobs: readonly { id: string; priority?: number }[], partitionOf: (id: string) => number): void {
    for (const job of jobs) {
      const p = partitionOf(job.id);
      if (!this.ready.has(p)) this.ready.set(p, new Map());
      const lanes = this.ready.get(p)!;
      const priority = job.priority ?? 0;
      if (!lanes.has(priority)) lanes.set(priority, []);
      lanes.get(priority)!.push(job.id);
    }
  }

  /** Checks a claimed job against partition `p`'s ready ones: none of higher priority, none of its own before it. */
  claimed(id: string, p: number): void {
    const lanes = this.ready.get(p)!;
    const priority = priorityOf(Number(id.slice(1)));
    if ([...lanes].some(([other, ids]) => other > priority && ids.length > 0)) this.violations++;
    const ids = lanes.get(priority)!;
    if (ids[0] !== id) this.fifo++;
    ids.splice(ids.indexOf(id), 1);
    this.started++;
  }
}

/** Claims (calls of 100), checks and acks up to `want` jobs. */
async function drain(q: BenchQueue, ledger: Ledger, want: number): Promise<void> {
  for (let left = want; left > 0;) {
    const claimed = await q.engine.claimStarted(TOPIC, Math.min(100, left));
    if (claimed.length === 0) return;
    for (const job of claimed) ledger.claimed(job.id, q.engine.partitionOf(TOPIC, job.id));
    await Promise.all(claimed.map((job) => q.engine.ack(TOPIC, job.id, job)));
    left -= claimed.length;
  }
}

/** Adds wave `from` (WAVE jobs), sweeps it ready, notes it, then drains half a wave. */
async function wave(q: BenchQueue, ledger: Ledger, from: number): Promise<void> {
  const jobs = [];
  for (let i = from; i < Math.min(JOBS, from + WAVE); i++) {
    const priority = priorityOf(i);
    jobs.push({ topic: TOPIC, id: `j${String(i).padStart(7, '0')}`, delay: 0, ...(priority ? { priority } : {}) });
  }
  for (let at = 0; at < jobs.length; at += 500) await q.addMany(jobs.slice(at, at + 500));
  await sweepAll(q.engine);
  ledger.becameReady(jobs, (id) => q.engine.partitionOf(TOPIC, id));
  await drain(q, ledger, WAVE / 2);
}

async function main() {
  await withRedis(async (_server, redis) => {
    const q = queueOn(redis, { [TOPIC]: { concurrency: 10_000, ttr: 3600 } }, { partitions: PARTITIONS });
    const ledger = new Ledger();
    const t0 = performance.now();
    for (let from = 0; from < JOBS; from += WAVE) await wave(q, ledger, from);
    await drain(q, ledger, Infinity);
    const ms = Math.round(performance.now() - t0);
    const { started, violations, fifo } = ledger;
    console.log(
      `${started} jobs started of ${JOBS}, ${PARTITIONS} partition(s): ${violations} priority violations, ${fifo} FIFO violations, ${ms} ms`,
    );
    printJson({ bench: 'priority', jobs: JOBS, partitions: PARTITIONS, started, violations, fifo, ms });
  });
}

runBench(main, { forceExit: true });
