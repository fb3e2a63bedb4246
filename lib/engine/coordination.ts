/**
 * The sweeper's lease, its wake-ups and the fan-out's mark: the scripts that keep one sweeper
 * and one fan-out running at a time. The Lambda roles decide when to call them and invoke the
 * Lambdas; only this file runs the scripts.
 */
import { FANOUT_MARK, LEASE, WAKE } from './codes';
import type { EngineContext } from './context';
import { sweeperKeys } from './keys';
import { run } from './script-runner';
import { endFanout, holdLease, releaseLease, startFanout, wakeSweeper, type LeaseKeys } from './scripts';

export { FANOUT_MARK, LEASE, WAKE };

function leaseKeys(): LeaseKeys {
  const keys = sweeperKeys();
  return [keys.lease, keys.next, keys.wake, keys.wakes];
}

/** The wake-up list the running sweeper blocks on (BLPOP). */
export function wakeListKey(): string {
  return sweeperKeys().wake;
}

/** Takes or renews the sweeper's lease for `owner`; replies the wake counter, or LEASE.NOT_OWNER. */
export function holdSweeperLease(
  ctx: EngineContext,
  a: { owner: string; leaseMs: number; nextAt: number | null; clearWake: boolean },
): Promise<number> {
  return run(ctx.redis, holdLease(leaseKeys(), a));
}

/** Gives up the lease unless woken since `wakesSeen` (or `force`): LEASE.RELEASED, KEPT or NOT_OWNER. */
export function releaseSweeperLease(
  ctx: EngineContext,
  a: { owner: string; wakesSeen: number; force: boolean },
): Promise<number> {
  return run(ctx.redis, releaseLease(leaseKeys(), a));
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
 * Marks a fan-out as running under `token` unless one is: true when marked (invoke it). A lost
 * reply may hide a mark that was set, so a failed call is asked again with the same token (the
 * script answers MARKED when the mark is already ours), else the mark would block fan-outs until
 * it expires.
 */
export async function markFanout(ctx: EngineContext, token: string, markMs: number): Promise<boolean> {
  const start = () => run(ctx.redis, startFanout([sweeperKeys().fanout], { token, markMs }));
  return (await start().catch(start)) === FANOUT_MARK.MARKED;
}

/**
 * Clears the fan-out mark of `token`; true when it was ours. A failed call is asked again once (the
 * script changes nothing when the mark is not ours), so one lost reply or one TRYAGAIN does not
 * leave the mark to block fan-outs until it expires.
 */
export async function unmarkFanout(ctx: EngineContext, token: string): Promise<boolean> {
  const end = () => run(ctx.redis, endFanout([sweeperKeys().fanout], { token }));
  return (await end().catch(end)) === FANOUT_MARK.CLEARED;
}
