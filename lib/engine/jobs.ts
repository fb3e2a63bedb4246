/**
 * The engine's job types, and the decoding of script replies into them. Replies arrive typed as
 * lib/engine/scripts.ts declares them (each the mirror of its script's contract block).
 */
import { describeBackoff, type Backoff } from '../core/backoff';
import type { TopicConfig } from '../core/queue-config';
import { JOB_STATE, OUTCOME, REFUSAL, type JobStateCode, type Refusal } from './codes';
import type { AckReply, AddResult, ClaimedItem, MovedResult, FailReply, LeftChunk, ScoredEntry } from './scripts';
import type { HistoryEntry, JobView, NewJob } from './shapes';
import { isoOrNull, isoTime } from '../core/time';
import { unpackContext } from '../core/trace-context';
import { parseCallback, type Callback } from './callbacks';

export type { JobChange, JobView, KeyedSpec, NewJob } from './shapes';

/** A job's state as the API names it ('delayed' is the scripts' PENDING in the delayed zset). */
export type JobState = 'delayed' | 'ready' | 'running' | 'done' | 'dead' | 'cancelled' | 'expired';

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
  /** No attempt starts at or after this time: one due then ends the job as `expired`. Null: it never expires. */
  expiresAt: string | null;
  /** Among its topic's ready jobs a higher priority is claimed first (0: the default). */
  priority: number;
  /**
   * The trace its attempts' spans belong to (the trace of the request that added it), when it was added with tracing
   * on; a schedule's occurrence: the trace of the schedule's put, which each attempt's own trace links to.
   */
  traceId?: string;
  /** What it notifies when it ends (./callbacks.ts): present only when it has a callback. */
  callback?: Callback;
  /** Grows with every change written to the job. Its ETag is `"<version>"`. */
  version: number;
  /** The job's group, or null. */
  group: string | null;
  /**
   * The name of the API key that last changed it (added, replaced, cancelled, redrove it); null when only the queue has
   * (a schedule's occurrence).
   */
  updatedBy: string | null;
  /**
   * Its flow key on a flow topic ('' when it was added without one: the jobs without a key share the key ''); null on
   * any other topic.
   */
  key: string | null;
  /**
   * Its last ended attempts, oldest first: at most 10 (HISTORY_KEEP in lua/includes/job.lua) that failed or timed out,
   * then, for a done job, the attempt that ended it. A released claim (given back uncounted) is no attempt.
   */
  attemptHistory: AttemptRecord[];
  body: unknown;
}

/** How an attempt ended. */
export type AttemptOutcome = 'done' | 'failed' | 'timedOut';

/** One ended attempt of a job. */
export interface AttemptRecord {
  /** Its number (attempts restart at 1 after a redrive). */
  attempt: number;
  /** When its handler started it, or when it was claimed if no handler did. */
  startedAt: string;
  /** When it ended: acked, failed, or its deadline for one timed out. */
  endedAt: string;
  outcome: AttemptOutcome;
  /** What it failed with (as lastError); null for done. */
  error: string | null;
  /** endedAt less startedAt, ms. */
  durationMs: number;
  /** startedAt less the time it was due, ms (Redis clock). */
  latenessMs: number;
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
  /** This claim's token, unique to it: ack, fail, start and release present it. */
  claim: string;
  /** The packed trace context of the request that added the job, when tracing was on then. */
  trace?: string;
}

/** One claimed attempt, as ack, fail and start name it: its number and its claim token. */
export interface AttemptRef {
  attempt: number;
  claim: string;
}

/** A dead job, with when it died. */
export interface DeadJob extends Job {
  diedAt: string;
}

/** Counts of one topic's jobs per state, over every partition. */
export interface TopicStats {
  topic: string;
  /** The topic has flow control per key. */
  flow: boolean;
  delayed: number;
  /** Ids in the ready lists; cancelled jobs' ids count until a claim skips them. */
  ready: number;
  running: number;
  dead: number;
  /** Jobs that ever expired (an attempt due after their expiresAt never started), over every partition. */
  expired: number;
  nextDueAt: string | null;
  /** The topic is paused: no job of it starts until it is resumed. */
  paused: boolean;
  /**
   * Only while the partition count changes (formerPartitions): what the topic still holds in the
   * former partitions, jobs in any state (done and cancelled ones in their retention included) and
   * schedules. When every topic shows 0 and 0, the change can end (DEPLOY.md).
   */
  former?: { jobs: number; schedules: number };
}

/** What one sweep over every topic and partition did. */
export interface SweepResult {
  moved: number;
  retried: number;
  deadLettered: number;
  /** Attempts that timed out before a handler started them, given back without counting. */
  givenBack: number;
  purged: number;
  /** Schedules moved on from a due occurrence to their next (lib/engine/schedules.ts). */
  schedulesAdvanced: number;
  /** Topics with ready jobs after the sweep (newly moved or waiting), with how many. */
  readyByTopic: Record<string, number>;
  /** True when some step hit its limit: sweep again at once. */
  more: boolean;
  /** Earliest next due time or TTR deadline, epoch ms on the Redis clock; null when none. */
  nextAt: number | null;
  /** The Redis clock at the sweep, epoch ms. */
  now: number;
}

