/**
 * The checks of an add's priority and of its dedupe or debounce key (lib/engine/shapes.ts KeyedSpec). A keyed job's
 * id starts with `<key>::`, which places it in its key's partition (routingId in lib/engine/keys.ts): the key's entry
 * and the job then share a hash slot, and one script can judge the key and write the job.
 */
import type { TopicConfig } from '../core/queue-config';
import { ID_PATTERN } from '../core/queue-config';
import {
  DEBOUNCE_MAX_WAIT_SECONDS,
  DEBOUNCE_PERIOD_SECONDS,
  DEDUPE_WINDOW_SECONDS,
  KEYED_KEY_LENGTH,
  PRIORITY,
} from '../core/limits';
import type { FieldProblem } from './api-errors';
import type { KeyedSpec } from '../engine';

type Problems = FieldProblem[];

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A job's priority: its own (an integer in PRIORITY), else its topic's default; 0 (none) is left out. */
export function checkPriority(value: unknown, t: TopicConfig | undefined, problems: Problems): number | undefined {
  if (value === undefined) return t?.priority ? t.priority : undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < PRIORITY.min || value > PRIORITY.max) {
    problems.push({ path: 'priority', message: `must be an integer from ${PRIORITY.min} to ${PRIORITY.max}` });
    return undefined;
  }
  return value === 0 ? undefined : value;
}

/** Seconds (a number, or a duration like "10m") within `range`, as ms; a problem at `path` otherwise. */
function durationMs(
  value: unknown,
  path: string,
  range: { min: number; max: number },
  secondsOf: (v: unknown) => number | undefined,
  problems: Problems,
): number | undefined {
  const s = secondsOf(value);
  if (s === undefined || s < range.min || s > range.max) {
    problems.push({
      path,
      message: `must be a number of seconds from ${range.min} to ${range.max}, or a duration like "10m" (ms, s, m, h, d)`,
    });
    return undefined;
  }
  return Math.round(s * 1000);
}

/** A dedupe or debounce key: an id's characters, no `::`, at most KEYED_KEY_LENGTH. */
function checkKey(value: unknown, path: string, problems: Problems): string | undefined {
  if (typeof value !== 'string' || !ID_PATTERN.test(value) || value.length > KEYED_KEY_LENGTH || value.includes('::')) {
    problems.push({
      path,
      message: `must be 1 to ${KEYED_KEY_LENGTH} characters of [A-Za-z0-9._:-] without "::"`,
    });
    return undefined;
  }
  return value;
}

/** Problems of an object field `name` with fields other than `allowed`. */
function checkFields(value: Record<string, unknown>, name: string, allowed: readonly string[], problems: Problems) {
  for (const field of Object.keys(value))
    if (!allowed.includes(field))
      problems.push({ path: `${name}.${field}`, message: `is not a field of ${name} (fields: ${allowed.join(', ')})` });
}

/**
 * An add's `dedupe` ({ key, window? }) or `debounce` ({ key, period, maxWait? }), checked; undefined when it has
 * neither, or a problem was added. A debounce's time is its period: it takes no delay or runAt.
 */
export function checkKeyed(
  job: Record<string, unknown>,
  t: TopicConfig | undefined,
  secondsOf: (v: unknown) => number | undefined,
  problems: Problems,
): KeyedSpec | undefined {
  const { dedupe, debounce } = job;
  if (dedupe === undefined && debounce === undefined) return undefined;
  if (dedupe !== undefined && debounce !== undefined) {
    problems.push({ path: 'debounce', message: 'give either dedupe or debounce, not both' });
    return undefined;
  }
  if (dedupe !== undefined) {
    if (!isObject(dedupe)) {
      problems.push({ path: 'dedupe', message: 'must be an object { key, window? }' });
      return undefined;
    }
    checkFields(dedupe, 'dedupe', ['key', 'window'], problems);
    const key = checkKey(dedupe.key, 'dedupe.key', problems);
    const windowMs =
      dedupe.window === undefined
        ? (t?.dedupeWindowMs ?? DEDUPE_WINDOW_SECONDS.default * 1000)
        : durationMs(dedupe.window, 'dedupe.window', DEDUPE_WINDOW_SECONDS, secondsOf, problems);
    if (key === undefined || windowMs === undefined) return undefined;
    return { kind: 'dedupe', key, windowMs };
  }
  if (!isObject(debounce)) {
    problems.push({ path: 'debounce', message: 'must be an object { key, period, maxWait? }' });
    return undefined;
  }
  checkFields(debounce, 'debounce', ['key', 'period', 'maxWait'], problems);
  for (const field of ['delay', 'runAt'])
    if (job[field] !== undefined)
      problems.push({
        path: field,
        message: 'a debounce add is due its period after the last add: give no delay or runAt',
      });
  const key = checkKey(debounce.key, 'debounce.key', problems);
  const periodMs = durationMs(debounce.period, 'debounce.period', DEBOUNCE_PERIOD_SECONDS, secondsOf, problems);
  let maxWaitMs: number | undefined;
  if (debounce.maxWait !== undefined) {
    maxWaitMs = durationMs(debounce.maxWait, 'debounce.maxWait', DEBOUNCE_MAX_WAIT_SECONDS, secondsOf, problems);
    if (maxWaitMs !== undefined && periodMs !== undefined && maxWaitMs < periodMs) {
      problems.push({ path: 'debounce.maxWait', message: 'must be at least the period' });
      return undefined;
    }
  } else if (periodMs !== undefined) {
    maxWaitMs = Math.min(periodMs * 10, DEBOUNCE_MAX_WAIT_SECONDS.max * 1000);
  }
  if (key === undefined || periodMs === undefined || maxWaitMs === undefined) return undefined;
  return { kind: 'debounce', key, periodMs, maxWaitMs };
}

/**
 * The id of a keyed add: the caller's, which must start with `<key>::`, else `<key>::<fresh>`; undefined (a problem
 * added) when the caller's does not.
 */
export function keyedId(id: unknown, keyed: KeyedSpec, fresh: () => string, problems: Problems): string | undefined {
  const prefix = `${keyed.key}::`;
  if (id === undefined) return prefix + fresh();
  if (typeof id !== 'string' || !id.startsWith(prefix) || id.length === prefix.length || !ID_PATTERN.test(id)) {
    problems.push({
      path: 'id',
      message: `a job with a ${keyed.kind} key takes an id that starts with "${prefix}" (which places it beside its key), or none`,
    });
    return undefined;
  }
  return id;
}
