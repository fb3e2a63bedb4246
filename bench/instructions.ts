/**
 * Instructions benchmark (not a test): what a job costs Redis in CPU instructions, counted by
 * valgrind's callgrind on a redis-server of its own, so that two paths, or two checkouts, compare
 * without the noise of timing (a run repeats its counts to within about 1 %; Redis CPU time on this
 * VM drifts by ±20 % between runs minutes apart). Counts instructions only: not cache misses, not
 * the kernel's time for the requests (the same on every path here), so read a ratio of these as a
 * ratio of Redis's user CPU.
 *
 *   npm run bench:instructions                               # this checkout
 *   npm run bench:instructions -- --against ../other-checkout  # and another (a git worktree, say)
 *   BENCH_INSTR_PATHS=plain BENCH_INSTR_PER=1 npm run bench:instructions   # one path, one call size
 *
 * The workload is `bench:flow -- cheap`'s: BENCH_INSTR_JOBS (2,000) jobs with 200-byte bodies,
 * ids over BENCH_INSTR_KEYS (100) flow keys (as many as the jobs: one job a key, the many-tenant
 * case), added (batches of 100), swept, then claimed, started and acked (calls of 100: claim,
 * start, the acks together), on a plain topic, on a flow topic whose per-key limits
 * never bind, on a flow topic with no per-key limits, and on a plain topic whose jobs have
 * priorities 1-5 (the prioritized zset, lua/includes/priority.lua); then half as many one job a call, 32 in
 * flight. A warm-up round (300 jobs) first, uncounted. Each path runs on a redis-server started
 * anew under valgrind (about 50 times slower than without: a run takes a few minutes) and stopped
 * by PID. Needs valgrind (`apt-get install -y valgrind`).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { Redis } from 'ioredis';
import type * as EngineModule from '../lib/engine';
import type * as ConfigModule from '../lib/core/queue-config';
import { hasValgrind, startUnderCallgrind, type CallgrindServer } from './harness/callgrind';
import { envInt } from './harness/env';
import { runBench } from './harness/lifecycle';
import { fmt, printJson, printTable, round } from './harness/report';
import { addSweepClaimAck } from './harness/workload';

const JOBS = envInt('BENCH_INSTR_JOBS', 2_000);
const KEYS = envInt('BENCH_INSTR_KEYS', 100);
const BODY = JSON.stringify({ orderId: 'order-000001', customer: 'customer-1', items: 3, note: 'x'.repeat(130) });
const PATHS = ['plain', 'flow', 'flow, no key limits', 'prioritized'] as const;
type Path = (typeof PATHS)[number];
const PHASES = ['add', 'sweep', 'claim, start, ack'] as const;

interface Checkout {
  name: string;
  engine: typeof EngineModule;
  config: typeof ConfigModule;
}

async function load(dir: string, name: string): Promise<Checkout> {
  const engine = (await import(resolve(dir, 'lib/engine/index.ts'))) as typeof EngineModule;
  // a checkout from before lib/rules was renamed lib/core (its config.ts queue-config.ts) keeps its own path
  const configPath = ['lib/core/queue-config.ts', 'lib/rules/config.ts']
    .map((path) => resolve(dir, path))
    .find((path) => existsSync(path))!;
  const config = (await import(configPath)) as typeof ConfigModule;
  return { name, engine, config };
}

/**
 * Two rounds on `path`, each on a topic of its own: a warm-up of 300 jobs, uncounted, then `jobs`
 * jobs, callgrind's counts zeroed before them and dumped after each phase.
 */
