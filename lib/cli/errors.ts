/**
 * The CLI's exit codes, and how a failure (a usage error, an API refusal, no answer) becomes one,
 * with the code and message that `dq` prints.
 */
import { DelayQueueError } from '../client';

/** Exit codes of `dq`: documented in the README and in `dq --help`. */
export const EXIT = {
  ok: 0,
  /** The API refused the request (VALIDATION_FAILED, JOB_EXISTS, JOB_FINISHED, UNAUTHORIZED, …). */
  api: 1,
  /** Bad arguments, options, body or configuration: nothing was sent. */
  usage: 2,
  /** The job, schedule or page asked for does not exist (NOT_FOUND). */
  notFound: 3,
  /** No answer, a timeout, or the API unavailable (503 UNAVAILABLE, NOT_REPLICATED, 502, 504): try again. */
  unavailable: 4,
} as const;

/** The exit code table as `dq --help` prints it. */
export const EXIT_HELP: readonly [number, string][] = [
  [EXIT.ok, 'done'],
  [EXIT.api, 'the API refused the request (its error code is printed: VALIDATION_FAILED, JOB_EXISTS, UNAUTHORIZED, …)'],
  [EXIT.usage, 'bad command, option, body or configuration; nothing was sent'],
  [EXIT.notFound, 'no such job or schedule (NOT_FOUND)'],
  [
    EXIT.unavailable,
    'no answer, a timeout, or the API unavailable (UNAVAILABLE, NOT_REPLICATED, HTTP 502-504); try again',
  ],
];

/** A mistake in the command line or the configuration, found before anything is sent (exit 2). */
export class UsageError extends Error {
  override name = 'UsageError';
  /** The command whose help to point at (`jobs add`), when known. */
  readonly command: string | undefined;
  constructor(message: string, command?: string) {
    super(message);
    this.command = command;
  }
}

/** A failure as `dq` reports it: the exit code, a SCREAMING_SNAKE code, and what the API said. */
export interface Failure {
  exitCode: number;
  code: string;
  message: string;
  /** HTTP status, when an answer came (0: none came). */
  status?: number;
  details?: unknown;
  /** For JOB_EXISTS, JOB_FINISHED and VERSION_MISMATCH: the job as it is. */
  job?: unknown;
}

const UNAVAILABLE_STATUS = new Set([0, 502, 503, 504]);

/** The message of the innermost cause of a failure with no answer (`connect ECONNREFUSED 127.0.0.1:3000`), if any. */
function rootCause(error: DelayQueueError): string | undefined {
  if (error.status !== 0) return undefined;
  let inner: unknown = error;
  for (let depth = 0; depth < 10 && inner instanceof Error && inner.cause instanceof Error; depth++)
    inner = inner.cause;
  return inner !== error && inner instanceof Error ? inner.message : undefined;
}

/** Turns anything thrown by a command into the Failure to print and exit with. */
export function describeFailure(error: unknown): Failure {
  if (error instanceof UsageError) return { exitCode: EXIT.usage, code: 'USAGE', message: error.message };
  if (error instanceof NotFoundError) return { exitCode: EXIT.notFound, code: 'NOT_FOUND', message: error.message };
  if (error instanceof DelayQueueError) {
    const exitCode =
      error.code === 'NOT_FOUND'
        ? EXIT.notFound
        : UNAVAILABLE_STATUS.has(error.status) || error.code === 'UNAVAILABLE' || error.code === 'NOT_REPLICATED'
          ? EXIT.unavailable
          : EXIT.api;
    const root = rootCause(error);
    return {
      exitCode,
      code: error.code,
      message: root && !error.message.includes(root) ? `${error.message} (${root})` : error.message,
      status: error.status,
      ...(error.details !== undefined ? { details: error.details } : {}),
      ...(error.job !== undefined ? { job: error.job } : {}),
    };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { exitCode: EXIT.api, code: 'CLI_ERROR', message };
}

/** A read that found nothing (`jobs get`, `schedules get`, a topic not configured): exit 3, code NOT_FOUND. */
export class NotFoundError extends Error {
  override name = 'NotFoundError';
}

/** A NotFoundError saying `no <what>`. */
export function notFound(what: string): NotFoundError {
  return new NotFoundError(`no ${what}`);
}
