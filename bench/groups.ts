/**
 * Groups, listings and versions benchmark (issue 14; not a test): starts its own redis-server
 * (nothing persisted), drives the real Queue API, prints a table and one JSON line, and stops
 * redis by PID (also on error).
 *
 *   npm run bench:groups
 *   # quick: BENCH_GROUP_JOBS=5000 BENCH_LIST_JOBS=20000 BENCH_MEMORY_JOBS=5000 npm run bench:groups
 *   # Redis on a CPU of its own, as a cache node: BENCH_REDIS_NICE=-20 (root; see bench/env.ts)
 *
 * 1. Cancel of a BENCH_GROUP_JOBS (100,000) job group, all added with addMany (500 a batch), due
 *    over the next hour, with `partitions` 1 and then 4. A loop on its own connection sweeps,
 *    claims (`claim(topic, 100, 10000)`) and acks the jobs of no group (BENCH_BACKGROUND_JOBS,
 *    20,000, due over the first BENCH_BACKGROUND_SECONDS, 10 s) throughout; jobs of the group it
 *    claims stay running (a handler still busy). Measured: the wall time of `cancelGroup`, every
 *    command of BENCH_SLOWLOG_US (100 µs) or more from SLOWLOG while it ran (not 0 here: Redis
 *    logs every command a script runs too, a thousand a step, which would fill the log and add
 *    its own cost to the step), the slowest, and the median, p99 and slowest of the cancelGroup
 *    calls; jobs of the group handed out by claims that began after the answer (must be 0) and
 *    before it; then every job of the group is read back through listGroup (pages of 500).
 * 2. Listing: `listJobs(topic, { state: 'delayed', limit: 100 })` on a topic of BENCH_LIST_JOBS
 *    (1,000,000) delayed jobs and on one of BENCH_LIST_SMALL_JOBS (1,000): the first page and
 *    pages from a `from` bound in the middle, BENCH_PAGES (20) of each. A page's Redis time is the
 *    sum of its commands' durations in SLOWLOG at slowlog-log-slower-than 0 (every command).
 * 3. Memory: INFO memory used_memory before and after adding BENCH_MEMORY_JOBS (100,000) delayed
 *    jobs (200-byte bodies, ids `order-00000000123`), each after BENCH_SETTLE_MS (1000 ms): with no
 *    group, and with groups (`meeting-000123`) of 1, 3, 100 jobs and of all of them; MEMORY USAGE
 *    per key kind says where the bytes are.
 *
 *    BENCH_BODY_BYTES (200) sets the body size: whether a group's name in each record moves it
 *    into jemalloc's next size class depends on it. BENCH_BODY_SPREAD (0) spreads the sizes
 *    evenly over BENCH_BODY_BYTES ± BENCH_BODY_SPREAD/2 (job i gets the same size in every row),
 *    so that the size classes average out: the record's share of a group's cost is then about the
 *    bytes the group name adds to it.
 *
 * BENCH_AFTER_MS (2000) is how long the loop goes on after the cancel answered;
 * BENCH_BATCHES_IN_FLIGHT (4) how many addMany calls run at once. BENCH_ONLY=cancel|list|memory
 * runs one step. Results are in BENCHMARKS.md.
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { resolveQueueConfig } from '../lib/core/queue-config';
import { Queue, queueOf } from '../test/support/queue';
import { Engine } from '../lib/engine';
import { type ClaimedJob, type Job } from '../lib/engine';
import { startRedis, type RedisProcess } from '../test/support/redis';
import {
  describeMachine,
  envInt,
  fmt,
  pool,
  printTable,
  reniceRedis,
  round,
  slowlogReader,
  usedMemory,
  type Logged,
} from './env';
import { CANCEL_GROUP_STEP, groupKey, topicKeys } from '../lib/testing';

// 200 as bench/engine.ts, so the no-group figure compares with its step 4
const BODY_BYTES = envInt('BENCH_BODY_BYTES', 200);
const BODY_SPREAD = envInt('BENCH_BODY_SPREAD', 0);
const N = {
  groupJobs: envInt('BENCH_GROUP_JOBS', 100_000),
  backgroundJobs: envInt('BENCH_BACKGROUND_JOBS', 20_000),
  backgroundSeconds: envInt('BENCH_BACKGROUND_SECONDS', 10),
  afterMs: envInt('BENCH_AFTER_MS', 2_000),
  slowlogUs: envInt('BENCH_SLOWLOG_US', 100),
  listJobs: envInt('BENCH_LIST_JOBS', 1_000_000),
  listSmallJobs: envInt('BENCH_LIST_SMALL_JOBS', 1_000),
  pages: envInt('BENCH_PAGES', 20),
  memoryJobs: envInt('BENCH_MEMORY_JOBS', 100_000),
  settleMs: envInt('BENCH_SETTLE_MS', 1_000),
  bodyBytes: BODY_BYTES,
  bodySpread: BODY_SPREAD,
  batchesInFlight: envInt('BENCH_BATCHES_IN_FLIGHT', 4),
};
const ONLY = process.env.BENCH_ONLY;
if (ONLY !== undefined && !['cancel', 'list', 'memory'].includes(ONLY))
  throw new Error(`BENCH_ONLY must be cancel, list or memory, got ${JSON.stringify(ONLY)}`);

const TARGETS = { maxCommandMs: 10, pageMs: 5, pageRatio: 1, groupBytesPerJob: 40 };
const BATCH = 500; // addMany's largest batch (BATCH_JOBS.max)
const HOUR_S = 3600;
const GROUP_SIZES = [1, 3, 100] as const; // and one group of every job

const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' / ');
/** The `q` quantile (0..1) of sorted `values`, nearest rank. */
const quantile = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? 0;
const median = (values: readonly number[]) =>
  quantile(
    [...values].sort((a, b) => a - b),
    0.5,
  );

