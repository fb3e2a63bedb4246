/**
 * One typed wrapper per Lua script: each takes the script's KEYS as a tuple of branded keys in
 * the script's order (a wrong order does not type-check), its ARGV by name, and declares the
 * reply's type. Each reply type mirrors the `Returns` of the script's contract block; the codes in
 * them are named in ./codes.ts. Send a call with run() or runPipelined() from lib/engine/script-runner.ts.
 */
import type {
  BodiesKey,
  DeadKey,
  DelayedKey,
  DoneKey,
  FanoutKey,
  GroupKey,
  JobsKey,
  OutboxKey,
  KeyHashesKey,
  KeyRecordsKey,
  KeyUsesKey,
  LatenessKey,
  LeaseKey,
  NextKey,
  RateKey,
  RevokedKey,
  ReadyKey,
  RunningKey,
  ScheduleIdsKey,
  ScheduleNextKey,
  SchedulesKey,
  SyncKey,
  WakeCounterKey,
  WakeListKey,
} from './keys';
import type { Arg, ScriptCall, ScriptName } from './script-runner';
import {
  OUTCOME,
  REFUSAL,
  RELAYOUT,
  type FANOUT_MARK,
  type Flag,
  type KEY_CHANGE,
  type LEASE,
  type WAKE,
} from './codes';
import type { JobChange, JobView, NewJob } from './shapes';
import { callbackArg } from './callbacks';

/** ARGV[1] of every script that reads the clock: a fixed clock (epoch ms) from a test, or '' for Redis TIME. */
export type ClockArg = number | '';

type Code<T> = T[keyof T];
type Of<T, K extends keyof T> = T[K];
type Refused<K extends keyof typeof REFUSAL> = Of<typeof REFUSAL, K>;
type Outcome<K extends keyof typeof OUTCOME> = Of<typeof OUTCOME, K>;

const call = <Reply>(script: ScriptName, keys: readonly string[], args: Arg[]): ScriptCall<Reply> => ({
  script,
  keys,
  args,
});

/**
 * An If-Match precondition as the scripts take it: '' none, '*' any existing job, else the version the job must have.
 */
export type IfMatchArg = '' | '*' | number;

/** The 12 ARGV of one job in lua/addJobs-5.lua. */
function jobArgs(job: NewJob): Arg[] {
  return [
    job.id,
    job.when.kind,
    job.when.ms,
    job.maxAttempts ?? '',
    job.ttrMs ?? '',
    job.backoff ?? '',
    job.url ?? '',
    job.group ?? '',
    job.ifMatch ?? '',
    job.key ?? '',
    extrasArg(job),
    job.body,
  ];
}

/**
 * What a job has beyond the common options, as one ARGV of lua/addJobs-5.lua: '' for none (a plain job pays one empty
 * argument for all of them), else `<expiry>|<priority>|<trace>|<callback>|<keyed>`, each '' when the job has none.
 */
function extrasArg(job: NewJob): string {
  if (!job.expires && !job.priority && !job.trace && !job.callback && !job.keyed) return '';
  const callback = job.callback ? callbackArg(job.callback) : '';
  return `${expiryArg(job.expires)}|${job.priority || ''}|${job.trace ?? ''}|${callback}|${keyedArg(job.keyed)}`;
}

/** A keyed add as lua/addJobs-5.lua takes it: '' none, 'D<window ms>:<key>', 'B<period ms>:<max wait ms>:<key>'. */
function keyedArg(k: NewJob['keyed']): string {
  if (!k) return '';
  return k.kind === 'dedupe' ? `D${k.windowMs}:${k.key}` : `B${k.periodMs}:${k.maxWaitMs}:${k.key}`;
}

/** A job's expiry as lua/addJobs-5.lua takes it: '' none, '<ms>' at epoch ms, '+<ms>' that long after its due time. */
function expiryArg(e: NewJob['expires']): string {
  if (!e) return '';
  return e.kind === 'a' ? String(e.ms) : `+${e.ms}`;
}

/**
 * The byte budget of one script call (ARGV): how many bytes of job records and bodies it may read,
 * write or reply beyond its first job. The engine passes SCRIPT_CALL_BYTES (lib/core/limits.ts).
 */
export interface Budget {
  maxBytes: number;
}

/** A group a job left, and which of the group's zsets (chunks) it was in: take it out with leaveGroup. */
export type LeftChunk = readonly [group: string, chunk: number];

/**
 * One job's result in lua/addJobs-5.lua's reply (as addResults reads it). A REPLACED job's view has an empty
 * body: it is the body the caller sent. `left`: the group a put moved the job out of, or null.
 */
export type AddResult =
  | readonly [code: Outcome<'CREATED'>, runAt: number, createdAt: number, version: number, left: LeftChunk | null]
  | readonly [code: Outcome<'REPLACED'>, job: JobView, left: LeftChunk | null]
  | readonly [code: Refused<'JOB_EXISTS'> | Refused<'JOB_FINISHED'>, job: JobView]
  | readonly [code: Refused<'VERSION_MISMATCH'>, job: JobView | null]
  | readonly [code: Outcome<'DUPLICATE'>, job: JobView | null, id: string]
  | readonly [code: Outcome<'DEBOUNCED'>, job: JobView]
  | MovedResult;

/** A job a closed partition of the former layout turned away: write it in the current layout of `count` partitions. */
export type MovedResult = readonly [code: typeof RELAYOUT.MOVED, count: number];
/**
 * lua/addJobs-5.lua's reply: whether the delayed head moved earlier, when the jobs created were
 * created, then four slots per job done, in order (fewer jobs than were sent when the byte budget
 * stopped the call): code and three values, null where its result has none (addResults reads
 * them).
 */
