/** Producer-side changes: add, put, cancel and reschedule jobs. */
import type { TopicConfig } from '../rules/config';
import { groupKey, jobKeys, topicKeys } from './keys';
import { SCRIPT_CALL_BYTES } from '../rules/limits';
import { run, runPipelined } from './lua';
import { OUTCOME, REFUSAL } from './codes';
import type { EngineContext } from './context';
import { toJob, toWriteResult, type Job, type JobChange, type NewJob, type Refused, type Wake, type WriteResult } from './jobs';
import { leaveGroups } from './groups';
import { atLeastOne, batchesByPartition } from './partitions';
import * as script from './scripts';

const ADD_BATCH = 100; // jobs per addJobs call: ~800 arguments, well under a millisecond of Redis time

/**
 * Writes validated jobs through addJobs ('add' refuses an existing id, 'put' replaces a pending
 * job), one result per job in order. Calls are grouped per partition, topic and group and cut at
 * ADD_BATCH jobs and SCRIPT_CALL_BYTES of bodies (a larger body alone); the partitions run at
 * once, each in one pipeline. A call that reached its byte budget (the jobs it found existing are
 * replied with their bodies) did its first jobs; the rest go in another call after the pipeline,
 * so of two adds of one id in one batch, the later may be the one created.
 */
export async function writeJobs(ctx: EngineContext, jobs: readonly NewJob[], mode: 'add' | 'put', by = ''): Promise<{ results: WriteResult[] } & Wake> {
  const results: WriteResult[] = new Array(jobs.length);
  let wake = false;
  const indexes = jobs.map((_, i) => i);
  // one group per call: the call joins its jobs to that group (KEYS[5], its first zset)
  const slot = { partition: (i: number) => jobs[i]!.partition, topic: (i: number) => `${jobs[i]!.topic} ${jobs[i]!.group ?? ''}` };
  const byPartition = batchesByPartition(indexes, slot, ADD_BATCH, { maxBytes: SCRIPT_CALL_BYTES, bytes: (i) => Buffer.byteLength(jobs[i]!.body) });
  const callFor = (partition: number, batch: readonly number[]) => {
    const first = jobs[batch[0]!]!;
    const k = topicKeys(partition, first.topic, ctx.layout);
    const g = groupKey(partition, first.topic, first.group ?? '', ctx.layout);
    return script.addJobs([k.jobs, k.bodies, k.delayed, k.done, g], { clock: ctx.clock(), mode, by, flow: ctx.config.topics.get(first.topic)?.flow !== undefined, jobs: batch.map((i) => jobs[i]!), maxBytes: SCRIPT_CALL_BYTES });
  };
  /** Records a reply's results for the first jobs of `batch`; returns how many it answered. */
  const record = (batch: readonly number[], reply: script.AddJobsReply): number => {
    if (reply[0] === 1) wake = true;
    const added = script.addResults(reply);
    added.forEach((result, r) => {
      const job = jobs[batch[r]!]!;
      results[batch[r]!] = toWriteResult(ctx.config.topics.get(job.topic)!, job, result, by);
    });
    return added.length;
  };
  await Promise.all(
    [...byPartition].map(async ([partition, batches]) => {
      const replies = await runPipelined(
        ctx.redis,
        batches.map((batch) => callFor(partition, batch)),
      );
      for (const [b, reply] of replies.entries()) {
        for (let rest = batches[b]!.slice(atLeastOne(record(batches[b]!, reply), 'addJobs')); rest.length > 0;) {
          rest = rest.slice(atLeastOne(record(rest, await run(ctx.redis, callFor(partition, rest))), 'addJobs'));
        }
      }
    }),
  );
  // a put that moved jobs out of their groups: take them out of those groups' zsets
  const left = results.flatMap((r, i) => ('left' in r && r.left !== null ? [{ topic: jobs[i]!.topic, group: r.left[0], chunk: r.left[1], id: jobs[i]!.id, partition: jobs[i]!.partition }] : []));
  if (left.length > 0) await leaveGroups(ctx, left);
  return { results, wake };
}

/**
 * Cancels a pending or running job (again is fine); refused when it is missing, done or dead, or
 * when `ifMatch` ('*': any existing job; a number: the version it must have) does not hold.
 * `wrote`: this call cancelled the job (any other answer changed nothing).
 */
export async function cancelJob(ctx: EngineContext, t: TopicConfig, id: string, ifMatch: script.IfMatchArg = '', by = ''): Promise<{ outcome: { job: Job } | Refused; wrote: boolean }> {
  const k = jobKeys(t, id, ctx.layout);
  const reply = await run(ctx.redis, script.cancelJob([k.jobs, k.bodies, k.delayed, k.running, k.done], { clock: ctx.clock(), id, retentionMs: ctx.config.retentionMs, ifMatch, by }));
  if (reply[0] === REFUSAL.NOT_FOUND) return { outcome: { refusal: reply[0] }, wrote: false };
  if (reply[0] === REFUSAL.VERSION_MISMATCH) return { outcome: reply[1] ? { refusal: reply[0], job: toJob(t, reply[1]) } : { refusal: reply[0] }, wrote: false };
  const job = toJob(t, reply[1]);
  if (reply[0] === REFUSAL.JOB_FINISHED) return { outcome: { refusal: reply[0], job }, wrote: false };
  return { outcome: { job }, wrote: reply[0] === OUTCOME.CANCELLED };
}

/** Changes the due time and/or the body of a pending job; refused unless it is delayed or ready. */
export async function rescheduleJob(ctx: EngineContext, t: TopicConfig, id: string, change: JobChange): Promise<({ job: Job } & Wake) | Refused> {
  const k = jobKeys(t, id, ctx.layout);
  const reply = await run(ctx.redis, script.rescheduleJob([k.jobs, k.bodies, k.delayed], { clock: ctx.clock(), id, change }));
  if (reply[0] === REFUSAL.NOT_FOUND) return { refusal: reply[0] };
  if (reply[0] === REFUSAL.JOB_FINISHED) return { refusal: reply[0], job: toJob(t, reply[1]) };
  return { job: toJob(t, reply[2]), wake: reply[1] === 1 };
}
