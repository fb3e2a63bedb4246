/**
 * All request validation: a job, a change to one, a put's path, a batch, a redrive, a page of
 * dead jobs. Each reports every problem at once as an HttpError (400 VALIDATION_FAILED with each
 * field and what is wrong, 400 UNKNOWN_TOPIC, 413 PAYLOAD_TOO_LARGE) and returns the input
 * normalised for the engine, which checks nothing itself. Limits come from lib/core/limits.ts.
 */
import { checkCallback, type Callback } from '../core/callback';
import { checkHttpUrl } from '../core/http-url';
import { newJobId } from '../core/random';
import { ladderLength, parseBackoff, parseDuration } from '../core/backoff';
import { FLOW_LIMITS, ID_PATTERN, TOPIC_PATTERN, type QueueConfig, type TopicConfig } from '../core/queue-config';
import { layoutFor, type FlowKeyChange, type FlowRate, type JobChange, type NewJob } from '../engine';
import { HttpError, type FieldProblem } from './api-errors';
import { jitterOffsetMs } from '../core/pacing';
import { checkKeyed, checkPriority, keyedId } from './keyed-validation';
import {
  BATCH_JOBS,
  DEAD_PAGE,
  JOBS_PAGE,
  EARLIEST_RUN_AT_MS,
  EXPIRE_AFTER_SECONDS,
  JITTER_SECONDS,
  MAX_ATTEMPTS,
  REDRIVE_COUNT,
  REDRIVE_IDS,
  SCHEDULES_PAGE,
  TTR_SECONDS,
  type Range,
} from '../core/limits';

export type { JobChange, NewJob } from '../engine';

const JOB_FIELDS = [
  'topic',
  'id',
  'delay',
  'runAt',
  'body',
  'maxAttempts',
  'backoff',
  'ttr',
  'url',
  'group',
  'jitter',
  'key',
  'expiresAt',
  'expireAfter',
  'priority',
  'dedupe',
  'debounce',
  'callback',
];
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

function problem(problems: FieldProblem[], path: string, message: string): void {
  problems.push({ path, message });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isIntegerIn(value: unknown, range: Range): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= range.min && value <= range.max;
}

/** The JSON text of a body, or undefined when it is not a JSON value. */
function bodyText(body: unknown): string | undefined {
  try {
    const text = JSON.stringify(body === undefined ? null : body);
    return typeof text === 'string' ? text : undefined;
  } catch {
    return undefined;
  }
}

/** True when the date part of an ISO-8601 time exists (Date.parse turns Feb 30 into Mar 2). */
function isCalendarDate(text: string): boolean {
  const [y, m, d] = text.slice(0, 10).split('-').map(Number) as [number, number, number];
  const date = new Date(Date.UTC(y, m - 1, d));
  return date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}

/**
 * Seconds from a field that takes a number of seconds or a duration like "10m", "90s", "1.5h" or
 * "250ms" (the units of a backoff ladder); undefined when it is neither.
 */
export function secondsOf(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const ms = parseDuration(value);
  return ms === undefined ? undefined : ms / 1000;
}

/** How a field that takes seconds or a duration says what it takes, from `min` to `max` seconds. */
export const secondsRule = (min: number, max: number) =>
  `must be a number of seconds from ${min} to ${max}, or a duration like "10m" (ms, s, m, h, d)`;

function parseDelay(value: unknown, config: QueueConfig, problems: FieldProblem[]): NewJob['when'] | undefined {
  const d = secondsOf(value);
  if (d === undefined || d < 0 || d * 1000 > config.maxDelayMs) {
    problem(problems, 'delay', secondsRule(0, config.maxDelayMs / 1000));
    return undefined;
  }
  return { kind: 'd', ms: Math.round(d * 1000) };
}

function parseRunAt(
  r: unknown,
  config: QueueConfig,
  problems: FieldProblem[],
  clientNow: number,
): NewJob['when'] | undefined {
  let ms: number;
  if (typeof r === 'number') {
    if (!Number.isInteger(r)) {
      problem(problems, 'runAt', 'must be an integer of epoch milliseconds or an ISO-8601 time');
      return undefined;
    }
    ms = r;
  } else if (typeof r === 'string' && ISO_8601.test(r) && isCalendarDate(r) && !Number.isNaN(Date.parse(r))) {
    ms = Date.parse(r);
  } else {
    problem(problems, 'runAt', 'must be epoch milliseconds or an ISO-8601 time with a zone, like 2030-01-02T03:04:05Z');
    return undefined;
  }
  if (ms < EARLIEST_RUN_AT_MS) {
    problem(problems, 'runAt', 'is before the year 2000: runAt is in milliseconds, not seconds');
    return undefined;
  }
  if (ms - clientNow > config.maxDelayMs) {
    problem(problems, 'runAt', `is more than ${config.maxDelayMs / 1000} seconds ahead`);
    return undefined;
  }
  return { kind: 'a', ms };
}

