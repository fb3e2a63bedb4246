/**
 * Groups, listings and versions benchmark (issue 14; not a test): starts its own redis-server
 * (nothing persisted), drives the real Queue API, prints a table and one JSON line, and stops
 * redis by PID (also on error).
 *
 *   npm run bench:groups
 *   # quick: BENCH_GROUP_JOBS=5000 BENCH_LIST_JOBS=20000 BENCH_MEMORY_JOBS=5000 npm run bench:groups
 *   # Redis on a CPU of its own, as a cache node: BENCH_REDIS_NICE=-20 (root; see bench/harness/env.ts)
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
import type { Redis } from 'ioredis';
import type { ClaimedJob, Job } from '../lib/engine';
import { CANCEL_GROUP_STEP, groupKey, topicKeys } from '../lib/testing';
import { envInt, envOnly, reniceRedis, runs } from './harness/env';
import { runBench } from './harness/lifecycle';
import { loadText, quantile, sortNum } from './harness/measure';
import { addInBatches, paddedBody, queueOn, type Queue } from './harness/queue';
import {
  connect,
  encodings,
  logCommands,
  memoryUsage,
  scanKeys,
  slowlogReader,
  usedMemory,
  withRedis,
  type Logged,
  type RedisProcess,
} from './harness/redis';
import { fmt, machineLine, machineOf, printJson, printTable, round, verdict, type Row } from './harness/report';

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
const ONLY = envOnly(['cancel', 'list', 'memory'] as const);

const TARGETS = { maxCommandMs: 10, pageMs: 5, pageRatio: 1, groupBytesPerJob: 40 };
const BATCH = 500; // addMany's largest batch (BATCH_JOBS.max)
const HOUR_S = 3600;
const GROUP_SIZES = [1, 3, 100] as const; // and one group of every job

const load = () => loadText(1, ' / ');
const median = (values: readonly number[]) => quantile(sortNum(values), 0.5, 0);

/**
 * A JSON body whose text is exactly BODY_BYTES bytes; with BODY_SPREAD, job n's size within BODY_BYTES ± BODY_SPREAD/2
 * (the same in every row).
 */
function makeBody(n: number): { orderId: string; note: string } {
  const bytes =
    BODY_SPREAD === 0 ? BODY_BYTES : BODY_BYTES - Math.floor(BODY_SPREAD / 2) + ((n * 7919) % (BODY_SPREAD + 1));
  return paddedBody({ orderId: `order-${String(n).padStart(11, '0')}`, note: '' }, bytes);
}

/**
 * Adds `count` jobs built by `job(i)` through addMany, BATCH a call, several in flight; throws unless every one is
 * created.
 */
const addAll = (queue: Queue, count: number, job: (i: number) => object) =>
  addInBatches(queue, count, job, { batch: BATCH, inFlight: N.batchesInFlight });

/** A spread of i over [0, 1) that does not follow i (a prime stride), so consecutive adds are due far apart. */
const spread = (i: number, n: number) => ((i * 7919) % n) / n;

type ReadSlowlog = ReturnType<typeof slowlogReader>;

