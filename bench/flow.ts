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
import { setTimeout as sleep } from 'node:timers/promises';
import type { Cluster, Redis } from 'ioredis';
import { Engine, type ClaimedJob, type EngineOptions, type NewJob } from '../lib/engine';
import type { HandlerEvent } from '../lib/workers/fanout';
import type { QueueConfig, TopicInput } from '../lib/core/queue-config';
import { topicKeys, engineContext } from '../lib/testing';
import { envInt } from './harness/env';
import { runBench } from './harness/lifecycle';
import { loadNow, quantileFloor, redisCounters, redisCpu, sortNum } from './harness/measure';
import { engineOn, sweepAll } from './harness/queue';
import { connect, redisNow, scanKeys, startServer, usedMemory, withRedis, type RedisProcess } from './harness/redis';
import { fmt, machineLine, machineOf, printJson, printTable, round, type Row } from './harness/report';
import { inProcessRoles, type Roles } from './harness/roles';
import { addSweepClaimAck } from './harness/workload';

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

interface Section {
  name: Scenario;
  rows: Row[];
  json: Record<string, unknown>;
}

const verdict = (ok: boolean, goal: string) => `${goal}: ${ok ? 'met' : 'MISSED'}`;
const quantile = quantileFloor;
const sorted = sortNum;
const load = () => loadNow(2);
/** The key of a job of this bench: its id is `<key>.<n>`. */
const keyOf = (id: string) => id.slice(0, id.lastIndexOf('.'));
const keyNames = (n: number, prefix = 'k') =>
  Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(String(n - 1).length, '0')}`);

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

/** Sweeps every `everyMs` (at once when a sweep hit its limit) until `stopped()`. */
async function sweepLoop(engine: Engine, stopped: () => boolean, everyMs = 5): Promise<void> {
  while (!stopped()) {
    const r = await engine.sweep();
    if (!r.more) await sleep(everyMs);
  }
}

/** An engine on `redis` with `topics`, finished jobs kept `retention` s when given. */
const flowEngine = (redis: Redis, topics: Record<string, TopicInput>, retention?: number) =>
  engineOn(redis, topics, retention === undefined ? {} : { retention });

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

const EXACT_TOPIC = 'flow';
const TTR_S = 1;
const CAP = 40;
const PER_KEY = { concurrency: 3, rate: { count: 20, per: 1, burst: 2 } };
const FAST_RATE = { count: 200, perMs: 1000, burst: 5 };
const BACKLOG = 30; // unfinished jobs kept per key

/** Scenario 1 under way: the roles in this process, the ledger of attempts, the keys. */
interface ExactRun {
  roles: Roles;
  engine: Engine;
  redis: Redis;
  ledger: Ledger;
  /** The Redis clock, ms, read off this host's. */
  redisMs: () => number;
  keys: string[];
  /** The keys pinned to FAST_RATE (their concurrency binds). */
  fast: Set<string>;
  /** Once set, no more sweeps or fan-outs are invoked, and no handler is killed. */
  stopped: boolean;
}

/**
 * The runtime and the three roles in this process, every engine (the runtime's, each handler
 * invocation's) a TrackedEngine that wakes the sweeper as the runtime's do (lib/platform/runtime.ts):
 * a claim that holds a key back by its pace must make a sweep look when the key may go again.
 * N.killPercent of the handler invocations start their job and die (SIGKILL): never ack, never fail.
 */
async function startExact(server: RedisProcess): Promise<ExactRun> {
  let offset = 0;
  const redisMs = () => localMs() + offset;
  const ledger = new Ledger(redisMs);
  const keys = keyNames(N.keys);
  const x = { ledger, redisMs, keys, fast: new Set(keys.slice(0, Math.min(5, Math.floor(keys.length / 4)))) };
  const run = { ...x, stopped: false } as ExactRun;
  const kill = async (event: HandlerEvent) => {
    const live = await run.engine.start(event.topic, event.jobs);
    event.jobs.forEach((j, i) => live[i] && ledger.kill(j.claim));
  };
  const topic = { handler: 'flowHandler', concurrency: CAP, ttr: TTR_S, maxAttempts: 10 };
  run.roles = inProcessRoles({
    redisUrl: server.url,
    config: { topics: { [EXACT_TOPIC]: { ...topic, backoff: { type: 'fixed', delay: 0.2 }, flow: PER_KEY } } },
    engine: (redis, config, options) => new TrackedEngine(ledger, redis, config, options),
    handlerWakes: true,
    job: async () => {
      await sleep(3 + Math.random() * 97);
    },
    accept: (name) => !run.stopped || name === 'flowHandler',
    instead: (event) => (!run.stopped && Math.random() * 100 < N.killPercent ? kill(event) : undefined),
  });
  run.engine = run.roles.rt.engine;
  run.redis = run.roles.rt.redis as Redis;
  offset = await clockOffset(run.redis);
  for (const key of run.fast) await run.engine.setFlowKey(EXACT_TOPIC, key, { rate: FAST_RATE });
  return run;
}

/** Keeps BACKLOG unfinished jobs per key, each due 50–300 ms after its add, until stopped. */
function produce(x: ExactRun) {
  const added = new Map<string, number>();
  const state = { total: 0, producing: true };
  const producer = (async () => {
    while (state.producing) {
      const jobs: NewJob[] = [];
      for (const key of x.keys) {
        const n = added.get(key) ?? 0;
        const want = Math.min(10, BACKLOG - (n - (x.ledger.doneByKey.get(key) ?? 0)));
        for (let i = 0; i < want; i++) {
          const when = { kind: 'd' as const, ms: 50 + Math.floor(Math.random() * 250) };
          jobs.push(newJob(x.engine, EXACT_TOPIC, `${key}.${n + i}`, when, key));
        }
        if (want > 0) added.set(key, n + want);
      }
      if (jobs.length > 0) await addAll(x.engine, jobs);
      state.total += jobs.length;
      await sleep(10);
    }
  })();
  return {
    added: () => state.total,
    async stop() {
      state.producing = false;
      await producer;
    },
  };
}

/** Every key's running count, every 10 ms, on the connection the claims and acks use, until stopped. */
function sample(x: ExactRun) {
  const s = {
    samples: new Map(x.keys.map((key) => [key, { sent: [], answered: [], running: [] } as Samples])),
    limits: new Map<string, number>(),
    overRedis: 0,
    mostOverRedis: 0,
    overCombined: 0,
    mostCombined: 0,
    ticks: 0,
    from: performance.now(),
  };
  let sampling = true;
  const read = async (key: string) => {
    const sent = x.redisMs();
    const state = await x.engine.flowKey(EXACT_TOPIC, key);
    return { key, state, sent, answered: x.redisMs() };
  };
  const sampler = (async () => {
    while (sampling) {
      const tick = performance.now();
      let combined = 0;
      for (const { key, state, sent, answered } of await Promise.all(x.keys.map(read))) {
        const samples = s.samples.get(key)!;
        samples.sent.push(sent);
        samples.answered.push(answered);
        samples.running.push(state.running);
        const limit = state.limits.concurrency ?? Infinity;
        s.limits.set(key, limit);
        combined += state.running;
        if (state.running > limit) s.overRedis += 1;
        s.mostOverRedis = Math.max(s.mostOverRedis, state.running - limit);
      }
      if (combined > CAP) s.overCombined += 1;
      s.mostCombined = Math.max(s.mostCombined, combined);
      s.ticks += 1;
      const wait = 10 - (performance.now() - tick);
      if (wait > 0) await sleep(wait);
    }
  })();
  return {
    s,
    async stop() {
      sampling = false;
      await sampler;
    },
  };
}

/**
 * Killed attempts' ends, off their jobs' records: from 50 ms before the ttr runs out, each read
 * every 20 ms until Redis has ended it (the sampler's count of a key can only bound it: an ack in
 * flight or a claim just made leaves a read unsure of which attempt it counts). Once stopped, 10 s
 * more for the last kills.
 */
function watchKills(x: ExactRun) {
  let watching = true;
  let watchUntil = Infinity;
  const readEnd = async (a: Attempt) => {
    const job = await x.engine.get(EXACT_TOPIC, a.id);
    const answered = x.redisMs();
    if (job && job.attempts === a.attempt && job.state === 'running') return;
    if (job && job.attempts === a.attempt && job.lastError?.startsWith(`attempt ${a.attempt} timed out`))
      a.endedAt = Date.parse(job.updatedAt);
    else [a.endedAt, a.endedBound] = [answered, true];
  };
  const watcher = (async () => {
    const killed = x.ledger.killed;
    let ended = 0; // killed[0 .. ended) have all ended: each tick looks from there on
    for (;;) {
      const tick = performance.now();
      while (ended < killed.length && killed[ended]!.endedAt !== undefined) ended++;
      if (!watching && (ended === killed.length || performance.now() > watchUntil)) break;
      const due = killed.slice(ended).filter((a) => a.endedAt === undefined && a.at + TTR_S * 1000 - 50 <= x.redisMs());
      await Promise.all(due.map(readEnd));
      const wait = 20 - (performance.now() - tick);
      if (wait > 0) await sleep(wait);
    }
  })();
  return {
    async stop() {
      watching = false;
      watchUntil = performance.now() + 10_000;
      await watcher;
    },
  };
}

type Sampled = ReturnType<typeof sample>['s'];

/** Per key, the samples against the ledger: over the concurrency, slots held by nothing, the pace, the rates. */
function perKeyChecks(x: ExactRun, s: Sampled) {
  const r = { overLedger: 0, mostOverLedger: -Infinity, leakSamples: 0, longestLeak: 0, paceViolations: 0, worstMs: 0 };
  const busiest = { slow: 0, fast: 0, allowedSlow: 0, allowedFast: 0 };
  const perSecond = { slow: [] as number[], fast: [] as number[] };
  for (const key of x.keys) {
    const attempts = x.ledger.byKey.get(key) ?? [];
    const k = readKey(attempts, s.samples.get(key)!, TTR_S * 1000);
    const limit = s.limits.get(key) ?? PER_KEY.concurrency;
    if (k.mostByLedger > limit) r.overLedger += 1;
    r.mostOverLedger = Math.max(r.mostOverLedger, k.mostByLedger - limit);
    r.leakSamples += k.leakSamples;
    r.longestLeak = Math.max(r.longestLeak, k.longestLeak);
    const kind = x.fast.has(key) ? 'fast' : 'slow';
    const rate =
      kind === 'fast'
        ? FAST_RATE
        : { count: PER_KEY.rate.count, perMs: PER_KEY.rate.per * 1000, burst: PER_KEY.rate.burst };
    const starts = attempts.map((a) => a.at);
    const p = paceCheck(starts, rate);
    r.paceViolations += p.violations;
    r.worstMs = Math.max(r.worstMs, p.worstMs);
    busiest[kind] = Math.max(busiest[kind], p.busiest);
    busiest[kind === 'fast' ? 'allowedFast' : 'allowedSlow'] = p.allowed;
    const t = sorted(starts);
    perSecond[kind].push(t.length > 1 ? ((t.length - 1) / (t.at(-1)! - t[0]!)) * 1000 : 0);
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  return { ...r, busiest, perSecond: { slow: round(mean(perSecond.slow), 1), fast: round(mean(perSecond.fast), 1) } };
}

/**
 * Ghost slots: from each kill to when the sampler saw its key's count let it go, and to when Redis
 * ended the attempt (the job's record). The slowest: its key's samples' longest gap and longest
 * read around it (the sampler's or Redis's stall errs the ghost long).
 */
function ghosts(x: ExactRun, s: Sampled) {
  const kills = x.ledger.killed;
  const ghostMs = sorted(kills.flatMap((a) => (a.freedAt === undefined ? [] : [a.freedAt - a.killedAt!])));
  const ghostGoal = TTR_S * 1000 + 1000;
  const slowest = kills
    .filter((a) => a.freedAt !== undefined)
    .sort((p, q) => q.freedAt! - q.killedAt! - (p.freedAt! - p.killedAt!))[0];
  let gapMs = 0;
  let readMs = 0;
  if (slowest) {
    const k = s.samples.get(slowest.key)!;
    for (let i = 0; i < k.sent.length; i++) {
      if (k.answered[i]! < slowest.killedAt! || k.sent[i]! > slowest.freedAt!) continue;
      readMs = Math.max(readMs, k.answered[i]! - k.sent[i]!);
      if (i > 0) gapMs = Math.max(gapMs, k.sent[i]! - k.answered[i - 1]!);
    }
  }
  const endedMs = sorted(kills.map((a) => a.endedAt! - a.killedAt!));
  return {
    kills,
    ghostGoal,
    ghostMs: {
      p50: round(quantile(ghostMs, 0.5), 1),
      p99: round(quantile(ghostMs, 0.99), 1),
      max: round(ghostMs.at(-1) ?? NaN, 1),
      unfreed: kills.length - ghostMs.length,
      overGoal: ghostMs.filter((ms) => ms > ghostGoal).length,
    },
    freed: ghostMs.length,
    slowestGhost: slowest
      ? {
          key: slowest.key,
          claimedToKilledMs: round(slowest.killedAt! - slowest.at, 1),
          samplerGapMs: round(gapMs, 1),
          longestReadMs: round(readMs, 1),
          endedMs: round(slowest.endedAt! - slowest.killedAt!, 1),
        }
      : null,
    endedMs: {
      p50: round(quantile(endedMs, 0.5), 1),
      p99: round(quantile(endedMs, 0.99), 1),
      max: round(endedMs.at(-1) ?? NaN, 1),
      overGoal: endedMs.filter((ms) => ms > ghostGoal).length,
      bounds: kills.filter((a) => a.endedBound).length,
    },
  };
}

/** What Redis ran for 10 ms or more in the run (a stall would hold a killed attempt's slot). */
async function slowCommands(redis: Redis) {
  const slowlog = (await redis.slowlog('GET', 1000)) as [number, number, number, string[]][];
  return {
    count: slowlog.length,
    maxMs: round(Math.max(0, ...slowlog.map((e) => e[2] / 1000)), 1),
    longest:
      slowlog
        .sort((p, q) => q[2] - p[2])[0]?.[3]
        ?.slice(0, 2)
        .join(' ') ?? null,
  };
}

/**
 * N.seconds of load while the sampler and the watcher run; then every job added is acked (killed
 * ones come back after their ttr and run again) and the last kills' slots come back.
 */
async function loadExact(x: ExactRun) {
  // what Redis ran for 10 ms or more in the run
  await x.redis.config('SET', 'slowlog-log-slower-than', '10000');
  await x.redis.slowlog('RESET');
  const producer = produce(x);
  const sampler = sample(x);
  const watcher = watchKills(x);
  const loadFrom = load();
  await sleep(N.seconds * 1000);
  await producer.stop();
  const loadS = (performance.now() - sampler.s.from) / 1000;
  const claimsInLoad = x.ledger.byClaim.size;
  const drainLimit = Date.now() + 60_000;
  while (x.ledger.done < producer.added() && Date.now() < drainLimit) await sleep(50);
  await sleep(1500); // the last kills' slots come back (ttr + a sweep) while the sampler watches
  await sampler.stop();
  await watcher.stop();
  const tickMs = (performance.now() - sampler.s.from) / Math.max(1, sampler.s.ticks);
  const final = await Promise.all(x.keys.map((key) => x.engine.flowKey(EXACT_TOPIC, key)));
  const leftRunning = final.reduce((sum, s) => sum + s.running, 0);
  x.stopped = true;
  const settle = Date.now() + 20_000;
  while (x.roles.running.size > 0 && Date.now() < settle) await Promise.race([sleep(100), ...x.roles.running]);
  return { s: sampler.s, added: producer.added(), loadFrom, loadS, claimsInLoad, tickMs, leftRunning };
}

type Loaded = Awaited<ReturnType<typeof loadExact>>;

function exactJson(
  x: ExactRun,
  l: Loaded,
  k: ReturnType<typeof perKeyChecks>,
  g: ReturnType<typeof ghosts>,
  slow: Awaited<ReturnType<typeof slowCommands>>,
) {
  const s = l.s;
  return {
    seconds: N.seconds,
    keys: x.keys.length,
    fastKeys: x.fast.size,
    perKey: PER_KEY,
    fastRate: FAST_RATE,
    cap: CAP,
    ttrS: TTR_S,
    added: l.added,
    claims: x.ledger.byClaim.size,
    claimsInLoad: l.claimsInLoad,
    done: x.ledger.done,
    failed: x.ledger.failed,
    kills: g.kills.length,
    ticks: s.ticks,
    tickMs: round(l.tickMs, 1),
    over: { redisSamples: s.overRedis, ledgerKeys: k.overLedger, combinedSamples: s.overCombined },
    most: { redisOverLimit: s.mostOverRedis, ledgerOverLimit: k.mostOverLedger, combined: s.mostCombined },
    pace: { violations: k.paceViolations, worstMs: round(k.worstMs, 3), busiest: k.busiest, perSecond: k.perSecond },
    ghostMs: g.ghostMs,
    slowestGhost: g.slowestGhost,
    endedMs: g.endedMs,
    slowCommands: slow,
    leak: { samples: k.leakSamples, longestSamples: k.longestLeak },
    leftRunning: l.leftRunning,
    load: { from: l.loadFrom, to: load() },
  };
}

type ExactJson = ReturnType<typeof exactJson>;

/** The load, the samples, and the limits: concurrency, the combined cap, the pace. */
function exactLimitRows(x: ExactRun, l: Loaded, json: ExactJson): Row[] {
  const { s } = l;
  const { over, most, pace } = json;
  return [
    [
      'load',
      `${fmt(N.seconds)} s, ${x.keys.length} keys (${x.fast.size} pinned to ${FAST_RATE.count}/s burst ${FAST_RATE.burst}); ${fmt(l.claimsInLoad)} attempts (${fmt(l.claimsInLoad / l.loadS, 0)}/s), ${fmt(json.kills)} killed`,
      '',
    ],
    [
      'starts per key per second, mean',
      `${fmt(pace.perSecond.slow, 1)}/s (keys at 20/s), ${fmt(pace.perSecond.fast, 1)}/s (pinned keys: concurrency 3 binds)`,
      '',
    ],
    ['samples', `${fmt(s.ticks)} of all ${x.keys.length} keys, one every ${fmt(l.tickMs, 1)} ms`, ''],
    [
      'samples over a key’s concurrency (Redis’s count)',
      `${over.redisSamples} (most over: ${most.redisOverLimit})`,
      verdict(over.redisSamples === 0, '0'),
    ],
    [
      'keys ever over it by the ledger (surely running at once)',
      `${over.ledgerKeys} (most over: ${most.ledgerOverLimit})`,
      verdict(over.ledgerKeys === 0, '0'),
    ],
    [
      'samples over the combined cap',
      `${over.combinedSamples} (most running at once: ${most.combined} of ${CAP})`,
      verdict(over.combinedSamples === 0, '0'),
    ],
    [
      'starts beyond rate + burst, any span',
      `${pace.violations}${pace.violations ? ` (worst ${fmt(pace.worstMs, 2)} ms early)` : ''}`,
      verdict(pace.violations === 0, '0'),
    ],
    [
      'busiest 1-s span of one key',
      `${pace.busiest.slow} (allowed ${pace.busiest.allowedSlow}); pinned keys ${pace.busiest.fast} (allowed ${pace.busiest.allowedFast})`,
      '',
    ],
  ];
}

/** The ghost slots of the killed attempts, slots held by nothing, and what was left running. */
function exactGhostRows(json: ExactJson, freed: number, ghostGoal: number): Row[] {
  const { endedMs: ended, ghostMs, slowestGhost, slowCommands: slow, leak } = json;
  return [
    [
      'ghost slot: kill → Redis ended the attempt and returned its slot (the job’s record), p50 / p99 / max',
      `${fmt(ended.p50)} / ${fmt(ended.p99)} / ${fmt(ended.max)} ms (${fmt(json.kills)} kills; ${ended.overGoal} over ${fmt(ghostGoal)} ms; ${ended.bounds} read as bounds)`,
      verdict(json.kills > 0 && leak.samples === 0 && ended.max <= ghostGoal, `max ≤ ttr + 1 s = ${fmt(ghostGoal)} ms`),
    ],
    [
      '  as the sampler bounds it: kill → its key’s count no longer holds it, p50 / p99 / max',
      `${fmt(ghostMs.p50)} / ${fmt(ghostMs.p99)} / ${fmt(ghostMs.max)} ms (${fmt(freed)} of ${fmt(json.kills)} kills; ${ghostMs.overGoal} over ${fmt(ghostGoal)} ms; ${ghostMs.unfreed} never seen freed)`,
      '',
    ],
    [
      '  its slowest: ended by the record; its key’s longest gap between samples, longest read, meanwhile; Redis commands ≥ 10 ms in the run',
      slowestGhost
        ? `${fmt(slowestGhost.endedMs, 1)} ms; ${fmt(slowestGhost.samplerGapMs, 1)} ms, ${fmt(slowestGhost.longestReadMs, 1)} ms; ${slow.count}${slow.count ? ` (longest ${fmt(slow.maxMs, 1)} ms: ${slow.longest})` : ''}`
        : '–',
      '',
    ],
    [
      'samples where Redis counted more than can run',
      `${leak.samples}${leak.samples ? ` (longest ${leak.longestSamples} in a row)` : ''}`,
      verdict(leak.samples === 0, '0'),
    ],
    ['running left on the keys after the drain', `${json.leftRunning}`, verdict(json.leftRunning === 0, '0')],
  ];
}

async function exact(): Promise<Section> {
  const server = await startServer();
  let x: ExactRun | undefined;
  try {
    x = await startExact(server);
    const l = await loadExact(x);
    const k = perKeyChecks(x, l.s);
    const g = ghosts(x, l.s);
    const json = exactJson(x, l, k, g, await slowCommands(x.redis));
    const rows = [...exactLimitRows(x, l, json), ...exactGhostRows(json, g.freed, g.ghostGoal)];
    return { name: 'exact', json, rows };
  } finally {
    if (x) x.stopped = true;
    x?.roles.rt.redis.disconnect();
    await server.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// 2. fair

async function fairRun(flow: boolean) {
  return withRedis(async (_server, redis) => {
    const TOPIC = 'fair';
    const engine = flowEngine(redis, { [TOPIC]: { concurrency: 50, ...(flow ? { flow: {} } : {}) } }, 0);
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

type CostPath = 'plain' | 'flow' | 'flow, no key limits';
const COST_PATHS: readonly CostPath[] = ['plain', 'flow', 'flow, no key limits'];
const COST_TOPIC = 'cheap';
const COST_KEYS = keyNames(100);

/** One path of the comparison on its own redis-server: its engine, and what each round's chunk cost Redis. */
function costPath(path: CostPath, redis: Redis, per: number) {
  const flow = path !== 'plain';
  // limits that never bind: concurrency 1,000 a key, 1,000,000 starts a second with a burst of 1,000
  const limits =
    path === 'flow'
      ? { flow: { concurrency: 1000, rate: { count: 1_000_000, per: 1, burst: 1000 } } }
      : path === 'flow, no key limits'
        ? { flow: {} }
        : {};
  const engine = flowEngine(redis, { [COST_TOPIC]: { concurrency: 10_000, ...limits } });
  let made = 0;
  const cycle = async (count: number) => {
    const all = Array.from({ length: count }, () => {
      const i = made++;
      const key = COST_KEYS[i % COST_KEYS.length]!;
      return newJob(engine, COST_TOPIC, `${key}.${i}`, { kind: 'd', ms: 0 }, flow ? key : undefined);
    });
    await addSweepClaimAck(engine, COST_TOPIC, all, per);
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
}

type PathRun = ReturnType<typeof costPath>;

/** `rounds` rounds of a chunk on every path in turn (the order rotating from round to round); the chunk. */
async function costRounds(runs: readonly PathRun[], jobs: number, rounds: number): Promise<number> {
  for (const r of runs) {
    await r.cycle(200); // warm: the library loaded, the keys made
    await r.redis.config('RESETSTAT');
    r.before = await redisCounters(r.redis);
  }
  const chunk = Math.max(1, Math.round(jobs / rounds));
  for (let round = 0; round < rounds; round++) {
    for (let j = 0; j < runs.length; j++) {
      const r = runs[(round + j) % runs.length]!;
      const a = await redisCpu(r.redis);
      const began = performance.now();
      await r.cycle(chunk);
      r.wallS += (performance.now() - began) / 1000;
      const b = await redisCpu(r.redis);
      r.user.push(b.user - a.user);
      r.sys.push(b.sys - a.sys);
    }
  }
  return chunk;
}

/** What a path cost over every round, a job: Redis CPU (each round's too), commands, script calls. */
async function costOf(r: PathRun, per: number, chunk: number, done: number) {
  const sum = (xs: number[]) => xs.reduce((p, q) => p + q, 0);
  const after = await redisCounters(r.redis);
  const before = r.before!;
  const byCommand = Object.fromEntries(
    Object.entries(after.byCommand)
      .map(([name, calls]) => [name, round((calls - (before.byCommand[name] ?? 0)) / done, 3)] as const)
      .filter(([, perJob]) => perJob > 0)
      .sort((p, q) => q[1] - p[1]),
  );
  return {
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
  };
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
    for (const _ of COST_PATHS) servers.push(await startServer());
    for (const s of servers) clients.push(connect(s));
    const runs = COST_PATHS.map((path, i) => costPath(path, clients[i]!, per));
    const chunk = await costRounds(runs, jobs, rounds);
    const results = [];
    for (const r of runs) results.push(await costOf(r, per, chunk, chunk * rounds));
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

const MEMORY_TOPIC = 'mem';

/** Claims and acks every ready job, 500 a claim. */
async function drainAll(engine: Engine): Promise<void> {
  for (;;) {
    const jobs = await engine.claim(MEMORY_TOPIC, 500);
    if (jobs.length === 0) return;
    await Promise.all(jobs.map((j) => engine.ack(MEMORY_TOPIC, j.id, j)));
  }
}

/** used_memory before and after `m` ready jobs of `kind` (after a warm-up that leaves nothing). */
async function memoryFill(redis: Redis, engine: Engine, kind: MemoryKind, m: number): Promise<MemoryResult> {
  const flow = kind !== 'plain';
  const keyFor = (i: number) => (kind === 'plain' ? undefined : kind === 'one key' ? 'k' : `k${i}`);
  // warm: the library loaded, the topic's stats keys made
  await addAll(engine, [newJob(engine, MEMORY_TOPIC, 'warm.0', { kind: 'd', ms: 0 }, flow ? 'warm' : undefined)]);
  await sweepAll(engine);
  await drainAll(engine);
  await sleep(200);
  await sweepAll(engine);
  const baseline = await usedMemory(redis);
  const began = performance.now();
  for (let i = 0; i < m; i += 1000) {
    const batch = Array.from({ length: Math.min(1000, m - i) }, (_, j) =>
      newJob(engine, MEMORY_TOPIC, `m.${i + j}`, { kind: 'd', ms: 0 }, keyFor(i + j)),
    );
    await addAll(engine, batch, 1000);
  }
  await sweepAll(engine);
  const fillS = (performance.now() - began) / 1000;
  const filled = await usedMemory(redis);
  return { kind, jobs: m, fillS: round(fillS, 1), baseline, filled, perJob: round((filled - baseline) / m, 1) };
}

/** Every job claimed and acked (retention 0): used_memory against before, and what is left of the keys' state. */
async function drained(redis: Redis, engine: Engine, baseline: number): Promise<Drained> {
  const drainFrom = performance.now();
  await drainAll(engine);
  const drainS = (performance.now() - drainFrom) / 1000;
  await sleep(2000); // every key's pace is behind it (10/s, burst 1), and Redis's cron has shrunk its tables
  await sweepAll(engine);
  const after = await usedMemory(redis);
  const layout = engineContext(engine).layout;
  const base = topicKeys(layout.placeOf(engine.topic(MEMORY_TOPIC), ''), MEMORY_TOPIC, layout).jobs;
  const left = await scanKeys(redis);
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
    drainS: round(drainS, 1),
    after,
    leftBytes: after - baseline,
    flowFields,
    flowFieldNames: flowFieldNames.slice(0, 5),
    lanes,
    waits,
    laneKeys: left.filter((k) => k.startsWith(`${base}#lane:`)).length,
    keysLeft: left.sort().slice(0, 20),
    keyCount: left.length,
  };
}

