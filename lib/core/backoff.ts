/** One problem with one input field; `path` is dotted (`jobs.3.backoff`). The edge's FieldProblem has this shape. */
export interface FieldProblem {
  path: string;
  message: string;
}

/**
 * Backoff between attempts. Users write one of
 *   { "type": "fixed", "delay": 5 }                                   seconds
 *   { "type": "exponential", "delay": 1, "max": 3600, "jitter": 0.2 } delay·2^(n−1), capped,
 *                                                                      minus up to jitter·delay
 *   { "type": "ladder", "delays": [15, 180, 600] }                    attempt n waits step n;
 *                                                                      later ones the last step
 *   "15s 3m 10m 30m 30m 1h 2h 6h 15h"                                 the same ladder, as text
 * It is stored per job as a compact spec that the Lua scripts evaluate (lua/includes/attempts.lua):
 *   'f:<ms>' | 'e:<baseMs>:<capMs>:<jitterPermille>' | 'l:<ms>,<ms>,…'
 */
export type Backoff =
  | { type: 'fixed'; delay: number }
  | { type: 'exponential'; delay: number; max: number; jitter: number }
  | { type: 'ladder'; delays: number[] };

const MAX_LADDER_STEPS = 100; // a longer ladder is a mistake, and every step costs bytes per job
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses a duration like `15s`, `3m`, `1.5h` or `250ms` to ms; undefined if it is not one. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text);
  if (!match) return undefined;
  return Math.round(Number(match[1]) * UNIT_MS[match[2]!]!);
}

function isSeconds(value: unknown, maxMs: number): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 && value * 1000 <= maxMs;
}

/** The fields each type of backoff object takes. */
const BACKOFF_FIELDS: Record<string, string[]> = {
  fixed: ['type', 'delay'],
  exponential: ['type', 'delay', 'max', 'jitter'],
  ladder: ['type', 'delays'],
};

/** The problem of a delay that is not a number of seconds up to `maxDelayMs`. */
function secondsUpTo(maxDelayMs: number): string {
  return `must be a number of seconds from 0 to ${maxDelayMs / 1000}`;
}

/**
 * Validates a user's backoff and returns its compact spec, or the problems found (paths under
 * `path`). `maxDelayMs` bounds every single delay.
 */
export function parseBackoff(
  input: unknown,
  path: string,
  maxDelayMs: number,
): { spec?: string; problems: FieldProblem[] } {
  if (typeof input === 'string') return parseLadderText(input, path, maxDelayMs);
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    const message = 'must be an object with "type" fixed, exponential or ladder, or a ladder like "15s 3m 1h"';
    return { problems: [{ path, message }] };
  }
  const b = input as Record<string, unknown>;
  const known =
    typeof b.type === 'string' && Object.hasOwn(BACKOFF_FIELDS, b.type) ? BACKOFF_FIELDS[b.type] : undefined;
  if (!known) return { problems: [{ path: `${path}.type`, message: 'must be "fixed", "exponential" or "ladder"' }] };
  const problems: FieldProblem[] = [];
  for (const key of Object.keys(b)) {
    if (!known.includes(key))
      problems.push({ path: `${path}.${key}`, message: `is not a field of a ${b.type} backoff` });
  }
  if (b.type === 'fixed') return parseFixed(b, path, maxDelayMs, problems);
  if (b.type === 'exponential') return parseExponential(b, path, maxDelayMs, problems);
  return parseLadder(b, path, maxDelayMs, problems);
}

/** A ladder written as text, `"15s 3m 10m"`. */
function parseLadderText(input: string, path: string, maxDelayMs: number): { spec?: string; problems: FieldProblem[] } {
  const words = input.trim().split(/\s+/).filter(Boolean);
  const steps = words.map(parseDuration);
  if (words.length === 0 || words.length > MAX_LADDER_STEPS || steps.some((s) => s === undefined || s > maxDelayMs)) {
    const message = `must be durations like "15s 3m 1h" (1 to ${MAX_LADDER_STEPS} steps, each at most ${maxDelayMs / 1000}s)`;
    return { problems: [{ path, message }] };
  }
  return { spec: `l:${steps.join(',')}`, problems: [] };
}