/**
 * A JSON body whose text is exactly BODY_BYTES bytes; with BODY_SPREAD, job n's size within BODY_BYTES ± BODY_SPREAD/2
 * (the same in every row).
 */
function makeBody(n: number): { orderId: string; note: string } {
  const bytes =
    BODY_SPREAD === 0 ? BODY_BYTES : BODY_BYTES - Math.floor(BODY_SPREAD / 2) + ((n * 7919) % (BODY_SPREAD + 1));
  const base = { orderId: `order-${String(n).padStart(11, '0')}`, note: '' };
  const body = { ...base, note: 'x'.repeat(bytes - Buffer.byteLength(JSON.stringify(base))) };
  if (Buffer.byteLength(JSON.stringify(body)) !== bytes) throw new Error(`body is not ${bytes} bytes`);
  return body;
}

/**
 * Adds `count` jobs built by `job(i)` through addMany, BATCH a call, several in flight; throws unless every one is
 * created.
 */
async function addAll(queue: Queue, count: number, job: (i: number) => object): Promise<number> {
  const t0 = performance.now();
  await pool(Math.ceil(count / BATCH), N.batchesInFlight, async (b) => {
    const jobs = [];
    for (let i = b * BATCH; i < Math.min(count, (b + 1) * BATCH); i++) jobs.push(job(i));
    const { outcomes } = await queue.addMany(jobs);
    const failed = outcomes.find((o) => o.status !== 'created');
    if (failed) throw new Error(`an add was ${failed.status}: ${'error' in failed ? failed.error.message : ''}`);
  });
  return performance.now() - t0;
}

/** A spread of i over [0, 1) that does not follow i (a prime stride), so consecutive adds are due far apart. */
const spread = (i: number, n: number) => ((i * 7919) % n) / n;

type ReadSlowlog = ReturnType<typeof slowlogReader>;

/** Every key matching `pattern` (SCAN). */
async function scanKeys(redis: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return keys;
}

/** MEMORY USAGE (every element counted) of each key, pipelined. */
async function memoryUsage(redis: Redis, keys: readonly string[]): Promise<number> {
  let total = 0;
  for (let i = 0; i < keys.length; i += 1000) {
    const pipeline = redis.pipeline();
    for (const key of keys.slice(i, i + 1000)) pipeline.call('MEMORY', 'USAGE', key, 'SAMPLES', '0');
    for (const [error, bytes] of (await pipeline.exec()) ?? []) {
      if (error) throw error;
      total += Number(bytes ?? 0);
    }
  }
  return total;
}

// ---------------------------------------------------------------------------------------------
// 1. Group cancel under load

interface CancelRun {
  partitions: number;
  groupJobs: number;
  addMs: number;
  cancelMs: number;
  answer: { cancelled: number; running: number };
  /** Jobs of the group due (by their delay) when the cancel answered. */
  dueByAnswer: number;
  cancelCalls: { expected: number; logged: number; p50Ms: number; p99Ms: number; maxMs: number };
  slowest: { ms: number; name: string } | null;
  loggedCommands: number;
  slowlogFull: boolean;
  claimedBefore: number;
  claimedAfter: number;
  claimsAfter: number;
  claimsDuring: number;
  /** Wall time of the loop's claim calls that began during the cancel and after it. */
  claimWall: Record<'during' | 'after', { count: number; p50Ms: number; maxMs: number }>;
  backgroundAcked: number;
  sweeps: number;
  groupStatesAfter: Record<string, number>;
  countsHold: boolean;
  listGroupPage: { p50Ms: number; maxMs: number; commands: number };
  listGroupPagesMs: number;
}

