/** Producer-side changes: add, put, cancel and reschedule jobs. */
import type { TopicConfig } from '../core/queue-config';
import { groupKey, Layout, steerId, topicKeys } from './keys';
import { newJobId } from '../core/random';
import { SCRIPT_CALL_BYTES } from '../core/limits';
import { run, runByNode } from './script-runner';
import { inPlaces } from './read';
import { OUTCOME, REFUSAL, RELAYOUT } from './codes';
import { contextOf, topicOf, type EngineContext } from './context';
import {
  toJob,
  toWriteResult,
  type Job,
  type JobChange,
  type NewJob,
  type Refused,
  type Wake,
  type WriteResult,
  isRefused,
} from './jobs';
import { leaveGroups } from './groups';
import { atLeastOne, batchesByPartition } from './partitions';
import * as script from './scripts';
import { settle } from './durable';
import { wakeFor } from './coordination';

const ADD_BATCH = 100; // jobs per addJobs call: ~800 arguments, well under a millisecond of Redis time

/**
 * The partitions a write changed and those whose answers it read without writing, of one layout: what a replica must
 * confirm.
 */
export interface Touched {
  layout: Layout;
  changed: Set<number>;
  covering: Set<number>;
}

/**
 * Writes validated jobs through addJobs ('add' refuses an existing id, 'put' replaces a pending
 * job), one result per job in order. Calls are grouped per partition, topic and group and cut at
 * ADD_BATCH jobs and SCRIPT_CALL_BYTES of bodies (a larger body alone); the partitions run at
 * once, each in one pipeline. A call that reached its byte budget (the jobs it found existing are
 * replied with their bodies) did its first jobs; the rest go in another call after the pipeline,
 * so of two adds of one id in one batch, the later may be the one created.
 *
 * While the partition count changes (Layout), a job goes first to its partition of the former
 * layout, which closes it to new ids: a job that is there is added, replaced or refused there, one
 * that is not is turned away (MOVED) and written in its current partition. So every writer of an
 * id meets in one place, and an id never lives in both layouts. A closed partition turns new ids
 * away from a writer that does not know of the change too (an instance still configured with the
 * former count): it writes them in the layout the reply names.
 */
export async function writeJobs(
  ctx: EngineContext,
  jobs: readonly NewJob[],
  mode: 'add' | 'put',
  by = '',
): Promise<{ results: WriteResult[]; touched: Touched[] } & Wake> {
  const w: Writing = {
    ctx,
    jobs,
    mode,
    by,
    results: new Array(jobs.length),
    touched: [],
    movedTo: new Map(),
    wake: false,
  };
  const ref = (i: number) => ctx.config.topics.get(jobs[i]!.topic) ?? jobs[i]!.topic;
  const former = jobs.map((_, i) => ctx.layout.formerPlaceOf(ref(i), jobs[i]!.id));
  // the jobs the layout's former partitions take first, the rest in their current ones
  const first = jobs.map((_, i) => i).filter((i) => former[i] !== null);
  let next = jobs.map((_, i) => i).filter((i) => former[i] === null);
  if (first.length > 0) next.push(...(await writeRound(w, ctx.layout, first, (i) => former[i]!, ctx.layout.count)));
  // a job turned away: written in the layout the closed partition names (ours, unless we do not know of the change)
  for (let layout = ctx.layout; next.length > 0;) {
    const round = layout;
    const moved = await writeRound(
      w,
      round,
      next.sort((a, b) => a - b),
      (i) => round.placeOf(ref(i), jobs[i]!.id),
    );
    if (moved.length === 0) break;
    const count = w.movedTo.get(moved[0]!)!;
    if (count === layout.count)
      throw new Error(
        `partition closed in the current layout of ${count}: two changes of the partition count at once?`,
      );
    layout = new Layout(count, layout.count, layout.flowTopics);
    next = moved;
  }
  return { results: w.results, touched: w.touched, wake: w.wake };
}

