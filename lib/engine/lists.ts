/**
 * Listings of a topic's jobs across partitions: by score from the delayed, running or dead zsets
 * (due time, TTR deadline, time of death), or in queue order from the ready lists. A page costs
 * the same whatever the zsets hold: each partition gives at most `limit` jobs after the cursor
 * (O(log N + limit) in Redis), and the pages are merged here.
 */
import { fnv1a } from '../core/hash';
import type { TopicConfig } from '../core/queue-config';
import { topicKeys, type DeadKey, type DelayedKey, type RunningKey, type TopicKeys } from './keys';
import { SCRIPT_CALL_BYTES, JOBS_PAGE } from '../core/limits';
import { run } from './script-runner';
import { contextOf, topicOf, type EngineContext } from './context';
import { toJob, type Job } from './jobs';
import { forEachPartition } from './partitions';
import { viewsWithBodies } from './read';
import * as script from './scripts';
import type { ScoredEntry } from './scripts';
import type { JobView } from './shapes';

/**
 * Where a page by score resumes: after job `id` scored `score`, in (score, id bytewise) order; `id` null resumes after
 * every job scored `score`.
 */
export interface ScoreCursor {
  score: number;
  id: string | null;
}

/** A job listed with its score and its body (JSON text). */
export interface Scored {
  entry: ScoredEntry;
  body: string;
}

