/**
 * Recurring schedules on the engine. A schedule lives in the partition of (topic, schedule id):
 * a record in the topic's schedules hash, and its pending occurrence's time in the schedule-next
 * zset. Each occurrence is an ordinary job of the topic (id `<schedule id>:<YYYYMMDDTHHMMSSZ>`,
 * placed in the same partition: lib/engine/keys.ts routingId), so retries, ttr, dead letters and groups
 * apply, and on a flow topic the schedule's flow key and its limits. TypeScript computes the run times
 * (lib/core/schedule.ts); one Lua script commits each change, guarded by the version the caller read, so a change
 * computed from a stale read changes nothing.
 */
import { describeBackoff, type Backoff } from '../core/backoff';
import type { TopicConfig } from '../core/queue-config';
import { groupKey, scheduleKeys, scheduleWriteKeys, topicKeys, type Layout } from './keys';
import { SCRIPT_CALL_BYTES, SCHEDULES_PAGE } from '../core/limits';
import { jitterOffsetMs } from '../core/pacing';
import { advancePlan, catchUpPlan, jitterWindowMs, nextRuns, occurrenceId, type ScheduleSpec } from '../core/schedule';
import type { NewSchedule, StoredSpec } from './shapes';
import { run, runPipelined } from './script-runner';
import { OUTCOME, REFUSAL, RELAYOUT } from './codes';
import type { EngineContext } from './context';
import { leaveGroups, type LeftGroup } from './groups';
import type { Wake } from './jobs';
import { forEachPartition } from './partitions';
import * as script from './scripts';
import { serverTime, contextOf, topicOf } from './context';
import { isoTime } from '../core/time';
import { actWhereItLives, isView, Moved, readWhereItLives, type ScheduleTouched } from './relayout-schedules';
import { settle } from './durable';
import { wakeFor } from './coordination';

export { moveSchedules, type ScheduleTouched } from './relayout-schedules';

/** A schedule as the API shows it; times are ISO-8601, durations seconds. */
export interface Schedule {
  topic: string;
  id: string;
  cron?: string;
  timezone?: string;
  every?: number;
  catchUp: ScheduleSpec['catchUp'];
  paused: boolean;
  /** Each occurrence's body. */
  body: unknown;
  maxAttempts: number;
  ttr: number;
  backoff: Backoff;
  url: string | null;
  group: string | null;
  /**
   * The flow key each occurrence is claimed under (a flow topic's schedule), or null when it has none: its occurrences
   * then have the key ''.
   */
  key: string | null;
  /**
   * Its own jitter (seconds), or null: the topic's applies. Each occurrence starts within [run time, run time +
   * jitter).
   */
  jitter: number | null;
  /**
   * Seconds after each occurrence's due time (its job's runAt) from which no attempt of it starts (the job ends
   * `expired`): its own `expireAfter`, else its topic's default as it was when it was put; null for none.
   */
  expireAfter: number | null;
  /** Each occurrence's priority: its own `priority`, else its topic's default when it was put (0: none). */
  priority: number;
  /** Grows with every change of the schedule, its advances included. */
  version: number;
  createdAt: string;
  /** When its definition last changed (a put). */
  updatedAt: string;
  /** The name of the API key that last put it. */
  updatedBy: string | null;
  /**
   * The occurrence waiting to fall due (a job of the topic), or null (paused, or no run left).
   * `runAt` is its run time by the schedule; its job's runAt adds the jitter offset.
   */
  pending: { id: string; runAt: string } | null;
  /** The latest occurrence handed over (run, or skipped as missed), or null. */
  lastRunAt: string | null;
  /** The next 5 run times, the pending occurrence's first; none while paused. */
  nextRuns: string[];
}

/** How many run times a schedule view lists. */
export const NEXT_RUNS_SHOWN = 5;
/**
 * Rounds of read, compute, commit a put tries while the schedule keeps changing under it (the sweeper advancing it).
 */
const PUT_ROUNDS = 5;

/** The definition a record holds. */
export function specOf(view: script.ScheduleView): StoredSpec {
  return JSON.parse(view[12]) as StoredSpec;
}