async function memoryRun(kind: MemoryKind, m: number): Promise<MemoryResult> {
  return withRedis(async (_server, redis) => {
    const flow = kind !== 'plain';
    const limits = flow ? { flow: { concurrency: 5, rate: { count: 10, per: 1, burst: 1 } } } : {};
    const engine = flowEngine(redis, { [MEMORY_TOPIC]: { concurrency: 10_000, ...limits } }, 0);
    const result = await memoryFill(redis, engine, kind, m);
    if (kind === 'one key') return result;
    return { ...result, drained: await drained(redis, engine, result.baseline) };
  });
}

/** The cost comparison in calls of 100 jobs, then of one (half as many jobs): each path's figures, and flow ÷ plain. */
async function costs() {
  const runs = [];
  for (const per of [100, 1]) {
    const jobs = per === 1 ? Math.max(1, Math.round(N.cheapJobs / 2)) : N.cheapJobs;
    const { chunk, results } = await costRuns(per, jobs, ROUNDS);
    const [plain, flow, bare] = COST_PATHS.map((path) => results.find((r) => r.path === path)!) as [
      (typeof results)[number],
      (typeof results)[number],
      (typeof results)[number],
    ];
    // each round's ratio, flow chunk over plain chunk: how far the drift left within a round moves it
    const each = plain.cpuUsEach.map((p, i) => flow.cpuUsEach[i]! / p);
    runs.push({
      per,
      jobs: plain.jobs,
      chunk,
      plain,
      flow,
      bare,
      cpuRatio: round(flow.cpuUs / plain.cpuUs, 3),
      userRatio: round(flow.userUs / plain.userUs, 3),
      roundRatios: {
        min: round(Math.min(...each), 2),
        median: round(quantile(sorted(each), 0.5), 2),
        max: round(Math.max(...each), 2),
      },
      commandsRatio: round(flow.commands / plain.commands, 2),
      bareCpuRatio: round(bare.cpuUs / plain.cpuUs, 3),
    });
  }
  return runs;
}

