/**
 * A typed client for the delay queue's HTTP API (openapi.yaml), for other services to use.
 * Self-contained: no imports, only the global `fetch`, `AbortSignal` and `crypto` (`randomUUID`;
 * `subtle` to sign with SigV4) (Node ≥ 20, browsers, Deno, Bun), so the file can be copied into
 * another code base as is.
 *
 * A deployment with `custom.queue.auth: iam` takes AWS SigV4-signed requests instead of a key:
 * pass `sigv4: { region, credentials }` instead of `token` (README, Keys and scopes).
 *
 * ```ts
 * const queue = new DelayQueueClient({ baseUrl: 'https://q.example.com', token: process.env.DQ_TOKEN! });
 * await queue.add({ topic: 'close-order', id: `order-${orderId}`, delay: 1800, body: { orderId } });
 * ```
 *
 * Adds are retried on network errors, timeouts and 5xx answers (with backoff, honouring
 * Retry-After). Every job gets an id before the first try (the caller's, else a random UUID), so
 * a retry cannot add the job twice: a retry that meets `409 JOB_EXISTS` with the same body is the
 * earlier try's success. A keyed add (`dedupe`, `debounce`) is sent without a made-up id (the server
 * makes `<key>::…`): its key makes the retry safe, answered as a duplicate or a fold (`addKeyed`).
 * Reads (`get`, `topics`, `dead`, `listJobs`, `listGroup`, `getSchedule`, `listSchedules`,
 * `flowKey`) are retried the same way; `put`, `cancel`, `cancelGroup`, `redrive`,
 * `putSchedule`, `deleteSchedule` and the pauses and flow key changes are sent once.
 */

/** Error codes of the API (`{ "error": { "code" } }`). */
export type ApiErrorCode =
  | 'VALIDATION_FAILED'
  | 'INVALID_JSON'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'KEY_EXISTS'
  | 'TOO_MANY_KEYS'
  | 'LAST_ADMIN_KEY'
  | 'JOB_EXISTS'
  | 'JOB_FINISHED'
  | 'VERSION_MISMATCH'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNKNOWN_TOPIC'
  | 'UNAVAILABLE'
  | 'NOT_REPLICATED'
  | 'INTERNAL';

/**
 * Codes the client itself raises: no answer, no answer in time, an answer that is not the API's; and, from `add`, a
 * duplicate whose job was purged (no job to return: `addKeyed` answers it).
 */
export type ClientErrorCode = 'NETWORK_ERROR' | 'TIMEOUT' | 'BAD_RESPONSE' | 'DUPLICATE_PURGED';

export type JobState = 'delayed' | 'ready' | 'running' | 'done' | 'dead' | 'cancelled' | 'expired';

/** A job's retry policy as the API reports it: fixed, exponential (with jitter), or a ladder; seconds. */
export type Backoff =
  | { type: 'fixed'; delay: number }
  | { type: 'exponential'; delay: number; max: number; jitter: number }
  | { type: 'ladder'; delays: number[] };

/** A retry policy to set: a Backoff (exponential's `max` and `jitter` optional), or a ladder as text. */
export type BackoffInput =
  | { type: 'fixed'; delay: number }
  | { type: 'exponential'; delay: number; max?: number; jitter?: number }
  | { type: 'ladder'; delays: number[] }
  | string;

/**
 * A duration as the API takes it for delay, ttr, every and jitter: a number and a unit, `'10m'`, `'90s'`, `'1.5h'`,
 * `'250ms'`.
 */
export type Duration = `${number}${'ms' | 's' | 'm' | 'h' | 'd'}`;

/** A job to add. Give exactly one of `delay` (seconds from now, or a Duration) and `runAt` (epoch ms or ISO-8601). */
export interface NewJob<Body = unknown> {
  topic: string;
  /** Your id, unique per topic (`[A-Za-z0-9._:-]{1,128}`); a random UUID when left out. */
  id?: string;
  delay?: number | Duration;
  runAt?: number | string;
  body?: Body;
  maxAttempts?: number;
  /** An object, or a ladder as text: `'15s 3m 10m 30m'`. */
  backoff?: BackoffInput;
  /** Seconds one attempt may run, or a Duration. */
  ttr?: number | Duration;
  /** Webhook topics: where the body is POSTed. */
  url?: string;
  /** A group to list or cancel the job with (`[A-Za-z0-9._:-]{1,128}`). */
  group?: string;
  /**
   * Seconds (or a Duration) over which the first run is spread, at a point fixed per topic and id (default: the topic's
   * jitter).
   */
  jitter?: number | Duration;
  /**
   * Flow topics only: the flow key (a tenant, a partner; `[A-Za-z0-9._:-]{1,128}`) the job is claimed under, round the
   * keys, each within its limits.
   */
  key?: string;
  /**
   * No attempt starts at or after this time (epoch ms or ISO-8601, not before the job's runAt): one due then ends the
   * job as `expired`, its handler never called. At most one of `expiresAt` and `expireAfter`.
   */
  expiresAt?: number | string;
  /** Seconds (or a Duration) after the job's runAt after which no attempt starts (see expiresAt). */
  expireAfter?: number | Duration;
  /**
   * An integer from -1000 to 1000 (default: the topic's `priority`, else 0): among a topic's ready jobs a higher
   * priority is claimed first, FIFO within one priority.
   */
  priority?: number;
  /** At most one add of `dedupe.key` within its window (see DedupeSpec); not with `debounce`. */
  dedupe?: DedupeSpec;
  /** Adds of `debounce.key` fold into one waiting job (see DebounceSpec); not with `dedupe`, `delay` or `runAt`. */
  debounce?: DebounceSpec;
  /**
   * What the job notifies when it ends (see CallbackInput); null: nothing, not even its topic's default callback.
   * Left out: its topic's default, if the topic sets one.
   */
  callback?: CallbackInput | null;
}

/** The ends a callback may notify. */
export type CallbackEnd = 'done' | 'dead' | 'cancelled' | 'expired';

/**
 * A job's callback: for each end in `on` (default `['done', 'dead']`) a job is added to `topic`, its body
 * `{ callbackId, topic, id, outcome, attempts, endedAt, lastError }` (CallbackBody). On a webhook topic that job
 * carries `url` and is POSTed there, signed (header `x-dq-job-id` is the callbackId). A `url` alone goes to the only
 * webhook topic; a webhook topic needs one, and only a webhook topic takes one. At least once: dedupe on
 * `callbackId`.
 */
export interface CallbackInput {
  topic?: string;
  url?: string;
  on?: CallbackEnd[];
}

/** A job's callback as the API returns it: its topic, the URL on a webhook topic, and the ends it notifies. */
export interface Callback {
  topic: string;
  url?: string;
  on: readonly CallbackEnd[];
}