/** The API's view of schedule `view` of topic `t` (its body read, so not null). */
export function toSchedule(t: TopicConfig, view: script.ScheduleView): Schedule {
  const [id, version, next, nextId, last, max, ttr, backoff, url, group, createdAt, updatedAt, , body, updatedBy, key] =
    view;
  const spec = specOf(view);
  const recurrence = 'every' in spec ? { every: spec.every } : { cron: spec.cron, timezone: spec.timezone };
  return {
    topic: t.name,
    id,
    ...recurrence,
    catchUp: spec.catchUp,
    paused: spec.paused,
    body: JSON.parse(body ?? 'null'),
    maxAttempts: max ?? t.maxAttempts,
    ttr: (ttr ?? t.ttrMs) / 1000,
    backoff: describeBackoff(backoff ?? t.backoff),
    url,
    group,
    key: t.flow ? key : null,
    jitter: spec.jitterMs === undefined ? null : spec.jitterMs / 1000,
    expireAfter: spec.expireAfterMs === undefined ? null : spec.expireAfterMs / 1000,
    priority: spec.priority ?? 0,
    version,
    createdAt: isoTime(createdAt),
    updatedAt: isoTime(updatedAt),
    updatedBy,
    pending: next !== null && nextId !== null ? { id: nextId, runAt: isoTime(next) } : null,
    lastRunAt: last === null ? null : isoTime(last),
    nextRuns: next === null ? [] : [next, ...laterRuns(spec, next)].map((ms) => isoTime(ms)),
  };
}

/** The run times shown after the pending one; none for a definition this code cannot compute (see advanceDue). */
function laterRuns(spec: ScheduleSpec, after: number): number[] {
  try {
    return nextRuns(spec, after, NEXT_RUNS_SHOWN - 1);
  } catch {
    return [];
  }
}

/**
 * The jitter (ms) of schedule `spec`'s occurrences: its own, else its topic's (`topicJitterMs`);
 * each occurrence's window is kept below the time to its next run (jitterWindowMs).
 */
export function occurrenceJitterMs(spec: ScheduleSpec, topicJitterMs: number): number {
  return spec.jitterMs ?? topicJitterMs;
}

/**
 * Schedule `scheduleId`'s occurrence at run time `ms` of topic `topic`: its id, and its due time
 * moved by its jitter offset (deterministic in topic and occurrence id, as a job's is) within
 * `jitterMs` but less than the time to the next run (`following`, when known: see jitterWindowMs),
 * so it falls due before the next occurrence is handed over.
 */
function occurrence(
  of: { topic: string; scheduleId: string; spec: ScheduleSpec; jitterMs: number },
  ms: number | null,
  following?: number | null,
): script.OccurrenceArg | null {
  const { topic, scheduleId, spec, jitterMs } = of;
  if (ms === null) return null;
  const id = occurrenceId(scheduleId, ms);
  return { id, ms, due: ms + jitterOffsetMs(topic, id, jitterWindowMs(spec, ms, jitterMs, following)) };
}

function readCall(t: string, partition: number, layout: Layout, id: string) {
  return script.getSchedule([scheduleKeys(partition, t, layout).schedules], { id });
}

/** Schedule `id` of topic `t` as stored in `partition`, or null (none there). */
export async function readSchedule(
  ctx: EngineContext,
  t: TopicConfig,
  partition: number,
  id: string,
): Promise<script.ScheduleView | null> {
  const reply = await run(ctx.redis, readCall(t.name, partition, ctx.layout, id));
  return isView(reply) ? reply : null;
}

/** What a put commits, computed from the schedule as read (`current`, or null) at `now`. */
export interface PutPlan {
  seen: number;
  pending: 'keep' | 'replace' | 'hold';
  last: number | null;
  /** A missed run caught up on (resumed); `next` is the run right after it. */
  run: number | null;
  next: number | null;
}

/**
 * The plan of putting `s` over `current` at `now`: a pending occurrence already due is left to
 * run (it counts as the last run); one not yet due is replaced by the new definition's first run
 * after `now`. Resuming a paused schedule catches up on what the pause missed, by its catchUp.
 * Paused: nothing pending. `hold` (a pause): the script holds back every occurrence not started.
 */
