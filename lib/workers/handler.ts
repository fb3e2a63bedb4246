import type { Context } from 'aws-lambda';
import type { TopicConfig } from '../core/queue-config';
import { RetryLater } from './retry-later';
import { requestFanout, toWire, type HandlerEvent, type WireJob } from './fanout';
import { emitMetrics, takeColdStart, type Logger } from '../platform/log';
import type { ClaimedJob, FailOutcome } from '../engine';
import { runtime, type Runtime } from '../platform/runtime';
import { formatTraceparent, unpackContext, type Span } from '../platform/tracing';

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
  /**
   * The W3C `traceparent` of this attempt's span when tracing is on (DQ_OTLP_ENDPOINT): make the function's own spans
   * its children (a propagator's extract of `{ traceparent }`). Undefined when tracing is off.
   */
  traceparent?: string;
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
  /** Attempts not run because they were due after their job's expiresAt: the jobs ended as expired. */
  expired: number;
}

const SAFETY_MS = 250; // finish an attempt this long before its deadline, so its ack is not late
const MAX_DRAIN_ROUNDS = 20; // claims of further batches by one invocation

class TimeoutError extends Error {}

/** One invocation of a topic handler: what its rounds share. */
interface Invocation {
  rt: Runtime;
  topic: TopicConfig;
  fn: JobFunction;
  report: BatchReport;
  log: Logger;
  context: Pick<Context, 'awsRequestId' | 'getRemainingTimeInMillis'> | undefined;
}

/** One round of an invocation: a batch run at once, on the clocks read for it. */
interface Round extends Invocation {
  /** The Redis clock minus this host's: deadlines are on the Redis clock, and this host's may be off. */
  offsetMs: number;
  /** When this invocation ends (Lambda's timeout), on this host's clock. */
  invocationEndsAt: number;
  /** Jobs of the round still running. */
  running: number;
  /** Whether the invocation claims a further batch after this round (asked when its last job ends). */
  claimsNext(): boolean;
  /** The further batch, when the round's last job claimed it with its ack (one script call). */
  next?: { jobs: WireJob[]; expired: number };
}

/** Runs `fn` for one job of `round` with the TTR as a timeout, then acks or fails the attempt. */
async function runJob(round: Round, job: WireJob): Promise<void> {
  const { offsetMs } = round;
  const topic = round.topic.name;
  const startedAt = Date.now();
  const { endsAt, why } = attemptEnd(job, offsetMs, round.invocationEndsAt);
  const jobLog = round.log.child({ topic, jobId: job.id, attempt: job.attempt });
  const latenessMs = startedAt + offsetMs - job.runAt;
  jobLog.info('job started', { latenessMs, startLatenessMs: latenessMs });
  const span = round.rt.tracer.enabled ? attemptSpan(round, job, latenessMs) : undefined;
  const limit = {
    topic,
    endsAt,
    why,
    offsetMs,
    log: jobLog,
    ...(span ? { traceparent: formatTraceparent(span.context) } : {}),
  };
  const failure = await runUntil(round.fn, job, limit);
  const durationMs = Date.now() - startedAt;
  round.running -= 1;
  const outcome =
    failure === undefined
      ? await ackAttempt(round, job, jobLog, durationMs)
      : await failAttempt(round, job, failure, jobLog, durationMs);
  if (span) {
    span.setAttributes({ 'dq.outcome': outcome, 'dq.duration_ms': durationMs });
    span.end(failure === undefined ? undefined : messageOf(failure));
  }
}

/**
 * The span of one attempt: a child of the span of the request that added the job (a new trace when it carries none:
 * added while tracing was off), or, for a schedule's occurrence, the root of a trace of its own linked to the
 * schedule's put; with the job's topic, id, attempt and lateness.
 */
function attemptSpan(round: Round, job: WireJob, latenessMs: number): Span {
  // 'L…': a schedule's occurrence, linked to the trace of the schedule's put (its own trace: not one endless trace)
  const link = job.trace?.startsWith('L') ? unpackContext(job.trace) : undefined;
  return round.rt.tracer.start(`run ${round.topic.name}`, {
    kind: 'consumer',
    parent: link ? undefined : unpackContext(job.trace),
    ...(link ? { links: [link] } : {}),
    attributes: {
      'dq.topic': round.topic.name,
      'dq.job.id': job.id,
      'dq.attempt': job.attempt,
      'dq.max_attempts': job.maxAttempts,
      'dq.lateness_ms': latenessMs,
    },
  });
}

const messageOf = (failure: unknown) => (failure instanceof Error ? failure.message || failure.name : String(failure));

/**
 * When an attempt of `job` must end, on this host's clock, and what its failure then says. `offsetMs`: the Redis
 * clock minus this host's.
 */
