import { randomBytes } from 'node:crypto';
import { ladderLength, parseBackoff } from './backoff';
import { ID_PATTERN, TOPIC_PATTERN, type QueueConfig } from './config';
import { HttpError, type FieldProblem } from './errors';
import { partitionOf } from './keys';

/** A job that passed validation, ready for the add script. */
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
}

/** A change to a pending job: a new due time and/or a new body. */
export interface JobChange {
  when?: NewJob['when'];
  body?: string;
}

const JOB_FIELDS = ['topic', 'id', 'delay', 'runAt', 'body', 'maxAttempts', 'backoff', 'ttr', 'url'];
const EARLIEST_RUN_AT = Date.UTC(2000, 0, 1); // below this, runAt was almost surely given in seconds
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const MAX_URL_LENGTH = 2048;
const MAX_TTR_S = 86_400;

/** A fresh id: 16 characters of [A-Za-z0-9_-], 96 random bits. */
export function generateId(): string {
  return randomBytes(12).toString('base64url');
}

function problem(problems: FieldProblem[], path: string, message: string): void {
  problems.push({ path, message });
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

function parseWhen(job: Record<string, unknown>, config: QueueConfig, problems: FieldProblem[], required: boolean, clientNow: number): NewJob['when'] | undefined {
  const hasDelay = job.delay !== undefined;
  const hasRunAt = job.runAt !== undefined;
  if (hasDelay && hasRunAt) {
    problem(problems, 'delay', 'give either delay or runAt, not both');
    return undefined;
  }
  if (hasDelay) {
    const d = job.delay;
    if (typeof d !== 'number' || !Number.isFinite(d) || d < 0 || d * 1000 > config.maxDelayMs) {
      problem(problems, 'delay', `must be a number of seconds from 0 to ${config.maxDelayMs / 1000}`);
      return undefined;
    }
    return { kind: 'd', ms: Math.round(d * 1000) };
  }
  if (hasRunAt) {
    const r = job.runAt;
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
    if (ms < EARLIEST_RUN_AT) {
      problem(problems, 'runAt', 'is before the year 2000: runAt is in milliseconds, not seconds');
      return undefined;
    }
    if (ms - clientNow > config.maxDelayMs) {
      problem(problems, 'runAt', `is more than ${config.maxDelayMs / 1000} seconds ahead`);
      return undefined;
    }
    return { kind: 'a', ms };
  }
  if (required) problem(problems, 'delay', 'give delay (seconds from now) or runAt (a time)');
  return undefined;
}

function checkUrl(value: unknown, problems: FieldProblem[]): string | undefined {
  if (typeof value !== 'string' || value.length > MAX_URL_LENGTH) {
    problem(problems, 'url', `must be an http(s) URL of at most ${MAX_URL_LENGTH} characters`);
    return undefined;
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    problem(problems, 'url', 'is not a valid URL');
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    problem(problems, 'url', 'must use https or http');
    return undefined;
  }
  if (url.username || url.password) {
    problem(problems, 'url', 'must not carry credentials');
    return undefined;
  }
  return url.href;
}

function checkTopic(value: unknown, problems: FieldProblem[]): string | undefined {
  if (typeof value !== 'string' || !TOPIC_PATTERN.test(value)) {
    problem(problems, 'topic', `must match ${TOPIC_PATTERN.source}`);
    return undefined;
  }
  return value;
}

/** Throws the 400/413 for the problems found, if any. */
function throwProblems(problems: FieldProblem[]): void {
  if (problems.length > 0) {
    throw new HttpError(400, 'VALIDATION_FAILED', `the job has ${problems.length} invalid field${problems.length > 1 ? 's' : ''}`, problems);
  }
}

/** Throws 400 UNKNOWN_TOPIC unless `topic` is configured. */
export function requireTopic(config: QueueConfig, topic: string): void {
  if (!config.topics.has(topic)) {
    const known = [...config.topics.keys()];
    throw new HttpError(400, 'UNKNOWN_TOPIC', `topic ${JSON.stringify(topic)} is not configured (configured: ${known.join(', ')})`);
  }
}

/** Throws 400 VALIDATION_FAILED unless topic and id could name a job. */
export function checkJobRef(topic: string, id: string): void {
  const problems: FieldProblem[] = [];
  if (!TOPIC_PATTERN.test(topic)) problem(problems, 'topic', `must match ${TOPIC_PATTERN.source}`);
  if (!ID_PATTERN.test(id)) problem(problems, 'id', `must match ${ID_PATTERN.source}`);
  throwProblems(problems);
}

/**
 * Validates a job as the API receives it and returns it normalised. Reports every problem at
 * once: throws HttpError 400 VALIDATION_FAILED (details: each field and what is wrong),
 * 400 UNKNOWN_TOPIC, or 413 PAYLOAD_TOO_LARGE. `clientNow` only bounds how far ahead runAt may be.
 */
export function validateJob(input: unknown, config: QueueConfig, clientNow = Date.now()): NewJob {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new HttpError(400, 'VALIDATION_FAILED', 'the job must be a JSON object', [{ path: '', message: 'must be an object' }]);
  }
  const job = input as Record<string, unknown>;
  const problems: FieldProblem[] = [];
  for (const key of Object.keys(job)) {
    if (!JOB_FIELDS.includes(key)) problem(problems, key, `is not a job field (fields: ${JOB_FIELDS.join(', ')})`);
  }
  const topic = checkTopic(job.topic, problems);
  let id: string | undefined;
  if (job.id === undefined) id = generateId();
  else if (typeof job.id !== 'string' || !ID_PATTERN.test(job.id)) problem(problems, 'id', `must match ${ID_PATTERN.source}`);
  else id = job.id;

  const when = parseWhen(job, config, problems, true, clientNow);
  const topicConfig = topic ? config.topics.get(topic) : undefined;

  let backoff: string | undefined;
  if (job.backoff !== undefined) {
    const parsed = parseBackoff(job.backoff, 'backoff', config.maxDelayMs);
    problems.push(...parsed.problems);
    backoff = parsed.spec;
  }
  let maxAttempts: number | undefined;
  if (job.maxAttempts !== undefined) {
    const m = job.maxAttempts;
    if (typeof m !== 'number' || !Number.isInteger(m) || m < 1 || m > 1000) problem(problems, 'maxAttempts', 'must be an integer from 1 to 1000');
    else maxAttempts = m;
  } else if (backoff) {
    // A ladder names every retry: the first attempt plus one per step, unless said otherwise.
    const steps = ladderLength(backoff);
    if (steps !== undefined) maxAttempts = Math.min(1000, steps + 1);
  }
  let ttrMs: number | undefined;
  if (job.ttr !== undefined) {
    const t = job.ttr;
    if (typeof t !== 'number' || !Number.isFinite(t) || t < 0.1 || t > MAX_TTR_S) problem(problems, 'ttr', `must be a number of seconds from 0.1 to ${MAX_TTR_S}`);
    else ttrMs = Math.round(t * 1000);
  }
  let url: string | undefined;
  if (job.url !== undefined) url = checkUrl(job.url, problems);
  else if (topicConfig?.kind === 'webhook') problem(problems, 'url', 'is required for a webhook topic');

  const body = bodyText(job.body);
  if (body === undefined) problem(problems, 'body', 'must be a JSON value');
  throwProblems(problems);
  requireTopic(config, topic!);
  const bytes = Buffer.byteLength(body!);
  if (bytes > config.maxBodyBytes) {
    throw new HttpError(413, 'PAYLOAD_TOO_LARGE', `the body is ${bytes} bytes; the limit is ${config.maxBodyBytes}`, [{ path: 'body', message: `must be at most ${config.maxBodyBytes} bytes of JSON` }]);
  }
  return {
    topic: topic!,
    id: id!,
    partition: partitionOf(topic!, id!, config.partitions),
    when: when!,
    body: body!,
    ...(maxAttempts !== undefined ? { maxAttempts } : {}),
    ...(ttrMs !== undefined ? { ttrMs } : {}),
    ...(backoff !== undefined ? { backoff } : {}),
    ...(url !== undefined ? { url } : {}),
  };
}

