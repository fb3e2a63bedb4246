/** What every file of the lifecycle suite receives: the Redis under test, the shared helpers, time units. */
import type { Cluster, Redis } from 'ioredis';
import type { TopicInput } from '../../../lib/core/queue-config';
import type { Queue } from '../../support/queue';
import type { ClaimedJob, SweepResult } from '../../../lib/engine';
import type { TestClock } from '../../support/queue';
import { run, scheduleKeys, scripts as script, topicKeys } from '../../../lib/testing';

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

/**
 * One moveDue call on partition 0 of `topic` at `now` (3 attempts, fixed 10 s backoff, dead jobs kept an hour): its
 * reply, for a test that purges a job without the sweep's leave of its group.
 */
export function moveDueOnce(target: SuiteTarget, topic: string, now: number) {
  const k = topicKeys(0, topic, target.partitions);
  const next = scheduleKeys(0, topic, target.partitions).next;
  return run(
    target.redis(),
    script.moveDue([k.delayed, k.ready, k.running, k.jobs, k.bodies, k.dead, k.done, next], {
      clock: now,
      limit: 100,
      maxAttempts: 3,
      backoff: 'f:10',
      random: 0,
      deadRetentionMs: HOUR,
      maxBytes: 1 << 20,
    }),
  );
}
