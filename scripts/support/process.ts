/**
 * Process helpers shared by `npm run dev` (scripts/dev.ts), the end-to-end harness
 * (test/support/offline.ts, test/support/redis.ts) and the fault harness (test/fault/support):
 * free ports, polling, waiting for a child while it makes progress, and stopping a child or its
 * whole process group with a grace period.
 * Every child is stopped by its PID or process group, never by name.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** How long a stopped child gets between SIGTERM and SIGKILL. */
export const STOP_GRACE_MS = 5_000;

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** The first port the kernel hands out for `listen(0)` and outgoing connections (Linux; else IANA's 49152). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 1024) return low;
  } catch {
    // not Linux: use IANA's dynamic range
  }
  return 49152;
}

/**
 * A free TCP port on 127.0.0.1 (and, with `bus`, port + 10000 free too, for a Redis cluster bus),
 * chosen at random below the kernel's ephemeral range. A port between "found free" and "bound by
 * the server it is for" must not be taken meanwhile: ports from the ephemeral range are, by any
 * `listen(0)` (the tests' receivers, routers, proxies) and by outgoing connections. That happened
 * in a soak: serverless offline's port went to another test's receiver, which then answered the
 * e2e requests. Ports below the range are handed out by nobody but this function.
 */
export async function freePort(bus = false): Promise<number> {
  const low = 10_000;
  // exclusive; the bus port stays below the range too
  const high = Math.min(ephemeralLow(), 65_536) - (bus ? 10_000 : 0);
  for (let tries = 0; tries < 200; tries++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (!(await portFree(port))) continue;
    if (!bus || (await portFree(port + 10_000))) return port;
  }
  throw new Error(`no free port${bus ? ' pair' : ''} found between ${low} and ${high}`);
}

/**
 * Calls `check` every `everyMs` until it returns true (resolves true) or `timeoutMs` has passed
 * (resolves false). A check that throws counts as false.
 */
export async function until(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  everyMs = 100,
): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (
      await Promise.resolve()
        .then(check)
        .catch(() => false)
    )
      return true;
    if (Date.now() > end) return false;
    await sleep(everyMs);
  }
}

/** True when process group `pgid` has no process left (zombies aside). */
export function groupGone(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** Sends `signal` to process group `pgid`; a group that is already gone is fine. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {}
}

/** Resolves when `child` has exited (at once if it already has). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * Stops a child: `signal` (SIGTERM by default) to it, or to its whole process group when it was
 * spawned `detached`; SIGKILL after `graceMs`; resolves when it has exited. For a group, whatever
 * is left of it once the leader is gone (an esbuild service, say) gets SIGKILL too. Does not wait
 * for the group to vanish: its exited members stay zombies until init reaps them.
 */
export async function stopChild(
  child: ChildProcess,
  options: { group?: boolean; graceMs?: number; signal?: NodeJS.Signals } = {},
): Promise<void> {
  const pid = child.pid;
  if (pid === undefined) return;
  const { group = false, graceMs = STOP_GRACE_MS, signal = 'SIGTERM' } = options;
  const send = (s: NodeJS.Signals) => {
    if (group) signalGroup(pid, s);
    else {
      try {
        process.kill(pid, s);
      } catch {}
    }
  };
  const done = exited(child);
  send(signal);
  const timer = setTimeout(() => send('SIGKILL'), graceMs);
  await done;
  clearTimeout(timer);
  if (group) signalGroup(pid, 'SIGKILL');
}

const tracked = new Map<ChildProcess, { group: boolean }>();
let hooked = false;

/**
 * Remembers a child until it exits, so that it is SIGKILLed (with its group, when `group`) if
 * this process exits first. A last resort: callers stop their children themselves.
 */
export function killOnExit(child: ChildProcess, group = false): void {
  tracked.set(child, { group });
  child.once('exit', () => {
    if (!group) tracked.delete(child);
  });
  if (hooked) return;
  hooked = true;
  process.once('exit', () => {
    for (const [c, { group: g }] of tracked) {
      if (g && c.pid !== undefined) signalGroup(c.pid, 'SIGKILL');
      else if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    }
  });
}

