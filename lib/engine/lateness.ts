/**
 * Lateness you can see: how late each attempt started (its start on the Redis clock minus its due
 * time), kept per topic for the last hour in a small hash per partition (lua/includes/lateness.lua:
 * a start records its lateness in its job's partition, so on a cluster every shard takes its share),
 * and read back, merged, as the last 5 minutes' p50 / p99 / max and a per-minute series.
 */
import type { TopicConfig } from '../core/queue-config';
import { flowKeys, latenessKey, PRIO_MARK, prioKey, topicKeys, type JobsKey } from './keys';
import { run } from './script-runner';
import { contextOf, topicOf, serverTime, type EngineContext } from './context';
import { forEachPartition } from './partitions';
import { getJob, topicStats } from './read';
import * as script from './scripts';
import { type TopicStats } from './jobs';

/** The last five minutes (this one included) of a topic's starts. */
export interface LatenessWindow {
  windowSeconds: number;
  /** Attempts started in the window. */
  started: number;
  /**
   * Percentiles from a histogram with four bins per doubling: the bin's upper bound (at most 19 % above the true value)
   * or the exact max if lower; null with no start.
   */
  p50Ms: number | null;
  p99Ms: number | null;
  /** Exact. */
  maxMs: number | null;
}

/** One minute of the last hour, oldest first. */
export interface LatenessMinute {
  /** Start of the minute (ISO 8601). */
  minute: string;
  started: number;
  p99Ms: number | null;
}

export interface Minute {
  minute: number;
  n: number;
  max: number;
  bins: Map<number, number>;
}

/** The upper bound (ms) of histogram bin `bin` (values with floor(4 * log2(ms + 1)) = bin). */
export function binUpperMs(bin: number): number {
  return Math.max(0, Math.ceil(2 ** ((bin + 1) / 4) - 1));
}

/**
 * The minutes of one stats hash (lua/includes/lateness.lua): a field `m<slot>` per minute holding
 * `<minute>|<max ms>`, and `m<slot>/<bin>` per histogram bin holding its count (the minute's count is
 * their sum). Fields that are not these are passed over (never thrown on: stats are advisory).
 */
export function parseMinutes(fields: Readonly<Record<string, string>>): Minute[] {
  const minutes = new Map<string, Minute>();
  const bins = new Map<string, Map<number, number>>();
  for (const [name, value] of Object.entries(fields)) {
    const bin = /^m(\d+)\/(\d+)$/.exec(name);
    if (bin) {
      const of = bins.get(bin[1]!) ?? new Map<number, number>();
      of.set(Number(bin[2]), Number(value));
      bins.set(bin[1]!, of);
      continue;
    }
    const slot = /^m(\d+)$/.exec(name)?.[1];
    const head = /^(\d+)\|(\d+)$/.exec(value);
    if (slot !== undefined && head)
      minutes.set(slot, { minute: Number(head[1]), n: 0, max: Number(head[2]), bins: new Map() });
  }
  for (const [slot, minute] of minutes) {
    minute.bins = bins.get(slot) ?? new Map();
    for (const count of minute.bins.values()) minute.n += count;
  }
  return [...minutes.values()];
}

/** The p-th percentile (0 < p <= 100) of merged bins, as a bin's upper bound; null when empty. */
export function percentileMs(bins: Map<number, number>, p: number): number | null {
  const total = [...bins.values()].reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = Math.ceil((p / 100) * total);
  let seen = 0;
  for (const bin of [...bins.keys()].sort((a, b) => a - b)) {
    seen += bins.get(bin)!;
    if (seen >= rank) return binUpperMs(bin);
  }
  return null;
}

/** A bin bound never above the exact max: no percentile is above the largest value. */
function capped(bound: number | null, maxMs: number | null): number | null {
  return bound === null || maxMs === null ? bound : Math.min(bound, maxMs);
}

/** `a` and `b` (of the same minute) as one. */
function together(a: Minute, b: Minute): Minute {
  return { minute: a.minute, n: a.n + b.n, max: Math.max(a.max, b.max), bins: merge([a, b]) };
}

function merge(minutes: Minute[]): Map<number, number> {
  const bins = new Map<number, number>();
  for (const m of minutes) for (const [b, c] of m.bins) bins.set(b, (bins.get(b) ?? 0) + c);
  return bins;
}

