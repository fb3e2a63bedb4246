/**
 * The engine's lifecycle suite: every return code of every script, on whatever Redis the caller
 * provides (a single node, or a cluster with several partitions). Timing uses a fixed clock.
 * One file per behaviour; this door builds the shared helpers once and declares every file, in order.
 */
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import type { TopicInput } from '../../../lib/core/queue-config';
import type { Queue } from '../../support/queue';
import { makeQueue, TestClock, uniqueTopic } from '../../support/queue';
import type { SuiteHelpers, SuiteTarget } from './shared';
import { addGet } from './add-get';
import { cancelReschedule } from './cancel-reschedule';
import { retriesDead } from './retries-dead';
import { attempts } from './attempts';
import { groups } from './groups';
import { smallGroups } from './small-groups';
import { versions } from './versions';
import { listings } from './listings';
import { flushAndSlots } from './flush-and-slots';

export type { SuiteTarget } from './shared';

/**
 * Declares the lifecycle suite on `target` inside the caller's describe: the same tests, in the same order, on every
 * target.
 */
export function lifecycleSuite(target: SuiteTarget): void {
  function setup(topic: TopicInput = {}, extra: { retention?: number; deadRetention?: number } = {}) {
    const name = uniqueTopic();
    const clock = new TestClock();
    const q = makeQueue(
      target.redis(),
      { [name]: { ttr: 30, maxAttempts: 3, backoff: { type: 'fixed', delay: 10 }, ...topic } },
      {
        clock,
        config: { partitions: target.partitions, ...extra },
      },
    );
    return { q, topic: name, clock };
  }

  async function claimOne(q: Queue, topic: string) {
    const claimed = await q.engine.claim(topic, 1);
    assert.equal(claimed.length, 1, 'expected one job to claim');
    return claimed[0]!;
  }

  /** Moves due jobs of every partition of the queue's topics. */
  async function sweep(q: Queue) {
    return q.engine.sweep();
  }
  const h: SuiteHelpers = { setup, claimOne, sweep };

  addGet(target, h);
  cancelReschedule(target, h);
  retriesDead(target, h);
  attempts(target, h);
  // one describe whose tests live in four files, so that no test changes its suite
  describe('groups, listings and versions', () => {
    groups(target, h);
    smallGroups(target, h);
    versions(target, h);
    listings(target, h);
  });
  flushAndSlots(target, h);
}