/** Forgets a child given to killOnExit (its group was stopped). */
export function forget(child: ChildProcess): void {
  tracked.delete(child);
}

/**
 * CPU time (clock ticks) used so far by the processes of group `pgid`, their reaped children
 * included (so the sum does not drop when one exits), from /proc; null where there is no /proc
 * (macOS): then only output counts as progress.
 */
export function groupCpuTicks(pgid: number): number | null {
  if (!existsSync('/proc/self/stat')) return null;
  let ticks = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from the 3rd on
      if (Number(fields[2]) !== pgid) continue; // pgrp
      // utime stime cutime cstime
      ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    } catch {} // the process ended meanwhile
  }
  return ticks;
}

/** How long serverless offline may print nothing and use no CPU before its start counts as hung. */
export const OFFLINE_STALL_MS = 120_000;
/** How long a start of serverless offline may take in all, even while it keeps working. */
export const OFFLINE_READY_LIMIT_MS = 600_000;

/** What waitWhileProgressing checks, and how long it lets a child be silent and idle. */
export interface ProgressWait {
  /** True once what is awaited is there (a check that throws counts as false). */
  ready: () => boolean | Promise<boolean>;
  /** The process group whose CPU time counts as progress (a child spawned `detached`: its PID). */
  pgid: number;
  /** When the child last printed (Date.now() ms); output counts as progress. */
  lastOutputAt: () => number;
  /** Give up after this long with neither output nor CPU used. */
  stallMs: number;
  /** Give up after this long in all, even while the child keeps working (default: never). */
  limitMs?: number;
  /** A reason to stop waiting now (the child exited, its output says it failed), or undefined. */
  abort?: () => string | undefined;
  /** Time between checks (default 250 ms). */
  everyMs?: number;
  /** Called after every check that found it not ready: for progress reports. */
  onWait?: (progress: { elapsedMs: number; idleMs: number; cpu: number | null }) => void;
  /** Reads the group's CPU time (default groupCpuTicks; tests pass their own). */
  cpuTicks?: (pgid: number) => number | null;
}

/** How a progress wait ended: `idleMs` is how long the child had been silent and idle then. */
export type ProgressOutcome =
  | { result: 'ready'; elapsedMs: number }
  | { result: 'stalled' | 'overtime'; elapsedMs: number; idleMs: number }
  | { result: 'aborted'; elapsedMs: number; reason: string };

/**
 * Waits for `ready` as long as the child makes progress: it prints, or its process group uses
 * CPU (from /proc). A busy machine makes the wait longer, never a failure; it ends 'stalled'
 * only after `stallMs` with neither, or 'overtime' after `limitMs`. Shared by `npm run dev`
 * (scripts/dev.ts) and the end-to-end harness (test/support/offline.ts) for serverless offline.
 */
export async function waitWhileProgressing(wait: ProgressWait): Promise<ProgressOutcome> {
  const { pgid, stallMs, limitMs = Infinity, everyMs = 250, cpuTicks = groupCpuTicks } = wait;
  const started = Date.now();
  let lastCpu = cpuTicks(pgid);
  let lastProgress = started;
  for (;;) {
    const reason = wait.abort?.();
    if (reason !== undefined) return { result: 'aborted', elapsedMs: Date.now() - started, reason };
    let ready = false;
    try {
      ready = await wait.ready();
    } catch {} // not ready yet
    if (ready) return { result: 'ready', elapsedMs: Date.now() - started };
    const now = Date.now();
    const cpu = cpuTicks(pgid);
    if (cpu !== null && lastCpu !== null && cpu > lastCpu) lastProgress = now;
    lastProgress = Math.max(lastProgress, wait.lastOutputAt());
    lastCpu = cpu;
    const elapsedMs = now - started;
    const idleMs = now - lastProgress;
    if (idleMs > stallMs) return { result: 'stalled', elapsedMs, idleMs };
    if (elapsedMs > limitMs) return { result: 'overtime', elapsedMs, idleMs };
    wait.onWait?.({ elapsedMs, idleMs, cpu });
    await sleep(everyMs);
  }
}