/** Validates a change to a pending job: `{ delay | runAt, body }`, at least one of them. */
export function validateChange(input: unknown, config: QueueConfig, clientNow = Date.now()): JobChange {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new HttpError(400, 'VALIDATION_FAILED', 'the change must be a JSON object', [{ path: '', message: 'must be an object' }]);
  }
  const change = input as Record<string, unknown>;
  const problems: FieldProblem[] = [];
  for (const key of Object.keys(change)) {
    if (!['delay', 'runAt', 'body'].includes(key)) problem(problems, key, 'is not a field of a change (fields: delay, runAt, body)');
  }
  const when = parseWhen(change, config, problems, false, clientNow);
  let body: string | undefined;
  if ('body' in change) {
    body = bodyText(change.body);
    if (body === undefined) problem(problems, 'body', 'must be a JSON value');
  }
  if (!when && body === undefined && problems.length === 0) problem(problems, 'delay', 'give delay, runAt or body to change');
  throwProblems(problems);
  if (body !== undefined && Buffer.byteLength(body) > config.maxBodyBytes) {
    throw new HttpError(413, 'PAYLOAD_TOO_LARGE', `the body is ${Buffer.byteLength(body)} bytes; the limit is ${config.maxBodyBytes}`);
  }
  return { ...(when ? { when } : {}), ...(body !== undefined ? { body } : {}) };
}