type CostRun = Awaited<ReturnType<typeof costs>>[number];

function costRows(r: CostRun): Row[] {
  const how = r.per === 1 ? 'one job a call, 32 in flight' : `calls of ${r.per} jobs`;
  return [
    [
      `${fmt(r.jobs)} jobs a path added, claimed, started, acked in ${how}, ${ROUNDS} rounds of ${fmt(r.chunk)} a path in turn: Redis CPU per job, plain / flow (no key limits)`,
      `${fmt(r.plain.cpuUs, 1)} / ${fmt(r.flow.cpuUs, 1)} (${fmt(r.bare.cpuUs, 1)}) µs = ${r.cpuRatio}× (${r.bareCpuRatio}×)`,
      verdict(r.cpuRatio <= 1.2, '≤ 1.2×'),
    ],
    [
      '  flow ÷ plain in each round: min / median / max',
      `${r.roundRatios.min}× / ${r.roundRatios.median}× / ${r.roundRatios.max}×`,
      '',
    ],
    [
      '  of which user / system (the kernel’s, for the requests), plain / flow',
      `${fmt(r.plain.userUs, 1)} / ${fmt(r.plain.sysUs, 1)} µs; ${fmt(r.flow.userUs, 1)} / ${fmt(r.flow.sysUs, 1)} µs: user ${r.userRatio}×`,
      '',
    ],
    [
      '  commands (script calls) per job, plain / flow',
      `${fmt(r.plain.commands, 2)} (${r.plain.scriptCalls}) / ${fmt(r.flow.commands, 2)} (${r.flow.scriptCalls}) = ${r.commandsRatio}×`,
      verdict(r.commandsRatio <= 1.2, '≤ 1.2×'),
    ],
  ];
}

