/** How a bench reports: numbers formatted, Markdown tables, the machine it ran on, and its JSON line. */
import { cpus, totalmem, type as osType, release as osRelease } from 'node:os';
import type { Redis } from 'ioredis';
import { info } from './redis';

/** `n` with thousands separators and exactly `digits` decimals. */
export const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
/** `n` rounded to `digits` decimals, as a number (for JSON). */
export const round = (n: number, digits = 3) => Number(n.toFixed(digits));

/** A goal's verdict in a table. */
export const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');

/** A row of a table of goals: what was measured, its result, and the goal with its verdict (or ''). */
export type Row = [measure: string, result: string, target: string];

/** Prints `rows` as a Markdown table under `head` (default: measure, result, target), padded to its widest cells. */
export function printTable(rows: readonly string[][], head: readonly string[] = ['measure', 'result', 'target']): void {
  const w = head.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (r: readonly string[]) => `| ${w.map((n, c) => (r[c] ?? '').padEnd(n)).join(' | ')} |`;
  console.log('');
  console.log(line(head));
  console.log(`|${w.map((n) => '-'.repeat(n + 2)).join('|')}|`);
  for (const r of rows) console.log(line(r));
  console.log('');
}

/** Prints a bench's result as its one JSON line (other tools and BENCHMARKS.md read it). */
export function printJson(result: object, prefix = ''): void {
  console.log(`${prefix}${JSON.stringify(result)}`);
}

export type Machine = ReturnType<typeof describeMachine>;

/** The machine a benchmark ran on, with the redis-server it started (its INFO server text and PID). */
export function describeMachine(serverInfo: string, redisPid: number) {
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    os: `${osType()} ${osRelease()}`,
    node: process.version,
    redis: info(serverInfo, 'redis_version') ?? 'unknown',
    redisPid,
  };
}

/** describeMachine of the redis-server `pid` that `redis` is connected to. */
export async function machineOf(redis: Redis, pid: number): Promise<Machine> {
  return describeMachine(await redis.info('server'), pid);
}

/** "machine: 2 CPUs (model), 8 GiB, Linux 6.1, node v20, redis 7.0.15": the line a bench starts with. */
export const machineLine = (m: Machine) =>
  `machine: ${m.cpus} CPUs (${m.cpuModel}), ${m.memoryGiB} GiB, ${m.os}, node ${m.node}, redis ${m.redis}`;
