/**
 * A model run: a seeded random sequence of every operation (adds with groups, jitter, options
 * and expiries near the clock; adds with a dedupe or debounce key of KEYS; batches; puts and
 * deletes with and without If-Match; group cancels; schedule puts,
 * pauses, resumes and deletes; redrives; claims, starts, acks and fails; sweeps; the fixed
 * TestClock moving on; listings read a page at a time between other operations) sent to the real
 * engine on real redis-servers, each answer checked against the reference model (./reference.ts)
 * and every job the step touched read back and compared. Faults (./servers.ts): replies dropped
 * (the client does not know whether the change was made: the run keeps a model of each case, and
 * retries as a client would), a replica held back and a failover to it under durability
 * `replica`, and Redis restarts from its append-only file.
 *
 * Invariants, each named in a violation's message:
 *   [lost]           nothing acknowledged is lost: what the model holds, the engine holds;
 *   [cancelled-starts], [deleted-starts]  no cancelled or deleted job or occurrence starts afterwards;
 *   [runs-twice]     no occurrence of a schedule runs twice;
 *   [version]        no version names two contents (every (job, version) seen in any answer), and
 *                    a job's version never goes back (but across a failover);
 *   [listing]        a listing shows every job that stays in it for the whole listing, each once
 *                    (the ready list: at least once), and only jobs that are in it;
 *   [durability]     an answer acknowledged while the replica was held back holds after a failover;
 *   [expiry]         no attempt starts at or after its job's expiresAt (the job ends expired instead);
 *   [dedupe]         no dedupe key admits two jobs within its window (from the answers alone);
 *   [debounce]       a debounce job is claimed with the body of the last add folded into it;
 *   [priority]       a claim hands out no job while a job of its partition that comes first stays ready: one of a
 *                    higher priority, or of its priority (not 0) ready since an earlier step (Model.passedOver);
 *                    every job and schedule read back shows its priority (its own, else its topic's default);
 *   [model]          any other disagreement between the engine and the model.
 * Jobs and schedules of topics a and b carry priorities of PRIORITIES half the time (b's default is B_PRIORITY);
 * topic c's have none, so the claims of a topic without prioritized jobs are run too.
 * A violation carries the seed, the step and the tail of the operation history.
 */
import { Redis } from 'ioredis';
import type { Queue } from '../../support/queue';
import type { ClaimedJob, Job } from '../../../lib/engine';
import { jitterOffsetMs } from '../../../lib/core/pacing';
import { CLIENT_OPTIONS, isUnavailable } from '../../../lib/platform/redis';
import { until } from '../../../scripts/support/process';
import { makeQueue, TestClock } from '../../support/queue';
import {
  keyOf,
  Model,
  show,
  type Answer,
  type Backoff,
  type Cx,
  type IfMatch,
  type JobSpec,
  type KeyedAdd,
  type ListingSpec,
  type ModelConfig,
  type ScheduleSpec,
  type TopicModel,
} from './reference';
import { Topology } from './servers';
import { HttpError } from '../../../lib/testing';
import { jobService } from '../../../lib/api/job-routes';

const SEC = 1000;
const RETENTION_S = 120;
const DEAD_RETENTION_S = 900;
const DURABILITY_TIMEOUT_S = 0.05; // a held-back replica costs each change 50 ms, then 503
const GROUPS = ['g0', 'g1', 'g2', 'g3', 'g4', 'g5'];
const NEVER = '\u0000never matches\u0000';
const REGISTRY_KEPT = 300_000;
const BACKLOG = 100; // ready jobs of a topic past which handlers work in batches (long runs stay the same size)
const HIGHEST_KEPT = 20_000; // jobs whose highest version seen is kept: the latest ones (occurrence ids never end)
const HELD_KEPT = 60; // attempts a handler holds at most: older ones it "crashed" on (they time out)
const KEYS = ['k0', 'k1', 'k2']; // dedupe and debounce keys per topic: few, so that adds of one key meet
const EXPIRE_AFTER_S = 90; // topic c's expireAfter default: jobs left waiting through a long tick expire
const DEDUPE_WINDOW_S = 40; // topic c's dedupe window default
const B_PRIORITY = 1; // topic b's priority default
// priorities jobs and schedules of topics a and b carry (0 the most common), when they carry one
const PRIORITIES = [0, 0, 0, 1, 2, 3, -1, -2];

export interface Faults {
  /** Replies lost on the way back (a proxy cuts the connection after the command ran). */
  drops?: boolean;
  /** A replica held back, then let catch up or failed over to (durability `replica`). */
  failover?: boolean;
  /** Redis killed and restarted from its append-only file, between steps and during a change. */
  restart?: boolean;
}

export interface RunOptions {
  seed: number;
  steps: number;
  faults?: Faults;
  partitions?: number;
  /** Progress and fault lines (default: none). */
  log?: (line: string) => void;
  /** Operations of the history a violation prints. */
  historyTail?: number;
  /**
   * Listing violations to report and go on after (they leave the model as it is), to look for
   * other violations past a known listing bug; none by default: every violation ends the run.
   */
  tolerateListings?: boolean;
}

export interface RunResult {
  seed: number;
  steps: number;
  ms: number;
  violation: ModelViolation | null;
  /** Listing violations gone on after (tolerateListings). */
  tolerated: ModelViolation[];
  counts: Record<string, number>;
}

/** The engine and the model disagree: a broken promise, or a model that is wrong. */
export class ModelViolation extends Error {
  constructor(
    readonly seed: number,
    readonly step: number,
    readonly detail: string,
    readonly history: string[],
  ) {
    super(
      `model violation, seed ${seed}, step ${step}: ${detail}\n  history (oldest first):\n    ${history.join('\n    ')}`,
    );
    this.name = 'ModelViolation';
  }

  /** The invariant the message names ([lost], [version], ...), or model. */
  get invariant(): string {
    return /\[([a-z-]+)\]/.exec(this.detail)?.[1] ?? 'model';
  }
}

