/**
 * The engine's door: every operation on jobs, attempts, groups, listings and schedules, as one
 * object over a Redis client and a resolved configuration. It takes validated input (the HTTP
 * edge validates; the Lambda roles pass what the engine gave them), runs the Lua scripts through
 * the operation modules beside it, and answers typed results and refusal codes; it never throws
 * an HTTP error. A change returns once it is as durable as the configuration asks (durability
 * `replica`: else NotReplicatedError), and an add that became the earliest due job wakes the
 * sweeper itself (`wake` in the options).
 */
import type { QueueConfig, TopicConfig } from '../core/queue-config';
import { DEAD_PAGE, JOBS_PAGE, MAX_KEYS, REDRIVE_COUNT, SCRIPT_CALL_BYTES, SCHEDULES_PAGE } from '../core/limits';
import type { NewSchedule } from './shapes';
import { authKey, createKey, listKeys, revokeKey, type Caller, type KeyInfo } from './api-keys';
import { ackJob, claimPaced, failJob, releaseJobs, startAttempts, type PacedClaim, type Started } from './attempts';
import { WAKE, wakeForDue } from './coordination';
import { serverTime, type EngineContext } from './context';
import { listDeadJobs, redriveJobs, type DeadCursor } from './dead';
import { confirmReplicated } from './durable';
import { cancelGroup, listGroup, type GroupCursor } from './groups';
import {
  isRefused,
  type AckOutcome,
  type AttemptRef,
  type ClaimedJob,
  type DeadJob,
  type FailOutcome,
  type Job,
  type JobChange,
  type NewJob,
  type Refused,
  type SweepResult,
  type TopicStats,
  type Wake,
  type WriteResult,
} from './jobs';
import { latenessStats, oldestReadyAgeMs, recordStarts, type LatenessMinute, type LatenessWindow } from './lateness';
import { listJobs, type JobsCursor, type ListState } from './lists';
import { layoutFor } from './keys';
import { Rotation } from './partitions';
import { claimable, getJob, topicStats } from './read';
import { getFlowKey, pauseTopic, setFlowKey, type FlowKeyChange, type FlowKeyState } from './flow';
import { deleteSchedule, getSchedule, listSchedules, pauseSchedule, putSchedule, type Schedule } from './schedules';
import { sweep, type OnReady } from './sweep';
import { cancelJob, rescheduleJob, writeJobs } from './write';

/** What an engine is built with besides its client and configuration. */
export interface EngineOptions {
  /** Fixed clock for tests (epoch ms), passed to every script; undefined uses Redis TIME. */
  clock?: () => number | undefined;
  /** Source of jitter in [0, 1). */
  random?: () => number;
  /**
   * Wake-ups: when a change made a job the earliest due of its partition, the engine wakes the
   * running sweeper, or calls `startSweeper` when none runs and the job is due within
   * `horizonMs`. Left out (tests), no wake-up is sent: the caller sweeps.
   */
  wake?: { horizonMs: number; startSweeper?: () => Promise<unknown>; onError: (error: unknown) => void };
}

/** A topic's stats with its lateness, as GET /topics shows them. */
export type TopicStatsView = TopicStats & {
  lateness: LatenessWindow;
  oldestReadyAgeMs: number | null;
  lastHour: LatenessMinute[];
};

/**
 * What every operation of the Engine stands on: its client, configuration and context, the
 * topics, the clock, the durability wait and the sweeper's wake-up.
 */
export class EngineBase {
  readonly ctx: EngineContext;

  constructor(
    redis: EngineContext['redis'],
    readonly config: QueueConfig,
    private readonly options: EngineOptions = {},
  ) {
    const fixed = options.clock ?? (() => undefined);
    this.ctx = {
      redis,
      config,
      layout: layoutFor(config),
      clock: () => fixed() ?? '',
      random: options.random ?? Math.random,
      rotation: new Rotation(),
      statsRotation: new Rotation(),
    };
  }

  /** The configuration of topic `name`, which the caller has validated. */
  topic(name: string): TopicConfig {
    const t = this.config.topics.get(name);
    if (!t) throw new Error(`unknown topic ${name}: the caller validates topics`);
    return t;
  }

