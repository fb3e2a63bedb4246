import { randomHex } from '../core/random';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_TIMINGS, type Timings, type TopicConfig } from '../core/queue-config';
import { EVENT_ENVELOPE_BYTES, EVENT_PAYLOAD_BYTES } from '../core/limits';
import { chunkBySize, type ClaimedJob, type Engine } from '../engine';
import type { Invoker } from '../platform/lambda';
import { emitMetrics, type Logger } from '../platform/log';
import { MAX_LINKS, unpackContext, type Span, type SpanContext, type Tracer } from '../platform/tracing';

/** The event a topic handler receives: a batch of jobs of one topic, each claimed for one attempt. */
export interface HandlerEvent {
  topic: string;
  jobs: WireJob[];
  /**
   * false when the fan-out takes what its claim left ready itself (the claim drained the topic, or
   * the fan-out claims again at once): the handler then claims no further batch of its own
   * (jobs made ready later reach a fan-out through the sweeper). True when the fan-out leaves the
   * rest to the handlers (its claim stopped at the topic's concurrency, it is out of rounds, or
   * the rate limit holds it), and in a herd (jobs still ready after HERD_ROUNDS rounds): the
   * handlers claim on beside the fan-out; absent (an older fan-out's event): as true.
   */
  more?: boolean;
}

/** A claimed job as it travels to its handler. */
export interface WireJob {
  id: string;
  body: unknown;
  attempt: number;
  maxAttempts: number;
  /** Epoch ms the attempt was due (Redis clock). */
  runAt: number;
  /** Epoch ms after which the attempt counts as failed. */
  deadline: number;
  /** When the attempt was claimed, epoch ms (Redis clock). */
  claimedAt: number;
  /**
   * The claim's token, unique to this claim (a job cancelled and created anew never gets it
   * again): the handler presents it to start, ack and fail the attempt. Never log it.
   */
  claim: string;
  url?: string;
  /** The packed trace context of the request that added the job (lib/platform/tracing.ts), when tracing is on. */
  trace?: string;
}

const INVOKES_IN_FLIGHT = 8; // parallel Event invokes per topic: each is one HTTPS call
const MAX_ROUNDS = 50; // claims per topic in one pass; more work comes back via the sweeper
// Rounds of a pass that found jobs left ready after each before its handlers claim on too: a burst
// a few rounds drain (a steady flow's sweep) is the fan-out's alone, so no handler's claim finds
// nothing; a herd is drained by every handler invoked from then on as well as by the fan-out.
const HERD_ROUNDS = 3;
const MAX_PASSES = 20; // passes over every topic by one fan-out invocation
// Kept in hand when a rate-limited topic waits for tokens: time to clear the mark and invoke the
// next fan-out (two Redis calls and one Event invoke, well under a second even on a cold client).
const HANDOVER_RESERVE_MS = 3_000;

export interface FanoutDeps {
  engine: Engine;
  invoker: Invoker;
  log: Logger;
  /** config.timings (fanoutMarkMs); DEFAULT_TIMINGS when left out. */
  timings?: Timings;
  /**
   * Time left to this invocation (ms), which bounds waiting for a rate-limited topic's tokens.
   * Without it, the fan-out counts its mark's life (timings.fanoutMarkMs, its function timeout) from its start.
   */
  remainingMs?: () => number;
  /** Traces (lib/platform/tracing.ts): each claim is a span linked to the jobs it claimed. None: off. */
  tracer?: Tracer;
}

const newToken = () => randomHex(8);

/**
 * Invokes the fan-out unless one is running already (that one drains every topic and looks
 * again before it stops). Returns true when it invoked one.
 */
export async function requestFanout(deps: Pick<FanoutDeps, 'engine' | 'invoker' | 'timings'>): Promise<boolean> {
  const token = newToken();
  if (!(await deps.engine.markFanout(token, (deps.timings ?? DEFAULT_TIMINGS).fanoutMarkMs))) return false;
  try {
    await deps.invoker.invokeAsync('fanout', { token });
    return true;
  } catch (error) {
    await deps.engine.unmarkFanout(token).catch(() => false);
    throw error;
  }
}

/** What one fan-out call did per topic. */
export interface FanoutReport {
  claimed: number;
  invoked: number;
  released: number;
}

/** The wire form of a claimed job. */
export function toWire(job: ClaimedJob): WireJob {
  return {
    id: job.id,
    body: job.body,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    runAt: job.runAt,
    deadline: job.deadline,
    claimedAt: job.runAt + job.latenessMs,
    claim: job.claim,
    ...(job.url ? { url: job.url } : {}),
    ...(job.trace ? { trace: job.trace } : {}),
  };
}

