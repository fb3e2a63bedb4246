/**
 * The per-job shapes the Lua scripts take and return, apart from the decoding in ./jobs.ts so that
 * ./scripts.ts (the typed calls) and ./jobs.ts (which decodes their replies) need not import each other.
 */
import type { ScheduleSpec } from '../core/schedule';
import type { JobStateCode } from './codes';
import type { Callback } from './callbacks';

/** A job that passed validation (lib/api/validation.ts), as the add script takes it. */
export interface NewJob {
  topic: string;
  id: string;
  partition: number;
  /** `d`: `ms` after Redis's clock at the time of the add; `a`: at epoch `ms`. */
  when: { kind: 'd' | 'a'; ms: number };
  /** JSON text of the body. */
  body: string;
  maxAttempts?: number;
  ttrMs?: number;
  backoff?: string;
  url?: string;
  /** The job's group (validated like an id). */
  group?: string;
  /** The job's flow key, on a flow topic (validated like an id); none: the key ''. */
  key?: string;
  /** A put's If-Match: '*' (any existing job) or the version the job must have. */
  ifMatch?: '*' | number;
  /**
   * Its expiry: no attempt starts at or after it. `a`: at epoch `ms`; `r`: `ms` after its due time (the time `when`
   * resolves to). None: it never expires.
   */
  expires?: { kind: 'a' | 'r'; ms: number };
  /** Its priority: among its topic's ready jobs a higher one is claimed first. None: 0. */
  priority?: number;
  /**
   * A dedupe window (`dedupe`) or a debounce (`debounce`) by key: see DedupeSpec. Only on an add; the job's id then
   * starts with `<key>::`, which places it in the key's partition (routingId in lib/engine/keys.ts).
   */
  keyed?: KeyedSpec;
  /**
   * The trace context of the request that added it, packed (lib/core/trace-context.ts packContext), when tracing is on:
   * its attempts' spans are children of that span.
   */
  trace?: string;
  /** What it notifies when it ends (./callbacks.ts). None: nothing. */
  callback?: Callback;
}

/**
 * What makes an add keyed. `dedupe`: a second add of `key` within `windowMs` of the first changes nothing and answers
 * with the job that stands. `debounce`: while the job of `key` waits (not yet due), an add replaces its body and moves
 * it to now + `periodMs`, never past its creation + `maxWaitMs`; once due, the next add starts a new job.
 */
export type KeyedSpec =
  | { kind: 'dedupe'; key: string; windowMs: number }
  | { kind: 'debounce'; key: string; periodMs: number; maxWaitMs: number };

/** A validated change to a pending job: a new due time and/or a new body. */
export interface JobChange {
  when?: NewJob['when'];
  body?: string;
}

/**
 * A job as the scripts return it: the mirror of `view()` in lua/includes/job.lua, in its order.
 * A null option follows the topic's configuration; a null url, error or deadline is none. A null
 * body is one kept apart that the script did not read (getJob, listDead: the engine reads it).
 */
export type JobView = readonly [
  id: string,
  state: JobStateCode,
  runAt: number,
  createdAt: number,
  attempts: number,
  maxAttempts: number | null,
  ttrMs: number | null,
  backoff: string | null,
  url: string | null,
  lastError: string | null,
  updatedAt: number,
  deadline: number | null,
  body: string | null,
  version: number,
  group: string | null,
  updatedBy: string | null,
  key: string | null,
  /** When its last attempt started (for a done job: its claim time when never started); null when not started. */
  started: number | null,
  /** Its last ended attempts that did not end done, oldest first (at most 10), or null for none. */
  history: readonly HistoryEntry[] | null,
  /** Its expiry (epoch ms; no attempt starts at or after it), or null for none. */
  expiresAt: number | null,
  /** Its priority (0: none); a higher one is claimed first among its topic's ready jobs. */
  priority: number,
  /**
   * The packed trace context of the request that added it ('L' first: of the put of the schedule it is an occurrence
   * of, which its attempts link to), or null (tracing was off).
   */
  trace: string | null,
  /** What it notifies when it ends, as stored (callbackArg in ./callbacks.ts), or null for none. */
  callback: string | null,
];

/**
 * One ended attempt in a record's history (H_HISTORY in lua/includes/job.lua): its number, its start (or claim time)
 * less the job's creation time, its duration, its lateness (start less due), how it ended (1 failed, 2 timed out) and
 * its error.
 */
export type HistoryEntry = readonly [
  attempt: number,
  startOffset: number,
  duration: number,
  lateness: number,
  outcome: number,
  error: string | null,
];

/**
 * A schedule's definition as stored: its recurrence and what the schedule scripts read from it (lua/includes/
 * occurrences.lua) to give each occurrence they create: its expiry (ms after its due time; none when absent), its
 * priority (none: 0), and a link to the trace of the request that put the schedule (packed, lib/platform/tracing.ts:
 * each occurrence's attempts start a trace of their own, linked to it).
 */
export type StoredSpec = ScheduleSpec & { expireAfterMs?: number; priority?: number; traceLink?: string };

/** A validated schedule, as the engine takes it; the options (its flow key included) apply to each occurrence. */
export interface NewSchedule extends Pick<NewJob, 'maxAttempts' | 'ttrMs' | 'backoff' | 'url' | 'group' | 'key'> {
  topic: string;
  id: string;
  partition: number;
  spec: StoredSpec;
  /** JSON text of each occurrence's body. */
  body: string;
  /** The name of the API key that puts it (updatedBy). */
  by?: string;
}