  /** The partition of job (or schedule) `topic`/`id`. */
  partitionOf(topic: string, id: string): number {
    return this.ctx.layout.placeOf(this.config.topics.get(topic) ?? topic, id);
  }

  /** The clock every due time is on: the fixed test clock, else Redis TIME (epoch ms). */
  serverTime(): Promise<number> {
    return serverTime(this.ctx);
  }

  /** The fixed test clock, or undefined on Redis's. */
  fixedNow(): number | undefined {
    return this.options.clock?.();
  }

  /**
   * With durability `replica`, returns once a replica has this engine's changes in `partitions`
   * and, for `covering`, every change their primary had (answers that wrote nothing but report
   * state); throws NotReplicatedError when none confirmed in time.
   */
  protected async durable(
    partitions: Iterable<number>,
    covering: Iterable<number> = [],
    layout = this.ctx.layout,
  ): Promise<void> {
    const { mode, timeoutMs } = this.config.durability;
    if (mode === 'replica') await confirmReplicated(this.ctx, partitions, covering, timeoutMs, layout);
  }

  /**
   * Makes sure a sweeper looks in time for a job due at `dueAt` ('now': due on Redis's clock now):
   * wakes the running one, or starts one (`wake.startSweeper`) when none runs and the job is due
   * within the horizon. Never throws: the job is stored, and the tick bounds its lateness.
   */
  async wake(dueAt: number | 'now'): Promise<void> {
    const wake = this.options.wake;
    if (!wake) return;
    try {
      if ((await wakeForDue(this.ctx, dueAt, wake.horizonMs)) === WAKE.START_SWEEPER && wake.startSweeper)
        await wake.startSweeper();
    } catch (error) {
      wake.onError(error);
    }
  }

  /**
   * A flow topic's claim that left keys held by their pace: a sweep must look when the first may go (it puts them back
   * in turn).
   */
  protected async heldBack<C extends PacedClaim>(claim: C): Promise<C> {
    if (claim.heldUntil !== null) await this.wake(claim.heldUntil);
    return claim;
  }
}

export class Engine extends EngineBase {
  // Producers' changes: durable before they return; wake the sweeper when they made a job due first.

  /**
   * Writes validated jobs ('add' refuses an existing id, 'put' replaces a pending job); one result per job, in order.
   * `by` (in every API change): the key's name, its updatedBy.
   */
  async write(jobs: readonly NewJob[], mode: 'add' | 'put', by = ''): Promise<{ results: WriteResult[] } & Wake> {
    const { results, wake, touched } = await writeJobs(this.ctx, jobs, mode, by);
    for (const { changed, covering, layout } of touched) await this.durable(changed, covering, layout);
    if (wake) {
      const due = results.flatMap((r) =>
        r.status === 'created' || r.status === 'replaced' ? [Date.parse(r.job.runAt)] : [],
      );
      if (due.length > 0) await this.wake(Math.min(...due));
    }
    return { results, wake };
  }

  /** Cancels a pending or running job (`ifMatch`: '' none, '*' any version, or a version). */
  async cancel(topic: string, id: string, ifMatch: '' | '*' | number = '', by = ''): Promise<{ job: Job } | Refused> {
    const { outcome, wrote, looked } = await cancelJob(this.ctx, this.topic(topic), id, ifMatch, by);
    // 404, 409, 412 and "already cancelled" wrote nothing
    await this.durable(looked, wrote ? looked.slice(0, -1) : looked);
    return outcome;
  }

  /** Changes the due time and/or body of a pending job. */
  async reschedule(topic: string, id: string, change: JobChange): Promise<({ job: Job } & Wake) | Refused> {
    const { outcome, looked } = await rescheduleJob(this.ctx, this.topic(topic), id, change);
    await this.durable(looked, isRefused(outcome) ? looked : looked.slice(0, -1));
    if ('wake' in outcome && outcome.wake) await this.wake(Date.parse(outcome.job.runAt));
    return outcome;
  }

