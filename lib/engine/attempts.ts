/** Consumer-side changes: claim jobs for an attempt, start, then ack, fail or release them. */
import { randomBytes } from 'node:crypto';
import type { TopicConfig } from '../config';
import { jobKeys, partitionOf, topicKeys } from '../keys';
import { run } from '../scripts';
import type { EngineContext } from './context';
import { OUTCOME } from './codes';
import { toAckOutcome, toClaimed, toFailOutcome, type AckOutcome, type AttemptRef, type ClaimedJob, type FailOutcome } from './jobs';
import { batchesByPartition, forEachPartition } from './partitions';
import * as script from './scripts';

const RELEASE_BATCH = 500; // jobs per releaseJobs call: 1,500 arguments, about a millisecond of Redis time

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
    const call = script.claimJobs([k.ready, k.running, k.jobs, k.delayed], { clock: ctx.clock(), count: count - claimed.length, maxRunning: room, ttrMs: t.ttrMs, nonce: randomBytes(8).toString('hex') });
    const [now, , , ...items] = await run(ctx.redis, call);
    for (const item of items) claimed.push(toClaimed(t, now, item));
    running += items.length;
  }
  return claimed;
}

/** The script arguments naming attempt `ref` of job `id`. */
const attemptArg = (id: string, ref: AttemptRef): script.AttemptArg => ({ id, attempt: ref.attempt, claim: ref.claim ?? '' });

/** Ends the claimed attempt `ref` of job topic/id as done. */
export async function ackJob(ctx: EngineContext, topic: string, id: string, ref: AttemptRef): Promise<AckOutcome> {
  const k = jobKeys(topic, id, ctx.config.partitions);
  const call = script.ackJob([k.jobs, k.running, k.done], { clock: ctx.clock(), retentionMs: ctx.config.retentionMs, ...attemptArg(id, ref) });
  return toAckOutcome(await run(ctx.redis, call));
}

/** Ends the claimed attempt `ref` of job `id` of topic `t` as failed: a retry after the backoff (or `retryAfterMs`), or dead. */
export async function failJob(ctx: EngineContext, t: TopicConfig, id: string, ref: AttemptRef, error: string, retryAfterMs?: number): Promise<FailOutcome> {
  const k = jobKeys(t.name, id, ctx.config.partitions);
  const call = script.failJob([k.jobs, k.running, k.delayed, k.dead], {
    clock: ctx.clock(),
    ...attemptArg(id, ref),
    error,
    maxAttempts: t.maxAttempts,
    backoff: t.backoff,
    random: ctx.random(),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  });
  return toFailOutcome(await run(ctx.redis, call));
}

type Ref = Pick<ClaimedJob, 'topic' | 'id'> & AttemptRef;
const slotOf = (ctx: EngineContext) => ({ partition: (job: Ref) => partitionOf(job.topic, job.id, ctx.config.partitions), topic: (job: Ref) => job.topic });

/**
 * Gives claimed jobs back to the front of their ready lists without counting the attempt, after
 * their handler could not be invoked (`reason`); a job given back 5 times in a row is failed
 * instead (its attempt counts, with the reason as lastError). Returns how many were given back.
 */
export async function releaseJobs(ctx: EngineContext, jobs: readonly Ref[], reason = 'the handler invoke failed'): Promise<number> {
  let released = 0;
  for (const [partition, batches] of batchesByPartition(jobs, slotOf(ctx), RELEASE_BATCH)) {
    for (const batch of batches) {
      const t = ctx.config.topics.get(batch[0]!.topic);
      if (!t) throw new Error(`release of jobs of unknown topic ${batch[0]!.topic}`);
      const k = topicKeys(partition, t.name);
      const call = script.releaseJobs([k.jobs, k.running, k.ready, k.delayed, k.dead], {
        clock: ctx.clock(),
        maxAttempts: t.maxAttempts,
        backoff: t.backoff,
        random: ctx.random(),
        reason,
        jobs: batch.map((j) => attemptArg(j.id, j)),
      });
      const [given] = await run(ctx.redis, call);
      released += given;
    }
  }
  return released;
}

/**
 * Marks the claimed attempts of topic `topic` that are still live as started (a timeout counts
 * them from now on) and says, in order, which are: one script call per partition, all at once.
 */
export async function startAttempts(ctx: EngineContext, topic: string, jobs: readonly (Pick<ClaimedJob, 'id'> & AttemptRef)[]): Promise<boolean[]> {
  const live: boolean[] = new Array<boolean>(jobs.length).fill(false);
  const byPartition = new Map<number, number[]>();
  jobs.forEach((job, i) => {
    const p = partitionOf(topic, job.id, ctx.config.partitions);
    byPartition.set(p, [...(byPartition.get(p) ?? []), i]);
  });
  await Promise.all(
    [...byPartition].map(async ([partition, indexes]) => {
      const k = topicKeys(partition, topic);
      const reply = await run(ctx.redis, script.startAttempts([k.jobs], { clock: ctx.clock(), attempts: indexes.map((i) => attemptArg(jobs[i]!.id, jobs[i]!)) }));
      reply.forEach((code, j) => (live[indexes[j]!] = code === OUTCOME.STARTED));
    }),
  );
  return live;
}