/**
 * Cuts claimed jobs into handler events of at most batchSize jobs and at most EVENT_PAYLOAD_BYTES
 * (less EVENT_ENVELOPE_BYTES for the envelope) as JSON. A job that alone is over it is returned apart.
 */
export function cutBatches(
  topic: Pick<TopicConfig, 'name' | 'batchSize'>,
  claimed: readonly ClaimedJob[],
): { batches: ClaimedJob[][]; oversized: { job: ClaimedJob; bytes: number }[] } {
  const room = EVENT_PAYLOAD_BYTES - EVENT_ENVELOPE_BYTES;
  // and its comma
  const sized = claimed.map((job) => ({ job, bytes: Buffer.byteLength(JSON.stringify(toWire(job))) + 1 }));
  const oversized = sized.filter((s) => s.bytes > room);
  const fitting = sized.filter((s) => s.bytes <= room);
  const batches = chunkBySize(fitting, topic.batchSize, room, (s) => s.bytes).map((run) => run.map((s) => s.job));
  return { batches, oversized };
}

/**
 * Claims and invokes one topic's ready jobs; returns the ms until its rate limit allows more when it held the topic
 * back, else null.
 */
async function fanoutTopic(deps: FanoutDeps, topic: TopicConfig, report: FanoutReport): Promise<number | null> {
  if (!topic.handler) return null;
  const handler = topic.handler;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    // as many jobs, and bodies, as the invokes in flight carry: a round claims fewer than
    // batchSize × INVOKES_IN_FLIGHT when their bodies fill INVOKES_IN_FLIGHT events first
    const {
      jobs: claimed,
      waitMs,
      drained,
      capped,
    } = await deps.engine.claimPaced(
      topic.name,
      topic.batchSize * INVOKES_IN_FLIGHT,
      undefined,
      INVOKES_IN_FLIGHT * EVENT_PAYLOAD_BYTES,
    );
    if (claimed.length === 0) return waitMs;
    const span = deps.tracer?.enabled ? claimSpan(deps.tracer, topic.name, claimed) : undefined;
    report.claimed += claimed.length;
    emitMetrics(
      { topic: topic.name },
      {
        claimed: { unit: 'Count', value: claimed.length },
        lateness: { unit: 'Milliseconds', value: claimed.map((j) => j.latenessMs) },
      },
    );
    // the rest is the handlers' to claim too when this fan-out will not claim it next round itself,
    // and in a herd (HERD_ROUNDS)
    const more = !drained && (capped || waitMs !== null || round + 1 >= MAX_ROUNDS || round + 1 >= HERD_ROUNDS);
    const { batches, oversized } = cutBatches(topic, claimed);
    await failOversized(deps, topic.name, oversized);
    const { failed, reason } = await invokeBatches(deps, handler, { topic: topic.name, more }, batches, report);
    span?.end(failed.length > 0 ? reason : undefined);
    if (failed.length > 0) {
      report.released += await deps.engine.release(failed, reason);
      return null; // the invoke API is failing: stop, the next sweep tries again
    }
    if (waitMs !== null) return waitMs;
    // the claim left nothing ready: no further round (whatever becomes ready later, the sweeper
    // asks for a fan-out); fewer than asked for alone need not mean drained (bytes, concurrency)
    if (drained) return null;
  }
  return null;
}

/**
 * The span of a claim of `claimed` (and their invokes): linked to the spans that added the first MAX_LINKS of them
 * (those added while tracing was on), one claim serving many traces.
 */
function claimSpan(tracer: Tracer, topic: string, claimed: readonly ClaimedJob[]): Span {
  const links: SpanContext[] = [];
  for (const job of claimed) {
    const context = unpackContext(job.trace);
    if (context) links.push(context);
    if (links.length === MAX_LINKS) break;
  }
  return tracer.start(`claim ${topic}`, { links, attributes: { 'dq.topic': topic, 'dq.claimed': claimed.length } });
}

/** Fails the attempts of claimed jobs too large for a handler event, one after another. */
async function failOversized(
  deps: FanoutDeps,
  topic: string,
  oversized: readonly { job: ClaimedJob; bytes: number }[],
): Promise<void> {
  for (const { job, bytes } of oversized) {
    // only a job stored while maxBodyBytes was set larger: it can never be delivered
    const error = `the job is ${bytes} bytes as a Lambda event, over the ${EVENT_PAYLOAD_BYTES}-byte limit; it cannot be delivered`;
    deps.log.error('job too large for a handler event; failing its attempt', { topic, jobId: job.id, bytes });
    await deps.engine.fail(topic, job.id, job, error);
  }
}

/**
 * Invokes `handler` with each batch at once, in an event of `to.topic` (`to.more`: HandlerEvent.more). Returns the jobs
 * of the invokes that failed, to be released, and why the first of them failed.
 */
