import type { Cluster, Redis } from 'ioredis';
import { describeBackoff, type Backoff } from './backoff';
import type { QueueConfig, TopicConfig } from './config';
import { OUTCOME, REFUSAL, type Refusal } from './engine/codes';
import { HttpError, refusalError } from './errors';
import { partitionOf, topicKeys } from './keys';
import { queueScript, registerScripts, runScript } from './scripts';
import { DEAD_PAGE, REDRIVE_COUNT } from './limits';
import { checkBatchSize, checkJobRef, requireTopic, validateChange, validateJob, validatePut, type NewJob } from './validation';

export type JobState = 'delayed' | 'ready' | 'running' | 'done' | 'dead' | 'cancelled';
const STATES: Record<number, JobState> = { 1: 'delayed', 2: 'ready', 3: 'running', 4: 'done', 5: 'dead', 6: 'cancelled' }; // JOB_STATE in lib/engine/codes.ts

/** A job as the API shows it; times are ISO-8601, durations seconds. */
export interface Job {
  topic: string;
  id: string;
  state: JobState;
  /** When the job is (or was last) due. */
  runAt: string;
  createdAt: string;
  /** Last state change. */
  updatedAt: string;
  /** Attempts started so far (claims). */
  attempts: number;
  maxAttempts: number;
  ttr: number;
  backoff: Backoff;
  url: string | null;
  lastError: string | null;
  /** TTR deadline of the running attempt. */
  deadline: string | null;
  body: unknown;
}

/** A job claimed for one attempt, as a topic handler receives it. */
export interface ClaimedJob {
  topic: string;
  id: string;
  attempt: number;
  maxAttempts: number;
  /** Due time of this attempt, epoch ms. */
  runAt: number;
  /** The attempt counts as failed if not acked by then, epoch ms. */
  deadline: number;
  url?: string;
  body: unknown;
  /** Claim time minus due time, ms (Redis clock). */
  latenessMs: number;
}

export type AddOutcome =
  | { status: 'created'; job: Job }
  | { status: 'replaced'; job: Job }
  | { status: 'exists'; job: Job; error: HttpError }
  | { status: 'finished'; job: Job; error: HttpError }
  | { status: 'invalid'; error: HttpError };

/** What an add or put of one job did (invalid input throws instead). */
export type WriteOutcome = Exclude<AddOutcome, { status: 'invalid' }>;

/** What one add, put, reschedule, fail or redrive did to the sweeper's schedule. */
export interface Wake {
  /** True when a job became the earliest due of its topic: a sleeping sweeper should look again. */
  wake: boolean;
}

export type AckOutcome = 'done' | 'stale' | 'cancelled' | 'not_found';
export type FailOutcome =
  | { outcome: 'retry'; runAt: number; wake: boolean }
  | { outcome: 'dead' }
  | { outcome: 'stale' | 'cancelled' | 'not_found' };

/** What one sweep over every topic and partition did. */
export interface SweepResult {
  moved: number;
  retried: number;
  deadLettered: number;
  purged: number;
  /** Topics with ready jobs after the sweep (newly moved or waiting), with how many. */
  readyByTopic: Record<string, number>;
  /** True when some step hit its limit: sweep again at once. */
  more: boolean;
  /** Earliest next due time or TTR deadline, epoch ms on the Redis clock; null when none. */
  nextAt: number | null;
  /** The Redis clock at the sweep, epoch ms. */
  now: number;
}

export interface TopicStats {
  topic: string;
  delayed: number;
  /** Ids in the ready lists; cancelled jobs' ids count until a claim skips them. */
  ready: number;
  running: number;
  dead: number;
  nextDueAt: string | null;
}

export interface DeadJob extends Job {
  diedAt: string;
}

export interface QueueOptions {
  /** Fixed clock for tests (epoch ms), passed to every script; undefined uses Redis TIME. */
  clock?: () => number | undefined;
  /** Source of jitter in [0, 1). */
  random?: () => number;
}

type View = [string, number, number, number, number, number | null, number | null, string | null, string | null, string | null, number, number | null, string];

