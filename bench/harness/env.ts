/** The benchmarks' environment knobs: BENCH_* integers, a choice of step, and Redis's niceness. */
import { spawnSync } from 'node:child_process';

/** Positive integer environment variable `name`, or `fallback` when unset or empty; throws naming it otherwise. */
export function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

/** Environment variable `name` as a number (0 allowed), or `fallback` when unset. */
export function envNumber(name: string, fallback: number): number {
  return Number(process.env[name] ?? fallback);
}

/** BENCH_ONLY: one of `steps`, or undefined when unset (every step runs); throws naming the choices otherwise. */
export function envOnly<T extends string>(steps: readonly T[]): T | undefined {
  const only = process.env.BENCH_ONLY;
  if (only === undefined) return undefined;
  if (!(steps as readonly string[]).includes(only)) {
    const choices = `${steps.slice(0, -1).join(', ')} or ${steps.at(-1)}`;
    throw new Error(`BENCH_ONLY must be ${choices}, got ${JSON.stringify(only)}`);
  }
  return only as T;
}

/** True when step `step` runs: BENCH_ONLY unset, or set to it. */
export const runs = <T extends string>(only: T | undefined, step: T) => only === undefined || only === step;

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