export function planPut(s: NewSchedule, current: script.ScheduleView | null, now: number, hold = false): PutPlan {
  if (hold) return { seen: current?.[1] ?? 0, pending: 'hold', last: current?.[4] ?? null, run: null, next: null };
  const pendingAt = current?.[2] ?? null;
  const keep = pendingAt !== null && pendingAt <= now;
  let last = keep ? pendingAt : (current?.[4] ?? null);
  let runAt: number | null = null;
  let next: number | null = null;
  if (!s.spec.paused) {
    const resumed = current !== null && specOf(current).paused;
    const [from] = resumed && last !== null ? nextRuns(s.spec, last, 1) : [];
    if (from !== undefined) {
      const plan = catchUpPlan(s.spec, from, now);
      runAt = plan.run;
      next = plan.next;
      if (plan.latest !== null) last = plan.latest;
    } else {
      next = nextRuns(s.spec, now, 1)[0] ?? null;
    }
  }
  return { seen: current?.[1] ?? 0, pending: keep ? 'keep' : 'replace', last, run: runAt, next };
}

/** A put's answer, and the partitions it touched (per layout: Engine.durable). */
export type PutResult = { status: 'created' | 'replaced'; schedule: Schedule; touched: ScheduleTouched[] } & Wake;

/**
 * Creates or replaces schedule `s` and, in the same script, its pending occurrence, where it lives
 * (while the partition count changes: moved first, lib/engine/relayout-schedules.ts). Reads the
 * schedule and the clock, computes, commits; when the schedule changed in between (the sweeper
 * advanced it), computes again from a fresh read.
 */
export async function putSchedule(
  ctx: EngineContext,
  t: TopicConfig,
  s: NewSchedule,
  hold = false,
): Promise<PutResult> {
  const touched: ScheduleTouched[] = [];
  const put = await actWhereItLives(ctx, t, s.id, touched, (at, partition) =>
    putIn(at, t, { ...s, partition }, hold, touched),
  );
  return { ...put, touched };
}

/** putSchedule in `s.partition` of `ctx.layout`; Moved when that partition turns it away. */
async function putIn(
  ctx: EngineContext,
  t: TopicConfig,
  s: NewSchedule,
  hold: boolean,
  touched: ScheduleTouched[],
): Promise<({ status: 'created' | 'replaced'; schedule: Schedule } & Wake) | Moved> {
  const keys = scheduleWriteKeys(s.partition, t.name, s.group ?? '', ctx.layout);
  const record = scheduleRecord(t, s);
  // Set when the script refused, at the version read, a plan that withdrew the pending occurrence:
  // its clock (the partition's) had passed the occurrence's run time where ours (TIME of any node)
  // had not. That time has come, so the next plan is made at it at the earliest, and keeps it.
  let floor = 0;
  for (let round = 0; round < PUT_ROUNDS; round++) {
    const [current, serverNow] = await Promise.all([readSchedule(ctx, t, s.partition, s.id), serverTime(ctx)]);
    const plan = planPut(s, current, Math.max(serverNow, floor), hold);
    const jitterMs = occurrenceJitterMs(s.spec, t.jitterMs);
    const reply = await run(
      ctx.redis,
      script.putSchedule(keys, {
        clock: ctx.clock(),
        id: s.id,
        seen: plan.seen,
        pending: plan.pending,
        last: plan.last,
        run: occurrence({ topic: t.name, scheduleId: s.id, spec: s.spec, jitterMs }, plan.run, plan.next),
        next: occurrence({ topic: t.name, scheduleId: s.id, spec: s.spec, jitterMs }, plan.next),
        record,
        by: s.by ?? '',
      }),
    );
    if (reply[0] === RELAYOUT.MOVED) return new Moved(reply[1]);
    if (reply[0] === REFUSAL.VERSION_MISMATCH) {
      if (reply[1] === plan.seen && plan.pending === 'replace') floor = current?.[2] ?? floor;
      continue;
    }
    // an occurrence made anew in the new group (the group changed): out of the old group's zset or bucket
    if (reply[3].length > 0) await leaveGroups(ctx, leftOccurrences(t.name, s.partition, reply[3]));
    const stored = await readSchedule(ctx, t, s.partition, s.id);
    if (!stored) continue; // deleted right after: put it again
    // the answer is the schedule read after the write, another writer's change included
    touched.push({ layout: ctx.layout, changed: [s.partition], covering: [s.partition] });
    return {
      status: reply[0] === OUTCOME.CREATED ? 'created' : 'replaced',
      schedule: toSchedule(t, stored),
      wake: reply[2] === 1,
    };
  }
  throw new Error(`schedule ${t.name}/${s.id} changed under ${PUT_ROUNDS} puts in a row`);
}

