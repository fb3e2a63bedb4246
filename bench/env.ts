/** The benchmarks' environment knobs. */

/** Positive integer environment variable `name`, or `fallback` when unset or empty; throws naming it otherwise. */
export function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}