/** A small seeded PRNG (mulberry32): the same seed, the same run. */
class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  next(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(this.s ^ (this.s >>> 15), 1 | this.s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
}

/** A client operation: the engine call, and what the model makes of its answer. */
interface Op<T> {
  desc: string;
  /** A change the API acknowledges only once durable (503 NOT_REPLICATED otherwise). */
  change: boolean;
  /** The next command holding this text loses its reply, when the run drops one. */
  dropPattern?: string;
  /** After a lost answer the client sends it again (else the run keeps both models as they are). */
  retry: boolean;
  call(): Promise<T>;
  model(m: Model, ans: Answer<T>, cx: Cx): string | null;
  /**
   * What a lost answer may have left besides nothing and all of it: an operation that works
   * partition by partition may stop after any of them (one model per such state, made here).
   */
  partly?(m: Model, cx: Cx): Model[];
  /** Sees every answer (`applied` for one lost or not replicated), after the models took it. */
  after?(ans: Answer<T>): void;
}

/** An attempt a handler holds (a claim it got), until it acks or fails it. */
interface Held {
  topic: string;
  id: string;
  attempt: number;
  claim: string;
  started: boolean;
}

interface Listing {
  n: number;
  spec: ListingSpec;
  limit: number;
  cursor: string | undefined;
  pages: number;
  /** Jobs in the listing since it began, unchanged: each must show. */
  stays: Map<string, string>;
  seen: Map<string, number>;
}

type Outcome<T> = { kind: 'value'; value: T } | { kind: 'error'; error: HttpError } | { kind: 'lost'; error: unknown };

const toJobBackoff = (b: Backoff): unknown =>
  b.kind === 'fixed'
    ? { type: 'fixed', delay: b.ms / 1000 }
    : b.kind === 'exp'
      ? { type: 'exponential', delay: b.baseMs / 1000, max: b.capMs / 1000, jitter: 0 }
      : b.ms.map((ms) => `${ms / 1000}s`).join(' ');

/** The content of a job's version: everything an answer shows but whether it is delayed or ready (not a write). */
function content(job: Job): string {
  // a dead job listed as dead also carries diedAt, its score in the dead zset, not its record
  const { version: _version, state, diedAt: _diedAt, ...rest } = job as Job & { diedAt?: string };
  return JSON.stringify({ ...rest, state: state === 'ready' ? 'delayed' : state });
}

export class ModelRun {
  private readonly rng: Rng;
  private readonly faults: Required<Faults>;
  private readonly topology: Topology;
  private client!: Redis;
  private q!: Queue;
  private readonly clock = new TestClock();
  private readonly topics: string[];
  private readonly config: ModelConfig;
  private branches: Model[] = [];
  private step = 0;
  private readonly history: string[] = [];
  private readonly registry = new Map<string, string>();
  private readonly highest = new Map<string, number>();
  private held: Held[] = [];
  private ended: Held[] = [];
  private listings: Listing[] = [];
  private listingCount = 0;
  /** While the replica is held back: the model as the replica has it, and the answers acknowledged meanwhile. */
  private hold: {
    since: number;
    until: number;
    snapshot: Model[];
    acknowledged: { step: number; op: Op<unknown>; ans: Answer<unknown> }[];
  } | null = null;
  /** Changes answered 503 that the client sends again once the replica answers. */
  private retryLater: Op<unknown>[] = [];
  private touched = new Set<string>();
  readonly counts: Record<string, number> = {};
  private readonly ids: Record<string, string[]> = {};
  private readonly scheduleIds = ['s0', 's1', 's2', 's3'];
  private nonce = 0;
  /** Dedupe keys (topic/key): the job each admitted last, and until when its window holds. */
  private readonly admitted = new Map<string, { id: string; until: number }>();
  /** Debounce jobs (topic/id): the body of the last add folded into each (its last answered add). */
  private readonly lastBody = new Map<string, string>();
  /** Jobs (topic/id) an attempt of which a start answered live since the last read-back: when. */
  private readonly startsSeen = new Map<string, number>();

  constructor(readonly options: RunOptions) {
    this.rng = new Rng(options.seed);
    this.faults = { drops: false, failover: false, restart: false, ...options.faults };
    this.topology = new Topology({
      drops: this.faults.drops,
      replica: this.faults.failover,
      appendOnly: this.faults.restart,
    });
    // named by the seed (each run has redis-servers of its own): jitter offsets and partitions follow
    // from the names, so the same seed makes the same run
    this.topics = [`m${options.seed}a`, `m${options.seed}b`, `m${options.seed}c`];
    const [a, b, c] = this.topics as [string, string, string];
    this.ids[a] = Array.from({ length: 90 }, (_, i) => `j${i}`);
    this.ids[b] = Array.from({ length: 40 }, (_, i) => `j${i}`);
    this.ids[c] = Array.from({ length: 30 }, (_, i) => `j${i}`);
    const hour = 3_600_000; // the dedupe window's default
    const topicModels: Record<string, TopicModel> = {
      [a]: {
        maxAttempts: 3,
        backoff: { kind: 'fixed', ms: 5 * SEC },
        ttrMs: 20 * SEC,
        concurrency: 6,
        jitterMs: 0,
        expireAfterMs: null,
        dedupeWindowMs: hour,
        priority: 0,
      },
      [b]: {
        maxAttempts: 2,
        backoff: { kind: 'exp', baseMs: 2 * SEC, capMs: 30 * SEC },
        ttrMs: 60 * SEC,
        concurrency: 1000,
        jitterMs: 20 * SEC,
        expireAfterMs: null,
        dedupeWindowMs: hour,
        priority: B_PRIORITY,
      },
      [c]: {
        maxAttempts: 2,
        backoff: { kind: 'fixed', ms: 3 * SEC },
        ttrMs: 10 * SEC,
        concurrency: 50,
        jitterMs: 0,
        expireAfterMs: EXPIRE_AFTER_S * SEC,
        dedupeWindowMs: DEDUPE_WINDOW_S * SEC,
        priority: 0,
      },
    };
    const partitions = options.partitions ?? 2;
    this.config = {
      topics: topicModels,
      partitions,
      retentionMs: RETENTION_S * SEC,
      deadRetentionMs: DEAD_RETENTION_S * SEC,
      offsetOf: jitterOffsetMs,
      partitionOf: (topic, id) => this.q.engine.partitionOf(topic, id),
    };
  }

  private get model(): Model {
    return this.branches[0]!;
  }

  private count(what: string): void {
    this.counts[what] = (this.counts[what] ?? 0) + 1;
  }

  private log(line: string): void {
    this.options.log?.(`[seed ${this.options.seed} step ${this.step}] ${line}`);
  }

  private note(line: string): void {
    this.history.push(`${this.step}: ${line}`);
    const tail = this.options.historyTail ?? 40;
    if (this.history.length > tail) this.history.splice(0, this.history.length - tail);
  }

  private violation(detail: string): ModelViolation {
    return new ModelViolation(this.options.seed, this.step, detail, [...this.history]);
  }

  private readonly tolerated: ModelViolation[] = [];

  /** A listing violation: thrown, or with tolerateListings kept and gone on after. */
  private listingViolation(detail: string): void {
    const v = this.violation(detail);
    if (!this.options.tolerateListings) throw v;
    this.tolerated.push(v);
    this.count('listing violations');
    this.log(`tolerated: ${detail}`);
  }

  async run(): Promise<RunResult> {
    const started = Date.now();
    let violation: ModelViolation | null = null;
    try {
      await this.setUp();
      for (this.step = 1; this.step <= this.options.steps; this.step++) await this.oneStep();
      this.step = this.options.steps + 1;
      await this.drain();
    } catch (error) {
      if (error instanceof ModelViolation) violation = error;
      else
        violation = this.violation(
          `[harness] ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
        );
    } finally {
      this.client?.disconnect();
      await this.topology.stop();
    }
    return {
      seed: this.options.seed,
      steps: Math.min(this.step, this.options.steps),
      ms: Date.now() - started,
      violation,
      tolerated: this.tolerated,
      counts: this.counts,
    };
  }

  private async setUp(): Promise<void> {
    await this.topology.start();
    // the Lambdas' client settings (nothing re-sent behind the caller's back), but a command
    // timeout a loaded test machine never reaches: a reply the run loses, it fails at once itself
    this.client = new Redis(this.topology.url, { ...CLIENT_OPTIONS, commandTimeout: 10_000, retryStrategy: () => 20 });
    this.client.on('error', () => undefined); // a dropped reply or a restart: the call that saw it reports it
    const [a, b, c] = this.topics as [string, string, string];
    this.q = makeQueue(
      this.client,
      {
        [a]: { maxAttempts: 3, backoff: { type: 'fixed', delay: 5 }, ttr: 20, concurrency: 6 },
        [b]: {
          maxAttempts: 2,
          backoff: { type: 'exponential', delay: 2, max: 30, jitter: 0.2 },
          ttr: 60,
          concurrency: 1000,
          jitter: 20,
          priority: B_PRIORITY,
        },
        [c]: {
          maxAttempts: 2,
          backoff: { type: 'fixed', delay: 3 },
          ttr: 10,
          concurrency: 50,
          expireAfter: EXPIRE_AFTER_S,
          dedupeWindow: DEDUPE_WINDOW_S,
        },
      },
      {
        clock: this.clock,
        config: {
          partitions: this.config.partitions,
          retention: RETENTION_S,
          deadRetention: DEAD_RETENTION_S,
          ...(this.faults.failover ? { durability: 'replica', durabilityTimeout: DURABILITY_TIMEOUT_S } : {}),
        },
      },
    );
    this.branches = [Model.empty(this.config, this.clock.now)];
  }

  // ---- running an operation -------------------------------------------------------------------

  /**
   * The client (CLIENT_OPTIONS: never re-sent) leaves a command whose connection was cut to its
   * commandTimeout (2 s); once the proxy has dropped a reply, the run fails those commands at once
   * instead, through ioredis's queue of the cut connection (same outcome, a lost answer, sooner).
   */
  private failCutCommands(): void {
    const queue = (
      this.client as unknown as {
        prevCommandQueue?: { length: number; shift(): { command: { reject(e: Error): void } } } | null;
      }
    ).prevCommandQueue;
    while (queue && queue.length > 0)
      queue.shift().command.reject(new Error('Connection is closed (the reply was dropped)'));
  }

  private async attempt<T>(op: Op<T>, drop: boolean): Promise<Outcome<T>> {
    const before = this.topology.dropped;
    if (drop && op.dropPattern) this.topology.dropReplyTo(op.dropPattern);
    const watch = drop
      ? setInterval(() => this.topology.dropped > before && this.client.status !== 'ready' && this.failCutCommands(), 2)
      : undefined;
    try {
      return { kind: 'value', value: await op.call() };
    } catch (error) {
      if (error instanceof HttpError) return { kind: 'error', error };
      if (isUnavailable(error) || (error instanceof Error && /Connection is closed|Socket closed/.test(error.message)))
        return { kind: 'lost', error };
      throw error;
    } finally {
      clearInterval(watch);
      if (drop) {
        this.topology.dropReplyTo(NEVER);
        if (this.topology.dropped > before) this.count('dropped');
      }
    }
  }

  /** Applies `ans` to every model; keeps those that allow it. */
  private apply<T>(op: Op<T>, ans: Answer<T>, retry: boolean): void {
    const cx: Cx = { touched: this.touched, retry };
    const reasons: string[] = [];
    const kept = this.branches.filter((m) => {
      m.s.step = this.step;
      const reason = op.model(m, ans, cx);
      if (reason !== null) reasons.push(reason);
      return reason === null;
    });
    if (kept.length === 0)
      throw this.violation(
        reasons.length > 1
          ? `${reasons[0]} (and in the other ${reasons.length - 1} cases: ${reasons.slice(1).join(' | ')})`
          : reasons[0]!,
      );
    this.branches = kept;
  }

  private answerOf<T>(outcome: Outcome<T>): Answer<T> | null {
    if (outcome.kind === 'value') return { kind: 'value', value: outcome.value };
    if (outcome.kind === 'lost') return null;
    const e = outcome.error;
    if (e.status === 503 && e.code === 'NOT_REPLICATED') return { kind: 'applied' };
    const job = (e.details as { job?: Job | null } | undefined)?.job;
    return { kind: 'error', status: e.status, code: e.code, ...(job !== undefined ? { job } : {}) };
  }

  /**
   * Sends `op` (losing its reply when `drop`), checks the answer against every model, and does
   * what a client does: after a lost answer it sends a retryable change again; after a 503 it
   * sends it again at once, and once more when the replica answers.
   */
  private async exec<T>(op: Op<T>, options: { drop?: boolean; kill?: boolean; retry?: boolean } = {}): Promise<void> {
    const drop = options.drop === true && op.dropPattern !== undefined;
    let outcome: Outcome<T>;
    if (options.kill) {
      const pending = this.attempt(op, false);
      await new Promise((resolve) => setImmediate(resolve));
      this.topology.killPrimaryNow();
      const watch = setInterval(() => this.client.status !== 'ready' && this.failCutCommands(), 2);
      outcome = await pending.finally(() => clearInterval(watch));
      this.note(`restart of Redis during: ${op.desc}`);
      await this.topology.restart();
      await this.reconnected();
      this.count('restarts');
    } else outcome = await this.attempt(op, drop);
    this.recordAnswer(outcome);
    const ans = this.answerOf(outcome);
    if (ans === null) {
      // no answer: the change may or may not have been made
      this.note(
        `${op.desc} → no answer (${(outcome as { error: Error }).error?.message ?? 'lost'})${op.retry ? ', sent again' : ''}`,
      );
      this.count('lost answers');
      const made = this.branches.map((m) => m.clone());
      const cx: Cx = { touched: this.touched, retry: false };
      const partly = op.partly ? this.branches.flatMap((m) => op.partly!(m, cx)) : [];
      for (const m of made) {
        m.s.step = this.step;
        const reason = op.model(m, { kind: 'applied' }, cx);
        if (reason !== null) throw new Error(`the model refused an applied ${op.desc}: ${reason}`);
      }
      this.branches.push(...made, ...partly);
      op.after?.({ kind: 'applied' });
      await this.reconnected();
      if (op.retry) await this.exec(op, { retry: true });
      return;
    }
    this.note(`${op.desc}${options.retry ? ' (again)' : ''} → ${show(ans)}`);
    if (ans.kind === 'applied') {
      this.count('503 not replicated');
      this.apply(op, ans, options.retry === true);
      op.after?.(ans);
      if (!options.retry) await this.exec(op, { retry: true });
      else if (this.hold) this.retryLater.push(op as Op<unknown>);
      return;
    }
    this.apply(op, ans, options.retry === true);
    op.after?.(ans);
    if (this.hold && op.change)
      this.hold.acknowledged.push({ step: this.step, op: op as Op<unknown>, ans: ans as Answer<unknown> });
  }

  private async reconnected(): Promise<void> {
    const ok = await until(async () => (await this.client.ping()) === 'PONG', 20_000, 10);
    if (!ok) throw new Error('the client did not reconnect');
  }

  /** Every job an answer carries goes to the version registry. */
  private recordAnswer(outcome: Outcome<unknown>): void {
    const jobs: Job[] = [];
    const add = (v: unknown) => {
      if (v && typeof v === 'object' && 'version' in v && 'topic' in v && 'runAt' in v) jobs.push(v as Job);
    };
    if (outcome.kind === 'value') {
      const v = outcome.value as Record<string, unknown> | Job | null;
      add(v);
      if (v && typeof v === 'object') {
        add((v as { job?: unknown }).job);
        for (const o of (v as { outcomes?: { job?: unknown }[] }).outcomes ?? []) add(o.job);
      }
    } else if (outcome.kind === 'error') add((outcome.error.details as { job?: unknown } | undefined)?.job);
    for (const job of jobs) this.recordVersion(job);
  }

  private recordVersion(job: Job): void {
    const key = `${job.topic}/${job.id}`;
    const at = `${key}@${job.version}`;
    const text = content(job);
    const before = this.registry.get(at);
    if (before !== undefined && before !== text)
      throw this.violation(
        `[version] version ${job.version} of ${key} names two contents:\n      first ${before}\n      now   ${text}`,
      );
    this.registry.set(at, text);
    // every version seen, up to the latest REGISTRY_KEPT (a repeat shows within a failover's reach)
    if (this.registry.size > REGISTRY_KEPT) {
      let drop = this.registry.size - REGISTRY_KEPT + REGISTRY_KEPT / 10;
      for (const k of this.registry.keys()) {
        if (drop-- <= 0) break;
        this.registry.delete(k);
      }
    }
    const highest = this.highest.get(key) ?? 0;
    if (job.version < highest)
      throw this.violation(`[version] ${key} is at version ${job.version} after version ${highest} was seen`);
    this.highest.delete(key);
    this.highest.set(key, job.version);
    if (this.highest.size > HIGHEST_KEPT)
      for (const k of [...this.highest.keys()].slice(0, HIGHEST_KEPT / 10)) this.highest.delete(k);
  }

  // ---- checks ---------------------------------------------------------------------------------

  /** Reads every touched job and schedule back and compares it with every model; keeps those that agree. */
  private async checkTouched(extra: Iterable<string> = []): Promise<void> {
    const keys = new Set([...this.touched, ...extra]);
    this.touched = new Set();
    const jobKeys = [...keys].filter((k) => !k.startsWith('schedule:'));
    const scheduleKeys = [...keys].filter((k) => k.startsWith('schedule:')).map((k) => k.slice('schedule:'.length));
    const split = (key: string) => {
      const i = key.indexOf('/');
      return [key.slice(0, i), key.slice(i + 1)] as const;
    };
    const jobs = await Promise.all(jobKeys.map((k) => this.q.get(...split(k))));
    const schedules = await Promise.all(scheduleKeys.map((k) => this.q.getSchedule(...split(k))));
    for (const job of jobs) {
      if (!job) continue;
      this.recordVersion(job);
      this.checkStartsBeforeExpiry(job);
    }
    if (this.startsSeen.size > 0)
      throw this.violation(`[harness] started but not read back: ${[...this.startsSeen.keys()]}`);
    const reasons: string[] = [];
    this.branches = this.branches.filter((m) => {
      for (let i = 0; i < jobKeys.length; i++) {
        const reason = m.compare(m.s.jobs[jobKeys[i]!], jobs[i]!, `read back ${jobKeys[i]}`);
        if (reason) return (void reasons.push(reason), false);
      }
      for (let i = 0; i < scheduleKeys.length; i++) {
        const reason = m.compareSchedule(
          m.s.schedules[scheduleKeys[i]!],
          schedules[i]!,
          `read back schedule ${scheduleKeys[i]}`,
        );
        if (reason) return (void reasons.push(reason), false);
      }
      return true;
    });
    if (this.branches.length === 0) throw this.violation(reasons.join(' | '));
    if (this.branches.length > 1) {
      const unique = new Map(this.branches.map((m) => [m.canonical(), m]));
      this.branches = [...unique.values()];
      if (this.branches.length > 16)
        throw new Error(`${this.branches.length} models agree with every answer: too many to follow`);
    }
  }

  /**
   * No attempt started at or after its job's expiresAt ([expiry]): each start the engine answered live, against the
   * expiry the job shows read back right after (no change comes between). The job's attemptHistory is not used: an
   * attempt failed without a start (a caller's fail, or the sixth give-back) is recorded there from its claim.
   */
  private checkStartsBeforeExpiry(job: Job): void {
    const key = keyOf(job.topic, job.id);
    const at = this.startsSeen.get(key);
    if (at === undefined) return;
    this.startsSeen.delete(key);
    if (job.expiresAt !== null && at >= Date.parse(job.expiresAt))
      throw this.violation(
        `[expiry] ${key} started an attempt at ${new Date(at).toISOString()}, at or after its expiresAt ${job.expiresAt}`,
      );
  }

  /** Notes the attempts a start answered live (checked at the read-back: checkStartsBeforeExpiry). */
  private noteStarts(topic: string, refs: readonly { id: string }[], ans: Answer<boolean[]>): void {
    if (ans.kind !== 'value') return;
    refs.forEach((r, i) => ans.value[i] && this.startsSeen.set(keyOf(topic, r.id), this.clock.now));
  }

  /** Every job and schedule any model knows, or knew (deleted ones must read as none). */
  private everyKey(): Set<string> {
    const keys = new Set<string>();
    for (const m of this.branches) {
      for (const k of Object.keys(m.s.jobs)) keys.add(k);
      for (const k of Object.keys(m.s.gone)) keys.add(k);
      for (const k of Object.keys(m.s.schedules)) keys.add(`schedule:${k}`);
    }
    for (const t of this.topics) for (const id of this.scheduleIds) keys.add(`schedule:${keyOf(t, id)}`);
    return keys;
  }

  // ---- one step -------------------------------------------------------------------------------

  private async oneStep(): Promise<void> {
    const r = this.rng.next();
    await this.maybeFault();
    const t0 = performance.now();
    await this.pickOp(r);
    const t1 = performance.now();
    const kind = this.history.at(-1)?.split(' ')[1] ?? '?';
    this.opTime[kind] = (this.opTime[kind] ?? 0) + (t1 - t0);
    await this.checkTouched(this.step % 100 === 0 ? this.everyKey() : []);
    this.followListings();
    if (this.step % 250 === 0) await this.checkListingsNow();
    const t2 = performance.now();
    this.timing.op += t1 - t0;
    this.timing.check += t2 - t1;
    if (this.step % 1000 === 0)
      this.log(`${this.step} steps, ${this.branches.length} model(s), ${Object.keys(this.model.s.jobs).length} jobs`);
  }

  readonly timing = { op: 0, check: 0 };
  readonly opTime: Record<string, number> = {};

  private async pickOp(r: number): Promise<void> {
    // handlers keep up: a topic whose ready backlog grows past BACKLOG gets a handler batch
    const behind = this.topics.find((t) => this.model.claimable(t).length > BACKLOG);
    if (behind !== undefined && this.rng.chance(0.5)) return this.opHandle(behind);
    if (r < 0.16) await this.opAdd();
    else if (r < 0.18) await this.opAddMany();
    else if (r < 0.26) await this.opPut();
    else if (r < 0.32) await this.opCancel();
    else if (r < 0.335) await this.opCancelGroup();
    else if (r < 0.355) await this.opRedrive();
    else if (r < 0.39) await this.opPutSchedule();
    else if (r < 0.4) await this.opDeleteSchedule();
    else if (r < 0.52) await this.opClaim();
    else if (r < 0.61) await this.opStart();
    else if (r < 0.66) await this.opAck();
    else if (r < 0.69) await this.opAckClaim();
    else if (r < 0.73) await this.opFail();
    else if (r < 0.74) await this.opRelease();
    else if (r < 0.82) await this.opSweep();
    else if (r < 0.91) this.opTick();
    else if (r < 0.93)
      this.touched.add(keyOf(this.rng.pick(this.topics), this.rng.pick(this.ids[this.rng.pick(this.topics)]!)));
    else await this.opListing();
  }

  private body(): { text: string; value: unknown } {
    this.nonce += 1;
    const value = this.rng.chance(0.08)
      ? { n: this.nonce, seed: this.options.seed, pad: 'x'.repeat(1500) }
      : { n: this.nonce, seed: this.options.seed };
    return { text: JSON.stringify(value), value };
  }

  /** A random job input for the API, and the same job as the model takes it. */
  private jobInput(topic: string, id: string): { input: Record<string, unknown>; spec: JobSpec } {
    const now = this.clock.now;
    const body = this.body();
    const input: Record<string, unknown> = { topic, id, body: body.value };
    let when: JobSpec['when'];
    if (this.rng.chance(0.75)) {
      const delay = this.rng.chance(0.15) ? 0 : this.rng.int(1, 120);
      input.delay = delay;
      when = { delayMs: delay * SEC };
    } else {
      const at = now + this.rng.int(-60, 600) * SEC + this.rng.int(0, 999);
      input.runAt = this.rng.chance(0.5) ? at : new Date(at).toISOString();
      when = { at };
    }
    const group = this.rng.chance(0.5) ? this.rng.pick(GROUPS) : null;
    if (group) input.group = group;
    let maxAttempts: number | null = null;
    if (this.rng.chance(0.3)) input.maxAttempts = maxAttempts = this.rng.int(1, 4);
    let ttrMs: number | null = null;
    if (this.rng.chance(0.3)) {
      const ttr = this.rng.int(5, 60);
      input.ttr = ttr;
      ttrMs = ttr * SEC;
    }
    let backoff: Backoff | null = null;
    if (this.rng.chance(0.25)) {
      backoff = this.rng.pick<Backoff>([
        { kind: 'fixed', ms: this.rng.int(0, 30) * SEC },
        { kind: 'ladder', ms: [5 * SEC, 20 * SEC] },
        { kind: 'exp', baseMs: 2 * SEC, capMs: 30 * SEC },
      ]);
      input.backoff = toJobBackoff(backoff);
      // a ladder names every retry: the first attempt plus one per step, unless maxAttempts says otherwise
      if (backoff.kind === 'ladder' && maxAttempts === null) maxAttempts = backoff.ms.length + 1;
    }
    let jitterMs: number | null = null;
    if (this.rng.chance(0.25)) {
      const jitter = this.rng.chance(0.2) ? 0 : this.rng.int(1, 90);
      input.jitter = jitter;
      jitterMs = jitter * SEC;
    }
    const base = 'at' in when ? when.at : now + when.delayMs;
    const expires = this.expiryInput(input, base);
    const priority = this.priorityPick(topic);
    if (priority !== null) input.priority = priority;
    return {
      input,
      spec: { topic, id, when, body: body.text, group, maxAttempts, ttrMs, backoff, jitterMs, expires, priority },
    };
  }

  /** A priority of PRIORITIES for a job or schedule of topic a or b, half the time; null: none (the topic's). */
  private priorityPick(topic: string): number | null {
    if (topic === this.topics[2] || this.rng.chance(0.5)) return null;
    return this.rng.pick(PRIORITIES);
  }

  /**
   * Sometimes an expiry near the clock (so that a tick or a retry passes it): `expireAfter`, or an `expiresAt` around
   * `base` (before the job's runAt now and then: refused, 400); none otherwise (topic c: its default).
   */
  private expiryInput(input: Record<string, unknown>, base: number): JobSpec['expires'] {
    delete input.expireAfter;
    delete input.expiresAt;
    if (!this.rng.chance(0.3)) return null;
    if (this.rng.chance(0.5)) {
      const after = this.rng.int(1, 60);
      input.expireAfter = after;
      return { afterMs: after * SEC };
    }
    const at = base + this.rng.int(-3000, 60_000);
    input.expiresAt = this.rng.chance(0.5) ? at : new Date(at).toISOString();
    return { at };
  }

  private dropNow(): boolean {
    return this.faults.drops && this.rng.chance(0.05);
  }

  private killNow(): boolean {
    return this.faults.restart && this.rng.chance(0.004);
  }

  private async send<T>(op: Op<T>): Promise<void> {
    const kill = op.change && this.killNow();
    await this.exec(op, { drop: !kill && this.dropNow(), kill });
  }

  private async opAdd(): Promise<void> {
    if (this.rng.chance(0.4)) return this.opKeyedAdd();
    const topic = this.rng.pick(this.topics);
    const id = this.rng.pick(this.ids[topic]!);
    const { input, spec } = this.jobInput(topic, id);
    await this.send({
      desc: `add ${topic}/${id} ${JSON.stringify({ ...input, topic: undefined, id: undefined, body: undefined })}`,
      change: true,
      dropPattern: spec.body,
      retry: true,
      call: () => this.q.add(input),
      model: (m, ans, cx) => m.add(spec, ans, cx),
    });
  }

  /**
   * An add with a dedupe or debounce key of KEYS (so that adds of one key meet): a caller id `<key>::n<nonce>`, or,
   * where its answer cannot be lost (no drop, restart or failover), one the engine makes.
   */
  private async opKeyedAdd(): Promise<void> {
    const topic = this.rng.pick(this.topics);
    const key = this.rng.pick(KEYS);
    const drop = this.dropNow();
    const made = !drop && !this.faults.failover && !this.faults.restart && this.rng.chance(0.5);
    const { input, spec } = this.jobInput(topic, `${key}::n${this.nonce + 1}`);
    let keyed: KeyedAdd;
    if (this.rng.chance(0.5) || this.debounceUnbounded(topic, key)) {
      const window = this.rng.pick([null, 5, 20, 60]);
      keyed = { kind: 'dedupe', key, windowMs: window === null ? null : window * SEC };
      input.dedupe = window === null ? { key } : { key, window };
    } else {
      const period = this.rng.pick([1, 3, 10]);
      const maxWait = this.rng.pick([undefined, period, 2 * period, 30]);
      keyed = { kind: 'debounce', key, periodMs: period * SEC, maxWaitMs: (maxWait ?? 10 * period) * SEC };
      input.debounce = maxWait === undefined ? { key, period } : { key, period, maxWait };
      delete input.delay;
      delete input.runAt;
      spec.expires = this.expiryInput(input, this.clock.now + period * SEC);
    }
    spec.keyed = keyed;
    if (made) {
      delete input.id;
      spec.id = '';
    }
    await this.exec(
      {
        desc: `add ${topic} ${keyed.kind} ${key} ${JSON.stringify({ ...input, topic: undefined, body: undefined })}`,
        change: true,
        dropPattern: spec.body,
        retry: true,
        call: () => jobService.add(this.q.engine, input),
        model: (m, ans, cx) => m.add(spec, ans, cx),
        after: (ans) => this.keyedLedger(topic, keyed, spec.body, ans),
      },
      { drop },
    );
    this.count(`${keyed.kind} adds`);
  }

  /**
   * The run's own ledgers of keyed adds, kept from the answers alone: a dedupe key never admits two jobs within its
   * window ([dedupe]); a debounce job claimed runs the body of the last add folded into it ([debounce]) unless an add
   * of its key since went unanswered.
   */
  private keyedLedger(topic: string, keyed: KeyedAdd, body: string, ans: Answer<unknown>): void {
    const entry = keyOf(topic, keyed.key);
    const v = ans.kind === 'value' ? (ans.value as { status: string; job: Job | null }) : null;
    if (v === null || v.job === null) {
      // unanswered (or a 503): its key's jobs may hold this body or the one before
      for (const k of [...this.lastBody.keys()]) if (k.startsWith(`${entry}::`)) this.lastBody.delete(k);
      return;
    }
    if (v.status === 'created' && keyed.kind === 'dedupe') {
      const before = this.admitted.get(entry);
      if (before && this.clock.now < before.until)
        throw this.violation(
          `[dedupe] ${entry} admitted ${v.job.id} at ${new Date(this.clock.now).toISOString()}, within the window of ${before.id} (until ${new Date(before.until).toISOString()})`,
        );
      const windowMs = keyed.windowMs ?? this.config.topics[topic]!.dedupeWindowMs;
      this.admitted.set(entry, { id: v.job.id, until: this.clock.now + windowMs });
    }
    if (keyed.kind === 'debounce' && (v.status === 'created' || v.status === 'debounced')) {
      if (v.status === 'debounced') this.count('debounced');
      this.lastBody.set(keyOf(topic, v.job.id), body);
    }
    if (v.status === 'duplicate') this.count('duplicates');
  }

  /** A claimed debounce job carries the body of the last add folded into it ([debounce]). */
  private checkClaimedBodies(topic: string, claimed: readonly ClaimedJob[]): void {
    for (const c of claimed) {
      const want = this.lastBody.get(keyOf(topic, c.id));
      if (want !== undefined && JSON.stringify(c.body) !== want)
        throw this.violation(
          `[debounce] ${topic}/${c.id} claimed (attempt ${c.attempt}) with body ${JSON.stringify(c.body)}, but the last add folded into it sent ${want}`,
        );
    }
  }

  private async opAddMany(): Promise<void> {
    const topic = this.rng.pick(this.topics);
    const ids = new Set<string>();
    const n = this.rng.int(2, 5);
    while (ids.size < n) ids.add(this.rng.pick(this.ids[topic]!));
    const jobs = [...ids].map((id) => this.jobInput(topic, id));
    await this.exec({
      desc: `addMany ${topic} ${[...ids].join(' ')}`,
      change: true,
      retry: true,
      call: () => this.q.addMany(jobs.map((j) => j.input)),
      model: (m, ans, cx) => {
        for (let i = 0; i < jobs.length; i++) {
          const o = ans.kind === 'value' ? ans.value.outcomes[i]! : undefined;
          const one: Answer<{ status: string; job: Job }> =
            o === undefined
              ? (ans as Answer<{ status: string; job: Job }>)
              : o.status === 'invalid'
                ? { kind: 'error', status: o.error.status, code: o.error.code }
                : { kind: 'value', value: o as { status: string; job: Job } };
          const reason = m.add(jobs[i]!.spec, one, cx);
          if (reason) return reason;
        }
        return null;
      },
    });
  }

  /** A version the job had (or has), as a client that read it once would send it. */
  private ifMatchFor(topic: string, id: string): IfMatch {
    const known = this.model.job(topic, id)?.version ?? null;
    const agreed = this.branches.every((m) => (m.job(topic, id)?.version ?? null) === known);
    const r = this.rng.next();
    if (r < 0.45) return undefined;
    if (r < 0.55) return '*';
    if (known !== null && agreed) return r < 0.85 ? known : Math.max(1, known - this.rng.int(1, 3));
    return this.highest.get(keyOf(topic, id)) ?? '*';
  }

  /** Ids of the model's jobs of `topic` made by keyed adds (`kind`: of that kind only). */
  private keyedIds(topic: string, kind?: 'dedupe' | 'debounce'): string[] {
    return this.model
      .jobsOf(topic)
      .filter((j) => j.keyed !== null && (kind === undefined || j.keyed.startsWith(kind)))
      .map((j) => j.id);
  }

  /**
   * A debounce add would meet a job the add's own period and max wait no longer bound (a retry, due after its max
   * wait): the engine's key entry lives max wait + 1 s on Redis's real clock, not the run's fixed clock, so whether
   * it still names the job depends on how fast the run goes. Such adds are left out (a known gap of the engine).
   */
  private debounceUnbounded(topic: string, key: string): boolean {
    return this.branches.some((m) => {
      const id = m.s.debounce[keyOf(topic, key)];
      const j = id === undefined ? undefined : m.job(topic, id);
      return !!j && j.state === 'pending' && j.dueAt > this.clock.now && j.attempts > 0;
    });
  }

  private async opPut(): Promise<void> {
    const topic = this.rng.pick(this.topics);
    // a put of a debounce job would move it past its max wait (see debounceUnbounded): dedupe jobs only
    const keyed = this.keyedIds(topic, 'dedupe');
    const id = keyed.length > 0 && this.rng.chance(0.1) ? this.rng.pick(keyed) : this.rng.pick(this.ids[topic]!);
    const ifMatch = this.ifMatchFor(topic, id);
    const { input, spec } = this.jobInput(topic, id);
    const { topic: _t, id: _i, ...change } = input;
    await this.send({
      desc: `put ${topic}/${id}${ifMatch !== undefined ? ` If-Match ${ifMatch}` : ''} ${JSON.stringify({ ...change, body: undefined })}`,
      change: true,
      dropPattern: spec.body,
      retry: true,
      call: () =>
        this.q.put(
          topic,
          id,
          change,
          ifMatch === undefined ? {} : { ifMatch: ifMatch === '*' ? '*' : { version: ifMatch } },
        ),
      model: (m, ans, cx) => m.put(spec, ifMatch, ans, cx),
      after: (ans) => {
        // a put of a debounce job writes its body as a fold does
        const key = keyOf(topic, id);
        if (!this.lastBody.has(key)) return;
        if (ans.kind === 'applied') this.lastBody.delete(key);
        else if (ans.kind === 'value' && ans.value.status !== 'finished') this.lastBody.set(key, spec.body);
      },
    });
  }

  private async opCancel(): Promise<void> {
    const topic = this.rng.pick(this.topics);
    // mostly plain jobs; sometimes a schedule's occurrence, by its job id
    const occurrences = Object.values(this.model.s.jobs).filter(
      (j) => j.topic === topic && j.occurrence && j.state === 'pending',
    );
    const keyed = this.keyedIds(topic);
    const id =
      occurrences.length > 0 && this.rng.chance(0.2)
        ? this.rng.pick(occurrences).id
        : keyed.length > 0 && this.rng.chance(0.2)
          ? this.rng.pick(keyed)
          : this.rng.pick(this.ids[topic]!);
    const ifMatch = this.rng.chance(0.6) ? undefined : this.ifMatchFor(topic, id);
    await this.send({
      desc: `cancel ${topic}/${id}${ifMatch !== undefined ? ` If-Match ${ifMatch}` : ''}`,
      change: true,
      dropPattern: `\r\n${id}\r\n`,
      retry: true,
      call: () =>
        this.q.cancel(
          topic,
          id,
          ifMatch === undefined ? {} : { ifMatch: ifMatch === '*' ? '*' : { version: ifMatch } },
        ),
      model: (m, ans, cx) => m.cancel(topic, id, ifMatch, ans, cx),
    });
  }

  private async opCancelGroup(): Promise<void> {
    const topic = this.rng.pick(this.topics);
    const group = this.rng.pick(GROUPS);
    await this.send({
      desc: `cancelGroup ${topic}/${group}`,
      change: true,
      dropPattern: `:group:${topic}:${group}`,
      retry: true,
      call: () => this.q.cancelGroup(topic, group),
      model: (m, ans, cx) => m.cancelGroup(topic, group, ans, cx),
    });
  }

  private async opRedrive(): Promise<void> {
    const topic = this.rng.pick(this.topics);
    const dead = this.model.jobsOf(topic).filter((j) => j.state === 'dead');
    let which: { ids: string[] } | { count: number };
    if (dead.length > 0 && this.rng.chance(0.7)) {
      const ids = new Set([this.rng.pick(dead).id]);
      if (this.rng.chance(0.3)) ids.add(this.rng.pick(this.ids[topic]!)); // one that is not dead: skipped
      which = { ids: [...ids] };
    } else which = { count: this.rng.int(1, 4) };
    await this.send({
      desc: `redrive ${topic} ${JSON.stringify(which)}`,
      change: true,
      dropPattern: 'ids' in which ? `\r\n${which.ids[0]}\r\n` : `:dead:${topic}`,
      retry: 'ids' in which, // a client does not send "the n oldest" twice
      call: () => this.q.redrive(topic, which),
      model: (m, ans, cx) => m.redrive(topic, which, ans, cx),
      // partition by partition: a lost answer may leave the first ones redriven
      partly: (m, cx) =>
        Array.from({ length: this.config.partitions - 1 }, (_, k) => {
          const c = m.clone();
          c.s.step = this.step;
          c.redrive(topic, which, { kind: 'applied' }, cx, k + 1);
          return c;
        }),
    });
  }

  private async opPutSchedule(): Promise<void> {
    const topic = this.rng.pick(this.topics);
    const id = this.rng.pick(this.scheduleIds);
    const current = this.model.s.schedules[keyOf(topic, id)];
    const body = this.body();
    let spec: ScheduleSpec;
    if (current && this.rng.chance(0.45)) {
      // pause or resume: the same definition, paused toggled
      spec = {
        topic,
        id,
        everyMs: current.everyMs,
        catchUp: current.catchUp,
        paused: !current.paused,
        jitterMs: current.jitterMs,
        group: current.group,
        body: body.text,
        maxAttempts: current.maxAttempts,
        ttrMs: current.ttrMs,
        backoff: current.backoff,
        priority: current.priority,
      };
    } else {
      const every = this.rng.pick([5, 10, 30, 60, 300]);
      const j = this.rng.next();
      const jitterMs =
        j < 0.6
          ? null
          : j < 0.85
            ? this.rng.int(1, Math.max(1, Math.floor(every / 2))) * SEC
            : j < 0.95
              ? this.rng.int(every, 2 * every) * SEC
              : 0;
      spec = {
        topic,
        id,
        everyMs: every * SEC,
        catchUp: this.rng.chance(0.7) ? 'latest' : 'none',
        paused: this.rng.chance(0.15),
        jitterMs,
        group: this.rng.chance(0.4) ? this.rng.pick(GROUPS) : null,
        body: body.text,
        maxAttempts: this.rng.chance(0.2) ? this.rng.int(1, 3) : null,
        ttrMs: this.rng.chance(0.2) ? this.rng.int(5, 60) * SEC : null,
        backoff: null,
        priority: this.priorityPick(topic),
      };
    }
    const input: Record<string, unknown> = {
      every: spec.everyMs / SEC,
      catchUp: spec.catchUp,
      paused: spec.paused,
      body: body.value,
    };
    if (spec.jitterMs !== null) input.jitter = spec.jitterMs / SEC;
    if (spec.group !== null) input.group = spec.group;
    if (spec.maxAttempts !== null) input.maxAttempts = spec.maxAttempts;
    if (spec.ttrMs !== null) input.ttr = spec.ttrMs / SEC;
    if (spec.priority !== null) input.priority = spec.priority;
    await this.send({
      desc: `putSchedule ${topic}/${id} ${JSON.stringify({ ...input, body: undefined })}`,
      change: true,
      dropPattern: body.text,
      retry: true,
      call: () => this.q.putSchedule(topic, id, input),
      model: (m, ans, cx) => m.putSchedule(spec, ans, cx),
    });
  }

  private async opDeleteSchedule(): Promise<void> {
    const topic = this.rng.pick(this.topics);
    const id = this.rng.pick(this.scheduleIds);
    await this.send({
      desc: `deleteSchedule ${topic}/${id}`,
      change: true,
      dropPattern: `\r\n${id}\r\n`,
      retry: true,
      call: async () => (await this.q.deleteSchedule(topic, id), true as const),
      model: (m, ans, cx) => m.deleteSchedule(topic, id, ans, cx),
    });
  }

  private async opClaim(): Promise<void> {
    const topic = this.rng.pick(this.topics);
    const n = this.rng.int(1, 6);
    const claimed = await this.q.engine.claim(topic, n);
    this.note(`claim ${topic} ${n} → ${claimed.map((c) => this.claimedText(topic, c)).join(' ') || 'none'}`);
    this.checkClaimedBodies(topic, claimed);
    this.countPriorityClaim(topic);
    this.apply<ClaimedJob[]>(
      {
        desc: 'claim',
        change: false,
        retry: false,
        call: async () => claimed,
        model: (m, _ans, cx) => m.claim(topic, n, claimed, cx),
      },
      { kind: 'value', value: claimed },
      false,
    );
    for (const c of claimed) this.held.push({ topic, id: c.id, attempt: c.attempt, claim: c.claim, started: false });
    while (this.held.length > HELD_KEPT) this.endHeld(this.held[0]!);
    this.count('claimed');
  }

  /**
   * Counts a claim made while some partition of `topic` held ready jobs of two priorities (in the model): one whose
   * order the [priority] check sees.
   */
  private countPriorityClaim(topic: string): void {
    const by = new Map<number, Set<number>>();
    for (const j of this.model.claimable(topic)) {
      const p = this.config.partitionOf(topic, j.id);
      by.set(p, (by.get(p) ?? new Set()).add(j.priority));
    }
    if ([...by.values()].some((priorities) => priorities.size > 1)) this.count('claims among priorities');
  }

  /** `id#attempt`, with its priority and partition when it has a priority (for the history). */
  private claimedText(topic: string, c: ClaimedJob): string {
    const priority = this.model.job(topic, c.id)?.priority ?? 0;
    return `${c.id}#${c.attempt}${priority !== 0 ? ` (p${priority} in ${this.config.partitionOf(topic, c.id)})` : ''}`;
  }

  private async opStart(): Promise<void> {
    const waiting = this.held.filter((h) => !h.started);
    if (waiting.length === 0) return;
    const topic = this.rng.pick(waiting).topic;
    const refs = waiting.filter((h) => h.topic === topic).slice(0, this.rng.int(1, 3));
    if (this.ended.length > 0 && this.rng.chance(0.1)) {
      const stale = this.rng.pick(this.ended);
      if (stale.topic === topic && !refs.some((r) => r.id === stale.id)) refs.push(stale);
    }
    const attempts = refs.map((h) => ({ id: h.id, attempt: h.attempt, claim: h.claim }));
    await this.exec<boolean[]>({
      desc: `start ${topic} ${refs.map((h) => `${h.id}#${h.attempt}`).join(' ')}`,
      change: false,
      retry: false,
      call: () => this.q.engine.start(topic, attempts),
      model: (m, ans, cx) => m.start(topic, attempts, ans, cx),
      after: (ans) => this.noteStarts(topic, attempts, ans),
    });
    for (const h of refs) h.started = true;
    this.count('start calls');
  }

  /** A handler's batch: claim, start, then ack each (or fail one now and then). */
  private async opHandle(topic: string): Promise<void> {
    const before = this.held.length;
    await this.opClaimOf(topic, 20);
    const batch = this.held.slice(before);
    if (batch.length === 0) return;
    const refs = batch.map((h) => ({ id: h.id, attempt: h.attempt, claim: h.claim }));
    await this.exec<boolean[]>({
      desc: `start ${topic} ${batch.length}`,
      change: false,
      retry: false,
      call: () => this.q.engine.start(topic, refs),
      model: (m, ans, cx) => m.start(topic, refs, ans, cx),
      after: (ans) => this.noteStarts(topic, refs, ans),
    });
    for (const h of batch) {
      this.endHeld(h);
      const ref = { attempt: h.attempt, claim: h.claim };
      if (this.rng.chance(0.9))
        await this.exec({
          desc: `ack ${topic}/${h.id}#${h.attempt}`,
          change: false,
          retry: false,
          call: () => this.q.engine.ack(topic, h.id, ref),
          model: (m, ans, cx) => m.ack(topic, h.id, ref, ans, cx),
        });
      else
        await this.exec({
          desc: `fail ${topic}/${h.id}#${h.attempt}`,
          change: false,
          retry: false,
          call: () => this.q.engine.fail(topic, h.id, ref, 'batch boom'),
          model: (m, ans, cx) => m.fail(topic, h.id, ref, 'batch boom', undefined, ans, cx),
        });
    }
    this.count('handler batches');
  }

  /**
   * The fan-out could not invoke a handler: it gives the claims back (never started ones; sometimes one that ended).
   */
  private async opRelease(): Promise<void> {
    const waiting = this.held.filter((h) => !h.started);
    if (waiting.length === 0) return;
    const refs = waiting.slice(0, this.rng.int(1, 3));
    if (this.ended.length > 0 && this.rng.chance(0.2)) refs.push(this.rng.pick(this.ended));
    for (const h of refs) this.endHeld(h);
    const jobs = refs.map((h) => ({ topic: h.topic, id: h.id, attempt: h.attempt, claim: h.claim }));
    await this.exec<number>({
      desc: `release ${jobs.map((j) => `${j.topic}/${j.id}#${j.attempt}`).join(' ')}`,
      change: false,
      retry: false,
      call: () => this.q.engine.release(jobs, 'invoke failed'),
      model: (m, ans, cx) => m.release(jobs, ans, cx),
    });
    this.count('releases');
  }

  /** A held attempt to end: mostly a started one, sometimes one never started, or one that ended already. */
  private pickHeld(): Held | undefined {
    if (this.ended.length > 0 && this.rng.chance(0.08)) return this.rng.pick(this.ended);
    const started = this.held.filter((h) => h.started);
    if (started.length > 0 && this.rng.chance(0.95)) return this.rng.pick(started);
    return this.held.length > 0 ? this.rng.pick(this.held) : undefined;
  }

  private endHeld(h: Held): void {
    this.held = this.held.filter((x) => x !== h);
    this.ended.push(h);
    if (this.ended.length > 50) this.ended.shift();
  }

  private async opAck(): Promise<void> {
    const h = this.pickHeld();
    if (!h) return;
    this.endHeld(h);
    const ref = { attempt: h.attempt, claim: h.claim };
    await this.exec(
      {
        desc: `ack ${h.topic}/${h.id}#${h.attempt}`,
        change: false,
        dropPattern: this.dropNow() ? `\r\n${h.claim}\r\n` : undefined,
        retry: true,
        call: () => this.q.engine.ack(h.topic, h.id, ref),
        model: (m, ans, cx) => m.ack(h.topic, h.id, ref, ans, cx),
      },
      { drop: true },
    );
    this.count('acks');
  }

  /**
   * A handler of batch size 1 draining its topic: acks its started attempt and claims and starts the next job in one
   * call (engine.ackAndClaimStarted; on 2 partitions, in the acked job's place first). Not while a ready job of the
   * topic is due past its expiry: the claim would end it expired, unnamed, and the model could not follow.
   */
  private async opAckClaim(): Promise<void> {
    const started = this.held.filter((h) => h.started);
    if (started.length === 0) return;
    const h = this.rng.pick(started);
    if (this.model.claimable(h.topic).some((j) => j.expiresAt !== null && j.expiresAt <= this.clock.now)) return;
    this.endHeld(h);
    const ref = { attempt: h.attempt, claim: h.claim };
    const got = await this.q.engine.ackAndClaimStarted(h.topic, h.id, ref, 1);
    const claimed = got.jobs.map((c) => this.claimedText(h.topic, c)).join(' ') || 'none';
    this.note(`ack+claim ${h.topic}/${h.id}#${h.attempt} → ${got.ack}, ${claimed}`);
    this.checkClaimedBodies(h.topic, got.jobs);
    const refs = got.jobs.map((c) => ({ id: c.id, attempt: c.attempt, claim: c.claim }));
    this.apply<typeof got>(
      {
        desc: 'ack+claim',
        change: false,
        retry: false,
        call: async () => got,
        model: (m, _a, cx) =>
          m.ack(h.topic, h.id, ref, { kind: 'value', value: got.ack }, cx) ??
          m.claim(h.topic, 1, got.jobs, cx) ??
          m.start(h.topic, refs, { kind: 'value', value: refs.map(() => true) }, cx),
      },
      { kind: 'value', value: got },
      false,
    );
    this.noteStarts(h.topic, refs, { kind: 'value', value: refs.map(() => true) });
    if (got.expired !== 0) throw this.violation(`ack+claim ${h.topic}: ${got.expired} expired, none was due to`);
    for (const c of got.jobs)
      this.held.push({ topic: h.topic, id: c.id, attempt: c.attempt, claim: c.claim, started: true });
    this.count('ack+claims');
    if (got.jobs.length > 0) this.count('ack+claims that took a job');
  }

  private async opFail(): Promise<void> {
    const h = this.pickHeld();
    if (!h) return;
    this.endHeld(h);
    const ref = { attempt: h.attempt, claim: h.claim };
    const error = `boom ${this.step}`;
    const retryAfterMs = this.rng.chance(0.2) ? this.rng.int(1, 90) * SEC : undefined;
    await this.exec(
      {
        desc: `fail ${h.topic}/${h.id}#${h.attempt}${retryAfterMs !== undefined ? ` retry after ${retryAfterMs} ms` : ''}`,
        change: false,
        dropPattern: this.dropNow() ? `\r\n${h.claim}\r\n` : undefined,
        retry: true,
        call: () => this.q.engine.fail(h.topic, h.id, ref, error, retryAfterMs),
        model: (m, ans, cx) => m.fail(h.topic, h.id, ref, error, retryAfterMs, ans, cx),
      },
      { drop: true },
    );
    this.count('fails');
  }

  /** Sweeps until the engine has nothing left to do now (and once more: a purge of what the last one withdrew). */
  private async opSweep(): Promise<void> {
    const now = this.clock.now;
    let extra = 1;
    for (let i = 0; i < 50; i++) {
      const dropping = this.faults.drops && this.rng.chance(0.02);
      const before = this.topology.dropped;
      if (dropping) this.topology.dropReplyTo(`delayed:${this.rng.pick(this.topics)}`);
      const watch = dropping
        ? setInterval(
            () => this.topology.dropped > before && this.client.status !== 'ready' && this.failCutCommands(),
            2,
          )
        : undefined;
      let result;
      try {
        result = await this.q.engine.sweep();
      } catch (error) {
        if (!isUnavailable(error) && !(error instanceof Error && /Connection is closed/.test(error.message)))
          throw error;
        this.note(`sweep → no answer (${(error as Error).message}); swept again`);
        this.count('lost answers');
        await this.reconnected();
        continue;
      } finally {
        clearInterval(watch);
        this.topology.dropReplyTo(NEVER);
      }
      const settled = !result.more && (result.nextAt === null || result.nextAt > now);
      if (settled && extra-- <= 0) break;
    }
    this.note('sweep');
    for (const m of this.branches) {
      m.s.step = this.step;
      m.sweep({ touched: this.touched, retry: false });
    }
    this.count('sweeps');
  }

  private opTick(): void {
    const r = this.rng.next();
    const ms = r < 0.7 ? this.rng.int(0, 3000) : r < 0.95 ? this.rng.int(5, 60) * SEC : this.rng.int(120, 600) * SEC;
    this.clock.advance(ms);
    for (const m of this.branches) m.s.now = this.clock.now;
    this.note(`tick +${ms} ms → ${new Date(this.clock.now).toISOString()}`);
  }

  // ---- listings -------------------------------------------------------------------------------

  private async opListing(): Promise<void> {
    if (this.listings.length > 0 && this.rng.chance(0.75)) return this.nextPage(this.rng.pick(this.listings));
    if (this.branches.length > 1) return;
    const topic = this.rng.pick(this.topics);
    const k = this.rng.next();
    let spec: ListingSpec;
    if (k < 0.35) spec = { kind: 'group', topic, group: this.rng.pick(GROUPS) };
    else if (k < 0.45) spec = { kind: 'dead', topic };
    else {
      const state = this.rng.pick(['delayed', 'delayed', 'ready', 'running', 'dead'] as const);
      spec = { kind: 'jobs', topic, state };
      if (state !== 'ready' && this.rng.chance(0.3)) {
        spec.from = this.clock.now + this.rng.int(-120, 60) * SEC;
        spec.to = spec.from + this.rng.int(0, 300) * SEC;
      }
    }
    const listing: Listing = {
      n: ++this.listingCount,
      spec,
      limit: this.rng.int(1, 6),
      cursor: undefined,
      pages: 0,
      stays: this.model.listed(spec),
      seen: new Map(),
    };
    this.listings.push(listing);
    await this.nextPage(listing);
  }

  private async page(l: Listing): Promise<{ jobs: Job[]; next: string | null }> {
    const { spec } = l;
    const cursor = l.cursor;
    if (spec.kind === 'group')
      return this.q.listGroup(spec.topic, spec.group, { limit: l.limit, ...(cursor ? { cursor } : {}) });
    if (spec.kind === 'dead')
      return this.q.listDead(spec.topic, { limit: l.limit, ...(cursor ? { after: cursor } : {}) });
    return this.q.listJobs(spec.topic, {
      state: spec.state,
      limit: l.limit,
      ...(spec.from !== undefined ? { from: spec.from, to: spec.to } : {}),
      ...(cursor ? { cursor } : {}),
    });
  }

  private describeListing(l: Listing): string {
    const s = l.spec;
    const what =
      s.kind === 'group'
        ? `group ${s.group}`
        : s.kind === 'dead'
          ? 'dead jobs'
          : `${s.state} jobs${s.from !== undefined ? ` from ${new Date(s.from).toISOString()} to ${new Date(s.to!).toISOString()}` : ''}`;
    return `listing ${l.n} of ${s.topic} ${what} (limit ${l.limit})`;
  }

  /**
   * Reads a listing's next page between other steps: each job on it must be in the listing now, and as the model has
   * it.
   */
  private async nextPage(l: Listing): Promise<void> {
    if (this.branches.length > 1) return this.dropListing(l, 'two models');
    const page = await this.page(l);
    l.pages += 1;
    this.note(
      `${this.describeListing(l)} page ${l.pages} → ${page.jobs.map((j) => j.id).join(' ') || 'none'}${page.next ? '' : ' (end)'}`,
    );
    const now = this.model.listed(l.spec);
    for (const job of page.jobs) {
      this.recordVersion(job);
      const key = keyOf(job.topic, job.id);
      if (!now.has(key)) {
        this.listingViolation(
          `[listing] ${this.describeListing(l)} shows ${job.id} (${job.state}, runAt ${job.runAt}), which the model does not have in it ${this.model.job(job.topic, job.id) ? this.model.describe(this.model.job(job.topic, job.id)!) : this.model.goneWhy(key)}`,
        );
        continue;
      }
      const reason = this.model.compare(this.model.s.jobs[key], job, `${this.describeListing(l)}`);
      if (reason) throw this.violation(reason);
      l.seen.set(key, (l.seen.get(key) ?? 0) + 1);
    }
    l.cursor = page.next ?? undefined;
    if (page.next !== null && l.pages < 400) return;
    this.listings = this.listings.filter((x) => x !== l);
    if (page.next !== null) throw this.violation(`[listing] ${this.describeListing(l)} has not ended after 400 pages`);
    const missed = [...l.stays.keys()].filter((k) => !l.seen.has(k));
    if (missed.length > 0)
      this.listingViolation(
        `[listing] ${this.describeListing(l)} over ${l.pages} pages missed ${missed.join(', ')}, which stayed in it throughout`,
      );
    const once =
      l.spec.kind === 'jobs' && l.spec.state === 'ready'
        ? []
        : [...l.stays.keys()].filter((k) => (l.seen.get(k) ?? 0) > 1);
    if (once.length > 0)
      this.listingViolation(
        `[listing] ${this.describeListing(l)} showed ${once.join(', ')} more than once, though they stayed in it unchanged`,
      );
    this.count('listings');
  }

  private dropListing(l: Listing, why: string): void {
    this.count(`listings given up (${why})`);
    this.listings = this.listings.filter((x) => x !== l);
    this.note(`${this.describeListing(l)} given up: ${why}`);
  }

  /** After each step: a job stays in a listing only while it is in it, unchanged. */
  private followListings(): void {
    if (this.branches.length > 1) {
      for (const l of [...this.listings]) this.dropListing(l, 'two models');
      return;
    }
    for (const l of this.listings) {
      const now = this.model.listed(l.spec);
      for (const [key, sig] of l.stays) if (now.get(key) !== sig) l.stays.delete(key);
    }
  }

  /** Whole listings at once (no step between pages) must show exactly the model's jobs. */
  private async checkListingsNow(): Promise<void> {
    if (this.branches.length > 1) return;
    for (const topic of this.topics) {
      const specs: ListingSpec[] = [
        ...(['delayed', 'ready', 'running', 'dead'] as const).map((state) => ({ kind: 'jobs' as const, topic, state })),
        ...GROUPS.map((group) => ({ kind: 'group' as const, topic, group })),
      ];
      for (const spec of specs) {
        const l: Listing = {
          n: 0,
          spec,
          limit: this.rng.int(1, 50),
          cursor: undefined,
          pages: 0,
          stays: this.model.listed(spec),
          seen: new Map(),
        };
        const expected = [...l.stays.keys()].sort();
        const shown: string[] = [];
        for (let pages = 0; pages < 1000; pages++) {
          const page = await this.page(l);
          shown.push(...page.jobs.map((j) => keyOf(j.topic, j.id)));
          for (const job of page.jobs) this.recordVersion(job);
          if (page.next === null) break;
          l.cursor = page.next;
        }
        const got = [...new Set(shown)].sort();
        // the ready list may hold an id twice (a job put back to delayed and due again): "a ready job may show on two
        // pages"
        const twiceOk = spec.kind === 'jobs' && spec.state === 'ready';
        if (JSON.stringify(got) !== JSON.stringify(expected) || (!twiceOk && got.length !== shown.length)) {
          const missing = expected.filter((k) => !got.includes(k));
          const extra = got.filter((k) => !expected.includes(k));
          this.listingViolation(
            `[listing] ${this.describeListing(l)} at rest: missing ${missing.join(', ') || 'none'}; not in it ${extra.join(', ') || 'none'}; shown ${shown.length} times for ${got.length} jobs`,
          );
        }
      }
      const listed: string[] = [];
      let cursor: string | undefined;
      for (let pages = 0; pages < 100; pages++) {
        const page = await this.q.listSchedules(topic, { limit: 2, ...(cursor ? { cursor } : {}) });
        listed.push(...page.schedules.map((s) => s.id));
        if (page.next === null) break;
        cursor = page.next;
      }
      const expected = Object.values(this.model.s.schedules)
        .filter((s) => s.topic === topic)
        .map((s) => s.id)
        .sort();
      if (JSON.stringify(listed) !== JSON.stringify(expected))
        this.listingViolation(
          `[listing] schedules of ${topic}: engine ${listed.join(' ')}, model ${expected.join(' ')}`,
        );
    }
    this.note('listings at rest agree');
  }

  // ---- faults ---------------------------------------------------------------------------------

  private async maybeFault(): Promise<void> {
    if (this.faults.failover) {
      if (!this.hold && this.rng.chance(0.012)) await this.startHold();
      else if (this.hold && this.step >= this.hold.until)
        await (this.rng.chance(0.6) ? this.failover() : this.releaseHold());
    }
    if (this.faults.restart && !this.hold && this.rng.chance(0.004)) {
      this.note('restart of Redis (SIGKILL, then from its append-only file)');
      this.log('restart');
      await this.topology.restart();
      await this.reconnected();
      this.count('restarts');
      await this.checkTouched(this.everyKey());
    }
  }

  private async startHold(): Promise<void> {
    if (this.branches.length > 1) return;
    await this.topology.holdReplica();
    this.hold = {
      since: this.step,
      until: this.step + this.rng.int(3, 25),
      snapshot: this.branches.map((m) => m.clone()),
      acknowledged: [],
    };
    this.note('the replica is held back (it has everything so far)');
    this.log('hold');
    this.count('holds');
  }

  private async releaseHold(): Promise<void> {
    await this.topology.releaseReplica();
    this.note('the replica hears again and catches up');
    this.hold = null;
    await this.sendRetries();
  }

  /** The client sends again what was answered 503, now that the replica answers. */
  private async sendRetries(): Promise<void> {
    const ops = this.retryLater.splice(0);
    for (const op of ops) await this.exec(op, { retry: true });
    await this.checkTouched();
  }

  /**
   * Failover to the held-back replica: the state is the replica's, which has everything up to the
   * hold. Every change acknowledged during the hold must hold there: sent again to the model of
   * the replica, it must answer the same. Then the client sends again what was answered 503.
   */
  private async failover(): Promise<void> {
    const hold = this.hold!;
    this.hold = null;
    this.note(`failover to the replica held back since step ${hold.since}`);
    this.log('failover');
    await this.topology.failover();
    await this.reconnected();
    this.count('failovers');
    // a failover takes seconds of the Redis clock (the engine's versions count on it: lua/includes/job.lua nextVersion)
    const tookMs = this.rng.int(1000, 5000);
    this.clock.advance(tookMs);
    this.note(`the failover took ${tookMs} ms → ${new Date(this.clock.now).toISOString()}`);
    this.branches = hold.snapshot.map((m) => {
      m.s.now = this.clock.now;
      return m;
    });
    for (const { step, op, ans } of hold.acknowledged) {
      const reasons: string[] = [];
      const kept = this.branches.filter((m) => {
        const reason = op.model(m, ans, { touched: this.touched, retry: false });
        if (reason) reasons.push(reason);
        return reason === null;
      });
      if (kept.length === 0)
        throw this.violation(
          `[durability] ${op.desc}, answered ${show(ans)} at step ${step} while the replica was held back, does not hold after the failover: ${reasons[0]}`,
        );
      this.branches = kept;
    }
    // the failover may undo writes whose versions were seen: a version goes back, but may not name other content
    this.highest.clear();
    for (const l of [...this.listings]) this.dropListing(l, 'failover');
    for (const h of [...this.held])
      if (!this.model.job(h.topic, h.id) || this.model.job(h.topic, h.id)!.claim?.token !== h.claim) this.endHeld(h);
    await this.checkTouched(this.everyKey());
    await this.sendRetries();
  }

  // ---- the end --------------------------------------------------------------------------------

  /**
   * Ends the run: the replica catches up, every schedule is deleted, and the handlers work until
   * nothing is pending or running; every job that is ready must be claimed in time.
   */
  private async drain(): Promise<void> {
    if (this.hold) await this.releaseHold();
    await this.checkTouched();
    for (const t of this.topics)
      for (const id of this.scheduleIds)
        await this.exec({
          desc: `deleteSchedule ${t}/${id}`,
          change: true,
          retry: true,
          call: async () => (await this.q.deleteSchedule(t, id), true as const),
          model: (m, ans, cx) => m.deleteSchedule(t, id, ans, cx),
        });
    for (const h of [...this.held]) {
      this.endHeld(h);
      const ref = { attempt: h.attempt, claim: h.claim };
      await this.exec({
        desc: `ack ${h.topic}/${h.id}#${h.attempt}`,
        change: false,
        retry: false,
        call: () => this.q.engine.ack(h.topic, h.id, ref),
        model: (m, ans, cx) => m.ack(h.topic, h.id, ref, ans, cx),
      });
    }
    await this.checkTouched();
    for (let round = 0; round < 200; round++) {
      const open = Object.values(this.model.s.jobs).filter((j) => j.state === 'pending' || j.state === 'running');
      if (open.length === 0) break;
      this.opTickBy(30 * SEC);
      await this.opSweep();
      await this.checkTouched();
      for (const topic of this.topics) {
        // each claim takes at least one id off the ready list (a stale one, of a job cancelled or
        // moved since, is skipped): claims that take nothing again and again mean a job is stuck
        let empty = 0;
        for (let calls = 0; calls < 5000; calls++) {
          const claimable = this.model.claimable(topic).length;
          const room = this.config.topics[topic]!.concurrency - this.model.running(topic);
          if (claimable === 0 || room <= 0) break;
          await this.opClaimOf(topic, 50);
          const batch = this.held.filter((h) => h.topic === topic);
          empty = batch.length === 0 ? empty + 1 : 0;
          if (empty > 300)
            throw this.violation(
              `[lost] ${claimable} jobs of ${topic} are ready (${this.model
                .claimable(topic)
                .slice(0, 5)
                .map((j) => j.id)
                .join(' ')} ...), and ${empty} claims in a row took none`,
            );
          if (batch.length === 0) continue;
          const refs = batch.map((h) => ({ id: h.id, attempt: h.attempt, claim: h.claim }));
          await this.exec<boolean[]>({
            desc: `start ${topic} ${batch.length}`,
            change: false,
            retry: false,
            call: () => this.q.engine.start(topic, refs),
            model: (m, ans, cx) => m.start(topic, refs, ans, cx),
            after: (ans) => this.noteStarts(topic, refs, ans),
          });
          for (const h of batch) {
            this.endHeld(h);
            const ref = { attempt: h.attempt, claim: h.claim };
            await this.exec({
              desc: `ack ${topic}/${h.id}#${h.attempt}`,
              change: false,
              retry: false,
              call: () => this.q.engine.ack(topic, h.id, ref),
              model: (m, ans, cx) => m.ack(topic, h.id, ref, ans, cx),
            });
          }
          await this.checkTouched();
        }
      }
    }
    const open = Object.values(this.model.s.jobs).filter((j) => j.state === 'pending' || j.state === 'running');
    if (open.length > 0)
      throw this.violation(
        `[lost] after the drain ${open.length} jobs are still open: ${open
          .slice(0, 5)
          .map((j) => `${j.topic}/${j.id} ${this.model.describe(j)}`)
          .join(', ')}`,
      );
    await this.checkTouched(this.everyKey());
    await this.checkListingsNow();
    for (const j of Object.values(this.model.s.jobs)) this.count(`end ${j.state}`);
  }

  private opTickBy(ms: number): void {
    this.clock.advance(ms);
    for (const m of this.branches) m.s.now = this.clock.now;
    this.note(`tick +${ms} ms`);
  }

  private async opClaimOf(topic: string, n: number): Promise<void> {
    const claimed = await this.q.engine.claim(topic, n);
    this.note(`claim ${topic} ${n} → ${claimed.map((c) => this.claimedText(topic, c)).join(' ') || 'none'}`);
    this.checkClaimedBodies(topic, claimed);
    this.countPriorityClaim(topic);
    this.apply<ClaimedJob[]>(
      {
        desc: 'claim',
        change: false,
        retry: false,
        call: async () => claimed,
        model: (m, _a, cx) => m.claim(topic, n, claimed, cx),
      },
      { kind: 'value', value: claimed },
      false,
    );
    for (const c of claimed) this.held.push({ topic, id: c.id, attempt: c.attempt, claim: c.claim, started: false });
  }
}

/** Runs one seed; see ModelRun. */
export function runModel(options: RunOptions): Promise<RunResult> {
  return new ModelRun(options).run();
}