/** The record a put of `s` stores: what it sets apart from its topic's defaults, its definition and body. */
function scheduleRecord(t: TopicConfig, s: NewSchedule): script.ScheduleRecordArg {
  return {
    ...(s.maxAttempts !== undefined ? { maxAttempts: s.maxAttempts } : {}),
    ...(s.ttrMs !== undefined ? { ttrMs: s.ttrMs } : {}),
    ...(s.backoff !== undefined ? { backoff: s.backoff } : {}),
    ...(s.url !== undefined ? { url: s.url } : {}),
    ...(s.group !== undefined ? { group: s.group } : {}),
    // as a job's: a flow key only on a flow topic
    ...(s.key !== undefined && t.flow ? { key: s.key } : {}),
    spec: JSON.stringify(s.spec),
    body: s.body,
  };
}

/**
 * Deletes schedule `id` of topic `t` where it lives (moved first while the partition count
 * changes) and withdraws its pending occurrence; false when there was none. `touched`: the
 * partitions it wrote, and read its answer from.
 */
export async function deleteSchedule(
  ctx: EngineContext,
  t: TopicConfig,
  id: string,
): Promise<{ deleted: boolean; touched: ScheduleTouched[] }> {
  const touched: ScheduleTouched[] = [];
  const deleted = await actWhereItLives(ctx, t, id, touched, async (at, partition) => {
    const sk = scheduleKeys(partition, t.name, at.layout);
    const k = topicKeys(partition, t.name, at.layout);
    const reply = await run(
      at.redis,
      script.deleteSchedule([sk.schedules, sk.ids, sk.next, k.jobs, k.bodies, k.delayed, k.running, k.done], {
        clock: at.clock(),
        id,
      }),
    );
    if (reply[0] === RELAYOUT.MOVED) return new Moved(reply[1]);
    const done = reply[0] === OUTCOME.DELETED;
    // a 404 stands on what the primary had
    touched.push({ layout: at.layout, changed: done ? [partition] : [], covering: done ? [] : [partition] });
    return done;
  });
  return { deleted, touched };
}

/**
 * Schedule `id` of topic `t` paused (or resumed) where it lives (moved first while the partition
 * count changes), its definition kept: a pause holds back every occurrence that has not started
 * (putSchedule-9's 'hold'), so none starts after it returns; a resume catches up on what the pause
 * missed, by the schedule's catchUp. `schedule` null when there is no such schedule.
 */
export async function pauseSchedule(
  ctx: EngineContext,
  t: TopicConfig,
  id: string,
  paused: boolean,
  by: string,
): Promise<{ schedule: Schedule | null; wake: boolean; touched: ScheduleTouched[] }> {
  const touched: ScheduleTouched[] = [];
  const result = await actWhereItLives(ctx, t, id, touched, (at, partition) =>
    pauseIn(at, t, { partition, id }, { paused, by }, touched),
  );
  return { schedule: result?.schedule ?? null, wake: result?.wake ?? false, touched };
}

/** pauseSchedule in `partition` of `ctx.layout`; Moved when that partition turns it away. */
async function pauseIn(
  ctx: EngineContext,
  t: TopicConfig,
  at: { partition: number; id: string },
  change: { paused: boolean; by: string },
  touched: ScheduleTouched[],
): Promise<({ schedule: Schedule } & Wake) | null | Moved> {
  const { partition, id } = at;
  const { paused, by } = change;
  const reply = await run(ctx.redis, readCall(t.name, partition, ctx.layout, id));
  if (typeof reply === 'number') return new Moved(reply);
  const current = reply;
  if (!current) {
    touched.push({ layout: ctx.layout, changed: [], covering: [partition] });
    return null;
  }
  const [, , , , , max, ttr, backoff, url, group, , , , body, , key] = current;
  const s: NewSchedule = {
    topic: t.name,
    id,
    partition,
    spec: { ...specOf(current), paused },
    body: body ?? 'null',
    ...(max !== null ? { maxAttempts: max } : {}),
    ...(ttr !== null ? { ttrMs: ttr } : {}),
    ...(backoff !== null ? { backoff } : {}),
    ...(url !== null ? { url } : {}),
    ...(group !== null ? { group } : {}),
    ...(key !== null ? { key } : {}),
    ...(by ? { by } : {}),
  };
  const put = await putIn(ctx, t, s, paused, touched);
  return put instanceof Moved ? put : { schedule: put.schedule, wake: put.wake };
}