/** The body of the job a callback adds (and, on a webhook topic, POSTs) when the job it watches ends. */
export interface CallbackBody {
  /** Stable per end of the job: a receiver deduplicates on it (the callback job's id, `x-dq-job-id`). */
  callbackId: string;
  /** The topic and id of the job that ended. */
  topic: string;
  id: string;
  outcome: CallbackEnd;
  attempts: number;
  /** When it ended (ISO-8601). */
  endedAt: string;
  lastError: string | null;
}

/**
 * A dedupe key (`[A-Za-z0-9._:-]{1,110}` without `::`): a second add of the key within `window` (seconds, or a
 * Duration, 1 s to 30 d; default the topic's `dedupeWindow`, else 1 h) from its first add, even after that job ran,
 * changes nothing and answers the job that stands (`outcome: 'duplicate'`).
 */
export interface DedupeSpec {
  key: string;
  window?: number | Duration;
}

/**
 * A debounce key (as a dedupe key): while the key's job waits, an add replaces its body and moves it to
 * min(now + `period`, its first add + `maxWait`) (`outcome: 'debounced'`); its other fields stay as the first add set
 * them. Once it is due, the next add starts a new job. `period`: 0.01 s to 1 d; `maxWait`: at least the period, at
 * most 7 d, default 10 periods. Seconds, or Durations.
 */
export interface DebounceSpec {
  key: string;
  period: number | Duration;
  maxWait?: number | Duration;
}

/**
 * What an add did: `created` a job; `duplicate` (a dedupe key within its window: nothing changed; `job` is the job
 * that stands, null when it was purged after its retention); `debounced` (folded into the key's waiting job). `id` is
 * the job's, even when `job` is null.
 */
export interface AddOutcome<Body = unknown> {
  outcome: 'created' | 'duplicate' | 'debounced';
  job: Job<Body> | null;
  id: string;
}

/** A new version of job topic/id for `put`: the fields of NewJob without topic, id, dedupe and debounce. */
export type JobReplacement<Body = unknown> = Omit<NewJob<Body>, 'topic' | 'id' | 'dedupe' | 'debounce'>;

/** A job as the API returns it; times are ISO-8601, durations seconds. */
export interface Job<Body = unknown> {
  topic: string;
  id: string;
  state: JobState;
  /** When the job is (or was last) due. */
  runAt: string;
  createdAt: string;
  updatedAt: string;
  /** Attempts started so far. */
  attempts: number;
  maxAttempts: number;
  ttr: number;
  backoff: Backoff;
  url: string | null;
  lastError: string | null;
  /** The running attempt's time-to-run deadline. */
  deadline: string | null;
  /** No attempt starts at or after this time: one due then ends the job as `expired`. Null: it never expires. */
  expiresAt: string | null;
  /** Among its topic's ready jobs a higher priority is claimed first (0: the default). */
  priority: number;
  /** The trace of its attempts' spans (of the request that added it), when added with tracing on. */
  traceId?: string;
  /** What it notifies when it ends: present only when it has a callback (its own, or its topic's default). */
  callback?: Callback;
  /**
   * Grows with every change written to the job (0 for a job written before versions existed); its ETag is
   * `"<version>"`: pass it as `ifMatch`.
   */
  version: number;
  /** The job's group, or null. */
  group: string | null;
  /**
   * The job's flow key on a flow topic (`''` when added without one: those jobs share the key `''`); null on any other
   * topic.
   */
  key: string | null;
  /**
   * The name of the API key that last changed it (added, replaced, cancelled, redrove it); null when only the queue has
   * (a schedule's occurrence).
   */
  updatedBy: string | null;
  /**
   * Its last ended attempts, oldest first: at most 10 that failed or timed out, then, for a done job, the attempt that
   * ended it. A claim given back uncounted is no attempt.
   */
  attemptHistory: AttemptRecord[];
  body: Body;
}

/** How an attempt ended. */
export type AttemptOutcome = 'done' | 'failed' | 'timedOut';

/** One ended attempt of a job. */
export interface AttemptRecord {
  /** Its number (attempts restart at 1 after a redrive). */
  attempt: number;
  /** When its handler started it, or when it was claimed if no handler did. */
  startedAt: string;
  /** When it ended: acked, failed, or its deadline for one timed out. */
  endedAt: string;
  outcome: AttemptOutcome;
  /** What it failed with; null for done. */
  error: string | null;
  /** endedAt less startedAt, ms. */
  durationMs: number;
  /** startedAt less the time it was due, ms. */
  latenessMs: number;
}

/** A dead job, with the time it died. */
export interface DeadJob<Body = unknown> extends Job<Body> {
  diedAt: string;
}

/** Counts of one topic, its earliest due time, and how late its jobs start. */
export interface TopicStats {
  topic: string;
  /** True when the topic has flow control per key (`flowKey`, `setFlowKey` and the rest apply to it). */
  flow: boolean;
  /** True while the topic is paused (`pauseTopic`): none of its jobs starts. */
  paused: boolean;
  delayed: number;
  ready: number;
  running: number;
  dead: number;
  /** Jobs that expired: an attempt was due after their expiresAt, and none started. */
  expired: number;
  nextDueAt: string | null;
  /** Over the last 5 minutes; percentiles at most 19 % above the true value, max exact; null with no start. */
  lateness: {
    windowSeconds: number;
    started: number;
    p50Ms: number | null;
    p99Ms: number | null;
    maxMs: number | null;
  };
  /** How long the oldest ready job has been due (ms); null when none is ready. */
  oldestReadyAgeMs: number | null;
  /** Per minute of the last hour, oldest first. */
  lastHour: { minute: string; started: number; p99Ms: number | null }[];
  /**
   * Only while the partition count changes: jobs (any state) and schedules the topic still holds in the former
   * partitions.
   */
  former?: { jobs: number; schedules: number };
}

/** One page of a topic's dead jobs; `next` is the `after` cursor of the next page (an opaque string), or null. */
export interface DeadPage<Body = unknown> {
  jobs: DeadJob<Body>[];
  next: string | null;
}

/** One page of jobs; `next` is the `cursor` of the next page (an opaque string), or null. */
export interface JobPage<Body = unknown> {
  jobs: Job<Body>[];
  next: string | null;
}

/** The states `listJobs` lists. */
export type ListedState = 'delayed' | 'ready' | 'running' | 'dead';

/** A time bound of `listJobs`: a Date, epoch ms, or ISO-8601 with a zone. */
export type TimeBound = Date | number | string;

/**
 * One job's result in `addMany`, in the order given: added (`outcome` as in `addKeyed`; status 201 for `created`, 200
 * for `duplicate` and `debounced`), or not, with its error.
 */
export type BatchResult<Body = unknown> =
  | { ok: true; status: 201; outcome: 'created'; job: Job<Body>; id: string }
  | { ok: true; status: 200; outcome: 'duplicate'; job: Job<Body> | null; id: string }
  | { ok: true; status: 200; outcome: 'debounced'; job: Job<Body>; id: string }
  | { ok: false; status: number; error: DelayQueueError };