function parseWhen(
  job: Record<string, unknown>,
  config: QueueConfig,
  problems: FieldProblem[],
  required: boolean,
  clientNow: number,
): NewJob['when'] | undefined {
  const hasDelay = job.delay !== undefined;
  const hasRunAt = job.runAt !== undefined;
  if (hasDelay && hasRunAt) {
    problem(problems, 'delay', 'give either delay or runAt, not both');
    return undefined;
  }
  if (hasDelay) return parseDelay(job.delay, config, problems);
  if (hasRunAt) return parseRunAt(job.runAt, config, problems, clientNow);
  if (required) problem(problems, 'delay', 'give delay (seconds from now) or runAt (a time)');
  return undefined;
}

function checkUrl(value: unknown, problems: FieldProblem[]): string | undefined {
  const url = checkHttpUrl(value);
  if (typeof url === 'string') return url;
  problem(problems, 'url', url.message);
  return undefined;
}

function checkTopic(value: unknown, problems: FieldProblem[]): string | undefined {
  if (typeof value !== 'string' || !TOPIC_PATTERN.test(value)) {
    problem(problems, 'topic', `must match ${TOPIC_PATTERN.source}`);
    return undefined;
  }
  return value;
}

function checkId(
  value: unknown,
  problems: FieldProblem[],
  fresh: (topic: string) => string,
  topic = '',
): string | undefined {
  if (value === undefined) return fresh(topic);
  if (typeof value !== 'string' || !ID_PATTERN.test(value)) {
    problem(problems, 'id', `must match ${ID_PATTERN.source}`);
    return undefined;
  }
  return value;
}

/** A job's group: optional, with the rules of an id. */
function checkGroup(value: unknown, problems: FieldProblem[]): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !ID_PATTERN.test(value)) {
    problem(problems, 'group', `must match ${ID_PATTERN.source}`);
    return undefined;
  }
  return value;
}

/**
 * A job's (or schedule's) flow key: optional, with the rules of an id, and only on a flow topic (one
 * with `flow` in its configuration). `topic` undefined (malformed) or not configured: only the form
 * is checked, the topic's own problem is reported elsewhere.
 */
export function checkFlowKey(
  value: unknown,
  topic: string | undefined,
  config: QueueConfig,
  problems: FieldProblem[],
  what: 'job' | 'schedule' = 'job',
): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !ID_PATTERN.test(value)) {
    problem(problems, 'key', `must match ${ID_PATTERN.source}`);
    return undefined;
  }
  const t = topic === undefined ? undefined : config.topics.get(topic);
  if (t && !t.flow) {
    problem(
      problems,
      'key',
      `topic ${topic} has no flow control, so its ${what}s take no key: set flow for it in serverless.yml custom.queue.topics`,
    );
    return undefined;
  }
  return value;
}

/** A job's own retry options (backoff, maxAttempts, ttr): those it sets, checked. */
function checkOptions(
  job: Record<string, unknown>,
  config: QueueConfig,
  problems: FieldProblem[],
): Pick<NewJob, 'backoff' | 'maxAttempts' | 'ttrMs'> {
  let backoff: string | undefined;
  if (job.backoff !== undefined) {
    const parsed = parseBackoff(job.backoff, 'backoff', config.maxDelayMs);
    problems.push(...parsed.problems);
    backoff = parsed.spec;
  }
  let maxAttempts: number | undefined;
  if (job.maxAttempts !== undefined) {
    if (!isIntegerIn(job.maxAttempts, MAX_ATTEMPTS))
      problem(problems, 'maxAttempts', `must be an integer from ${MAX_ATTEMPTS.min} to ${MAX_ATTEMPTS.max}`);
    else maxAttempts = job.maxAttempts;
  } else if (backoff) {
    // A ladder names every retry: the first attempt plus one per step, unless said otherwise.
    const steps = ladderLength(backoff);
    if (steps !== undefined) maxAttempts = Math.min(MAX_ATTEMPTS.max, steps + 1);
  }
  let ttrMs: number | undefined;
  if (job.ttr !== undefined) {
    const t = secondsOf(job.ttr);
    if (t === undefined || t < TTR_SECONDS.min || t > TTR_SECONDS.max)
      problem(problems, 'ttr', secondsRule(TTR_SECONDS.min, TTR_SECONDS.max));
    else ttrMs = Math.round(t * 1000);
  }
  return {
    ...(maxAttempts !== undefined ? { maxAttempts } : {}),
    ...(ttrMs !== undefined ? { ttrMs } : {}),
    ...(backoff !== undefined ? { backoff } : {}),
  };
}

/**
 * The options a job (or a schedule, for each of its occurrences) may set besides its time and
 * body, checked for topic `topic` (when known): backoff, maxAttempts, ttr (within the handler's
 * timeout), url (required for a webhook topic) and group. Adds a problem per bad field.
 */
