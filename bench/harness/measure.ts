/**
 * Reading what a phase cost: Redis's CPU (INFO cpu) and commands (INFO commandstats) around it,
 * this process's and the machine's CPU, the load average, and percentiles of what was timed.
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { info } from './redis';

/** INFO cpu: seconds of user and system CPU, their sum, and the main thread's sum when INFO has it (else null). */
export async function redisCpu(
  redis: Redis,
): Promise<{ user: number; sys: number; seconds: number; main: number | null }> {
  const text = await redis.info('cpu');
  const num = (field: string) => {
    const v = info(text, field);
    return v === undefined ? null : Number(v);
  };
  const user = num('used_cpu_user') ?? 0;
  const sys = num('used_cpu_sys') ?? 0;
  const mainUser = num('used_cpu_user_main_thread');
  const mainSys = num('used_cpu_sys_main_thread');
  return { user, sys, seconds: user + sys, main: mainUser === null || mainSys === null ? null : mainUser + mainSys };
}

/** One command's line of INFO commandstats. */
export interface CommandStat {
  calls: number;
  usec: number;
  usecPerCall: number;
  rejected: number;
}

/** INFO commandstats, by command (`get`, `config|set`, ...). */
export async function commandStats(redis: Redis): Promise<Map<string, CommandStat>> {
  const stats = new Map<string, CommandStat>();
  for (const [, name, fields] of (await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):(.*)$/gm)) {
    const field = (key: string) => Number(new RegExp(`(?:^|,)${key}=([\\d.]+)`).exec(fields!)?.[1] ?? 0);
    stats.set(name!, {
      calls: field('calls'),
      usec: field('usec'),
      usecPerCall: field('usec_per_call'),
      rejected: field('rejected_calls'),
    });
  }
  return stats;
}

/** The commands that run a script (their read-only forms aside). */
export const SCRIPT_COMMANDS: readonly string[] = ['fcall', 'evalsha', 'eval'];
/** True for the bench's own reads of Redis (INFO, CONFIG ...): not the workload's. */
export const isInfoOrConfig = (name: string) => name === 'info' || name.startsWith('config');

/** The sum of `field` over the commands `which` picks. */
export function total(
  stats: ReadonlyMap<string, CommandStat>,
  which: (name: string) => boolean,
  field: keyof CommandStat = 'calls',
): number {
  let n = 0;
  for (const [name, stat] of stats) if (which(name)) n += stat[field];
  return n;
}

/** Calls of each workload command (INFO and CONFIG left out), as an object. */
export function callsByCommand(stats: ReadonlyMap<string, CommandStat>): Record<string, number> {
  return Object.fromEntries([...stats].filter(([name]) => !isInfoOrConfig(name)).map(([name, s]) => [name, s.calls]));
}

/** Redis CPU seconds (user + sys, and each), workload commands and script calls by command, from INFO. */
export async function redisCounters(redis: Redis) {
  const cpu = await redisCpu(redis);
  const stats = await commandStats(redis);
  return {
    cpuS: cpu.seconds,
    userS: cpu.user,
    sysS: cpu.sys,
    commands: total(stats, (name) => !isInfoOrConfig(name)),
    scriptCalls: total(stats, (name) => SCRIPT_COMMANDS.includes(name)),
    byCommand: callsByCommand(stats),
  };
}

/**
 * CPU seconds of the whole machine so far (Linux /proc/stat): busy (user, nice, system, irq,
 * softirq, steal) and all (idle and iowait too); undefined elsewhere.
 */
export function machineCpu(): { busy: number; all: number } | undefined {
  try {
    const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
    const n = fields.map(Number);
    const all = n.slice(0, 8).reduce((a, b) => a + b, 0); // user nice system idle iowait irq softirq steal
    return { busy: (all - (n[3] ?? 0) - (n[4] ?? 0)) / 100, all: all / 100 }; // USER_HZ
  } catch {
    return undefined;
  }
}

/** CPU seconds process `pid` has used so far (user + system, /proc), 0 where there is no /proc. */
export function processCpu(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return 0; // not Linux: no figure
  }
}

/** A stopwatch of wall time and of this process's CPU, from now. */
export function stopwatch(): { wallMs(): number; cpuMs(): number } {
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  return {
    wallMs: () => performance.now() - t0,
    cpuMs: () => {
      const used = process.cpuUsage(cpu0);
      return (used.user + used.system) / 1000;
    },
  };
}

/** The load averages (1, 5, 15 min) rounded to `digits`. */
export const loadNow = (digits = 2) => loadavg().map((l) => Number(l.toFixed(digits)));
/** The load averages as text, each with `digits` decimals, joined by `sep`. */
export const loadText = (digits: number, sep: string) =>
  loadavg()
    .map((l) => l.toFixed(digits))
    .join(sep);

export const sortNum = (values: Iterable<number>) => [...values].sort((a, b) => a - b);

/** The `q` quantile (0..1) of sorted `values`, nearest rank; `empty` when there are none. */
export const quantile = (sorted: readonly number[], q: number, empty = NaN) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? empty;

/** The value at index ⌊q · n⌋ of sorted `values` (the last for q = 1); NaN when there are none. */
export const quantileFloor = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;

/** The median: the middle value, or the mean of the two middle ones. */
export function median(values: readonly number[]): number {
  const sorted = sortNum(values);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