function attemptEnd(job: WireJob, offsetMs: number, invocationEndsAt: number): { endsAt: number; why: string } {
  const ttrMs = job.deadline - job.claimedAt;
  // On this host's clock: the attempt's deadline, or the end of this invocation (Lambda's timeout)
  // if that comes first; then the attempt fails (and is retried) instead of being killed unanswered.
  const deadlineEndsAt = job.deadline - offsetMs - SAFETY_MS;
  const endsAt = Math.min(deadlineEndsAt, invocationEndsAt - SAFETY_MS);
  const why =
    endsAt < deadlineEndsAt
      ? `attempt ${job.attempt} ran out of invocation time (the handler Lambda's timeout) before its ttr of ${Math.round(ttrMs / 1000)}s`
      : `attempt ${job.attempt} ran past its ttr of ${Math.round(ttrMs / 1000)}s`;
  return { endsAt, why };
}

/**
 * Runs `fn` for `job` until it settles or `limit.endsAt` passes (this host's clock): then its signal aborts and the
 * attempt fails with a TimeoutError saying `limit.why`. Returns what it threw, or undefined when it succeeded.
 */
async function runUntil(
  fn: JobFunction,
  job: WireJob,
  limit: { topic: string; endsAt: number; why: string; offsetMs: number; log: Logger; traceparent?: string },
): Promise<unknown> {
  const { endsAt, offsetMs } = limit;
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => {
        reject(new TimeoutError(limit.why)); // first: a function that returns when aborted did not finish in time
        controller.abort();
      },
      Math.max(0, endsAt - Date.now()),
    );
  });
  let failure: unknown;
  try {
    await Promise.race([
      fn(job, {
        topic: limit.topic,
        signal: controller.signal,
        timeLeftMs: () => Math.max(0, endsAt - Date.now()),
        now: () => Date.now() + offsetMs,
        log: limit.log,
        ...(limit.traceparent ? { traceparent: limit.traceparent } : {}),
      }),
      timeout,
    ]);
  } catch (error) {
    failure = error;
  } finally {
    clearTimeout(timer);
  }
  return failure;
}

/**
 * Acks a job's attempt that succeeded; stale when its attempt had ended meanwhile. The round's last job, when the
 * invocation goes on claiming, claims the next batch in the same script call (round.next).
 */
async function ackAttempt(round: Round, job: WireJob, jobLog: Logger, durationMs: number): Promise<string> {
  const { engine } = round.rt;
  const topic = round.topic.name;
  let outcome: string;
  if (round.running === 0 && round.claimsNext()) {
    const claimed = await engine.ackAndClaimStarted(topic, job.id, job, round.topic.batchSize);
    round.next = toWireClaim(claimed);
    outcome = claimed.ack;
  } else {
    outcome = await engine.ack(topic, job.id, job);
  }
  if (outcome === 'done') {
    round.report.done += 1;
    jobLog.info('job done', { durationMs });
  } else {
    round.report.stale += 1;
    jobLog.warn('job finished but its attempt had already ended', { outcome, durationMs });
  }
  return outcome;
}

/** Fails a job's attempt that threw `failure` (or ran out of time): retried, dead, or stale when it had ended. */
async function failAttempt(
  round: Round,
  job: WireJob,
  failure: unknown,
  jobLog: Logger,
  durationMs: number,
): Promise<string> {
  const { report } = round;
  const message = messageOf(failure);
  const retryAfterMs = failure instanceof RetryLater ? failure.retryAfterMs : undefined;
  const result: FailOutcome = await round.rt.engine.fail(round.topic.name, job.id, job, message, retryAfterMs);
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
  return result.outcome;
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
    const report: BatchReport = { done: 0, retried: 0, dead: 0, stale: 0, expired: 0 };
    let rt: Runtime | undefined;
    try {
      rt = getRuntime();
      const log = rt.log.child({ function_request_id: context?.awsRequestId, cold_start: takeColdStart() });
      const topic = rt.config.queue.topics.get(event.topic);
      if (!topic) {
        log.error('handler invoked for an unknown topic; its jobs come back after their ttr', { topic: event.topic });
        return report;
      }
      await runRounds({ rt, topic, fn, report, log, context }, event);
      emitMetrics(
        { topic: topic.name },
        {
          done: { unit: 'Count', value: report.done },
          retried: { unit: 'Count', value: report.retried },
          dead: { unit: 'Count', value: report.dead },
          expired: { unit: 'Count', value: report.expired },
        },
      );
    } catch (error) {
      // Redis unreachable, say: the attempts come back when their TTR expires.
      (rt?.log ?? console).error('topic handler failed; unfinished attempts return after their ttr', { error });
    }
    await rt?.tracer.flush();
    return report;
  };
}