export function checkJobOptions(
  fields: Record<string, unknown>,
  topic: string | undefined,
  config: QueueConfig,
  problems: FieldProblem[],
): Pick<NewJob, 'backoff' | 'maxAttempts' | 'ttrMs' | 'url' | 'group'> {
  const options = checkOptions(fields, config, problems);
  const group = checkGroup(fields.group, problems);
  const maxTtrMs = topic ? config.topics.get(topic)?.maxTtrMs : undefined;
  if (options.ttrMs !== undefined && maxTtrMs !== undefined && options.ttrMs > maxTtrMs) {
    problem(
      problems,
      'ttr',
      `must be at most ${maxTtrMs / 1000} seconds: the handler of topic ${topic} times out after ${maxTtrMs / 1000} s`,
    );
  }
  let url: string | undefined;
  if (fields.url !== undefined) url = checkUrl(fields.url, problems);
  else if (topic && config.topics.get(topic)?.kind === 'webhook')
    problem(problems, 'url', 'is required for a webhook topic');
  return { ...options, ...(url !== undefined ? { url } : {}), ...(group !== undefined ? { group } : {}) };
}

/** An expiresAt as epoch ms, or undefined (a problem added) when it is not epoch ms or an ISO-8601 time. */
function parseExpiresAt(value: unknown, problems: FieldProblem[]): number | undefined {
  if (typeof value === 'number' && Number.isInteger(value) && value >= EARLIEST_RUN_AT_MS) return value;
  if (typeof value === 'string' && ISO_8601.test(value) && isCalendarDate(value) && !Number.isNaN(Date.parse(value)))
    return Date.parse(value);
  problem(
    problems,
    'expiresAt',
    'must be epoch milliseconds or an ISO-8601 time with a zone, like 2030-01-02T03:04:05Z',
  );
  return undefined;
}

/**
 * A job's expiry: its own `expiresAt` (a time later than its runAt, `dueMs` as the client's clock puts it) or
 * `expireAfter` (seconds after its runAt), else the topic's `expireAfter` default (`defaultMs`); undefined for none, or
 * when a problem was added.
 */
function checkExpiry(
  job: Record<string, unknown>,
  dueMs: number | undefined,
  defaultMs: number | undefined,
  problems: FieldProblem[],
): NewJob['expires'] {
  if (job.expiresAt !== undefined && job.expireAfter !== undefined) {
    problem(problems, 'expiresAt', 'give either expiresAt or expireAfter, not both');
    return undefined;
  }
  if (job.expiresAt !== undefined) {
    const ms = parseExpiresAt(job.expiresAt, problems);
    if (ms === undefined) return undefined;
    if (dueMs !== undefined && ms <= dueMs) {
      problem(problems, 'expiresAt', `must be later than the job's runAt (${new Date(dueMs).toISOString()})`);
      return undefined;
    }
    return { kind: 'a', ms };
  }
  if (job.expireAfter !== undefined) {
    const seconds = secondsOf(job.expireAfter);
    const { min, max } = EXPIRE_AFTER_SECONDS;
    if (seconds === undefined || seconds < min || seconds > max) {
      problem(problems, 'expireAfter', secondsRule(min, max));
      return undefined;
    }
    return { kind: 'r', ms: Math.round(seconds * 1000) };
  }
  return defaultMs === undefined ? undefined : { kind: 'r', ms: defaultMs };
}

/**
 * A job's (or schedule's) own jitter (ms), or undefined when it sets none; adds a problem when it is not seconds (or a
 * duration) in JITTER_SECONDS.
 */
export function checkJitter(value: unknown, problems: FieldProblem[]): number | undefined {
  if (value === undefined) return undefined;
  const seconds = secondsOf(value);
  if (seconds === undefined || seconds < JITTER_SECONDS.min || seconds > JITTER_SECONDS.max) {
    problem(problems, 'jitter', secondsRule(JITTER_SECONDS.min, JITTER_SECONDS.max));
    return undefined;
  }
  return Math.round(seconds * 1000);
}

/** Throws the 400 for the problems found in a `what` (a job, a schedule), if any. */
export function throwProblems(problems: FieldProblem[], what: 'job' | 'schedule' = 'job'): void {
  if (problems.length > 0) {
    throw new HttpError(
      400,
      'VALIDATION_FAILED',
      `the ${what} has ${problems.length} invalid field${problems.length > 1 ? 's' : ''}`,
      problems,
    );
  }
}

/** Throws 413 PAYLOAD_TOO_LARGE when a body's JSON text is over the limit. */
export function checkBodySize(body: string, config: QueueConfig, details: boolean): void {
  const bytes = Buffer.byteLength(body);
  if (bytes <= config.maxBodyBytes) return;
  const message = `the body is ${bytes} bytes; the limit is ${config.maxBodyBytes}`;
  throw new HttpError(
    413,
    'PAYLOAD_TOO_LARGE',
    message,
    details ? [{ path: 'body', message: `must be at most ${config.maxBodyBytes} bytes of JSON` }] : undefined,
  );
}