/** `{ type: 'fixed', delay }`, its problems so far in `problems`. */
function parseFixed(
  b: Record<string, unknown>,
  path: string,
  maxDelayMs: number,
  problems: FieldProblem[],
): { spec?: string; problems: FieldProblem[] } {
  if (!isSeconds(b.delay, maxDelayMs)) problems.push({ path: `${path}.delay`, message: secondsUpTo(maxDelayMs) });
  if (problems.length) return { problems };
  return { spec: `f:${Math.round((b.delay as number) * 1000)}`, problems };
}

/** `{ type: 'exponential', delay, max?, jitter? }`, its problems so far in `problems`. */
function parseExponential(
  b: Record<string, unknown>,
  path: string,
  maxDelayMs: number,
  problems: FieldProblem[],
): { spec?: string; problems: FieldProblem[] } {
  if (!isSeconds(b.delay, maxDelayMs) || b.delay === 0)
    problems.push({
      path: `${path}.delay`,
      message: `must be a number of seconds above 0, at most ${maxDelayMs / 1000}`,
    });
  const max = b.max ?? maxDelayMs / 1000;
  if (!isSeconds(max, maxDelayMs)) problems.push({ path: `${path}.max`, message: secondsUpTo(maxDelayMs) });
  const jitter = b.jitter === true ? 0.5 : b.jitter === false || b.jitter === undefined ? 0 : b.jitter;
  if (typeof jitter !== 'number' || !(jitter >= 0 && jitter <= 1))
    problems.push({ path: `${path}.jitter`, message: 'must be true, false or a fraction from 0 to 1' });
  if (problems.length) return { problems };
  const base = Math.round((b.delay as number) * 1000);
  return {
    spec: `e:${base}:${Math.max(base, Math.round((max as number) * 1000))}:${Math.round((jitter as number) * 1000)}`,
    problems,
  };
}

/** `{ type: 'ladder', delays }`, its problems so far in `problems`. */
function parseLadder(
  b: Record<string, unknown>,
  path: string,
  maxDelayMs: number,
  problems: FieldProblem[],
): { spec?: string; problems: FieldProblem[] } {
  const delays = b.delays;
  if (!Array.isArray(delays) || delays.length === 0 || delays.length > MAX_LADDER_STEPS) {
    problems.push({ path: `${path}.delays`, message: `must be a list of 1 to ${MAX_LADDER_STEPS} delays in seconds` });
    return { problems };
  }
  delays.forEach((d, i) => {
    if (!isSeconds(d, maxDelayMs)) problems.push({ path: `${path}.delays.${i}`, message: secondsUpTo(maxDelayMs) });
  });
  if (problems.length) return { problems };
  return { spec: `l:${delays.map((d: number) => Math.round(d * 1000)).join(',')}`, problems };
}

/** describeBackoff's answers, by spec: a batch's replies describe the same few specs again and again. */
const described = new Map<string, Backoff>();
const DESCRIBED_MAX = 1000;

/** The user-facing form of a compact spec (delays in seconds): one object per spec, frozen, shared. */
export function describeBackoff(spec: string): Backoff {
  let backoff = described.get(spec);
  if (!backoff) {
    backoff = deepFreeze(parseBackoffSpec(spec));
    if (described.size >= DESCRIBED_MAX) described.clear(); // specs a job sets itself can be many
    described.set(spec, backoff);
  }
  return backoff;
}

function deepFreeze<T extends object>(value: T): T {
  for (const v of Object.values(value)) if (typeof v === 'object' && v !== null) Object.freeze(v);
  return Object.freeze(value);
}

function parseBackoffSpec(spec: string): Backoff {
  const [kind, ...rest] = spec.split(':');
  if (kind === 'f') return { type: 'fixed', delay: Number(rest[0]) / 1000 };
  if (kind === 'e')
    return {
      type: 'exponential',
      delay: Number(rest[0]) / 1000,
      max: Number(rest[1]) / 1000,
      jitter: Number(rest[2]) / 1000,
    };
  return { type: 'ladder', delays: (rest[0] ?? '').split(',').map((ms) => Number(ms) / 1000) };
}

/** Number of steps of a ladder spec, or undefined for other kinds. */
export function ladderLength(spec: string): number | undefined {
  return spec.startsWith('l:') ? spec.slice(2).split(',').length : undefined;
}
