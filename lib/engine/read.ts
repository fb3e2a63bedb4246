/** Reads: one job, and a topic's counts. */
import type { TopicConfig } from '../core/queue-config';
import {
  EXPIRED_FIELD,
  flowKeys,
  PAUSED_FIELD,
  PRIO_COUNT_FIELD,
  READY_FIELD,
  scheduleKeys,
  topicKeys,
  type BodiesKey,
  type TopicKeys,
} from './keys';
import { readSlot, run, runThenHget, type ScriptCall } from './script-runner';
import { REFUSAL } from './codes';
import { contextOf, topicOf, type EngineContext } from './context';
import { toJob, type Job, type JobView, type TopicStats } from './jobs';
import { isoOrNull } from '../core/time';
import { forEachPartition } from './partitions';
import * as script from './scripts';

/**
 * Job `id` of topic `t`, or null when there is none (or it was purged after its retention). The
 * script reads the record; a body kept apart comes from a plain HGET in the same transaction.
 * While the partition count changes, a job not in its current partition is looked for in its former one.
 */
export async function getJob(ctx: EngineContext, t: TopicConfig, id: string): Promise<Job | null> {
  for (const p of placesOf(ctx, t, id)) {
    const k = topicKeys(p, t.name, ctx.layout);
    const [view, apart] = await runThenHget(ctx.redis, script.getJob([k.jobs, k.delayed], { id }), k.bodies, id);
    if (view) return toJob(t, view, view[12] ?? apart);
  }
  return null;
}

/**
 * Where job (topic, id) may be, in the order to look: its current partition, then (while the partition count changes)
 * its former one.
 */
export function placesOf(ctx: EngineContext, t: TopicConfig | string, id: string): number[] {
  const former = ctx.layout.formerPlaceOf(t, id);
  const current = ctx.layout.placeOf(t, id);
  return former === null ? [current] : [current, former];
}

/**
 * Runs a by-id script call for job `id` of topic `t` in its current partition and, while the
 * partition count changes and the call answered NOT_FOUND, in its former one (placesOf); the last
 * reply, and the partitions it looked in.
 */
export async function inPlaces<R extends readonly unknown[]>(
  ctx: EngineContext,
  t: TopicConfig,
  id: string,
  call: (k: TopicKeys) => ScriptCall<R>,
): Promise<{ reply: R; looked: number[] }> {
  const looked: number[] = [];
  let reply: R | undefined;
  for (const p of placesOf(ctx, t, id)) {
    looked.push(p);
    const answer = await run(ctx.redis, call(topicKeys(p, t.name, ctx.layout)));
    reply = answer;
    if (answer[0] !== REFUSAL.NOT_FOUND) break;
  }
  return { reply: reply as R, looked };
}

/**
 * The bodies kept apart of jobs `ids` (one partition and topic), in order; null for an id that has
 * none. A plain HMGET, no script: a script that replies bodies pays about ten times as much per byte
 * (BENCHMARKS.md, step 7). The scripts that list the ids keep their bodies within SCRIPT_CALL_BYTES.
 */
export async function bodiesApart(
  ctx: EngineContext,
  key: BodiesKey,
  ids: readonly string[],
): Promise<(string | null)[]> {
  if (ids.length === 0) return [];
  const [bodies] = await readSlot(ctx.redis, (pipeline) => pipeline.hmget(key, ...ids));
  return bodies as (string | null)[];
}

/**
 * Views a listing script replied (one partition and topic), each with its body: the inline one, or
 * the one kept apart (one HMGET for all). A body read as null: the job left since the script
 * listed it (purged, or changed and its body moved): the caller passes it over.
 */
export async function viewsWithBodies(
  ctx: EngineContext,
  key: BodiesKey,
  views: readonly JobView[],
): Promise<{ view: JobView; body: string | null }[]> {
  const apart = views.filter((view) => view[12] === null).map((view) => view[0]);
  const read = new Map(apart.map((id, i) => [id, i]));
  const bodies = await bodiesApart(ctx, key, apart);
  return views.map((view) => ({ view, body: view[12] ?? bodies[read.get(view[0])!] ?? null }));
}