/** The configured topic `topic`; throws 400 UNKNOWN_TOPIC unless there is one. */
export function requireTopic(config: QueueConfig, topic: string): TopicConfig {
  const t = config.topics.get(topic);
  if (!t) {
    const known = [...config.topics.keys()];
    throw new HttpError(
      400,
      'UNKNOWN_TOPIC',
      `topic ${JSON.stringify(topic)} is not configured (configured: ${known.join(', ')})`,
    );
  }
  return t;
}

/** Throws 400 VALIDATION_FAILED unless topic and id could name a job (or, `what`, a schedule). */
export function checkJobRef(topic: string, id: string, what: 'job' | 'schedule' = 'job'): void {
  const problems: FieldProblem[] = [];
  if (!TOPIC_PATTERN.test(topic)) problem(problems, 'topic', `must match ${TOPIC_PATTERN.source}`);
  if (!ID_PATTERN.test(id)) problem(problems, 'id', `must match ${ID_PATTERN.source}`);
  throwProblems(problems, what);
}

/**
 * Validates a job as the API receives it and returns it normalised. Reports every problem at
 * once: throws HttpError 400 VALIDATION_FAILED (details: each field and what is wrong),
 * 400 UNKNOWN_TOPIC, or 413 PAYLOAD_TOO_LARGE. `clientNow` only bounds how far ahead runAt may be.
 */
export function validateJob(
  input: unknown,
  config: QueueConfig,
  clientNow = Date.now(),
  freshId: (topic: string) => string = newJobId,
): NewJob {
  if (!isObject(input)) {
    throw new HttpError(400, 'VALIDATION_FAILED', 'the job must be a JSON object', [
      { path: '', message: 'must be an object' },
    ]);
  }
  const job = input;
  const problems: FieldProblem[] = [];
  for (const key of Object.keys(job)) {
    if (!JOB_FIELDS.includes(key)) problem(problems, key, `is not a job field (fields: ${JOB_FIELDS.join(', ')})`);
  }
  const topic = checkTopic(job.topic, problems);
  const t = topic !== undefined ? config.topics.get(topic) : undefined;
  const keyed = checkKeyed(job, t, secondsOf, problems);
  const id = keyed ? keyedId(job.id, keyed, newJobId, problems) : checkId(job.id, problems, freshId, topic);
  // a debounce's time is its period (lua/addJobs-5.lua): it takes no delay or runAt
  const when =
    keyed?.kind === 'debounce'
      ? { kind: 'd' as const, ms: keyed.periodMs }
      : parseWhen(job, config, problems, true, clientNow);
  const options = checkJobOptions(job, topic, config, problems);
  const priority = checkPriority(job.priority, t, problems);
  const jitterMs = checkJitter(job.jitter, problems);
  const key = checkFlowKey(job.key, topic, config, problems);
  const body = bodyText(job.body);
  if (body === undefined) problem(problems, 'body', 'must be a JSON value');
  // the first run only: a retry's time comes from the backoff; a debounce's is its period
  const offset = t && id !== undefined && !keyed ? jitterOffsetMs(topic!, id, jitterMs ?? t.jitterMs) : 0;
  const due = when && (when.kind === 'a' ? when.ms : clientNow + when.ms) + offset;
  const expires = checkExpiry(job, due, t?.expireAfterMs, problems);
  const callback = jobCallback(job.callback, t, config, problems);
  throwProblems(problems);
  requireTopic(config, topic!);
  checkBodySize(body!, config, true);
  return {
    topic: topic!,
    id: id!,
    partition: layoutFor(config).placeOf(config.topics.get(topic!) ?? topic!, id!),
    when: { kind: when!.kind, ms: when!.ms + offset },
    body: body!,
    ...options,
    ...(key !== undefined ? { key } : {}),
    ...(expires !== undefined ? { expires } : {}),
    ...(priority !== undefined ? { priority } : {}),
    ...(keyed !== undefined ? { keyed } : {}),
    ...(callback !== undefined ? { callback } : {}),
  };
}

/** A job's callback: the one it names, none for null, else its topic's default (`t`, when known). */
function jobCallback(
  value: unknown,
  t: TopicConfig | undefined,
  config: QueueConfig,
  problems: FieldProblem[],
): Callback | undefined {
  if (value === null) return undefined;
  if (value === undefined) return t?.callback;
  const callback = checkCallback(value, config.topics, 'callback');
  if (!Array.isArray(callback)) return callback;
  for (const p of callback) problem(problems, p.path, p.message);
  return undefined;
}

/**
 * Validates a put of job topic/id: the path must name a job, and topic and id in the body, if
 * given, must match it. Then as validateJob.
 */
export function validatePut(
  topic: string,
  id: string,
  input: unknown,
  config: QueueConfig,
  clientNow = Date.now(),
): NewJob {
  checkJobRef(topic, id);
  const fields = isObject(input) ? input : undefined;
  if (
    fields &&
    ((fields.topic !== undefined && fields.topic !== topic) || (fields.id !== undefined && fields.id !== id))
  ) {
    throw new HttpError(400, 'VALIDATION_FAILED', 'topic and id in the body must match the path', [
      { path: 'id', message: 'must match the path' },
    ]);
  }
  for (const field of ['dedupe', 'debounce'] as const)
    if (fields?.[field] !== undefined)
      throw new HttpError(400, 'VALIDATION_FAILED', `${field} is for an add (POST /jobs), not a put`, [
        { path: field, message: 'only an add (POST /jobs) takes it' },
      ]);
  return validateJob(fields ? { ...fields, topic, id } : input, config, clientNow);
}