function memoryRows(plainMem: MemoryResult, oneKey: MemoryResult, distinct: MemoryResult, perKey: number): Row[] {
  const d = distinct.drained!;
  const p = plainMem.drained!;
  // '#'-fields are the topic's own (its ready count, the hashtable marker)
  const keyFields = d.flowFields - d.flowFieldNames.filter((f) => f.startsWith('#')).length;
  return [
    [
      `memory: ${fmt(N.memoryKeys)} ready jobs, plain / flow one key / flow distinct keys`,
      `${fmt(plainMem.perJob)} / ${fmt(oneKey.perJob)} / ${fmt(distinct.perJob)} B a job`,
      '',
    ],
    ['  bytes per active key (distinct less one key)', `${fmt(perKey, 1)} B`, ''],
    [
      '  all claimed and acked: used_memory − before, flow distinct keys / plain',
      `${fmt(d.leftBytes)} / ${fmt(p.leftBytes)} B (drained in ${d.drainS} / ${p.drainS} s)`,
      '',
    ],
    [
      '  left: #flow fields / #lanes / #fwait / lane keys',
      `${d.flowFields}${d.flowFields ? ` (${d.flowFieldNames.map((f) => JSON.stringify(f)).join(', ')})` : ''} / ${d.lanes} / ${d.waits} / ${d.laneKeys} (${d.keyCount} keys in all)`,
      verdict(
        keyFields === 0 && d.lanes === 0 && d.waits === 0 && d.laneKeys === 0,
        'idle keys cost 0 B: no key’s state',
      ),
    ],
  ];
}