export type AddJobsReply = readonly [headChanged: Flag, createdAt: number, ...slots: unknown[]];

/** The results of an addJobs reply, one per job done, in order. */
export function addResults(reply: AddJobsReply): AddResult[] {
  const createdAt = reply[1];
  const results: AddResult[] = [];
  for (let i = 2; i + 3 < reply.length; i += 4) {
    const code = reply[i] as AddResult[0];
    const [a, b, c] = [reply[i + 1], reply[i + 2], reply[i + 3]];
    if (code === OUTCOME.CREATED) results.push([code, a as number, createdAt, b as number, c as LeftChunk | null]);
    else if (code === OUTCOME.REPLACED) results.push([code, a as JobView, b as LeftChunk | null]);
    else if (code === REFUSAL.VERSION_MISMATCH) results.push([code, a as JobView | null]);
    else if (code === RELAYOUT.MOVED) results.push([code, a as number]);
    else if (code === OUTCOME.DUPLICATE) results.push([code, a as JobView | null, b as string]);
    else if (code === OUTCOME.DEBOUNCED) results.push([code, a as JobView]);
    else results.push([code, a as JobView]);
  }
  return results;
}

/**
 * lua/addJobs-5.lua: adds jobs of one topic, partition and group ('put': creates or replaces them), within the byte
 * budget.
 * `close`: the partition is a former layout's, closed from now on to new ids (they are turned away, MOVED, with this
 * count).
 */
export function addJobs(
  keys: readonly [JobsKey, BodiesKey, DelayedKey, DoneKey, GroupKey],
  a: {
    clock: ClockArg;
    mode: 'add' | 'put';
    by?: string;
    flow?: boolean;
    close?: number;
    jobs: readonly NewJob[];
  } & Budget,
): ScriptCall<AddJobsReply> {
  return call('addJobs', keys, [
    a.clock,
    a.mode,
    a.maxBytes,
    a.by ?? '',
    a.flow ? '1' : '0',
    a.close ?? '',
    ...a.jobs.flatMap(jobArgs),
  ]);
}

/**
 * lua/getJob-2.lua: one job, or null; a body kept apart is null (read it from the bodies hash in the same transaction).
 */
export function getJob(keys: readonly [JobsKey, DelayedKey], a: { id: string }): ScriptCall<JobView | null> {
  return call('getJob', keys, [a.id]);
}

/** lua/cancelJob-5.lua's reply. */
export type CancelReply =
  | readonly [code: Outcome<'CANCELLED'> | Outcome<'ALREADY_CANCELLED'> | Refused<'JOB_FINISHED'>, job: JobView]
  | readonly [code: Refused<'VERSION_MISMATCH'>, job?: JobView]
  | readonly [code: Refused<'NOT_FOUND'>];

/** lua/cancelJob-5.lua: cancels a pending or running job (when `ifMatch` holds). */
export function cancelJob(
  keys: readonly [JobsKey, BodiesKey, DelayedKey, RunningKey, DoneKey],
  a: { clock: ClockArg; id: string; retentionMs: number; ifMatch: IfMatchArg; by?: string },
): ScriptCall<CancelReply> {
  return call('cancelJob', keys, [a.clock, a.id, a.retentionMs, a.ifMatch, a.by ?? '']);
}

/** lua/cancelGroup-6.lua's reply: the counts, then where the next step goes on (`chunk`, `cursor`, `mark`, `last`). */
export type CancelGroupReply = readonly [
  cancelled: number,
  running: number,
  done: Flag,
  chunk: number,
  cursor: string,
  mark: string,
  last: number,
];

/**
 * lua/cancelGroup-6.lua: one step of cancelling a group in one topic and partition. The first step
 * passes `mark`, `chunk` and `last` '' and cursor '-inf'; each next step passes what the previous replied.
 */
export function cancelGroup(
  keys: readonly [JobsKey, BodiesKey, DelayedKey, RunningKey, DoneKey, GroupKey],
  a: {
    clock: ClockArg;
    group: string;
    mark: string;
    chunk: number | '';
    cursor: string;
    last: number | '';
    limit: number;
    retentionMs: number;
    by?: string;
  } & Budget,
): ScriptCall<CancelGroupReply> {
  return call('cancelGroup', keys, [
    a.clock,
    a.group,
    a.mark,
    a.chunk,
    a.cursor,
    a.last,
    a.limit,
    a.maxBytes,
    a.retentionMs,
    a.by ?? '',
  ]);
}

/**
 * lua/leaveGroup-2.lua: takes jobs that left the group out of the zsets (chunks) they were in; replies how many left.
 */
export function leaveGroup(
  keys: readonly [JobsKey, GroupKey],
  a: { group: string; members: readonly { id: string; chunk: number }[] },
): ScriptCall<number> {
  return call('leaveGroup', keys, [a.group, ...a.members.flatMap((m) => [m.id, m.chunk])]);
}

/** lua/listGroup-4.lua's reply: `more` 1 when members may be left after (`chunk`, `cursor`). */
export type ListGroupReply = readonly [more: Flag, chunk: number, cursor: string, ...jobs: JobView[]];

/**
 * lua/listGroup-4.lua: a group's jobs in one topic and partition, in join order, from zset `chunk`
 * ('' first: the oldest) after `cursor` (a score; '-inf' first).
 */