/** A writeJobs under way: what it writes, and what it found so far. */
interface Writing {
  ctx: EngineContext;
  jobs: readonly NewJob[];
  mode: 'add' | 'put';
  by: string;
  results: WriteResult[];
  touched: Touched[];
  /** The count each job turned away (MOVED) was turned away with. */
  movedTo: Map<number, number>;
  wake: boolean;
}

/** One writeRound under way: where it writes, and what it found so far. */
interface Round {
  w: Writing;
  layout: Layout;
  /** The current count, when these are the former layout's partitions. */
  close: number | undefined;
  /** The jobs turned away (MOVED). */
  moved: number[];
  changed: Set<number>;
  covering: Set<number>; // answers that stand on what the primary had: exists, running, mismatch
}

/**
 * Writes the jobs `indexes` of `w.jobs` in `layout`, each in partition `place(i)` (`close`: the
 * current count, when these are the former layout's partitions); records their results, and
 * returns those turned away (MOVED), the count each was turned away with in `w.movedTo`.
 */
async function writeRound(
  w: Writing,
  layout: Layout,
  indexes: readonly number[],
  place: (i: number) => number,
  close?: number,
): Promise<number[]> {
  const { jobs } = w;
  const round: Round = { w, layout, close, moved: [], changed: new Set(), covering: new Set() };
  // one group per call: the call joins its jobs to that group (KEYS[5], its first zset)
  const slot = { partition: place, topic: (i: number) => `${jobs[i]!.topic} ${jobs[i]!.group ?? ''}` };
  const byPartition = batchesByPartition(indexes, slot, ADD_BATCH, {
    maxBytes: SCRIPT_CALL_BYTES,
    bytes: (i) => Buffer.byteLength(jobs[i]!.body),
  });
  // every partition's first calls at once, in one pipeline per node; a call cut at its byte budget goes on after
  const parts = [...byPartition];
  const replies = await runByNode(
    w.ctx.redis,
    parts.map(([partition, batches]) => batches.map((batch) => addCall(round, partition, batch))),
  );
  await Promise.all(parts.map(([partition, batches], i) => writeRest(round, partition, batches, replies[i]!)));
  w.touched.push({ layout, changed: round.changed, covering: round.covering });
  await leaveFormerGroups(w, layout, indexes, place);
  return round.moved;
}

/**
 * Records the replies of one partition's first calls, in order; a call that reached its byte budget did its first jobs,
 * and the rest go in further calls, one after another.
 */
async function writeRest(
  round: Round,
  partition: number,
  batches: readonly (readonly number[])[],
  replies: readonly script.AddJobsReply[],
): Promise<void> {
  const { redis } = round.w.ctx;
  for (const [b, reply] of replies.entries()) {
    const batch = batches[b]!;
    for (let rest = batch.slice(atLeastOne(recordReply(round, partition, batch, reply), 'addJobs')); rest.length > 0;) {
      rest = rest.slice(
        atLeastOne(recordReply(round, partition, rest, await run(redis, addCall(round, partition, rest))), 'addJobs'),
      );
    }
  }
}

/** The addJobs call of `batch` (jobs of one topic and group) in `partition`. */
function addCall(round: Round, partition: number, batch: readonly number[]) {
  const { w, layout, close } = round;
  const { ctx, jobs } = w;
  const first = jobs[batch[0]!]!;
  const k = topicKeys(partition, first.topic, layout);
  const g = groupKey(partition, first.topic, first.group ?? '', layout);
  const flow = ctx.config.topics.get(first.topic)?.flow !== undefined;
  return script.addJobs([k.jobs, k.bodies, k.delayed, k.done, g], {
    clock: ctx.clock(),
    mode: w.mode,
    by: w.by,
    flow,
    ...(close !== undefined ? { close } : {}),
    jobs: batch.map((i) => jobs[i]!),
    maxBytes: SCRIPT_CALL_BYTES,
  });
}

