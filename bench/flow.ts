/**
 * Flow-control benchmark (issue 32; not a test): a flow topic's per-key limits, fairness, cost and
 * pause, measured on this machine. Each scenario starts its own redis-server (nothing persisted)
 * and stops it by PID, also on error; the engine, and in scenario 1 the three Lambda roles, run in
 * this process. Prints one Markdown table per scenario (measure, result, goal: met or MISSED) and
 * one JSON line. Exits 1 on an error only, never on a missed goal.
 *
 *   npm run bench:flow                         # every scenario, about 3 minutes
 *   npm run bench:flow -- exact pause          # some of them (or BENCH_FLOW=exact,pause)
 *   BENCH_SECONDS=600 npm run bench:flow -- exact   # the issue's 10-minute version of scenario 1
 *
 * 1. exact: a flow topic (per key: concurrency 3, rate 20/s burst 2; combined cap 40; ttr 1 s),
 *    BENCH_FLOW_KEYS (20) keys, 5 of them pinned (setFlowKey) to 200/s burst 5 so that their
 *    concurrency binds. Jobs are added all along, each due 50–300 ms after its add, keeping 30
 *    unfinished per key; the sweeper, the fan-out and the topic handler run in this process (as in
 *    bench:steady), the handler taking 3–100 ms a job. BENCH_KILL_PERCENT (5) of the handler
 *    invocations are "killed": they start their job and never answer (as a SIGKILLed Lambda), so
 *    the attempt ends by its ttr. For BENCH_SECONDS (30), a sampler reads every key's running count
 *    (engine.flowKey) every 10 ms on the connection the claims use, beside this process's ledger of
 *    attempts claimed and not ended (an attempt counts from its claim's answer to its ack's
 *    sending, a killed one until its claim time + ttr: the ledger never counts more than run).
 *    Reported: samples over a key's concurrency (Redis's count, the ledger's), over the combined
 *    cap; starts beyond the key's rate and burst in any span (GCRA's bound: n starts in a span of
 *    d ms need d ≥ (n − burst) · per/count; the starts are the claims' times on the Redis clock);
 *    and ghost slots: from each kill to when Redis ended the attempt (timed out: the same script
 *    returns its key's slot), read off the job's record (its updatedAt; the job is read every
 *    20 ms from 50 ms before the ttr runs out), beside the sampler's bound (the first sample
 *    where the key's Redis count, less the ledger's live attempts, no longer holds it; an ack in
 *    flight or a fresh claim leaves a sample unsure, so the bound errs long), and samples where
 *    Redis counted more than the ledger with no kill pending, 30 ms or longer.
 * 2. fair: BENCH_FAIR_HOT (100,000) ready jobs of one hot key, then BENCH_FAIR_COLD_KEYS (99) cold
 *    keys of 10 jobs each falling due 1 s later (10 ms apart), drained by 5 claim loops
 *    (claimStarted of 10, acked at once) under a combined cap of 50; each cold key's first start
 *    minus its due time. The same on a plain topic (no flow) for contrast.
 * 3. cheap: BENCH_CHEAP_JOBS (100,000) jobs added, swept, claimed, started and acked, on a plain
 *    topic, on a flow topic (100 keys, per-key limits that never bind) and on a flow topic with no
 *    per-key limits, in calls of 100 jobs and, half as many jobs, of one job (32 in flight): the
 *    three on redis-servers of their own side by side, in BENCH_CHEAP_ROUNDS (50) rounds of a
 *    chunk of jobs on each path in turn (so the VM's drift falls on all three alike): Redis CPU
 *    (INFO cpu before and after each chunk, user + sys, and each alone) and commands per job (INFO
 *    commandstats: the commands the scripts run included), and the flow topic's ratio to the plain
 *    one, over all rounds and round by round. Memory: BENCH_MEMORY_KEYS (100,000) ready jobs
 *    on a plain topic, on a flow topic under one key, and under as many distinct keys (INFO memory
 *    used_memory); bytes per active key. Then the distinct keys' jobs, and the plain ones, are all
 *    claimed and acked (retention 0): used_memory against before, and what is left of the keys'
 *    state (the #flow hash, the ring of lanes, the pace waits, lane keys).
 * 4. pause: jobs flowing on a flow topic (20 keys, concurrency 2 each, 4 claim loops), BENCH_PAUSE_CYCLES
 *    (100) pauses and resumes of the topic (30 ms each), then as many of one key (setFlowKey
 *    paused); TIME is read before each pause, right after it answers and before each resume.
 *    Counted: starts (claim times) after the pause answered (a later millisecond) and before the
 *    resume was sent (an earlier millisecond).
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis, type Cluster } from 'ioredis';
import { Engine, type ClaimedJob, type EngineOptions, type NewJob } from '../lib/engine';
import type { Invoker } from '../lib/platform/lambda';
import { createRuntime, type Runtime } from '../lib/platform/runtime';
import { runFanout, type HandlerEvent } from '../lib/workers/fanout';
import { topicHandler } from '../lib/workers/handler';
import { runSweeper } from '../lib/workers/sweeper';
import { resolveQueueConfig, type QueueConfig, type TopicInput } from '../lib/core/queue-config';
import { startRedis, type RedisProcess } from '../test/support/redis';
import { describeMachine, envInt, fmt, info, printTable, round, usedMemory } from './env';
import { addSweepClaimAck } from './workload';
import { topicKeys, engineContext } from '../lib/testing';

const SCENARIOS = ['exact', 'fair', 'cheap', 'pause'] as const;
type Scenario = (typeof SCENARIOS)[number];

const N = {
  seconds: envInt('BENCH_SECONDS', 30),
  keys: envInt('BENCH_FLOW_KEYS', 20),
  killPercent: envInt('BENCH_KILL_PERCENT', 5),
  fairHot: envInt('BENCH_FAIR_HOT', 100_000),
  fairColdKeys: envInt('BENCH_FAIR_COLD_KEYS', 99),
  cheapJobs: envInt('BENCH_CHEAP_JOBS', 100_000),
  memoryKeys: envInt('BENCH_MEMORY_KEYS', 100_000),
  pauseCycles: envInt('BENCH_PAUSE_CYCLES', 100),
};
const ROUNDS = envInt('BENCH_CHEAP_ROUNDS', 50); // rounds of the cost comparison: a chunk of jobs on each path in turn
const BY = 'bench'; // the API key's name the jobs are added with (updatedBy)
const BODY = JSON.stringify({ order: 'x'.repeat(36) }); // 50 bytes

type Row = [measure: string, result: string, goal: string];
interface Section {
  name: Scenario;
  rows: Row[];
  json: Record<string, unknown>;
}

const verdict = (ok: boolean, goal: string) => `${goal}: ${ok ? 'met' : 'MISSED'}`;
const quantile = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const sorted = (xs: Iterable<number>) => [...xs].sort((a, b) => a - b);
const load = () => loadavg().map((l) => round(l, 2));
/** The key of a job of this bench: its id is `<key>.<n>`. */
const keyOf = (id: string) => id.slice(0, id.lastIndexOf('.'));
const keyNames = (n: number, prefix = 'k') =>
  Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(String(n - 1).length, '0')}`);

/** Redis TIME in epoch ms, with its microseconds. */
async function redisNow(redis: Redis | Cluster): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Number(us) / 1000;
}

/** Redis's clock less this host's (localMs), from the TIME of the shortest of 20 round trips, taken in its middle. */
async function clockOffset(redis: Redis | Cluster): Promise<number> {
  let best = { rtt: Infinity, offset: 0 };
  for (let i = 0; i < 20; i++) {
    const before = localMs();
    const now = await redisNow(redis);
    const after = localMs();
    if (after - before < best.rtt) best = { rtt: after - before, offset: now - (before + after) / 2 };
  }
  return best.offset;
}

/** This host's clock, epoch ms with fractions (monotonic within the run). */
const localMs = () => performance.timeOrigin + performance.now();

/** A validated job as the API would pass it: due `when`, of flow key `key` (none on a plain topic). */
function newJob(engine: Engine, topic: string, id: string, when: NewJob['when'], key?: string): NewJob {
  return {
    topic,
    id,
    partition: engine.partitionOf(topic, id),
    when,
    body: BODY,
    ...(key === undefined ? {} : { key }),
  };
}

/** Adds jobs in calls of `per`; throws if any is refused. */
async function addAll(engine: Engine, jobs: readonly NewJob[], per = 500): Promise<void> {
  for (let i = 0; i < jobs.length; i += per) {
    const { results } = await engine.write(jobs.slice(i, i + per), 'add', BY);
    const refused = results.find((r) => r.status !== 'created');
    if (refused) throw new Error(`add refused: ${refused.status} ${JSON.stringify(refused.job?.id)}`);
  }
}

/** Sweeps until nothing more is due now. */
async function sweepAll(engine: Engine): Promise<void> {
  for (let r = await engine.sweep(); r.more; r = await engine.sweep());
}

/** Sweeps every `everyMs` (at once when a sweep hit its limit) until `stopped()`. */
async function sweepLoop(engine: Engine, stopped: () => boolean, everyMs = 5): Promise<void> {
  while (!stopped()) {
    const r = await engine.sweep();
    if (!r.more) await sleep(everyMs);
  }
}

/** Runs `fn` on a redis-server of its own and a client, both stopped after (also on error). */
async function withRedis<T>(fn: (server: RedisProcess, redis: Redis) => Promise<T>): Promise<T> {
  const server = await startRedis();
  const redis = new Redis(server.url, { maxRetriesPerRequest: null });
  try {
    return await fn(server, redis);
  } finally {
    redis.disconnect();
    await server.stop();
  }
}

const engineOn = (redis: Redis, topics: Record<string, TopicInput>, retention?: number) =>
  new Engine(redis, resolveQueueConfig({ topics, ...(retention === undefined ? {} : { retention }) }));

// ---------------------------------------------------------------------------------------------
// 1. exact

/** One attempt as this process saw it; times on the Redis clock (ms). */
interface Attempt {
  key: string;
  /** The job and its attempt number. */
  id: string;
  attempt: number;
  /** Claim time (the claim script's clock, whole ms). */
  at: number;
  /**
   * When this process sent its ack, fail or release (the end happened after), and got the answer (the end happened
   * before).
   */
  endSent?: number;
  endAnswered?: number;
  /** When its handler was killed (after its start answered); it then holds its slot until Redis times it out. */
  killedAt?: number;
  /** The first sample that shows Redis no longer counts it (its reply's time). */
  freedAt?: number;
  /**
   * Killed: when Redis ended it (timed out; the same script returns its key's slot), read off the
   * job's record (updatedAt, exact) or, when the job had moved on before a read, that read's
   * answer (a bound: `endedBound`).
   */
  endedAt?: number;
  endedBound?: boolean;
}

/** Every attempt claimed through the TrackedEngines, and the claim times per key. */
class Ledger {
  readonly byClaim = new Map<string, Attempt>();
  readonly byKey = new Map<string, Attempt[]>();
  done = 0;
  failed = 0;
  readonly doneByKey = new Map<string, number>();
  readonly killed: Attempt[] = [];
  constructor(readonly now: () => number) {}

  claimed(jobs: readonly ClaimedJob[]): void {
    for (const j of jobs) {
      const a: Attempt = { key: keyOf(j.id), id: j.id, attempt: j.attempt, at: j.runAt + j.latenessMs };
      this.byClaim.set(j.claim, a);
      const list = this.byKey.get(a.key) ?? [];
      list.push(a);
      this.byKey.set(a.key, list);
    }
  }

  /** The end of attempt `claim` is sent now; returns what to call when it is answered. */
  ending(claim: string): () => void {
    const a = this.byClaim.get(claim);
    if (!a || a.endSent !== undefined || a.killedAt !== undefined) return () => undefined;
    a.endSent = this.now();
    return () => (a.endAnswered = this.now());
  }

  /** Attempt `claim` was found ended (a start refused it): at some time since its claim. */
  endedBefore(claim: string): void {
    const a = this.byClaim.get(claim);
    if (!a || a.endSent !== undefined || a.killedAt !== undefined) return;
    a.endSent = a.at;
    a.endAnswered = this.now();
  }

  kill(claim: string): void {
    const a = this.byClaim.get(claim);
    if (a && a.endSent === undefined) {
      a.killedAt = this.now();
      this.killed.push(a);
    }
  }
}

/**
 * An engine that tells the ledger of every claim, and of every end of an attempt (ack, fail, release, a start that
 * found it ended).
 */
class TrackedEngine extends Engine {
  constructor(
    private readonly ledger: Ledger,
    redis: ConstructorParameters<typeof Engine>[0],
    config: QueueConfig,
    options?: EngineOptions,
  ) {
    super(redis, config, options);
    const { claimPaced, claimStarted, start, ack, fail, release } = this;
    this.claimPaced = async (topic, count, maxRunning, maxBytes) => {
      const paced = await claimPaced.call(this, topic, count, maxRunning, maxBytes);
      this.ledger.claimed(paced.jobs);
      return paced;
    };
    this.claimStarted = async (topic, count) => {
      const jobs = await claimStarted.call(this, topic, count);
      this.ledger.claimed(jobs);
      return jobs;
    };
    this.start = async (topic, jobs) => {
      const live = await start.call(this, topic, jobs);
      jobs.forEach((j, i) => {
        if (!live[i]) this.ledger.endedBefore(j.claim);
      });
      return live;
    };
    this.ack = async (topic, id, attempt) => {
      const answered = this.ledger.ending(attempt.claim);
      const outcome = await ack.call(this, topic, id, attempt);
      answered();
      if (outcome === 'done') {
        this.ledger.done += 1;
        this.ledger.doneByKey.set(keyOf(id), (this.ledger.doneByKey.get(keyOf(id)) ?? 0) + 1);
      }
      return outcome;
    };
    this.fail = async (topic, id, attempt, error, retryAfterMs) => {
      const answered = this.ledger.ending(attempt.claim);
      this.ledger.failed += 1;
      const outcome = await fail.call(this, topic, id, attempt, error, retryAfterMs);
      answered();
      return outcome;
    };
    this.release = async (jobs, reason) => {
      const answered = jobs.map((j) => this.ledger.ending(j.claim));
      const n = await release.call(this, jobs, reason);
      for (const f of answered) f();
      return n;
    };
  }
}

/**
 * Starts that break a GCRA pace of `count` per `perMs` with `burst`: n starts in a span of d ms
 * need d ≥ (n − burst)·T, T = perMs / count. With u_k = t_k − k·T (k-th start in time order) that
 * is u_j ≥ u_i − (burst − 1)·T for every i < j: one pass with the running maximum of u.
 */
function paceCheck(starts: readonly number[], rate: { count: number; perMs: number; burst: number }) {
  const t = sorted(starts);
  const T = rate.perMs / rate.count;
  let maxU = -Infinity;
  let violations = 0;
  let worstMs = 0;
  t.forEach((at, k) => {
    const u = at - k * T;
    const short = maxU - (rate.burst - 1) * T - u;
    if (short > 1e-6) {
      violations += 1;
      worstMs = Math.max(worstMs, short);
    }
    maxU = Math.max(maxU, u);
  });
  let busiest = 0;
  for (let j = 0, i = 0; j < t.length; j++) {
    while (t[j]! - t[i]! >= 1000) i++;
    busiest = Math.max(busiest, j - i + 1);
  }
  return { violations, worstMs, busiest, allowed: rate.burst + Math.floor(999 / T) };
}

/** One key's samples: Redis read its running count at some time in [sent, answered] (Redis clock). */
interface Samples {
  sent: number[];
  answered: number[];
  running: number[];
}

const MARGIN_MS = 1; // the clock offset's error and the claim time's whole milliseconds, counted against the claim

/**
 * Reads one key's samples against the ledger, erring on no side: an attempt is surely counted by
 * Redis at a read when surely claimed before it and its end surely sent after; surely not when
 * claimed after it or its end answered before it. Killed attempts Redis still counts (ghosts) are
 * the rest of its count: at most `running − surely counted` live ones; when that is less than the
 * ghosts pending, the oldest are freed (at the read's answer: the ghost times err long). Samples
 * where Redis counts more than every attempt that may be counted are a slot held by nothing.
 * Also: the most attempts surely running at once by the ledger alone (killed ones until their
 * claim time + ttr), at any instant.
 */
function readKey(attempts: readonly Attempt[], s: Samples, ttrMs: number) {
  const list = [...attempts].sort((x, y) => x.at - y.at);
  let next = 0;
  let open: Attempt[] = [];
  let leakSamples = 0;
  let leakRun = 0;
  let longestLeak = 0;
  for (let i = 0; i < s.running.length; i++) {
    const a = s.sent[i]!;
    const b = s.answered[i]!;
    while (next < list.length && list[next]!.at - MARGIN_MS <= b) open.push(list[next++]!);
    // an attempt surely over before this read is over for every later one
    open = open.filter(
      (x) => !(x.endAnswered !== undefined && x.endAnswered + MARGIN_MS < a) && x.freedAt === undefined,
    );
    const before = (x: Attempt) => x.at + 1 + MARGIN_MS <= a;
    let sure = 0;
    let maybe = 0;
    const ghosts: Attempt[] = [];
    let ghostsMaybe = 0;
    for (const x of open) {
      if (x.killedAt !== undefined) {
        ghostsMaybe += 1;
        if (before(x)) ghosts.push(x);
        continue;
      }
      maybe += 1;
      if (before(x) && (x.endSent === undefined || x.endSent - MARGIN_MS > b)) sure += 1;
    }
    const r = s.running[i]!;
    const ghostsAtMost = r - sure;
    if (ghostsAtMost < ghosts.length)
      for (const g of ghosts.slice(0, ghosts.length - Math.max(0, ghostsAtMost))) g.freedAt = b;
    if (r - maybe > ghostsMaybe) {
      leakSamples += 1;
      leakRun += 1;
      longestLeak = Math.max(longestLeak, leakRun);
    } else leakRun = 0;
  }
  // the ledger alone: intervals surely running, [claim + 1 ms, end sent] or, killed, [claim + 1 ms, claim + ttr]
  const edges: [number, number][] = [];
  for (const x of attempts) {
    const end = x.killedAt !== undefined ? x.at + ttrMs : (x.endSent ?? Infinity) - MARGIN_MS;
    const start = x.at + 1 + MARGIN_MS;
    if (end > start) edges.push([start, 1], [end, -1]);
  }
  edges.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let now = 0;
  let most = 0;
  for (const [, d] of edges) most = Math.max(most, (now += d));
  return { leakSamples, longestLeak, mostByLedger: most };
}

/** Runs `fn` with the roles' metric lines (CloudWatch EMF on stdout) left out of this bench's output. */
async function withoutMetrics<T>(fn: () => Promise<T>): Promise<T> {
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: never[]) =>
    typeof chunk === 'string' && chunk.startsWith('{"_aws"')
      ? true
      : write(chunk, ...rest)) as typeof process.stdout.write;
  try {
    return await fn();
  } finally {
    process.stdout.write = write;
  }
}

async function exact(): Promise<Section> {
  const TOPIC = 'flow';
  const ttrS = 1;
  const cap = 40;
  const perKey = { concurrency: 3, rate: { count: 20, per: 1, burst: 2 } };
  const fastRate = { count: 200, perMs: 1000, burst: 5 };
  const keys = keyNames(N.keys);
  const fast = new Set(keys.slice(0, Math.min(5, Math.floor(keys.length / 4))));
  const backlog = 30; // unfinished jobs kept per key
  const server = await startRedis();
  const roles = new Set<Promise<unknown>>();
  const track = (p: Promise<unknown>) => {
    roles.add(p);
    void p.finally(() => roles.delete(p)).catch(() => undefined);
  };
  let base: Runtime | undefined;
  let stopped = false;
  try {
    base = createRuntime({
      DQ_CONFIG: JSON.stringify({
        topics: {
          [TOPIC]: {
            handler: 'flowHandler',
            concurrency: cap,
            ttr: ttrS,
            maxAttempts: 10,
            backoff: { type: 'fixed', delay: 0.2 },
            flow: perKey,
          },
        },
      }),
      REDIS_URL: server.url,
      API_TOKEN: 't',
      WEBHOOK_SECRET: 's',
      DQ_FUNCTION_PREFIX: 'bench-',
      LOG_LEVEL: 'error',
    });
    const redis = base.redis;
    const config = base.config.queue;
    const offset = await clockOffset(redis);
    const redisMs = () => localMs() + offset;
    const ledger = new Ledger(redisMs);
    const ROLE_TIMEOUT_MS = { sweeper: 120_000, fanout: 60_000, handler: 60_000 };
    const kill = async (event: HandlerEvent) => {
      // a handler that starts its job and dies (SIGKILL): never acks, never fails
      const live = await rt.engine.start(event.topic, event.jobs);
      event.jobs.forEach((j, i) => live[i] && ledger.kill(j.claim));
    };
    const invoker: Invoker = {
      async invokeAsync(name, payload) {
        if (stopped && name !== 'flowHandler') return;
        const endsAt = Date.now() + (ROLE_TIMEOUT_MS[name as keyof typeof ROLE_TIMEOUT_MS] ?? ROLE_TIMEOUT_MS.handler);
        const remainingMs = () => endsAt - Date.now();
        const context = { awsRequestId: randomBytes(8).toString('hex'), getRemainingTimeInMillis: remainingMs };
        setImmediate(() => {
          const deps = { ...rt, timings: rt.config.timings, remainingMs };
          if (name === 'sweeper') track(runSweeper(deps));
          else if (name === 'fanout') track(runFanout(deps, payload as { token?: string }));
          else if (!stopped && Math.random() * 100 < N.killPercent) track(kill(payload as HandlerEvent));
          else track(handle(payload as HandlerEvent, context));
        });
      },
    };
    // every engine wakes the sweeper as the runtime's do (lib/platform/runtime.ts): a claim that
    // holds a key back by its pace must make a sweep look when the key may go again
    const wake = {
      horizonMs: base.config.timings.sweeperHorizonMs,
      startSweeper: () => invoker.invokeAsync('sweeper', { source: 'wake' }),
      onError: () => undefined,
    };
    const engine = new TrackedEngine(ledger, redis, config, { wake });
    const rt: Runtime = { ...base, engine, invoker };
    // each invocation with an engine of its own on the shared connection, as in bench:steady
    const handle = topicHandler(
      async () => {
        await sleep(3 + Math.random() * 97);
      },
      () => ({ ...rt, engine: new TrackedEngine(ledger, redis, config, { wake }) }),
    );
    for (const key of fast) await engine.setFlowKey(TOPIC, key, { rate: fastRate });

    // producer: keeps `backlog` unfinished jobs per key, each due 50–300 ms after its add
    const added = new Map<string, number>();
    let addedTotal = 0;
    let producing = true;
    const producer = (async () => {
      while (producing) {
        const jobs: NewJob[] = [];
        for (const key of keys) {
          const n = added.get(key) ?? 0;
          const want = Math.min(10, backlog - (n - (ledger.doneByKey.get(key) ?? 0)));
          for (let i = 0; i < want; i++)
            jobs.push(
              newJob(engine, TOPIC, `${key}.${n + i}`, { kind: 'd', ms: 50 + Math.floor(Math.random() * 250) }, key),
            );
          if (want > 0) added.set(key, n + want);
        }
        if (jobs.length > 0) await addAll(engine, jobs);
        addedTotal += jobs.length;
        await sleep(10);
      }
    })();

    // what Redis ran for 10 ms or more in the run (a stall would hold a killed attempt's slot)
    await redis.config('SET', 'slowlog-log-slower-than', '10000');
    await redis.slowlog('RESET');
    // sampler: every key's running count, every 10 ms, on the connection the claims and acks use
    const samples = new Map(keys.map((key) => [key, { sent: [], answered: [], running: [] } as Samples]));
    const limits = new Map<string, number>();
    let overRedis = 0;
    let mostOverRedis = 0;
    let overCombined = 0;
    let mostCombined = 0;
    let ticks = 0;
    let sampling = true;
    const samplingFrom = performance.now();
    const sampler = (async () => {
      while (sampling) {
        const tick = performance.now();
        const read = await Promise.all(
          keys.map(async (key) => {
            const sent = redisMs();
            const state = await engine.flowKey(TOPIC, key);
            return { key, state, sent, answered: redisMs() };
          }),
        );
        let combined = 0;
        for (const { key, state, sent, answered } of read) {
          const s = samples.get(key)!;
          s.sent.push(sent);
          s.answered.push(answered);
          s.running.push(state.running);
          const limit = state.limits.concurrency ?? Infinity;
          limits.set(key, limit);
          combined += state.running;
          if (state.running > limit) overRedis += 1;
          mostOverRedis = Math.max(mostOverRedis, state.running - limit);
        }
        if (combined > cap) overCombined += 1;
        mostCombined = Math.max(mostCombined, combined);
        ticks += 1;
        const wait = 10 - (performance.now() - tick);
        if (wait > 0) await sleep(wait);
      }
    })();

    // killed attempts' ends, off their jobs' records: from 50 ms before the ttr runs out, each
    // read every 20 ms until Redis has ended it (the sampler's count of a key can only bound it:
    // an ack in flight or a claim just made leaves a read unsure of which attempt it counts)
    let watching = true;
    let watchUntil = Infinity; // once the sampling is over: 10 s more for the last kills
    const watcher = (async () => {
      let ended = 0; // ledger.killed[0 .. ended) have all ended: each tick looks from there on
      for (;;) {
        const tick = performance.now();
        while (ended < ledger.killed.length && ledger.killed[ended]!.endedAt !== undefined) ended++;
        if (!watching && (ended === ledger.killed.length || performance.now() > watchUntil)) break;
        const due = ledger.killed
          .slice(ended)
          .filter((a) => a.endedAt === undefined && a.at + ttrS * 1000 - 50 <= redisMs());
        await Promise.all(
          due.map(async (a) => {
            const job = await engine.get(TOPIC, a.id);
            const answered = redisMs();
            if (job && job.attempts === a.attempt && job.state === 'running') return;
            if (job && job.attempts === a.attempt && job.lastError?.startsWith(`attempt ${a.attempt} timed out`))
              a.endedAt = Date.parse(job.updatedAt);
            else [a.endedAt, a.endedBound] = [answered, true];
          }),
        );
        const wait = 20 - (performance.now() - tick);
        if (wait > 0) await sleep(wait);
      }
    })();

    const loadFrom = load();
    await sleep(N.seconds * 1000);
    producing = false;
    await producer;
    const loadS = (performance.now() - samplingFrom) / 1000;
    const claimsInLoad = ledger.byClaim.size;
    // drain: every job added is acked (killed ones come back after their ttr and run again)
    const drainLimit = Date.now() + 60_000;
    while (ledger.done < addedTotal && Date.now() < drainLimit) await sleep(50);
    await sleep(1500); // the last kills' slots come back (ttr + a sweep) while the sampler watches
    sampling = false;
    await sampler;
    watching = false;
    watchUntil = performance.now() + 10_000;
    await watcher;
    const tickMs = (performance.now() - samplingFrom) / Math.max(1, ticks);
    const final = await Promise.all(keys.map((key) => engine.flowKey(TOPIC, key)));
    const leftRunning = final.reduce((sum, s) => sum + s.running, 0);
    stopped = true;
    const settle = Date.now() + 20_000;
    while (roles.size > 0 && Date.now() < settle) await Promise.race([sleep(100), ...roles]);

    let overLedger = 0;
    let mostOverLedger = -Infinity;
    let leakSamples = 0;
    let longestLeak = 0;
    let paceViolations = 0;
    let worstMs = 0;
    const busiest = { slow: 0, fast: 0, allowedSlow: 0, allowedFast: 0 };
    const perSecond = { slow: [] as number[], fast: [] as number[] };
    for (const key of keys) {
      const attempts = ledger.byKey.get(key) ?? [];
      const r = readKey(attempts, samples.get(key)!, ttrS * 1000);
      const limit = limits.get(key) ?? perKey.concurrency;
      if (r.mostByLedger > limit) overLedger += 1;
      mostOverLedger = Math.max(mostOverLedger, r.mostByLedger - limit);
      leakSamples += r.leakSamples;
      longestLeak = Math.max(longestLeak, r.longestLeak);
      const rate = fast.has(key)
        ? fastRate
        : { count: perKey.rate.count, perMs: perKey.rate.per * 1000, burst: perKey.rate.burst };
      const starts = attempts.map((a) => a.at);
      const p = paceCheck(starts, rate);
      paceViolations += p.violations;
      worstMs = Math.max(worstMs, p.worstMs);
      const kind = fast.has(key) ? 'fast' : 'slow';
      busiest[kind] = Math.max(busiest[kind], p.busiest);
      busiest[kind === 'fast' ? 'allowedFast' : 'allowedSlow'] = p.allowed;
      const t = sorted(starts);
      perSecond[kind].push(t.length > 1 ? ((t.length - 1) / (t.at(-1)! - t[0]!)) * 1000 : 0);
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    const kills = ledger.killed;
    const ghostMs = sorted(kills.flatMap((a) => (a.freedAt === undefined ? [] : [a.freedAt - a.killedAt!])));
    const unfreed = kills.length - ghostMs.length;
    const ghostGoal = ttrS * 1000 + 1000;
    // the slowest ghost: its key's samples' longest gap and longest read around it (the sampler's or
    // Redis's stall errs the ghost long), and Redis's slow commands of the run
    const slowest = kills
      .filter((a) => a.freedAt !== undefined)
      .sort((x, y) => y.freedAt! - y.killedAt! - (x.freedAt! - x.killedAt!))[0];
    let gapMs = 0;
    let readMs = 0;
    if (slowest) {
      const s = samples.get(slowest.key)!;
      for (let i = 0; i < s.sent.length; i++) {
        if (s.answered[i]! < slowest.killedAt! || s.sent[i]! > slowest.freedAt!) continue;
        readMs = Math.max(readMs, s.answered[i]! - s.sent[i]!);
        if (i > 0) gapMs = Math.max(gapMs, s.sent[i]! - s.answered[i - 1]!);
      }
    }
    const slowlog = (await redis.slowlog('GET', 1000)) as [number, number, number, string[]][];
    const slowCommands = {
      count: slowlog.length,
      maxMs: round(Math.max(0, ...slowlog.map((e) => e[2] / 1000)), 1),
      longest:
        slowlog
          .sort((x, y) => y[2] - x[2])[0]?.[3]
          ?.slice(0, 2)
          .join(' ') ?? null,
    };
    const overGoal = ghostMs.filter((ms) => ms > ghostGoal).length;
    const endedMs = sorted(kills.map((a) => a.endedAt! - a.killedAt!));
    const ended = {
      p50: round(quantile(endedMs, 0.5), 1),
      p99: round(quantile(endedMs, 0.99), 1),
      max: round(endedMs.at(-1) ?? NaN, 1),
      overGoal: endedMs.filter((ms) => ms > ghostGoal).length,
      bounds: kills.filter((a) => a.endedBound).length,
    };
    const json = {
      seconds: N.seconds,
      keys: keys.length,
      fastKeys: fast.size,
      perKey,
      fastRate,
      cap,
      ttrS,
      added: addedTotal,
      claims: ledger.byClaim.size,
      claimsInLoad,
      done: ledger.done,
      failed: ledger.failed,
      kills: kills.length,
      ticks,
      tickMs: round(tickMs, 1),
      over: { redisSamples: overRedis, ledgerKeys: overLedger, combinedSamples: overCombined },
      most: { redisOverLimit: mostOverRedis, ledgerOverLimit: mostOverLedger, combined: mostCombined },
      pace: {
        violations: paceViolations,
        worstMs: round(worstMs, 3),
        busiest,
        perSecond: { slow: round(mean(perSecond.slow), 1), fast: round(mean(perSecond.fast), 1) },
      },
      ghostMs: {
        p50: round(quantile(ghostMs, 0.5), 1),
        p99: round(quantile(ghostMs, 0.99), 1),
        max: round(ghostMs.at(-1) ?? NaN, 1),
        unfreed,
        overGoal,
      },
      slowestGhost: slowest
        ? {
            key: slowest.key,
            claimedToKilledMs: round(slowest.killedAt! - slowest.at, 1),
            samplerGapMs: round(gapMs, 1),
            longestReadMs: round(readMs, 1),
            endedMs: round(slowest.endedAt! - slowest.killedAt!, 1),
          }
        : null,
      endedMs: ended,
      slowCommands,
      leak: { samples: leakSamples, longestSamples: longestLeak },
      leftRunning,
      load: { from: loadFrom, to: load() },
    };
    return {
      name: 'exact',
      json,
      rows: [
        [
          'load',
          `${fmt(N.seconds)} s, ${keys.length} keys (${fast.size} pinned to ${fastRate.count}/s burst ${fastRate.burst}); ${fmt(claimsInLoad)} attempts (${fmt(claimsInLoad / loadS, 0)}/s), ${fmt(kills.length)} killed`,
          '',
        ],
        [
          'starts per key per second, mean',
          `${fmt(json.pace.perSecond.slow, 1)}/s (keys at 20/s), ${fmt(json.pace.perSecond.fast, 1)}/s (pinned keys: concurrency 3 binds)`,
          '',
        ],
        ['samples', `${fmt(ticks)} of all ${keys.length} keys, one every ${fmt(tickMs, 1)} ms`, ''],
        [
          'samples over a key’s concurrency (Redis’s count)',
          `${overRedis} (most over: ${mostOverRedis})`,
          verdict(overRedis === 0, '0'),
        ],
        [
          'keys ever over it by the ledger (surely running at once)',
          `${overLedger} (most over: ${mostOverLedger})`,
          verdict(overLedger === 0, '0'),
        ],
        [
          'samples over the combined cap',
          `${overCombined} (most running at once: ${mostCombined} of ${cap})`,
          verdict(overCombined === 0, '0'),
        ],
        [
          'starts beyond rate + burst, any span',
          `${paceViolations}${paceViolations ? ` (worst ${fmt(worstMs, 2)} ms early)` : ''}`,
          verdict(paceViolations === 0, '0'),
        ],
        [
          'busiest 1-s span of one key',
          `${busiest.slow} (allowed ${busiest.allowedSlow}); pinned keys ${busiest.fast} (allowed ${busiest.allowedFast})`,
          '',
        ],
        [
          'ghost slot: kill → Redis ended the attempt and returned its slot (the job’s record), p50 / p99 / max',
          `${fmt(ended.p50)} / ${fmt(ended.p99)} / ${fmt(ended.max)} ms (${fmt(kills.length)} kills; ${ended.overGoal} over ${fmt(ghostGoal)} ms; ${ended.bounds} read as bounds)`,
          verdict(
            kills.length > 0 && leakSamples === 0 && ended.max <= ghostGoal,
            `max ≤ ttr + 1 s = ${fmt(ghostGoal)} ms`,
          ),
        ],
        [
          '  as the sampler bounds it: kill → its key’s count no longer holds it, p50 / p99 / max',
          `${fmt(json.ghostMs.p50)} / ${fmt(json.ghostMs.p99)} / ${fmt(json.ghostMs.max)} ms (${fmt(ghostMs.length)} of ${fmt(kills.length)} kills; ${overGoal} over ${fmt(ghostGoal)} ms; ${unfreed} never seen freed)`,
          '',
        ],
        [
          '  its slowest: ended by the record; its key’s longest gap between samples, longest read, meanwhile; Redis commands ≥ 10 ms in the run',
          json.slowestGhost
            ? `${fmt(json.slowestGhost.endedMs, 1)} ms; ${fmt(json.slowestGhost.samplerGapMs, 1)} ms, ${fmt(json.slowestGhost.longestReadMs, 1)} ms; ${slowCommands.count}${slowCommands.count ? ` (longest ${fmt(slowCommands.maxMs, 1)} ms: ${slowCommands.longest})` : ''}`
            : '–',
          '',
        ],
        [
          'samples where Redis counted more than can run',
          `${leakSamples}${leakSamples ? ` (longest ${longestLeak} in a row)` : ''}`,
          verdict(leakSamples === 0, '0'),
        ],
        ['running left on the keys after the drain', `${leftRunning}`, verdict(leftRunning === 0, '0')],
      ],
    };
  } finally {
    stopped = true;
    base?.redis.disconnect();
    await server.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// 2. fair

async function fairRun(flow: boolean) {
  return withRedis(async (_server, redis) => {
    const TOPIC = 'fair';
    const engine = engineOn(redis, { [TOPIC]: { concurrency: 50, ...(flow ? { flow: {} } : {}) } }, 0);
    const cold = keyNames(N.fairColdKeys, 'c');
    const began = performance.now();
    const hot: NewJob[] = [];
    for (let i = 0; i < N.fairHot; i++)
      hot.push(newJob(engine, TOPIC, `hot.${i}`, { kind: 'd', ms: 0 }, flow ? 'hot' : undefined));
    await addAll(engine, hot);
    await sweepAll(engine);
    const hotReadyS = (performance.now() - began) / 1000;
    const now = Math.floor(await redisNow(redis));
    const due = new Map(cold.map((key, i) => [key, now + 1000 + i * 10]));
    await addAll(
      engine,
      cold.flatMap((key) =>
        Array.from({ length: 10 }, (_, j) =>
          newJob(engine, TOPIC, `${key}.${j}`, { kind: 'a', ms: due.get(key)! }, flow ? key : undefined),
        ),
      ),
    );
    const first = new Map<string, number>();
    let hotStarts = 0;
    let stop = false;
    const worker = async () => {
      while (!stop) {
        const jobs = await engine.claimStarted(TOPIC, 10);
        for (const j of jobs) {
          const key = keyOf(j.id);
          if (key === 'hot') hotStarts += 1;
          else if (!first.has(key)) first.set(key, j.runAt + j.latenessMs);
        }
        await Promise.all(jobs.map((j) => engine.ack(TOPIC, j.id, j)));
        if (jobs.length === 0) await sleep(1);
      }
    };
    const drainFrom = performance.now();
    const loops = [sweepLoop(engine, () => stop), ...Array.from({ length: 5 }, worker)];
    const limit = Date.now() + 180_000;
    while (first.size < cold.length && Date.now() < limit) await sleep(20);
    stop = true;
    await Promise.all(loops);
    const wallS = (performance.now() - drainFrom) / 1000;
    const late = sorted([...first].map(([key, at]) => at - due.get(key)!));
    return {
      flow,
      hotReadyS: round(hotReadyS, 1),
      hotStarts,
      hotPerSecond: round(hotStarts / wallS, 0),
      coldStarted: first.size,
      p50: quantile(late, 0.5),
      p99: quantile(late, 0.99),
      max: late.at(-1) ?? NaN,
    };
  });
}

async function fair(): Promise<Section> {
  const f = await fairRun(true);
  const p = await fairRun(false);
  const ms = (r: typeof f) => `${fmt(r.p50)} / ${fmt(r.p99)} / ${fmt(r.max)} ms`;
  return {
    name: 'fair',
    json: { hot: N.fairHot, coldKeys: N.fairColdKeys, flow: f, plain: p, load: load() },
    rows: [
      [
        'setup',
        `${fmt(N.fairHot)} ready jobs of the hot key (added and swept in ${f.hotReadyS} s), ${N.fairColdKeys} cold keys × 10 due 1 s later, combined cap 50`,
        '',
      ],
      [
        'flow topic: cold key’s first start − due, p50 / p99 / max',
        ms(f),
        verdict(f.coldStarted === N.fairColdKeys && f.p99 <= 1000, 'p99 ≤ 1 s'),
      ],
      ['  hot key meanwhile', `${fmt(f.hotStarts)} starts, ${fmt(f.hotPerSecond)}/s`, ''],
      [
        'plain topic (contrast): p50 / p99 / max',
        `${ms(p)}${p.coldStarted < N.fairColdKeys ? ` (${p.coldStarted} of ${N.fairColdKeys} started)` : ''}`,
        '',
      ],
      ['  hot jobs meanwhile', `${fmt(p.hotStarts)} starts, ${fmt(p.hotPerSecond)}/s`, ''],
    ],
  };
}

// ---------------------------------------------------------------------------------------------
// 3. cheap

/** Redis CPU seconds (user + sys), commands and script calls, from INFO. */
async function redisCounters(redis: Redis) {
  const cpu = await redis.info('cpu');
  const stats = await redis.info('commandstats');
  let commands = 0;
  let scriptCalls = 0;
  const byCommand: Record<string, number> = {};
  for (const [, name, calls] of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (name === 'info' || name!.startsWith('config')) continue;
    commands += Number(calls);
    byCommand[name!] = Number(calls);
    if (name === 'fcall' || name === 'evalsha' || name === 'eval') scriptCalls += Number(calls);
  }
  const userS = Number(info(cpu, 'used_cpu_user'));
  const sysS = Number(info(cpu, 'used_cpu_sys'));
  return { cpuS: userS + sysS, userS, sysS, commands, scriptCalls, byCommand };
}

type CostPath = 'plain' | 'flow' | 'flow, no key limits';
const COST_PATHS: readonly CostPath[] = ['plain', 'flow', 'flow, no key limits'];

/** Redis CPU seconds (user, sys) from INFO cpu: a read costs Redis a few µs. */
async function cpuNow(redis: Redis) {
  const cpu = await redis.info('cpu');
  return { user: Number(info(cpu, 'used_cpu_user')), sys: Number(info(cpu, 'used_cpu_sys')) };
}

/**
 * The three paths side by side, each on a redis-server of its own, all started together: `jobs`
 * jobs a path in `rounds` rounds, each round a chunk of jobs on every path in turn (the order
 * rotating from round to round), each chunk's Redis CPU read from INFO before and after it. The
 * VM's speed drifts by ±20 % within a minute; interleaved chunks of a fraction of a second share
 * its drift, where runs of a path one after another do not.
 */
async function costRuns(per: number, jobs: number, rounds: number) {
  const servers: RedisProcess[] = [];
  const clients: Redis[] = [];
  try {
    for (const _ of COST_PATHS) servers.push(await startRedis());
    const keys = keyNames(100);
    const TOPIC = 'cheap';
    const runs = COST_PATHS.map((path, i) => {
      const redis = new Redis(servers[i]!.url, { maxRetriesPerRequest: null });
      clients.push(redis);
      const flow = path !== 'plain';
      // limits that never bind: concurrency 1,000 a key, 1,000,000 starts a second with a burst of 1,000
      const limits =
        path === 'flow'
          ? { flow: { concurrency: 1000, rate: { count: 1_000_000, per: 1, burst: 1000 } } }
          : path === 'flow, no key limits'
            ? { flow: {} }
            : {};
      const engine = engineOn(redis, { [TOPIC]: { concurrency: 10_000, ...limits } });
      let made = 0;
      const cycle = async (count: number) => {
        const all = Array.from({ length: count }, () => {
          const i = made++;
          const key = keys[i % keys.length]!;
          return newJob(engine, TOPIC, `${key}.${i}`, { kind: 'd', ms: 0 }, flow ? key : undefined);
        });
        await addSweepClaimAck(engine, TOPIC, all, per);
      };
      return {
        path,
        redis,
        cycle,
        user: [] as number[],
        sys: [] as number[],
        wallS: 0,
        before: undefined as Awaited<ReturnType<typeof redisCounters>> | undefined,
      };
    });
    for (const r of runs) {
      await r.cycle(200); // warm: the library loaded, the keys made
      await r.redis.config('RESETSTAT');
      r.before = await redisCounters(r.redis);
    }
    const chunk = Math.max(1, Math.round(jobs / rounds));
    for (let round = 0; round < rounds; round++) {
      for (let j = 0; j < runs.length; j++) {
        const r = runs[(round + j) % runs.length]!;
        const a = await cpuNow(r.redis);
        const began = performance.now();
        await r.cycle(chunk);
        r.wallS += (performance.now() - began) / 1000;
        const b = await cpuNow(r.redis);
        r.user.push(b.user - a.user);
        r.sys.push(b.sys - a.sys);
      }
    }
    const sum = (xs: number[]) => xs.reduce((x, y) => x + y, 0);
    const done = chunk * rounds;
    const results = [];
    for (const r of runs) {
      const after = await redisCounters(r.redis);
      const before = r.before!;
      const byCommand = Object.fromEntries(
        Object.entries(after.byCommand)
          .map(([name, calls]) => [name, round((calls - (before.byCommand[name] ?? 0)) / done, 3)] as const)
          .filter(([, perJob]) => perJob > 0)
          .sort((x, y) => y[1] - x[1]),
      );
      results.push({
        path: r.path,
        per,
        jobs: done,
        cpuUs: round(((sum(r.user) + sum(r.sys)) * 1e6) / done, 1),
        /** Each round's chunk, µs a job. */
        cpuUsEach: r.user.map((u, i) => round(((u + r.sys[i]!) * 1e6) / chunk, 1)),
        userUs: round((sum(r.user) * 1e6) / done, 1),
        sysUs: round((sum(r.sys) * 1e6) / done, 1),
        commands: round((after.commands - before.commands) / done, 2), // INFO not counted
        scriptCalls: round((after.scriptCalls - before.scriptCalls) / done, 3),
        jobsPerSecond: round(done / r.wallS, 0),
        byCommand,
      });
    }
    return { chunk, rounds, results };
  } finally {
    for (const c of clients) c.disconnect();
    for (const s of servers) await s.stop();
  }
}

type MemoryKind = 'plain' | 'one key' | 'distinct keys';

/** After a fill was all claimed and acked: used_memory, and the flow state left. */
interface Drained {
  drainS: number;
  after: number;
  leftBytes: number;
  flowFields: number;
  /** The first fields left in the #flow hash. */
  flowFieldNames: string[];
  lanes: number;
  waits: number;
  laneKeys: number;
  keysLeft: string[];
  keyCount: number;
}

interface MemoryResult {
  kind: MemoryKind;
  jobs: number;
  fillS: number;
  baseline: number;
  filled: number;
  perJob: number;
  drained?: Drained;
}

async function memoryRun(kind: MemoryKind, m: number): Promise<MemoryResult> {
  return withRedis(async (_server, redis) => {
    const TOPIC = 'mem';
    const flow = kind !== 'plain';
    const engine = engineOn(
      redis,
      {
        [TOPIC]: {
          concurrency: 10_000,
          ...(flow ? { flow: { concurrency: 5, rate: { count: 10, per: 1, burst: 1 } } } : {}),
        },
      },
      0,
    );
    const keyFor = (i: number) => (kind === 'plain' ? undefined : kind === 'one key' ? 'k' : `k${i}`);
    const drain = async () => {
      for (;;) {
        const jobs = await engine.claim(TOPIC, 500);
        if (jobs.length === 0) return;
        await Promise.all(jobs.map((j) => engine.ack(TOPIC, j.id, j)));
      }
    };
    // warm: the library loaded, the topic's stats keys made
    await addAll(engine, [newJob(engine, TOPIC, 'warm.0', { kind: 'd', ms: 0 }, flow ? 'warm' : undefined)]);
    await sweepAll(engine);
    await drain();
    await sleep(200);
    await sweepAll(engine);
    const baseline = await usedMemory(redis);
    const began = performance.now();
    for (let i = 0; i < m; i += 1000) {
      const batch = Array.from({ length: Math.min(1000, m - i) }, (_, j) =>
        newJob(engine, TOPIC, `m.${i + j}`, { kind: 'd', ms: 0 }, keyFor(i + j)),
      );
      await addAll(engine, batch, 1000);
    }
    await sweepAll(engine);
    const fillS = (performance.now() - began) / 1000;
    const filled = await usedMemory(redis);
    const result: MemoryResult = {
      kind,
      jobs: m,
      fillS: round(fillS, 1),
      baseline,
      filled,
      perJob: round((filled - baseline) / m, 1),
    };
    if (kind === 'one key') return result;
    const drainFrom = performance.now();
    await drain();
    const drainS = (performance.now() - drainFrom) / 1000;
    await sleep(2000); // every key's pace is behind it (10/s, burst 1), and Redis's cron has shrunk its tables
    await sweepAll(engine);
    const after = await usedMemory(redis);
    const base = topicKeys(
      engineContext(engine).layout.placeOf(engine.topic(TOPIC), ''),
      TOPIC,
      engineContext(engine).layout,
    ).jobs;
    const left: string[] = [];
    let cursor = '0';
    do {
      const [next, found] = await redis.scan(cursor, 'MATCH', '*', 'COUNT', 1000);
      cursor = next;
      left.push(...found);
    } while (cursor !== '0');
    const laneKeys = left.filter((k) => k.startsWith(`${base}#lane:`)).length;
    const [flowFields, lanes, waits] = await Promise.all([
      redis.hlen(`${base}#flow`),
      redis.llen(`${base}#lanes`),
      redis.zcard(`${base}#fwait`),
    ]);
    // HKEYS while the hash is small: a scan's first page of a hashtable emptied by the drain may hold none
    const flowFieldNames =
      flowFields <= 1000
        ? await redis.hkeys(`${base}#flow`)
        : (await redis.hscan(`${base}#flow`, '0', 'COUNT', 10))[1].filter((_, i) => i % 2 === 0);
    return {
      ...result,
      drained: {
        drainS: round(drainS, 1),
        after,
        leftBytes: after - baseline,
        flowFields,
        flowFieldNames: flowFieldNames.slice(0, 5),
        lanes,
        waits,
        laneKeys,
        keysLeft: left.sort().slice(0, 20),
        keyCount: left.length,
      },
    };
  });
}

