/** Producer-side changes: add, put, cancel and reschedule jobs. */
import type { TopicConfig } from '../config';
import { jobKeys, topicKeys } from '../keys';
import { run, runPipelined } from '../scripts';
import { REFUSAL } from './codes';
import type { EngineContext } from './context';
import { toJob, toWriteResult, type Job, type JobChange, type NewJob, type Refused, type Wake, type WriteResult } from './jobs';
import { batchesByPartition } from './partitions';
import * as script from './scripts';

const ADD_BATCH = 100; // jobs per addJobs call: ~800 arguments, well under a millisecond of Redis time

/**
 * Writes validated jobs through addJobs ('add' refuses an existing id, 'put' replaces a pending
 * job), one result per job in order. Calls are grouped per partition and topic; the partitions
 * run at once, each in one pipeline.
 */
export async function writeJobs(ctx: EngineContext, jobs: readonly NewJob[], mode: 'add' | 'put'): Promise<{ results: WriteResult[] } & Wake> {
  const results: WriteResult[] = new Array(jobs.length);
  let wake = false;
  const indexes = jobs.map((_, i) => i);
  const byPartition = batchesByPartition(indexes, { partition: (i) => jobs[i]!.partition, topic: (i) => jobs[i]!.topic }, ADD_BATCH);
  await Promise.all(
    [...byPartition].map(async ([partition, batches]) => {
      const calls = batches.map((batch) => {
        const k = topicKeys(partition, jobs[batch[0]!]!.topic);
        return script.addJobs([k.jobs, k.delayed, k.done], { clock: ctx.clock(), mode, jobs: batch.map((i) => jobs[i]!) });
      });
      const replies = await runPipelined(ctx.redis, calls);
      replies.forEach(([headChanged, ...added], b) => {
        if (headChanged === 1) wake = true;
        batches[b]!.forEach((jobIndex, r) => {
          const job = jobs[jobIndex]!;
          results[jobIndex] = toWriteResult(ctx.config.topics.get(job.topic)!, job, added[r]!);
        });
      });
    }),
  );
  return { results, wake };
}

/** Cancels a pending or running job (again is fine); refused when it is missing, done or dead. */
export async function cancelJob(ctx: EngineContext, t: TopicConfig, id: string): Promise<{ job: Job } | Refused> {
  const k = jobKeys(t.name, id, ctx.config.partitions);
  const reply = await run(ctx.redis, script.cancelJob([k.jobs, k.delayed, k.running, k.done], { clock: ctx.clock(), id, retentionMs: ctx.config.retentionMs }));
  if (reply[0] === REFUSAL.NOT_FOUND) return { refusal: reply[0] };
  const job = toJob(t, reply[1]);
  return reply[0] === REFUSAL.JOB_FINISHED ? { refusal: reply[0], job } : { job };
}

/** Changes the due time and/or the body of a pending job; refused unless it is delayed or ready. */
export async function rescheduleJob(ctx: EngineContext, t: TopicConfig, id: string, change: JobChange): Promise<({ job: Job } & Wake) | Refused> {
  const k = jobKeys(t.name, id, ctx.config.partitions);
  const reply = await run(ctx.redis, script.rescheduleJob([k.jobs, k.delayed], { clock: ctx.clock(), id, change }));
  if (reply[0] === REFUSAL.NOT_FOUND) return { refusal: reply[0] };
  if (reply[0] === REFUSAL.JOB_FINISHED) return { refusal: reply[0], job: toJob(t, reply[1]) };
  return { job: toJob(t, reply[2]), wake: reply[1] === 1 };
}