export function listGroup(
  keys: readonly [GroupKey, JobsKey, BodiesKey, DelayedKey],
  a: { group: string; chunk: number | ''; cursor: string; limit: number } & Budget,
): ScriptCall<ListGroupReply> {
  return call('listGroup', keys, [a.group, a.chunk, a.cursor, a.limit, a.maxBytes]);
}

/**
 * lua/listReady-4.lua's reply: `next`, the place after the ids looked at, then each job's view and the place right
 * after it (places: `P<score>`, `<place in the ready list>`, `N<score>`).
 */
export type ListReadyReply = readonly [more: Flag, next: string, ...viewsAndPlaces: (JobView | string)[]];

/**
 * lua/listReady-4.lua: ready jobs of one topic and partition in claim order (prioritized above 0, the ready list,
 * prioritized below 0) from place `start` (absent: the start), due within [from, to].
 */
export function listReady(
  keys: readonly [ReadyKey, JobsKey, BodiesKey, DelayedKey],
  a: { start?: number | string; limit: number; from?: number; to?: number } & Budget,
): ScriptCall<ListReadyReply> {
  return call('listReady', keys, [a.start ?? '', a.limit, a.maxBytes, a.from ?? '', a.to ?? '']);
}

/** lua/rescheduleJob-3.lua's reply. */
export type RescheduleReply =
  | readonly [code: Outcome<'RESCHEDULED'>, headChanged: Flag, job: JobView]
  | readonly [code: Refused<'JOB_FINISHED'>, job: JobView]
  | readonly [code: Refused<'NOT_FOUND'>];

/** lua/rescheduleJob-3.lua: changes the due time and/or the body of a pending job. */
export function rescheduleJob(
  keys: readonly [JobsKey, BodiesKey, DelayedKey],
  a: { clock: ClockArg; id: string; change: JobChange },
): ScriptCall<RescheduleReply> {
  const { when, body } = a.change;
  return call('rescheduleJob', keys, [
    a.clock,
    a.id,
    when?.kind ?? '',
    when?.ms ?? '',
    body === undefined ? '0' : '1',
    body ?? '',
  ]);
}

/** One claimed job in lua/claimJobs-7.lua's reply: its body when inline, else null (read it from the bodies hash). */
export type ClaimedItem = readonly [
  id: string,
  attempt: number,
  runAt: number,
  deadline: number,
  url: string | null,
  body: string | null,
  maxAttempts: number | null,
  claim: string,
  /** The job's packed trace context (H_TRACE), only when it has one. */
  trace?: string,
];
/**
 * lua/claimJobs-7.lua's reply: `more` 1 when the byte budget stopped the claim before `count` ids; `drained` 1 when it
 * left the ready list empty (or the topic is paused); `capped` 1 when the running attempts are at `maxRunning` after
 * it.
 */
export type ClaimReply = readonly [
  now: number,
  taken: number,
  skipped: number,
  more: Flag,
  drained: Flag,
  capped: Flag,
  /** Jobs that expired at this claim's start instead of being claimed (start only; counted in skipped too). */
  expired: number,
  /** 0 when the call carried no acks, else one code per ack, in order (as ackJobs-4 replies). */
  acked: AckReply | 0,
  ...claimed: ClaimedItem[],
];

/**
 * lua/claimJobs-7.lua: claims up to `count` ready jobs of one topic and partition, within the byte
 * budget (`strict`: even the first job must fit it); `nonce` (new each call) makes the claim tokens.
 * A job whose group is being cancelled is cancelled instead (kept `retentionMs`). `start`: the
 * attempts are started too (their lateness recorded in the partition's stats hash). `acks`: attempts
 * of the topic and partition ended as done first, as by ackJobs (kept `retentionMs`), in the same call.
 */
export function claimJobs(
  keys: readonly [ReadyKey, RunningKey, JobsKey, BodiesKey, DelayedKey, DoneKey, LatenessKey],
  a: {
    clock: ClockArg;
    count: number;
    /** '' with acks: as many as the acks ended (a claim in place of those attempts). */
    maxRunning: number | '';
    ttrMs: number;
    nonce: string;
    strict?: boolean;
    retentionMs: number;
    start?: boolean;
    acks?: readonly AttemptArg[];
  } & Budget,
): ScriptCall<ClaimReply> {
  return call('claimJobs', keys, [
    a.clock,
    a.count,
    a.maxRunning,
    a.ttrMs,
    a.nonce,
    a.maxBytes,
    a.strict ? '1' : '0',
    a.retentionMs,
    a.start ? '1' : '0',
    ...(a.acks ?? []).flatMap((j) => [j.id, j.attempt, j.claim]),
  ]);
}

/** One claimed attempt as ack, fail, start and release name it: the job, the attempt's number and its claim token. */
export interface AttemptArg {
  id: string;
  attempt: number;
  claim: string;
}

/** lua/ackJobs-4.lua's reply: one code per attempt sent, in order. */
export type AckReply = readonly (
  Outcome<'ACKED'> | Outcome<'ACKED_NOTIFY'> | Refused<'NOT_FOUND'> | Refused<'STALE_ATTEMPT'> | Refused<'CANCELLED'>
)[];

/** lua/ackJobs-4.lua: ends the attempts of one topic and partition, each claimed as its `claim`, as done. */
export function ackJobs(
  keys: readonly [JobsKey, BodiesKey, RunningKey, DoneKey],
  a: { clock: ClockArg; retentionMs: number; attempts: readonly AttemptArg[] },
): ScriptCall<AckReply> {
  return call('ackJobs', keys, [a.clock, a.retentionMs, ...a.attempts.flatMap((j) => [j.id, j.attempt, j.claim])]);
}