/**
 * Schedule `id` of topic `t` with its next run times, wherever it lives (lib/engine/relayout-schedules.ts
 * readWhereItLives), or null.
 */
export async function getSchedule(ctx: EngineContext, t: TopicConfig, id: string): Promise<Schedule | null> {
  const view = await readWhereItLives(ctx, t, id);
  return view && toSchedule(t, view);
}

/**
 * Schedules of topic `t` by id, at most `limit`, after id `after`: every partition read at once,
 * merged. A partition whose page was cut (by `limit` or the byte budget) bounds the page, so no
 * schedule is passed over. `next` is the last id of the page, or null at the end.
 */
export async function listSchedules(
  ctx: EngineContext,
  t: TopicConfig,
  page: { limit: number; after?: string },
): Promise<{ schedules: Schedule[]; next: string | null }> {
  const pages = await forEachPartition(ctx.layout.partitionsOf(t), async (p) => {
    const sk = scheduleKeys(p, t.name, ctx.layout);
    const [more, ...views] = await run(
      ctx.redis,
      script.listSchedules([sk.ids, sk.schedules], {
        after: page.after ?? '',
        limit: page.limit,
        maxBytes: SCRIPT_CALL_BYTES,
      }),
    );
    return { views, cut: more === 1 || views.length >= page.limit };
  });
  let bound: string | null = null;
  for (const { views, cut } of pages) {
    const lastId = views.at(-1)?.[0];
    if (cut && lastId !== undefined && (bound === null || lastId < bound)) bound = lastId;
  }
  // while the partition count changes, a schedule moving is in two partitions for a moment: listed once
  const merged = pages
    .flatMap((p) => p.views)
    .filter((v) => bound === null || v[0] <= bound)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .filter((v, i, all) => i === 0 || all[i - 1]![0] !== v[0]);
  const taken = merged.slice(0, page.limit);
  const more = merged.length > page.limit || pages.some((p) => p.cut);
  return { schedules: taken.map((v) => toSchedule(t, v)), next: more && taken.length > 0 ? taken.at(-1)![0] : null };
}

const CURSOR = /^s:([A-Za-z0-9._:-]{1,128})$/;

/** The opaque `next` string of a page of schedules: base64url of `s:<last id>`. */
export function encodeScheduleCursor(after: string): string {
  return Buffer.from(`s:${after}`).toString('base64url');
}

/** The id a schedule page's `next` stands for, or null when it is not one. */
export function decodeScheduleCursor(text: string): string | null {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(text)) return null;
  return CURSOR.exec(Buffer.from(text, 'base64url').toString('latin1'))?.[1] ?? null;
}

/** What the sweeper commits for one due schedule: computed from the record it read at `now`. */
export interface AdvancePlan {
  topic: string;
  partition: number;
  id: string;
  seen: number;
  group: string | null;
  /** The pending occurrence's id as read. */
  pendingId: string | null;
  run: script.OccurrenceArg | null;
  next: script.OccurrenceArg | null;
  last: number;
}

/**
 * The advance of due schedule `view` (topic `topic`, partition `partition`) at `now`, by
 * advancePlan: a pending occurrence at most a grace late runs, and the next is the run after it;
 * one later than that was missed, and the latest run due runs once (unless catchUp `none` skips
 * it) in its place, unless the pending one was claimed or cancelled by the commit (it stands for
 * the runs due: lua/advanceSchedule-8.lua), the next being the first run after `now`. Occurrences are moved by their
 * jitter offset within the schedule's jitter, else `topicJitterMs`, and less than the time to their next run.
 */
export function planAdvance(
  topic: string,
  partition: number,
  view: script.ScheduleView,
  now: number,
  topicJitterMs = 0,
): AdvancePlan {
  const [id, seen, pendingAt, pendingId, last, , , , , group] = view;
  const from = pendingAt ?? now;
  const spec = specOf(view);
  const jitterMs = occurrenceJitterMs(spec, topicJitterMs);
  const plan = pendingAt === null ? catchUpPlan(spec, from, now) : advancePlan(spec, pendingAt, now);
  return {
    topic,
    partition,
    id,
    seen,
    group,
    pendingId,
    run: occurrence({ topic, scheduleId: id, spec, jitterMs }, plan.run, plan.next),
    next: occurrence({ topic, scheduleId: id, spec, jitterMs }, plan.next),
    last: plan.latest ?? last ?? from,
  };
}

