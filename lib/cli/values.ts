/**
 * Option values turned into what the client takes: durations, times, counts, If-Match versions,
 * backoff policies and JSON bodies (inline, `@file` or `-` for stdin). Each refusal is a
 * UsageError naming the option. Pure but for the body reader it is given.
 */
import type { BackoffInput, CallbackEnd, Duration } from '../client';
import { UsageError } from './errors';

const SECONDS = /^\d+(\.\d+)?$/;
const DURATION = /^\d+(\.\d+)?(ms|s|m|h|d)$/;

/** Seconds (`90`) or a duration (`10m`, `1.5h`, `250ms`) as the API takes it; the API checks the range. */
export function parseDuration(option: string, text: string): number | Duration {
  if (SECONDS.test(text)) return Number(text);
  if (DURATION.test(text)) return text as Duration;
  throw new UsageError(`--${option} must be seconds or a duration like 10m (units ms, s, m, h, d), not "${text}"`);
}

/** A time: epoch milliseconds (digits) or ISO-8601 with a zone (any other text), passed on for the API to check. */
export function parseTime(text: string): number | string {
  return /^\d+$/.test(text) ? Number(text) : text;
}

/** A whole number from `min` to `max`. */
export function parseCount(option: string, text: string, min = 1, max = Number.MAX_SAFE_INTEGER): number {
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw new UsageError(
      `--${option} must be a whole number from ${min}${max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ''}, not "${text}"`,
    );
  return n;
}

/** A whole number, negative ones too (`--priority -5`); the API checks the range. */
export function parseInteger(option: string, text: string): number {
  const n = /^-?\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n)) throw new UsageError(`--${option} must be a whole number, not "${text}"`);
  return n;
}

/** `--if-match`: a job's version (`3`, or the ETag `"3"`) or `*` (only if it exists). */
export function parseIfMatch(text: string): number | '*' {
  if (text === '*') return '*';
  const bare = /^"(\d+)"$/.exec(text)?.[1] ?? text;
  if (!/^\d+$/.test(bare) || !Number.isSafeInteger(Number(bare)))
    throw new UsageError(`--if-match must be a job's version (a whole number, as in its ETag) or *, not "${text}"`);
  return Number(bare);
}

/** `--backoff`: a ladder as text (`"15s 3m 10m"`) or a policy as JSON (`{"type":"fixed","delay":30}`). */
export function parseBackoff(text: string): BackoffInput {
  if (!text.trimStart().startsWith('{')) return text;
  try {
    return JSON.parse(text) as BackoffInput;
  } catch (error) {
    throw new UsageError(`--backoff is not JSON: ${(error as Error).message}`);
  }
}

const CALLBACK_ENDS = ['done', 'dead', 'cancelled', 'expired'] as const;

/** `--callback-on`: ends separated by commas (`done,dead`), each one a callback may notify. */
export function parseCallbackOn(text: string): CallbackEnd[] {
  const ends = text.split(',').map((e) => e.trim());
  if (ends.length === 0 || !ends.every((e) => (CALLBACK_ENDS as readonly string[]).includes(e)))
    throw new UsageError(
      `--callback-on must be ends separated by commas, of ${CALLBACK_ENDS.join(', ')}, not "${text}"`,
    );
  return ends as CallbackEnd[];
}

/** One of `choices`. */
export function parseChoice<T extends string>(option: string, text: string, choices: readonly T[]): T {
  if ((choices as readonly string[]).includes(text)) return text as T;
  throw new UsageError(`--${option} must be one of ${choices.join(', ')}, not "${text}"`);
}

/** Where `--body @file` and `--body -` read from. */
export interface TextSource {
  file(path: string): Promise<string>;
  stdin(): Promise<string>;
}

/**
 * `--body`: JSON given inline, `@path` for a file holding JSON, or `-` for JSON on stdin. A body
 * that is not JSON is refused (a string is sent quoted: `--body '"hello"'`).
 */
export async function readBody(spec: string, source: TextSource): Promise<unknown> {
  let text: string;
  let from: string;
  if (spec === '-') {
    from = 'stdin';
    text = await source.stdin();
  } else if (spec.startsWith('@')) {
    from = spec.slice(1);
    try {
      text = await source.file(from);
    } catch (error) {
      throw new UsageError(`--body ${spec}: cannot read ${from}: ${(error as Error).message}`);
    }
  } else {
    from = '';
    text = spec;
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    const origin = from ? ` (from ${from})` : '';
    throw new UsageError(
      `--body is not JSON${origin}: ${(error as Error).message}; send a string quoted, as --body '"hello"'`,
    );
  }
}
