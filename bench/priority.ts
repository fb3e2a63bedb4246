/**
 * Priority benchmark (not a test): drains BENCH_PRIO_JOBS (100,000) jobs of mixed priorities
 * (-2..3, a third with none) through the engine's claim path (sweep, claimStarted in calls of 100,
 * ack) under a backlog, on a redis-server of its own, and checks each claim against a ledger of the
 * ready jobs: a violation is a job started while a job of higher priority of the same topic and
 * partition was ready (claims go partition by partition, so the order holds per partition), or
 * started before one of its priority that became ready before it (FIFO). Jobs come in waves of
 * 10,000, each wave swept, then half of the ready jobs drained, so old and new jobs mix.
 *
 *   node --import tsx --import ./test/support/lua-loader.mjs bench/priority.ts
 *   BENCH_PRIO_PARTITIONS=4 ...   # several partitions
 */
import { envInt } from './harness/env';
import { runBench } from './harness/lifecycle';
import { printJson } from './harness/report';
import { withRedis } from './harness/redis';
import { queueOn, sweepAll } from './harness/queue';

const JOBS = envInt('BENCH_PRIO_JOBS', 100_000);
const PARTITIONS = envInt('BENCH_PRIO_PARTITIONS', 1);
const WAVE = 10_000;

async function main() {
  await withRedis(async (_server, redis) => {
    const topic = 'prio';
    const q = queueOn(redis, { [topic]: { concurrency: 10_000, ttr: 3600 } }, { partitions: PARTITIONS });
    const priorityOf = (i: number) => [0, 0, 1, 2, 3, -1, -2, 0, 1][(i * 7919) % 9]!;
    // ready jobs per partition: priority -> ids in the order they became ready
    const ready = new Map<number, Map<number, string[]>>();
    let violations = 0;
    let fifo = 0;
    let started = 0;
    const t0 = performance.now();
    const drain = async (want: number) => {
      for (let left = want; left > 0;) {
        const claimed = await q.engine.claimStarted(topic, Math.min(100, left));
        if (claimed.length === 0) return;
        for (const job of claimed) {
          const p = q.engine.partitionOf(topic, job.id);
          const lanes = ready.get(p)!;
          const priority = priorityOf(Number(job.id.slice(1)));
          if ([...lanes].some(([other, ids]) => other > priority && ids.length > 0)) {
            if (process.env.BENCH_PRIO_DEBUG && violations < 3) {
              console.log(
                job.id,
                priority,
                started,
                [...lanes].map(([o, i]) => [o, i.slice(0, 3)]),
              );
            }
            violations++;
          }
          const ids = lanes.get(priority)!;
          if (ids[0] !== job.id) fifo++;
          ids.splice(ids.indexOf(job.id), 1);
        }
        await Promise.all(claimed.map((job) => q.engine.ack(topic, job.id, job)));
        started += claimed.length;
        left -= claimed.length;
      }
    };
    for (let from = 0; from < JOBS; from += WAVE) {
      const jobs = [];
      for (let i = from; i < Math.min(JOBS, from + WAVE); i++) {
        const priority = priorityOf(i);
        jobs.push({ topic, id: `j${String(i).padStart(7, '0')}`, delay: 0, ...(priority ? { priority } : {}) });
      }
      for (let at = 0; at < jobs.length; at += 500) await q.addMany(jobs.slice(at, at + 500));
      await sweepAll(q.engine);
      for (const job of jobs) {
        const p = q.engine.partitionOf(topic, job.id);
        if (!ready.has(p)) ready.set(p, new Map());
        const lanes = ready.get(p)!;
        const priority = job.priority ?? 0;
        if (!lanes.has(priority)) lanes.set(priority, []);
        lanes.get(priority)!.push(job.id);
      }
      await drain(WAVE / 2);
    }
    await drain(Infinity);
    const ms = Math.round(performance.now() - t0);
    console.log(
      `${started} jobs started of ${JOBS}, ${PARTITIONS} partition(s): ${violations} priority violations, ${fifo} FIFO violations, ${ms} ms`,
    );
    printJson({ bench: 'priority', jobs: JOBS, partitions: PARTITIONS, started, violations, fifo, ms });
  });
}

runBench(main, { forceExit: true });