/** Counts per state and the next due time of a topic, summed over partitions (plain reads, no script). */
export async function topicStats(ctx: EngineContext, topic: string): Promise<TopicStats> {
  const stats: TopicStats = {
    topic,
    flow: Boolean(ctx.config.topics.get(topic)?.flow),
    delayed: 0,
    ready: 0,
    running: 0,
    dead: 0,
    expired: 0,
    nextDueAt: null,
    paused: false,
  };
  const former = ctx.layout.former > 0 && !ctx.config.topics.get(topic)?.flow ? { jobs: 0, schedules: 0 } : null;
  let next: number | null = null;
  await forEachPartition(ctx.layout.partitionsOf(ctx.config.topics.get(topic) ?? topic), async (p) => {
    const k = topicKeys(p, topic, ctx.layout);
    const f = flowKeys(k.jobs);
    const [delayed, listed, running, dead, head, paused, lanes, fields] = (await readSlot(ctx.redis, (pipeline) =>
      pipeline
        .zcard(k.delayed)
        .llen(k.ready)
        .zcard(k.running)
        .zcard(k.dead)
        .zrange(k.delayed, 0, 0, 'WITHSCORES')
        .hexists(k.jobs, PAUSED_FIELD)
        .hget(f.state, READY_FIELD)
        .hmget(k.jobs, EXPIRED_FIELD, PRIO_COUNT_FIELD),
    )) as [number, number, number, number, string[], number, string | null, (string | null)[]];
    const [expired, prioritized] = fields.map(Number) as [number, number];
    // a flow topic's ready ids are in its keys' lanes; prioritized ones in a zset, the ready list holding its mark
    const ready = listed + prioritized - (prioritized > 0 ? 1 : 0);
    if (former && p >= ctx.layout.count) {
      const [done, schedules] = (await readSlot(ctx.redis, (pipeline) =>
        pipeline.zcard(k.done).zcard(scheduleKeys(p, topic, ctx.layout).ids),
      )) as [number, number];
      former.jobs += delayed + ready + running + dead + done;
      former.schedules += schedules;
    }
    stats.delayed += delayed;
    stats.ready += ready + Number(lanes ?? 0);
    if (paused === 1) stats.paused = true;
    stats.running += running;
    stats.dead += dead;
    stats.expired += expired;
    if (head[1] !== undefined && (next === null || Number(head[1]) < next)) next = Number(head[1]);
  });
  stats.nextDueAt = isoOrNull(next);
  return former ? { ...stats, former } : stats;
}

/**
 * Whether topic `t` may have jobs a claim would take now: not paused, under its concurrency, and
 * with ready ids (a flow topic: keys in its ring, so keys at their cap, held or paused do not count).
 * Plain reads; advisory (the claim decides).
 */
export async function claimable(ctx: EngineContext, t: TopicConfig): Promise<boolean> {
  const counts = await forEachPartition(ctx.layout.partitionsOf(t), async (p) => {
    const k = topicKeys(p, t.name, ctx.layout);
    const ready = t.flow ? flowKeys(k.jobs).ring : k.ready;
    return (await readSlot(ctx.redis, (pipeline) =>
      pipeline.llen(ready).zcard(k.running).hexists(k.jobs, PAUSED_FIELD),
    )) as [number, number, number];
  });
  const running = counts.reduce((sum, [, r]) => sum + r, 0);
  return running < t.concurrency && counts.some(([ready, , paused]) => ready > 0 && paused === 0);
}

/** The engine's reads of one job and of a topic's counts (Engine in ./engine.ts lists them). */
export const readOps = {
  /** The job, or null when there is none (or it was purged after its retention). */
  get(this: object, topic: string, id: string): Promise<Job | null> {
    const ctx = contextOf(this);
    return getJob(ctx, topicOf(ctx, topic), id);
  },

  /**
   * Whether topic `topic` may have jobs a claim would take now: not paused, under its concurrency, ready ids (a flow
   * topic: keys in turn). Advisory.
   */
  claimable(this: object, topic: string): Promise<boolean> {
    const ctx = contextOf(this);
    return claimable(ctx, topicOf(ctx, topic));
  },

  /** Counts per state and the next due time of a topic (plain reads). */
  counts(this: object, topic: string): Promise<TopicStats> {
    const ctx = contextOf(this);
    return topicStats(ctx, topicOf(ctx, topic).name);
  },
};