/** lua/failJob-4.lua's reply. */
export type FailReply =
  | readonly [code: Outcome<'RETRY_SCHEDULED'>, runAt: number, headChanged: Flag]
  | readonly [code: Outcome<'DEAD_LETTERED'>, notify: Flag]
  | readonly [code: Refused<'NOT_FOUND'> | Refused<'STALE_ATTEMPT'> | Refused<'CANCELLED'>];

/** lua/failJob-4.lua: ends attempt `attempt` as failed (retry after the backoff, or dead). */
export function failJob(
  keys: readonly [JobsKey, RunningKey, DelayedKey, DeadKey],
  a: {
    clock: ClockArg;
    error: string;
    maxAttempts: number;
    backoff: string;
    random: number;
    retryAfterMs?: number;
  } & AttemptArg,
): ScriptCall<FailReply> {
  const retryAfter = a.retryAfterMs === undefined ? '' : Math.max(0, Math.round(a.retryAfterMs));
  return call('failJob', keys, [
    a.clock,
    a.id,
    a.attempt,
    a.error,
    a.maxAttempts,
    a.backoff,
    a.random,
    retryAfter,
    a.claim,
  ]);
}

/**
 * lua/releaseJobs-5.lua's reply: given back uncounted, counted as failed (after too many give-backs
 * in a row), and how many of the jobs sent were looked at (the byte budget may stop it before the rest).
 */
export type ReleaseReply = readonly [released: number, retried: number, deadLettered: number, looked: number];

/**
 * lua/releaseJobs-5.lua: gives claimed jobs back after a failed invoke (the sixth in a row counts as a failed attempt).
 */
export function releaseJobs(
  keys: readonly [JobsKey, RunningKey, ReadyKey, DelayedKey, DeadKey],
  a: {
    clock: ClockArg;
    maxAttempts: number;
    backoff: string;
    random: number;
    reason: string;
    jobs: readonly AttemptArg[];
  } & Budget,
): ScriptCall<ReleaseReply> {
  return call('releaseJobs', keys, [
    a.clock,
    a.maxAttempts,
    a.backoff,
    a.random,
    a.reason,
    a.maxBytes,
    ...a.jobs.flatMap((j) => [j.id, j.attempt, j.claim]),
  ]);
}

/**
 * lua/startAttempts-5.lua's reply: the script's clock, then one code per attempt looked at, in order (fewer than sent
 * when the byte budget stopped it).
 */
export type StartReply = readonly [
  now: number,
  ...codes: (
    | Outcome<'STARTED'>
    | Outcome<'HELD_BACK'>
    | Outcome<'EXPIRED'>
    | Refused<'NOT_FOUND'>
    | Refused<'STALE_ATTEMPT'>
    | Refused<'CANCELLED'>
  )[],
];

/**
 * lua/startAttempts-5.lua: marks the live attempts of one topic and partition started, records their lateness; says
 * which are live (a paused topic's or key's are held back; one due after its job's expiry ends the job as expired).
 */
export function startAttempts(
  keys: readonly [JobsKey, LatenessKey, RunningKey, ReadyKey, DoneKey],
  a: { clock: ClockArg; retentionMs: number; attempts: readonly AttemptArg[] } & Budget,
): ScriptCall<StartReply> {
  return call('startAttempts', keys, [
    a.clock,
    a.maxBytes,
    a.retentionMs,
    ...a.attempts.flatMap((j) => [j.id, j.attempt, j.claim]),
  ]);
}

/**
 * lua/claimFlow-6.lua's reply: as claimJobs-7's, with `heldUntil`, the earliest time a key this call held by its pace
 * may start again.
 */
export type ClaimFlowReply = readonly [
  now: number,
  taken: number,
  skipped: number,
  more: Flag,
  heldUntil: number | null,
  expired: number,
  ...claimed: ClaimedItem[],
];

/** A flow topic's per-key defaults, as lua/claimFlow-6.lua takes them. */
export interface FlowDefaultsArg {
  concurrency: number | null;
  rate: { count: number; perMs: number; burst: number } | null;
}

/**
 * lua/claimFlow-6.lua: claims up to `count` ready jobs of a flow topic round its keys, each within its limits (`flow`:
 * the topic's defaults), the topic within `maxRunning`.
 */
export function claimFlow(
  keys: readonly [RunningKey, JobsKey, BodiesKey, DelayedKey, DoneKey, LatenessKey],
  a: {
    clock: ClockArg;
    count: number;
    maxRunning: number;
    ttrMs: number;
    nonce: string;
    strict?: boolean;
    retentionMs: number;
    start?: boolean;
    flow: FlowDefaultsArg;
  } & Budget,
): ScriptCall<ClaimFlowReply> {
  const r = a.flow.rate;
  return call('claimFlow', keys, [
    a.clock,
    a.count,
    a.maxRunning,
    a.ttrMs,
    a.nonce,
    a.maxBytes,
    a.strict ? '1' : '0',
    a.retentionMs,
    a.start ? '1' : '0',
    a.flow.concurrency ?? '',
    r ? r.count : '',
    r ? r.perMs : '',
    r ? r.burst : '',
  ]);
}

/** lua/getFlowKey-1.lua's and lua/setFlowKey-1.lua's reply (flowView in lua/includes/flow.lua). */
export type FlowKeyReply = readonly [
  now: number,
  running: number,
  ready: number,
  tat: number,
  concurrency: number | null,
  count: number | null,
  perMs: number | null,
  burst: number | null,
  paused: Flag,
  head: string | null,
  updatedBy: string | null,
  updatedAt: number | null,
];