async function cheap(): Promise<Section> {
  const runs = await costs();
  const plainMem = await memoryRun('plain', N.memoryKeys);
  const oneKey = await memoryRun('one key', N.memoryKeys);
  const distinct = await memoryRun('distinct keys', N.memoryKeys);
  const perKey = (distinct.filled - distinct.baseline - (oneKey.filled - oneKey.baseline)) / N.memoryKeys;
  return {
    name: 'cheap',
    json: { runs, memory: { plain: plainMem, oneKey, distinct, perKey: round(perKey, 1) }, load: load() },
    rows: [...runs.flatMap(costRows), ...memoryRows(plainMem, oneKey, distinct, perKey)],
  };
}

// ---------------------------------------------------------------------------------------------
// 4. pause

const PAUSE_TOPIC = 'paused';

/** A pause's window: TIME before it was sent, right after it answered, and before its resume was sent. */
type Window = { before: number; paused: number; resume: number };
type Start = { key: string; at: number };

/**
 * Jobs flowing on the keys: a producer keeping 50 unclaimed a key, a sweeper, and 4 claim loops
 * (claimStarted of 10, each acked after 2–10 ms); each start noted with its claim time.
 */
function flowingJobs(engine: Engine, keys: readonly string[]) {
  const starts: Start[] = [];
  const added = new Map<string, number>();
  const claimed = new Map<string, number>();
  let stop = false;
  const producer = async () => {
    while (!stop) {
      const jobs: NewJob[] = [];
      for (const key of keys) {
        const n = added.get(key) ?? 0;
        if (n - (claimed.get(key) ?? 0) >= 50) continue;
        for (let i = 0; i < 50; i++)
          jobs.push(newJob(engine, PAUSE_TOPIC, `${key}.${n + i}`, { kind: 'd', ms: 0 }, key));
        added.set(key, n + 50);
      }
      if (jobs.length > 0) await addAll(engine, jobs);
      await sleep(10);
    }
  };
  const worker = async () => {
    while (!stop) {
      const jobs = await engine.claimStarted(PAUSE_TOPIC, 10);
      for (const j of jobs) {
        const key = keyOf(j.id);
        starts.push({ key, at: j.runAt + j.latenessMs });
        claimed.set(key, (claimed.get(key) ?? 0) + 1);
      }
      const ack = async (j: ClaimedJob) => {
        await sleep(2 + Math.random() * 8);
        await engine.ack(PAUSE_TOPIC, j.id, j);
      };
      await Promise.all(jobs.map(ack));
      if (jobs.length === 0) await sleep(2);
    }
  };
  const loops = [producer(), sweepLoop(engine, () => stop), ...Array.from({ length: 4 }, worker)];
  return {
    starts,
    async stop() {
      stop = true;
      await Promise.all(loops);
    },
  };
}