/** Records a reply's results for the first jobs of `batch`; returns how many it answered. */
function recordReply(round: Round, partition: number, batch: readonly number[], reply: script.AddJobsReply): number {
  const { w } = round;
  const { ctx, jobs } = w;
  if (reply[0] === 1) w.wake = true;
  const added = script.addResults(reply);
  added.forEach((result, r) => {
    const i = batch[r]!;
    if (result[0] === RELAYOUT.MOVED) {
      round.moved.push(i);
      w.movedTo.set(i, result[1]);
      return;
    }
    const job = jobs[i]!;
    const written = toWriteResult(ctx.config.topics.get(job.topic)!, job, result, w.by);
    w.results[i] = written;
    const { status } = written;
    (status === 'created' || status === 'replaced' || status === 'debounced' ? round.changed : round.covering).add(
      partition,
    );
  });
  return added.length;
}

/** A put that moved jobs out of their groups: takes them out of those groups' zsets. */
async function leaveFormerGroups(
  w: Writing,
  layout: Layout,
  indexes: readonly number[],
  place: (i: number) => number,
): Promise<void> {
  const { jobs } = w;
  const left = indexes.flatMap((i) => {
    const r = w.results[i];
    return r && 'left' in r && r.left !== null
      ? [{ topic: jobs[i]!.topic, group: r.left[0], chunk: r.left[1], id: jobs[i]!.id, partition: place(i) }]
      : [];
  });
  if (left.length > 0) await leaveGroups(w.ctx, left, layout);
}

/**
 * Cancels a pending or running job (again is fine); refused when it is missing, done or dead, or
 * when `ifMatch` ('*': any existing job; a number: the version it must have) does not hold.
 * `wrote`: this call cancelled the job (any other answer changed nothing).
 */
export async function cancelJob(
  ctx: EngineContext,
  t: TopicConfig,
  id: string,
  ifMatch: script.IfMatchArg = '',
  by = '',
): Promise<{ outcome: { job: Job } | Refused; wrote: boolean; looked: number[] }> {
  const { reply, looked } = await inPlaces(ctx, t, id, (k) =>
    script.cancelJob([k.jobs, k.bodies, k.delayed, k.running, k.done], {
      clock: ctx.clock(),
      id,
      retentionMs: ctx.config.retentionMs,
      ifMatch,
      by,
    }),
  );
  const answer = cancelAnswer(t, reply);
  return { ...answer, looked };
}

/** What a cancelJob reply says. */
function cancelAnswer(t: TopicConfig, reply: script.CancelReply): { outcome: { job: Job } | Refused; wrote: boolean } {
  if (reply[0] === REFUSAL.NOT_FOUND) return { outcome: { refusal: reply[0] }, wrote: false };
  if (reply[0] === REFUSAL.VERSION_MISMATCH)
    return { outcome: reply[1] ? { refusal: reply[0], job: toJob(t, reply[1]) } : { refusal: reply[0] }, wrote: false };
  const job = toJob(t, reply[1]);
  if (reply[0] === REFUSAL.JOB_FINISHED) return { outcome: { refusal: reply[0], job }, wrote: false };
  return { outcome: { job }, wrote: reply[0] === OUTCOME.CANCELLED };
}

/** Changes the due time and/or the body of a pending job; refused unless it is delayed or ready. */
export async function rescheduleJob(
  ctx: EngineContext,
  t: TopicConfig,
  id: string,
  change: JobChange,
): Promise<{ outcome: ({ job: Job } & Wake) | Refused; looked: number[] }> {
  const { reply, looked } = await inPlaces(ctx, t, id, (k) =>
    script.rescheduleJob([k.jobs, k.bodies, k.delayed], { clock: ctx.clock(), id, change }),
  );
  if (reply[0] === REFUSAL.NOT_FOUND) return { outcome: { refusal: reply[0] }, looked };
  if (reply[0] === REFUSAL.JOB_FINISHED) return { outcome: { refusal: reply[0], job: toJob(t, reply[1]) }, looked };
  return { outcome: { job: toJob(t, reply[2]), wake: reply[1] === 1 }, looked };
}

