/**
 * Groups: cancel a whole group, list its jobs, and keep its zsets to the jobs still in it. A
 * group's jobs in one topic and partition are members of one or more zsets of at most 128 (its
 * chunks, see lua/includes/groups.lua), so that a large group costs about 25 bytes a job in them,
 * not a skiplist's 120; while the first holds at most 3 jobs, it is kept as slots in a bucket
 * shared with other small groups instead of a key of its own (lua/includes/buckets.lua).
 */
import type { TopicConfig } from '../core/queue-config';
import { groupKey, topicKeys, type Layout } from './keys';
import { SCRIPT_CALL_BYTES, JOBS_PAGE } from '../core/limits';
import { run, runPipelined, type ScriptCall } from './script-runner';
import { contextOf, topicOf, type EngineContext } from './context';
import { toJob, type Job } from './jobs';
import { chunk, groupBy } from './partitions';
import { viewsWithBodies } from './read';
import * as script from './scripts';
import { settle } from './durable';

/**
 * Members a cancelGroup step looks at. Each costs a read, a decode and a header rewrite plus three
 * zset changes: 25–37 µs on this 2-core machine (a step of 100 takes 2.4–3.7 ms at its median and
 * p99, BENCHMARKS.md), so a step of 100 keeps a call well under the 10 ms every other script stays
 * under, even on a busy machine.
 */
export const CANCEL_GROUP_STEP = 100;
const LEAVE_BATCH = 500; // ids per leaveGroup call: a read and at most a ZREM each

/** What a group cancel did: jobs cancelled before they started, and jobs whose attempt was running. */
export interface GroupCancel {
  cancelled: number;
  running: number;
}

/**
 * Cancels every job of group `group` of topic `t` that joined it before the call, one bounded
 * step at a time (lua/cancelGroup-6.lua), the partitions in turn with one step in flight, so that
 * claims and sweeps on the same Redis wait for at most one step, never for one per partition.
 * First the group is marked in every partition (all at once, no member looked at): from then on
 * no job of the group that has not changed since can start there (a claim cancels it instead),
 * even if this call stops half-way; then each step cancels up to `step` of its jobs. Returns once every partition is
 * through: then no job of the group that was delayed or ready starts any more. Jobs joining the group after a
 * partition's mark are left alone.
 */
export async function cancelGroup(
  ctx: EngineContext,
  t: TopicConfig,
  group: string,
  step = CANCEL_GROUP_STEP,
  by = '',
): Promise<GroupCancel & { partitions: number[] }> {
  const total: GroupCancel = { cancelled: 0, running: 0 };
  const left = ctx.layout
    .partitionsOf(t)
    .map((p) => ({ p, mark: '', chunk: '' as number | '', cursor: '-inf', last: '' as number | '' }));
  const keysOf = (p: number) => {
    const k = topicKeys(p, t.name, ctx.layout);
    return [k.jobs, k.bodies, k.delayed, k.running, k.done, groupKey(p, t.name, group, ctx.layout)] as const;
  };
  // first mark the group in every partition (a step of 0 members): from here on, if this call
  // stops half-way, the jobs it has not reached still cannot start
  const marks = await runPipelinedPerPartition(
    ctx,
    left.map((part) => ({
      p: part.p,
      call: script.cancelGroup(keysOf(part.p), {
        clock: ctx.clock(),
        group,
        mark: '',
        chunk: '',
        cursor: '-inf',
        last: '',
        limit: 0,
        maxBytes: SCRIPT_CALL_BYTES,
        retentionMs: ctx.config.retentionMs,
        by,
      }),
    })),
  );
  for (const part of left) [, , , part.chunk, part.cursor, part.mark, part.last] = marks.get(part.p)!;
  while (left.length > 0) {
    for (const part of [...left]) {
      const call = script.cancelGroup(keysOf(part.p), {
        clock: ctx.clock(),
        group,
        mark: part.mark,
        chunk: part.chunk,
        cursor: part.cursor,
        last: part.last,
        limit: step,
        maxBytes: SCRIPT_CALL_BYTES,
        retentionMs: ctx.config.retentionMs,
        by,
      });
      const [cancelled, running, done, chunk, cursor, mark, last] = await run(ctx.redis, call);
      total.cancelled += cancelled;
      total.running += running;
      Object.assign(part, { chunk, cursor, mark, last });
      if (done === 1) left.splice(left.indexOf(part), 1);
    }
  }
  return { ...total, partitions: [...ctx.layout.partitionsOf(t)] };
}

/** Runs one call per partition, all at once; the replies by partition. */
async function runPipelinedPerPartition<R>(
  ctx: EngineContext,
  calls: readonly { p: number; call: ScriptCall<R> }[],
): Promise<Map<number, R>> {
  const replies = await Promise.all(calls.map(({ call }) => run(ctx.redis, call)));
  return new Map(calls.map(({ p }, i) => [p, replies[i]!]));
}

/** Jobs that left group `group` (purged, or moved by a put), to be taken out of the zset (chunk) they were in. */
export interface LeftGroup {
  topic: string;
  group: string;
  id: string;
  chunk: number;
  partition: number;
}

/**
 * Takes jobs that left their groups out of the groups' zsets (lua/leaveGroup-2.lua), pipelined per partition (of
 * `layout`).
 */