/** lua/getFlowKey-1.lua: a flow key's live state. */
export function getFlowKey(keys: readonly [JobsKey], a: { clock: ClockArg; key: string }): ScriptCall<FlowKeyReply> {
  return call('getFlowKey', keys, [a.clock, a.key]);
}

/**
 * lua/setFlowKey-1.lua: pins a flow key's limits and pause ('' leaves a field, '-' returns it to the topic's default),
 * or clears them.
 */
export function setFlowKey(
  keys: readonly [JobsKey],
  a: {
    clock: ClockArg;
    key: string;
    mode: 'set' | 'clear';
    concurrency: number | '' | '-';
    rate: { count: number; perMs: number; burst: number } | '' | '-';
    paused: '' | '1' | '0';
    by: string;
  },
): ScriptCall<FlowKeyReply> {
  const r = a.rate;
  const rate = typeof r === 'object' ? [r.count, r.perMs, r.burst] : [r, '', ''];
  return call('setFlowKey', keys, [a.clock, a.mode, a.concurrency, ...rate, a.paused, a.key, a.by]);
}

/** lua/pauseTopic-1.lua: pauses (or resumes) a topic in one partition; 1 when that changed its state. */
export function pauseTopic(keys: readonly [JobsKey], a: { paused: boolean; by: string }): ScriptCall<number> {
  return call('pauseTopic', keys, [a.paused ? '1' : '0', a.by]);
}

/** lua/moveDue-8.lua's reply; `left` is group, id, chunk, group, id, chunk, ... of the purged jobs that had a group. */
export type MoveDueReply = readonly [
  moved: number,
  retried: number,
  deadLettered: number,
  purged: number,
  more: Flag,
  nextAt: number | null,
  now: number,
  ready: number,
  givenBack: number,
  left: readonly (string | number)[],
  /** When the topic's earliest schedule in the partition needs moving on (its occurrence's run time), or null. */
  schedulesAt: number | null,
];

/**
 * lua/moveDue-8.lua: one sweep step for one topic and partition, bounded by `limit` jobs per part and by the byte
 * budget.
 */
export function moveDue(
  keys: readonly [DelayedKey, ReadyKey, RunningKey, JobsKey, BodiesKey, DeadKey, DoneKey, ScheduleNextKey],
  a: {
    clock: ClockArg;
    limit: number;
    maxAttempts: number;
    backoff: string;
    random: number;
    deadRetentionMs: number;
    flow?: boolean;
  } & Budget,
): ScriptCall<MoveDueReply> {
  return call('moveDue', keys, [
    a.clock,
    a.limit,
    a.maxAttempts,
    a.backoff,
    a.random,
    a.deadRetentionMs,
    a.maxBytes,
    a.flow ? '1' : '0',
  ]);
}

/**
 * lua/redriveJobs-3.lua's reply: `looked` counts the ids (given, or oldest dead) looked at, in
 * order; `more` is 1 when the byte budget stopped it before the rest.
 */
export type RedriveReply = readonly [redriven: number, headChanged: Flag, looked: number, more: Flag];

/** lua/redriveJobs-3.lua: moves the given dead jobs, or the `count` oldest, back to delayed, within the byte budget. */
export function redriveJobs(
  keys: readonly [DeadKey, DelayedKey, JobsKey],
  a: { clock: ClockArg; by?: string } & Budget & ({ ids: readonly string[] } | { count: number }),
): ScriptCall<RedriveReply> {
  return call(
    'redriveJobs',
    keys,
    'ids' in a ? [a.clock, a.ids.length, a.maxBytes, a.by ?? '', ...a.ids] : [a.clock, a.count, a.maxBytes, a.by ?? ''],
  );
}

/**
 * One entry of lua/listJobs-4.lua's reply: the job's score in the zset, and the job (a body kept apart is null: read it
 * from the bodies hash).
 */
export type ScoredEntry = readonly [score: number, job: JobView];
/** lua/listJobs-4.lua's reply: `more` 1 when the byte budget stopped the page before `limit`. */
export type ListJobsReply = readonly [more: Flag, ...entries: ScoredEntry[]];

/**
 * lua/listJobs-4.lua: the jobs of a zset (delayed, running or dead) by (score, id) after `after` and
 * scored at most `to`, within the byte budget; an `id` of null skips every job scored `score`.
 */
export function listJobs(
  keys: readonly [DelayedKey | RunningKey | DeadKey, JobsKey, BodiesKey, DelayedKey],
  a: { after?: { score: number; id: string | null }; limit: number; to?: number } & Budget,
): ScriptCall<ListJobsReply> {
  const after = a.after ? [a.after.score, a.after.id ?? ''] : ['-inf', ''];
  return call('listJobs', keys, [...after, a.limit, a.maxBytes, a.to ?? '+inf']);
}

/** The sweeper's keys in the order its four scripts take them. */
export type LeaseKeys = readonly [LeaseKey, NextKey, WakeListKey, WakeCounterKey];

/** lua/holdLease-4.lua: takes or renews the sweeper's lease; replies the wake counter, or LEASE.NOT_OWNER. */
export function holdLease(
  keys: LeaseKeys,
  a: { owner: string; leaseMs: number; nextAt: number | null; clearWake: boolean },
): ScriptCall<number> {
  return call('holdLease', keys, [a.owner, a.leaseMs, a.nextAt ?? '', a.clearWake ? '1' : '0']);
}