async function cheap(): Promise<Section> {
  const runs = [];
  for (const per of [100, 1]) {
    const jobs = per === 1 ? Math.max(1, Math.round(N.cheapJobs / 2)) : N.cheapJobs;
    const { chunk, results } = await costRuns(per, jobs, ROUNDS);
    const [plain, flow, bare] = COST_PATHS.map((path) => results.find((r) => r.path === path)!);
    // each round's ratio, flow chunk over plain chunk: how far the drift left within a round moves it
    const each = plain!.cpuUsEach.map((p, i) => flow!.cpuUsEach[i]! / p);
    runs.push({
      per,
      jobs: plain!.jobs,
      chunk,
      plain: plain!,
      flow: flow!,
      bare: bare!,
      cpuRatio: round(flow!.cpuUs / plain!.cpuUs, 3),
      userRatio: round(flow!.userUs / plain!.userUs, 3),
      roundRatios: {
        min: round(Math.min(...each), 2),
        median: round(quantile(sorted(each), 0.5), 2),
        max: round(Math.max(...each), 2),
      },
      commandsRatio: round(flow!.commands / plain!.commands, 2),
      bareCpuRatio: round(bare!.cpuUs / plain!.cpuUs, 3),
    });
  }
  const plainMem = await memoryRun('plain', N.memoryKeys);
  const oneKey = await memoryRun('one key', N.memoryKeys);
  const distinct = await memoryRun('distinct keys', N.memoryKeys);
  const d = distinct.drained!;
  const p = plainMem.drained!;
  const perKey = (distinct.filled - distinct.baseline - (oneKey.filled - oneKey.baseline)) / N.memoryKeys;
  // '#'-fields are the topic's own (its ready count, the hashtable marker)
  const keyFields = d.flowFields - d.flowFieldNames.filter((f) => f.startsWith('#')).length;
  const rows: Row[] = [];
  for (const r of runs) {
    const how = r.per === 1 ? 'one job a call, 32 in flight' : `calls of ${r.per} jobs`;
    rows.push([
      `${fmt(r.jobs)} jobs a path added, claimed, started, acked in ${how}, ${ROUNDS} rounds of ${fmt(r.chunk)} a path in turn: Redis CPU per job, plain / flow (no key limits)`,
      `${fmt(r.plain.cpuUs, 1)} / ${fmt(r.flow.cpuUs, 1)} (${fmt(r.bare.cpuUs, 1)}) µs = ${r.cpuRatio}× (${r.bareCpuRatio}×)`,
      verdict(r.cpuRatio <= 1.2, '≤ 1.2×'),
    ]);
    rows.push([
      '  flow ÷ plain in each round: min / median / max',
      `${r.roundRatios.min}× / ${r.roundRatios.median}× / ${r.roundRatios.max}×`,
      '',
    ]);
    rows.push([
      '  of which user / system (the kernel’s, for the requests), plain / flow',
      `${fmt(r.plain.userUs, 1)} / ${fmt(r.plain.sysUs, 1)} µs; ${fmt(r.flow.userUs, 1)} / ${fmt(r.flow.sysUs, 1)} µs: user ${r.userRatio}×`,
      '',
    ]);
    rows.push([
      '  commands (script calls) per job, plain / flow',
      `${fmt(r.plain.commands, 2)} (${r.plain.scriptCalls}) / ${fmt(r.flow.commands, 2)} (${r.flow.scriptCalls}) = ${r.commandsRatio}×`,
      verdict(r.commandsRatio <= 1.2, '≤ 1.2×'),
    ]);
  }
  rows.push([
    `memory: ${fmt(N.memoryKeys)} ready jobs, plain / flow one key / flow distinct keys`,
    `${fmt(plainMem.perJob)} / ${fmt(oneKey.perJob)} / ${fmt(distinct.perJob)} B a job`,
    '',
  ]);
  rows.push(['  bytes per active key (distinct less one key)', `${fmt(perKey, 1)} B`, '']);
  rows.push([
    '  all claimed and acked: used_memory − before, flow distinct keys / plain',
    `${fmt(d.leftBytes)} / ${fmt(p.leftBytes)} B (drained in ${d.drainS} / ${p.drainS} s)`,
    '',
  ]);
  rows.push([
    '  left: #flow fields / #lanes / #fwait / lane keys',
    `${d.flowFields}${d.flowFields ? ` (${d.flowFieldNames.map((f) => JSON.stringify(f)).join(', ')})` : ''} / ${d.lanes} / ${d.waits} / ${d.laneKeys} (${d.keyCount} keys in all)`,
    verdict(
      keyFields === 0 && d.lanes === 0 && d.waits === 0 && d.laneKeys === 0,
      'idle keys cost 0 B: no key’s state',
    ),
  ]);
  return {
    name: 'cheap',
    json: { runs, memory: { plain: plainMem, oneKey, distinct, perKey: round(perKey, 1) }, load: load() },
    rows,
  };
}