/** Sorts as the zsets do: by score, then by id bytewise (ids are ASCII, so UTF-16 order is byte order). */
function byScore(a: { entry: ScoredEntry }, b: { entry: ScoredEntry }): number {
  if (a.entry[0] !== b.entry[0]) return a.entry[0] - b.entry[0];
  const x = a.entry[1][0];
  const y = b.entry[1][0];
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Takes the first items of a merged page while their bodies stay within SCRIPT_CALL_BYTES (the first always). */
function withinBytes<T>(items: readonly T[], limit: number, body: (item: T) => string | null): number {
  let bytes = 0;
  let taken = 0;
  while (taken < Math.min(limit, items.length)) {
    bytes += Buffer.byteLength(body(items[taken]!) ?? '');
    if (taken > 0 && bytes > SCRIPT_CALL_BYTES) break;
    taken += 1;
  }
  return taken;
}

/**
 * Jobs of topic `t` in the zset `zset` picks (delayed, running or dead) of every partition, by
 * (score, id), at most `limit`, after `after` and scored at most `to`, and at most
 * SCRIPT_CALL_BYTES of bodies (one job always; a page may then hold fewer than `limit`). `next`
 * is the cursor after the last job of the page, or null when no job is left after it.
 */
export async function listByScore(
  ctx: EngineContext,
  t: TopicConfig,
  zset: (k: TopicKeys) => DelayedKey | RunningKey | DeadKey,
  page: { limit: number; after?: ScoreCursor; to?: number },
): Promise<{ jobs: Scored[]; next: (ScoreCursor & { id: string }) | null }> {
  const { limit } = page;
  const pages = await forEachPartition(ctx.layout.partitionsOf(t), async (p) => {
    const k = topicKeys(p, t.name, ctx.layout);
    const [stopped, ...entries] = await run(
      ctx.redis,
      script.listJobs([zset(k), k.jobs, k.bodies, k.delayed], { ...page, maxBytes: SCRIPT_CALL_BYTES }),
    );
    const bodies = await viewsWithBodies(
      ctx,
      k.bodies,
      entries.map(([, view]) => view),
    );
    // a body read as null: the job left since the script listed it (purged, or changed): it
    // keeps its place for the cursor, and is not shown
    const listed = entries.map((entry, i) => ({ entry, body: bodies[i]!.body }));
    return { stopped: stopped === 1, listed };
  });
  // each partition gave its first `limit` after the cursor, or fewer when its byte budget stopped
  // it: merged, the first `limit` of all that sort before the earliest such stop are among them
  let merged = pages.flatMap((p) => p.listed).sort(byScore);
  const stop = pages
    .filter((p) => p.stopped && p.listed.length > 0)
    .map((p) => p.listed.at(-1)!)
    .sort(byScore)[0];
  if (stop) merged = merged.filter((e) => byScore(e, stop) <= 0);
  // and all partitions' bodies together within one call's budget (the first job always)
  const taken = withinBytes(merged, limit, (e) => e.body);
  const jobs = merged.slice(0, taken).flatMap(({ entry, body }) => (body === null ? [] : [{ entry, body }]));
  const last = merged[taken - 1]?.entry;
  const cut = stop !== undefined || taken < Math.min(limit, merged.length);
  const more = cut || merged.length > limit || (taken === limit && pages.some((p) => p.listed.length === limit));
  return { jobs, next: more && last ? { score: last[0], id: last[1][0] } : null };
}

/**
 * Where a page of ready jobs resumes, a place in each partition's claim order that claims do not move: `P<score>` in
 * its prioritized jobs above 0, a number (a place in its ready list, counted over the list's whole history, so claims
 * taking ids off the head do not move the places of the ids after them), `N<score>` in those below 0 (`P` or `N`
 * alone: the first), '' the start. lua/listReady-4.lua reads them.
 */
export type ReadyCursor = (number | string)[];

/** A place lua/listReady-4.lua replied: a number when it is one in the ready list. */
function readyPlace(text: string): number | string {
  return /^-?\d+$/.test(text) ? Number(text) : text;
}

/** Where a partition's listed job stands in claim order: 0 above 0, 1 the ready list, 2 below 0. */
function partOf(place: number | string): number {
  return typeof place === 'number' ? 1 : place.startsWith('P') ? 0 : 2;
}

interface ReadyListed {
  view: JobView;
  body: string | null;
  after: number | string;
}

/** Sorts listed jobs of several partitions as claims take them: by part, priority (highest first), due time. */
function byClaimOrder(a: ReadyListed, b: ReadyListed): number {
  return partOf(a.after) - partOf(b.after) || b.view[20] - a.view[20] || a.view[2] - b.view[2];
}

/**
 * Ready jobs of topic `t` due within [from, to], at most `limit`: from each partition in claim order (its prioritized
 * jobs above 0, highest first, then its ready list, then those below 0), merged by part, priority and due time.
 * Paging on while claims take jobs passes over no job that stayed ready and lists none twice: a page resumes right
 * after the last job it showed (a job that went running and came back in between is not shown again).
 */
export async function listReady(
  ctx: EngineContext,
  t: TopicConfig,
  page: { limit: number; from?: number; to?: number; cursor?: ReadyCursor },
): Promise<{ jobs: Job[]; next: ReadyCursor | null }> {
  const pages = await forEachPartition(ctx.layout.partitionsOf(t), async (p) => {
    const k = topicKeys(p, t.name, ctx.layout);
    const start = page.cursor?.[p] ?? '';
    const call = script.listReady([k.ready, k.jobs, k.bodies, k.delayed], {
      start,
      limit: page.limit,
      maxBytes: SCRIPT_CALL_BYTES,
      ...(page.from !== undefined ? { from: page.from } : {}),
      ...(page.to !== undefined ? { to: page.to } : {}),
    });
    const [more, next, ...pairs] = await run(ctx.redis, call);
    const views = pairs.filter((_, i) => i % 2 === 0) as JobView[];
    const afters = pairs.filter((_, i) => i % 2 === 1) as string[];
    const bodies = await viewsWithBodies(ctx, k.bodies, views);
    const listed = bodies.map((b, i): ReadyListed => ({ ...b, after: readyPlace(afters[i]!) }));
    return { more: more === 1, start, next: readyPlace(next), listed };
  });
  // merge in claim order, each partition's jobs staying in its own order
  const heads = pages.map(() => 0);
  const out: { p: number; body: string | null; job: Job | null }[] = [];
  while (out.length < page.limit) {
    let best = -1;
    pages.forEach((pg, p) => {
      const next = pg.listed[heads[p]!];
      if (next && (best < 0 || byClaimOrder(next, pages[best]!.listed[heads[best]!]!) < 0)) best = p;
    });
    if (best < 0) break;
    const { view, body } = pages[best]!.listed[heads[best]!]!;
    heads[best]! += 1;
    out.push({ p: best, body, job: body === null ? null : toJob(t, view, body) });
  }
  const taken = withinBytes(out, page.limit, (o) => o.body);
  const shown = out.slice(0, taken);
  // a partition whose listed jobs were all shown moves past every id it looked at; one cut short
  // moves to right after the last job it showed (the ids the script passed over after it are looked
  // at again): never past a job not shown, never back before one shown
  const next = pages.map((pg, p) => {
    const used = shown.filter((o) => o.p === p).length;
    return used === pg.listed.length ? pg.next : used > 0 ? pg.listed[used - 1]!.after : pg.start;
  });
  const more = pages.some((pg, p) => shown.filter((o) => o.p === p).length < pg.listed.length || pg.more);
  return { jobs: shown.flatMap((o) => (o.job ? [o.job] : [])), next: more ? next : null };
}

/** The states a listing shows; each but ready is a zset ordered by a time. */
export type ListState = 'delayed' | 'ready' | 'running' | 'dead';

/** Where a page of GET /topics/{topic}/jobs resumes: the state's own kind of cursor. */
export type JobsCursor =
  | { state: 'delayed' | 'running' | 'dead'; after: ScoreCursor & { id: string } }
  | { state: 'ready'; positions: ReadyCursor };

const ZSET_OF = {
  delayed: (k: TopicKeys) => k.delayed,
  running: (k: TopicKeys) => k.running,
  dead: (k: TopicKeys) => k.dead,
} as const;

/** The check a jobs cursor carries: 8 hex digits of FNV-1a over its topic and its text. */
function cursorTag(topic: string, text: string): string {
  return fnv1a(`${topic}\n${text}`).toString(16).padStart(8, '0');
}

/**
 * The opaque `next` string of a page of `topic`'s jobs: base64url of `<state>:<score>:<id>`, or
 * `ready:<position>,<position>,...`, then `:<tag>` tying it to the topic and to what a page wrote.
 */
export function encodeJobsCursor(c: JobsCursor, topic: string): string {
  const text = c.state === 'ready' ? `ready:${c.positions.join(',')}` : `${c.state}:${c.after.score}:${c.after.id}`;
  return Buffer.from(`${text}:${cursorTag(topic, text)}`).toString('base64url');
}

/**
 * The cursor a `next` string stands for when a page of `topic`'s jobs in `state` gave it (with this deployment's
 * partitions); else null.
 */
export function decodeJobsCursor(text: string, state: ListState, partitions: number, topic: string): JobsCursor | null {
  if (!/^[A-Za-z0-9_-]{1,12000}$/.test(text)) return null;
  const tagged = /^(.*):([0-9a-f]{8})$/s.exec(Buffer.from(text, 'base64url').toString('latin1'));
  if (!tagged || tagged[2] !== cursorTag(topic, tagged[1]!)) return null;
  const value = tagged[1]!;
  if (state === 'ready') {
    const match = /^ready:((?:[PN]?-?\d{0,16})(?:,[PN]?-?\d{0,16})*)$/.exec(value);
    const positions = match ? match[1]!.split(',').map(readyPlace) : [];
    return positions.length === partitions ? { state, positions } : null;
  }
  const match = /^(delayed|running|dead):(\d{1,16}):([A-Za-z0-9._:-]{1,128})$/.exec(value);
  if (!match || match[1] !== state || !Number.isSafeInteger(Number(match[2]))) return null;
  return { state, after: { score: Number(match[2]), id: match[3]! } };
}

/**
 * A page of topic `t`'s jobs in `state`, due (or timing out, or dead) within [from, to], at most
 * `limit`, after `cursor`; `next` is null when no job is left after the page.
 */
export async function listJobs(
  ctx: EngineContext,
  t: TopicConfig,
  state: ListState,
  page: { limit: number; from?: number; to?: number; cursor?: JobsCursor },
): Promise<{ jobs: Job[]; next: JobsCursor | null }> {
  const { limit, from, to, cursor } = page;
  const bounds = { ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}) };
  if (state === 'ready') {
    const positions = cursor?.state === 'ready' ? cursor.positions : undefined;
    const result = await listReady(ctx, t, { limit, ...bounds, ...(positions ? { cursor: positions } : {}) });
    return { jobs: result.jobs, next: result.next && { state, positions: result.next } };
  }
  // no cursor: from `from` on (the jobs scored after from - 1 ms: scores are whole ms)
  const after =
    cursor && cursor.state !== 'ready' ? cursor.after : from !== undefined ? { score: from - 1, id: null } : undefined;
  const result = await listByScore(ctx, t, ZSET_OF[state], {
    limit,
    ...(after ? { after } : {}),
    ...(to !== undefined ? { to } : {}),
  });
  return {
    jobs: result.jobs.map(({ entry, body }) => toJob(t, entry[1], body)),
    next: result.next && { state, after: result.next },
  };
}

/** The engine's listing of a topic's jobs by state (Engine in ./engine.ts lists it). */
export const listOps = {
  listJobs(
    this: object,
    topic: string,
    state: ListState,
    page: { limit?: number; from?: number; to?: number; cursor?: JobsCursor } = {},
  ) {
    const ctx = contextOf(this);
    return listJobs(ctx, topicOf(ctx, topic), state, { limit: JOBS_PAGE.default, ...page });
  },
};