/** lua/releaseLease-4.lua: gives up the lease unless woken since the caller saw `wakesSeen` (or `force`). */
export function releaseLease(
  keys: LeaseKeys,
  a: { owner: string; wakesSeen: number; force: boolean },
): ScriptCall<Code<typeof LEASE>> {
  return call('releaseLease', keys, [a.owner, a.wakesSeen, a.force ? '1' : '0']);
}

/** lua/wakeSweeper-4.lua: makes sure a sweeper looks in time for a job due at `dueAt`. */
export function wakeSweeper(
  keys: LeaseKeys,
  a: { clock: ClockArg; dueAt: number | 'now'; horizonMs: number },
): ScriptCall<Code<typeof WAKE>> {
  return call('wakeSweeper', keys, [a.clock, a.dueAt === 'now' ? '' : a.dueAt, a.horizonMs]);
}

/** lua/startFanout-1.lua: marks a fan-out as running unless one is. */
export function startFanout(
  keys: readonly [FanoutKey],
  a: { token: string; markMs: number },
): ScriptCall<Of<typeof FANOUT_MARK, 'MARKED' | 'ALREADY_RUNNING'>> {
  return call('startFanout', keys, [a.token, a.markMs]);
}

/** lua/endFanout-1.lua: clears the caller's fan-out mark. */
export function endFanout(
  keys: readonly [FanoutKey],
  a: { token: string },
): ScriptCall<Of<typeof FANOUT_MARK, 'CLEARED' | 'NOT_OURS'>> {
  return call('endFanout', keys, [a.token]);
}

/** lua/syncPoint-1.lua: bumps a partition's sync counter (before a replica wait); replies its value. */
export function syncPoint(keys: readonly [SyncKey]): ScriptCall<number> {
  return call('syncPoint', keys, []);
}

/**
 * A schedule's record as the schedule scripts reply it (`scheduleView` in lua/includes/schedules.lua, in
 * its order): null next/nextId when none is pending, null last before the first run, null options
 * follow the topic's configuration; `spec` is the definition lib/engine/schedules.ts wrote (JSON);
 * `body` null where the script leaves it out (dueSchedules).
 */
export type ScheduleView = readonly [
  id: string,
  version: number,
  next: number | null,
  nextId: string | null,
  last: number | null,
  maxAttempts: number | null,
  ttrMs: number | null,
  backoff: string | null,
  url: string | null,
  group: string | null,
  createdAt: number,
  updatedAt: number,
  spec: string,
  body: string | null,
  updatedBy: string | null,
  /** The flow key each occurrence carries, or null for none. */
  key: string | null,
];

/**
 * An occurrence to create: its job id, its run time by the schedule (epoch ms, in the id) and the
 * time its job falls due: the run time plus its jitter offset (lib/core/pacing.ts).
 */
export interface OccurrenceArg {
  id: string;
  ms: number;
  due: number;
}

/** An occurrence created now: its id and due time. */
const runArgs = (o: OccurrenceArg | null): Arg[] => (o ? [o.id, o.due] : ['', '']);
/** The new pending occurrence: its id and run time; its due time goes last (nextDueArg). */
const nextArgs = (o: OccurrenceArg | null): Arg[] => (o ? [o.id, o.ms] : ['', '']);
const nextDueArg = (o: OccurrenceArg | null): Arg => (o ? o.due : '');

/** What each occurrence of a schedule gets, and the schedule's definition, as putSchedule stores them. */
export interface ScheduleRecordArg {
  maxAttempts?: number;
  ttrMs?: number;
  backoff?: string;
  url?: string;
  group?: string;
  /** The flow key each occurrence carries (a flow topic's schedule); none: the key ''. */
  key?: string;
  /** The definition (JSON), opaque to the script. */
  spec: string;
  /** Each occurrence's body (JSON text). */
  body: string;
}

/**
 * An occurrence a schedule script made anew from a cancelled job of another group: take it out of that group's chunk
 * with leaveGroup.
 */
export type LeftOccurrence = readonly [id: string, group: string, chunk: number];

/** lua/putSchedule-9.lua's reply. */
export type PutScheduleReply =
  | readonly [
      code: Outcome<'CREATED'> | Outcome<'REPLACED'>,
      version: number,
      headChanged: Flag,
      left: readonly LeftOccurrence[],
    ]
  | readonly [code: Refused<'VERSION_MISMATCH'>, version: number]
  | ScheduleMoved;

/** The keys of a schedule's write (putSchedule-9, and its 'adopt'): scheduleWriteKeys in ./keys.ts. */
export type ScheduleWriteKeys = readonly [
  SchedulesKey,
  ScheduleIdsKey,
  ScheduleNextKey,
  JobsKey,
  BodiesKey,
  DelayedKey,
  RunningKey,
  DoneKey,
  GroupKey,
];

/**
 * lua/putSchedule-9.lua: creates or replaces a schedule read at version `seen` (0: none), replacing
 * its pending occurrence ('keep' leaves a due one to run), creating `run` (a caught-up occurrence)
 * and `next` (the new pending one).
 */
export function putSchedule(
  keys: ScheduleWriteKeys,
  a: {
    clock: ClockArg;
    id: string;
    seen: number;
    pending: 'keep' | 'replace' | 'hold';
    last: number | null;
    run: OccurrenceArg | null;
    next: OccurrenceArg | null;
    record: ScheduleRecordArg;
    by?: string;
  },
): ScriptCall<PutScheduleReply> {
  const r = a.record;
  return call('putSchedule', keys, [
    a.clock,
    a.id,
    a.seen,
    a.pending,
    a.last ?? '',
    ...runArgs(a.run),
    ...nextArgs(a.next),
    r.maxAttempts ?? '',
    r.ttrMs ?? '',
    r.backoff ?? '',
    r.url ?? '',
    r.group ?? '',
    r.spec,
    r.body,
    nextDueArg(a.next),
    a.by ?? '',
    r.key ?? '',
  ]);
}