/** Validates a change to a pending job: `{ delay | runAt, body }`, at least one of them. */
export function validateChange(input: unknown, config: QueueConfig, clientNow = Date.now()): JobChange {
  if (!isObject(input)) {
    throw new HttpError(400, 'VALIDATION_FAILED', 'the change must be a JSON object', [
      { path: '', message: 'must be an object' },
    ]);
  }
  const change = input;
  const problems: FieldProblem[] = [];
  for (const key of Object.keys(change)) {
    if (!['delay', 'runAt', 'body'].includes(key))
      problem(problems, key, 'is not a field of a change (fields: delay, runAt, body)');
  }
  const when = parseWhen(change, config, problems, false, clientNow);
  let body: string | undefined;
  if ('body' in change) {
    body = bodyText(change.body);
    if (body === undefined) problem(problems, 'body', 'must be a JSON value');
  }
  if (!when && body === undefined && problems.length === 0)
    problem(problems, 'delay', 'give delay, runAt or body to change');
  throwProblems(problems);
  if (body !== undefined) checkBodySize(body, config, false);
  return { ...(when ? { when } : {}), ...(body !== undefined ? { body } : {}) };
}

/** Throws 400 VALIDATION_FAILED when a batch holds more jobs than one may. */
export function checkBatchSize(count: number): void {
  if (count > BATCH_JOBS.max) {
    throw new HttpError(400, 'VALIDATION_FAILED', `a batch holds at most ${BATCH_JOBS.max} jobs`, [
      { path: 'jobs', message: `must hold ${BATCH_JOBS.min} to ${BATCH_JOBS.max} jobs` },
    ]);
  }
}

/** Validates a POST /jobs/batch body `{ jobs: [...] }` and returns its jobs, each still to validate. */
export function validateBatch(body: unknown): unknown[] {
  const jobs = isObject(body) ? body.jobs : undefined;
  if (!Array.isArray(jobs) || jobs.length < BATCH_JOBS.min) {
    const range = `${BATCH_JOBS.min} to ${BATCH_JOBS.max}`;
    throw new HttpError(400, 'VALIDATION_FAILED', `send { "jobs": [ ... ] } with ${range} jobs`, [
      { path: 'jobs', message: `must be a list of ${range} jobs` },
    ]);
  }
  checkBatchSize(jobs.length);
  return jobs;
}

/**
 * A key to create: its name, scope and, for a `write` or `read` key, the topics it is limited to (null: every topic).
 */
export interface NewKeyRequest {
  name: string;
  scope: 'admin' | 'write' | 'read';
  topics: string[] | null;
}

/**
 * Names of API keys: the id characters, at most 64 of them (every job and schedule a key changes
 * stores its name: updatedBy), `deployment` excepted (the deployment's own key).
 */
export const KEY_NAME_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;

/** Validates `{ name, scope, topics? }`: every problem at once (400 VALIDATION_FAILED); topics must be configured. */
export function validateNewKey(body: unknown, config: QueueConfig): NewKeyRequest {
  if (!isObject(body))
    throw new HttpError(
      400,
      'VALIDATION_FAILED',
      'send { "name": ..., "scope": "admin" | "write" | "read", "topics"?: [...] }',
      [{ path: '', message: 'must be an object' }],
    );
  const { name, scope, topics, ...rest } = body;
  const problems: FieldProblem[] = Object.keys(rest).map((k) => ({
    path: k,
    message: 'is not a field (fields: name, scope, topics)',
  }));
  if (typeof name !== 'string' || !KEY_NAME_PATTERN.test(name))
    problem(problems, 'name', `must match ${KEY_NAME_PATTERN.source}`);
  else if (name === 'deployment')
    problem(problems, 'name', "deployment is the name of the deployment's own key (API_TOKEN)");
  if (scope !== 'admin' && scope !== 'write' && scope !== 'read')
    problem(problems, 'scope', 'must be admin, write or read');
  if (topics !== undefined && topics !== null) {
    if (
      !Array.isArray(topics) ||
      topics.length === 0 ||
      topics.length > config.topics.size ||
      !topics.every((t) => typeof t === 'string')
    )
      problem(problems, 'topics', 'must be a list of configured topics, or left out for every topic');
    else
      topics.forEach(
        (t: string, i) =>
          config.topics.has(t) || problem(problems, `topics.${i}`, `topic ${JSON.stringify(t)} is not configured`),
      );
    if (scope === 'admin')
      problem(problems, 'topics', 'an admin key manages keys, so it holds every topic: leave topics out');
  }
  if (problems.length) throw new HttpError(400, 'VALIDATION_FAILED', 'invalid key', problems);
  return {
    name: name as string,
    scope: scope as NewKeyRequest['scope'],
    topics: Array.isArray(topics) ? [...new Set(topics as string[])] : null,
  };
}

