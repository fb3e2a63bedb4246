import type { QueueConfig, TopicConfig } from '../core/queue-config';
import type { Layout } from './keys';
import type { Client } from './script-runner';
import type { Rotation } from './partitions';
import type { ClockArg } from './scripts';

/** What an engine is built with besides its client and configuration. */
export interface EngineOptions {
  /** Fixed clock for tests (epoch ms), passed to every script; undefined uses Redis TIME. */
  clock?: () => number | undefined;
  /** Source of jitter in [0, 1). */
  random?: () => number;
  /**
   * Wake-ups: when a change made a job the earliest due of its partition, the engine wakes the
   * running sweeper, or calls `startSweeper` when none runs and the job is due within
   * `horizonMs`. Left out (tests), no wake-up is sent: the caller sweeps.
   */
  wake?: { horizonMs: number; startSweeper?: () => Promise<unknown>; onError: (error: unknown) => void };
}

/**
 * What every engine operation works with: one per engine, kept inside lib/engine (an engine's
 * operations reach it with contextOf; nothing outside the engine can).
 */
export interface EngineContext {
  readonly redis: Client;
  readonly config: QueueConfig;
  /** The stack's partitions: every key name and every job's partition comes from it. */
  readonly layout: Layout;
  /** ARGV[1] of every clocked script: the fixed test clock, or '' for Redis TIME. */
  clock(): ClockArg;
  /** Source of jitter in [0, 1). */
  random(): number;
  /** Where the next claim starts its round of the partitions. */
  readonly rotation: Rotation;
  /** The partition the next run of a batch add's generated ids goes to (freshIds). */
  readonly placement: Rotation;
  /** The engine's wake-ups (EngineOptions.wake); none in tests that sweep themselves. */
  readonly wake?: EngineOptions['wake'];
}

const contexts = new WeakMap<object, EngineContext>();

/** Gives `engine` its context (the Engine's constructor, once). */
export function bindContext(engine: object, ctx: EngineContext): void {
  contexts.set(engine, ctx);
}

/**
 * The context of an engine, for the engine's own operations (each is called with the engine as
 * `this`); an object made from an engine (`Object.create(engine)`, a test's stand-in that replaces
 * one operation) has its engine's.
 */
export function contextOf(engine: object): EngineContext {
  for (let o: object | null = engine; o !== null; o = Object.getPrototypeOf(o) as object | null) {
    const ctx = contexts.get(o);
    if (ctx) return ctx;
  }
  throw new Error('not an engine: an engine operation was called without its engine');
}

/** The configuration of topic `name`, which the caller has validated. */
export function topicOf(ctx: EngineContext, name: string): TopicConfig {
  const t = ctx.config.topics.get(name);
  if (!t) throw new Error(`unknown topic ${name}: the caller validates topics`);
  return t;
}

/** The clock every due time and deadline is on: the fixed test clock, else Redis TIME (epoch ms). */
export async function serverTime(ctx: EngineContext): Promise<number> {
  const fixed = ctx.clock();
  if (fixed !== '') return fixed;
  const [seconds, micros] = await ctx.redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}