const ADD_CHUNK = 100; // jobs per addJobs call: ~800 arguments, well under a millisecond of Redis time
const RELEASE_CHUNK = 500;

const iso = (ms: number) => new Date(ms).toISOString();

/** The delay queue engine: every state change is one Lua script call (lua/). */
export class DelayQueue {
  private readonly clock: () => number | undefined;
  private readonly random: () => number;
  private claimStart = 0;

  constructor(
    readonly redis: Redis | Cluster,
    readonly config: QueueConfig,
    options: QueueOptions = {},
  ) {
    registerScripts(redis);
    this.clock = options.clock ?? (() => undefined);
    this.random = options.random ?? Math.random;
  }

  private now(): string | number {
    return this.clock() ?? '';
  }

  /** The clock validation bounds runAt with: the fixed test clock, else this machine's. */
  private clientNow(): number {
    return this.clock() ?? Date.now();
  }

  private topic(name: string): TopicConfig {
    return requireTopic(this.config, name);
  }

  private keysOf(topic: string, id: string) {
    return topicKeys(partitionOf(topic, id, this.config.partitions), topic);
  }

  private toJob(topic: string, v: View): Job {
    const t = this.config.topics.get(topic);
    const [id, state, runAt, createdAt, attempts, max, ttr, backoff, url, lastError, updatedAt, deadline, body] = v;
    return {
      topic,
      id,
      state: STATES[state] ?? 'delayed',
      runAt: iso(runAt),
      createdAt: iso(createdAt),
      updatedAt: iso(updatedAt),
      attempts,
      maxAttempts: max ?? t?.maxAttempts ?? 0,
      ttr: (ttr ?? t?.ttrMs ?? 0) / 1000,
      backoff: describeBackoff(backoff ?? t?.backoff ?? 'f:0'),
      url,
      lastError,
      deadline: deadline === null ? null : iso(deadline),
      body: JSON.parse(body),
    };
  }

  private createdJob(job: NewJob, runAt: number, createdAt: number): Job {
    const t = this.config.topics.get(job.topic)!;
    return {
      topic: job.topic,
      id: job.id,
      state: 'delayed',
      runAt: iso(runAt),
      createdAt: iso(createdAt),
      updatedAt: iso(createdAt),
      attempts: 0,
      maxAttempts: job.maxAttempts ?? t.maxAttempts,
      ttr: (job.ttrMs ?? t.ttrMs) / 1000,
      backoff: describeBackoff(job.backoff ?? t.backoff),
      url: job.url ?? null,
      lastError: null,
      deadline: null,
      body: JSON.parse(job.body),
    };
  }

  private jobArgs(job: NewJob): (string | number)[] {
    return [job.id, job.when.kind, job.when.ms, job.maxAttempts ?? '', job.ttrMs ?? '', job.backoff ?? '', job.url ?? '', job.body];
  }

  private outcome(job: NewJob, result: unknown[]): WriteOutcome {
    const code = result[0] as number;
    if (code === OUTCOME.CREATED) return { status: 'created', job: this.createdJob(job, result[2] as number, result[3] as number) };
    const existing = this.toJob(job.topic, result[1] as View);
    if (code === OUTCOME.REPLACED) return { status: 'replaced', job: existing };
    if (code === REFUSAL.JOB_EXISTS) return { status: 'exists', job: existing, error: refusalError(REFUSAL.JOB_EXISTS, job.topic, job.id) };
    return { status: 'finished', job: existing, error: refusalError(REFUSAL.JOB_FINISHED, job.topic, job.id) };
  }