/** N.pauseCycles pauses and resumes, 30 ms each; their windows on the Redis clock. */
async function cycles(redis: Redis, pauseIt: () => Promise<unknown>, resumeIt: () => Promise<unknown>) {
  const windows: Window[] = [];
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
}

/**
 * Starts of `of` after a pause answered (a later millisecond than TIME read after it) and before
 * its resume was sent (an earlier millisecond than TIME read before it); and those in the pause's
 * own milliseconds.
 */
function countInside(starts: readonly Start[], windows: readonly Window[], of: (s: Start) => boolean) {
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
}

/** The seconds the cycles took, and the starts of `of` over them. */
function overCycles(starts: readonly Start[], windows: readonly Window[], of: (s: Start) => boolean) {
  const first = windows[0];
  const last = windows.at(-1);
  return {
    startsDuringCycles: starts.filter((s) => of(s) && first && last && s.at >= first.before && s.at <= last.resume)
      .length,
    spanS: round(first && last ? (last.resume - first.before) / 1000 : 0, 1),
  };
}

function pauseRows(json: ReturnType<typeof pauseJson>, key: string): Row[] {
  const { topic, key: k } = json;
  return [
    ['load', `${fmt(json.starts)} starts, 20 keys, concurrency 2 each, 4 claim loops`, ''],
    [
      `topic: ${N.pauseCycles} pauses and resumes`,
      `${fmt(topic.startsDuringCycles)} starts over the ${topic.spanS} s of the cycles`,
      '',
    ],
    [
      '  starts after a pause answered, before its resume',
      `${topic.inside} (${topic.sameMs} in the pause's own milliseconds)`,
      verdict(topic.inside === 0, '0'),
    ],
    [
      `key ${key}: ${N.pauseCycles} pauses and resumes`,
      `${fmt(k.startsDuringCycles)} of its starts over the ${k.spanS} s; the other keys ${fmt(k.othersInsidePauses)} inside its pauses`,
      '',
    ],
    [
      '  its starts after a pause answered, before its resume',
      `${k.inside} (${k.sameMs} in the pause's own milliseconds)`,
      verdict(k.inside === 0, '0'),
    ],
  ];
}