/** Which dead jobs to redrive: the given ids, or the `count` oldest. */
export type RedriveRequest = { ids: string[] } | { count: number };

/**
 * Validates a redrive body `{ ids: [...] }` or `{ count: n }`; no body (undefined) redrives the default count of
 * oldest.
 */
export function validateRedrive(body: unknown): RedriveRequest {
  if (body === undefined) return { count: REDRIVE_COUNT.default };
  if (!isObject(body))
    throw new HttpError(400, 'VALIDATION_FAILED', 'send { "ids": [...] } or { "count": n }', [
      { path: '', message: 'must be an object' },
    ]);
  const { ids, count, ...rest } = body;
  const problems: FieldProblem[] = Object.keys(rest).map((k) => ({
    path: k,
    message: 'is not a field (fields: ids, count)',
  }));
  const validIds =
    Array.isArray(ids) &&
    ids.length >= REDRIVE_IDS.min &&
    ids.length <= REDRIVE_IDS.max &&
    ids.every((i) => typeof i === 'string');
  if (ids !== undefined && !validIds)
    problem(problems, 'ids', `must be a list of ${REDRIVE_IDS.min} to ${REDRIVE_IDS.max} job ids`);
  if (count !== undefined && !isIntegerIn(count, REDRIVE_COUNT))
    problem(problems, 'count', `must be an integer from ${REDRIVE_COUNT.min} to ${REDRIVE_COUNT.max}`);
  if (ids !== undefined && count !== undefined) problem(problems, 'count', 'give ids or count, not both');
  if (problems.length) throw new HttpError(400, 'VALIDATION_FAILED', 'invalid redrive request', problems);
  return ids !== undefined
    ? { ids: ids as string[] }
    : { count: (count as number | undefined) ?? REDRIVE_COUNT.default };
}

/**
 * An optional integer query parameter in `range`, written as plain decimal digits (not `1e2`,
 * `0x10`, `10.0` or with spaces); adds a problem naming `name` when it is not one.
 */
function intParam(value: string | undefined, name: string, range: Range, problems: FieldProblem[]): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = /^\d{1,15}$/.test(value) ? Number(value) : NaN;
  if (isIntegerIn(n, range)) return n;
  problem(problems, name, `must be an integer from ${range.min} to ${range.max}`);
  return undefined;
}

/** An `If-Match` precondition: `*`, or the version a job must have. */
export type IfMatch = '*' | { version: number };

/**
 * The `If-Match` header of a PUT or DELETE: `*` or one quoted version (`"12"`, the ETag the API
 * answers); undefined when absent. A weak tag (`W/"12"`), a list, or anything else is refused with
 * 400 VALIDATION_FAILED: a version is a strong validator, and a precondition that cannot be
 * checked must not be ignored.
 */
export function parseIfMatch(header: string | undefined): IfMatch | undefined {
  if (header === undefined) return undefined;
  const value = header.trim();
  if (value === '*') return '*';
  const match = /^"(\d{1,15})"$/.exec(value);
  if (!match) {
    const message = 'must be * or one quoted job version, the ETag of the job (for example "12")';
    throw new HttpError(400, 'VALIDATION_FAILED', `If-Match ${message}`, [{ path: 'If-Match', message }]);
  }
  return { version: Number(match[1]) };
}

/** A time in a query: epoch ms, or ISO-8601; adds a problem naming `name` otherwise. */
function timeParam(value: string | undefined, name: string, problems: FieldProblem[]): number | undefined {
  if (value === undefined || value === '') return undefined;
  const ms = /^\d{1,16}$/.test(value)
    ? Number(value)
    : ISO_8601.test(value) && isCalendarDate(value)
      ? Date.parse(value)
      : NaN;
  if (!Number.isSafeInteger(ms)) {
    problem(
      problems,
      name,
      'must be a time: epoch milliseconds or ISO-8601 of a date that exists (2027-03-28T01:00:00Z)',
    );
    return undefined;
  }
  return ms;
}

/** The states GET /topics/{topic}/jobs lists. */
export const LISTED_STATES = ['delayed', 'ready', 'running', 'dead'] as const;
export type ListedState = (typeof LISTED_STATES)[number];

/** A validated query of GET /topics/{topic}/jobs. */
export interface JobsQuery {
  state: ListedState;
  from?: number;
  to?: number;
  limit?: number;
  cursor?: string;
}

/** Throws 400 VALIDATION_FAILED listing every problem of a query. */
function throwQueryProblems(problems: FieldProblem[]): void {
  if (problems.length > 0) {
    const n = problems.length;
    throw new HttpError(
      400,
      'VALIDATION_FAILED',
      `the query has ${n} invalid parameter${n > 1 ? 's' : ''}: ${problems.map((p) => `${p.path} ${p.message}`).join('; ')}`,
      problems,
    );
  }
}

