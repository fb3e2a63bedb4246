/** Dead letters: list them a page at a time, and move them back to delayed. */
import { ID_PATTERN, type TopicConfig } from '../config';
import { partitionOf, topicKeys } from '../keys';
import { SCRIPT_CALL_BYTES } from '../limits';
import { run } from '../scripts';
import type { EngineContext } from './context';
import { toDeadJob, type DeadJob, type Wake } from './jobs';
import { atLeastOne, forEachPartition, groupBy, partitionsInOrder } from './partitions';
import { bodiesApart } from './read';
import * as script from './scripts';
import type { DeadEntry } from './scripts';

/**
 * Where a page of dead jobs resumes: after the job `id` that died at `diedAt` (epoch ms), in the
 * order (diedAt, id bytewise) every dead zset keeps. `id` null resumes after every job that died
 * at `diedAt` (the bare-timestamp cursor of earlier versions, still accepted).
 */
export interface DeadCursor {
  diedAt: number;
  id: string | null;
}

const CURSOR = /^(\d{1,16}):(.*)$/s;
const LEGACY_CURSOR = /^\d{1,16}$/; // never an encoded cursor: base64 of a leading digit starts with 'M'

/** The opaque `next` string of a cursor: base64url (URL-safe, no padding) of `<diedAt>:<id>`. */
export function encodeDeadCursor(cursor: DeadCursor & { id: string }): string {
  return Buffer.from(`${cursor.diedAt}:${cursor.id}`).toString('base64url');
}

/** The cursor a `next` string (or a bare epoch ms, from earlier versions) stands for; null when it is neither. */
export function decodeDeadCursor(text: string | number): DeadCursor | null {
  const value = String(text);
  if (LEGACY_CURSOR.test(value)) return safeTime(Number(value), null);
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(value)) return null; // 194 chars hold a 16-digit ms and a 128-char id
  const match = CURSOR.exec(Buffer.from(value, 'base64url').toString('latin1'));
  return match && ID_PATTERN.test(match[2]!) ? safeTime(Number(match[1]), match[2]!) : null;
}

function safeTime(diedAt: number, id: string | null): DeadCursor | null {
  return Number.isSafeInteger(diedAt) ? { diedAt, id } : null;
}

/** Sorts as the dead zsets do: by time of death, then by id bytewise (ids are ASCII, so UTF-16 order is byte order). */
function byDeath(a: DeadEntry, b: DeadEntry): number {
  if (a[0] !== b[0]) return a[0] - b[0];
  const x = a[1][0];
  const y = b[1][0];
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * Dead jobs of topic `t`, oldest first (ties by id), at most `limit`, after the cursor `after`, and
 * at most SCRIPT_CALL_BYTES of bodies (one job always; a page may then hold fewer than `limit`).
 * `next` is the cursor after the last job of the page, or null when no job is left after it.
 */
export async function listDeadJobs(ctx: EngineContext, t: TopicConfig, page: { limit: number; after?: DeadCursor }): Promise<{ jobs: DeadJob[]; next: (DeadCursor & { id: string }) | null }> {
  const { limit } = page;
  const pages = await forEachPartition(ctx.config.partitions, async (p) => {
    const k = topicKeys(p, t.name);
    const [stopped, ...entries] = await run(ctx.redis, script.listDead([k.dead, k.jobs, k.bodies], { ...page, maxBytes: SCRIPT_CALL_BYTES }));
    const apart = entries.filter(([, view]) => view[12] === null).map(([, view]) => view[0]);
    const read = new Map(apart.map((id, i) => [id, i]));
    const bodies = await bodiesApart(ctx, k.bodies, apart);
    // a body read as null: the job left the dead set since the script listed it (purged, or
    // redriven and changed): it keeps its place for the cursor, and is not shown
    const listed = entries.map((entry) => ({ entry, body: entry[1][12] ?? bodies[read.get(entry[1][0])!] ?? null }));
    return { stopped: stopped === 1, listed };
  });
  // each partition gave its first `limit` after the cursor, or fewer when its byte budget stopped
  // it: merged, the first `limit` of all that sort before the earliest such stop are among them
  const byEntry = (a: { entry: DeadEntry }, b: { entry: DeadEntry }) => byDeath(a.entry, b.entry);
  let merged = pages.flatMap((p) => p.listed).sort(byEntry);
  const stops = pages.filter((p) => p.stopped && p.listed.length > 0).map((p) => p.listed.at(-1)!);
  const stop = stops.sort(byEntry)[0];
  if (stop) merged = merged.filter((e) => byEntry(e, stop) <= 0);
  // and all partitions' bodies together within one call's budget (the first job always)
  let bytes = 0;
  let taken = 0;
  while (taken < Math.min(limit, merged.length)) {
    bytes += Buffer.byteLength(merged[taken]!.body ?? '');
    if (taken > 0 && bytes > SCRIPT_CALL_BYTES) break;
    taken += 1;
  }
  const jobs = merged.slice(0, taken).flatMap(({ entry, body }) => (body === null ? [] : [toDeadJob(t, entry, body)]));
  const last = merged[taken - 1]?.entry;
  const cut = stop !== undefined || taken < Math.min(limit, merged.length);
  const more = cut || merged.length > limit || (taken === limit && pages.some((p) => p.listed.length === limit));
  return { jobs, next: more && last ? { diedAt: last[0], id: last[1][0] } : null };
}

/** Moves dead jobs of topic `t` back to delayed, due now: the given ids, or the `count` oldest. */
export async function redriveJobs(ctx: EngineContext, t: TopicConfig, which: { ids: readonly string[] } | { count: number }): Promise<{ redriven: number } & Wake> {
  let redriven = 0;
  let wake = false;
  /** One partition: calls again while a call stops at its byte budget. */
  const redrive = async (partition: number, args: { ids: readonly string[] } | { count: number }): Promise<void> => {
    const k = topicKeys(partition, t.name);
    for (let rest = args; ; ) {
      const reply: script.RedriveReply = await run(ctx.redis, script.redriveJobs([k.dead, k.delayed, k.jobs, k.bodies], { clock: ctx.clock(), maxBytes: SCRIPT_CALL_BYTES, ...rest }));
      const [n, headChanged, looked, stopped] = reply;
      redriven += n;
      if (headChanged === 1) wake = true;
      if (stopped !== 1) return;
      if ('ids' in rest) rest = { ids: rest.ids.slice(atLeastOne(looked, 'redriveJobs')) };
      else if ('count' in which && which.count > redriven) rest = { count: which.count - redriven };
      else return;
    }
  };
  if ('ids' in which) {
    const byPartition = groupBy(which.ids, (id) => partitionOf(t.name, id, ctx.config.partitions));
    for (const [partition, ids] of byPartition) await redrive(partition, { ids });
  } else {
    // the oldest first of partition 0, then of 1, ...: dead jobs of one partition are ordered, not across partitions
    for (const partition of partitionsInOrder(ctx.config.partitions)) {
      const left = which.count - redriven;
      if (left <= 0) break;
      await redrive(partition, { count: left });
    }
  }
  return { redriven, wake };
}