/**
 * writeJobs, then what every write does before it answers: durable (settle), and the sweeper woken when a job became
 * the first due (the earliest due time among the jobs created or replaced).
 */
export async function writeDurably(
  ctx: EngineContext,
  jobs: readonly NewJob[],
  mode: 'add' | 'put',
  by = '',
): Promise<{ results: WriteResult[] } & Wake> {
  const { results, wake, touched } = await writeJobs(ctx, jobs, mode, by);
  for (const { changed, covering, layout } of touched) await settle(ctx, changed, covering, layout);
  if (wake) {
    const due = results.flatMap((r) =>
      r.status === 'created' || r.status === 'replaced' ? [Date.parse(r.job.runAt)] : [],
    );
    if (due.length > 0) await wakeFor(ctx, Math.min(...due));
  }
  return { results, wake };
}

/** The engine's producer-side changes (Engine in ./engine.ts lists them): durable before they answer. */
export const writeOps = {
  /**
   * The ids of one batch add's jobs that come without ids (the API's addMany asks for each in turn): fresh ids
   * (newJobId) of which each run of ADD_BATCH of a topic is steered into one partition (steerId), the runs spread
   * over the partitions in turn (ctx.placement, Rotation.spread). A batch then makes as few addJobs calls, and
   * requests, on many partitions as on one; many batches fill the partitions evenly. A flow topic (one partition of
   * its own) or one partition: fresh ids as they come.
   */
  freshIds(this: object): (topic: string) => string {
    const ctx = contextOf(this);
    const runs = new Map<string, { partition: number; left: number }>();
    const { count } = ctx.layout;
    return (topic) => {
      const id = newJobId();
      const t = ctx.config.topics.get(topic);
      if (count === 1 || !t || t.flow) return id;
      let run = runs.get(topic);
      if (!run || run.left === 0) runs.set(topic, (run = { partition: ctx.placement.spread(count), left: ADD_BATCH }));
      run.left -= 1;
      return steerId(topic, id, count, run.partition);
    };
  },

  /**
   * Writes validated jobs ('add' refuses an existing id, 'put' replaces a pending job); one result per job, in order.
   * `by` (in every API change): the key's name, its updatedBy. Wakes the sweeper when a job became the first due.
   */
  async write(
    this: object,
    jobs: readonly NewJob[],
    mode: 'add' | 'put',
    by = '',
  ): Promise<{ results: WriteResult[] } & Wake> {
    return writeDurably(contextOf(this), jobs, mode, by);
  },

  /** Cancels a pending or running job (`ifMatch`: '' none, '*' any version, or a version). */
  async cancel(
    this: object,
    topic: string,
    id: string,
    ifMatch: '' | '*' | number = '',
    by = '',
  ): Promise<{ job: Job } | Refused> {
    const ctx = contextOf(this);
    const { outcome, wrote, looked } = await cancelJob(ctx, topicOf(ctx, topic), id, ifMatch, by);
    // 404, 409, 412 and "already cancelled" wrote nothing
    await settle(ctx, looked, wrote ? looked.slice(0, -1) : looked);

    return outcome;
  },

  /** Changes the due time and/or body of a pending job. */
  async reschedule(
    this: object,
    topic: string,
    id: string,
    change: JobChange,
  ): Promise<({ job: Job } & Wake) | Refused> {
    const ctx = contextOf(this);
    const { outcome, looked } = await rescheduleJob(ctx, topicOf(ctx, topic), id, change);
    await settle(ctx, looked, isRefused(outcome) ? looked : looked.slice(0, -1));
    if ('wake' in outcome && outcome.wake) await wakeFor(ctx, Date.parse(outcome.job.runAt));
    return outcome;
  },
};
