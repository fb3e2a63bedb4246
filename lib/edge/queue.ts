import type { Cluster, Redis } from 'ioredis';
import type { QueueConfig } from '../rules/config';
import * as engine from '../engine';
import { encodeDeadCursor } from '../engine/dead';
import { confirmReplicated, NotReplicatedError } from '../engine/durable';
import { isRefused, type AckOutcome, type AttemptRef, type ClaimedJob, type DeadJob, type FailOutcome, type Job, type Refused, type SweepResult, type TopicStats, type Wake, type WriteResult } from '../engine';
import { HttpError, refusalError } from './errors';
import { DEAD_PAGE, JOBS_PAGE, REDRIVE_COUNT, SCHEDULES_PAGE, SCRIPT_CALL_BYTES } from '../rules/limits';
import { validateSchedule } from '../rules/schedule';
import { partitionOf } from '../engine/keys';
import { registerScripts } from '../engine/lua';
import { badCursor, checkBatchSize, checkDeadCursor, checkGroupRef, checkJobRef, requireTopic, validateChange, validateJob, validatePut, type GroupPage, type IfMatch, type JobsQuery, type NewJob } from './validation';

export type { AckOutcome, AttemptRef, ClaimedJob, DeadJob, FailOutcome, Job, JobState, Schedule, SweepResult, TopicStats, Wake } from '../engine';

/** What an add or put of one job did (invalid input throws instead). */
export type WriteOutcome =
  | { status: 'created'; job: Job }
  | { status: 'replaced'; job: Job }
  | { status: 'exists'; job: Job; error: HttpError }
  | { status: 'finished'; job: Job; error: HttpError };

/** A topic's stats as GET /topics shows them. */
export type TopicStatsView = TopicStats & { lateness: engine.LatenessWindow; oldestReadyAgeMs: number | null; lastHour: engine.LatenessMinute[] };

/** What the add of one job of a batch did; an invalid one says why. */
export type AddOutcome = WriteOutcome | { status: 'invalid'; error: HttpError };

/** Test seams of a DelayQueue. */
export interface QueueOptions {
  /** Fixed clock for tests (epoch ms), passed to every script; undefined uses Redis TIME. */
  clock?: () => number | undefined;
  /** Source of jitter in [0, 1). */
  random?: () => number;
}

/**
 * A write result with its refusal as the API error it becomes. A put whose If-Match failed throws
 * 412 VERSION_MISMATCH with the job as it stands (null when there is none).
 */
function toOutcome(result: WriteResult, input: NewJob): WriteOutcome {
  if (result.status === 'mismatch') throw refusalError(result.refusal, input.topic, input.id, { job: result.job });
  if (!('refusal' in result)) return { status: result.status, job: result.job };
  const { refusal, status, job } = result;
  return { status, job, error: refusalError(refusal, job.topic, job.id) };
}

/** Throws the API error of a refusal; otherwise returns the outcome. */
function orThrow<T extends object>(outcome: T | Refused, topic: string, id: string): T {
  if (!isRefused(outcome)) return outcome;
  throw refusalError(outcome.refusal, topic, id, outcome.job ? { job: outcome.job } : undefined);
}

/**
 * The delay queue: validates its input (lib/edge/validation.ts), runs the engine (lib/engine/: every
 * state change is one Lua script call), and turns the engine's refusals into API errors
 * (HttpError, lib/edge/errors.ts).
 */
export class DelayQueue {
  private readonly ctx: engine.EngineContext;
  private readonly fixedClock: () => number | undefined;

  constructor(
    readonly redis: Redis | Cluster,
    readonly config: QueueConfig,
    options: QueueOptions = {},
  ) {
    registerScripts(redis);
    const fixedClock = options.clock ?? (() => undefined);
    this.fixedClock = fixedClock;
    this.ctx = { redis, config, clock: () => fixedClock() ?? '', random: options.random ?? Math.random, rotation: new engine.Rotation() };
  }

  /** The clock validation bounds runAt with: the fixed test clock, else this machine's. */
  private clientNow(): number {
    return this.fixedClock() ?? Date.now();
  }

