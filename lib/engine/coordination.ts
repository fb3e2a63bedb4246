/**
 * The sweeper's lease, its wake-ups and the fan-out's mark: the scripts that keep one sweeper
 * and one fan-out running at a time. The Lambda roles decide when to call them and invoke the
 * Lambdas; only this file runs the scripts.
 */
import { Cluster, type Redis } from 'ioredis';
import { FANOUT_MARK, LEASE, WAKE } from './codes';
import { contextOf, type EngineContext } from './context';
import { sweeperKeys } from './keys';
import { run } from './script-runner';
import { endFanout, holdLease, releaseLease, startFanout, wakeSweeper, type LeaseKeys } from './scripts';

export { FANOUT_MARK, LEASE, WAKE };

/**
 * Makes sure a sweeper looks in time for a job due at `dueAt` ('now': due on Redis's clock now):
 * wakes the running one, or starts one (`wake.startSweeper`) when none runs and the job is due
 * within the horizon. Never throws: the job is stored, and the tick bounds its lateness. Without
 * wake-ups in the engine's options (tests that sweep themselves) it does nothing.
 */
export async function wakeFor(ctx: EngineContext, dueAt: number | 'now'): Promise<void> {
  const wake = ctx.wake;
  if (!wake) return;
  try {
    if ((await wakeForDue(ctx, dueAt, wake.horizonMs)) === WAKE.START_SWEEPER && wake.startSweeper)
      await wake.startSweeper();
  } catch (error) {
    wake.onError(error);
  }
}

function leaseKeys(): LeaseKeys {
  const keys = sweeperKeys();
  return [keys.lease, keys.next, keys.wake, keys.wakes];
}

/** The wake-up list the running sweeper blocks on (BLPOP). */
function wakeListKey(): string {
  return sweeperKeys().wake;
}

/**
 * Makes sure a sweeper looks in time for a job due at `dueAt` ('now': due on Redis's clock now):
 * wakes the running one, or answers WAKE.START_SWEEPER when none runs and the job is due within
 * `horizonMs` (the caller starts one).
 */
export function wakeForDue(ctx: EngineContext, dueAt: number | 'now', horizonMs: number): Promise<number> {
  return run(ctx.redis, wakeSweeper(leaseKeys(), { clock: '', dueAt, horizonMs }));
}

/**
 * Waits on the wake list with one BLPOP kept pending on its own connection, while a local timer
 * measures the sleep: Redis checks blocking timeouts only about every 100 ms, a timer is exact.
 */
export class WakeWaiter {
  private pending: Promise<boolean> | undefined;
  /**
   * A wake-up popped by a BLPOP left pending after a wait ended by its timer, while the sweeper
   * was sweeping: the next wait returns at once instead of sleeping on the old plan.
   */
  private missed = false;
  private readonly conn: Redis | Cluster;
  constructor(
    redis: Redis | Cluster,
    private readonly key: string,
    private readonly maxWaitMs: number,
  ) {
    // its own connection, without the command timeout: BLPOP blocks on purpose
    this.conn =
      redis instanceof Cluster
        ? redis.duplicate(undefined, { redisOptions: { ...redis.options.redisOptions, commandTimeout: undefined } })
        : redis.duplicate({ commandTimeout: undefined, enableAutoPipelining: false });
    this.conn.on('error', () => undefined);
  }
  /** Resolves true when woken, false when `ms` passed. */
  async wait(ms: number): Promise<boolean> {
    if (this.missed) {
      this.missed = false;
      return true;
    }
    if (!this.pending) {
      this.pending = (this.conn.blpop(this.key, this.maxWaitMs / 1000) as Promise<unknown>).then(
        (popped) => {
          this.pending = undefined;
          if (popped !== null) this.missed = true; // cleared below by the wait that sees it
          return popped !== null;
        },
        () => {
          this.pending = undefined;
          return false;
        },
      );
    }
    let timer: NodeJS.Timeout | undefined;
    const slept = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, ms))));
    const result = await Promise.race([slept, this.pending]);
    clearTimeout(timer);
    if (result) this.missed = false; // this wait took the wake-up
    return result;
  }
  close(): void {
    this.conn.disconnect();
  }
}

/** The engine's operations for the sweeper and the fan-out (Engine in ./engine.ts lists them). */
export const coordinationOps = {
  /** Takes or renews the sweeper's lease for `owner`; replies the wake counter, or LEASE.NOT_OWNER. */
  holdSweeperLease(
    this: object,
    a: { owner: string; leaseMs: number; nextAt: number | null; clearWake: boolean },
  ): Promise<number> {
    return run(contextOf(this).redis, holdLease(leaseKeys(), a));
  },

  /** Gives up the lease unless woken since `wakesSeen` (or `force`): LEASE.RELEASED, KEPT or NOT_OWNER. */
  releaseSweeperLease(this: object, a: { owner: string; wakesSeen: number; force: boolean }): Promise<number> {
    return run(contextOf(this).redis, releaseLease(leaseKeys(), a));
  },

  /**
   * Marks a fan-out as running under `token` unless one is: true when marked (invoke it). A lost
   * reply may hide a mark that was set, so a failed call is asked again with the same token (the
   * script answers MARKED when the mark is already ours), else the mark would block fan-outs until
   * it expires.
   */
  async markFanout(this: object, token: string, markMs: number): Promise<boolean> {
    const redis = contextOf(this).redis;
    const start = () => run(redis, startFanout([sweeperKeys().fanout], { token, markMs }));
    return (await start().catch(start)) === FANOUT_MARK.MARKED;
  },

  /**
   * Clears the fan-out mark of `token`; true when it was ours. A failed call is asked again once (the
   * script changes nothing when the mark is not ours), so one lost reply or one TRYAGAIN does not
   * leave the mark to block fan-outs until it expires.
   */
  async unmarkFanout(this: object, token: string): Promise<boolean> {
    const redis = contextOf(this).redis;
    const end = () => run(redis, endFanout([sweeperKeys().fanout], { token }));
    return (await end().catch(end)) === FANOUT_MARK.CLEARED;
  },

  /** A waiter on the sweeper's wake-up list, on a connection of its own (close it when done). */
  wakeWaiter(this: object, maxWaitMs: number): WakeWaiter {
    return new WakeWaiter(contextOf(this).redis, wakeListKey(), maxWaitMs);
  },
};
