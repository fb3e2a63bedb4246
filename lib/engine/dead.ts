/** Dead letters: list them a page at a time, and move them back to delayed. */
import { ID_PATTERN, type TopicConfig } from '../config';
import { partitionOf, topicKeys } from '../keys';
import { run } from '../scripts';
import type { EngineContext } from './context';
import { toDeadJob, type DeadJob, type Wake } from './jobs';
import { forEachPartition, groupBy, partitionsInOrder } from './partitions';
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
 * Dead jobs of topic `t`, oldest first (ties by id), at most `limit`, after the cursor `after`.
 * `next` is the cursor after the last job of the page, or null when no job is left after it.
 */
export async function listDeadJobs(ctx: EngineContext, t: TopicConfig, page: { limit: number; after?: DeadCursor }): Promise<{ jobs: DeadJob[]; next: (DeadCursor & { id: string }) | null }> {
  const { limit } = page;
  const pages = await forEachPartition(ctx.config.partitions, (p) => {
    const k = topicKeys(p, t.name);
    return run(ctx.redis, script.listDead([k.dead, k.jobs], page));
  });
  // each partition gave its first `limit` after the cursor: merged, the first `limit` of all are among them
  const entries = pages.flat().sort(byDeath);
  const jobs = entries.slice(0, limit).map((entry) => toDeadJob(t, entry));
  const last = entries[limit - 1];
  const more = entries.length > limit || (last !== undefined && pages.some((p) => p.length === limit));
  return { jobs, next: more ? { diedAt: last![0], id: last![1][0] } : null };
}

/** Moves dead jobs of topic `t` back to delayed, due now: the given ids, or the `count` oldest. */
export async function redriveJobs(ctx: EngineContext, t: TopicConfig, which: { ids: readonly string[] } | { count: number }): Promise<{ redriven: number } & Wake> {
  let redriven = 0;
  let wake = false;
  const redrive = async (partition: number, args: { ids: readonly string[] } | { count: number }) => {
    const k = topicKeys(partition, t.name);
    const [n, headChanged] = await run(ctx.redis, script.redriveJobs([k.dead, k.delayed, k.jobs], { clock: ctx.clock(), ...args }));
    redriven += n;
    if (headChanged === 1) wake = true;
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