  /** Runs validated jobs through addJobs, grouped by partition and topic, in chunks. */
  private async write(jobs: NewJob[], mode: 'add' | 'put'): Promise<{ outcomes: WriteOutcome[]; wake: boolean }> {
    const groups = new Map<string, number[]>();
    jobs.forEach((job, i) => {
      const group = `${job.partition}\n${job.topic}`;
      const members = groups.get(group) ?? [];
      members.push(i);
      groups.set(group, members);
    });
    const outcomes: WriteOutcome[] = new Array(jobs.length);
    let wake = false;
    const byPartition = new Map<number, { indexes: number[] }[]>();
    for (const indexes of groups.values()) {
      const partition = jobs[indexes[0]!]!.partition;
      const calls = byPartition.get(partition) ?? [];
      for (let i = 0; i < indexes.length; i += ADD_CHUNK) calls.push({ indexes: indexes.slice(i, i + ADD_CHUNK) });
      byPartition.set(partition, calls);
    }
    await Promise.all(
      [...byPartition.values()].map(async (calls) => {
        const pipeline = this.redis.pipeline();
        for (const { indexes } of calls) {
          const first = jobs[indexes[0]!]!;
          const k = topicKeys(first.partition, first.topic);
          queueScript(pipeline, 'addJobs', [k.jobs, k.delayed, k.done], [this.now(), mode, ...indexes.flatMap((i) => this.jobArgs(jobs[i]!))]);
        }
        const replies = (await pipeline.exec()) ?? [];
        replies.forEach(([err, reply], c) => {
          if (err) throw err;
          const [headChanged, ...results] = reply as [number, ...unknown[][]];
          if (headChanged === 1) wake = true;
          calls[c]!.indexes.forEach((jobIndex, r) => {
            outcomes[jobIndex] = this.outcome(jobs[jobIndex]!, results[r]!);
          });
        });
      }),
    );
    return { outcomes, wake };
  }

  /**
   * Adds one job (API input, validated here). Created, or `exists` when (topic, id) is taken:
   * then nothing changed and the existing job is returned. Throws HttpError on invalid input.
   */
  async add(input: unknown): Promise<WriteOutcome & Wake> {
    const job = validateJob(input, this.config, this.clientNow());
    const { outcomes, wake } = await this.write([job], 'add');
    return { ...outcomes[0]!, wake };
  }

  /** Adds up to BATCH_JOBS.max jobs in one go; one outcome per input, in order (invalid ones included). */
  async addMany(inputs: unknown[]): Promise<{ outcomes: AddOutcome[] } & Wake> {
    checkBatchSize(inputs.length);
    const outcomes: AddOutcome[] = new Array(inputs.length);
    const valid: NewJob[] = [];
    const validIndex: number[] = [];
    inputs.forEach((input, i) => {
      try {
        valid.push(validateJob(input, this.config, this.clientNow()));
        validIndex.push(i);
      } catch (error) {
        if (!(error instanceof HttpError)) throw error;
        outcomes[i] = { status: 'invalid', error };
      }
    });
    const written = await this.write(valid, 'add');
    written.outcomes.forEach((o, j) => {
      outcomes[validIndex[j]!] = o;
    });
    return { outcomes, wake: written.wake };
  }

  /**
   * Creates job topic/id, or replaces it while it is pending (due time, body and options); a
   * cancelled job is created anew. `finished` when it is running, done or dead.
   */
  async put(topic: string, id: string, input: unknown): Promise<WriteOutcome & Wake> {
    const job = validatePut(topic, id, input, this.config, this.clientNow());
    const { outcomes, wake } = await this.write([job], 'put');
    return { ...outcomes[0]!, wake };
  }

  /** The job, or null when there is none (or it was purged after its retention). */
  async get(topic: string, id: string): Promise<Job | null> {
    checkJobRef(topic, id);
    this.topic(topic);
    const k = this.keysOf(topic, id);
    const view = await runScript<View | null>(this.redis, 'getJob', [k.jobs, k.delayed], [id]);
    return view ? this.toJob(topic, view) : null;
  }

  /**
   * Cancels a pending or running job and returns it (state `cancelled`); cancelling twice is
   * fine. Throws 404 NOT_FOUND, or 409 JOB_FINISHED for a done or dead job.
   */
  async cancel(topic: string, id: string): Promise<Job> {
    checkJobRef(topic, id);
    this.topic(topic);
    const k = this.keysOf(topic, id);
    const [code, view] = await runScript<[number, View?]>(this.redis, 'cancelJob', [k.jobs, k.delayed, k.running, k.done], [this.now(), id, this.config.retentionMs]);
    if (code < 0) throw refusalError(code as Refusal, topic, id, view ? { job: this.toJob(topic, view) } : undefined);
    return this.toJob(topic, view!);
  }

