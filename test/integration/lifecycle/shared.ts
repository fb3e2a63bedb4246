/** What every file of the lifecycle suite receives: the Redis under test, the shared helpers, time units. */
import type { Cluster, Redis } from 'ioredis';
import type { TopicInput } from '../../../lib/core/queue-config';
import type { Queue } from '../../support/queue';
import type { ClaimedJob, SweepResult } from '../../../lib/engine';
import type { TestClock } from '../../support/queue';

/** The Redis the suite runs on (a single node, a cluster, TLS) and how many partitions it spreads jobs over. */
export interface SuiteTarget {
  redis(): Redis | Cluster;
  partitions: number;
  /** FUNCTION FLUSH and SCRIPT FLUSH on every node: the library and every script gone. */
  flushScripts(): Promise<void>;
}

/** The helpers every behaviour file shares, built once per target by lifecycleSuite. */
export interface SuiteHelpers {
  /**
   * A queue over one fresh topic (ttr 30, 3 attempts, fixed 10 s backoff unless `topic` overrides), on a fixed clock.
   */
  setup(
    topic?: TopicInput,
    extra?: { retention?: number; deadRetention?: number },
  ): { q: Queue; topic: string; clock: TestClock };
  /** Claims exactly one job of `topic`, failing the test otherwise. */
  claimOne(q: Queue, topic: string): Promise<ClaimedJob>;
  /** Moves due jobs of every partition of the queue's topics. */
  sweep(q: Queue): Promise<SweepResult>;
}

/** One second in ms. */
export const SEC = 1000;
/** One minute in ms. */
export const MIN = 60 * SEC;
/** One hour in ms. */
export const HOUR = 60 * MIN;