async function rounds(
  checkout: Checkout,
  path: Path,
  { per, jobs }: { per: number; jobs: number },
  redis: Redis,
  server: CallgrindServer,
): Promise<Record<string, number>> {
  const dumps: Promise<number>[] = [];
  const names: string[] = [];
  for (const round of [0, 1]) {
    const topic = `t${round}`;
    const flow =
      path === 'flow'
        ? { flow: { concurrency: 1000, rate: { count: 1_000_000, per: 1, burst: 1000 } } }
        : path === 'plain' || path === 'prioritized'
          ? {}
          : { flow: {} };
    const engine = new checkout.engine.Engine(
      redis,
      checkout.config.resolveQueueConfig({ topics: { [topic]: { concurrency: 10_000, ...flow } } }),
    );
    const n = round === 0 ? 300 : jobs;
    const all = Array.from({ length: n }, (_, i) => {
      const key = `k${i % KEYS}`;
      const id = `${key}.${i}`;
      return {
        topic,
        id,
        partition: engine.partitionOf(topic, id),
        when: { kind: 'd' as const, ms: 0 },
        body: BODY,
        ...(path === 'plain' || path === 'prioritized' ? {} : { key }),
        // 5 priorities above 0, interleaved: the claim takes them from the prioritized zset
        ...(path === 'prioritized' ? { priority: 1 + (i % 5) } : {}),
      };
    });
    if (round === 1) server.zero();
    await addSweepClaimAck(engine, topic, all, per, (name) => {
      if (round !== 1) return;
      dumps.push(server.dump(name));
      names.push(name);
    });
  }
  // each dump holds what ran since the one before: the phase's instructions
  const totals = await Promise.all(dumps);
  const counts = Object.fromEntries(names.map((name, i) => [name, totals[i]! / jobs]));
  for (const phase of PHASES) if (counts[phase] === undefined) throw new Error(`no count for ${phase}`);
  return counts;
}

/** Instructions per job of each phase, on a redis-server of its own under callgrind. */
async function measure(checkout: Checkout, path: Path, per: number, jobs: number): Promise<Record<string, number>> {
  const server = await startUnderCallgrind();
  const redis = new Redis(server.url, { maxRetriesPerRequest: null });
  try {
    return await rounds(checkout, path, { per, jobs }, redis, server);
  } finally {
    redis.disconnect();
    await server.stop();
  }
}

/** This checkout, and the one `--against` names. */
async function checkouts(): Promise<Checkout[]> {
  const at = process.argv.indexOf('--against');
  const list = [await load(resolve(__dirname, '..'), 'this checkout')];
  if (at > 0) {
    const other = process.argv[at + 1];
    if (!other) throw new Error('--against needs a checkout directory');
    list.push(await load(other, other));
  }
  return list;
}

async function main() {
  if (!hasValgrind()) throw new Error('valgrind not found: apt-get install -y valgrind');
  const list = await checkouts();
  const rows: string[][] = [];
  const json: unknown[] = [];
  const only = (process.env.BENCH_INSTR_PATHS ?? '').split(',').filter(Boolean);
  const pers = (process.env.BENCH_INSTR_PER ?? '100,1').split(',').map(Number);
  for (const per of pers) {
    const jobs = per === 1 ? Math.max(1, Math.round(JOBS / 2)) : JOBS;
    for (const checkout of list) {
      const totals: Partial<Record<Path, number>> = {};
      for (const path of PATHS.filter((p) => only.length === 0 || only.includes(p))) {
        const counts = await measure(checkout, path, per, jobs);
        const perJob = Object.fromEntries(PHASES.map((p) => [p, Math.round(counts[p]!)]));
        const total = PHASES.reduce((sum, p) => sum + counts[p]!, 0);
        totals[path] = total;
        const ratio = path === 'plain' || totals.plain === undefined ? '' : `${round(total / totals.plain, 3)}×`;
        const calls = per === 1 ? 'one job a call, 32 in flight' : `calls of ${per}`;
        rows.push([checkout.name, calls, path, ...PHASES.map((p) => fmt(perJob[p]!)), fmt(Math.round(total)), ratio]);
        json.push({ checkout: checkout.name, per, jobs, path, perJob, total: Math.round(total) });
      }
    }
  }
  console.log(
    `Redis instructions per job (callgrind), ${fmt(JOBS)} jobs in calls of 100, ${fmt(Math.round(JOBS / 2))} one a call; ${KEYS} keys\n`,
  );
  printTable(rows, ['checkout', 'calls', 'path', ...PHASES, 'all', '÷ plain']);
  printJson({ bench: 'instructions', jobs: JOBS, keys: KEYS, runs: json });
}

runBench(main, { forceExit: true });