/** The bench's redis-server, its admin client, and the SLOWLOG reader. */
interface Bench {
  server: RedisProcess;
  admin: Redis;
  readSlowlog: ReadSlowlog;
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

const CANCEL_TOPIC = 'bench-cancel';
const GROUP = 'meeting-000001';

/**
 * Adds the group's jobs, due over the next hour, and the jobs of no group that keep the sweeper
 * and the claims busy; resolves when the group's were added and how many cancelGroup calls the
 * cancel takes (a step looks at CANCEL_GROUP_STEP members of a partition; the one that sees fewer
 * is the last).
 */
async function fillCancel(admin: Redis, q: Queue, partitions: number) {
  const addStart = Date.now();
  const addMs = await addAll(q, N.groupJobs, (i) => ({
    topic: CANCEL_TOPIC,
    id: `g-${String(i).padStart(9, '0')}`,
    group: GROUP,
    delay: spread(i, N.groupJobs) * HOUR_S,
    body: { i },
  }));
  console.log(
    `   partitions ${partitions}: ${fmt(N.groupJobs)} jobs of group ${GROUP} added in ${fmt(addMs / 1000, 1)} s`,
  );
  await addAll(q, N.backgroundJobs, (i) => ({
    topic: CANCEL_TOPIC,
    id: `bg-${String(i).padStart(9, '0')}`,
    delay: spread(i, N.backgroundJobs) * N.backgroundSeconds,
    body: { i },
  }));
  // the group's zsets in each partition: its key and `<key>#1`, `<key>#2`, ... (128 members each)
  const groupSize = async (p: number) => {
    const key = groupKey(p, CANCEL_TOPIC, GROUP, partitions);
    const keys = [key, ...(await scanKeys(admin, `${key}#*`))];
    return (await Promise.all(keys.map((k) => admin.zcard(k)))).reduce((a, b) => a + b, 0);
  };
  const perPartition = await Promise.all(Array.from({ length: partitions }, (_, p) => groupSize(p)));
  if (perPartition.reduce((a, b) => a + b, 0) !== N.groupJobs)
    throw new Error(`group zsets hold ${perPartition.join('+')}, not ${N.groupJobs}`);
  const expectedCalls = perPartition.reduce((sum, m) => sum + Math.floor(m / CANCEL_GROUP_STEP) + 1, 0);
  return { addStart, addMs, expectedCalls };
}

/** Pages of 100 of the group, one after another from its start, before anything changes. */
async function groupPages(b: Bench, q: Queue) {
  await logCommands(b.admin, 0, 10000);
  await q.listGroup(CANCEL_TOPIC, GROUP, { limit: 100 }); // the script's first call on this connection compiles it
  const pages: { ms: number; commands: number }[] = [];
  let cursor: string | undefined;
  for (let k = 0; k < N.pages; k++) {
    const row = await pageMs(
      b,
      () => q.listGroup(CANCEL_TOPIC, GROUP, { limit: 100, ...(cursor ? { cursor } : {}) }),
      Math.min(100, N.groupJobs - 100 * k),
    );
    pages.push(row);
    if (row.page.next === null) break;
    cursor = row.page.next;
  }
  await logCommands(b.admin, -1);
  return pageSummary(pages);
}

/** A claim of the loop: when it began, how long it took, and the ids of the group it handed out. */
interface Claim {
  began: number;
  ms: number;
  ids: string[];
}

/**
 * The sweeper and the fan-out: sweep, claim, ack what is not of the group; each claim notes when
 * it began. Runs until stopped.
 */
function backgroundLoop(worker: Queue) {
  const state = { claims: [] as Claim[], acked: 0, sweeps: 0, stop: false };
  const loop = (async () => {
    while (!state.stop) {
      const swept = await worker.engine.sweep();
      state.sweeps++;
      const began = performance.now();
      const jobs: ClaimedJob[] = await worker.engine.claim(CANCEL_TOPIC, 100, 10_000);
      const ms = performance.now() - began;
      state.claims.push({ began, ms, ids: jobs.filter((j) => j.id.startsWith('g-')).map((j) => j.id) });
      const acks = await Promise.all(
        jobs.filter((j) => j.id.startsWith('bg-')).map((j) => worker.engine.ack(CANCEL_TOPIC, j.id, j)),
      );
      state.acked += acks.filter((a) => a === 'done').length;
      if (jobs.length === 0 && !swept.more) await sleep(2); // nothing due: a sweeper would wait too
    }
  })();
  loop.catch(() => undefined); // awaited by stop; a failure must not go unhandled meanwhile
  return {
    state,
    async stop() {
      state.stop = true;
      await loop;
    },
  };
}

/** The cancel, with every command of N.slowlogUs or more logged while it runs; the loop goes on N.afterMs after. */
async function cancelUnderLoop(b: Bench, q: Queue, loop: ReturnType<typeof backgroundLoop>) {
  await sleep(500); // the loop is under way before the cancel begins
  await logCommands(b.admin, N.slowlogUs, 100000);
  await b.admin.call('SLOWLOG', 'RESET');
  const t0 = performance.now();
  const answer = await q.cancelGroup(CANCEL_TOPIC, GROUP);
  const answered = performance.now();
  const logged = await b.readSlowlog(b.admin);
  await logCommands(b.admin, -1);
  const answeredAt = Date.now();
  await sleep(N.afterMs);
  await loop.stop();
  return { t0, answer, answered, answeredAt, logged };
}

/** Every job of the group, read back through listGroup (pages of 500): how many in each state, and the wall time. */
async function readBack(q: Queue) {
  const states: Record<string, number> = {};
  let cursor: string | undefined;
  const pagesStart = performance.now();
  for (;;) {
    const page: { jobs: Job[]; next: string | null } = await q.listGroup(CANCEL_TOPIC, GROUP, {
      limit: 500,
      ...(cursor ? { cursor } : {}),
    });
    for (const job of page.jobs) states[job.state] = (states[job.state] ?? 0) + 1;
    if (page.next === null) break;
    cursor = page.next;
  }
  return { states, ms: performance.now() - pagesStart };
}

/** The cancelGroup calls logged, with the steps under the threshold counted as 0 ms. */
function cancelCalls(fromClients: readonly Logged[], expected: number) {
  const cancelMs = fromClients.filter((l) => l.name.startsWith('cancelGroup')).map((l) => l.us / 1000);
  // the steps under the threshold (a partition's last, which finds few or no members) count as under it
  const all = sortNum([...cancelMs, ...new Array<number>(Math.max(0, expected - cancelMs.length)).fill(0)]);
  return {
    expected,
    logged: cancelMs.length,
    p50Ms: round(quantile(all, 0.5, 0)),
    p99Ms: round(quantile(all, 0.99, 0)),
    maxMs: round(all.at(-1) ?? 0),
  };
}

/** The loop's claims before, during and after the cancel, and their wall times. */
function claimsAround(claims: readonly Claim[], t0: number, answered: number) {
  const after = claims.filter((c) => c.began > answered);
  const during = claims.filter((c) => c.began > t0 && c.began <= answered);
  const wall = (rows: readonly Claim[]) => ({
    count: rows.length,
    p50Ms: round(median(rows.map((c) => c.ms)), 1),
    maxMs: round(Math.max(0, ...rows.map((c) => c.ms)), 1),
  });
  return {
    claimedBefore: new Set(claims.filter((c) => c.began <= answered).flatMap((c) => c.ids)).size,
    claimedAfter: after.flatMap((c) => c.ids).length,
    claimsAfter: after.length,
    claimsDuring: during.length,
    claimWall: { during: wall(during), after: wall(after) },
  };
}

/** Step 1 with `partitions`: the group added, paged, cancelled under the loop, and read back. */
async function cancelRun(b: Bench, partitions: number): Promise<CancelRun> {
  // ttr: claimed jobs of the group stay running through the run
  const topics = { [CANCEL_TOPIC]: { concurrency: 10_000, ttr: 900 } };
  const cancelRedis = connect(b.server);
  const loopRedis = connect(b.server);
  try {
    await b.admin.flushall();
    await b.admin.call('MEMORY', 'PURGE');
    const q = queueOn(cancelRedis, topics, { partitions });
    const { addStart, addMs, expectedCalls } = await fillCancel(b.admin, q, partitions);
    const listGroupPage = await groupPages(b, q);
    const loop = backgroundLoop(queueOn(loopRedis, topics, { partitions }));
    const c = await cancelUnderLoop(b, q, loop);
    const due = (i: number) => addStart + spread(i, N.groupJobs) * HOUR_S * 1000 <= c.answeredAt;
    const fromClients = c.logged.filter((l) => l.fromClient && l.name !== 'SLOWLOG');
    const slowest = fromClients.reduce<Logged | null>((x, y) => (x && x.us >= y.us ? x : y), null);
    const claims = claimsAround(loop.state.claims, c.t0, c.answered);
    const back = await readBack(q);
    return {
      partitions,
      groupJobs: N.groupJobs,
      addMs,
      cancelMs: c.answered - c.t0,
      answer: c.answer,
      dueByAnswer: Array.from({ length: N.groupJobs }, (_, i) => i).filter(due).length,
      cancelCalls: cancelCalls(fromClients, expectedCalls),
      slowest: slowest ? { ms: round(slowest.us / 1000), name: slowest.name } : null,
      loggedCommands: c.logged.length,
      slowlogFull: c.logged.length >= 100_000,
      ...claims,
      backgroundAcked: loop.state.acked,
      sweeps: loop.state.sweeps,
      groupStatesAfter: back.states,
      countsHold: c.answer.cancelled + c.answer.running === N.groupJobs && c.answer.running === claims.claimedBefore,
      listGroupPage,
      listGroupPagesMs: back.ms,
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
  b: Bench,
  page: () => Promise<T>,
  expect: number,
): Promise<{ ms: number; commands: number; page: T }> {
  await b.admin.call('SLOWLOG', 'RESET');
  const result = await page();
  const logged = (await b.readSlowlog(b.admin)).filter((l) => l.fromClient && l.name !== 'SLOWLOG');
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

async function listingRun(b: Bench, queue: Queue, topic: string, jobs: number, setupMs: number): Promise<PageStats> {
  const limit = 100;
  await queue.listJobs(topic, { state: 'delayed', limit }); // the script's first call on this connection compiles it
  const first: { ms: number; commands: number }[] = [];
  const middle: { ms: number; commands: number }[] = [];
  const delayed = topicKeys(0, topic, 1).delayed;
  for (let k = 0; k < N.pages; k++) {
    first.push(await pageMs(b, () => queue.listJobs(topic, { state: 'delayed', limit }), Math.min(limit, jobs)));
    // from the due time of a job around the middle: 40% to 60% of the way, a different one each page
    const rank = Math.floor(jobs * (0.4 + (0.2 * k) / N.pages));
    const [, score] = await b.admin.zrange(delayed, rank, rank, 'WITHSCORES');
    const from = Number(score);
    const left = await b.admin.zcount(delayed, from, '+inf');
    middle.push(await pageMs(b, () => queue.listJobs(topic, { state: 'delayed', limit, from }), Math.min(limit, left)));
  }
  return { jobs, setupMs, first: pageSummary(first), middle: pageSummary(middle) };
}

type Listings = { big: PageStats; small: PageStats };

async function listings(b: Bench): Promise<Listings> {
  const big = 'bench-list-big';
  const small = 'bench-list-small';
  const redis = connect(b.server);
  try {
    await b.admin.flushall();
    await b.admin.call('MEMORY', 'PURGE');
    const queue = queueOn(redis, { [big]: {}, [small]: {} });
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
    await logCommands(b.admin, 0, 10000);
    const bigStats = await listingRun(b, queue, big, N.listJobs, bigMs);
    const smallStats = await listingRun(b, queue, small, N.listSmallJobs, smallMs);
    await logCommands(b.admin, -1);
    await b.admin.call('SLOWLOG', 'RESET');
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

const MEMORY_TOPIC = 'bench-mem';

/** used_memory before and after adding N.memoryJobs jobs of groups of `groupSize` (null: no group), each settled. */
async function memoryFill(admin: Redis, queue: Queue, groupSize: number | null) {
  const groupOf = (i: number) =>
    groupSize === null ? undefined : `meeting-${String(Math.floor(i / groupSize)).padStart(6, '0')}`;
  const job = (i: number) => ({
    topic: MEMORY_TOPIC,
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
  await addAll(queue, N.memoryJobs, job);
  await sleep(N.settleMs);
  const after = await usedMemory(admin);
  const groups = groupSize === null ? 0 : new Set(Array.from({ length: N.memoryJobs }, (_, i) => groupOf(i)!)).size;
  return { before, after, groups };
}

/** Where the bytes are: MEMORY USAGE per key kind, the groups' keys and encodings, a record's mean length. */
async function memoryKeys(admin: Redis, grouped: boolean) {
  const jobs = N.memoryJobs;
  const k = topicKeys(0, MEMORY_TOPIC, 1);
  // every zset of every group: its key, and the further ones of a group past 128 jobs (`<key>#n`)
  const groupKeys = grouped ? await scanKeys(admin, `${groupKey(0, MEMORY_TOPIC, '', 1)}*`) : [];
  // the buckets of small groups (`<jobs key>#gb<n>`, see lua/includes/buckets.lua)
  const bucketKeys = grouped ? await scanKeys(admin, `${k.jobs}#gb*`) : [];
  // mean record length over up to 1000 jobs picked at random (HRANDFIELD)
  const sample = ((await admin.call('HRANDFIELD', k.jobs, '1000')) as string[]).filter((f) => f.startsWith('order-'));
  const lengths = await Promise.all(sample.map((f) => admin.hstrlen(k.jobs, f)));
  return {
    jobsHash: round((await memoryUsage(admin, [k.jobs])) / jobs, 1),
    delayedZset: round((await memoryUsage(admin, [k.delayed])) / jobs, 1),
    groupZsets: round((await memoryUsage(admin, groupKeys)) / jobs, 1),
    groupBuckets: round((await memoryUsage(admin, bucketKeys)) / jobs, 1),
    groupZsetCount: groupKeys.length,
    groupEncoding: await encodings(admin, groupKeys, fmt),
    groupBucketCount: bucketKeys.length,
    bucketEncoding: await encodings(admin, bucketKeys, fmt),
    recordBytes: round(lengths.reduce((a, b) => a + b, 0) / Math.max(1, lengths.length), 1),
  };
}

async function memoryRun(b: Bench, groupSize: number | null): Promise<MemoryRow> {
  const redis = connect(b.server);
  const jobs = N.memoryJobs;
  try {
    const queue = queueOn(redis, { [MEMORY_TOPIC]: {} });
    const fill = await memoryFill(b.admin, queue, groupSize);
    return {
      label:
        groupSize === null ? 'no group' : groupSize >= jobs ? `one group of ${fmt(jobs)}` : `groups of ${groupSize}`,
      groupSize,
      groups: fill.groups,
      bytesPerJob: round((fill.after - fill.before) / jobs, 1),
      ...(await memoryKeys(b.admin, groupSize !== null)),
    };
  } finally {
    redis.disconnect();
    await b.admin.flushall();
  }
}

// ---------------------------------------------------------------------------------------------
// the steps, the table and the JSON line

async function memoryStep(b: Bench): Promise<MemoryRow[]> {
  const memory: MemoryRow[] = [];
  for (const size of [null, ...GROUP_SIZES, N.memoryJobs]) {
    const row = await memoryRun(b, size);
    memory.push(row);
    console.log(
      `3. memory, ${row.label}: ${fmt(row.bytesPerJob, 1)} bytes/job (${fmt(row.groups)} groups${row.groupEncoding ? ` in ${fmt(row.groupZsetCount)} zsets: ${row.groupEncoding}` : ''}${row.bucketEncoding ? ` in ${fmt(row.groupBucketCount)} buckets: ${row.bucketEncoding}` : ''}); ` +
        `MEMORY USAGE per job: jobs hash ${fmt(row.jobsHash, 1)}, delayed zset ${fmt(row.delayedZset, 1)}, group zsets ${fmt(row.groupZsets, 1)}, group buckets ${fmt(row.groupBuckets, 1)}; mean record ${fmt(row.recordBytes, 1)} bytes; load average ${load()}`,
    );
  }
  return memory;
}

async function cancelStep(b: Bench): Promise<CancelRun[]> {
  const cancels: CancelRun[] = [];
  for (const partitions of [1, 4]) {
    const r = await cancelRun(b, partitions);
    printCancel(r);
    cancels.push(r);
  }
  return cancels;
}

async function listStep(b: Bench): Promise<Listings> {
  const list = await listings(b);
  for (const [name, s] of [
    ['big', list.big],
    ['small', list.small],
  ] as const) {
    console.log(
      `2. listJobs delayed, limit 100, ${fmt(s.jobs)} jobs (${name}): first page median ${fmt(s.first.p50Ms, 3)} ms (slowest ${fmt(s.first.maxMs, 3)}), middle (from) median ${fmt(s.middle.p50Ms, 3)} ms (slowest ${fmt(s.middle.maxMs, 3)}); at most ${Math.max(s.first.commands, s.middle.commands)} commands a page`,
    );
  }
  return list;
}

function cancelRows(r: CancelRun): Row[] {
  const p = `cancel ${fmt(r.groupJobs)}-job group, partitions ${r.partitions}`;
  return [
    [
      `${p}: wall time`,
      `${fmt(r.cancelMs)} ms (cancelled ${fmt(r.answer.cancelled)}, running ${fmt(r.answer.running)})`,
      '',
    ],
    [
      `  cancelGroup calls (${r.cancelCalls.expected}): median / p99 / slowest`,
      `${fmt(r.cancelCalls.p50Ms, 2)} / ${fmt(r.cancelCalls.p99Ms, 2)} / ${fmt(r.cancelCalls.maxMs, 2)} ms`,
      `≤ ${TARGETS.maxCommandMs} ms: ${verdict(r.cancelCalls.maxMs <= TARGETS.maxCommandMs)}`,
    ],
    [
      '  slowest command while it ran',
      r.slowest ? `${fmt(r.slowest.ms, 2)} ms (${r.slowest.name})` : `none ≥ ${N.slowlogUs} µs`,
      `≤ ${TARGETS.maxCommandMs} ms: ${verdict((r.slowest?.ms ?? 0) <= TARGETS.maxCommandMs)}`,
    ],
    [
      '  loop claim calls begun during / after the cancel: median wall',
      `${fmt(r.claimWall.during.count)} calls ${fmt(r.claimWall.during.p50Ms, 1)} ms / ${fmt(r.claimWall.after.count)} calls ${fmt(r.claimWall.after.p50Ms, 1)} ms`,
      '',
    ],
    [
      '  group jobs claimed before / after the answer',
      `${fmt(r.claimedBefore)} / ${fmt(r.claimedAfter)} (${fmt(r.claimsAfter)} claims after)`,
      `after = 0: ${verdict(r.claimedAfter === 0)}`,
    ],
    ['  answer: cancelled + running = jobs, running = claimed before', r.countsHold ? 'holds' : 'DOES NOT HOLD', ''],
    [
      '  listGroup page of 100 (before the cancel): median / slowest',
      `${fmt(r.listGroupPage.p50Ms, 3)} / ${fmt(r.listGroupPage.maxMs, 3)} ms`,
      `median ≤ ${TARGETS.pageMs} ms: ${verdict(r.listGroupPage.p50Ms <= TARGETS.pageMs)}`,
    ],
  ];
}

function listRows(list: Listings): Row[] {
  return (
    [
      ['first page', 'first'],
      ['middle page (from)', 'middle'],
    ] as const
  ).flatMap(([name, s]): Row[] => [
    [
      `listJobs delayed ${name}, ${fmt(list.big.jobs)} jobs: median / slowest`,
      `${fmt(list.big[s].p50Ms, 3)} / ${fmt(list.big[s].maxMs, 3)} ms`,
      `median ≤ ${TARGETS.pageMs} ms: ${verdict(list.big[s].p50Ms <= TARGETS.pageMs)}`,
    ],
    [
      `listJobs delayed ${name}, ${fmt(list.small.jobs)} jobs: median / slowest`,
      `${fmt(list.small[s].p50Ms, 3)} / ${fmt(list.small[s].maxMs, 3)} ms`,
      `median ≤ ${TARGETS.pageMs} ms: ${verdict(list.small[s].p50Ms <= TARGETS.pageMs)}`,
    ],
    [`  ratio of medians, ${name}`, `${fmt(list.big[s].p50Ms / list.small[s].p50Ms, 2)}×`, '≈ 1'],
  ]);
}

function memoryRows(memory: readonly MemoryRow[]): Row[] {
  const base = memory.find((m) => m.groupSize === null);
  return memory.map((m) => {
    const extra = base && m !== base ? m.bytesPerJob - base.bytesPerJob : null;
    return [
      `memory per job, ${m.label}`,
      `${fmt(m.bytesPerJob, 1)} bytes${extra === null ? '' : ` (${extra >= 0 ? '+' : ''}${fmt(extra, 1)})`}`,
      extra === null ? '' : `≤ +${TARGETS.groupBytesPerJob}: ${verdict(extra <= TARGETS.groupBytesPerJob)}`,
    ];
  });
}

function resultsOf(cancels: CancelRun[], list: Listings | undefined, memory: MemoryRow[]) {
  const base = memory.find((m) => m.groupSize === null);
  return {
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
  };
}

async function main(): Promise<void> {
  const started = new Date();
  const loadAtStart = loadavg();
  await withRedis(async (server, admin) => {
    const machine = {
      ...(await machineOf(admin, server.pid)),
      redisNice: reniceRedis(server.pid),
      zsetMaxListpackEntries: Number(((await admin.config('GET', 'zset-max-listpack-entries')) as string[])[1]),
    };
    const reniced = machine.redisNice === null ? '' : ` (reniced to ${machine.redisNice})`;
    console.log(`${machineLine(machine)}${reniced}; load average ${load()}`);
    console.log(`counts: ${JSON.stringify(N)}`);
    const b: Bench = { server, admin, readSlowlog: slowlogReader() };
    await logCommands(admin, -1); // on only while a step measures
    const memory = runs(ONLY, 'memory') ? await memoryStep(b) : [];
    const cancels = runs(ONLY, 'cancel') ? await cancelStep(b) : [];
    const list = runs(ONLY, 'list') ? await listStep(b) : undefined;
    printTable([...cancels.flatMap(cancelRows), ...(list ? listRows(list) : []), ...memoryRows(memory)]);
    printJson({
      bench: 'groups',
      at: started.toISOString(),
      machine,
      loadAverage: { start: loadAtStart.map((l) => round(l, 2)), end: loadavg().map((l) => round(l, 2)) },
      counts: N,
      results: resultsOf(cancels, list, memory),
      targets: TARGETS,
    });
  });
}

runBench(main);