  /**
   * With durability `replica`, returns once a replica has the changes this queue made in
   * `partitions` and, for `covering`, every change their primary had (answers that wrote nothing);
   * throws 503 NOT_REPLICATED when none confirmed in time. Does nothing with durability `none`.
   */
  private async durable(partitions: Iterable<number>, covering: Iterable<number> = []): Promise<void> {
    const { mode, timeoutMs } = this.config.durability;
    if (mode !== 'replica') return;
    try {
      await confirmReplicated(this.ctx, partitions, covering, timeoutMs);
    } catch (error) {
      if (!(error instanceof NotReplicatedError)) throw error;
      throw new HttpError(
        503,
        'NOT_REPLICATED',
        `the change reached the primary, but no replica confirmed it within ${timeoutMs} ms, so a failover could undo it; retry the same request (it is idempotent)`,
        undefined,
        1,
      );
    }
  }

  private async write(jobs: NewJob[], mode: 'add' | 'put'): Promise<{ outcomes: WriteOutcome[] } & Wake> {
    const { results, wake } = await engine.writeJobs(this.ctx, jobs, mode);
    const outcomes = results.map((r, i) => toOutcome(r, jobs[i]!));
    const changed = new Set<number>();
    const covering = new Set<number>(); // answers that stand on what the primary had: "exists", "running"
    outcomes.forEach((o, i) => (o.status === 'created' || o.status === 'replaced' ? changed : covering).add(jobs[i]!.partition));
    await this.durable(changed, covering);
    return { outcomes, wake };
  }

