import type { Context } from 'aws-lambda';
import type { TopicConfig } from '../core/queue-config';
import { RetryLater } from './retry-later';
import { requestFanout, toWire, type HandlerEvent, type WireJob } from './fanout';
import { emitMetrics, takeColdStart, type Logger } from '../platform/log';
import type { FailOutcome } from '../engine';
import { runtime, type Runtime } from '../platform/runtime';

/** What the user's function gets besides the job. */
export interface JobContext {
  topic: string;
  /** Aborted when the attempt's time-to-run is up: stop work and let the promise settle. */
  signal: AbortSignal;
  /** Milliseconds this attempt may still run. */
  timeLeftMs(): number;
  /** Epoch ms on the Redis clock: this host's clock corrected by its measured offset. */
  now(): number;
  log: Logger;
}

/** The user's code for one job: resolve for success, throw (or RetryLater) for a failed attempt. */
export type JobFunction = (job: WireJob, context: JobContext) => Promise<unknown>;

/** How a batch went. */
export interface BatchReport {
  done: number;
  retried: number;
  dead: number;
  /**
   * Attempts not run (their attempt had ended, or the job was cancelled or created anew) or whose ack/fail came too
   * late.
   */
  stale: number;
}

const SAFETY_MS = 250; // finish an attempt this long before its deadline, so its ack is not late
const MAX_DRAIN_ROUNDS = 20; // claims of further batches by one invocation

class TimeoutError extends Error {}

/**
 * Runs `fn` for one job with the TTR as a timeout, then acks or fails the attempt. `offsetMs` is
 * the Redis clock minus this host's: deadlines are on the Redis clock, and this host's may be off.
 */
async function runJob(
  rt: Runtime,
  topic: string,
  job: WireJob,
  fn: JobFunction,
  report: BatchReport,
  log: Logger,
  offsetMs: number,
  invocationEndsAt: number,
): Promise<void> {
  const startedAt = Date.now();
  const ttrMs = job.deadline - job.claimedAt;
  // On this host's clock: the attempt's deadline, or the end of this invocation (Lambda's timeout)
  // if that comes first; then the attempt fails (and is retried) instead of being killed unanswered.
  const deadlineEndsAt = job.deadline - offsetMs - SAFETY_MS;
  const endsAt = Math.min(deadlineEndsAt, invocationEndsAt - SAFETY_MS);
  const why =
    endsAt < deadlineEndsAt
      ? `attempt ${job.attempt} ran out of invocation time (the handler Lambda's timeout) before its ttr of ${Math.round(ttrMs / 1000)}s`
      : `attempt ${job.attempt} ran past its ttr of ${Math.round(ttrMs / 1000)}s`;
  const jobLog = log.child({ topic, jobId: job.id, attempt: job.attempt });
  const latenessMs = startedAt + offsetMs - job.runAt;
  jobLog.info('job started', { latenessMs, startLatenessMs: latenessMs });
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => {
        reject(new TimeoutError(why)); // first: a function that returns when aborted did not finish in time
        controller.abort();
      },
      Math.max(0, endsAt - Date.now()),
    );
  });
  let failure: unknown;
  try {
    await Promise.race([
      fn(job, {
        topic,
        signal: controller.signal,
        timeLeftMs: () => Math.max(0, endsAt - Date.now()),
        now: () => Date.now() + offsetMs,
        log: jobLog,
      }),
      timeout,
    ]);
  } catch (error) {
    failure = error;
  } finally {
    clearTimeout(timer);
  }
  const durationMs = Date.now() - startedAt;
  if (failure === undefined) {
    const outcome = await rt.engine.ack(topic, job.id, job);
    if (outcome === 'done') {
      report.done += 1;
      jobLog.info('job done', { durationMs });
    } else {
      report.stale += 1;
      jobLog.warn('job finished but its attempt had already ended', { outcome, durationMs });
    }
    return;
  }
  const message = failure instanceof Error ? failure.message || failure.name : String(failure);
  const retryAfterMs = failure instanceof RetryLater ? failure.retryAfterMs : undefined;
  const result: FailOutcome = await rt.engine.fail(topic, job.id, job, message, retryAfterMs);
  if (result.outcome === 'retry') {
    report.retried += 1;
    jobLog.warn('job failed; retry scheduled', {
      reason: message,
      retryAt: new Date(result.runAt).toISOString(),
      durationMs,
    });
  } else if (result.outcome === 'dead') {
    report.dead += 1;
    jobLog.error('job failed for the last time; dead-lettered', { reason: message, durationMs });
  } else {
    report.stale += 1;
    jobLog.warn('job failed but its attempt had already ended', { outcome: result.outcome, reason: message });
  }
}

