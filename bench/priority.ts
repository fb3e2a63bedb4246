/**
 * Priority benchmark (not a test): drains BENCH_PRIO_JOBS (100,000) jobs of mixed priorities
 * (-2..3, a third with none) through the engine's claim path (sweep, claimStarted in calls of 100,
 * ack) under a backlog, on a redis-server of its own, and checks each claim against a ledger of the
 * ready jobs: a violation is a job started while a job of higher priority of the same topic and
 * partition was ready (claims go partition by partition, so the order holds per partition), or
 * started before one of its priority that became ready before it (FIFO). Jobs come in waves of
 * 10,000, each wave swept, then half of the ready jobs drained, so old and new jobs mix.
 *
 * With BENCH_PRIO_FLOW=1 the topic is a flow topic (no per-key limits) and the jobs are spread over
 * BENCH_PRIO_KEYS (50) keys: priority orders the jobs within each key's lane, the claims go round the
 * keys, so a violation is a job started while a job of higher priority of the same key was ready (or
 * one of its priority of the same key that became ready before it: FIFO).
 *
 *   npm run bench:priority
 *   BENCH_PRIO_PARTITIONS=4 npm run bench:priority   # several partitions
 *   BENCH_PRIO_FLOW=1 npm run bench:priority         # a flow topic, 50 keys
 */
import { envInt } from './harness/env';
import { runBench } from './harness/lifecycle';
import { printJson } from './harness/report';
import { withRedis } from './harness/redis';
import { queueOn, sweepAll } from './harness/queue';

const JOBS = envInt('BENCH_PRIO_JOBS', 100_000);
const PARTITIONS = envInt('BENCH_PRIO_PARTITIONS', 1);
const WAVE = 10_000;
const FLOW = process.env.BENCH_PRIO_FLOW === '1';
const KEYS = envInt('BENCH_PRIO_KEYS', 50);

/** A job's priority in the bench's mix (-2..3, a third with none). */
const priorityOf = (i: number) => [0, 0, 1, 2, 3, -1, -2, 0, 1][(i * 7919) % 9]!;
const TOPIC = 'prio';

type BenchQueue = ReturnType<typeof queueOn>;

/** The flow key of job number `i` (BENCH_PRIO_FLOW). */
const keyOf = (i: number) => `k${i % KEYS}`;

/**
 * The ready jobs per order group (a partition's number, or a flow topic's key: priority -> ids in the order they
 * became ready), and what the claims broke.
 */
class Ledger {
  readonly ready = new Map<number | string, Map<number, string[]>>();
  violations = 0;
  fifo = 0;
  started = 0;

  /** Notes jobs `ids` of groups `partitionOf` as ready, in order. */
  becameReady(jobs: readonly { id: string; priority?: number }[], partitionOf: (id: string) => number | string): void {
    for (const job of jobs) {
      const p = partitionOf(job.id);
      if (!this.ready.has(p)) this.ready.set(p, new Map());
      const lanes = this.ready.get(p)!;
      const priority = job.priority ?? 0;
      if (!lanes.has(priority)) lanes.set(priority, []);
      lanes.get(priority)!.push(job.id);
    }
  }

  /** Checks a claimed job against group `p`'s ready ones: none of higher priority, none of its own before it. */
  claimed(id: string, p: number | string): void {
    const lanes = this.ready.get(p)!;
    const priority = priorityOf(Number(id.slice(1)));
    if ([...lanes].some(([other, ids]) => other > priority && ids.length > 0)) this.violations++;
    const ids = lanes.get(priority)!;
    if (ids[0] !== id) this.fifo++;
    ids.splice(ids.indexOf(id), 1);
    this.started++;
  }
}

/** The group whose order job `id` keeps: its flow key (BENCH_PRIO_FLOW), else its partition. */
function groupOf(q: BenchQueue, id: string): number | string {
  return FLOW ? keyOf(Number(id.slice(1))) : q.engine.partitionOf(TOPIC, id);
}

/** Claims (calls of 100), checks and acks up to `want` jobs. */
async function drain(q: BenchQueue, ledger: Ledger, want: number): Promise<void> {
  for (let left = want; left > 0;) {
    const claimed = await q.engine.claimStarted(TOPIC, Math.min(100, left));
    if (claimed.length === 0) return;
    for (const job of claimed) ledger.claimed(job.id, groupOf(q, job.id));
    await Promise.all(claimed.map((job) => q.engine.ack(TOPIC, job.id, job)));
    left -= claimed.length;
  }
}

/** Adds wave `from` (WAVE jobs), sweeps it ready, notes it, then drains half a wave. */
async function wave(q: BenchQueue, ledger: Ledger, from: number): Promise<void> {
  const jobs = [];
  for (let i = from; i < Math.min(JOBS, from + WAVE); i++) {
    const priority = priorityOf(i);
    jobs.push({
      topic: TOPIC,
      id: `j${String(i).padStart(7, '0')}`,
      delay: 0,
      ...(priority ? { priority } : {}),
      ...(FLOW ? { key: keyOf(i) } : {}),
    });
  }
  for (let at = 0; at < jobs.length; at += 500) await q.addMany(jobs.slice(at, at + 500));
  await sweepAll(q.engine);
  ledger.becameReady(jobs, (id) => groupOf(q, id));
  await drain(q, ledger, WAVE / 2);
}

async function main() {
  await withRedis(async (_server, redis) => {
    const topic = { concurrency: 10_000, ttr: 3600, ...(FLOW ? { flow: {} } : {}) };
    const q = queueOn(redis, { [TOPIC]: topic }, { partitions: PARTITIONS });
    const ledger = new Ledger();
    const t0 = performance.now();
    for (let from = 0; from < JOBS; from += WAVE) await wave(q, ledger, from);
    await drain(q, ledger, Infinity);
    const ms = Math.round(performance.now() - t0);
    const { started, violations, fifo } = ledger;
    const where = FLOW ? `a flow topic, ${KEYS} keys` : `${PARTITIONS} partition(s)`;
    console.log(
      `${started} jobs started of ${JOBS}, ${where}: ${violations} priority violations, ${fifo} FIFO violations, ${ms} ms`,
    );
    const shape = FLOW ? { flow: true, keys: KEYS } : { partitions: PARTITIONS };
    printJson({ bench: 'priority', jobs: JOBS, ...shape, started, violations, fifo, ms });
  });
}

runBench(main, { forceExit: true });