export async function leaveGroups(
  ctx: EngineContext,
  left: readonly LeftGroup[],
  layout: Layout = ctx.layout,
): Promise<number> {
  let removed = 0;
  const byPartition = groupBy(left, (l) => l.partition);
  await Promise.all(
    [...byPartition].map(async ([p, members]) => {
      const calls = [...groupBy(members, (m) => `${m.topic} ${m.group}`).values()].flatMap((same) =>
        chunk(same, LEAVE_BATCH).map((batch) => {
          const { topic, group } = batch[0]!;
          return script.leaveGroup([topicKeys(p, topic, layout).jobs, groupKey(p, topic, group, layout)], {
            group,
            members: batch,
          });
        }),
      );
      for (const n of await runPipelined(ctx.redis, calls)) removed += n;
    }),
  );
  return removed;
}

/**
 * Where a page of a group resumes: the topic's partition at place `partition` in its partitions
 * (Layout.partitionsOf: for a topic without flow control, the partition of that number), zset
 * (chunk) `chunk` of the group there, after the member whose score there is `after` ('-inf': from
 * its first).
 */
export interface GroupCursor {
  partition: number;
  chunk: number;
  after: string;
}

// `g<partition>:<chunk>.<score>:<tag>`
const GROUP_CURSOR = /^g(\d{1,4}):(\d{1,9})\.(-inf|\d{1,16}):([0-9a-f]{8})$/;

/** Which group a cursor belongs to: FNV-1a (32-bit) of `topic/group`, so one group's cursor is refused by another. */
function groupTag(topic: string, group: string): string {
  let hash = 0x811c9dc5;
  const text = `${topic}/${group}`;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return (hash >>> 0).toString(16).padStart(8, '0');
}

/**
 * The opaque `next` string of a page of group `group` of `topic`: base64url of `g<partition>:<chunk>.<score>:<group
 * tag>`.
 */
export function encodeGroupCursor(c: GroupCursor, topic: string, group: string): string {
  return Buffer.from(`g${c.partition}:${c.chunk}.${c.after}:${groupTag(topic, group)}`).toString('base64url');
}

/**
 * The cursor a `next` string stands for, or null when it is not one of a page of this group (and of this deployment's
 * partitions).
 */
export function decodeGroupCursor(text: string, partitions: number, topic: string, group: string): GroupCursor | null {
  if (!/^[A-Za-z0-9_-]{1,60}$/.test(text)) return null;
  const match = GROUP_CURSOR.exec(Buffer.from(text, 'base64url').toString('latin1'));
  if (!match || Number(match[1]) >= partitions || match[4] !== groupTag(topic, group)) return null;
  return { partition: Number(match[1]), chunk: Number(match[2]), after: match[3]! };
}

/**
 * The jobs of group `group` of topic `t`, at most `limit`, after `cursor`: partition by partition,
 * in the order they joined the group within each; at most SCRIPT_CALL_BYTES of bodies (one job
 * always). `next` is null when the group has no job after the page.
 */
export async function listGroup(
  ctx: EngineContext,
  t: TopicConfig,
  group: string,
  page: { limit: number; cursor?: GroupCursor },
): Promise<{ jobs: Job[]; next: GroupCursor | null }> {
  const jobs: Job[] = [];
  const partitions = ctx.layout.partitionsOf(t);
  let { partition: place, after } = page.cursor ?? { partition: 0, after: '-inf' };
  let chunk: number | '' = page.cursor?.chunk ?? '';
  let bytes = 0;
  while (place < partitions.length) {
    const partition = partitions[place]!;
    const k = topicKeys(partition, t.name, ctx.layout);
    const left = page.limit - jobs.length;
    const call = script.listGroup([groupKey(partition, t.name, group, ctx.layout), k.jobs, k.bodies, k.delayed], {
      group,
      chunk,
      cursor: after,
      limit: left,
      maxBytes: Math.max(0, SCRIPT_CALL_BYTES - bytes),
    });
    const [more, nextChunk, cursor, ...views] = await run(ctx.redis, call);
    for (const { view, body } of await viewsWithBodies(ctx, k.bodies, views)) {
      if (body === null) continue; // purged since the script listed it
      jobs.push(toJob(t, view, body));
      bytes += Buffer.byteLength(body);
    }
    if (more === 1) return { jobs, next: { partition: place, chunk: nextChunk, after: cursor } };
    place += 1;
    chunk = '';
    after = '-inf';
    if (jobs.length >= page.limit || bytes >= SCRIPT_CALL_BYTES) break;
  }
  return {
    jobs,
    next: place < partitions.length ? { partition: place, chunk: chunk === '' ? 0 : chunk, after } : null,
  };
}

/** The engine's group operations (Engine in ./engine.ts lists them). */
export const groupOps = {
  /** Cancels every unfinished job of a group: { cancelled, running }. */
  async cancelGroup(
    this: object,
    topic: string,
    group: string,
    by = '',
  ): Promise<{ cancelled: number; running: number }> {
    const ctx = contextOf(this);
    const { cancelled, running, partitions } = await cancelGroup(ctx, topicOf(ctx, topic), group, undefined, by);
    await settle(ctx, partitions, partitions);
    return { cancelled, running };
  },

  /** A page of a group's jobs with their states. */
  listGroup(
    this: object,
    topic: string,
    group: string,
    page: { limit?: number; cursor?: GroupCursor } = {},
  ): Promise<{ jobs: Job[]; next: GroupCursor | null }> {
    const ctx = contextOf(this);
    return listGroup(ctx, topicOf(ctx, topic), group, { limit: JOBS_PAGE.default, ...page });
  },
};