async function cancelRun(
  server: RedisProcess,
  admin: Redis,
  readSlowlog: ReadSlowlog,
  partitions: number,
): Promise<CancelRun> {
  const topic = 'bench-cancel';
  const group = 'meeting-000001';
  // ttr: claimed jobs of the group stay running through the run
  const config = resolveQueueConfig({ partitions, topics: { [topic]: { concurrency: 10_000, ttr: 900 } } });
  const connect = () => new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: null });
  const cancelRedis = connect();
  const loopRedis = connect();
  try {
    await admin.flushall();
    await admin.call('MEMORY', 'PURGE');
    const q = queueOf(new Engine(cancelRedis, config));
    const worker = queueOf(new Engine(loopRedis, config));
    const addStart = Date.now();
    const addMs = await addAll(q, N.groupJobs, (i) => ({
      topic,
      id: `g-${String(i).padStart(9, '0')}`,
      group,
      delay: spread(i, N.groupJobs) * HOUR_S,
      body: { i },
    }));
    const delayOf = (i: number) => spread(i, N.groupJobs) * HOUR_S * 1000;
    console.log(
      `   partitions ${partitions}: ${fmt(N.groupJobs)} jobs of group ${group} added in ${fmt(addMs / 1000, 1)} s`,
    );
    // the jobs of no group that keep the sweeper and the claims busy
    await addAll(q, N.backgroundJobs, (i) => ({
      topic,
      id: `bg-${String(i).padStart(9, '0')}`,
      delay: spread(i, N.backgroundJobs) * N.backgroundSeconds,
      body: { i },
    }));
    // the group's zsets in each partition: its key and `<key>#1`, `<key>#2`, ... (128 members each)
    const groupSize = async (p: number) => {
      const keys = [
        groupKey(p, topic, group, partitions),
        ...(await scanKeys(admin, `${groupKey(p, topic, group, partitions)}#*`)),
      ];
      return (await Promise.all(keys.map((key) => admin.zcard(key)))).reduce((a, b) => a + b, 0);
    };
    const perPartition = await Promise.all(Array.from({ length: partitions }, (_, p) => groupSize(p)));
    if (perPartition.reduce((a, b) => a + b, 0) !== N.groupJobs)
      throw new Error(`group zsets hold ${perPartition.join('+')}, not ${N.groupJobs}`);
    // a step looks at CANCEL_GROUP_STEP members; the one that sees fewer is the last
    const expectedCalls = perPartition.reduce((sum, m) => sum + Math.floor(m / CANCEL_GROUP_STEP) + 1, 0);

    // pages of 100 of the group, one after another from its start, before anything changes
    await admin.config('SET', 'slowlog-max-len', '10000');
    await admin.config('SET', 'slowlog-log-slower-than', '0');
    await q.listGroup(topic, group, { limit: 100 }); // the script's first call on this connection compiles it
    const groupPages: { ms: number; commands: number }[] = [];
    let pageCursor: string | undefined;
    for (let k = 0; k < N.pages; k++) {
      const row = await pageMs(
        admin,
        readSlowlog,
        () => q.listGroup(topic, group, { limit: 100, ...(pageCursor ? { cursor: pageCursor } : {}) }),
        Math.min(100, N.groupJobs - 100 * k),
      );
      groupPages.push(row);
      if (row.page.next === null) break;
      pageCursor = row.page.next;
    }
    await admin.config('SET', 'slowlog-log-slower-than', '-1');

    // the sweeper and the fan-out: sweep, claim, ack what is not of the group; each claim notes when it began
    const claims: { began: number; ms: number; ids: string[] }[] = [];
    let backgroundAcked = 0;
    let sweeps = 0;
    let stop = false;
    const loop = (async () => {
      while (!stop) {
        const swept = await worker.engine.sweep();
        sweeps++;
        const began = performance.now();
        const jobs: ClaimedJob[] = await worker.engine.claim(topic, 100, 10_000);
        claims.push({
          began,
          ms: performance.now() - began,
          ids: jobs.filter((j) => j.id.startsWith('g-')).map((j) => j.id),
        });
        const acks = await Promise.all(
          jobs.filter((j) => j.id.startsWith('bg-')).map((j) => worker.engine.ack(topic, j.id, j)),
        );
        backgroundAcked += acks.filter((a) => a === 'done').length;
        if (jobs.length === 0 && !swept.more) await sleep(2); // nothing due: a sweeper would wait too
      }
    })();
    loop.catch(() => undefined); // awaited below; a failure must not go unhandled meanwhile

    await sleep(500); // the loop is under way before the cancel begins
    await admin.config('SET', 'slowlog-log-slower-than', String(N.slowlogUs));
    await admin.config('SET', 'slowlog-max-len', '100000');
    await admin.call('SLOWLOG', 'RESET');
    const t0 = performance.now();
    const answer = await q.cancelGroup(topic, group);
    const answered = performance.now();
    const logged = await readSlowlog(admin);
    await admin.config('SET', 'slowlog-log-slower-than', '-1');
    const answeredAt = Date.now();
    await sleep(N.afterMs);
    stop = true;
    await loop;

    const dueByAnswer = Array.from({ length: N.groupJobs }, (_, i) => i).filter(
      (i) => addStart + delayOf(i) <= answeredAt,
    ).length;
    const fromClients = logged.filter((l) => l.fromClient && l.name !== 'SLOWLOG');
    const cancelMs = fromClients.filter((l) => l.name.startsWith('cancelGroup')).map((l) => l.us / 1000);
    // the steps under the threshold (a partition's last, which finds few or no members) count as under it
    const cancelAll = [...cancelMs, ...new Array<number>(Math.max(0, expectedCalls - cancelMs.length)).fill(0)].sort(
      (a, b) => a - b,
    );
    const slowest = fromClients.reduce<Logged | null>((a, b) => (a && a.us >= b.us ? a : b), null);
    const before = new Set(claims.filter((c) => c.began <= answered).flatMap((c) => c.ids));
    const afterClaims = claims.filter((c) => c.began > answered);
    const duringClaims = claims.filter((c) => c.began > t0 && c.began <= answered);
    const claimWall = (rows: typeof claims) => ({
      count: rows.length,
      p50Ms: round(median(rows.map((c) => c.ms)), 1),
      maxMs: round(Math.max(0, ...rows.map((c) => c.ms)), 1),
    });
    const claimedAfter = afterClaims.flatMap((c) => c.ids);

    // every job of the group, read back through listGroup
    const states: Record<string, number> = {};
    let cursor: string | undefined;
    const pagesStart = performance.now();
    for (;;) {
      const page: { jobs: Job[]; next: string | null } = await q.listGroup(topic, group, {
        limit: 500,
        ...(cursor ? { cursor } : {}),
      });
      for (const job of page.jobs) states[job.state] = (states[job.state] ?? 0) + 1;
      if (page.next === null) break;
      cursor = page.next;
    }
    const listGroupPagesMs = performance.now() - pagesStart;

    return {
      partitions,
      groupJobs: N.groupJobs,
      addMs,
      cancelMs: answered - t0,
      answer,
      dueByAnswer,
      cancelCalls: {
        expected: expectedCalls,
        logged: cancelMs.length,
        p50Ms: round(quantile(cancelAll, 0.5)),
        p99Ms: round(quantile(cancelAll, 0.99)),
        maxMs: round(cancelAll.at(-1) ?? 0),
      },
      slowest: slowest ? { ms: round(slowest.us / 1000), name: slowest.name } : null,
      loggedCommands: logged.length,
      slowlogFull: logged.length >= 100_000,
      claimedBefore: before.size,
      claimedAfter: claimedAfter.length,
      claimsAfter: afterClaims.length,
      claimsDuring: duringClaims.length,
      claimWall: { during: claimWall(duringClaims), after: claimWall(afterClaims) },
      backgroundAcked,
      sweeps,
      groupStatesAfter: states,
      countsHold: answer.cancelled + answer.running === N.groupJobs && answer.running === before.size,
      listGroupPage: pageSummary(groupPages),
      listGroupPagesMs,
    };
  } finally {
    cancelRedis.disconnect();
    loopRedis.disconnect();
  }
}