/** Runs the event's batch, then, while the invocation has time left, further batches it claims itself. */
async function runRounds(inv: Invocation, event: HandlerEvent): Promise<void> {
  const { rt, topic } = inv;
  let jobs = event.jobs;
  // the Redis clock less this host's, read once a round: a host clock minutes off must not expire
  // (or stretch) every attempt. Set by a claim of this handler's own (its claimedAt), else by
  // the start's reply (the clock its calls checked the attempts on).
  let claimOffsetMs: number | undefined;
  for (let round = 0; jobs.length > 0; round++) {
    // out of time (or rounds) for a further batch after this round
    const lastRound = () =>
      (inv.context?.getRemainingTimeInMillis() ?? 0) < topic.ttrMs + 2 * SAFETY_MS || round + 1 >= MAX_DRAIN_ROUNDS;
    // the fan-out takes what its claim left itself (drained, or it claims again): no claim of this handler's
    const leftToFanout = round === 0 && event.more === false;
    const next = await runRound(inv, jobs, claimOffsetMs, () => !leftToFanout && !lastRound());
    if (!next && lastRound()) {
      if (rt.config.wakeInvokes) await handOnRest(rt, topic, jobs.length, inv.log);
      break;
    }
    if (!next && leftToFanout) break;
    const claim = next ?? toWireClaim(await rt.engine.claimStartedCounted(topic.name, topic.batchSize));
    countExpired(inv, claim.expired);
    jobs = claim.jobs;
    claimOffsetMs = jobs.length > 0 ? jobs[0]!.claimedAt - Date.now() : undefined;
  }
}

/**
 * Runs the live attempts of `jobs` at once. `claimOffsetMs`: the clock offset read from this handler's own claim of
 * them, undefined for the event's batch. `claimsNext`: whether a further batch is claimed after the round. Returns the
 * further batch when the round's last job claimed it with its ack.
 */
async function runRound(
  inv: Invocation,
  jobs: WireJob[],
  claimOffsetMs: number | undefined,
  claimsNext: () => boolean,
): Promise<Round['next']> {
  const { rt, topic, context } = inv;
  const before = Date.now();
  const started = claimOffsetMs !== undefined; // claimed and started by this handler in one call
  // An Event invoke can start late, or twice: run only the attempts still live, marking them
  // started and recording how late they are (one script call per partition of the batch, all
  // at once). A batch this handler claimed itself was started by its claim.
  const start = started
    ? { live: jobs.map(() => true), now: null, expired: 0 }
    : await rt.engine.startTimed(topic.name, jobs);
  countExpired(inv, start.expired);
  const offsetMs = claimOffsetMs ?? (start.now ?? (await rt.engine.serverTime())) - before;
  const invocationEndsAt = context ? Date.now() + context.getRemainingTimeInMillis() : Infinity;
  const batch = liveJobs(inv, jobs, start);
  const round: Round = { ...inv, offsetMs, invocationEndsAt, running: batch.length, claimsNext };
  await Promise.all(batch.map((job) => runJob(round, job)));
  return round.next;
}

/** A handler's own claim as the jobs of its next round. */
const toWireClaim = (claim: { jobs: ClaimedJob[]; expired: number }) => ({
  jobs: claim.jobs.map(toWire),
  expired: claim.expired,
});

/** Counts and logs `n` attempts a start found due after their job's expiry (the jobs expired; none ran). */
function countExpired(inv: Invocation, n: number): void {
  if (n === 0) return;
  inv.report.expired += n;
  inv.log.info('attempts due after their job expired were not started; the jobs are expired', {
    topic: inv.topic.name,
    expired: n,
  });
}

/**
 * The jobs whose attempts are still live (`start.live`, by index). Of the others, `start.expired` were due after their
 * job's expiry, counted and logged once by countExpired; the rest are counted stale and logged here.
 */
function liveJobs(inv: Invocation, jobs: WireJob[], start: { live: readonly boolean[]; expired: number }): WireJob[] {
  const { live, expired } = start;
  const notLive = jobs.filter((_, i) => !live[i]);
  const stale = notLive.length - expired;
  if (stale > 0) {
    inv.report.stale += stale;
    const topic = inv.topic.name;
    const why = 'ended, cancelled, created anew or started already';
    if (expired === 0) {
      for (const job of notLive)
        inv.log.warn(`attempt no longer live (${why}); not run`, { topic, jobId: job.id, attempt: job.attempt });
    } else {
      // the start says how many expired, not which: one line for the batch's attempts not run, with both counts
      inv.log.warn(`attempts not run: ${stale} no longer live (${why}), ${expired} expired`, {
        topic,
        stale,
        expired,
        jobIds: notLive.map((job) => job.id),
      });
    }
  }
  return jobs.filter((_, i) => live[i]);
}