/**
 * Validates the query of GET /topics/{topic}/jobs: `state` (default delayed), `from` and `to`
 * (inclusive bounds of the time the state orders by), `limit`, `cursor` (the previous page's
 * `next`, checked when the page is read). Throws 400 VALIDATION_FAILED naming every bad parameter.
 */
export function validateJobsQuery(query: Record<string, string | undefined>): JobsQuery {
  const problems: FieldProblem[] = [];
  const state = query.state === undefined || query.state === '' ? 'delayed' : query.state;
  if (!(LISTED_STATES as readonly string[]).includes(state))
    problem(problems, 'state', `must be one of ${LISTED_STATES.join(', ')}`);
  const from = timeParam(query.from, 'from', problems);
  const to = timeParam(query.to, 'to', problems);
  if (from !== undefined && to !== undefined && from > to) problem(problems, 'from', 'must not be after to');
  const limit = intParam(query.limit, 'limit', JOBS_PAGE, problems);
  throwQueryProblems(problems);
  const cursor = query.cursor === undefined || query.cursor === '' ? undefined : query.cursor;
  return {
    state: state as ListedState,
    ...(from !== undefined ? { from } : {}),
    ...(to !== undefined ? { to } : {}),
    ...(limit !== undefined ? { limit } : {}),
    ...(cursor !== undefined ? { cursor } : {}),
  };
}

/** A validated query of GET /topics/{topic}/groups/{group}. */
export interface GroupPage {
  limit?: number;
  cursor?: string;
}

/**
 * Validates the query of a group listing: `limit` and `cursor` (the previous page's `next`, checked when the page is
 * read).
 */
export function validateGroupPage(query: Record<string, string | undefined>): GroupPage {
  const problems: FieldProblem[] = [];
  const limit = intParam(query.limit, 'limit', JOBS_PAGE, problems);
  throwQueryProblems(problems);
  const cursor = query.cursor === undefined || query.cursor === '' ? undefined : query.cursor;
  return { ...(limit !== undefined ? { limit } : {}), ...(cursor !== undefined ? { cursor } : {}) };
}

/** Throws 400 VALIDATION_FAILED unless topic and group could name a group. */
export function checkGroupRef(topic: string, group: string): void {
  const problems: FieldProblem[] = [];
  if (!TOPIC_PATTERN.test(topic)) problem(problems, 'topic', `must match ${TOPIC_PATTERN.source}`);
  checkGroup(group, problems);
  if (problems.length > 0)
    throw new HttpError(
      400,
      'VALIDATION_FAILED',
      `the path names no group: ${problems.map((p) => `${p.path} ${p.message}`).join('; ')}`,
      problems,
    );
}

/** A cursor that is not the `next` of a previous page of this listing: 400 VALIDATION_FAILED. */
export function badCursor(path: 'cursor' | 'after' = 'cursor'): HttpError {
  const message = 'must be the next of a previous page of this listing';
  return new HttpError(400, 'VALIDATION_FAILED', `${path} ${message}`, [{ path, message }]);
}

/**
 * Validates the query of a page of dead jobs: `limit` (jobs per page) and `after` (the previous page's `next`), both
 * optional.
 */
export function validateDeadPage(query: Record<string, string | undefined>): { limit?: number; after?: string } {
  const problems: FieldProblem[] = [];
  const limit = intParam(query.limit, 'limit', DEAD_PAGE, problems);
  if (problems.length > 0)
    throw new HttpError(400, 'VALIDATION_FAILED', problems.map((p) => `${p.path} ${p.message}`).join('; '), problems);
  const after = query.after === undefined || query.after === '' ? undefined : query.after; // decoded by Queue.listDead
  return { ...(limit !== undefined ? { limit } : {}), ...(after !== undefined ? { after } : {}) };
}

/**
 * Validates the query of GET /schedules: `topic` (required), `limit` (SCHEDULES_PAGE) and `cursor`
 * (the previous page's `next`, checked when the page is read). Throws 400 VALIDATION_FAILED naming
 * every bad parameter.
 */
export function validateSchedulesQuery(query: Record<string, string | undefined>): {
  topic: string;
  limit?: number;
  cursor?: string;
} {
  const problems: FieldProblem[] = [];
  const topic = query.topic ?? '';
  if (!TOPIC_PATTERN.test(topic)) problem(problems, 'topic', `is required and must match ${TOPIC_PATTERN.source}`);
  const limit = intParam(query.limit, 'limit', SCHEDULES_PAGE, problems);
  throwQueryProblems(problems);
  const cursor = query.cursor === undefined || query.cursor === '' ? undefined : query.cursor;
  return { topic, ...(limit !== undefined ? { limit } : {}), ...(cursor !== undefined ? { cursor } : {}) };
}

