/** Error codes of the API, as they appear in `{ "error": { "code" } }`. */
export type ErrorCode =
  | 'VALIDATION_FAILED'
  | 'INVALID_JSON'
  | 'UNAUTHORIZED'
  | 'NOT_FOUND'
  | 'JOB_EXISTS'
  | 'JOB_FINISHED'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNKNOWN_TOPIC'
  | 'UNAVAILABLE'
  | 'INTERNAL';

/** One problem with one input field; `path` is dotted (`jobs.3.delay`). */
export interface FieldProblem {
  path: string;
  message: string;
}

/** The one error class: an HTTP status, a stable code, a message safe to show the caller. */
export class HttpError extends Error {
  readonly expose: boolean;
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'HttpError';
    this.expose = status < 500;
  }
}

/** Refusals the Lua scripts return as negative integers. */
export enum Refusal {
  JobExists = -1,
  NotFound = -2,
  JobFinished = -3,
  StaleAttempt = -4,
  Cancelled = -5,
}

/** Maps a script refusal on job `topic`/`id` to the API error it becomes. */
export function refusalError(refusal: Refusal, topic: string, id: string, details?: unknown): HttpError {
  switch (refusal) {
    case Refusal.JobExists:
      return new HttpError(409, 'JOB_EXISTS', `job ${topic}/${id} already exists`, details);
    case Refusal.NotFound:
      return new HttpError(404, 'NOT_FOUND', `job ${topic}/${id} not found`, details);
    case Refusal.JobFinished:
      return new HttpError(409, 'JOB_FINISHED', `job ${topic}/${id} is no longer pending`, details);
    case Refusal.StaleAttempt:
      return new HttpError(409, 'JOB_FINISHED', `that attempt of job ${topic}/${id} already ended`, details);
    case Refusal.Cancelled:
      return new HttpError(409, 'JOB_FINISHED', `job ${topic}/${id} was cancelled`, details);
  }
}

/**
 * Thrown by a topic handler's function to fail the attempt and ask for the next one after
 * `retryAfterMs` instead of the backoff (a 429 or 503 with Retry-After, say).
 */
export class RetryLater extends Error {
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(message);
    this.name = 'RetryLater';
  }
}
