/**
 * Every limit of the API, defined once. Validation, the routes, their error messages and the
 * configuration read them from here; openapi.yaml repeats them (it cannot import TypeScript) and
 * test/unit/limits.test.ts checks that it does.
 */

/** An inclusive range of allowed values, with the default where the caller may leave it out. */
export interface Range {
  readonly min: number;
  readonly max: number;
  readonly default?: number;
}

/** Jobs in one POST /jobs/batch (and one addMany call). */
export const BATCH_JOBS = { min: 1, max: 500 } as const satisfies Range;

/** Ids in one redrive request. */
export const REDRIVE_IDS = { min: 1, max: 500 } as const satisfies Range;

/** Oldest dead jobs one redrive by count moves back; the default also serves a redrive without a body. */
export const REDRIVE_COUNT = { min: 1, max: 1000, default: 100 } as const satisfies Range;

/** Jobs per page of GET /topics/{topic}/jobs and GET /topics/{topic}/groups/{group}. */
export const JOBS_PAGE = { min: 1, max: 500, default: 100 } as const satisfies Range;

/** Schedules per page of a schedule listing (DelayQueue.listSchedules). */
export const SCHEDULES_PAGE = { min: 1, max: 100, default: 50 } as const satisfies Range;

/** Dead jobs per page of GET /topics/{topic}/dead. */
export const DEAD_PAGE = { min: 1, max: 100, default: 50 } as const satisfies Range;

/**
 * Time-to-run of one attempt in seconds, of a job and of a topic. At least 1 s: the ttr counts from
 * the claim (so it includes invoking the handler) and the handler ends an attempt 250 ms before
 * its deadline (SAFETY_MS in lib/workers/handler.ts); below that no attempt could succeed.
 */
export const TTR_SECONDS = { min: 1, max: 86_400 } as const satisfies Range;

/** Jitter of a job's first run time in seconds, of a job and of a topic: up to a day. */
export const JITTER_SECONDS = { min: 0, max: 86_400 } as const satisfies Range;

/**
 * A job's expireAfter in seconds, of a job and of a topic's default: how long after its runAt an attempt may still
 * start. At least 1 s; at most ten years (the longest maxDelay).
 */
export const EXPIRE_AFTER_SECONDS = { min: 1, max: 10 * 365 * 86_400 } as const satisfies Range;

/** A job's priority, and a topic's default: a higher one is claimed first among a topic's ready jobs; 0 by default. */
export const PRIORITY = { min: -1000, max: 1000 } as const satisfies Range;

/** A dedupe window in seconds, of a job and of a topic's default (`dedupeWindow`): a second to 30 days. */
export const DEDUPE_WINDOW_SECONDS = { min: 1, max: 30 * 86_400, default: 3600 } as const satisfies Range;

/** A debounce's quiet period in seconds: 10 ms to a day. */
export const DEBOUNCE_PERIOD_SECONDS = { min: 0.01, max: 86_400 } as const satisfies Range;

/**
 * A debounce's maximum wait in seconds (from the first add of its job): at least its period, at most a week; by default
 * 10 periods (within the same bounds).
 */
export const DEBOUNCE_MAX_WAIT_SECONDS = { min: 0.01, max: 7 * 86_400 } as const satisfies Range;

/**
 * Longest dedupe or debounce key: a keyed job's id is `<key>::<16 characters>` and fits the 128 of an id. */
export const KEYED_KEY_LENGTH = 110;

/** Attempts of one job, of a job and of a topic. */
export const MAX_ATTEMPTS = { min: 1, max: 1000 } as const satisfies Range;

/** Longest webhook url, in characters. */
export const URL_MAX_LENGTH = 2048;

/** Earliest runAt accepted, epoch ms (2000-01-01): below this, runAt was almost surely given in seconds. */
export const EARLIEST_RUN_AT_MS = Date.UTC(2000, 0, 1);

/** Lambda's limit on an asynchronous (Event) invoke's payload: a handler's batch must fit. */
export const EVENT_PAYLOAD_BYTES = 1_048_576;

/** Room kept in an event for its envelope, `{"topic":"<up to 64>","jobs":[...]}`. */
export const EVENT_ENVELOPE_BYTES = 256;

/**
 * Room kept in an event for what is not the job bodies: the envelope, each job's id, url (up to
 * URL_MAX_LENGTH) and numbers. A body larger than EVENT_PAYLOAD_BYTES minus this can never be
 * delivered, so maxBodyBytes may not exceed MAX_BODY_BYTES.
 */
export const EVENT_OVERHEAD_BYTES = 8192;

/** The most named API keys a deployment may hold (lib/engine/api-keys.ts): a listing reads them all. */
export const MAX_KEYS = 1000;

/** Largest maxBodyBytes a configuration may set: one job with such a body still fits one event. */
export const MAX_BODY_BYTES = EVENT_PAYLOAD_BYTES - EVENT_OVERHEAD_BYTES;

/**
 * Bytes of job records and bodies one script call may read, write or reply, beyond its first job
 * (which is always done, so a job with a body of MAX_BODY_BYTES always gets through): one handler
 * event's worth, so one claim replies about as much as the fan-out can send in one event. A call
 * that reaches it stops and says so; the engine calls again for the rest. Moving a body through a
 * script costs Redis about 2 ms a MB on the 2-vCPU test machine, so a call with maximum-size bodies
 * takes a few milliseconds (BENCHMARKS.md, step 7), where a count alone (1,000 jobs of 1 MB) would
 * let one call copy a gigabyte while Redis serves nobody.
 */
export const SCRIPT_CALL_BYTES = EVENT_PAYLOAD_BYTES;