function printCancel(r: CancelRun): void {
  const c = r.cancelCalls;
  console.log(
    `1. cancelGroup, partitions ${r.partitions}: ${fmt(r.cancelMs)} ms wall for ${fmt(r.groupJobs)} jobs; answer cancelled ${fmt(r.answer.cancelled)}, running ${fmt(r.answer.running)}` +
      ` (sum ${r.answer.cancelled + r.answer.running === r.groupJobs ? '=' : '≠'} ${fmt(r.groupJobs)}; running ${r.answer.running === r.claimedBefore ? '=' : '≠'} claimed before the answer)\n` +
      `   cancelGroup calls: ${c.logged} logged ≥ ${N.slowlogUs} µs of ${c.expected}; median ${fmt(c.p50Ms, 2)} ms, p99 ${fmt(c.p99Ms, 2)} ms, slowest ${fmt(c.maxMs, 2)} ms\n` +
      `   slowest command while it ran: ${r.slowest ? `${fmt(r.slowest.ms, 2)} ms (${r.slowest.name})` : `none ≥ ${N.slowlogUs} µs`}; ${fmt(r.loggedCommands)} entries logged${r.slowlogFull ? ' (SLOWLOG FULL: the earliest were lost)' : ''}\n` +
      `   loop: ${fmt(r.sweeps)} sweeps, ${fmt(r.claimsDuring)} claims began during the cancel and ${fmt(r.claimsAfter)} after it, ${fmt(r.backgroundAcked)} jobs of no group acked; jobs of the group due by the answer about ${fmt(r.dueByAnswer)}\n` +
      `   claim call wall time: during the cancel median ${fmt(r.claimWall.during.p50Ms, 1)} ms, slowest ${fmt(r.claimWall.during.maxMs, 1)} ms; after it median ${fmt(r.claimWall.after.p50Ms, 1)} ms, slowest ${fmt(r.claimWall.after.maxMs, 1)} ms\n` +
      `   jobs of the group claimed: ${fmt(r.claimedBefore)} by claims begun before the answer, ${fmt(r.claimedAfter)} by claims begun after it (must be 0)\n` +
      `   listGroup page of 100 before the cancel: median ${fmt(r.listGroupPage.p50Ms, 3)} ms of Redis time (slowest ${fmt(r.listGroupPage.maxMs, 3)}, ${r.listGroupPage.commands} commands at most)\n` +
      `   read back through listGroup (pages of 500, ${fmt(r.listGroupPagesMs)} ms wall): ${JSON.stringify(r.groupStatesAfter)}; load average ${load()}`,
  );
}

