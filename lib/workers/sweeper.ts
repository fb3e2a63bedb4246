import { randomHex } from '../core/random';
import { performance } from 'node:perf_hooks';
import { LEASE, type Engine, type SweepResult } from '../engine';
import { requestFanout } from './fanout';
import type { Invoker } from '../platform/lambda';
import { DEFAULT_TIMINGS, type Timings } from '../core/queue-config';
import { TTR_SECONDS } from '../core/limits';
import { emitMetrics, type Logger } from '../platform/log';
import type { Tracer } from '../platform/tracing';

export interface SweeperDeps {
  engine: Engine;
  invoker: Invoker;
  log: Logger;
  /** Milliseconds left in this invocation. */
  remainingMs: () => number;
  /** The sweeper's and fan-out's timings (config.timings); DEFAULT_TIMINGS when left out. */
  timings?: Timings;
  /** Traces (lib/platform/tracing.ts): a sweep that changed something is a span. None: off. */
  tracer?: Tracer;
}

export type SweeperOutcome = 'busy' | 'idle' | 'handed_over' | 'out_of_time';

/** What a sweeper invocation did. */
export interface SweeperReport {
  outcome: SweeperOutcome;
  sweeps: number;
  moved: number;
  retried: number;
  deadLettered: number;
  fanouts: number;
  /** Callback jobs added from the outboxes (ends whose notifier died, or that a script found). */
  notified: number;
}