/**
 * Out of time with work maybe left: hands the rest of the topic to a fan-out rather than to the
 * next tick. A batch short of batchSize does not mean the topic is drained (batches are cut by
 * bytes too), so unless the last batch was full the engine says whether a claim would take
 * anything (ready jobs, room, not paused; a flow topic's keys in turn).
 */
async function handOnRest(rt: Runtime, topic: TopicConfig, lastBatch: number, log: Logger): Promise<void> {
  try {
    if (lastBatch === topic.batchSize || (await rt.engine.claimable(topic.name)))
      await requestFanout({ engine: rt.engine, invoker: rt.invoker, timings: rt.config.timings });
  } catch (error) {
    log.warn('could not request a fan-out', { error });
  }
}

/**
 * Turns a per-job function into a topic handler Lambda: runs the function for every live job of the
 * batch in parallel, each with its TTR as a timeout, then acks or fails it. While the invocation
 * has time left it claims further batches of its topic. It never throws (an async invocation that
 * throws would be retried by Lambda, outside the queue's retry policy). `getRuntime` is the seam
 * for tests: the process's shared runtime by default.
 */
export function topicHandler(fn: JobFunction, getRuntime: () => Runtime = runtime) {
  return async (
    event: HandlerEvent,
    context?: Pick<Context, 'awsRequestId' | 'getRemainingTimeInMillis'>,
  ): Promise<BatchReport> => {
    const report: BatchReport = { done: 0, retried: 0, dead: 0, stale: 0 };
    let rt: Runtime | undefined;
    try {
      rt = getRuntime();
      const log = rt.log.child({ function_request_id: context?.awsRequestId, cold_start: takeColdStart() });
      const topic = rt.config.queue.topics.get(event.topic);
      if (!topic) {
        log.error('handler invoked for an unknown topic; its jobs come back after their ttr', { topic: event.topic });
        return report;
      }
      let jobs = event.jobs;
      // the Redis clock less this host's, read once a round: a host clock minutes off must not expire
      // (or stretch) every attempt. Set by a claim of this handler's own (its claimedAt), else by
      // the start's reply (the clock its calls checked the attempts on).
      let claimOffsetMs: number | undefined;
      for (let round = 0; jobs.length > 0; round++) {
        const before = Date.now();
        const started = claimOffsetMs !== undefined; // claimed and started by this handler in one call
        // An Event invoke can start late, or twice: run only the attempts still live, marking them
        // started and recording how late they are (one script call per partition of the batch, all
        // at once). A batch this handler claimed itself was started by its claim.
        const start = started
          ? { live: jobs.map(() => true), now: null }
          : await rt.engine.startTimed(topic.name, jobs);
        const offsetMs = claimOffsetMs ?? (start.now ?? (await rt.engine.serverTime())) - before;
        const invocationEndsAt = context ? Date.now() + context.getRemainingTimeInMillis() : Infinity;
        const batch = jobs.filter((job, i) => {
          if (!start.live[i]) {
            report.stale += 1;
            log.warn('attempt no longer live (ended, cancelled, created anew or started already); not run', {
              topic: topic.name,
              jobId: job.id,
              attempt: job.attempt,
            });
          }
          return start.live[i];
        });
        await Promise.all(
          batch.map((job) => runJob(rt!, topic.name, job, fn, report, log, offsetMs, invocationEndsAt)),
        );
        const remaining = context?.getRemainingTimeInMillis() ?? 0;
        if (remaining < topic.ttrMs + 2 * SAFETY_MS || round + 1 >= MAX_DRAIN_ROUNDS) {
          if (rt.config.wakeInvokes) await handOnRest(rt, topic, jobs.length, log);
          break;
        }
        // the fan-out takes what its claim left itself (drained, or it claims again): no claim of this handler's
        if (round === 0 && event.more === false) break;
        jobs = (await rt.engine.claimStarted(topic.name, topic.batchSize)).map(toWire);
        claimOffsetMs = jobs.length > 0 ? jobs[0]!.claimedAt - Date.now() : undefined;
      }
      emitMetrics(
        { topic: topic.name },
        {
          done: { unit: 'Count', value: report.done },
          retried: { unit: 'Count', value: report.retried },
          dead: { unit: 'Count', value: report.dead },
        },
      );
    } catch (error) {
      // Redis unreachable, say: the attempts come back when their TTR expires.
      (rt?.log ?? console).error('topic handler failed; unfinished attempts return after their ttr', { error });
    }
    return report;
  };
}