/**
 * A recurring schedule to put: `cron` (5 fields, or 6 with seconds first) in `timezone` (IANA,
 * default UTC), or `every` (seconds), not both; each occurrence is a job with `body` and the options.
 */
export interface ScheduleInput<Body = unknown> {
  cron?: string;
  timezone?: string;
  every?: number | Duration;
  /** Missed occurrences (queue down, schedule paused): `latest` runs the latest once (default), `none` none. */
  catchUp?: 'latest' | 'none';
  paused?: boolean;
  body?: Body;
  maxAttempts?: number;
  backoff?: BackoffInput;
  ttr?: number | Duration;
  url?: string;
  group?: string;
  /**
   * Seconds (or a Duration): each occurrence starts at a point of [run time, run time + jitter), fixed per occurrence
   * (default: the topic's jitter).
   */
  jitter?: number | Duration;
  /** Seconds (or a Duration) after each occurrence's due time after which no attempt of it starts (it expires). */
  expireAfter?: number | Duration;
  /** Each occurrence's priority (-1000 to 1000, default the topic's): a higher one is claimed first. */
  priority?: number;
  /**
   * Flow topics only: the flow key (`[A-Za-z0-9._:-]{1,128}`) every occurrence is claimed under, within that key's
   * limits and pause.
   */
  key?: string;
}

/** A schedule as the API returns it; times are ISO-8601, durations seconds. */
export interface Schedule<Body = unknown> {
  topic: string;
  id: string;
  cron?: string;
  timezone?: string;
  every?: number;
  catchUp: 'latest' | 'none';
  paused: boolean;
  /** Each occurrence's body. */
  body: Body;
  maxAttempts: number;
  ttr: number;
  backoff: Backoff;
  url: string | null;
  group: string | null;
  /**
   * The flow key each occurrence is claimed under (a flow topic's schedule), or null when it has none: its occurrences
   * then have the key `''`.
   */
  key: string | null;
  /**
   * Its own jitter (seconds), or null: the topic's applies. Each occurrence starts within [run time, run time +
   * jitter).
   */
  jitter: number | null;
  /**
   * Seconds after each occurrence's due time after which no attempt of it starts (it ends `expired`): its own, else
   * its topic's default when it was put; null for none.
   */
  expireAfter: number | null;
  /** Each occurrence's priority: its own, else its topic's default when it was put (0: none). */
  priority: number;
  /** Grows with every change of the schedule, its advances included. */
  version: number;
  createdAt: string;
  /** When its definition last changed (a put). */
  updatedAt: string;
  /** The name of the API key that last put it. */
  updatedBy: string | null;
  /**
   * The occurrence waiting to fall due (a job of the topic, id `<schedule id>:<YYYYMMDDTHHMMSSZ>`), or null (paused, or
   * no run left).
   */
  pending: { id: string; runAt: string } | null;
  /** The latest occurrence handed over (run, or skipped as missed), or null. */
  lastRunAt: string | null;
  /** The next 5 run times, the pending occurrence's first; none while paused. */
  nextRuns: string[];
}

/** One page of a topic's schedules, by id; `next` is the `cursor` of the next page, or null. */
export interface SchedulePage<Body = unknown> {
  schedules: Schedule<Body>[];
  next: string | null;
}

/**
 * A flow key's pace: one start every `per`/`count` seconds, up to `burst` at once after a quiet spell; at most
 * `count + burst - 1` starts in any `per` seconds (right after a quiet spell), `count` a `per` while busy.
 */
export interface FlowRate {
  count: number;
  per: number;
  burst: number;
}

/** A flow key's pace to pin: `per` seconds (default 1) or a Duration, `burst` 1 (the default) to count. */
export interface FlowRateInput {
  count: number;
  per?: number | Duration;
  burst?: number;
}

/**
 * A flow key's limits: attempts running at once (null: only the topic's combined concurrency) and its pace (null:
 * none).
 */
export interface FlowLimits {
  concurrency: number | null;
  rate: FlowRate | null;
}

/** A flow key's live state (`flowKey`). */
export interface FlowKeyState {
  topic: string;
  key: string;
  /** Attempts of the key running now. */
  running: number;
  /** Ids waiting in the key's lane (a cancelled job's id counts until a claim meets it). */
  ready: number;
  paused: boolean;
  /** Until when the key's rate holds its next start back (ISO-8601); null when it does not. */
  heldUntil: string | null;
  /** The limits in force: the pinned ones over the topic's defaults. */
  limits: FlowLimits;
  /** The limits pinned for this key (an add cannot change them); null when it follows the topic's. */
  pinned: Partial<FlowLimits> | null;
  /**
   * The API key that last pinned its limits, or paused or resumed it; null when nothing is pinned (or the change was
   * made without a key).
   */
  updatedBy: string | null;
  /** When that was (ISO 8601); null when nothing is pinned. */
  updatedAt: string | null;
}

/** A change of a flow key (`setFlowKey`): a field left out stays; null returns a limit to the topic's default. */
export interface FlowKeyChange {
  concurrency?: number | null;
  rate?: FlowRateInput | null;
  paused?: boolean;
}

/**
 * What a key may do: `admin` everything (keys included), `write` every change and every read, `read` every GET but the
 * keys listing.
 */
export type KeyScope = 'admin' | 'write' | 'read';

/** A key to create: a `write` or `read` key may be limited to some topics. */
export interface NewKey {
  name: string;
  scope: KeyScope;
  topics?: string[];
}

/** A key as listed: never its secret. */
export interface ApiKey {
  name: string;
  scope: KeyScope;
  /** null: every topic */
  topics: string[] | null;
  /** `deployment`: the deployment's key (API_TOKEN); `api`: made with createKey */
  source: 'deployment' | 'api';
  createdAt: string | null;
  /** the name of the key that created it */
  createdBy: string | null;
  /** noted at most once a minute */
  lastUsedAt: string | null;
}

export interface DelayQueueClientOptions {
  /** The API's base URL, e.g. `https://abc.execute-api.eu-west-1.amazonaws.com` (no trailing path needed). */
  baseUrl: string;
  /** The API key: the deployment's (API_TOKEN) or one made with createKey. Give this or `sigv4`. */
  token?: string;
  /** Sign every request with AWS SigV4 instead of sending a key (a deployment with `custom.queue.auth: iam`). */
  sigv4?: SigV4Options;
  /** Time limit of one HTTP request, ms (default 10 000). */
  timeoutMs?: number;
  /** Retries of adds and reads after the first try (default 3; 0 turns retries off). */
  retries?: number;
  /** First retry's wait, ms, doubled each retry with full jitter, at most 5 s (default 200). */
  retryDelayMs?: number;
  /** A fetch to use instead of the global one (tests, proxies, instrumentation). */
  fetch?: typeof fetch;
}