/** What one add, put, reschedule, fail or redrive did to the sweeper's schedule. */
export interface Wake {
  /** True when a job became the earliest due of its topic: a sleeping sweeper should look again. */
  wake: boolean;
}

/**
 * What the add script did with one job; a refused one comes with the job as it stands (none for a
 * version mismatch on a job that does not exist). `left`: the group a put moved the job out of.
 */
export type WriteResult =
  | { status: 'created' | 'replaced'; job: Job; left: LeftChunk | null }
  | { status: 'exists' | 'finished'; job: Job; refusal: Refusal }
  | { status: 'mismatch'; job: Job | null; refusal: Refusal }
  /** a dedupe add within its key's window: nothing changed; the job that stands (null: its record is gone) */
  | { status: 'duplicate'; job: Job | null; id: string }
  /** a debounce add folded into the job of its key that waits: its body and runAt replaced */
  | { status: 'debounced'; job: Job };

/** A script refused a change to one job; `job` is the job as it stands, when there is one. */
export interface Refused {
  refusal: Refusal;
  job?: Job;
}

/** What an ack did: `stale` when that attempt already ended, `cancelled` when the job was cancelled while running. */
export type AckOutcome = 'done' | 'stale' | 'cancelled' | 'not_found';
/** What a fail did: a retry scheduled at `runAt`, dead-lettered, or nothing (the attempt was not running). */
export type FailOutcome =
  | { outcome: 'retry'; runAt: number; wake: boolean }
  | { outcome: 'dead' }
  | { outcome: 'stale' | 'cancelled' | 'not_found' };

const STATE_NAMES: Record<JobStateCode, JobState> = {
  [JOB_STATE.PENDING]: 'delayed',
  [JOB_STATE.READY]: 'ready',
  [JOB_STATE.RUNNING]: 'running',
  [JOB_STATE.DONE]: 'done',
  [JOB_STATE.DEAD]: 'dead',
  [JOB_STATE.CANCELLED]: 'cancelled',
  [JOB_STATE.EXPIRED]: 'expired',
};

/**
 * The API's view of a job of topic `t` from the scripts' view; `body`, the JSON text of its body,
 * when the view leaves it out (a body kept apart, read by the engine; a replaced job's new body).
 */
export function toJob(t: TopicConfig, view: JobView, body: string | null = view[12]): Job {
  const [
    id,
    state,
    runAt,
    createdAt,
    attempts,
    max,
    ttr,
    backoff,
    url,
    lastError,
    updatedAt,
    deadline,
    ,
    version,
    group,
    updatedBy,
    key,
  ] = view;
  if (body === null)
    throw new Error(`job ${t.name}/${id} has no body: its record says it is kept apart, and the bodies hash has none`);
  return {
    topic: t.name,
    id,
    state: STATE_NAMES[state],
    runAt: isoTime(runAt),
    createdAt: isoTime(createdAt),
    updatedAt: isoTime(updatedAt),
    attempts,
    maxAttempts: max ?? t.maxAttempts,
    ttr: (ttr ?? t.ttrMs) / 1000,
    backoff: describeBackoff(backoff ?? t.backoff),
    url,
    lastError,
    deadline: isoOrNull(deadline),
    expiresAt: isoOrNull(view[19] ?? null),
    priority: view[20] ?? 0,
    ...traceIdOf(view[21]),
    ...(view[22] ? { callback: parseCallback(view[22]) } : {}),
    version,
    group,
    updatedBy,
    key: t.flow ? (key ?? '') : null,
    attemptHistory: decodeHistory(view),
    body: JSON.parse(body),
  };
}

/** The outcome codes of a history entry (A_FAILED, A_TIMED_OUT in lua/includes/job.lua). */
const HISTORY_OUTCOMES: Record<number, AttemptOutcome> = { 1: 'failed', 2: 'timedOut' };

/**
 * A job's attempt history from its view: the entries its record keeps, then, for a done job, its last attempt, told by
 * the header (started, updated, due time), which keeps no entry for it.
 */
export function decodeHistory(view: JobView): AttemptRecord[] {
  const [, state, runAt, createdAt, attempts, , , , , , updatedAt, , , , , , , started, history] = view;
  const out = (history ?? []).map((e: HistoryEntry): AttemptRecord => {
    const [attempt, startOffset, duration, lateness, outcome, error] = e;
    const start = createdAt + startOffset;
    return {
      attempt,
      startedAt: isoTime(start),
      endedAt: isoTime(start + duration),
      outcome: HISTORY_OUTCOMES[outcome] ?? 'failed',
      error,
      durationMs: duration,
      latenessMs: lateness,
    };
  });
  if (state === JOB_STATE.DONE && attempts > 0) {
    const start = started ?? updatedAt;
    out.push({
      attempt: attempts,
      startedAt: isoTime(start),
      endedAt: isoTime(updatedAt),
      outcome: 'done',
      error: null,
      durationMs: updatedAt - start,
      latenessMs: start - runAt,
    });
  }
  return out;
}

