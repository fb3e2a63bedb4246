/** The benchmarks' environment knobs, and how they describe the machine. */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { cpus, totalmem, type as osType, release as osRelease } from 'node:os';
import { SCRIPTS, scriptText, type ScriptName } from '../lib/testing';

/** Positive integer environment variable `name`, or `fallback` when unset or empty; throws naming it otherwise. */
export function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

/** A field of an INFO reply, or undefined. */
export function info(text: string, field: string): string | undefined {
  return new RegExp(`^${field}:(.*)$`, 'm').exec(text)?.[1]?.trim();
}

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

/**
 * Names the script of a SLOWLOG entry: an EVALSHA by its digest, an EVAL (ioredis sends one for a
 * script's first call on a connection) by its text's length, since SLOWLOG cuts the text to 128
 * bytes and "... (N more bytes)" (every script starts with the same helpers). Undefined when unknown.
 */
export function scriptNamer(): {
  bySha(sha: string): ScriptName | undefined;
  byEvalText(text: string): ScriptName | undefined;
} {
  const byDigest = new Map<string, ScriptName>();
  const byLength = new Map<number, ScriptName | 'ambiguous'>();
  for (const name of Object.keys(SCRIPTS) as ScriptName[]) {
    const text = scriptText(name);
    byDigest.set(createHash('sha1').update(text).digest('hex'), name);
    const length = Buffer.byteLength(text);
    byLength.set(length, byLength.has(length) ? 'ambiguous' : name);
  }
  return {
    bySha: (sha) => byDigest.get(sha.toLowerCase()),
    byEvalText: (text) => {
      const name = byLength.get(128 + Number(/\.\.\. \((\d+) more bytes\)$/.exec(text)?.[1] ?? NaN));
      return name && name !== 'ambiguous' ? name : undefined;
    },
  };
}

/**
 * BENCH_REDIS_NICE (e.g. -20, which needs root): the redis-server a bench started (`pid`) is
 * reniced to it, so that on a machine shared with CPU hogs its commands are timed without being
 * preempted, as on a cache node with its own vCPU. The bench's clients keep their priority. Returns
 * the niceness set, or null when unset; throws when renice fails.
 */
export function reniceRedis(pid: number): number | null {
  const raw = process.env.BENCH_REDIS_NICE;
  if (raw === undefined || raw === '') return null;
  const nice = Number(raw);
  if (!Number.isInteger(nice) || nice < -20 || nice > 19)
    throw new Error(`BENCH_REDIS_NICE must be an integer from -20 to 19, got ${JSON.stringify(raw)}`);
  const result = spawnSync('renice', ['-n', String(nice), '-p', String(pid)], { encoding: 'utf8' });
  if (result.status !== 0)
    throw new Error(`renice ${nice} of redis-server ${pid} failed: ${result.stderr || result.error?.message}`);
  return nice;
}

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

/**
 * One SLOWLOG entry: its duration, its name (a script's, by scriptNamer), and whether a client sent it (not a script).
 */
export interface Logged {
  us: number;
  name: string;
  fromClient: boolean;
}

/**
 * Reads SLOWLOG back, every entry named: an FCALL by its script (the library function's name less
 * its `dq_<version>_` prefix), an EVALSHA by its script's digest, an EVAL (ioredis sends
 * one for a script's first call on a connection, which compiles it) as "<script> (EVAL: compiles
 * it)". Commands a script ran are logged from a client with no address (fromClient false).
 */
export function slowlogReader(): (redis: Redis) => Promise<Logged[]> {
  const names = scriptNamer();
  return async (redis) => {
    const entries = (await redis.call('SLOWLOG', 'GET', '-1')) as [number, number, number, string[], string][];
    return entries.map(([, , us, [command = '?', first = ''], client]) => {
      let name = command.toUpperCase();
      // the library's function dq_<version>_<script>
      if (name === 'FCALL' || name === 'FCALL_RO') name = first.replace(/^dq_[0-9a-f]+_/, '');
      if (name === 'EVALSHA') name = names.bySha(first) ?? `EVALSHA ${first.slice(0, 8)}`;
      if (name === 'EVAL') {
        const script = names.byEvalText(first);
        name = script ? `${script} (EVAL: compiles it)` : 'EVAL';
      }
      return { us, name, fromClient: /^\d[\d.]*:\d+$/.test(client ?? '') };
    });
  };
}

/** Runs `task(0)` … `task(count - 1)`, at most `inFlight` at a time. */
export async function pool(count: number, inFlight: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(inFlight, count) }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

/** `n` with thousands separators and exactly `digits` decimals. */
export const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
/** `n` rounded to `digits` decimals, as a number (for JSON). */
export const round = (n: number, digits = 3) => Number(n.toFixed(digits));

/** INFO memory's used_memory, bytes. */
export async function usedMemory(redis: Redis): Promise<number> {
  return Number(info(await redis.info('memory'), 'used_memory'));
}