function pauseJson(starts: readonly Start[], topicWindows: Window[], keyWindows: Window[], key: string) {
  const all = () => true;
  const isKey = (s: Start) => s.key === key;
  const { startsDuringCycles: topicStarts, spanS: topicSpan } = overCycles(starts, topicWindows, all);
  const { startsDuringCycles: keyStarts, spanS: keySpan } = overCycles(starts, keyWindows, isKey);
  return {
    cycles: N.pauseCycles,
    starts: starts.length,
    topic: { ...countInside(starts, topicWindows, all), startsDuringCycles: topicStarts, spanS: topicSpan },
    key: {
      ...countInside(starts, keyWindows, isKey),
      startsDuringCycles: keyStarts,
      spanS: keySpan,
      othersInsidePauses: countInside(starts, keyWindows, (s) => s.key !== key).inside,
    },
    load: load(),
  };
}

async function pause(): Promise<Section> {
  return withRedis(async (_server, redis) => {
    const engine = flowEngine(redis, { [PAUSE_TOPIC]: { concurrency: 100, flow: { concurrency: 2 } } }, 0);
    const keys = keyNames(20);
    const KEY = keys[0]!;
    const jobs = flowingJobs(engine, keys);
    let topicWindows: Window[] = [];
    let keyWindows: Window[] = [];
    try {
      await sleep(500);
      topicWindows = await cycles(
        redis,
        () => engine.pauseTopic(PAUSE_TOPIC),
        () => engine.resumeTopic(PAUSE_TOPIC),
      );
      await sleep(200);
      keyWindows = await cycles(
        redis,
        () => engine.setFlowKey(PAUSE_TOPIC, KEY, { paused: true }),
        () => engine.setFlowKey(PAUSE_TOPIC, KEY, { paused: false }),
      );
      await sleep(200);
    } finally {
      await jobs.stop();
    }
    const json = pauseJson(jobs.starts, topicWindows, keyWindows, KEY);
    return { name: 'pause', json, rows: pauseRows(json, KEY) };
  });
}

