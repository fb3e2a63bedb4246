import { isRefused, NotReplicatedError, REFUSAL, type Refusal, type Refused } from '../engine';

/** Error codes of the API, as they appear in `{ "error": { "code" } }`. */
export type ErrorCode =
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

/** One problem with one input field; `path` is dotted (`jobs.3.delay`). */
export type { FieldProblem } from '../core/backoff';

/**
 * The one error class: an HTTP status, a stable code, a message safe to show the caller. A 4xx,
 * and a 503 that says when to retry (`retryAfterSeconds`), are answered as they are; any other
 * 5xx becomes 500 INTERNAL with only the request id shown.
 */
export class HttpError extends Error {
  readonly expose: boolean;
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'HttpError';
    this.expose = status < 500 || (status === 503 && retryAfterSeconds !== undefined);
  }
}

/** Maps a script refusal (lib/engine/codes.ts) on job `topic`/`id` to the API error it becomes. */
export function refusalError(refusal: Refusal, topic: string, id: string, details?: unknown): HttpError {
  switch (refusal) {
    case REFUSAL.JOB_EXISTS:
      return new HttpError(409, 'JOB_EXISTS', `job ${topic}/${id} already exists`, details);
    case REFUSAL.NOT_FOUND:
      return new HttpError(404, 'NOT_FOUND', `job ${topic}/${id} not found`, details);
    case REFUSAL.JOB_FINISHED:
      return new HttpError(409, 'JOB_FINISHED', `job ${topic}/${id} is no longer pending`, details);
    case REFUSAL.STALE_ATTEMPT:
      return new HttpError(409, 'JOB_FINISHED', `that attempt of job ${topic}/${id} already ended`, details);
    case REFUSAL.CANCELLED:
      return new HttpError(409, 'JOB_FINISHED', `job ${topic}/${id} was cancelled`, details);
    case REFUSAL.VERSION_MISMATCH:
      return new HttpError(
        412,
        'VERSION_MISMATCH',
        `job ${topic}/${id} does not have the version If-Match names`,
        details,
      );
  }
}

/** Throws the API error of a refusal; otherwise returns the outcome. */
export function orThrow<T extends object>(outcome: T | Refused, topic: string, id: string): T {
  if (!isRefused(outcome)) return outcome;
  if (outcome.refusal === REFUSAL.VERSION_MISMATCH)
    throw refusalError(outcome.refusal, topic, id, { job: outcome.job ?? null });
  throw refusalError(outcome.refusal, topic, id, outcome.job ? { job: outcome.job } : undefined);
}

/** Runs an engine change; a change no replica confirmed becomes 503 NOT_REPLICATED (retry the same request). */
export async function replicated<T>(change: Promise<T>): Promise<T> {
  try {
    return await change;
  } catch (error) {
    if (!(error instanceof NotReplicatedError)) throw error;
    const message = `the change reached the primary, but no replica confirmed it within ${error.timeoutMs} ms, so a failover could undo it; retry the same request (it is idempotent)`;
    throw new HttpError(503, 'NOT_REPLICATED', message, undefined, 1);
  }
}
