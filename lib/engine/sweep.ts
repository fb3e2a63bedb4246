/** The sweeper's step: time out expired attempts, move due jobs to ready, purge finished ones. */
import type { TopicConfig } from '../core/queue-config';
import { scheduleKeys, topicKeys } from './keys';
import { SCRIPT_CALL_BYTES } from '../core/limits';
import { run, runByNode, runPipelined } from './script-runner';
import { inheritPauses } from './relayout';
import { contextOf, type EngineContext } from './context';
import { leaveGroups, type LeftGroup } from './groups';
import type { SweepResult } from './jobs';
import { advanceDue, dueCall, moveSchedules } from './schedules';
import * as script from './scripts';

function moveDueCall(ctx: EngineContext, t: TopicConfig, partition: number, limit: number) {
  const k = topicKeys(partition, t.name, ctx.layout);
  const next = scheduleKeys(partition, t.name, ctx.layout).next;
  return script.moveDue([k.delayed, k.ready, k.running, k.jobs, k.bodies, k.dead, k.done, next], {
    clock: ctx.clock(),
    limit,
    maxAttempts: t.maxAttempts,
    backoff: t.backoff,
    random: ctx.random(),
    deadRetentionMs: ctx.config.deadRetentionMs,
    maxBytes: SCRIPT_CALL_BYTES,
    flow: t.flow !== undefined,
  });
}

/** Adds one moveDue reply (of topic `topic`) to the sweep's totals. */
function tally(result: SweepResult, topic: string, reply: script.MoveDueReply): void {
  const [moved, retried, deadLettered, purged, more, nextAt, now, ready, givenBack] = reply;
  result.moved += moved;
  result.retried += retried;
  result.deadLettered += deadLettered;
  result.givenBack += givenBack;
  result.purged += purged;
  if (ready > 0) {
    // own properties only: a topic may be named `constructor` or `__proto__`
    const counts = result.readyByTopic;
    const value = (Object.hasOwn(counts, topic) ? counts[topic]! : 0) + ready;
    Object.defineProperty(counts, topic, { value, enumerable: true, writable: true, configurable: true });
  }
  if (more === 1) result.more = true;
  if (nextAt !== null && (result.nextAt === null || nextAt < result.nextAt)) result.nextAt = nextAt;
  result.now = Math.max(result.now, now);
}

/** The purged jobs of a moveDue reply (topic `topic`, partition `partition`) that had a group. */
function leftGroups(topic: string, partition: number, left: readonly (string | number)[]): LeftGroup[] {
  const out: LeftGroup[] = [];
  for (let i = 0; i + 2 < left.length; i += 3)
    out.push({ topic, partition, group: String(left[i]), id: String(left[i + 1]), chunk: Number(left[i + 2]) });
  return out;
}

/** Called by a sweep as soon as a partition's moveDue replies show ready jobs, at most once. */
export type OnReady = (readyByTopic: Readonly<Record<string, number>>) => Promise<void>;

/**
 * One bounded sweep step over every topic and partition: per partition, one pipeline of moveDue,
 * whose replies say when each topic's earliest schedule needs moving on; then, only for the topics
 * with schedules due, one pipeline reading them and one moving them on to their next occurrences,
 * and the purged jobs that had a group leave their groups' zsets. A sweeper that dies in between
 * leaves those members behind: a group listing passes over them, and a group cancel removes them; a
 * schedule not moved on is moved by the next sweep. `onReady` runs beside the rest of the step as
 * soon as jobs are ready (the sweeper invokes the fan-out there, so that due jobs do not wait for the
 * schedules' advance); the step awaits it before it returns, and it must not throw.
 */
export async function sweep(ctx: EngineContext, limit: number, onReady?: OnReady): Promise<SweepResult> {
  const result: SweepResult = {
    moved: 0,
    retried: 0,
    deadLettered: 0,
    givenBack: 0,
    purged: 0,
    schedulesAdvanced: 0,
    readyByTopic: {},
    more: false,
    nextAt: null,
    now: 0,
  };
  // a change of the partition count under way: a topic paused in the former layout is paused in the current one before
  // any job moves
  await inheritPauses(ctx);
  const left: LeftGroup[] = [];
  let readyCalled: Promise<void> | undefined;
  // each partition with the topics that may have jobs in it: the topics without flow control in
  // every partition of the layout, a flow topic in its own
  const all = [...ctx.config.topics.values()];
  const plain = all.filter((t) => !t.flow);
  const visits = [
    ...(plain.length > 0 ? ctx.layout.partitionsOf(plain[0]!).map((p) => ({ partition: p, topics: plain })) : []),
    ...all.filter((t) => t.flow).map((t) => ({ partition: ctx.layout.placeOf(t, ''), topics: [t] })),
  ];
  // every partition's moveDue calls at once, in one pipeline per node
  const moved = await runByNode(
    ctx.redis,
    visits.map(({ partition, topics }) => topics.map((t) => moveDueCall(ctx, t, partition, limit))),
  );
  await Promise.all(
    visits.map(async ({ partition, topics }, v) => {
      const replies = moved[v]!;
      // the topics whose earliest schedule is due: only theirs are read (a sweep of topics without
      // schedules, or whose schedules wait, makes no dueSchedules call)
      const names: string[] = [];
      replies.forEach((reply, i) => {
        tally(result, topics[i]!.name, reply);
        left.push(...leftGroups(topics[i]!.name, partition, reply[9]));
        const at = reply[10];
        if (at !== null && at <= reply[6]) names.push(topics[i]!.name);
        else if (at !== null && (result.nextAt === null || at < result.nextAt)) result.nextAt = at;
      });
      if (onReady && !readyCalled && Object.keys(result.readyByTopic).length > 0)
        readyCalled = onReady({ ...result.readyByTopic });
      if (names.length === 0) return;
      const step = await advanceSchedules(ctx, partition, names, limit);
      result.schedulesAdvanced += step.advanced;
      if (step.more) result.more = true;
      if (step.nextAt !== null && (result.nextAt === null || step.nextAt < result.nextAt)) result.nextAt = step.nextAt;
    }),
  );
  // schedules of the former layout to their current partitions
  if (ctx.layout.former > 0) await moveSchedules(ctx, limit, result);
  if (left.length > 0) await leaveGroups(ctx, left);
  await readyCalled;
  return result;
}

/** The due schedules of topics `names` in `partition` read (at most `limit` a topic) and moved on. */
async function advanceSchedules(ctx: EngineContext, partition: number, names: readonly string[], limit: number) {
  const due = await runPipelined(
    ctx.redis,
    names.map((name) => dueCall(ctx, name, partition, limit)),
  );
  return advanceDue(ctx, partition, names, due);
}

/** moveDue for topic `t` in one partition (and the purged jobs' leaving their groups). */
export async function moveDue(ctx: EngineContext, t: TopicConfig, partition: number, limit: number) {
  const [moved, retried, deadLettered, purged, more, nextAt, now, , givenBack, left] = await run(
    ctx.redis,
    moveDueCall(ctx, t, partition, limit),
  );
  if (left.length > 0) await leaveGroups(ctx, leftGroups(t.name, partition, left));
  return { moved, retried, deadLettered, givenBack, purged, more: more === 1, nextAt, now };
}

/** The sweeper's step (Engine in ./engine.ts lists it). */
export const sweepOps = {
  /** One bounded sweep step over every topic and partition; `onReady` runs as soon as jobs are ready. */
  sweep(this: object, limit?: number, onReady?: OnReady): Promise<SweepResult> {
    const ctx = contextOf(this);
    return sweep(ctx, limit ?? ctx.config.moveLimit, onReady);
  },
};
