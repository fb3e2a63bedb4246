/** Consumer-side changes: claim jobs for an attempt, then ack, fail or release them. */
import type { TopicConfig } from '../config';
import { jobKeys, partitionOf, topicKeys } from '../keys';
import { run } from '../scripts';
import type { EngineContext } from './context';
import { toAckOutcome, toClaimed, toFailOutcome, type AckOutcome, type ClaimedJob, type FailOutcome } from './jobs';
import { batchesByPartition, forEachPartition } from './partitions';
import * as script from './scripts';

const RELEASE_BATCH = 500; // jobs per releaseJobs call: 1,000 arguments, well under a millisecond of Redis time

/** Running attempts of topic `t` per partition; empty on a single partition, where the script counts them itself. */
async function runningByPartition(ctx: EngineContext, t: TopicConfig): Promise<number[]> {
  if (ctx.config.partitions === 1) return [];
  return forEachPartition(ctx.config.partitions, (p) => ctx.redis.zcard(topicKeys(p, t.name).running));
}

/**
 * Claims up to `count` ready jobs of topic `t` for one attempt each, keeping its running attempts
 * at most `maxRunning`. Partitions are visited one after another, starting one further each call.
 */
export async function claimJobs(ctx: EngineContext, t: TopicConfig, count: number, maxRunning: number): Promise<ClaimedJob[]> {
  const runningBy = await runningByPartition(ctx, t);
  let running = runningBy.reduce((a, b) => a + b, 0);
  const claimed: ClaimedJob[] = [];
  for (const p of ctx.rotation.order(ctx.config.partitions)) {
    if (claimed.length >= count) break;
    // this partition may fill what the others leave of the cap
    const room = runningBy.length > 0 ? maxRunning - (running - runningBy[p]!) : maxRunning;
    if (room <= 0) continue;
    const k = topicKeys(p, t.name);
    const call = script.claimJobs([k.ready, k.running, k.jobs, k.delayed], { clock: ctx.clock(), count: count - claimed.length, maxRunning: room, ttrMs: t.ttrMs });
    const [now, , , ...items] = await run(ctx.redis, call);
    for (const item of items) claimed.push(toClaimed(t, now, item));
    running += items.length;
  }
  return claimed;
}

/** Ends attempt `attempt` of job topic/id as done. */
export async function ackJob(ctx: EngineContext, topic: string, id: string, attempt: number): Promise<AckOutcome> {
  const k = jobKeys(topic, id, ctx.config.partitions);
  const call = script.ackJob([k.jobs, k.running, k.done], { clock: ctx.clock(), id, attempt, retentionMs: ctx.config.retentionMs });
  return toAckOutcome(await run(ctx.redis, call));
}

/** Ends attempt `attempt` of job `id` of topic `t` as failed: a retry after the backoff (or `retryAfterMs`), or dead. */
export async function failJob(ctx: EngineContext, t: TopicConfig, id: string, attempt: number, error: string, retryAfterMs?: number): Promise<FailOutcome> {
  const k = jobKeys(t.name, id, ctx.config.partitions);
  const call = script.failJob([k.jobs, k.running, k.delayed, k.dead], {
    clock: ctx.clock(),
    id,
    attempt,
    error,
    maxAttempts: t.maxAttempts,
    backoff: t.backoff,
    random: ctx.random(),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  });
  return toFailOutcome(await run(ctx.redis, call));
}

type ReleaseRef = Pick<ClaimedJob, 'topic' | 'id' | 'attempt'>;

/** Gives claimed jobs back to the front of their ready lists without counting the attempt; returns how many. */
export async function releaseJobs(ctx: EngineContext, jobs: readonly ReleaseRef[]): Promise<number> {
  const slot = { partition: (job: ReleaseRef) => partitionOf(job.topic, job.id, ctx.config.partitions), topic: (job: ReleaseRef) => job.topic };
  let released = 0;
  for (const [partition, batches] of batchesByPartition(jobs, slot, RELEASE_BATCH)) {
    for (const batch of batches) {
      const k = topicKeys(partition, batch[0]!.topic);
      released += await run(ctx.redis, script.releaseJobs([k.jobs, k.running, k.ready], { clock: ctx.clock(), jobs: batch }));
    }
  }
  return released;
}