/**
 * lua/advanceSchedule-8.lua's reply: `released`, the script's clock (ms) when it made an occurrence held back by its
 * jitter fall due now, else null.
 */
export type AdvanceReply =
  | readonly [
      code: Outcome<'ADVANCED'>,
      version: number,
      created: number,
      left: readonly LeftOccurrence[],
      released: number | null,
    ]
  | readonly [code: Refused<'NOT_FOUND'>]
  | readonly [code: Refused<'VERSION_MISMATCH'>, version: number];

/**
 * lua/advanceSchedule-8.lua: moves a schedule read at version `seen` on from its due pending
 * occurrence: `run` is the occurrence that runs for the runs due (the pending one, or a later one
 * replacing it), `next` the new pending one, `last` the latest handed over.
 */
export function advanceSchedule(
  keys: readonly [SchedulesKey, ScheduleNextKey, JobsKey, BodiesKey, DelayedKey, RunningKey, DoneKey, GroupKey],
  a: { clock: ClockArg; id: string; seen: number; run: OccurrenceArg | null; next: OccurrenceArg | null; last: number },
): ScriptCall<AdvanceReply> {
  return call('advanceSchedule', keys, [
    a.clock,
    a.id,
    a.seen,
    ...runArgs(a.run),
    ...nextArgs(a.next),
    a.last,
    nextDueArg(a.next),
  ]);
}

/**
 * lua/deleteSchedule-8.lua's reply: `withdrawn` 1 when an occurrence (the pending one, or the one handed over and not
 * yet started) was withdrawn.
 */
export type DeleteScheduleReply =
  readonly [code: Outcome<'DELETED'>, withdrawn: Flag] | readonly [code: Refused<'NOT_FOUND'>] | ScheduleMoved;

/** lua/deleteSchedule-8.lua: deletes a schedule and withdraws its pending occurrence. */
export function deleteSchedule(
  keys: readonly [SchedulesKey, ScheduleIdsKey, ScheduleNextKey, JobsKey, BodiesKey, DelayedKey, RunningKey, DoneKey],
  a: { clock: ClockArg; id: string },
): ScriptCall<DeleteScheduleReply> {
  return call('deleteSchedule', keys, [a.clock, a.id]);
}

/**
 * lua/dueSchedules-2.lua's reply: the Redis clock, `more` 1 when due schedules were left, the next pending time after
 * them, the due ones (bodies null).
 */
export type DueSchedulesReply = readonly [now: number, more: Flag, head: number | null, ...due: ScheduleView[]];

/**
 * lua/dueSchedules-2.lua: up to `limit` schedules of one topic and partition whose pending occurrence is due, within
 * the byte budget.
 */
export function dueSchedules(
  keys: readonly [ScheduleNextKey, SchedulesKey],
  a: { clock: ClockArg; limit: number } & Budget,
): ScriptCall<DueSchedulesReply> {
  return call('dueSchedules', keys, [a.clock, a.limit, a.maxBytes]);
}

/**
 * lua/getSchedule-1.lua's reply: a number (the current partition count) when the schedule is not in this closed
 * partition of a former layout, while the partition count changes.
 */
export type GetScheduleReply = ScheduleView | number | null;

/** lua/getSchedule-1.lua: one schedule, with its body, or null (or the current count: GetScheduleReply). */
export function getSchedule(keys: readonly [SchedulesKey], a: { id: string }): ScriptCall<GetScheduleReply> {
  return call('getSchedule', keys, [a.id]);
}

/** lua/listSchedules-2.lua's reply: `more` 1 when the byte budget stopped it before `limit`. */
export type ListSchedulesReply = readonly [more: Flag, ...schedules: ScheduleView[]];

/**
 * lua/listSchedules-2.lua: up to `limit` schedules of one topic and partition by id after `after` ('' from the first),
 * within the byte budget.
 */
export function listSchedules(
  keys: readonly [ScheduleIdsKey, SchedulesKey],
  a: { after: string; limit: number } & Budget,
): ScriptCall<ListSchedulesReply> {
  return call('listSchedules', keys, [a.after, a.limit, a.maxBytes]);
}

/** lua/takeTokens-1.lua's reply: `waitMs` until more tokens are due when fewer than wanted were granted, else -1. */
export type TakeTokensReply = readonly [granted: number, slot: number, waitMs: number, now: number];

/** lua/takeTokens-1.lua: takes up to `wanted` start tokens of a topic's rate limit (`count` starts per `perMs`). */
export function takeTokens(
  keys: readonly [RateKey],
  a: { clock: ClockArg; count: number; perMs: number; wanted: number },
): ScriptCall<TakeTokensReply> {
  return call('takeTokens', keys, [a.clock, a.count, a.perMs, a.wanted]);
}

/**
 * lua/returnTokens-1.lua: gives `n` unused tokens granted in `slot` back to the window and the pace (`intervalMs` =
 * perMs / count); replies what the slot holds after.
 */
export function returnTokens(
  keys: readonly [RateKey],
  a: { slot: number; n: number; intervalMs: number },
): ScriptCall<number> {
  return call('returnTokens', keys, [a.slot, a.n, a.intervalMs]);
}

type KeyChange<K extends keyof typeof KEY_CHANGE> = Of<typeof KEY_CHANGE, K>;