/** AWS credentials: an access key, with its session token when temporary (STS, a role). */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface SigV4Options {
  /** The API's region, e.g. `eu-west-1`. */
  region: string;
  /** The credentials, or a function asked before each request (it may cache and refresh them). */
  credentials: AwsCredentials | (() => Promise<AwsCredentials> | AwsCredentials);
  /** Default `execute-api` (API Gateway). */
  service?: string;
}

/** Per-call options. */
export interface CallOptions {
  /** Aborts the call (and its retries); the error is the signal's reason. */
  signal?: AbortSignal;
}

/** Options of a change to one job (`put`, `cancel`). */
export interface ChangeOptions extends CallOptions {
  /**
   * Make the change only while the job is at this version (a Job's `version`), or with `'*'` only
   * if it exists; otherwise the call throws VERSION_MISMATCH (412) with the job as it is now.
   */
  ifMatch?: number | '*';
}

interface ErrorFields {
  status: number;
  code: ApiErrorCode | ClientErrorCode;
  details?: unknown;
  job?: Job;
  attempts?: number;
  cause?: unknown;
}

/** An API error (`status` and `code` as the API sent them) or a client-side failure (status 0). */
export class DelayQueueError extends Error {
  /** HTTP status; 0 when no answer came (NETWORK_ERROR, TIMEOUT). */
  readonly status: number;
  readonly code: ApiErrorCode | ClientErrorCode;
  /** For VALIDATION_FAILED: `[{ path, message }]`, every problem found. */
  readonly details?: unknown;
  /** For 409s and 412s: the job as it is (a 412 about a job that does not exist has none). */
  readonly job?: Job;
  /** How many HTTP requests the call made. */
  readonly attempts: number;

  constructor(message: string, fields: ErrorFields) {
    super(message, fields.cause !== undefined ? { cause: fields.cause } : undefined);
    this.name = 'DelayQueueError';
    this.status = fields.status;
    this.code = fields.code;
    if (fields.details !== undefined) this.details = fields.details;
    if (fields.job !== undefined) this.job = fields.job;
    this.attempts = fields.attempts ?? 1;
  }

  /** True when trying again later may succeed: no answer, a timeout, or a 5xx. */
  get retryable(): boolean {
    return this.status === 0 || this.status >= 500;
  }
}

interface Reply {
  status: number;
  body: unknown;
  retryAfterMs?: number;
}

// BATCH_JOBS.max of lib/core/limits.ts, repeated (this file imports nothing); test/unit/limits.test.ts checks it
const MAX_BATCH = 500;
const MAX_RETRY_WAIT_MS = 5_000;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const sameBody = (a: unknown, b: unknown) =>
  JSON.stringify(a === undefined ? null : a) === JSON.stringify(b === undefined ? null : b);
const path = (...parts: string[]) => '/' + parts.map(encodeURIComponent).join('/');

function apiError(reply: Reply, attempts: number): DelayQueueError {
  const body = isObject(reply.body) ? reply.body : {};
  const error = isObject(body.error) ? body.error : undefined;
  if (!error || typeof error.code !== 'string') {
    return new DelayQueueError(`unexpected HTTP ${reply.status} answer`, {
      status: reply.status,
      code: 'BAD_RESPONSE',
      attempts,
    });
  }
  const job = isObject(body.job) ? body.job : undefined;
  return new DelayQueueError(typeof error.message === 'string' ? error.message : String(error.code), {
    status: reply.status,
    code: error.code as ApiErrorCode,
    ...(error.details !== undefined ? { details: error.details } : {}),
    ...(job ? { job: job as unknown as Job } : {}),
    attempts,
  });
}

/**
 * What an answer to the add of `sent` says it did, or undefined when it is no success: 201 created; 200 with
 * `duplicateOf` or `debounced: true`; and, on a retry, 409 JOB_EXISTS with the same topic and body (the earlier try's
 * job, its answer lost).
 */
function addOutcome<Body>(
  status: number,
  answer: unknown,
  tries: number,
  sent: NewJob<Body>,
): AddOutcome<Body> | undefined {
  const body = isObject(answer) ? answer : {};
  const job = isObject(body.job) ? (body.job as unknown as Job<Body>) : undefined;
  if (status === 201 && job) return { outcome: 'created', job, id: job.id };
  if (status === 200 && typeof body.duplicateOf === 'string' && (job || body.job === null))
    return { outcome: 'duplicate', job: job ?? null, id: body.duplicateOf };
  if (status === 200 && body.debounced === true && job) return { outcome: 'debounced', job, id: job.id };
  const error = isObject(body.error) ? body.error : undefined;
  if (
    tries > 1 &&
    status === 409 &&
    error?.code === 'JOB_EXISTS' &&
    job &&
    job.topic === sent.topic &&
    sameBody(job.body, sent.body)
  )
    return { outcome: 'created', job, id: job.id };
  return undefined;
}

/** An add's outcome as a batch result. */
function batchResult<Body>(added: AddOutcome<Body>): BatchResult<Body> {
  const { outcome, job, id } = added;
  if (outcome === 'created') return { ok: true, status: 201, outcome, job: job!, id };
  if (outcome === 'debounced') return { ok: true, status: 200, outcome, job: job!, id };
  return { ok: true, status: 200, outcome, job, id };
}

/** The If-Match header for `ifMatch`: `"<version>"` or `*`; none without it. */
function ifMatchHeader(ifMatch: number | '*' | undefined): Record<string, string> {
  if (ifMatch === undefined) return {};
  if (ifMatch === '*') return { 'if-match': '*' };
  if (!Number.isSafeInteger(ifMatch) || ifMatch < 0)
    throw new TypeError(`ifMatch must be a job's version (an integer ≥ 0) or '*', not ${String(ifMatch)}`);
  return { 'if-match': `"${ifMatch}"` };
}

/** A time bound as the API reads it: epoch ms for a Date or a number, a string as it is. */
function timeParam(bound: TimeBound | undefined): string | undefined {
  if (bound === undefined) return undefined;
  return String(bound instanceof Date ? bound.getTime() : bound);
}

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('aborted', 'AbortError');
}

function wait(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

// AWS Signature Version 4 (https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html)
// with WebCrypto. Signed headers: host, x-amz-content-sha256 (the body's SHA-256, also the payload
// hash), x-amz-date and, with temporary credentials, x-amz-security-token, as the AWS SDK signs. Paths are encoded
// twice, as every service but S3 expects; the query is sent in its canonical form, so what is signed is what is sent.

const textBytes = (text: string) => new TextEncoder().encode(text);
const hex = (bytes: ArrayBuffer) => Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, '0')).join('');
const sha256Hex = async (text: string) => hex(await crypto.subtle.digest('SHA-256', textBytes(text)));
async function hmac(key: ArrayBuffer | Uint8Array, text: string): Promise<ArrayBuffer> {
  const cryptoKey = await crypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return crypto.subtle.sign('HMAC', cryptoKey, textBytes(text));
}
/** RFC 3986 encoding: encodeURIComponent plus ! ' ( ) *. */
const uriEscape = (text: string) =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * The canonical path of URL path `path` (already percent-encoded once): dot segments resolved, each segment encoded
 * again.
 */