async function invokeBatches(
  deps: FanoutDeps,
  handler: string,
  to: { topic: string; more: boolean },
  batches: readonly ClaimedJob[][],
  report: FanoutReport,
): Promise<{ failed: ClaimedJob[]; reason: string | undefined }> {
  const failed: ClaimedJob[] = [];
  let reason: string | undefined;
  await Promise.all(
    batches.map(async (batch) => {
      const event: HandlerEvent = { topic: to.topic, jobs: batch.map(toWire), more: to.more };
      try {
        await deps.invoker.invokeAsync(handler, event);
        report.invoked += 1;
      } catch (error) {
        deps.log.error('handler invoke failed; releasing its jobs', {
          error,
          topic: to.topic,
          jobIds: batch.map((j) => j.id),
        });
        failed.push(...batch);
        reason ??=
          `the handler invoke failed: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`.slice(
            0,
            500,
          );
      }
    }),
  );
  return { failed, reason };
}

/**
 * One pass: claims and invokes every topic's ready jobs, up to each topic's concurrency and rate
 * limit. Returns the soonest a rate-limited topic that was held back may claim again (ms), or null.
 */
async function pass(deps: FanoutDeps, names: string[], reports: Map<string, FanoutReport>): Promise<number | null> {
  const config = deps.engine.config;
  const waits = await Promise.all(
    names.map(async (name) => {
      const report = reports.get(name) ?? { claimed: 0, invoked: 0, released: 0 };
      reports.set(name, report);
      try {
        return await fanoutTopic(deps, config.topics.get(name)!, report);
      } catch (error) {
        deps.log.error('fan-out failed for a topic', { error, topic: name });
        return null;
      }
    }),
  );
  const held = waits.filter((w): w is number => w !== null);
  return held.length > 0 ? Math.min(...held) : null;
}

/** True when some topic may have jobs a claim would take (Engine.claimable). */
async function claimable(engine: Engine): Promise<boolean> {
  return (await Promise.all([...engine.config.topics.keys()].map((t) => engine.claimable(t)))).some(Boolean);
}

/**
 * Claims the ready jobs of every topic (or the given ones), up to each topic's concurrency, and
 * invokes each topic's handler asynchronously with batches of its batch size. A failed invoke
 * gives its jobs back (release); a lost one comes back when its TTR expires. Holding the mark
 * `token` (from requestFanout), it clears the mark when done and looks once more, so work made
 * ready meanwhile is never left waiting.
 */
export async function runFanout(
  deps: FanoutDeps,
  options: { token?: string; topics?: string[] } = {},
): Promise<Record<string, FanoutReport>> {
  const config = deps.engine.config;
  const names = (options.topics ?? [...config.topics.keys()]).filter((t) => config.topics.has(t));
  // a Map, not an object: a topic may be named `constructor` or `__proto__`
  const reports = new Map<string, FanoutReport>();
  const markMs = (deps.timings ?? DEFAULT_TIMINGS).fanoutMarkMs;
  const endsAt = Date.now() + markMs;
  const remainingMs = deps.remainingMs ?? (() => endsAt - Date.now());
  let token = options.token; // the mark this fan-out holds, until it clears it
  try {
    for (let i = 0; i < MAX_PASSES; i++) {
      const waitMs = await pass(deps, names, reports);
      // a rate-limited topic has ready jobs waiting for tokens: wait for them while time allows
      // (such a pass is not counted), else hand over to a new fan-out rather than to the next tick
      if (waitMs !== null && remainingMs() > waitMs + HANDOVER_RESERVE_MS) {
        i -= 1;
        await sleep(waitMs);
        continue;
      }
      if (!token) return Object.fromEntries(reports);
      await deps.engine.unmarkFanout(token);
      token = undefined;
      if (waitMs !== null) {
        try {
          await requestFanout(deps);
        } catch (error) {
          deps.log.error('could not hand the paced topics over to a new fan-out; the sweeper starts one', { error });
        }
        return Object.fromEntries(reports);
      }
      if (!(await claimable(deps.engine))) return Object.fromEntries(reports);
      const next = newToken();
      token = next; // held from here: a lost reply may hide a mark that was set
      if (!(await deps.engine.markFanout(next, markMs))) {
        token = undefined;
        return Object.fromEntries(reports);
      }
    }
    return Object.fromEntries(reports);
  } finally {
    await deps.tracer?.flush();
    // however it ends (done, or a call that threw), it leaves no mark of its own behind
    if (token)
      await deps.engine
        .unmarkFanout(token)
        .catch((error: unknown) => deps.log.error('could not clear the fan-out mark; it expires by itself', { error }));
  }
}
