/** The benchmarks' environment knobs, and how they describe the machine. */
import { cpus, totalmem, type as osType, release as osRelease } from 'node:os';

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