  /**
   * Adds one job (API input, validated here). Created, or `exists` when (topic, id) is taken:
   * then nothing changed and the existing job is returned. Throws HttpError on invalid input.
   */
  async add(input: unknown): Promise<WriteOutcome & Wake> {
    const { outcomes, wake } = await this.write([validateJob(input, this.config, this.clientNow())], 'add');
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
  async put(topic: string, id: string, input: unknown, options: { ifMatch?: IfMatch } = {}): Promise<WriteOutcome & Wake> {
    const job = validatePut(topic, id, input, this.config, this.clientNow());
    const { ifMatch } = options;
    if (ifMatch !== undefined) job.ifMatch = ifMatch === '*' ? '*' : ifMatch.version;
    const { outcomes, wake } = await this.write([job], 'put');
    return { ...outcomes[0]!, wake };
  }

  /** The job, or null when there is none (or it was purged after its retention). */
  async get(topic: string, id: string): Promise<Job | null> {
    checkJobRef(topic, id);
    return engine.getJob(this.ctx, requireTopic(this.config, topic), id);
  }

  /**
   * Cancels a pending or running job and returns it (state `cancelled`); cancelling twice is
   * fine. Throws 404 NOT_FOUND, 409 JOB_FINISHED for a done or dead job, or 412 VERSION_MISMATCH
   * (with the job as it stands, or null) when `ifMatch` does not hold.
   */
  async cancel(topic: string, id: string, options: { ifMatch?: IfMatch } = {}): Promise<Job> {
    checkJobRef(topic, id);
    const { ifMatch } = options;
    const outcome = await engine.cancelJob(this.ctx, requireTopic(this.config, topic), id, ifMatch === undefined ? '' : ifMatch === '*' ? '*' : ifMatch.version);
    if (isRefused(outcome) && outcome.refusal === engine.REFUSAL.VERSION_MISMATCH) throw refusalError(outcome.refusal, topic, id, { job: outcome.job ?? null });
    const { job } = orThrow(outcome, topic, id);
    const partition = partitionOf(topic, id, this.config.partitions);
    await this.durable([partition], [partition]); // "already cancelled" wrote nothing
    return job;
  }

  /**
   * Changes the due time (`delay` | `runAt`) and/or the body of a pending job. Throws 404
   * NOT_FOUND, or 409 JOB_FINISHED unless the job is delayed or ready.
   */
  async reschedule(topic: string, id: string, input: unknown): Promise<{ job: Job } & Wake> {
    checkJobRef(topic, id);
    const t = requireTopic(this.config, topic);
    const change = validateChange(input, this.config, this.clientNow());
    const result = orThrow(await engine.rescheduleJob(this.ctx, t, id, change), topic, id);
    await this.durable([partitionOf(topic, id, this.config.partitions)]);
    return result;
  }

  /**
   * One bounded sweep step over every topic and partition: times out expired attempts, moves due
   * jobs to ready, purges expired finished jobs. One pipeline per partition. `onReady` runs as
   * soon as jobs are ready, before the due schedules are moved on (engine/sweep.ts).
   */
  sweep(limit = this.config.moveLimit, onReady?: engine.OnReady): Promise<SweepResult> {
    return engine.sweep(this.ctx, limit, onReady);
  }

  /** The clock every due time and deadline is on: the fixed test clock, else Redis TIME (epoch ms). */
  serverTime(): Promise<number> {
    return engine.serverTime(this.ctx);
  }

  /** moveDue for one topic in one partition (see lua/moveDue-7.lua). */
  async moveDue(topic: string, partition = 0, limit = this.config.moveLimit) {
    return engine.moveDue(this.ctx, requireTopic(this.config, topic), partition, limit);
  }

  /**
   * Claims up to `count` ready jobs of a topic for one attempt each, keeping the topic's running
   * attempts at most `maxRunning` (default: its concurrency), and stopping once their bodies reach
   * `maxBytes` (default SCRIPT_CALL_BYTES, one Lambda event's worth; one job always gets through).
   * Partitions are visited round-robin. A topic with a rateLimit claims only as many as it allows.
   */
  async claim(topic: string, count: number, maxRunning?: number, maxBytes = SCRIPT_CALL_BYTES): Promise<ClaimedJob[]> {
    return (await this.claimPaced(topic, count, maxRunning, maxBytes)).jobs;
  }

  /**
   * As claim, and says how long the topic's rateLimit holds further claims back (`waitMs`, when it
   * granted fewer than `count`; null otherwise, and always for a topic without one).
   */
  async claimPaced(topic: string, count: number, maxRunning?: number, maxBytes = SCRIPT_CALL_BYTES): Promise<engine.PacedClaim> {
    const t = requireTopic(this.config, topic);
    return engine.claimPaced(this.ctx, t, count, maxRunning ?? t.concurrency, maxBytes);
  }

  /**
   * Marks the claimed attempts of a topic's batch that are still live as started and says, in
   * order, which are: run only those (the others ended, were cancelled or were re-created).
   */
  start(topic: string, jobs: readonly (Pick<ClaimedJob, 'id'> & AttemptRef)[]): Promise<boolean[]> {
    return engine.startAttempts(this.ctx, requireTopic(this.config, topic).name, jobs);
  }

  /** Ends the claimed attempt `attempt` (its number and claim token) of a job as done; `stale` when that claim already ended. */
  ack(topic: string, id: string, attempt: AttemptRef): Promise<AckOutcome> {
    return engine.ackJob(this.ctx, topic, id, attempt);
  }

  /**
   * Ends the claimed attempt `attempt` of a job as failed with `error`: a retry after the backoff
   * (or after `retryAfterMs`), or dead when its attempts are used up.
   */
  async fail(topic: string, id: string, attempt: AttemptRef, error: string, retryAfterMs?: number): Promise<FailOutcome> {
    return engine.failJob(this.ctx, requireTopic(this.config, topic), id, attempt, error, retryAfterMs);
  }

  /**
   * Gives claimed jobs back to the front of their ready lists without counting the attempt (their
   * handler could not be invoked, `reason`); the sixth give-back of a job in a row counts as a
   * failed attempt. Returns how many were given back.
   */
  release(jobs: (Pick<ClaimedJob, 'topic' | 'id'> & AttemptRef)[], reason?: string): Promise<number> {
    return engine.releaseJobs(this.ctx, jobs, reason);
  }

  /** Moves dead jobs of a topic back to delayed, due now: the given ids, or the `count` oldest. */
  async redrive(topic: string, options: { ids?: string[]; count?: number } = {}): Promise<{ redriven: number } & Wake> {
    const t = requireTopic(this.config, topic);
    if (options.ids) for (const id of options.ids) checkJobRef(topic, id);
    const result = await engine.redriveJobs(this.ctx, t, options.ids ? { ids: options.ids } : { count: options.count ?? REDRIVE_COUNT.default });
    if (result.redriven > 0) await this.durable(options.ids ? options.ids.map((id) => partitionOf(topic, id, this.config.partitions)) : engine.partitionsInOrder(this.config.partitions));
    return result;
  }

  /**
   * Counts per state and the next due time of a topic, summed over partitions; how late its
   * attempts started over the last 5 minutes and per minute over the last hour; and how long its
   * oldest ready job has been due. `now` (Redis clock) saves a clock read when the caller has one.
   */
  async stats(topic: string, now?: number): Promise<TopicStatsView> {
    const t = requireTopic(this.config, topic);
    now ??= await this.serverTime();
    const [counts, lateness, oldestReadyAgeMs] = await Promise.all([engine.topicStats(this.ctx, topic), engine.latenessStats(this.ctx, topic, now), engine.oldestReadyAgeMs(this.ctx, t, now)]);
    return { ...counts, lateness: lateness.window, oldestReadyAgeMs, lastHour: lateness.lastHour };
  }

  /** Counts per state and the next due time of a topic only (plain reads; no lateness, no clock). */
  async counts(topic: string): Promise<TopicStats> {
    requireTopic(this.config, topic);
    return engine.topicStats(this.ctx, topic);
  }

  /** Records how late attempts of `topic` started (ms), for stats(); advisory, so callers may ignore its failure. */
  recordStarts(topic: string, latenessMs: readonly number[]): Promise<void> {
    return engine.recordStarts(this.ctx, topic, latenessMs);
  }

  /** Stats of every configured topic. */
  async statsAll(): Promise<TopicStatsView[]> {
    const now = await this.serverTime(); // one clock read for every topic
    return Promise.all([...this.config.topics.keys()].map((t) => this.stats(t, now)));
  }

  /**
   * Cancels every job of group `group` of topic `topic` that has not finished: delayed and ready
   * ones (`cancelled`) and running ones (`running`: the attempt under way finishes, but its ack is
   * dropped and no retry follows). Once it returns, no job of the group that was delayed or ready
   * starts; jobs added to the group afterwards run normally.
   */
  async cancelGroup(topic: string, group: string): Promise<{ cancelled: number; running: number }> {
    checkGroupRef(topic, group);
    const t = requireTopic(this.config, topic);
    const { cancelled, running, partitions } = await engine.cancelGroup(this.ctx, t, group);
    await this.durable(partitions, partitions);
    return { cancelled, running };
  }

  /**
   * The jobs of group `group` of topic `topic` with their states, at most `limit` (JOBS_PAGE), after
   * `cursor` (a previous page's `next`). A group without jobs lists empty. `next` is null at the end.
   */
  async listGroup(topic: string, group: string, page: GroupPage = {}): Promise<{ jobs: Job[]; next: string | null }> {
    checkGroupRef(topic, group);
    const t = requireTopic(this.config, topic);
    let cursor: engine.GroupCursor | undefined;
    if (page.cursor !== undefined) cursor = engine.decodeGroupCursor(page.cursor, this.config.partitions, topic, group) ?? undefined;
    if (page.cursor !== undefined && !cursor) throw badCursor();
    const result = await engine.listGroup(this.ctx, t, group, { limit: page.limit ?? JOBS_PAGE.default, ...(cursor ? { cursor } : {}) });
    return { jobs: result.jobs, next: result.next && engine.encodeGroupCursor(result.next, topic, group) };
  }

  /**
   * Jobs of topic `topic` in one state across all partitions: delayed by due time, running by TTR
   * deadline, dead by time of death (ties by id), ready in queue order; within [from, to] of that
   * time; at most `limit` (JOBS_PAGE), after `cursor` (a previous page's `next`, of the same state).
   */
  async listJobs(topic: string, query: JobsQuery): Promise<{ jobs: Job[]; next: string | null }> {
    const t = requireTopic(this.config, topic);
    const limit = query.limit ?? JOBS_PAGE.default;
    const cursor = query.cursor === undefined ? undefined : engine.decodeJobsCursor(query.cursor, query.state, this.config.partitions);
    if (query.cursor !== undefined && !cursor) throw badCursor();
    const bounds = { ...(query.from !== undefined ? { from: query.from } : {}), ...(query.to !== undefined ? { to: query.to } : {}) };
    const page = await engine.listJobs(this.ctx, t, query.state, { limit, ...bounds, ...(cursor ? { cursor } : {}) });
    return { jobs: page.jobs, next: page.next && engine.encodeJobsCursor(page.next) };
  }

  /**
   * Dead jobs of a topic, oldest first (ties by id), at most `limit` (DEAD_PAGE, clamped into it),
   * after the cursor `after`: the previous page's `next` (opaque), or an epoch ms (jobs that died
   * after it; earlier versions' cursor). `next` is the cursor for the next page, or null.
   */
  async listDead(topic: string, options: { limit?: number; after?: string | number } = {}): Promise<{ jobs: DeadJob[]; next: string | null }> {
    const t = requireTopic(this.config, topic);
    const limit = Math.min(DEAD_PAGE.max, Math.max(DEAD_PAGE.min, options.limit ?? DEAD_PAGE.default));
    const after = options.after === undefined ? undefined : checkDeadCursor(options.after);
    const page = await engine.listDeadJobs(this.ctx, t, { limit, ...(after ? { after } : {}) });
    return { jobs: page.jobs, next: page.next && encodeDeadCursor(page.next) };
  }

  /**
   * Creates or replaces schedule topic/id (API input, validated here: 400 VALIDATION_FAILED naming
   * each bad field, 400 UNKNOWN_TOPIC, 413 PAYLOAD_TOO_LARGE) and, in the same script, its pending
   * occurrence: a pending one not yet due is replaced, one already due runs as it was. `wake`: an
   * occurrence became the earliest due job of its partition (wake the sweeper).
   */
  async putSchedule(topic: string, id: string, input: unknown): Promise<{ status: 'created' | 'replaced'; schedule: engine.Schedule } & Wake> {
    const s = validateSchedule(topic, id, input, this.config, this.clientNow());
    const result = await engine.putSchedule(this.ctx, requireTopic(this.config, topic), s);
    await this.durable([s.partition]);
    return result;
  }

  /** Schedule topic/id with its next 5 run times, or null when there is none. */
  async getSchedule(topic: string, id: string): Promise<engine.Schedule | null> {
    checkJobRef(topic, id, 'schedule');
    return engine.getSchedule(this.ctx, requireTopic(this.config, topic), partitionOf(topic, id, this.config.partitions), id);
  }

  /**
   * Deletes schedule topic/id and withdraws its pending occurrence (an occurrence already running
   * runs on). Throws 404 NOT_FOUND when there is no such schedule.
   */
  async deleteSchedule(topic: string, id: string): Promise<void> {
    checkJobRef(topic, id, 'schedule');
    const partition = partitionOf(topic, id, this.config.partitions);
    const deleted = await engine.deleteSchedule(this.ctx, requireTopic(this.config, topic), partition, id);
    if (!deleted) throw new HttpError(404, 'NOT_FOUND', `schedule ${topic}/${id} not found`);
    await this.durable([partition]);
  }

  /**
   * Schedules of topic `topic` by id, at most `limit` (SCHEDULES_PAGE), after `cursor` (a previous
   * page's `next`). `next` is null at the end.
   */
  async listSchedules(topic: string, page: { limit?: number; cursor?: string } = {}): Promise<{ schedules: engine.Schedule[]; next: string | null }> {
    const t = requireTopic(this.config, topic);
    const limit = page.limit ?? SCHEDULES_PAGE.default;
    if (!Number.isInteger(limit) || limit < SCHEDULES_PAGE.min || limit > SCHEDULES_PAGE.max) {
      const message = `must be an integer from ${SCHEDULES_PAGE.min} to ${SCHEDULES_PAGE.max}`;
      throw new HttpError(400, 'VALIDATION_FAILED', `limit ${message}`, [{ path: 'limit', message }]);
    }
    const after = page.cursor === undefined ? undefined : engine.decodeScheduleCursor(page.cursor);
    if (after === null) throw badCursor();
    const result = await engine.listSchedules(this.ctx, t, { limit, ...(after !== undefined ? { after } : {}) });
    return { schedules: result.schedules, next: result.next && engine.encodeScheduleCursor(result.next) };
  }
}