  /** Moves dead jobs back to delayed, due now: the given ids, or the `count` oldest. */
  async redrive(
    topic: string,
    which: { ids: readonly string[] } | { count: number } = { count: REDRIVE_COUNT.default },
    by = '',
  ): Promise<{ redriven: number } & Wake> {
    const { redriven, wake, changed, looked } = await redriveJobs(this.ctx, this.topic(topic), which, by);
    await this.durable(changed, looked); // "redriven: 0" stands on what the primary had
    if (wake) await this.wake('now');
    return { redriven, wake };
  }

  /** Cancels every unfinished job of a group: { cancelled, running }. */
  async cancelGroup(topic: string, group: string, by = ''): Promise<{ cancelled: number; running: number }> {
    const { cancelled, running, partitions } = await cancelGroup(this.ctx, this.topic(topic), group, undefined, by);
    await this.durable(partitions, partitions);
    return { cancelled, running };
  }

  /** Creates or replaces a validated schedule and its pending occurrence. */
  async putSchedule(
    topic: string,
    s: NewSchedule,
  ): Promise<{ status: 'created' | 'replaced'; schedule: Schedule } & Wake> {
    const { touched, ...result } = await putSchedule(this.ctx, this.topic(topic), s);
    // the answer is the schedule read after the write, another writer's change included
    for (const d of touched) await this.durable(d.changed, d.covering, d.layout);
    if (result.wake) {
      // the pending occurrence, or a missed one caught up on resume (due now, at lastRunAt)
      const times = [result.schedule.pending?.runAt, result.schedule.lastRunAt].flatMap((t) =>
        t ? [Date.parse(t)] : [],
      );
      await this.wake(times.length > 0 ? Math.min(...times) : 'now');
    }
    return result;
  }

  /**
   * Pauses (or resumes) schedule `topic`/`id`, its definition kept: once a pause returns, no
   * occurrence of it starts (one not started yet is withdrawn, or cancelled while claimed; one that
   * started runs on); a resume catches up on what the pause missed by its catchUp. Null: none.
   */
  async pauseSchedule(topic: string, id: string, paused: boolean, by = ''): Promise<Schedule | null> {
    const result = await pauseSchedule(this.ctx, this.topic(topic), id, paused, by);
    for (const d of result.touched) await this.durable(d.changed, d.covering, d.layout);
    if (result.schedule && result.wake) {
      const times = [result.schedule.pending?.runAt, result.schedule.lastRunAt].flatMap((t) =>
        t ? [Date.parse(t)] : [],
      );
      await this.wake(times.length > 0 ? Math.min(...times) : 'now');
    }
    return result.schedule;
  }

  /** Deletes a schedule and withdraws its pending occurrence; false when there was none. */
  async deleteSchedule(topic: string, id: string): Promise<boolean> {
    const { deleted, touched } = await deleteSchedule(this.ctx, this.topic(topic), id);
    // a 404 stands on what the primary had
    for (const d of touched) await this.durable(d.changed, d.covering, d.layout);
    return deleted;
  }

  /**
   * Pauses topic `topic`: once this returns, no job of it starts (claims take nothing, and attempts
   * claimed before are held back at their start, uncounted) until it is resumed; adds are still
   * accepted and running attempts finish.
   */
  async pauseTopic(topic: string, by = ''): Promise<void> {
    const partitions = await pauseTopic(this.ctx, this.topic(topic), true, by);
    await this.durable(partitions, partitions);
  }

  /** Resumes topic `topic`: its ready jobs start again within its limits (the sweeper is woken to hand them out). */
  async resumeTopic(topic: string, by = ''): Promise<void> {
    const partitions = await pauseTopic(this.ctx, this.topic(topic), false, by);
    await this.durable(partitions, partitions);
    await this.wake('now');
  }

  /** Flow key `key` of flow topic `topic`: running, ready, pace, limits, pause. */
  flowKey(topic: string, key: string): Promise<FlowKeyState> {
    return getFlowKey(this.ctx, this.topic(topic), key);
  }

