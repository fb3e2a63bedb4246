import type { TopicConfig } from './config';
import type { Invoker } from './lambda';
import { emitMetrics, type Logger } from './log';
import type { ClaimedJob, DelayQueue } from './queue';

/** The event a topic handler receives: a batch of jobs of one topic, each claimed for one attempt. */
export interface HandlerEvent {
  topic: string;
  jobs: WireJob[];
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
  url?: string;
}

const INVOKES_IN_FLIGHT = 8; // parallel Event invokes per topic: each is one HTTPS call
const MAX_ROUNDS = 50; // claims per topic in one fan-out call; more work comes back via the sweeper

export interface FanoutDeps {
  queue: DelayQueue;
  invoker: Invoker;
  log: Logger;
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
    ...(job.url ? { url: job.url } : {}),
  };
}

async function fanoutTopic(deps: FanoutDeps, topic: TopicConfig, report: FanoutReport): Promise<void> {
  if (!topic.handler) return;
  const handler = topic.handler;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const claimed = await deps.queue.claim(topic.name, topic.batchSize * INVOKES_IN_FLIGHT);
    if (claimed.length === 0) return;
    report.claimed += claimed.length;
    emitMetrics({ service: 'delay-queue', topic: topic.name }, {
      claimed: { unit: 'Count', value: claimed.length },
      lateness: { unit: 'Milliseconds', value: claimed.map((j) => j.latenessMs) },
    });
    const batches: ClaimedJob[][] = [];
    for (let i = 0; i < claimed.length; i += topic.batchSize) batches.push(claimed.slice(i, i + topic.batchSize));
    const failed: ClaimedJob[] = [];
    await Promise.all(
      batches.map(async (batch) => {
        const event: HandlerEvent = { topic: topic.name, jobs: batch.map(toWire) };
        try {
          await deps.invoker.invokeAsync(handler, event);
          report.invoked += 1;
        } catch (error) {
          deps.log.error('handler invoke failed; releasing its jobs', { error, topic: topic.name, jobIds: batch.map((j) => j.id) });
          failed.push(...batch);
        }
      }),
    );
    if (failed.length > 0) {
      report.released += await deps.queue.release(failed);
      return; // the invoke API is failing: stop, the next sweep tries again
    }
    if (claimed.length < topic.batchSize * INVOKES_IN_FLIGHT) return;
  }
}

/**
 * Claims the ready jobs of the given topics (all when none are given), up to each topic's
 * concurrency, and invokes each topic's handler asynchronously with batches of its batch size.
 * A failed invoke gives its jobs back (release); a lost one comes back when its TTR expires.
 */
export async function runFanout(deps: FanoutDeps, topics?: string[]): Promise<Record<string, FanoutReport>> {
  const config = deps.queue.config;
  const names = (topics ?? [...config.topics.keys()]).filter((t) => config.topics.has(t));
  const reports: Record<string, FanoutReport> = {};
  await Promise.all(
    names.map(async (name) => {
      const report: FanoutReport = { claimed: 0, invoked: 0, released: 0 };
      reports[name] = report;
      try {
        await fanoutTopic(deps, config.topics.get(name)!, report);
      } catch (error) {
        deps.log.error('fan-out failed for a topic', { error, topic: name });
      }
    }),
  );
  return reports;
}