/** Occurrences `left` (of a schedule script's reply) as leaveGroups takes them. */
function leftOccurrences(topic: string, partition: number, left: readonly script.LeftOccurrence[]): LeftGroup[] {
  return left.map(([id, group, chunk]) => ({ topic, group, id, chunk, partition }));
}

/** The advanceSchedule call that commits `plan`. */
export function advanceCall(ctx: EngineContext, plan: AdvancePlan) {
  const sk = scheduleKeys(plan.partition, plan.topic, ctx.layout);
  const k = topicKeys(plan.partition, plan.topic, ctx.layout);
  return script.advanceSchedule(
    [
      sk.schedules,
      sk.next,
      k.jobs,
      k.bodies,
      k.delayed,
      k.running,
      k.done,
      groupKey(plan.partition, plan.topic, plan.group ?? '', ctx.layout),
    ],
    {
      clock: ctx.clock(),
      id: plan.id,
      seen: plan.seen,
      run: plan.run,
      next: plan.next,
      last: plan.last,
    },
  );
}

/** Commits one advance; see lua/advanceSchedule-8.lua for its refusals (nothing changed). */
export async function commitAdvance(ctx: EngineContext, plan: AdvancePlan): Promise<script.AdvanceReply> {
  const reply = await run(ctx.redis, advanceCall(ctx, plan));
  if (reply[0] === OUTCOME.ADVANCED && reply[3].length > 0)
    await leaveGroups(ctx, leftOccurrences(plan.topic, plan.partition, reply[3]));
  return reply;
}

/**
 * Most due schedules one dueSchedules call reads (and so one sweep advances per topic and
 * partition). Each costs the call a record read and decode, about 13 µs (BENCHMARKS.md,
 * "Schedules": 2.6 ms a call of 200): 200 keep a call within a few ms where 1,000 took 10-50 ms. A sweep with more due
 * says `more`, and the sweeper sweeps again at once.
 */
export const DUE_SCHEDULES_STEP = 200;

/** The dueSchedules call of topic `topic` in `partition`: at most `limit` schedules, and DUE_SCHEDULES_STEP. */
export function dueCall(ctx: EngineContext, topic: string, partition: number, limit: number) {
  const sk = scheduleKeys(partition, topic, ctx.layout);
  return script.dueSchedules([sk.next, sk.schedules], {
    clock: ctx.clock(),
    limit: Math.min(limit, DUE_SCHEDULES_STEP),
    maxBytes: SCRIPT_CALL_BYTES,
  });
}

/** What one partition's schedule step did. */
export interface ScheduleStep {
  /** Schedules moved on. */
  advanced: number;
  /** Occurrences created (next ones, and caught-up ones). */
  created: number;
  /** Due schedules whose definition could not be computed (left as they are). */
  unplanned: number;
  /** Due schedules left for another step (limit or byte budget). */
  more: boolean;
  /**
   * Earliest time a schedule needs the sweeper again (a pending occurrence, a caught-up one due now, or one a hand-over
   * made due now), or null.
   */
  nextAt: number | null;
}

/**
 * The sweeper's schedule step for the due schedules `replies` read (one dueSchedules reply per
 * topic of `topics`, in `partition`): computes each advance and commits them in one pipeline. An
 * advance refused because the schedule changed since it was read is left to the next sweep.
 */
