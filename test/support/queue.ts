/** Helpers that build engines for tests: unique topics, a fixed clock, fixed jitter. */
import assert from 'node:assert/strict';
import type { Cluster, Redis } from 'ioredis';
import { resolveQueueConfig, type QueueConfigInput, type TopicInput } from '../../lib/core/queue-config';
import { HttpError } from '../../lib/api/api-errors';
import { Engine, type Job } from '../../lib/engine';
import { Queue } from '../../lib/api/queue';

let counter = 0;

/** A topic name no other test uses, so tests never share keys and need no FLUSHALL. */
export function uniqueTopic(label = 't'): string {
  counter += 1;
  return `${label}-${process.pid}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
}

/** A settable clock, passed to every script instead of Redis TIME. */
export class TestClock {
  constructor(public now = Date.UTC(2030, 0, 1)) {}
  advance(ms: number): number {
    this.now += ms;
    return this.now;
  }
}

/**
 * The API's operations (lib/api/queue.ts) over an engine on `redis` with the given topics, a fixed
 * clock when `clock` is given: tests add with raw input as the API does, and drive attempts with
 * `q.engine` (the engine's door), the one way tests reach the engine.
 */
export function makeQueue(
  redis: Redis | Cluster,
  topics: Record<string, TopicInput>,
  options: { clock?: TestClock; random?: number; config?: Omit<QueueConfigInput, 'topics'> } = {},
): Queue {
  const config = resolveQueueConfig({ ...options.config, topics });
  const engine = new Engine(redis, config, {
    ...(options.clock ? { clock: () => options.clock!.now } : {}),
    random: () => options.random ?? 0,
  });
  return new Queue(engine);
}

/** Awaits `promise` and checks it fails with HttpError `status` `code`; returns the error. */
export async function rejects(promise: Promise<unknown>, status: number, code: string): Promise<HttpError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof HttpError, `expected HttpError, got ${String(error)}`);
    assert.equal(error.status, status);
    assert.equal(error.code, code);
    return error;
  }
  assert.fail(`expected ${status} ${code}, but it succeeded`);
}

/** Every job of group `group`, following `next` from the first page of `limit`; fails past `maxPages` pages. */
export async function listWholeGroup(
  q: Queue,
  topic: string,
  group: string,
  limit: number,
  maxPages = 100,
): Promise<Job[]> {
  const jobs: Job[] = [];
  let page = await q.listGroup(topic, group, { limit });
  jobs.push(...page.jobs);
  for (let pages = 1; page.next !== null; pages++) {
    assert.ok(pages <= maxPages, 'paging ends');
    page = await q.listGroup(topic, group, { limit, cursor: page.next });
    jobs.push(...page.jobs);
  }
  return jobs;
}

/** The API's operations over a runtime's engine, as the routes use them. */
export function apiOf(rt: { engine: Engine }): Queue {
  return new Queue(rt.engine);
}