  /**
   * Changes the due time (`delay` | `runAt`) and/or the body of a pending job. Throws 404
   * NOT_FOUND, or 409 JOB_FINISHED unless the job is delayed or ready.
   */
  async reschedule(topic: string, id: string, input: unknown): Promise<{ job: Job } & Wake> {
    checkJobRef(topic, id);
    this.topic(topic);
    const change = validateChange(input, this.config, this.clientNow());
    const k = this.keysOf(topic, id);
    const [code, headChanged, view] = await runScript<[number, (number | View)?, View?]>(this.redis, 'rescheduleJob', [k.jobs, k.delayed], [
      this.now(),
      id,
      change.when?.kind ?? '',
      change.when?.ms ?? '',
      change.body === undefined ? '0' : '1',
      change.body ?? '',
    ]);
    if (code < 0) throw refusalError(code as Refusal, topic, id, headChanged ? { job: this.toJob(topic, headChanged as View) } : undefined);
    return { job: this.toJob(topic, view!), wake: headChanged === 1 };
  }

  private moveArgs(t: TopicConfig, limit: number): (string | number)[] {
    return [this.now(), limit, t.maxAttempts, t.backoff, this.random(), this.config.deadRetentionMs];
  }

  /**
   * One bounded sweep step over every topic and partition: times out expired attempts, moves due
   * jobs to ready, purges expired finished jobs. One pipeline per partition.
   */
  async sweep(limit = this.config.moveLimit): Promise<SweepResult> {
    const result: SweepResult = { moved: 0, retried: 0, deadLettered: 0, purged: 0, readyByTopic: {}, more: false, nextAt: null, now: 0 };
    const topics = [...this.config.topics.values()];
    await Promise.all(
      Array.from({ length: this.config.partitions }, async (_, partition) => {
        const pipeline = this.redis.pipeline();
        for (const t of topics) {
          const k = topicKeys(partition, t.name);
          queueScript(pipeline, 'moveDue', [k.delayed, k.ready, k.running, k.jobs, k.dead, k.done], this.moveArgs(t, limit));
        }
        const replies = (await pipeline.exec()) ?? [];
        replies.forEach(([err, reply], i) => {
          if (err) throw err;
          const [moved, retried, dead, purged, more, nextAt, now, ready] = reply as [number, number, number, number, number, number | null, number, number];
          const topic = topics[i]!.name;
          result.moved += moved;
          result.retried += retried;
          result.deadLettered += dead;
          result.purged += purged;
          if (ready > 0) result.readyByTopic[topic] = (result.readyByTopic[topic] ?? 0) + ready;
          if (more === 1) result.more = true;
          if (nextAt !== null && (result.nextAt === null || nextAt < result.nextAt)) result.nextAt = nextAt;
          result.now = Math.max(result.now, now);
        });
      }),
    );
    return result;
  }