// ---------------------------------------------------------------------------------------------
// 2. Listing pages on a big and a small topic

interface PageStats {
  jobs: number;
  setupMs: number;
  first: { p50Ms: number; maxMs: number; commands: number };
  middle: { p50Ms: number; maxMs: number; commands: number };
}

/** Redis time of one page: the sum of the durations of the commands the queue's client sent (SLOWLOG at 0). */
async function pageMs<T extends { jobs: Job[] }>(
  admin: Redis,
  readSlowlog: ReadSlowlog,
  page: () => Promise<T>,
  expect: number,
): Promise<{ ms: number; commands: number; page: T }> {
  await admin.call('SLOWLOG', 'RESET');
  const result = await page();
  const logged = (await readSlowlog(admin)).filter((l) => l.fromClient && l.name !== 'SLOWLOG');
  if (result.jobs.length !== expect) throw new Error(`a page listed ${result.jobs.length} jobs, not ${expect}`);
  return { ms: logged.reduce((sum, l) => sum + l.us, 0) / 1000, commands: logged.length, page: result };
}

/** Median, slowest and most commands of pages measured by pageMs. */
function pageSummary(rows: readonly { ms: number; commands: number }[]): {
  p50Ms: number;
  maxMs: number;
  commands: number;
} {
  return {
    p50Ms: round(median(rows.map((r) => r.ms))),
    maxMs: round(Math.max(...rows.map((r) => r.ms))),
    commands: Math.max(...rows.map((r) => r.commands)),
  };
}

async function listingRun(
  admin: Redis,
  readSlowlog: ReadSlowlog,
  queue: Queue,
  topic: string,
  jobs: number,
  setupMs: number,
): Promise<PageStats> {
  const limit = 100;
  await queue.listJobs(topic, { state: 'delayed', limit }); // the script's first call on this connection compiles it
  const first: { ms: number; commands: number }[] = [];
  const middle: { ms: number; commands: number }[] = [];
  const delayed = topicKeys(0, topic, 1).delayed;
  for (let k = 0; k < N.pages; k++) {
    first.push(
      await pageMs(admin, readSlowlog, () => queue.listJobs(topic, { state: 'delayed', limit }), Math.min(limit, jobs)),
    );
    // from the due time of a job around the middle: 40% to 60% of the way, a different one each page
    const rank = Math.floor(jobs * (0.4 + (0.2 * k) / N.pages));
    const [, score] = await admin.zrange(delayed, rank, rank, 'WITHSCORES');
    const from = Number(score);
    const left = await admin.zcount(delayed, from, '+inf');
    middle.push(
      await pageMs(
        admin,
        readSlowlog,
        () => queue.listJobs(topic, { state: 'delayed', limit, from }),
        Math.min(limit, left),
      ),
    );
  }
  return { jobs, setupMs, first: pageSummary(first), middle: pageSummary(middle) };
}

