/**
 * Engines and queues over a bench's redis-server, and the set-up most benches share: bodies,
 * batched adds, sweeps, and tasks run a few at a time.
 */
import type { Cluster, Redis } from 'ioredis';
import { resolveQueueConfig, type QueueConfigInput, type TopicInput } from '../../lib/core/queue-config';
import { Engine, type Caller, type EngineOptions } from '../../lib/engine';
import { queueOf, type Queue } from '../../test/support/queue';

export type { Queue };

/** An engine on `redis` with `topics` and the rest of the queue's configuration (`config`). */
export function engineOn(
  redis: Redis | Cluster,
  topics: Record<string, TopicInput>,
  config: Omit<QueueConfigInput, 'topics'> = {},
  options?: EngineOptions,
): Engine {
  return new Engine(redis, resolveQueueConfig({ ...config, topics }), options);
}

/** The API's operations (test/support/queue.ts) over engineOn's engine. */
export function queueOn(...args: Parameters<typeof engineOn>): Queue {
  return queueOf(engineOn(...args));
}

/** `base` (whose `note` is '') with its note padded so that its JSON text is exactly `bytes` bytes. */
export function paddedBody<T extends { note: string }>(base: T, bytes: number): T {
  const pad = bytes - Buffer.byteLength(JSON.stringify(base));
  const body = { ...base, note: 'x'.repeat(Math.max(0, pad)) };
  if (Buffer.byteLength(JSON.stringify(body)) !== bytes) throw new Error(`body is not ${bytes} bytes`);
  return body;
}

/**
 * Adds `count` jobs built by `job(i)` (i from 0) through addMany, `batch` a call, `inFlight` calls
 * at once, as `caller`; throws unless every one is created. Resolves the wall time, ms.
 */
export async function addInBatches(
  queue: Queue,
  count: number,
  job: (i: number) => object,
  options: { batch?: number; inFlight?: number; caller?: Caller } = {},
): Promise<number> {
  const { batch = 500, inFlight = 1, caller } = options;
  const t0 = performance.now();
  await pool(Math.ceil(count / batch), inFlight, async (b) => {
    const jobs = [];
    for (let i = b * batch; i < Math.min(count, (b + 1) * batch); i++) jobs.push(job(i));
    const { outcomes } = await queue.addMany(jobs, caller);
    const failed = outcomes.find((o) => o.status !== 'created');
    if (failed) throw new Error(`an add was ${failed.status}: ${'error' in failed ? failed.error.message : ''}`);
  });
  return performance.now() - t0;
}

/** Sweeps until nothing more is due now (at most `maxCalls` sweeps). */
export async function sweepAll(engine: Engine, maxCalls = Infinity): Promise<void> {
  for (let calls = 0; calls < maxCalls; calls++) if (!(await engine.sweep()).more) return;
}

/** Runs `task(0)` … `task(count - 1)`, at most `inFlight` at a time. */
export async function pool(count: number, inFlight: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(inFlight, count) }, async () => {
      while (next < count) await task(next++);
    }),
  );
}