/** A report of nothing done yet. */
const emptyReport = (): SweeperReport => ({
  outcome: 'idle',
  sweeps: 0,
  moved: 0,
  retried: 0,
  deadLettered: 0,
  fanouts: 0,
  notified: 0,
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs the sweeper until nothing is due within the horizon (exits, costing nothing while idle) or
 * its invocation time runs short (hands over to a fresh invocation of itself). Holds the lease so
 * one sweeper runs at a time; invokes the fan-out whenever jobs became ready.
 */
export async function runSweeper(deps: SweeperDeps): Promise<SweeperReport> {
  const { engine } = deps;
  const t = deps.timings ?? DEFAULT_TIMINGS;
  const owner = randomHex(8);
  const report = emptyReport();
  const lease = sweeperLease(engine, owner, t);
  const hold = lease.hold;

  if (!(await takeLease(deps, t, () => hold(null, true)))) return { ...report, outcome: 'busy' };
  const waker = engine.wakeWaiter(t.sweeperMaxWaitMs);
  let wakes = 0; // the wake counter seen before the latest sweep
  // A sweep that left jobs ready is followed by claims, whose time-to-run deadlines that sweep could
  // not see: while jobs are left ready the sweeper looks again within the shortest ttr a job may
  // have (lookMs), so an attempt claimed then whose handler dies is timed out at its deadline (the
  // next look sees it running), not at the next tick. With nothing else due within the horizon it
  // looks so for up to sweeperMaxWaitMs, then exits (a fan-out that never claims does not keep it).
  const lookMs = Math.min(t.sweeperMaxWaitMs, TTR_SECONDS.min * 1000);
  let lookingSince: number | null = null; // when the looks at jobs left ready began, nothing else due
  const outboxes = { drainedAt: -Infinity }; // when they were last drained (performance.now())
  try {
    for (;;) {
      if (deps.remainingMs() < t.sweeperReserveMs) return await handOver(deps, owner, report);
      await drainOutboxes(deps, report, outboxes); // before the sweep, which moves the jobs it adds (due now)
      const swept = await sweepOnce(deps, t, report, lease.beforeSweep);
      if (swept === 'lost') return { ...report, outcome: 'busy' };
      if (!swept) continue;
      const { result, sweptFrom, asked } = swept;
      wakes = swept.wakes;
      await afterSweep(deps, t, result, report, asked);
      if (result.more) continue;

      const waitFor = () =>
        result.nextAt === null ? Infinity : result.nextAt - result.now - (performance.now() - sweptFrom);
      const readyLeft = Object.keys(result.readyByTopic).length > 0;
      if (waitFor() <= t.sweeperHorizonMs) lookingSince = null;
      else if (!readyLeft || (lookingSince !== null && performance.now() - lookingSince >= t.sweeperMaxWaitMs)) {
        const released = await engine
          .releaseSweeperLease({ owner, wakesSeen: wakes, force: false })
          .catch(() => LEASE.KEPT);
        if (released === LEASE.RELEASED || released === LEASE.NOT_OWNER) return { ...report, outcome: 'idle' };
        continue; // a wake-up arrived since the sweep
      } else lookingSince ??= performance.now();
      // the look planned (the wake-ups compare a job's due time with it): the next due time, or
      // sooner while jobs are left ready
      const planned = await hold(
        readyLeft ? Math.min(result.nextAt ?? Infinity, result.now + lookMs) : result.nextAt,
        false,
      ).catch(() => null);
      if (planned === LEASE.NOT_OWNER) {
        deps.log.warn('sweeper lost its lease to another sweeper');
        return { ...report, outcome: 'busy' };
      }
      const budget = deps.remainingMs() - t.sweeperReserveMs;
      lease.waited(await waker.wait(Math.min(waitFor(), readyLeft ? lookMs : t.sweeperMaxWaitMs, Math.max(0, budget))));
    }
  } finally {
    waker.close();
    await deps.tracer?.flush();
  }
}

/**
 * The sweeper's lease, held by `owner`: `hold` takes or renews it (and plans the next look), `beforeSweep` before each
 * sweep. A sweep after a wait that no wake-up ended (`waited(false)`), within half a lease of the hold before the wait
 * (which kept the lease and planned the look), does not hold it again: it is still this sweeper's, and no wake-up is
 * pending (the wait's BLPOP takes each as it comes). The wake counter it answers, read before the wait, is older than
 * the sweep: a wake-up since then keeps the sweeper at its release (one sweep more), never lost. One request less for
 * each look of a steady flow.
 */
function sweeperLease(engine: Engine, owner: string, t: Timings) {
  // the last hold that kept the lease: when it was sent (performance.now()) and the wake counter it read
  let held: { at: number; wakes: number } | null = null;
  let woken = true; // what ended the last wait: a wake-up, or (false) its timer
  const hold = async (nextAt: number | null, clearWake: boolean): Promise<number> => {
    const at = performance.now();
    held = null;
    const wakes = await engine.holdSweeperLease({ owner, leaseMs: t.sweeperLeaseMs, nextAt, clearWake });
    if (wakes !== LEASE.NOT_OWNER) held = { at, wakes };
    return wakes;
  };
  return {
    hold,
    beforeSweep(): Promise<number> {
      const fresh = !woken && held !== null && performance.now() - held.at < t.sweeperLeaseMs / 2;
      woken = true; // until a wait ends by its timer
      return fresh && held ? Promise.resolve(held.wakes) : hold(null, true);
    },
    waited(wasWoken: boolean): void {
      woken = wasWoken;
    },
  };
}

/**
 * How often a running sweeper drains the outboxes (and once each invocation, so at least at every tick): the ends
 * whose notifier died before it added their callback jobs, and those a script found (time-outs, expiry), wait this
 * long at most while it runs.
 */
const OUTBOX_LOOK_MS = 10_000;

/**
 * Drains every outbox (lib/engine/outbox.ts) when OUTBOX_LOOK_MS have passed since `outboxes.drainedAt`; an error is
 * logged, and the entries wait for the next look.
 */
async function drainOutboxes(deps: SweeperDeps, report: SweeperReport, outboxes: { drainedAt: number }): Promise<void> {
  if (performance.now() - outboxes.drainedAt < OUTBOX_LOOK_MS) return;
  outboxes.drainedAt = performance.now();
  try {
    const drained = await deps.engine.drainCallbacks();
    report.notified += drained.notified;
    for (const reason of new Set(drained.errors))
      deps.log.error('a callback could not be added; its entry stays in the outbox', { reason });
    if (drained.notified > 0) emitMetrics({}, { callbacksDrained: { unit: 'Count', value: drained.notified } });
  } catch (error) {
    deps.log.error('could not drain the outboxes; the next look tries again', { error });
  }
}

/**
 * One sweep under the lease (`hold` renews it and clears the wake-ups): its result, when it began
 * (the sweep reads Redis's time `now` right after: the wait for `nextAt` counts from here, less what
 * the sweep and the fan-out's invoke took, else every wake-up is late by them), whether it invoked
 * the fan-out (or found one running) and the wake counter seen before it; 'lost' when another
 * sweeper holds the lease; null when it failed (logged, after a pause).
 */
async function sweepOnce(
  deps: SweeperDeps,
  t: Timings,
  report: SweeperReport,
  hold: () => Promise<number>,
): Promise<{ result: SweepResult; sweptFrom: number; asked: boolean; wakes: number } | 'lost' | null> {
  try {
    const wakes = await hold();
    if (wakes === LEASE.NOT_OWNER) {
      deps.log.warn('sweeper lost its lease to another sweeper');
      return 'lost';
    }
    const sweptFrom = performance.now();
    const startMs = Date.now();
    let asked = false;
    // the fan-out is invoked as soon as jobs are ready, beside the schedules' advance
    const result = await deps.engine.sweep(undefined, async (ready) => {
      asked = await fanOut(deps, t, ready, report);
    });
    if (deps.tracer?.enabled) sweepSpan(deps.tracer, startMs, result);
    return { result, sweptFrom, asked, wakes };
  } catch (error) {
    deps.log.error('sweep failed; retrying', { error });
    emitMetrics({}, { sweeperErrors: { unit: 'Count', value: 1 } });
    await pause(t.sweeperErrorPauseMs);
    return null;
  }
}

/**
 * A span of a sweep that moved, retried, dead-lettered, gave back or purged jobs or advanced schedules (one that found
 * nothing is none). Not linked to the jobs it moved: the move takes ids alone from the delayed zset, never their
 * records, so it does not know their traces; the claim that follows links them.
 */
function sweepSpan(tracer: Tracer, startMs: number, r: SweepResult): void {
  const changed = r.moved + r.retried + r.deadLettered + r.givenBack + r.purged + r.schedulesAdvanced;
  if (changed === 0) return;
  tracer
    .start('sweep', {
      startMs,
      attributes: {
        'dq.moved': r.moved,
        'dq.retried': r.retried,
        'dq.dead_lettered': r.deadLettered,
        'dq.given_back': r.givenBack,
        'dq.purged': r.purged,
        'dq.schedules_advanced': r.schedulesAdvanced,
      },
    })
    .end();
}

/**
 * Takes the lease; true when taken, false when another sweeper holds it. Started while Redis is
 * down (a tick, a hand-over, a wake-up), it keeps trying while time is left.
 */
async function takeLease(deps: SweeperDeps, t: Timings, hold: () => Promise<number>): Promise<boolean> {
  for (;;) {
    try {
      return (await hold()) !== LEASE.NOT_OWNER;
    } catch (error) {
      if (deps.remainingMs() < t.sweeperReserveMs + t.sweeperErrorPauseMs) throw error;
      deps.log.error('could not take the lease; retrying', { error });
      await pause(t.sweeperErrorPauseMs);
    }
  }
}

/**
 * Invokes the fan-out for jobs that became ready (`ready`: per topic) unless one is running;
 * false when that failed (logged: the jobs stay ready, the next sweep or tick tries again).
 */
async function fanOut(
  deps: SweeperDeps,
  t: Timings,
  ready: Readonly<Record<string, number>>,
  report: SweeperReport,
): Promise<boolean> {
  try {
    if (await requestFanout({ engine: deps.engine, invoker: deps.invoker, timings: t })) report.fanouts += 1;
    return true;
  } catch (error) {
    deps.log.error('could not invoke the fan-out', { error, ready });
    return false;
  }
}

/**
 * Counts a sweep into the report, invokes the fan-out when jobs became ready unless the sweep
 * invoked it already (`asked`; a failed try there is tried again here), writes the metrics.
 */
async function afterSweep(
  deps: SweeperDeps,
  t: Timings,
  result: SweepResult,
  report: SweeperReport,
  asked: boolean,
): Promise<void> {
  report.sweeps += 1;
  report.moved += result.moved;
  report.retried += result.retried;
  report.deadLettered += result.deadLettered;
  if (!asked && Object.keys(result.readyByTopic).length > 0) await fanOut(deps, t, result.readyByTopic, report);
  if (result.moved + result.retried + result.deadLettered > 0) {
    emitMetrics(
      {},
      {
        moved: { unit: 'Count', value: result.moved },
        retried: { unit: 'Count', value: result.retried },
        deadLettered: { unit: 'Count', value: result.deadLettered },
      },
    );
  }
}

async function handOver(deps: SweeperDeps, owner: string, report: SweeperReport): Promise<SweeperReport> {
  await deps.engine.releaseSweeperLease({ owner, wakesSeen: 0, force: true }).catch(() => LEASE.KEPT);
  try {
    await deps.invoker.invokeAsync('sweeper', { source: 'handover' });
    return { ...report, outcome: 'handed_over' };
  } catch (error) {
    deps.log.error('could not hand over to a new sweeper; the tick will start one', { error });
    return { ...report, outcome: 'out_of_time' };
  }
}