async function listings(
  server: RedisProcess,
  admin: Redis,
  readSlowlog: ReadSlowlog,
): Promise<{ big: PageStats; small: PageStats }> {
  const big = 'bench-list-big';
  const small = 'bench-list-small';
  const config = resolveQueueConfig({ topics: { [big]: {}, [small]: {} } });
  const redis = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: null });
  try {
    await admin.flushall();
    await admin.call('MEMORY', 'PURGE');
    const queue = queueOf(new Engine(redis, config));
    // small bodies; due over the next hour from a minute on, so none is due while this runs
    const job = (topic: string, n: number) => (i: number) => ({
      topic,
      id: `job-${String(i).padStart(9, '0')}`,
      delay: 60 + spread(i, n) * HOUR_S,
      body: { i },
    });
    const smallMs = await addAll(queue, N.listSmallJobs, job(small, N.listSmallJobs));
    const bigMs = await addAll(queue, N.listJobs, job(big, N.listJobs));
    console.log(
      `   listing setup: ${fmt(N.listJobs)} delayed jobs added in ${fmt(bigMs / 1000, 1)} s (${fmt(N.listJobs / (bigMs / 1000))} jobs/s), ${fmt(N.listSmallJobs)} in ${fmt(smallMs)} ms; load average ${load()}`,
    );
    await admin.config('SET', 'slowlog-max-len', '10000');
    await admin.config('SET', 'slowlog-log-slower-than', '0');
    const bigStats = await listingRun(admin, readSlowlog, queue, big, N.listJobs, bigMs);
    const smallStats = await listingRun(admin, readSlowlog, queue, small, N.listSmallJobs, smallMs);
    await admin.config('SET', 'slowlog-log-slower-than', '-1');
    await admin.call('SLOWLOG', 'RESET');
    return { big: bigStats, small: smallStats };
  } finally {
    redis.disconnect();
  }
}

// ---------------------------------------------------------------------------------------------
// 3. Memory per job with and without a group

interface MemoryRow {
  label: string;
  groupSize: number | null;
  groups: number;
  bytesPerJob: number;
  /** MEMORY USAGE per job: the jobs hash, the delayed zset, the group zsets, the small groups' buckets. */
  jobsHash: number;
  delayedZset: number;
  groupZsets: number;
  groupBuckets: number;
  /** How many zsets the groups have, and their encodings ("100 listpack, 3 skiplist"). */
  groupZsetCount: number;
  groupEncoding: string | null;
  /** How many buckets the small groups are in, and their encodings. */
  groupBucketCount: number;
  bucketEncoding: string | null;
  /** Mean length of a job's record (msgpack header and inline body), over a sample. */
  recordBytes: number;
}

