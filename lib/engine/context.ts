import type { QueueConfig } from '../core/queue-config';
import type { Layout } from './keys';
import type { Client } from './script-runner';
import type { Rotation } from './partitions';
import type { ClockArg } from './scripts';

/** What every engine operation works with: one per DelayQueue. */
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
  /** Which partition's lateness hash the next record of starts goes to (lib/engine/lateness.ts). */
  readonly statsRotation: Rotation;
}

/** The clock every due time and deadline is on: the fixed test clock, else Redis TIME (epoch ms). */
export async function serverTime(ctx: EngineContext): Promise<number> {
  const fixed = ctx.clock();
  if (fixed !== '') return fixed;
  const [seconds, micros] = await ctx.redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}