function canonicalPath(path: string): string {
  const segments: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  const normalised = `${path.startsWith('/') ? '/' : ''}${segments.join('/')}${segments.length > 0 && path.endsWith('/') ? '/' : ''}`;
  return uriEscape(normalised).replace(/%2F/g, '/');
}

/** The canonical query of `params`: names and values RFC 3986-encoded, sorted by name, then value. */
function canonicalQuery(params: URLSearchParams): string {
  return [...params]
    .map(([name, value]) => [uriEscape(name), uriEscape(value)] as const)
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
}

/**
 * Signs a request with SigV4: returns the URL to send (its query in canonical form) and the
 * headers to add (authorization, x-amz-content-sha256, x-amz-date, and x-amz-security-token with
 * a session token).
 * `date` is the signing time (now by default). Exported for tests and for callers signing their own requests.
 */
export async function signRequest(
  request: { method: string; url: string; body?: string },
  options: { region: string; service?: string; credentials: AwsCredentials; date?: Date },
): Promise<{ url: string; headers: Record<string, string> }> {
  const url = new URL(request.url);
  const { accessKeyId, secretAccessKey, sessionToken } = options.credentials;
  const service = options.service ?? 'execute-api';
  const amzDate = (options.date ?? new Date())
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const day = amzDate.slice(0, 8);
  const payloadHash = await sha256Hex(request.body ?? '');
  const signed: Record<string, string> = {
    host: url.host,
    'x-amz-content-sha256': payloadHash,
    'x-amz-date': amzDate,
    ...(sessionToken ? { 'x-amz-security-token': sessionToken } : {}),
  };
  const names = Object.keys(signed).sort();
  const query = canonicalQuery(url.searchParams);
  const canonical = [
    request.method.toUpperCase(),
    canonicalPath(url.pathname),
    query,
    ...names.map((n) => `${n}:${signed[n]!.trim().replace(/\s+/g, ' ')}`),
    '',
    names.join(';'),
    payloadHash,
  ].join('\n');
  const scope = `${day}/${options.region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, await sha256Hex(canonical)].join('\n');
  let key = await hmac(textBytes(`AWS4${secretAccessKey}`), day);
  for (const part of [options.region, service, 'aws4_request']) key = await hmac(key, part);
  const signature = hex(await hmac(key, toSign));
  const { host: _host, ...headers } = signed;
  url.search = query;
  return {
    url: url.toString(),
    headers: {
      ...headers,
      authorization: `AWS4-HMAC-SHA256 Credential=${accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}`,
    },
  };
}

/** A client of one delay queue API. Safe to share: it keeps no state between calls. */
export class DelayQueueClient {
  private readonly baseUrl: string;
  private readonly token: string;
  private readonly sigv4: SigV4Options | undefined;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly retryDelayMs: number;
  private readonly fetchFn: typeof fetch;

  constructor(options: DelayQueueClientOptions) {
    if (!options.baseUrl) throw new TypeError('baseUrl is required');
    if (!options.token === !options.sigv4) throw new TypeError('give token or sigv4 (one of them)');
    if (options.sigv4 && (!options.sigv4.region || !options.sigv4.credentials))
      throw new TypeError('sigv4 needs region and credentials');
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.token = options.token ?? '';
    this.sigv4 = options.sigv4;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.retries = Math.max(0, options.retries ?? 3);
    this.retryDelayMs = options.retryDelayMs ?? 200;
    this.fetchFn = options.fetch ?? ((input, init) => fetch(input, init));
  }

  /** The SigV4 signature of a request: the URL to send and the headers to add. */
  private async sign(
    method: string,
    url: string,
    body: string | undefined,
  ): Promise<{ url: string; headers: Record<string, string> }> {
    const { region, service, credentials } = this.sigv4!;
    return signRequest(
      { method, url, ...(body !== undefined ? { body } : {}) },
      {
        region,
        ...(service ? { service } : {}),
        credentials: typeof credentials === 'function' ? await credentials() : credentials,
      },
    );
  }

  /** One HTTP request; throws DelayQueueError NETWORK_ERROR or TIMEOUT when no answer comes. */
  private async request(
    method: string,
    target: string,
    body: unknown,
    signal: AbortSignal | undefined,
    extraHeaders: Record<string, string>,
  ): Promise<Reply> {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    let res: Response;
    let text: string;
    const json = body !== undefined ? JSON.stringify(body) : undefined;
    let url = this.baseUrl + target;
    let auth: Record<string, string> = { authorization: `Bearer ${this.token}` };
    // a credentials provider's failure is its own
    if (this.sigv4) ({ url, headers: auth } = await this.sign(method, url, json));
    try {
      res = await this.fetchFn(url, {
        method,
        headers: {
          ...extraHeaders,
          ...auth,
          accept: 'application/json',
          ...(json !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(json !== undefined ? { body: json } : {}),
        signal: combined,
      });
      text = await res.text();
    } catch (error) {
      if (signal?.aborted) throw abortError(signal);
      if (timeout.aborted)
        throw new DelayQueueError(`no answer from ${method} ${target} within ${this.timeoutMs} ms`, {
          status: 0,
          code: 'TIMEOUT',
          cause: error,
        });
      throw new DelayQueueError(`${method} ${target} failed: ${(error as Error).message}`, {
        status: 0,
        code: 'NETWORK_ERROR',
        cause: error,
      });
    }
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined; // a gateway's HTML page, say: apiError() calls it BAD_RESPONSE
    }
    const retryAfter = Number(res.headers.get('retry-after'));
    return {
      status: res.status,
      body: parsed,
      ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterMs: retryAfter * 1000 } : {}),
    };
  }

  /**
   * Sends a request, retrying (when `retry`) on no answer and on 5xx. `accept(reply, tries)`
   * turns an answer into a result, or returns undefined to make it an error.
   */
  private async call<T>(
    req: {
      method: string;
      target: string;
      body?: unknown;
      options?: CallOptions | undefined;
      retry: boolean;
      headers?: Record<string, string>;
    },
    accept: (reply: Reply, tries: number) => T | undefined,
  ): Promise<T> {
    const { method, target, body, options, retry, headers = {} } = req;
    const maxTries = retry ? this.retries + 1 : 1;
    for (let tries = 1; ; tries++) {
      let reply: Reply | undefined;
      let failure: DelayQueueError;
      try {
        reply = await this.request(method, target, body, options?.signal, headers);
      } catch (error) {
        if (!(error instanceof DelayQueueError)) throw error; // the caller's abort
        failure = error;
      }
      if (reply) {
        const result = accept(reply, tries);
        if (result !== undefined) return result;
        failure = apiError(reply, tries);
        if (!failure.retryable) throw failure;
      }
      if (tries >= maxTries) {
        throw new DelayQueueError(failure!.message, {
          status: failure!.status,
          code: failure!.code,
          details: failure!.details,
          ...(failure!.job ? { job: failure!.job } : {}),
          attempts: tries,
          cause: failure!,
        });
      }
      const backoff = Math.random() * Math.min(MAX_RETRY_WAIT_MS, this.retryDelayMs * 2 ** (tries - 1));
      await wait(Math.min(MAX_RETRY_WAIT_MS, Math.max(backoff, reply?.retryAfterMs ?? 0)), options?.signal);
    }
  }

  /**
   * The job to send: with the caller's id, else a random UUID, so a retry cannot add it twice. A keyed add (dedupe or
   * debounce) keeps the caller's id or none: the server makes `<key>::<16 characters>`, and a retry is judged by the
   * key.
   */
  private withId<Body>(job: NewJob<Body>): NewJob<Body> {
    if (!isObject(job)) throw new TypeError('a job must be an object');
    if (job.dedupe !== undefined || job.debounce !== undefined || job.id !== undefined) return job;
    return { ...job, id: globalThis.crypto.randomUUID() };
  }

  /**
   * Adds a job and returns it: the job created (state `delayed`), or for a keyed add the job that stands (a
   * duplicate) or the one it was folded into (debounced); `addKeyed` says which. Throws DelayQueueError: JOB_EXISTS
   * (with `job`) when the id is taken by another add, VALIDATION_FAILED (with `details`), UNKNOWN_TOPIC, …, and
   * DUPLICATE_PURGED (status 200) for a duplicate whose job was purged after its retention.
   */
  async add<Body = unknown>(job: NewJob<Body>, options?: CallOptions): Promise<Job<Body>> {
    const added = await this.addKeyed(job, options);
    if (added.job) return added.job;
    throw new DelayQueueError(`a duplicate of job ${job.topic}/${added.id}, which was purged after its retention`, {
      status: 200,
      code: 'DUPLICATE_PURGED',
    });
  }

  /**
   * Adds a job and says what the add did: `created`, `duplicate` (a dedupe key within its window; `job` null when the
   * job that stands was purged) or `debounced` (folded into its key's waiting job), with the job's `id`. Retried as
   * `add`: a keyed add whose first answer was lost comes back as `duplicate` or `debounced` of the job that first try
   * made, which is the safe retry (no second job). Throws as `add`, but never DUPLICATE_PURGED.
   */
  async addKeyed<Body = unknown>(job: NewJob<Body>, options?: CallOptions): Promise<AddOutcome<Body>> {
    const sent = this.withId(job);
    return this.call({ method: 'POST', target: '/jobs', body: sent, options, retry: true }, (reply, tries) =>
      addOutcome<Body>(reply.status, reply.body, tries, sent),
    );
  }

  /**
   * Adds many jobs (in requests of up to 500) and returns one result per job, in order, with what its add did: a job
   * that could not be added has `ok: false` and its error; the call itself throws only when a request gets no valid
   * answer after its retries.
   */
  async addMany<Body = unknown>(jobs: NewJob<Body>[], options?: CallOptions): Promise<BatchResult<Body>[]> {
    const sent = jobs.map((job) => this.withId(job));
    const results: BatchResult<Body>[] = [];
    for (let start = 0; start < sent.length; start += MAX_BATCH) {
      const chunk = sent.slice(start, start + MAX_BATCH);
      const page = await this.call(
        { method: 'POST', target: '/jobs/batch', body: { jobs: chunk }, options, retry: true },
        (reply, tries) => {
          const body = reply.body as { results?: ({ status: number } & Record<string, unknown>)[] } | undefined;
          if (reply.status !== 200 || !Array.isArray(body?.results) || body.results.length !== chunk.length)
            return undefined;
          return body.results.map((r, i): BatchResult<Body> => {
            const added = addOutcome<Body>(r.status, r, tries, chunk[i]!);
            if (added) return batchResult(added);
            return { ok: false, status: r.status, error: apiError({ status: r.status, body: r }, tries) };
          });
        },
      );
      results.push(...page);
    }
    return results;
  }

  /** The job, or null when there is none (never added, or deleted after its retention). */
  async get<Body = unknown>(topic: string, id: string, options?: CallOptions): Promise<Job<Body> | null> {
    return this.readOrNull<Job<Body>>(path('jobs', topic, id), 'job', options);
  }

  /** GET of one resource, answered as `{ [field]: … }`; null on 404 NOT_FOUND. Retried as every read. */
  private readOrNull<T>(
    target: string,
    field: 'job' | 'schedule',
    options: CallOptions | undefined,
  ): Promise<T | null> {
    return this.call({ method: 'GET', target, options, retry: true }, (reply) => {
      const body = reply.body as ({ error?: { code?: string } } & Record<string, unknown>) | undefined;
      if (reply.status === 200 && body?.[field]) return body[field] as T;
      if (reply.status === 404 && body?.error?.code === 'NOT_FOUND') return null;
      return undefined;
    });
  }

  /**
   * Creates job topic/id, or replaces it while it is pending (due time, body and options).
   * `created` tells which. Throws JOB_FINISHED (with `job`) when it is running, done or dead, and
   * with `ifMatch` VERSION_MISMATCH (with the job as it is now) when it is at another version.
   */
  async put<Body = unknown>(
    topic: string,
    id: string,
    job: JobReplacement<Body>,
    options?: ChangeOptions,
  ): Promise<{ job: Job<Body>; created: boolean }> {
    const headers = ifMatchHeader(options?.ifMatch);
    return this.call(
      { method: 'PUT', target: path('jobs', topic, id), body: job, options, retry: false, headers },
      (reply) => {
        const body = reply.body as { job?: Job<Body> } | undefined;
        if ((reply.status === 200 || reply.status === 201) && body?.job)
          return { job: body.job, created: reply.status === 201 };
        return undefined;
      },
    );
  }

  /**
   * Cancels a pending or running job; returns it with state `cancelled`. Throws NOT_FOUND,
   * JOB_FINISHED, and with `ifMatch` VERSION_MISMATCH (with the job as it is now).
   */
  async cancel<Body = unknown>(topic: string, id: string, options?: ChangeOptions): Promise<Job<Body>> {
    const headers = ifMatchHeader(options?.ifMatch);
    return this.call({ method: 'DELETE', target: path('jobs', topic, id), options, retry: false, headers }, (reply) => {
      const body = reply.body as { job?: Job<Body> } | undefined;
      return reply.status === 200 && body?.job ? body.job : undefined;
    });
  }

  /**
   * Cancels every job of a group: no job of it that was delayed or ready when this returns starts
   * afterwards; a running attempt finishes, but its result is dropped and the job is not retried.
   * Jobs added to the group later run normally. Returns how many delayed or ready jobs were
   * cancelled (`cancelled`) and how many running ones (`running`).
   */
  async cancelGroup(
    topic: string,
    group: string,
    options?: CallOptions,
  ): Promise<{ cancelled: number; running: number }> {
    return this.call(
      { method: 'DELETE', target: path('topics', topic, 'groups', group), options, retry: false },
      (reply) => {
        const body = reply.body as { cancelled?: number; running?: number } | undefined;
        return reply.status === 200 && typeof body?.cancelled === 'number' && typeof body.running === 'number'
          ? { cancelled: body.cancelled, running: body.running }
          : undefined;
      },
    );
  }

  /** One page of a group's jobs (`limit` 1–500, default 100; `cursor`: the previous page's `next`). */
  async listGroup<Body = unknown>(
    topic: string,
    group: string,
    page: { limit?: number; cursor?: string } = {},
    options?: CallOptions,
  ): Promise<JobPage<Body>> {
    return this.page(path('topics', topic, 'groups', group), { limit: page.limit, cursor: page.cursor }, options);
  }

  /**
   * One page of a topic's jobs in one state (default `delayed`), in that state's time order: due
   * time, time-to-run deadline, time of death, or claim order for `ready`; ties by id. `from` and
   * `to` bound that time (inclusive). `limit` 1–500, default 100; `cursor`: the previous page's `next`.
   */
  async listJobs<Body = unknown>(
    topic: string,
    query: { state?: ListedState; from?: TimeBound; to?: TimeBound; limit?: number; cursor?: string } = {},
    options?: CallOptions,
  ): Promise<JobPage<Body>> {
    const { state, from, to, limit, cursor } = query;
    return this.page(
      path('topics', topic, 'jobs'),
      { state, from: timeParam(from), to: timeParam(to), limit, cursor },
      options,
    );
  }

  /** GET `target` with the query parameters that are set; a JobPage, retried as reads are. */
  private async page<Body>(
    target: string,
    params: Record<string, string | number | undefined>,
    options: CallOptions | undefined,
  ): Promise<JobPage<Body>> {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(params)) if (value !== undefined) query.set(name, String(value));
    return this.call(
      { method: 'GET', target: target + (query.toString() ? `?${query}` : ''), options, retry: true },
      (reply) => {
        const body = reply.body as JobPage<Body> | undefined;
        return reply.status === 200 &&
          Array.isArray(body?.jobs) &&
          (typeof body.next === 'string' || body.next === null)
          ? body
          : undefined;
      },
    );
  }

  /**
   * Creates schedule topic/id, or replaces it and its pending occurrence (`created` tells which).
   * Throws VALIDATION_FAILED naming each bad field (`cron`, `timezone`, `every`, `id`, …),
   * UNKNOWN_TOPIC, PAYLOAD_TOO_LARGE.
   */
  async putSchedule<Body = unknown>(
    topic: string,
    id: string,
    schedule: ScheduleInput<Body>,
    options?: CallOptions,
  ): Promise<{ schedule: Schedule<Body>; created: boolean }> {
    return this.call(
      { method: 'PUT', target: path('schedules', topic, id), body: schedule, options, retry: false },
      (reply) => {
        const body = reply.body as { schedule?: Schedule<Body> } | undefined;
        if ((reply.status === 200 || reply.status === 201) && body?.schedule)
          return { schedule: body.schedule, created: reply.status === 201 };
        return undefined;
      },
    );
  }

  /** Schedule topic/id with its pending occurrence, last run and next 5 run times, or null when there is none. */
  async getSchedule<Body = unknown>(topic: string, id: string, options?: CallOptions): Promise<Schedule<Body> | null> {
    return this.readOrNull<Schedule<Body>>(path('schedules', topic, id), 'schedule', options);
  }

  /** Deletes schedule topic/id and withdraws its pending occurrence. Throws NOT_FOUND when there is none. */
  async deleteSchedule(topic: string, id: string, options?: CallOptions): Promise<void> {
    await this.call({ method: 'DELETE', target: path('schedules', topic, id), options, retry: false }, (reply) => {
      const body = reply.body as { deleted?: boolean } | undefined;
      return reply.status === 200 && body?.deleted === true ? true : undefined;
    });
  }

  /**
   * Pauses schedule topic/id, its definition kept: once this returns, no occurrence of it starts
   * until `resumeSchedule` (one that started runs on). Returns the schedule. Throws NOT_FOUND when
   * there is none. Sent once.
   */
  async pauseSchedule<Body = unknown>(topic: string, id: string, options?: CallOptions): Promise<Schedule<Body>> {
    return this.schedulePause<Body>(topic, id, 'pause', options);
  }

  /**
   * Resumes a paused schedule: it runs again, catching up on missed runs by its catchUp. Returns the schedule. Throws
   * NOT_FOUND when there is none. Sent once.
   */
  async resumeSchedule<Body = unknown>(topic: string, id: string, options?: CallOptions): Promise<Schedule<Body>> {
    return this.schedulePause<Body>(topic, id, 'resume', options);
  }

  private schedulePause<Body>(
    topic: string,
    id: string,
    action: 'pause' | 'resume',
    options: CallOptions | undefined,
  ): Promise<Schedule<Body>> {
    return this.call(
      { method: 'POST', target: path('schedules', topic, id, action), options, retry: false },
      (reply) => {
        const body = reply.body as { schedule?: Schedule<Body> } | undefined;
        return reply.status === 200 && body?.schedule?.paused === (action === 'pause') ? body.schedule : undefined;
      },
    );
  }

  /** One page of a topic's schedules by id (`limit` 1–100, default 50; `cursor`: the previous page's `next`). */
  async listSchedules<Body = unknown>(
    topic: string,
    page: { limit?: number; cursor?: string } = {},
    options?: CallOptions,
  ): Promise<SchedulePage<Body>> {
    const query = new URLSearchParams({ topic });
    if (page.limit !== undefined) query.set('limit', String(page.limit));
    if (page.cursor !== undefined) query.set('cursor', page.cursor);
    return this.call({ method: 'GET', target: `/schedules?${query}`, options, retry: true }, (reply) => {
      const body = reply.body as SchedulePage<Body> | undefined;
      return reply.status === 200 &&
        Array.isArray(body?.schedules) &&
        (typeof body.next === 'string' || body.next === null)
        ? body
        : undefined;
    });
  }

  /** Counts and next due time of every configured topic. */
  async topics(options?: CallOptions): Promise<TopicStats[]> {
    return this.call({ method: 'GET', target: '/topics', options, retry: true }, (reply) => {
      const body = reply.body as { topics?: TopicStats[] } | undefined;
      return reply.status === 200 && Array.isArray(body?.topics) ? body.topics : undefined;
    });
  }

  /**
   * One page of a topic's dead jobs, oldest first (`limit` 1–100, default 50; `after`: the previous
   * page's `next`).
   */
  async dead<Body = unknown>(
    topic: string,
    page: { limit?: number; after?: string } = {},
    options?: CallOptions,
  ): Promise<DeadPage<Body>> {
    const query = new URLSearchParams();
    if (page.limit !== undefined) query.set('limit', String(page.limit));
    if (page.after !== undefined) query.set('after', page.after);
    const target = path('topics', topic, 'dead') + (query.toString() ? `?${query}` : '');
    return this.call({ method: 'GET', target, options, retry: true }, (reply) => {
      const body = reply.body as DeadPage<Body> | undefined;
      return reply.status === 200 && Array.isArray(body?.jobs) ? body : undefined;
    });
  }

  /**
   * Moves dead jobs back, due now, with their attempts reset: the given ids, or the `count`
   * oldest (1–1000; default 100). Returns how many were moved.
   */
  async redrive(
    topic: string,
    which: { ids: string[] } | { count: number } = { count: 100 },
    options?: CallOptions,
  ): Promise<number> {
    return this.call(
      { method: 'POST', target: path('topics', topic, 'dead', 'redrive'), body: which, options, retry: false },
      (reply) => {
        const body = reply.body as { redriven?: number } | undefined;
        return reply.status === 200 && typeof body?.redriven === 'number' ? body.redriven : undefined;
      },
    );
  }

  /**
   * Pauses a topic: once this returns, none of its jobs starts until `resumeTopic` (adds are still taken; running
   * attempts finish). Sent once.
   */
  async pauseTopic(topic: string, options?: CallOptions): Promise<void> {
    await this.topicPause(topic, 'pause', options);
  }

  /** Resumes a paused topic: its due jobs start again, within its limits. Sent once. */
  async resumeTopic(topic: string, options?: CallOptions): Promise<void> {
    await this.topicPause(topic, 'resume', options);
  }

  private topicPause(topic: string, action: 'pause' | 'resume', options: CallOptions | undefined): Promise<boolean> {
    return this.call({ method: 'POST', target: path('topics', topic, action), options, retry: false }, (reply) => {
      const body = reply.body as { paused?: boolean } | undefined;
      return reply.status === 200 && body?.paused === (action === 'pause') ? true : undefined;
    });
  }

  /**
   * A flow key's state on a flow topic: running, ready, paused, held until, the limits in force and those pinned. A
   * read, retried.
   */
  async flowKey(topic: string, key: string, options?: CallOptions): Promise<FlowKeyState> {
    return this.flowCall({ method: 'GET', suffix: [], retry: true }, { topic: topic, key: key }, options);
  }

  /**
   * Pins a flow key's limits (null: back to the topic's default) and/or pauses or resumes it; a field left out stays.
   * Sent once.
   */
  async setFlowKey(topic: string, key: string, change: FlowKeyChange, options?: CallOptions): Promise<FlowKeyState> {
    return this.flowCall(
      { method: 'PUT', suffix: [], body: change, retry: false },
      { topic: topic, key: key },
      options,
    );
  }

  /** Drops a flow key's pinned limits and its pause. Sent once. */
  async clearFlowKey(topic: string, key: string, options?: CallOptions): Promise<FlowKeyState> {
    return this.flowCall({ method: 'DELETE', suffix: [], retry: false }, { topic: topic, key: key }, options);
  }

  /**
   * Pauses a flow key: once this returns, none of its jobs starts until `resumeFlowKey`; the other keys go on. Sent
   * once.
   */
  async pauseFlowKey(topic: string, key: string, options?: CallOptions): Promise<FlowKeyState> {
    return this.flowCall({ method: 'POST', suffix: ['pause'], retry: false }, { topic: topic, key: key }, options);
  }

  /** Resumes a paused flow key. Sent once. */
  async resumeFlowKey(topic: string, key: string, options?: CallOptions): Promise<FlowKeyState> {
    return this.flowCall({ method: 'POST', suffix: ['resume'], retry: false }, { topic: topic, key: key }, options);
  }

  private flowCall(
    req: { method: string; suffix: string[]; body?: unknown; retry: boolean },
    ref: { topic: string; key: string },
    options: CallOptions | undefined,
  ): Promise<FlowKeyState> {
    const { method, suffix, body, retry } = req;
    const { topic, key } = ref;
    return this.call(
      { method, target: path('topics', topic, 'flows', key, ...suffix), body, options, retry },
      (reply) => {
        const state = reply.body as FlowKeyState | undefined;
        return reply.status === 200 &&
          typeof state?.key === 'string' &&
          typeof state.paused === 'boolean' &&
          typeof state.limits === 'object'
          ? state
          : undefined;
      },
    );
  }

  /**
   * Creates a key (admin keys only). Returns it with its secret, shown this once: only its
   * SHA-256 is kept. Throws KEY_EXISTS, TOO_MANY_KEYS, VALIDATION_FAILED, FORBIDDEN.
   */
  async createKey(key: NewKey, options?: CallOptions): Promise<{ key: ApiKey; secret: string }> {
    return this.call({ method: 'POST', target: '/keys', body: key, options, retry: false }, (reply) => {
      const body = reply.body as { key?: ApiKey; secret?: string } | undefined;
      return reply.status === 201 && body?.key && typeof body.secret === 'string'
        ? { key: body.key, secret: body.secret }
        : undefined;
    });
  }

  /** Every key, never a secret (admin keys only). */
  async listKeys(options?: CallOptions): Promise<ApiKey[]> {
    return this.call({ method: 'GET', target: '/keys', options, retry: true }, (reply) => {
      const body = reply.body as { keys?: ApiKey[] } | undefined;
      return reply.status === 200 && Array.isArray(body?.keys) ? body.keys : undefined;
    });
  }

  /**
   * Revokes key `name` (admin keys only): every warm instance refuses it within 2 s. Throws NOT_FOUND, and
   * LAST_ADMIN_KEY for the last key with the admin scope.
   */
  async revokeKey(name: string, options?: CallOptions): Promise<void> {
    await this.call({ method: 'DELETE', target: path('keys', name), options, retry: false }, (reply) => {
      const body = reply.body as { revoked?: boolean } | undefined;
      return reply.status === 200 && body?.revoked === true ? true : undefined;
    });
  }

  /** The name, scope and topics of the key this client sends. */
  async whoami(options?: CallOptions): Promise<Pick<ApiKey, 'name' | 'scope' | 'topics'>> {
    return this.call({ method: 'GET', target: '/whoami', options, retry: true }, (reply) => {
      const body = reply.body as { key?: Pick<ApiKey, 'name' | 'scope' | 'topics'> } | undefined;
      return reply.status === 200 && body?.key ? body.key : undefined;
    });
  }
}