async function memoryRun(server: RedisProcess, admin: Redis, groupSize: number | null): Promise<MemoryRow> {
  const topic = 'bench-mem';
  const config = resolveQueueConfig({ topics: { [topic]: {} } });
  const redis = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: null });
  const jobs = N.memoryJobs;
  try {
    const queue = queueOf(new Engine(redis, config));
    const groupOf = (i: number) =>
      groupSize === null ? undefined : `meeting-${String(Math.floor(i / groupSize)).padStart(6, '0')}`;
    const job = (i: number) => ({
      topic,
      id: `order-${String(i).padStart(11, '0')}`,
      delay: 60 + Math.random() * HOUR_S,
      body: makeBody(i),
      ...(groupSize === null ? {} : { group: groupOf(i) }),
    });
    // a first batch loads the scripts and sizes the client's buffers; then nothing is left of it
    await addAll(queue, 10, job);
    await admin.flushall();
    await admin.call('MEMORY', 'PURGE');
    await sleep(N.settleMs);
    const before = await usedMemory(admin);
    await addAll(queue, jobs, job);
    await sleep(N.settleMs);
    const after = await usedMemory(admin);
    const k = topicKeys(0, topic, 1);
    const groups = groupSize === null ? [] : [...new Set(Array.from({ length: jobs }, (_, i) => groupOf(i)!))];
    // every zset of every group: its key, and the further ones of a group past 128 jobs (`<key>#n`)
    const groupKeys = groupSize === null ? [] : await scanKeys(admin, `${groupKey(0, topic, '', 1)}*`);
    // the buckets of small groups (`<jobs key>#gb<n>`, see lua/includes/buckets.lua)
    const bucketKeys = groupSize === null ? [] : await scanKeys(admin, `${k.jobs}#gb*`);
    const encodingsOf = async (keys: readonly string[]) => {
      const encodings = new Map<string, number>();
      for (let i = 0; i < keys.length; i += 1000) {
        const pipeline = admin.pipeline();
        for (const key of keys.slice(i, i + 1000)) pipeline.object('ENCODING', key);
        for (const [, e] of (await pipeline.exec()) ?? [])
          encodings.set(String(e), (encodings.get(String(e)) ?? 0) + 1);
      }
      return encodings.size === 0 ? null : [...encodings].map(([e, n]) => `${fmt(n)} ${e}`).join(', ');
    };
    // mean record length over up to 1000 jobs picked at random (HRANDFIELD)
    const sample = ((await admin.call('HRANDFIELD', k.jobs, '1000')) as string[]).filter((f) => f.startsWith('order-'));
    const lengths = await Promise.all(sample.map((f) => admin.hstrlen(k.jobs, f)));
    return {
      label:
        groupSize === null ? 'no group' : groupSize >= jobs ? `one group of ${fmt(jobs)}` : `groups of ${groupSize}`,
      groupSize,
      groups: groups.length,
      bytesPerJob: round((after - before) / jobs, 1),
      jobsHash: round((await memoryUsage(admin, [k.jobs])) / jobs, 1),
      delayedZset: round((await memoryUsage(admin, [k.delayed])) / jobs, 1),
      groupZsets: round((await memoryUsage(admin, groupKeys)) / jobs, 1),
      groupBuckets: round((await memoryUsage(admin, bucketKeys)) / jobs, 1),
      groupZsetCount: groupKeys.length,
      groupEncoding: await encodingsOf(groupKeys),
      groupBucketCount: bucketKeys.length,
      bucketEncoding: await encodingsOf(bucketKeys),
      recordBytes: round(lengths.reduce((a, b) => a + b, 0) / Math.max(1, lengths.length), 1),
    };
  } finally {
    redis.disconnect();
    await admin.flushall();
  }
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = new Date();
  const loadAtStart = loadavg();
  let server: RedisProcess | undefined;
  let admin: Redis | undefined;
  try {
    server = await startRedis({ args: ['--save', '', '--appendonly', 'no'] });
    admin = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: null });
    const serverInfo = await admin.info('server');
    const machine = {
      ...describeMachine(serverInfo, server.pid),
      redisNice: reniceRedis(server.pid),
      zsetMaxListpackEntries: Number(((await admin.config('GET', 'zset-max-listpack-entries')) as string[])[1]),
    };
    console.log(
      `machine: ${machine.cpus} CPUs (${machine.cpuModel}), ${machine.memoryGiB} GiB, ${machine.os}, node ${machine.node}, redis ${machine.redis}${machine.redisNice === null ? '' : ` (reniced to ${machine.redisNice})`}; load average ${load()}`,
    );
    console.log(`counts: ${JSON.stringify(N)}`);
    const readSlowlog = slowlogReader();
    await admin.config('SET', 'slowlog-log-slower-than', '-1'); // on only while a step measures

    const memory: MemoryRow[] = [];
    if (!ONLY || ONLY === 'memory') {
      for (const size of [null, ...GROUP_SIZES, N.memoryJobs]) {
        const row = await memoryRun(server, admin, size);
        memory.push(row);
        console.log(
          `3. memory, ${row.label}: ${fmt(row.bytesPerJob, 1)} bytes/job (${fmt(row.groups)} groups${row.groupEncoding ? ` in ${fmt(row.groupZsetCount)} zsets: ${row.groupEncoding}` : ''}${row.bucketEncoding ? ` in ${fmt(row.groupBucketCount)} buckets: ${row.bucketEncoding}` : ''}); ` +
            `MEMORY USAGE per job: jobs hash ${fmt(row.jobsHash, 1)}, delayed zset ${fmt(row.delayedZset, 1)}, group zsets ${fmt(row.groupZsets, 1)}, group buckets ${fmt(row.groupBuckets, 1)}; mean record ${fmt(row.recordBytes, 1)} bytes; load average ${load()}`,
        );
      }
    }
    const cancels: CancelRun[] = [];
    if (!ONLY || ONLY === 'cancel') {
      for (const partitions of [1, 4]) {
        const r = await cancelRun(server, admin, readSlowlog, partitions);
        printCancel(r);
        cancels.push(r);
      }
    }
    let list: { big: PageStats; small: PageStats } | undefined;
    if (!ONLY || ONLY === 'list') {
      list = await listings(server, admin, readSlowlog);
      for (const [name, s] of [
        ['big', list.big],
        ['small', list.small],
      ] as const) {
        console.log(
          `2. listJobs delayed, limit 100, ${fmt(s.jobs)} jobs (${name}): first page median ${fmt(s.first.p50Ms, 3)} ms (slowest ${fmt(s.first.maxMs, 3)}), middle (from) median ${fmt(s.middle.p50Ms, 3)} ms (slowest ${fmt(s.middle.maxMs, 3)}); at most ${Math.max(s.first.commands, s.middle.commands)} commands a page`,
        );
      }
    }

    // the table
    const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
    const rows: [string, string, string][] = [];
    for (const r of cancels) {
      const p = `cancel ${fmt(r.groupJobs)}-job group, partitions ${r.partitions}`;
      rows.push([
        `${p}: wall time`,
        `${fmt(r.cancelMs)} ms (cancelled ${fmt(r.answer.cancelled)}, running ${fmt(r.answer.running)})`,
        '',
      ]);
      rows.push([
        `  cancelGroup calls (${r.cancelCalls.expected}): median / p99 / slowest`,
        `${fmt(r.cancelCalls.p50Ms, 2)} / ${fmt(r.cancelCalls.p99Ms, 2)} / ${fmt(r.cancelCalls.maxMs, 2)} ms`,
        `≤ ${TARGETS.maxCommandMs} ms: ${verdict(r.cancelCalls.maxMs <= TARGETS.maxCommandMs)}`,
      ]);
      rows.push([
        '  slowest command while it ran',
        r.slowest ? `${fmt(r.slowest.ms, 2)} ms (${r.slowest.name})` : `none ≥ ${N.slowlogUs} µs`,
        `≤ ${TARGETS.maxCommandMs} ms: ${verdict((r.slowest?.ms ?? 0) <= TARGETS.maxCommandMs)}`,
      ]);
      rows.push([
        '  loop claim calls begun during / after the cancel: median wall',
        `${fmt(r.claimWall.during.count)} calls ${fmt(r.claimWall.during.p50Ms, 1)} ms / ${fmt(r.claimWall.after.count)} calls ${fmt(r.claimWall.after.p50Ms, 1)} ms`,
        '',
      ]);
      rows.push([
        '  group jobs claimed before / after the answer',
        `${fmt(r.claimedBefore)} / ${fmt(r.claimedAfter)} (${fmt(r.claimsAfter)} claims after)`,
        `after = 0: ${verdict(r.claimedAfter === 0)}`,
      ]);
      rows.push([
        '  answer: cancelled + running = jobs, running = claimed before',
        r.countsHold ? 'holds' : 'DOES NOT HOLD',
        '',
      ]);
      rows.push([
        '  listGroup page of 100 (before the cancel): median / slowest',
        `${fmt(r.listGroupPage.p50Ms, 3)} / ${fmt(r.listGroupPage.maxMs, 3)} ms`,
        `median ≤ ${TARGETS.pageMs} ms: ${verdict(r.listGroupPage.p50Ms <= TARGETS.pageMs)}`,
      ]);
    }
    if (list) {
      for (const [name, s] of [
        ['first page', 'first'],
        ['middle page (from)', 'middle'],
      ] as const) {
        const ratio = list.big[s].p50Ms / list.small[s].p50Ms;
        rows.push([
          `listJobs delayed ${name}, ${fmt(list.big.jobs)} jobs: median / slowest`,
          `${fmt(list.big[s].p50Ms, 3)} / ${fmt(list.big[s].maxMs, 3)} ms`,
          `median ≤ ${TARGETS.pageMs} ms: ${verdict(list.big[s].p50Ms <= TARGETS.pageMs)}`,
        ]);
        rows.push([
          `listJobs delayed ${name}, ${fmt(list.small.jobs)} jobs: median / slowest`,
          `${fmt(list.small[s].p50Ms, 3)} / ${fmt(list.small[s].maxMs, 3)} ms`,
          `median ≤ ${TARGETS.pageMs} ms: ${verdict(list.small[s].p50Ms <= TARGETS.pageMs)}`,
        ]);
        rows.push([`  ratio of medians, ${name}`, `${fmt(ratio, 2)}×`, '≈ 1']);
      }
    }
    const base = memory.find((m) => m.groupSize === null);
    for (const m of memory) {
      const extra = base && m !== base ? m.bytesPerJob - base.bytesPerJob : null;
      rows.push([
        `memory per job, ${m.label}`,
        `${fmt(m.bytesPerJob, 1)} bytes${extra === null ? '' : ` (${extra >= 0 ? '+' : ''}${fmt(extra, 1)})`}`,
        extra === null ? '' : `≤ +${TARGETS.groupBytesPerJob}: ${verdict(extra <= TARGETS.groupBytesPerJob)}`,
      ]);
    }
    printTable(rows);
    console.log(
      JSON.stringify({
        bench: 'groups',
        at: started.toISOString(),
        machine,
        loadAverage: { start: loadAtStart.map((l) => round(l, 2)), end: loadavg().map((l) => round(l, 2)) },
        counts: N,
        results: {
          cancel: cancels,
          list: list && {
            ...list,
            ratio: {
              first: round(list.big.first.p50Ms / list.small.first.p50Ms, 2),
              middle: round(list.big.middle.p50Ms / list.small.middle.p50Ms, 2),
            },
          },
          memory: memory.map((m) => ({
            ...m,
            extraBytesPerJob: base && m !== base ? round(m.bytesPerJob - base.bytesPerJob, 1) : null,
          })),
        },
        targets: TARGETS,
      }),
    );
  } finally {
    admin?.disconnect();
    await server?.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