/** A topic's lateness over the last 5 minutes and per minute over the last hour, at `nowMs` (Redis clock). */
export async function latenessStats(
  ctx: EngineContext,
  topic: string,
  nowMs: number,
): Promise<{ window: LatenessWindow; lastHour: LatenessMinute[] }> {
  const hashes = await forEachPartition(ctx.layout.partitionsOf(ctx.config.topics.get(topic) ?? topic), (p) =>
    ctx.redis.hgetall(latenessKey(p, topic, ctx.layout)),
  );
  const current = Math.floor(nowMs / 60_000);
  const byMinute = new Map<number, Minute>();
  for (const m of hashes.flatMap(parseMinutes)) {
    if (m.minute <= current - 60 || m.minute > current) continue;
    const seen = byMinute.get(m.minute);
    byMinute.set(m.minute, seen ? together(seen, m) : m);
  }
  const recent = [...byMinute.values()].filter((m) => m.minute > current - 5);
  const bins = merge(recent);
  const started = recent.reduce((a, m) => a + m.n, 0);
  const maxMs = started > 0 ? Math.max(...recent.map((m) => m.max)) : null;
  const window: LatenessWindow = {
    windowSeconds: 300,
    started,
    p50Ms: capped(percentileMs(bins, 50), maxMs),
    p99Ms: capped(percentileMs(bins, 99), maxMs),
    maxMs,
  };
  const lastHour: LatenessMinute[] = [];
  for (let minute = current - 59; minute <= current; minute++) {
    const m = byMinute.get(minute);
    lastHour.push({
      minute: new Date(minute * 60_000).toISOString(),
      started: m?.n ?? 0,
      p99Ms: m ? capped(percentileMs(m.bins, 99), m.max) : null,
    });
  }
  return { window, lastHour };
}

/**
 * A flow topic's ready ids first in turn: the first of each of the first 5 keys in its ring (keys at their cap, held or
 * paused are not in it).
 */
async function laneHeads(ctx: EngineContext, jobs: JobsKey): Promise<string[]> {
  const keys = await ctx.redis.lrange(flowKeys(jobs).ring, 0, 4);
  const views = await Promise.all(
    keys.map((key) => run(ctx.redis, script.getFlowKey([jobs], { clock: ctx.clock(), key }))),
  );
  return views.flatMap((view) => (view[9] === null ? [] : [view[9]]));
}

/**
 * How long the oldest ready job of topic `t` has been due, at `nowMs` (Redis clock): the first
 * ready job among the first 5 ids at the head of each partition's ready list (cancelled ids stay
 * there until a claim skips them); on a flow topic, among the heads of the lanes of the first 5
 * keys in turn. Null when none is ready.
 */
export async function oldestReadyAgeMs(ctx: EngineContext, t: TopicConfig, nowMs: number): Promise<number | null> {
  const ages = await forEachPartition(ctx.layout.partitionsOf(t), async (p) => {
    const k = topicKeys(p, t.name, ctx.layout);
    const heads = t.flow ? await laneHeads(ctx, k.jobs) : await ctx.redis.lrange(k.ready, 0, 4);
    // the mark of prioritized ready ids: the first 5 of them too (lua/includes/priority.lua)
    if (!t.flow && heads.includes(PRIO_MARK)) heads.push(...(await ctx.redis.zrange(prioKey(k.jobs), 0, 4)));
    for (const id of heads) {
      if (id === PRIO_MARK) continue;
      const job = await getJob(ctx, t, id);
      if (job?.state === 'ready') return Math.max(0, nowMs - Date.parse(job.runAt));
    }
    return null;
  });
  const known = ages.filter((a): a is number => a !== null);
  return known.length > 0 ? Math.max(...known) : null;
}

/** A topic's stats with its lateness, as GET /topics shows them. */
export type TopicStatsView = TopicStats & {
  lateness: LatenessWindow;
  oldestReadyAgeMs: number | null;
  lastHour: LatenessMinute[];
};

/** Counts, lateness over the last 5 minutes and per minute over the last hour, and the oldest ready job's age. */
async function statsOf(ctx: EngineContext, topic: string, now: number): Promise<TopicStatsView> {
  const t = topicOf(ctx, topic);
  const [counts, lateness, oldest] = await Promise.all([
    topicStats(ctx, t.name),
    latenessStats(ctx, t.name, now),
    oldestReadyAgeMs(ctx, t, now),
  ]);
  return { ...counts, lateness: lateness.window, oldestReadyAgeMs: oldest, lastHour: lateness.lastHour };
}

/** The engine's topic stats (Engine in ./engine.ts lists them). */
export const statsOps = {
  /** Counts, lateness over the last 5 minutes and per minute over the last hour, and the oldest ready job's age. */
  async stats(this: object, topic: string): Promise<TopicStatsView> {
    const ctx = contextOf(this);
    return statsOf(ctx, topic, await serverTime(ctx));
  },

  /** Stats of every configured topic, on one clock read. */
  async statsAll(this: object): Promise<TopicStatsView[]> {
    const ctx = contextOf(this);
    const now = await serverTime(ctx);
    return Promise.all([...ctx.config.topics.keys()].map((t) => statsOf(ctx, t, now)));
  },
};