  /** The clock every due time and deadline is on: the fixed test clock, else Redis TIME (epoch ms). */
  async serverTime(): Promise<number> {
    const fixed = this.clock();
    if (fixed !== undefined) return fixed;
    const [seconds, micros] = await this.redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  /** moveDue for one topic in one partition (see lua/moveDue-6.lua). */
  async moveDue(topic: string, partition = 0, limit = this.config.moveLimit) {
    const t = this.topic(topic);
    const k = topicKeys(partition, topic);
    const [moved, retried, deadLettered, purged, more, nextAt, now] = await runScript<[number, number, number, number, number, number | null, number]>(
      this.redis,
      'moveDue',
      [k.delayed, k.ready, k.running, k.jobs, k.dead, k.done],
      this.moveArgs(t, limit),
    );
    return { moved, retried, deadLettered, purged, more: more === 1, nextAt, now };
  }

  /**
   * Claims up to `count` ready jobs of a topic for one attempt each, keeping the topic's running
   * attempts at most `maxRunning` (default: its concurrency). Partitions are visited round-robin.
   */
  async claim(topic: string, count: number, maxRunning?: number): Promise<ClaimedJob[]> {
    const t = this.topic(topic);
    const cap = maxRunning ?? t.concurrency;
    const partitions = this.config.partitions;
    let running = 0;
    const runningBy: number[] = [];
    if (partitions > 1) {
      const counts = await Promise.all(Array.from({ length: partitions }, (_, p) => this.redis.zcard(topicKeys(p, topic).running)));
      counts.forEach((c, p) => (runningBy[p] = c));
      running = counts.reduce((a, b) => a + b, 0);
    }
    const claimed: ClaimedJob[] = [];
    const start = this.claimStart++ % partitions;
    for (let i = 0; i < partitions && claimed.length < count; i++) {
      const p = (start + i) % partitions;
      const k = topicKeys(p, topic);
      // this partition may fill what the others leave of the cap
      const room = partitions > 1 ? cap - (running - runningBy[p]!) : cap;
      if (room <= 0) continue;
      const [now, , , ...items] = await runScript<[number, number, number, ...[string, number, number, number, string | null, string, number | null][]]>(
        this.redis,
        'claimJobs',
        [k.ready, k.running, k.jobs, k.delayed],
        [this.now(), count - claimed.length, room, t.ttrMs],
      );
      for (const [id, attempt, runAt, deadline, url, body, max] of items) {
        claimed.push({
          topic,
          id,
          attempt,
          maxAttempts: max ?? t.maxAttempts,
          runAt,
          deadline,
          ...(url ? { url } : {}),
          body: JSON.parse(body),
          latenessMs: now - runAt,
        });
      }
      if (partitions > 1) running += items.length;
    }
    return claimed;
  }

  /** Ends attempt `attempt` of a job as done; `stale` when that attempt already ended. */
  async ack(topic: string, id: string, attempt: number): Promise<AckOutcome> {
    const k = this.keysOf(topic, id);
    const code = await runScript<number>(this.redis, 'ackJob', [k.jobs, k.running, k.done], [this.now(), id, attempt, this.config.retentionMs]);
    return code === OUTCOME.ACKED ? 'done' : code === REFUSAL.NOT_FOUND ? 'not_found' : code === REFUSAL.CANCELLED ? 'cancelled' : 'stale';
  }

  /**
   * Ends attempt `attempt` of a job as failed with `error`: a retry after the backoff (or after
   * `retryAfterMs`), or dead when its attempts are used up.
   */
  async fail(topic: string, id: string, attempt: number, error: string, retryAfterMs?: number): Promise<FailOutcome> {
    const t = this.topic(topic);
    const k = this.keysOf(topic, id);
    const [code, runAt, headChanged] = await runScript<[number, number?, number?]>(this.redis, 'failJob', [k.jobs, k.running, k.delayed, k.dead], [
      this.now(),
      id,
      attempt,
      error,
      t.maxAttempts,
      t.backoff,
      this.random(),
      retryAfterMs === undefined ? '' : Math.max(0, Math.round(retryAfterMs)),
    ]);
    if (code === OUTCOME.RETRY_SCHEDULED) return { outcome: 'retry', runAt: runAt!, wake: headChanged === 1 };
    if (code === OUTCOME.DEAD_LETTERED) return { outcome: 'dead' };
    return { outcome: code === REFUSAL.NOT_FOUND ? 'not_found' : code === REFUSAL.CANCELLED ? 'cancelled' : 'stale' };
  }

  /** Gives claimed jobs back to the front of their ready lists without counting the attempt. */
  async release(jobs: Pick<ClaimedJob, 'topic' | 'id' | 'attempt'>[]): Promise<number> {
    const groups = new Map<string, typeof jobs>();
    for (const job of jobs) {
      const group = `${partitionOf(job.topic, job.id, this.config.partitions)}\n${job.topic}`;
      groups.set(group, [...(groups.get(group) ?? []), job]);
    }
    let released = 0;
    for (const [group, members] of groups) {
      const [partition, topic] = group.split('\n') as [string, string];
      const k = topicKeys(Number(partition), topic);
      for (let i = 0; i < members.length; i += RELEASE_CHUNK) {
        const args = members.slice(i, i + RELEASE_CHUNK).flatMap((j) => [j.id, j.attempt]);
        released += await runScript<number>(this.redis, 'releaseJobs', [k.jobs, k.running, k.ready], [this.now(), ...args]);
      }
    }
    return released;
  }

  /** Moves dead jobs of a topic back to delayed, due now: the given ids, or the `count` oldest. */
  async redrive(topic: string, options: { ids?: string[]; count?: number } = {}): Promise<{ redriven: number } & Wake> {
    this.topic(topic);
    let redriven = 0;
    let wake = false;
    const run = async (partition: number, args: (string | number)[]) => {
      const k = topicKeys(partition, topic);
      const [n, headChanged] = await runScript<[number, number]>(this.redis, 'redriveJobs', [k.dead, k.delayed, k.jobs], [this.now(), ...args]);
      redriven += n;
      if (headChanged === 1) wake = true;
    };
    if (options.ids) {
      const byPartition = new Map<number, string[]>();
      for (const id of options.ids) {
        checkJobRef(topic, id);
        const p = partitionOf(topic, id, this.config.partitions);
        byPartition.set(p, [...(byPartition.get(p) ?? []), id]);
      }
      for (const [p, ids] of byPartition) await run(p, [ids.length, ...ids]);
    } else {
      let left = options.count ?? REDRIVE_COUNT.default;
      for (let p = 0; p < this.config.partitions && left > 0; p++) {
        const before = redriven;
        await run(p, [left]);
        left -= redriven - before;
      }
    }
    return { redriven, wake };
  }

  /** Counts per state and the next due time of a topic, summed over partitions. */
  async stats(topic: string): Promise<TopicStats> {
    this.topic(topic);
    const stats: TopicStats = { topic, delayed: 0, ready: 0, running: 0, dead: 0, nextDueAt: null };
    let next: number | null = null;
    await Promise.all(
      Array.from({ length: this.config.partitions }, async (_, p) => {
        const k = topicKeys(p, topic);
        const replies = (await this.redis.pipeline().zcard(k.delayed).llen(k.ready).zcard(k.running).zcard(k.dead).zrange(k.delayed, 0, 0, 'WITHSCORES').exec()) ?? [];
        const [delayed, ready, running, dead, head] = replies.map(([err, value]) => {
          if (err) throw err;
          return value;
        }) as [number, number, number, number, string[]];
        stats.delayed += delayed;
        stats.ready += ready;
        stats.running += running;
        stats.dead += dead;
        if (head[1] !== undefined && (next === null || Number(head[1]) < next)) next = Number(head[1]);
      }),
    );
    stats.nextDueAt = next === null ? null : iso(next);
    return stats;
  }

  /** Stats of every configured topic. */
  async statsAll(): Promise<TopicStats[]> {
    return Promise.all([...this.config.topics.keys()].map((t) => this.stats(t)));
  }

  /**
   * Dead jobs of a topic, oldest first, at most `limit` (DEAD_PAGE, clamped into it), after the cursor `after` (the
   * `diedAt` epoch ms of the last job of the previous page). `next` is the cursor for the next page.
   */
  async listDead(topic: string, options: { limit?: number; after?: number } = {}): Promise<{ jobs: DeadJob[]; next: number | null }> {
    this.topic(topic);
    const limit = Math.min(DEAD_PAGE.max, Math.max(DEAD_PAGE.min, options.limit ?? DEAD_PAGE.default));
    const pages = await Promise.all(
      Array.from({ length: this.config.partitions }, (_, p) => {
        const k = topicKeys(p, topic);
        return runScript<[number, View][]>(this.redis, 'listDead', [k.dead, k.jobs], [options.after ?? '-inf', limit]);
      }),
    );
    const entries = pages.flat().sort((a, b) => a[0] - b[0]);
    const jobs = entries.slice(0, limit).map(([diedAt, view]) => ({ ...this.toJob(topic, view), diedAt: iso(diedAt) }));
    const last = entries[limit - 1];
    return { jobs, next: entries.length > limit || (last && pages.some((page) => page.length === limit)) ? last![0] : null };
  }
}
