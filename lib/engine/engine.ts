/**
 * The engine: every operation on jobs, attempts, groups, listings, schedules, API keys and the
 * sweeper's coordination, as one object over a Redis client and a resolved configuration. It takes
 * validated input (the HTTP API validates; the Lambda workers pass what the engine gave them), runs
 * the Lua scripts, and answers typed results and refusal codes; it never throws an HTTP error. A
 * change returns once it is as durable as the configuration asks (durability `replica`: else
 * NotReplicatedError), and a change that made a job the earliest due wakes the sweeper itself
 * (`wake` in the options).
 *
 * Each operation lives in the module of what it works on and is listed here by name; it runs with
 * the engine as `this` and reaches the engine's context (client, layout, clock) through contextOf,
 * which only lib/engine can import: nothing outside the engine sends a Redis command.
 */
import type { QueueConfig, TopicConfig } from '../core/queue-config';
import { keyOps } from './api-keys';
import { attemptOps } from './attempts';
import { callbackOps } from './outbox';
import { bindContext, serverTime, topicOf, type EngineContext, type EngineOptions } from './context';
import { coordinationOps } from './coordination';
import { deadOps } from './dead';
import { flowOps } from './flow';
import { groupOps } from './groups';
import { layoutFor } from './keys';
import { statsOps } from './lateness';
import { listOps } from './lists';
import { Rotation } from './partitions';
import { readOps } from './read';
import { scheduleOps } from './schedules';
import { sweepOps } from './sweep';
import { writeOps } from './write';

export class Engine {
  readonly #ctx: EngineContext;

  constructor(
    redis: EngineContext['redis'],
    readonly config: QueueConfig,
    options: EngineOptions = {},
  ) {
    const fixed = options.clock ?? (() => undefined);
    this.#ctx = {
      redis,
      config,
      layout: layoutFor(config),
      clock: () => fixed() ?? '',
      random: options.random ?? Math.random,
      rotation: new Rotation(),
      // from a random partition: API instances that each start anew do not all fill the same one first
      placement: new Rotation(Math.floor(Math.random() * 1024)),
      ...(options.wake ? { wake: options.wake } : {}),
    };
    bindContext(this, this.#ctx);
  }

  /** The configuration of topic `name`, which the caller has validated. */
  topic(name: string): TopicConfig {
    return topicOf(this.#ctx, name);
  }

  /** The partition of job (or schedule) `topic`/`id`. */
  partitionOf(topic: string, id: string): number {
    return this.#ctx.layout.placeOf(this.config.topics.get(topic) ?? topic, id);
  }

  /** How many partitions topic `topic` spreads over (a listing's cursor names one of them). */
  partitionCount(topic: string): number {
    return this.#ctx.layout.partitionsOf(this.topic(topic)).length;
  }

  /** The clock every due time is on: the fixed test clock, else Redis TIME (epoch ms). */
  serverTime(): Promise<number> {
    return serverTime(this.#ctx);
  }

  /** The fixed test clock, or undefined on Redis's. */
  fixedNow(): number | undefined {
    const fixed = this.#ctx.clock();
    return fixed === '' ? undefined : fixed;
  }

  // Producers' changes (./write.ts, ./dead.ts, ./groups.ts, ./schedules.ts, ./flow.ts): durable
  // before they return; they wake the sweeper when they made a job due first.
  write = writeOps.write;
  freshIds = writeOps.freshIds;
  cancel = callbackOps.cancel;
  reschedule = writeOps.reschedule;
  redrive = deadOps.redrive;
  cancelGroup = groupOps.cancelGroup;
  putSchedule = scheduleOps.putSchedule;
  pauseSchedule = scheduleOps.pauseSchedule;
  deleteSchedule = scheduleOps.deleteSchedule;
  pauseTopic = flowOps.pauseTopic;
  resumeTopic = flowOps.resumeTopic;
  setFlowKey = flowOps.setFlowKey;

  // Reads (./read.ts, ./lists.ts, ./dead.ts, ./groups.ts, ./schedules.ts, ./flow.ts, ./lateness.ts).
  get = readOps.get;
  claimable = readOps.claimable;
  counts = readOps.counts;
  listJobs = listOps.listJobs;
  listDead = deadOps.listDead;
  listGroup = groupOps.listGroup;
  getSchedule = scheduleOps.getSchedule;
  listSchedules = scheduleOps.listSchedules;
  flowKey = flowOps.flowKey;
  stats = statsOps.stats;
  statsAll = statsOps.statsAll;

  // Attempts: the sweeper, the fan-out and the topic handlers (./sweep.ts, ./attempts.ts), and their
  // coordination (./coordination.ts).
  sweep = sweepOps.sweep;
  claimPaced = attemptOps.claimPaced;
  claim = attemptOps.claim;
  claimStarted = attemptOps.claimStarted;
  claimStartedCounted = attemptOps.claimStartedCounted;
  ackAndClaimStarted = attemptOps.ackAndClaimStarted;
  start = attemptOps.start;
  startTimed = attemptOps.startTimed;
  ack = attemptOps.ack;
  fail = attemptOps.fail;
  release = attemptOps.release;
  holdSweeperLease = coordinationOps.holdSweeperLease;
  releaseSweeperLease = coordinationOps.releaseSweeperLease;
  markFanout = coordinationOps.markFanout;
  unmarkFanout = coordinationOps.unmarkFanout;
  wakeWaiter = coordinationOps.wakeWaiter;
  drainCallbacks = callbackOps.drainCallbacks;

  // API keys (./api-keys.ts).
  authKey = keyOps.authKey;
  createKey = keyOps.createKey;
  revokeKey = keyOps.revokeKey;
  listKeys = keyOps.listKeys;
}
