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