  /**
   * Pins flow key `key`'s limits and/or pauses or resumes it ('clear': back to the topic's
   * defaults, resumed). A key's pause has a topic pause's guarantee: none of its jobs starts once
   * this returns. A key given room or resumed is handed out again (the sweeper is woken). `by`:
   * the API key's name, the pinned record's updatedBy.
   */
  async setFlowKey(topic: string, key: string, change: FlowKeyChange | 'clear', by = ''): Promise<FlowKeyState> {
    const { state, partition } = await setFlowKey(this.ctx, this.topic(topic), key, change, by);
    await this.durable([partition], [partition]);
    if (!state.paused && state.ready > 0) await this.wake('now');
    return state;
  }

  // Reads.

  get(topic: string, id: string): Promise<Job | null> {
    return getJob(this.ctx, this.topic(topic), id);
  }

  listGroup(
    topic: string,
    group: string,
    page: { limit?: number; cursor?: GroupCursor } = {},
  ): Promise<{ jobs: Job[]; next: GroupCursor | null }> {
    return listGroup(this.ctx, this.topic(topic), group, { limit: JOBS_PAGE.default, ...page });
  }

  listJobs(
    topic: string,
    state: ListState,
    page: { limit?: number; from?: number; to?: number; cursor?: JobsCursor } = {},
  ) {
    return listJobs(this.ctx, this.topic(topic), state, { limit: JOBS_PAGE.default, ...page });
  }

  listDead(
    topic: string,
    page: { limit?: number; after?: DeadCursor } = {},
  ): Promise<{ jobs: DeadJob[]; next: (DeadCursor & { id: string }) | null }> {
    return listDeadJobs(this.ctx, this.topic(topic), { limit: DEAD_PAGE.default, ...page });
  }

  getSchedule(topic: string, id: string): Promise<Schedule | null> {
    return getSchedule(this.ctx, this.topic(topic), id);
  }

  listSchedules(
    topic: string,
    page: { limit?: number; after?: string } = {},
  ): Promise<{ schedules: Schedule[]; next: string | null }> {
    return listSchedules(this.ctx, this.topic(topic), { limit: SCHEDULES_PAGE.default, ...page });
  }

  /**
   * Whether topic `topic` may have jobs a claim would take now: not paused, under its concurrency, ready ids (a flow
   * topic: keys in turn). Advisory.
   */
  claimable(topic: string): Promise<boolean> {
    return claimable(this.ctx, this.topic(topic));
  }

  /** Counts per state and the next due time of a topic (plain reads). */
  counts(topic: string): Promise<TopicStats> {
    return topicStats(this.ctx, this.topic(topic).name);
  }

  /** Counts, lateness over the last 5 minutes and per minute over the last hour, and the oldest ready job's age. */
  async stats(topic: string, now?: number): Promise<TopicStatsView> {
    const t = this.topic(topic);
    now ??= await this.serverTime();
    const [counts, lateness, oldest] = await Promise.all([
      topicStats(this.ctx, t.name),
      latenessStats(this.ctx, t.name, now),
      oldestReadyAgeMs(this.ctx, t, now),
    ]);
    return { ...counts, lateness: lateness.window, oldestReadyAgeMs: oldest, lastHour: lateness.lastHour };
  }

  /** Stats of every configured topic, on one clock read. */
  async statsAll(): Promise<TopicStatsView[]> {
    const now = await this.serverTime();
    return Promise.all([...this.config.topics.keys()].map((t) => this.stats(t, now)));
  }

  // Attempts: the sweeper, the fan-out and the topic handlers.

  /**
   * One bounded sweep step over every topic and partition (lib/engine/sweep.ts); `onReady` runs as soon as jobs are
   * ready.
   */
  sweep(limit = this.config.moveLimit, onReady?: OnReady): Promise<SweepResult> {
    return sweep(this.ctx, limit, onReady);
  }

