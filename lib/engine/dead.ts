/** Dead letters: list them a page at a time, and move them back to delayed. */
import type { TopicConfig } from '../config';
import { partitionOf, topicKeys } from '../keys';
import { run } from '../scripts';
import type { EngineContext } from './context';
import { toDeadJob, type DeadJob, type Wake } from './jobs';
import { forEachPartition, groupBy, partitionsInOrder } from './partitions';
import * as script from './scripts';

/**
 * Dead jobs of topic `t`, oldest first, at most `limit`, after the cursor `after` (the `diedAt`
 * epoch ms of the last job of the previous page). `next` is the cursor for the next page.
 */
export async function listDeadJobs(ctx: EngineContext, t: TopicConfig, page: { limit: number; after?: number }): Promise<{ jobs: DeadJob[]; next: number | null }> {
  const { limit } = page;
  const pages = await forEachPartition(ctx.config.partitions, (p) => {
    const k = topicKeys(p, t.name);
    return run(ctx.redis, script.listDead([k.dead, k.jobs], page));
  });
  // each partition gave its oldest `limit`: merged, the oldest `limit` of all are among them
  const entries = pages.flat().sort((a, b) => a[0] - b[0]);
  const jobs = entries.slice(0, limit).map((entry) => toDeadJob(t, entry));
  const last = entries[limit - 1];
  const more = entries.length > limit || (last !== undefined && pages.some((p) => p.length === limit));
  return { jobs, next: more ? last![0] : null };
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