export async function advanceDue(
  ctx: EngineContext,
  partition: number,
  topics: readonly string[],
  replies: readonly script.DueSchedulesReply[],
): Promise<ScheduleStep> {
  const step: ScheduleStep = { advanced: 0, created: 0, unplanned: 0, more: false, nextAt: null };
  const earliest = (ms: number | null) => {
    if (ms !== null && (step.nextAt === null || ms < step.nextAt)) step.nextAt = ms;
  };
  const plans: AdvancePlan[] = [];
  replies.forEach(([now, more, head, ...due], i) => {
    if (more === 1) step.more = true;
    earliest(head);
    for (const view of due) {
      try {
        plans.push(planAdvance(topics[i]!, partition, view, now, ctx.config.topics.get(topics[i]!)?.jitterMs ?? 0));
      } catch {
        // a definition this code cannot compute (validated when put; a library upgrade could
        // refuse it): skipped, so one schedule never stops the sweep of every job
        step.unplanned += 1;
      }
    }
  });
  if (plans.length === 0) return step;
  const results = await runPipelined(
    ctx.redis,
    plans.map((plan) => advanceCall(ctx, plan)),
  );
  const left: LeftGroup[] = [];
  results.forEach((reply, i) => {
    if (reply[0] !== OUTCOME.ADVANCED) return;
    left.push(...leftOccurrences(plans[i]!.topic, partition, reply[3]));
    step.advanced += 1;
    step.created += reply[2];
    const { run: caughtUp, next, pendingId } = plans[i]!;
    earliest(next?.ms ?? null);
    // a caught-up occurrence replacing the pending one is due now (or at its jitter offset): sweep again to move it
    if (caughtUp && caughtUp.id !== pendingId && reply[2] > 0) earliest(caughtUp.due);
    // the occurrence handed over before, held back by its jitter, fell due now: sweep again to move it
    earliest(reply[4]);
  });
  // occurrences made anew from a cancelled job of another group: out of that group
  if (left.length > 0) await leaveGroups(ctx, left);
  return step;
}

/** The earliest of a schedule's pending occurrence and a missed one caught up on resume (due now, at lastRunAt). */
function firstDue(schedule: Schedule): number | 'now' {
  const times = [schedule.pending?.runAt, schedule.lastRunAt].flatMap((t) => (t ? [Date.parse(t)] : []));
  return times.length > 0 ? Math.min(...times) : 'now';
}

/** The engine's schedule operations (Engine in ./engine.ts lists them). */
export const scheduleOps = {
  /** Creates or replaces a validated schedule and its pending occurrence. */
  async putSchedule(
    this: object,
    topic: string,
    s: NewSchedule,
  ): Promise<{ status: 'created' | 'replaced'; schedule: Schedule } & Wake> {
    const ctx = contextOf(this);
    const { touched, ...result } = await putSchedule(ctx, topicOf(ctx, topic), s);
    // the answer is the schedule read after the write, another writer's change included
    for (const d of touched) await settle(ctx, d.changed, d.covering, d.layout);
    if (result.wake) await wakeFor(ctx, firstDue(result.schedule));
    return result;
  },

  /**
   * Pauses (or resumes) schedule `topic`/`id`, its definition kept: once a pause returns, no
   * occurrence of it starts (one not started yet is withdrawn, or cancelled while claimed; one that
   * started runs on); a resume catches up on what the pause missed by its catchUp. Null: none.
   */
  async pauseSchedule(this: object, topic: string, id: string, paused: boolean, by = ''): Promise<Schedule | null> {
    const ctx = contextOf(this);
    const result = await pauseSchedule(ctx, topicOf(ctx, topic), id, paused, by);
    for (const d of result.touched) await settle(ctx, d.changed, d.covering, d.layout);
    if (result.schedule && result.wake) await wakeFor(ctx, firstDue(result.schedule));
    return result.schedule;
  },

  /** Deletes a schedule and withdraws its pending occurrence; false when there was none. */
  async deleteSchedule(this: object, topic: string, id: string): Promise<boolean> {
    const ctx = contextOf(this);
    const { deleted, touched } = await deleteSchedule(ctx, topicOf(ctx, topic), id);
    for (const d of touched) await settle(ctx, d.changed, d.covering, d.layout); // a 404 stands on what the primary had
    return deleted;
  },

  /** Schedule topic/id with its next run times, or null when there is none. */
  getSchedule(this: object, topic: string, id: string): Promise<Schedule | null> {
    const ctx = contextOf(this);
    return getSchedule(ctx, topicOf(ctx, topic), id);
  },

  /** A page of a topic's schedules by id. */
  listSchedules(
    this: object,
    topic: string,
    page: { limit?: number; after?: string } = {},
  ): Promise<{ schedules: Schedule[]; next: string | null }> {
    const ctx = contextOf(this);
    return listSchedules(ctx, topicOf(ctx, topic), { limit: SCHEDULES_PAGE.default, ...page });
  },
};
