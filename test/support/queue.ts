/** Helpers that build engines for tests: unique topics, a fixed clock, fixed jitter. */
import assert from 'node:assert/strict';
import type { Cluster, Redis } from 'ioredis';
import { resolveQueueConfig, type QueueConfigInput, type TopicInput } from '../../lib/core/queue-config';
import { Engine, type Job } from '../../lib/engine';
import { jobService } from '../../lib/api/job-routes';
import { keyService } from '../../lib/api/key-routes';
import { scheduleService } from '../../lib/api/schedule-routes';
import { topicService } from '../../lib/api/topic-routes';
import type { Caller } from '../../lib/engine';
import { HttpError, type IfMatch, type JobsQuery, type GroupPage } from '../../lib/testing';

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

type Ref = { topic: string; id: string };

/**
 * A write's outcome with the job that stands: every outcome has one but a duplicate whose job was purged, which a
 * test that means it reads from jobService itself (this throws on it).
 */
function standing<T extends { job: Job | null }>(outcome: T): T & { job: Job } {
  assert.ok(outcome.job, `the write answered without a job: ${JSON.stringify(outcome)}`);
  return outcome as T & { job: Job };
}

/**
 * The API's operations over one engine, as the routes call them (the service functions of
 * lib/api/*-routes.ts with the engine bound): tests add with raw input as the API does, get its
 * refusals as HttpErrors, and drive attempts with `q.engine` (the engine's door).
 */
export function queueOf(engine: Engine) {
  const q = {
    engine,
    config: engine.config,
    add: async (input: unknown, caller?: Caller) => standing(await jobService.add(engine, input, caller)),
    addMany: (inputs: readonly unknown[], caller?: Caller) => jobService.addMany(engine, inputs, caller),
    put: async (topic: string, id: string, input: unknown, options?: { ifMatch?: IfMatch; by?: string }) =>
      standing(await jobService.put(engine, { topic, id }, input, options)),
    get: (topic: string, id: string) => jobService.get(engine, topic, id),
    cancel: (topic: string, id: string, options?: { ifMatch?: IfMatch; by?: string }) =>
      jobService.cancel(engine, { topic, id }, options),
    reschedule: (topic: string, id: string, input: unknown) => jobService.reschedule(engine, topic, id, input),
    redrive: (topic: string, request?: Parameters<typeof topicService.redrive>[2], by?: string) =>
      topicService.redrive(engine, topic, request, by),
    stats: (topic: string) => topicService.stats(engine, topic),
    statsAll: (caller?: Caller) => topicService.statsAll(engine, caller),
    cancelGroup: (topic: string, group: string, by?: string) => topicService.cancelGroup(engine, topic, group, by),
    listGroup: (topic: string, group: string, page?: GroupPage) => topicService.listGroup(engine, topic, group, page),
    listJobs: (topic: string, query: JobsQuery) => topicService.listJobs(engine, topic, query),
    listDead: (topic: string, page?: { limit?: number; after?: string }) => topicService.listDead(engine, topic, page),
    pauseTopic: (topic: string, by?: string) => topicService.pauseTopic(engine, topic, by),
    resumeTopic: (topic: string, by?: string) => topicService.resumeTopic(engine, topic, by),
    flowKey: (topic: string, key: string) => topicService.flowKey(engine, topic, key),
    setFlowKey: (topic: string, key: string, input: unknown, by?: string) =>
      topicService.setFlowKey(engine, topic, key, input, by),
    pauseFlowKey: (topic: string, key: string, paused: boolean, by?: string) =>
      topicService.pauseFlowKey(engine, topic, key, paused, by),
    clearFlowKey: (topic: string, key: string, by?: string) => topicService.clearFlowKey(engine, topic, key, by),
    putSchedule: (topic: string, id: string, input: unknown, by?: string) =>
      scheduleService.putSchedule(engine, { topic, id } satisfies Ref, input, by),
    getSchedule: (topic: string, id: string) => scheduleService.getSchedule(engine, topic, id),
    deleteSchedule: (topic: string, id: string) => scheduleService.deleteSchedule(engine, topic, id),
    pauseSchedule: (topic: string, id: string, paused: boolean, by?: string) =>
      scheduleService.pauseSchedule(engine, { topic, id }, paused, by),
    listSchedules: (topic: string, page?: { limit?: number; cursor?: string }) =>
      scheduleService.listSchedules(engine, topic, page),
    createKey: (input: unknown, by: Caller) => keyService.createKey(engine, input, by),
    revokeKey: (name: string, deploymentSha: string) => keyService.revokeKey(engine, name, deploymentSha),
  };
  return q;
}

export type Queue = ReturnType<typeof queueOf>;

/**
 * The API's operations (queueOf) over an engine on `redis` with the given topics, a fixed
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
  return queueOf(engine);
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
  return queueOf(rt.engine);
}