// ---------------------------------------------------------------------------------------------

/** The scenarios asked for (the arguments, and BENCH_FLOW), in their order; all when none is. */
function chosenScenarios(): Scenario[] {
  const asked = [...process.argv.slice(2), ...(process.env.BENCH_FLOW ?? '').split(',')]
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = asked.filter((s) => !(SCENARIOS as readonly string[]).includes(s));
  if (unknown.length > 0)
    throw new Error(`unknown scenario ${unknown.join(', ')}: choose among ${SCENARIOS.join(', ')}`);
  return asked.length > 0 ? SCENARIOS.filter((s) => asked.includes(s)) : [...SCENARIOS];
}

async function main(): Promise<void> {
  const chosen = chosenScenarios();
  const run: Record<Scenario, () => Promise<Section>> = { exact, fair, cheap, pause };
  const at = new Date().toISOString();
  const loadAtStart = load();
  const probe = await withRedis((server, redis) => machineOf(redis, server.pid));
  console.log(`${machineLine(probe)}; load average ${loadAtStart.join(' / ')}`);
  console.log(`scenarios: ${chosen.join(', ')}; ${JSON.stringify(N)}`);
  const sections: Section[] = [];
  for (const name of chosen) {
    const began = performance.now();
    const section = await withoutMetrics(run[name]);
    sections.push(section);
    console.log(`\n${name} (${fmt((performance.now() - began) / 1000, 1)} s; load average ${load().join(' / ')})`);
    printTable(section.rows, ['measure', 'result', 'goal']);
  }
  printJson({
    bench: 'flow',
    at,
    counts: N,
    loadAverage: { start: loadAtStart, end: load() },
    machine: probe,
    results: Object.fromEntries(sections.map((s) => [s.name, s.json])),
  });
}

runBench(main, { forceExit: true });
