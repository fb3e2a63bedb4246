/**
 * Keyed adds benchmark (not a test): what a dedupe or debounce add, and a prioritized one, costs Redis against a plain
 * add, counted in CPU instructions by valgrind's callgrind on a redis-server of its own (as bench:instructions; counts
 * repeat to about 1 %), and the Redis memory a key's entry takes.
 *
 *   npm run bench:keyed
 *
 * Each phase adds BENCH_KEYED_JOBS (500) jobs with 200-byte bodies, one job a call (as POST /jobs does), on a topic of
 * its own after a warm-up of 100 uncounted: plain; with a priority; with a callback (to a topic, done and dead:
 * lib/engine/callbacks.ts); a dedupe add of a new key; a dedupe add of a key
 * whose job stands (a duplicate); a debounce add of a new key; a debounce add folded into its key's waiting job. Then
 * the memory: `used_memory` before and after 10,000 dedupe keys and 10,000 debounce keys on a redis-server without
 * valgrind, less the same count of plain jobs, per key.
 */
import { Redis } from 'ioredis';
import { Engine, type NewJob } from '../lib/engine';
import { resolveQueueConfig } from '../lib/core/queue-config';
import { hasValgrind, startUnderCallgrind } from './harness/callgrind';
import { envInt } from './harness/env';
import { runBench } from './harness/lifecycle';
import { usedMemory, withRedis } from './harness/redis';
import { fmt, printJson, printTable, round } from './harness/report';

const JOBS = envInt('BENCH_KEYED_JOBS', 500);
const MEMORY_KEYS = envInt('BENCH_KEYED_MEMORY_KEYS', 10_000);
const BODY = JSON.stringify({ orderId: 'order-000001', customer: 'customer-1', items: 3, note: 'x'.repeat(130) });
const PHASES = [
  'plain',
  'priority',
  'callback',
  'dedupe, new key',
  'dedupe, duplicate',
  'debounce, new key',
  'debounce, folded',
] as const;
type Phase = (typeof PHASES)[number];

/** Job `i` of `phase` on `topic` (a debounce's period an hour: its job waits through the bench). */
function jobOf(engine: Engine, topic: string, phase: Phase, i: number): NewJob {
  const key = `key-${String(i).padStart(6, '0')}`;
  const keyed: NewJob['keyed'] = phase.startsWith('dedupe')
    ? { kind: 'dedupe', key, windowMs: 3_600_000 }
    : phase.startsWith('debounce')
      ? { kind: 'debounce', key, periodMs: 3_600_000, maxWaitMs: 7_200_000 }
      : undefined;
  const id = keyed ? `${key}::${String(i).padStart(16, '0')}` : `job-${i}`;
  return {
    topic,
    id,
    partition: engine.partitionOf(topic, id),
    when: { kind: 'd', ms: 60_000 },
    body: BODY,
    ...(phase === 'priority' ? { priority: 5 } : {}),
    ...(phase === 'callback' ? { callback: { topic: 'after', on: ['done', 'dead'] as const } } : {}),
    ...(keyed ? { keyed } : {}),
  };
}

/** Adds `count` jobs of `phase` to `topic`, one a call; a duplicate or a fold first adds the jobs it meets. */
async function addAll(engine: Engine, topic: string, phase: Phase, count: number, before?: () => void) {
  const jobs = Array.from({ length: count }, (_, i) => jobOf(engine, topic, phase, i));
  if (phase === 'dedupe, duplicate' || phase === 'debounce, folded')
    for (const job of jobs) await engine.write([job], 'add');
  before?.();
  for (const job of jobs) {
    const { results } = await engine.write([{ ...job, id: `${job.id}x` }], 'add');
    const want = { 'dedupe, duplicate': 'duplicate', 'debounce, folded': 'debounced' }[phase as string] ?? 'created';
    if (results[0]!.status !== want) throw new Error(`${phase}: ${results[0]!.status}, not ${want}`);
  }
}

async function instructions(): Promise<Record<Phase, number>> {
  const server = await startUnderCallgrind();
  const redis = new Redis(server.url, { maxRetriesPerRequest: null });
  try {
    const counts = {} as Record<Phase, number>;
    for (const phase of PHASES) {
      const topics = [`w-${PHASES.indexOf(phase)}`, `t-${PHASES.indexOf(phase)}`];
      const engine = new Engine(redis, resolveQueueConfig({ topics: Object.fromEntries(topics.map((t) => [t, {}])) }));
      await addAll(engine, topics[0]!, phase, 100); // warm-up
      await addAll(engine, topics[1]!, phase, JOBS, () => server.zero());
      counts[phase] = (await server.dump(phase)) / JOBS;
    }
    return counts;
  } finally {
    redis.disconnect();
    await server.stop();
  }
}

/** Bytes of Redis memory per job of each kind of add, over MEMORY_KEYS adds on a redis-server without valgrind. */
function memory(): Promise<Record<string, number>> {
  return withRedis(async (_server, redis) => {
    const per: Record<string, number> = {};
    // the function library is loaded by the first call: not a job's memory
    const warm = new Engine(redis, resolveQueueConfig({ topics: { warm: {} } }));
    await warm.write([jobOf(warm, 'warm', 'plain', 0)], 'add');
    for (const phase of ['plain', 'priority', 'callback', 'dedupe, new key', 'debounce, new key'] as const) {
      const topic = `m-${PHASES.indexOf(phase)}`;
      const engine = new Engine(redis, resolveQueueConfig({ topics: { [topic]: {} } }));
      const before = await usedMemory(redis);
      const jobs = Array.from({ length: MEMORY_KEYS }, (_, i) => jobOf(engine, topic, phase, i));
      for (let i = 0; i < jobs.length; i += 100) await engine.write(jobs.slice(i, i + 100), 'add');
      per[phase] = ((await usedMemory(redis)) - before) / MEMORY_KEYS;
    }
    return per;
  });
}

async function main() {
  if (!hasValgrind()) throw new Error('valgrind not found: apt-get install -y valgrind');
  const counts = await instructions();
  const bytes = await memory();
  const plain = counts.plain;
  printTable(
    PHASES.map((p) => [
      p,
      fmt(counts[p]),
      `${round(counts[p] / plain, 3)}×`,
      bytes[p] === undefined ? '' : fmt(bytes[p]),
    ]),
    ['add, one job a call', 'instructions a job', 'vs plain', 'bytes a job'],
  );
  printJson({ jobs: JOBS, instructions: counts, bytesPerJob: bytes, memoryKeys: MEMORY_KEYS }, 'keyed');
}

runBench(main);
