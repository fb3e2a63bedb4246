/** Dead letters: list them a page at a time, and move them back to delayed. */
import { ID_PATTERN, type TopicConfig } from '../core/queue-config';
import { topicKeys } from './keys';
import { SCRIPT_CALL_BYTES, DEAD_PAGE, REDRIVE_COUNT } from '../core/limits';
import { run } from './script-runner';
import { contextOf, topicOf, type EngineContext } from './context';
import { toDeadJob, type DeadJob, type Wake } from './jobs';
import { listByScore } from './lists';
import { atLeastOne, groupBy } from './partitions';
import * as script from './scripts';
import { settle } from './durable';
import { wakeFor } from './coordination';

/**
 * Where a page of dead jobs resumes: after the job `id` that died at `diedAt` (epoch ms), in the
 * order (diedAt, id bytewise) every dead zset keeps.
 */
export interface DeadCursor {
  diedAt: number;
  id: string;
}

const CURSOR = /^(\d{1,16}):(.*)$/s;

/** The opaque `next` string of a cursor: base64url (URL-safe, no padding) of `<diedAt>:<id>`. */
export function encodeDeadCursor(cursor: DeadCursor): string {
  return Buffer.from(`${cursor.diedAt}:${cursor.id}`).toString('base64url');
}

/** The cursor a `next` string stands for; null when it is not one. */
export function decodeDeadCursor(text: string): DeadCursor | null {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(text)) return null; // 194 chars hold a 16-digit ms and a 128-char id
  const match = CURSOR.exec(Buffer.from(text, 'base64url').toString('latin1'));
  if (!match || !ID_PATTERN.test(match[2]!) || !Number.isSafeInteger(Number(match[1]))) return null;
  return { diedAt: Number(match[1]), id: match[2]! };
}

/**
 * Dead jobs of topic `t`, oldest first (ties by id), at most `limit`, after the cursor `after`, and
 * at most SCRIPT_CALL_BYTES of bodies (one job always; a page may then hold fewer than `limit`).
 * `next` is the cursor after the last job of the page, or null when no job is left after it.
 */
export async function listDeadJobs(
  ctx: EngineContext,
  t: TopicConfig,
  page: { limit: number; after?: DeadCursor },
): Promise<{ jobs: DeadJob[]; next: DeadCursor | null }> {
  const after = page.after ? { score: page.after.diedAt, id: page.after.id } : undefined;
  const { jobs, next } = await listByScore(ctx, t, (k) => k.dead, { limit: page.limit, ...(after ? { after } : {}) });
  return {
    jobs: jobs.map(({ entry, body }) => toDeadJob(t, entry, body)),
    next: next && { diedAt: next.score, id: next.id },
  };
}

/**
 * Moves dead jobs of topic `t` back to delayed, due now: the given ids, or the `count` oldest.
 * `changed`: the partitions where it redrove jobs; `looked`: those where it looked and redrove
 * none (its answer stands on their state too).
 */
export async function redriveJobs(
  ctx: EngineContext,
  t: TopicConfig,
  which: { ids: readonly string[] } | { count: number },
  by = '',
): Promise<{ redriven: number; changed: number[]; looked: number[] } & Wake> {
  let redriven = 0;
  let wake = false;
  const changed: number[] = [];
  const looked: number[] = [];
  /** One partition: calls again while a call stops at its byte budget. */
  const redrive = async (partition: number, args: { ids: readonly string[] } | { count: number }): Promise<void> => {
    const k = topicKeys(partition, t.name, ctx.layout);
    for (let rest = args; ;) {
      const reply: script.RedriveReply = await run(
        ctx.redis,
        script.redriveJobs([k.dead, k.delayed, k.jobs], {
          clock: ctx.clock(),
          by,
          maxBytes: SCRIPT_CALL_BYTES,
          ...rest,
        }),
      );
      const [n, headChanged, looked, stopped] = reply;
      redriven += n;
      if (headChanged === 1) wake = true;
      if (stopped !== 1) return;
      if ('ids' in rest) rest = { ids: rest.ids.slice(atLeastOne(looked, 'redriveJobs')) };
      else if ('count' in which && which.count > redriven) rest = { count: which.count - redriven };
      else return;
    }
  };
  const visit = async (partition: number, args: { ids: readonly string[] } | { count: number }): Promise<void> => {
    const before = redriven;
    await redrive(partition, args);
    (redriven > before ? changed : looked).push(partition);
  };
  if ('ids' in which) {
    const byPartition = groupBy(which.ids, (id) => ctx.layout.placeOf(t, id));
    for (const [partition, ids] of byPartition) await visit(partition, { ids });
    // while the partition count changes, a dead job may be in its former partition: looked for
    // there too (a job is in one of the two; the other call finds nothing of it)
    if (ctx.layout.former > 0 && !t.flow)
      for (const [partition, ids] of groupBy(which.ids, (id) => ctx.layout.formerPlaceOf(t, id)!))
        await visit(partition, { ids });
  } else {
    // the oldest first of partition 0, then of 1, ...: dead jobs of one partition are ordered, not across partitions
    for (const partition of ctx.layout.partitionsOf(t)) {
      const left = which.count - redriven;
      if (left <= 0) break;
      await visit(partition, { count: left });
    }
  }
  return { redriven, wake, changed, looked };
}

/** The engine's dead-letter operations (Engine in ./engine.ts lists them). */
export const deadOps = {
  /** Moves dead jobs back to delayed, due now: the given ids, or the `count` oldest. */
  async redrive(
    this: object,
    topic: string,
    which: { ids: readonly string[] } | { count: number } = { count: REDRIVE_COUNT.default },
    by = '',
  ): Promise<{ redriven: number } & Wake> {
    const ctx = contextOf(this);
    const { redriven, wake, changed, looked } = await redriveJobs(ctx, topicOf(ctx, topic), which, by);
    await settle(ctx, changed, looked); // "redriven: 0" stands on what the primary had
    if (wake) await wakeFor(ctx, 'now');
    return { redriven, wake };
  },

  /** A page of a topic's dead jobs, oldest first, after `after`. */
  listDead(
    this: object,
    topic: string,
    page: { limit?: number; after?: DeadCursor } = {},
  ): Promise<{ jobs: DeadJob[]; next: (DeadCursor & { id: string }) | null }> {
    const ctx = contextOf(this);
    return listDeadJobs(ctx, topicOf(ctx, topic), { limit: DEAD_PAGE.default, ...page });
  },
};