/** Throws 400 VALIDATION_FAILED unless topic and key could name a flow key (a key has the rules of an id). */
export function checkFlowRef(topic: string, key: string): void {
  const problems: FieldProblem[] = [];
  if (!TOPIC_PATTERN.test(topic)) problem(problems, 'topic', `must match ${TOPIC_PATTERN.source}`);
  if (!ID_PATTERN.test(key)) problem(problems, 'key', `must match ${ID_PATTERN.source}`);
  if (problems.length > 0)
    throw new HttpError(
      400,
      'VALIDATION_FAILED',
      `the path names no flow key: ${problems.map((p) => `${p.path} ${p.message}`).join('; ')}`,
      problems,
    );
}

/**
 * The configured flow topic `topic`: 400 UNKNOWN_TOPIC when it is not configured, 400 VALIDATION_FAILED naming `topic`
 * when it has no `flow`.
 */
export function requireFlowTopic(config: QueueConfig, topic: string): TopicConfig {
  const t = requireTopic(config, topic);
  if (!t.flow) {
    const message = `topic ${topic} has no flow control: set flow for it in serverless.yml custom.queue.topics`;
    throw new HttpError(400, 'VALIDATION_FAILED', message, [
      { path: 'topic', message: 'has no flow control: set flow for it in serverless.yml custom.queue.topics' },
    ]);
  }
  return t;
}

const FLOW_CHANGE_FIELDS = ['concurrency', 'rate', 'paused'];

/**
 * A key's pace `{ count, per, burst? }` (per: seconds or a duration; burst default 1, at most count); adds a problem
 * per bad field.
 */
function checkFlowRate(value: unknown, problems: FieldProblem[]): FlowRate | undefined {
  if (!isObject(value)) {
    problem(problems, 'rate', 'must be { "count": n, "per": seconds, "burst"?: n }, or null for the topic\'s default');
    return undefined;
  }
  const { count, per, burst, ...rest } = value;
  for (const k of Object.keys(rest))
    problem(problems, `rate.${k}`, 'is not a field of a rate (fields: count, per, burst)');
  const { count: c, perSeconds: p } = FLOW_LIMITS;
  const countOk = isIntegerIn(count, c);
  if (!countOk)
    problem(problems, 'rate.count', `must be an integer from ${c.min} to ${c.max}: the starts per per seconds`);
  const seconds = per === undefined ? p.default : secondsOf(per);
  const perOk = seconds !== undefined && seconds >= p.min && seconds <= p.max;
  if (!perOk) problem(problems, 'rate.per', secondsRule(p.min, p.max));
  const burstMax = countOk ? count : c.max;
  const burstOk = burst === undefined || isIntegerIn(burst, { min: 1, max: burstMax });
  if (!burstOk)
    problem(
      problems,
      'rate.burst',
      `must be an integer from 1 to ${countOk ? `count (${count})` : 'count'}: the starts allowed at once after a quiet spell`,
    );
  if (!countOk || !perOk || !burstOk) return undefined;
  return { count, perMs: Math.round(seconds * 1000), burst: (burst as number | undefined) ?? 1 };
}

/**
 * Validates the body of PUT /topics/{topic}/flows/{key}: `{ concurrency?, rate?, paused? }`, at
 * least one. `concurrency` 1..10000 or null, `rate` `{ count, per, burst? }` or null (null: back to
 * the topic's default), `paused` true or false. Throws 400 VALIDATION_FAILED naming every bad field.
 */
export function validateFlowChange(body: unknown): FlowKeyChange {
  if (!isObject(body))
    throw new HttpError(
      400,
      'VALIDATION_FAILED',
      'send { "concurrency"?: n | null, "rate"?: { count, per, burst? } | null, "paused"?: bool }',
      [{ path: '', message: 'must be an object' }],
    );
  const problems: FieldProblem[] = [];
  for (const k of Object.keys(body))
    if (!FLOW_CHANGE_FIELDS.includes(k))
      problem(problems, k, `is not a field of a flow key's change (fields: ${FLOW_CHANGE_FIELDS.join(', ')})`);
  const change: FlowKeyChange = {};
  const { concurrency, rate, paused } = body;
  if (concurrency === null) change.concurrency = null;
  else if (concurrency !== undefined) {
    if (isIntegerIn(concurrency, FLOW_LIMITS.concurrency)) change.concurrency = concurrency;
    else
      problem(
        problems,
        'concurrency',
        `must be an integer from ${FLOW_LIMITS.concurrency.min} to ${FLOW_LIMITS.concurrency.max}, or null for the topic's default`,
      );
  }
  if (rate === null) change.rate = null;
  else if (rate !== undefined) {
    const r = checkFlowRate(rate, problems);
    if (r) change.rate = r;
  }
  if (paused !== undefined) {
    if (typeof paused === 'boolean') change.paused = paused;
    else problem(problems, 'paused', 'must be true or false');
  }
  if (problems.length === 0 && concurrency === undefined && rate === undefined && paused === undefined)
    problem(problems, '', 'give concurrency, rate or paused to change');
  if (problems.length > 0)
    throw new HttpError(
      400,
      'VALIDATION_FAILED',
      `the change has ${problems.length} invalid field${problems.length > 1 ? 's' : ''}`,
      problems,
    );
  return change;
}