/** lua/createKey-2.lua's reply. */
export type CreateKeyReply =
  | readonly [code: KeyChange<'CREATED'>, createdAt: number]
  | readonly [code: KeyChange<'NAME_TAKEN'> | KeyChange<'TOO_MANY'>];

/**
 * lua/createKey-2.lua: creates API key `name` with the digest of its secret (`topics`: comma-separated, '' for all).
 */
export function createKey(
  keys: readonly [KeyRecordsKey, KeyHashesKey],
  a: { clock: ClockArg; name: string; sha: string; scope: string; topics: string; createdBy: string; maxKeys: number },
): ScriptCall<CreateKeyReply> {
  return call('createKey', keys, [a.clock, a.name, a.sha, a.scope, a.topics, a.createdBy, a.maxKeys]);
}

/** lua/revokeKey-4.lua: revokes API key `name` ('deployment': the API_TOKEN whose digest is `deploymentSha`). */
export function revokeKey(
  keys: readonly [KeyRecordsKey, KeyHashesKey, KeyUsesKey, RevokedKey],
  a: { name: string; deploymentSha: string },
): ScriptCall<KeyChange<'REVOKED'> | KeyChange<'NOT_FOUND'> | KeyChange<'LAST_ADMIN'>> {
  return call('revokeKey', keys, [a.name, a.deploymentSha]);
}

/**
 * lua/authKey-4.lua's reply: the key's name, scope and topics (comma-separated, '' for all), or null for no such key.
 */
export type AuthKeyReply = readonly [name: string, scope: string, topics: string] | null;

/** lua/authKey-4.lua: the key whose secret has digest `sha`, its use noted at most once per `touchMs`. */
export function authKey(
  keys: readonly [KeyRecordsKey, KeyHashesKey, KeyUsesKey, RevokedKey],
  a: { clock: ClockArg; sha: string; deploymentSha: string; touchMs: number },
): ScriptCall<AuthKeyReply> {
  return call('authKey', keys, [a.clock, a.sha, a.deploymentSha, a.touchMs]);
}

/**
 * A schedule script's answer in a partition of a former layout while the partition count changes:
 * the schedule is not there (the partition is closed to new ids) or is frozen for its move; act in
 * the current layout of `count` partitions (lib/engine/relayout-schedules.ts).
 */
export type ScheduleMoved = readonly [code: typeof RELAYOUT.MOVED, count: number];

/** lua/deleteSchedule-8.lua 'freeze''s reply: `record`, the frozen record's slots as JSON, for adoptSchedule. */
export type FreezeScheduleReply =
  | readonly [code: typeof RELAYOUT.FROZEN, version: number, record: string]
  | readonly [code: typeof RELAYOUT.BUSY]
  | readonly [code: Refused<'NOT_FOUND'>];

/**
 * lua/deleteSchedule-8.lua 'freeze': closes a former layout's partition (to `count`) and freezes a schedule there for
 * its move.
 */
export function freezeSchedule(
  keys: readonly [SchedulesKey, ScheduleIdsKey, ScheduleNextKey, JobsKey, BodiesKey, DelayedKey, RunningKey, DoneKey],
  a: { clock: ClockArg; id: string; count: number },
): ScriptCall<FreezeScheduleReply> {
  return call('deleteSchedule', keys, [a.clock, a.id, 'freeze', a.count]);
}

/**
 * lua/deleteSchedule-8.lua 'drop': deletes a schedule frozen at `version` in a former layout's partition, once moved.
 */
export function dropSchedule(
  keys: readonly [SchedulesKey, ScheduleIdsKey, ScheduleNextKey, JobsKey, BodiesKey, DelayedKey, RunningKey, DoneKey],
  a: { clock: ClockArg; id: string; version: number },
): ScriptCall<DeleteScheduleReply> {
  return call('deleteSchedule', keys, [a.clock, a.id, 'drop', a.version]);
}

/** lua/putSchedule-9.lua 'adopt''s reply: `earliest`, the earliest due time of the occurrences made again, or null. */
export type AdoptScheduleReply =
  | readonly [
      code: typeof RELAYOUT.ADOPTED,
      version: number,
      headChanged: Flag,
      left: readonly LeftOccurrence[],
      earliest: number | null,
    ]
  | readonly [code: Refused<'JOB_EXISTS'>];

/**
 * lua/putSchedule-9.lua 'adopt': makes a schedule in its current partition from `record`, its frozen record
 * (freezeSchedule's reply).
 */
export function adoptSchedule(
  keys: ScheduleWriteKeys,
  a: { clock: ClockArg; id: string; record: string },
): ScriptCall<AdoptScheduleReply> {
  return call('putSchedule', keys, [a.clock, a.id, 0, 'adopt', ...new Array<Arg>(15).fill(''), a.record]);
}

/** lua/takeCallbacks-1.lua's reply: the script's clock, then the entries handed out (lua/includes/callbacks.lua). */
export type TakeCallbacksReply = readonly [now: number, ...entries: string[]];

/** lua/takeCallbacks-1.lua: hands out up to `limit` due entries of an outbox, each leased for `leaseMs`. */
export function takeCallbacks(
  keys: readonly [OutboxKey],
  a: { clock: ClockArg; leaseMs: number; limit: number },
): ScriptCall<TakeCallbacksReply> {
  return call('takeCallbacks', keys, [a.clock, a.leaseMs, a.limit]);
}

/** lua/endCallbacks-1.lua: removes entries from an outbox; replies how many it removed. */
export function endCallbacks(keys: readonly [OutboxKey], entries: readonly string[]): ScriptCall<number> {
  return call('endCallbacks', keys, [...entries]);
}