  /**
   * Claims up to `count` ready jobs for one attempt each, keeping the topic's running attempts at
   * most `maxRunning` (default: its concurrency) and the bodies under `maxBytes`; `waitMs`: how long
   * the topic's rateLimit holds further claims back (null when it does not).
   */
  async claimPaced(
    topic: string,
    count: number,
    maxRunning?: number,
    maxBytes = SCRIPT_CALL_BYTES,
  ): Promise<PacedClaim> {
    const t = this.topic(topic);
    return this.heldBack(await claimPaced(this.ctx, t, count, maxRunning ?? t.concurrency, maxBytes));
  }

  /** As claimPaced, the jobs only. */
  async claim(topic: string, count: number, maxRunning?: number, maxBytes = SCRIPT_CALL_BYTES): Promise<ClaimedJob[]> {
    return (await this.claimPaced(topic, count, maxRunning, maxBytes)).jobs;
  }

  /**
   * As claim, each attempt started in the same script call (lateness recorded): for a handler that runs what it claims
   * at once.
   */
  async claimStarted(topic: string, count: number): Promise<ClaimedJob[]> {
    const t = this.topic(topic);
    return (await this.heldBack(await claimPaced(this.ctx, t, count, t.concurrency, SCRIPT_CALL_BYTES, true))).jobs;
  }

  /**
   * Marks claimed attempts still live as started and records their lateness; says, in order, which are (run only
   * those).
   */
  async start(topic: string, jobs: readonly (Pick<ClaimedJob, 'id'> & AttemptRef)[]): Promise<boolean[]> {
    return (await startAttempts(this.ctx, this.topic(topic).name, jobs)).live;
  }

  /**
   * As start, and the clock the attempts were checked on (Redis's, or the fixed test clock): a handler's offset to it,
   * without a TIME request of its own.
   */
  startTimed(topic: string, jobs: readonly (Pick<ClaimedJob, 'id'> & AttemptRef)[]): Promise<Started> {
    return startAttempts(this.ctx, this.topic(topic).name, jobs);
  }

  /** Ends a claimed attempt as done; `stale` when that claim already ended. */
  ack(topic: string, id: string, attempt: AttemptRef): Promise<AckOutcome> {
    return ackJob(this.ctx, topic, id, attempt);
  }

  /**
   * Ends a claimed attempt as failed: a retry after the backoff (or `retryAfterMs`), or dead; wakes the sweeper for the
   * retry.
   */
  async fail(
    topic: string,
    id: string,
    attempt: AttemptRef,
    error: string,
    retryAfterMs?: number,
  ): Promise<FailOutcome> {
    const outcome = await failJob(this.ctx, this.topic(topic), id, attempt, error, retryAfterMs);
    if (outcome.outcome === 'retry' && outcome.wake) await this.wake(outcome.runAt);
    return outcome;
  }

  /** Gives claimed jobs back to the front of their ready lists without counting the attempt. */
  release(jobs: (Pick<ClaimedJob, 'topic' | 'id'> & AttemptRef)[], reason?: string): Promise<number> {
    return releaseJobs(this.ctx, jobs, reason);
  }

  /** Records how late attempts started (ms), for stats; advisory. */
  recordStarts(topic: string, latenessMs: readonly number[]): Promise<void> {
    return recordStarts(this.ctx, topic, latenessMs);
  }

  /**
   * API keys (./access.ts): the key whose secret has digest `sha` (`deploymentSha`: API_TOKEN's, '' for none), its use
   * noted; null for none.
   */
  authKey(sha: string, deploymentSha: string): Promise<Caller | null> {
    return authKey(this.ctx, sha, deploymentSha);
  }

  /** Creates a named key for the secret of digest `sha`; 'taken' when the name is, 'full' at MAX_KEYS keys. */
  createKey(key: Caller & { sha: string; createdBy: string }): Promise<{ createdAt: number } | 'taken' | 'full'> {
    return createKey(this.ctx, key, MAX_KEYS);
  }

  /** Revokes key `name` ('deployment': the deployment's key); false when there is none. */
  revokeKey(name: string, deploymentSha: string): Promise<boolean> {
    return revokeKey(this.ctx, name, deploymentSha);
  }

  /** Every key (never a secret), the deployment's first. */
  listKeys(deploymentSha: string): Promise<KeyInfo[]> {
    return listKeys(this.ctx, deploymentSha);
  }
}