// ---------------------------------------------------------------------------------------------
// 4. pause

async function pause(): Promise<Section> {
  return withRedis(async (_server, redis) => {
    const TOPIC = 'paused';
    const engine = engineOn(redis, { [TOPIC]: { concurrency: 100, flow: { concurrency: 2 } } }, 0);
    const keys = keyNames(20);
    const KEY = keys[0]!;
    const starts: { key: string; at: number }[] = [];
    const added = new Map<string, number>();
    const claimed = new Map<string, number>();
    let stop = false;
    const producer = async () => {
      while (!stop) {
        const jobs: NewJob[] = [];
        for (const key of keys) {
          const n = added.get(key) ?? 0;
          if (n - (claimed.get(key) ?? 0) >= 50) continue;
          for (let i = 0; i < 50; i++) jobs.push(newJob(engine, TOPIC, `${key}.${n + i}`, { kind: 'd', ms: 0 }, key));
          added.set(key, n + 50);
        }
        if (jobs.length > 0) await addAll(engine, jobs);
        await sleep(10);
      }
    };
    const worker = async () => {
      while (!stop) {
        const jobs = await engine.claimStarted(TOPIC, 10);
        for (const j of jobs) {
          const key = keyOf(j.id);
          starts.push({ key, at: j.runAt + j.latenessMs });
          claimed.set(key, (claimed.get(key) ?? 0) + 1);
        }
        await Promise.all(
          jobs.map(async (j) => {
            await sleep(2 + Math.random() * 8);
            await engine.ack(TOPIC, j.id, j);
          }),
        );
        if (jobs.length === 0) await sleep(2);
      }
    };
    const loops = [producer(), sweepLoop(engine, () => stop), ...Array.from({ length: 4 }, worker)];
    const cycles = async (pauseIt: () => Promise<unknown>, resumeIt: () => Promise<unknown>) => {
      const windows: { before: number; paused: number; resume: number }[] = [];
      for (let c = 0; c < N.pauseCycles; c++) {
        const before = await redisNow(redis);
        await pauseIt();
        const paused = await redisNow(redis);
        await sleep(30);
        const resume = await redisNow(redis);
        await resumeIt();
        windows.push({ before, paused, resume });
        await sleep(30);
      }
      return windows;
    };
    let topicWindows: Awaited<ReturnType<typeof cycles>> = [];
    let keyWindows: typeof topicWindows = [];
    try {
      await sleep(500);
      topicWindows = await cycles(
        () => engine.pauseTopic(TOPIC),
        () => engine.resumeTopic(TOPIC),
      );
      await sleep(200);
      keyWindows = await cycles(
        () => engine.setFlowKey(TOPIC, KEY, { paused: true }),
        () => engine.setFlowKey(TOPIC, KEY, { paused: false }),
      );
      await sleep(200);
    } finally {
      stop = true;
      await Promise.all(loops);
    }
    // a start after the pause answered: a later millisecond than TIME read after it; before the
    // resume was sent: an earlier millisecond than TIME read before it
    const count = (windows: typeof topicWindows, of: (s: { key: string }) => boolean) => {
      let inside = 0;
      let sameMs = 0;
      for (const s of starts) {
        if (!of(s)) continue;
        for (const w of windows) {
          if (s.at > Math.floor(w.paused) && s.at < Math.floor(w.resume)) inside += 1;
          else if (s.at >= Math.floor(w.before) && s.at <= Math.floor(w.paused)) sameMs += 1;
        }
      }
      return { inside, sameMs };
    };
    const spanS = (windows: typeof topicWindows) =>
      windows.length ? (windows.at(-1)!.resume - windows[0]!.before) / 1000 : 0;
    const inSpan = (windows: typeof topicWindows, of: (s: { key: string }) => boolean) =>
      starts.filter((s) => of(s) && windows.length > 0 && s.at >= windows[0]!.before && s.at <= windows.at(-1)!.resume)
        .length;
    const all = () => true;
    const isKey = (s: { key: string }) => s.key === KEY;
    const others = (s: { key: string }) => s.key !== KEY;
    const topic = count(topicWindows, all);
    const key = count(keyWindows, isKey);
    const othersInKeyPause = count(keyWindows, others);
    const json = {
      cycles: N.pauseCycles,
      starts: starts.length,
      topic: { ...topic, startsDuringCycles: inSpan(topicWindows, all), spanS: round(spanS(topicWindows), 1) },
      key: {
        ...key,
        startsDuringCycles: inSpan(keyWindows, isKey),
        spanS: round(spanS(keyWindows), 1),
        othersInsidePauses: othersInKeyPause.inside,
      },
      load: load(),
    };
    return {
      name: 'pause',
      json,
      rows: [
        ['load', `${fmt(starts.length)} starts, 20 keys, concurrency 2 each, 4 claim loops`, ''],
        [
          `topic: ${N.pauseCycles} pauses and resumes`,
          `${fmt(json.topic.startsDuringCycles)} starts over the ${json.topic.spanS} s of the cycles`,
          '',
        ],
        [
          '  starts after a pause answered, before its resume',
          `${topic.inside} (${topic.sameMs} in the pause's own milliseconds)`,
          verdict(topic.inside === 0, '0'),
        ],
        [
          `key ${KEY}: ${N.pauseCycles} pauses and resumes`,
          `${fmt(json.key.startsDuringCycles)} of its starts over the ${json.key.spanS} s; the other keys ${fmt(othersInKeyPause.inside)} inside its pauses`,
          '',
        ],
        [
          '  its starts after a pause answered, before its resume',
          `${key.inside} (${key.sameMs} in the pause's own milliseconds)`,
          verdict(key.inside === 0, '0'),
        ],
      ],
    };
  });
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const asked = [...process.argv.slice(2), ...(process.env.BENCH_FLOW ?? '').split(',')]
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = asked.filter((s) => !(SCENARIOS as readonly string[]).includes(s));
  if (unknown.length > 0)
    throw new Error(`unknown scenario ${unknown.join(', ')}: choose among ${SCENARIOS.join(', ')}`);
  const chosen = asked.length > 0 ? SCENARIOS.filter((s) => asked.includes(s)) : [...SCENARIOS];
  const run: Record<Scenario, () => Promise<Section>> = { exact, fair, cheap, pause };
  const at = new Date().toISOString();
  const loadAtStart = load();
  const probe = await withRedis(async (server, redis) => describeMachine(await redis.info('server'), server.pid));
  console.log(
    `machine: ${probe.cpus} CPUs (${probe.cpuModel}), ${probe.memoryGiB} GiB, ${probe.os}, node ${probe.node}, redis ${probe.redis}; load average ${loadAtStart.join(' / ')}`,
  );
  console.log(`scenarios: ${chosen.join(', ')}; ${JSON.stringify(N)}`);
  const sections: Section[] = [];
  for (const name of chosen) {
    const began = performance.now();
    const section = await withoutMetrics(run[name]);
    sections.push(section);
    console.log(`\n${name} (${fmt((performance.now() - began) / 1000, 1)} s; load average ${load().join(' / ')})`);
    printTable(section.rows, ['measure', 'result', 'goal']);
  }
  console.log(
    JSON.stringify({
      bench: 'flow',
      at,
      counts: N,
      loadAverage: { start: loadAtStart, end: load() },
      machine: probe,
      results: Object.fromEntries(sections.map((s) => [s.name, s.json])),
    }),
  );
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
