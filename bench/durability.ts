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
import { Redis } from 'ioredis';
import { resolveQueueConfig } from '../lib/core/queue-config';
import { Queue, queueOf } from '../test/support/queue';
import { Engine } from '../lib/engine';
import { startPrimaryWithReplica } from '../test/support/redis';
import { envInt } from './env';

const SINGLE = envInt('BENCH_DURABILITY_SINGLE', 2000);
const BATCHES = envInt('BENCH_DURABILITY_BATCHES', 200);
const ROUNDS = envInt('BENCH_DURABILITY_ROUNDS', 10);
const BATCH = 100;
const IN_FLIGHT = 4;
const BODY = { orderId: 'order-000001', note: 'x'.repeat(150) };
const GOALS = { batchedRatio: 0.8, singleP99Ratio: 2 };

type Mode = 'none' | 'replica';

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function main(): Promise<void> {
  const pair = await startPrimaryWithReplica();
  const clients: Redis[] = [];
  try {
    const queues = {} as Record<Mode, Queue>;
    for (const mode of ['none', 'replica'] as const) {
      const redis = new Redis(pair.primary.url);
      clients.push(redis);
      queues[mode] = queueOf(new Engine(redis, resolveQueueConfig({ topics: { bench: {} }, durability: mode })));
    }
    let seq = 0;
    const latencies: Record<Mode, number[]> = { none: [], replica: [] };
    const batchMs: Record<Mode, number> = { none: 0, replica: 0 };
    const batchJobs: Record<Mode, number> = { none: 0, replica: 0 };

    // warm-up: scripts loaded, connections up
    for (const mode of ['none', 'replica'] as const)
      for (let i = 0; i < 50; i++) await queues[mode].add({ topic: 'bench', id: `w${++seq}`, delay: 3600, body: BODY });

    for (let round = 0; round < ROUNDS; round++) {
      const order: Mode[] = round % 2 === 0 ? ['none', 'replica'] : ['replica', 'none'];
      for (const mode of order) {
        const q = queues[mode];
        for (let i = 0; i < SINGLE / ROUNDS; i++) {
          const started = performance.now();
          await q.add({ topic: 'bench', id: `s${++seq}`, delay: 3600, body: BODY });
          latencies[mode].push(performance.now() - started);
        }
        const batches = Math.max(1, Math.floor(BATCHES / ROUNDS));
        let next = 0;
        const started = performance.now();
        await Promise.all(
          Array.from({ length: IN_FLIGHT }, async () => {
            while (next < batches) {
              next += 1;
              const jobs = Array.from({ length: BATCH }, () => ({
                topic: 'bench',
                id: `b${++seq}`,
                delay: 3600,
                body: BODY,
              }));
              const { outcomes } = await q.addMany(jobs);
              if (outcomes.some((o) => o.status !== 'created')) throw new Error('a batch add was not created');
            }
          }),
        );
        batchMs[mode] += performance.now() - started;
        batchJobs[mode] += batches * BATCH;
      }
    }

    const row = (mode: Mode) => {
      const sorted = [...latencies[mode]].sort((a, b) => a - b);
      return {
        p50: percentile(sorted, 50),
        p99: percentile(sorted, 99),
        jobsPerSec: batchJobs[mode] / (batchMs[mode] / 1000),
      };
    };
    const none = row('none');
    const replica = row('replica');
    const ratios = {
      batched: replica.jobsPerSec / none.jobsPerSec,
      singleP50: replica.p50 / none.p50,
      singleP99: replica.p99 / none.p99,
    };
    const ms = (n: number) => n.toFixed(3);
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
      `replica / none: batched ingest ${ratios.batched.toFixed(2)}x (goal >= ${GOALS.batchedRatio}x: ${ratios.batched >= GOALS.batchedRatio ? 'met' : 'NOT met'}), ` +
        `single add p50 ${ratios.singleP50.toFixed(2)}x, p99 ${ratios.singleP99.toFixed(2)}x (goal <= ${GOALS.singleP99Ratio}x: ${ratios.singleP99 <= GOALS.singleP99Ratio ? 'met' : 'NOT met'})`,
    );
    console.log(
      `BENCH-DURABILITY ${JSON.stringify({ single: SINGLE, batches: BATCHES, rounds: ROUNDS, none, replica, ratios, loadavg: loadavg() })}`,
    );
  } finally {
    for (const c of clients) c.disconnect();
    await pair.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