/** A job just created from `job`: the add script returns only its due and creation times and its version. */
function createdJob(
  t: TopicConfig,
  job: NewJob,
  reply: { runAt: number; createdAt: number; version: number },
  by: string,
): Job {
  const { runAt, createdAt, version } = reply;
  const created = isoTime(createdAt);
  return {
    topic: job.topic,
    id: job.id,
    state: 'delayed',
    runAt: isoTime(runAt),
    createdAt: created,
    updatedAt: created,
    attempts: 0,
    maxAttempts: job.maxAttempts ?? t.maxAttempts,
    ttr: (job.ttrMs ?? t.ttrMs) / 1000,
    backoff: describeBackoff(job.backoff ?? t.backoff),
    url: job.url ?? null,
    lastError: null,
    deadline: null,
    expiresAt: job.expires ? isoTime(job.expires.kind === 'a' ? job.expires.ms : runAt + job.expires.ms) : null,
    priority: job.priority ?? 0,
    ...traceIdOf(job.trace),
    ...(job.callback ? { callback: job.callback } : {}),
    version,
    group: job.group ?? null,
    updatedBy: by === '' ? null : by,
    key: t.flow ? (job.key ?? '') : null,
    attemptHistory: [],
    body: JSON.parse(job.body),
  };
}

/** `{ traceId }` of a packed trace context (lib/core/trace-context.ts), or nothing. */
function traceIdOf(packed: string | null | undefined): { traceId?: string } {
  const context = unpackContext(packed);
  return context ? { traceId: context.traceId } : {};
}

/** What the add script did with `job` (of topic `t`), sent by key `by` ('' none). */
export function toWriteResult(
  t: TopicConfig,
  job: NewJob,
  result: Exclude<AddResult, MovedResult>,
  by = '',
): WriteResult {
  if (result[0] === OUTCOME.CREATED)
    return {
      status: 'created',
      job: createdJob(t, job, { runAt: result[1], createdAt: result[2], version: result[3] }, by),
      left: result[4],
    };
  // a replaced job's body is the one just sent: the script does not send it back
  if (result[0] === OUTCOME.REPLACED)
    return { status: 'replaced', job: toJob(t, result[1], job.body), left: result[2] };
  if (result[0] === OUTCOME.DUPLICATE)
    return { status: 'duplicate', job: result[1] ? toJob(t, result[1]) : null, id: result[2] };
  if (result[0] === OUTCOME.DEBOUNCED) return { status: 'debounced', job: toJob(t, result[1], job.body) };
  if (result[0] === REFUSAL.VERSION_MISMATCH)
    return { status: 'mismatch', job: result[1] ? toJob(t, result[1]) : null, refusal: REFUSAL.VERSION_MISMATCH };
  const existing = toJob(t, result[1]);
  if (result[0] === REFUSAL.JOB_EXISTS) return { status: 'exists', job: existing, refusal: REFUSAL.JOB_EXISTS };
  return { status: 'finished', job: existing, refusal: REFUSAL.JOB_FINISHED };
}

/**
 * A claimed job of topic `t`, claimed at `now` on the Redis clock, with its body (JSON text: the item's, or the one
 * kept apart).
 */
export function toClaimed(t: TopicConfig, now: number, item: ClaimedItem, body: string): ClaimedJob {
  const [id, attempt, runAt, deadline, url, , max, claim, trace] = item;
  return {
    topic: t.name,
    id,
    attempt,
    maxAttempts: max ?? t.maxAttempts,
    runAt,
    deadline,
    ...(url ? { url } : {}),
    body: JSON.parse(body),
    latenessMs: now - runAt,
    claim,
    ...(trace ? { trace } : {}),
  };
}

/**
 * A dead job of topic `t` from a listJobs entry of its dead zset, with `body` (JSON text) when the entry leaves it out.
 */
export function toDeadJob(t: TopicConfig, [diedAt, view]: ScoredEntry, body: string | null = view[12]): DeadJob {
  return { ...toJob(t, view, body), diedAt: isoTime(diedAt) };
}

/** True for an outcome a script refused. */
export function isRefused<T extends object>(outcome: T | Refused): outcome is Refused {
  return 'refusal' in outcome;
}

/** The ack script's code for one attempt as an outcome. */
export function toAckOutcome(code: AckReply[number]): AckOutcome {
  if (code === OUTCOME.ACKED || code === OUTCOME.ACKED_NOTIFY) return 'done';
  return refusedAttempt(code);
}

/** The fail script's reply as an outcome. */
export function toFailOutcome(reply: FailReply): FailOutcome {
  if (reply[0] === OUTCOME.RETRY_SCHEDULED) return { outcome: 'retry', runAt: reply[1], wake: reply[2] === 1 };
  if (reply[0] === OUTCOME.DEAD_LETTERED) return { outcome: 'dead' };
  return { outcome: refusedAttempt(reply[0]) };
}

/** Why ack or fail left an attempt alone. */
function refusedAttempt(code: Refusal): 'stale' | 'cancelled' | 'not_found' {
  if (code === REFUSAL.NOT_FOUND) return 'not_found';
  if (code === REFUSAL.CANCELLED) return 'cancelled';
  return 'stale';
}
