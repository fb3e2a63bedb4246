/**
 * Webhook signing: the `x-dq-timestamp` / `x-dq-signature` headers, how a delivery is signed, and how a
 * receiver verifies it (HMAC-SHA256 over `${timestamp}.${body}`, several secrets while rotating).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Header carrying the signing time, unix seconds. */
export const TIMESTAMP_HEADER = 'x-dq-timestamp';
/** Header carrying one or more space-separated `v1=<hex HMAC-SHA256>` signatures. */
export const SIGNATURE_HEADER = 'x-dq-signature';

const DEFAULT_TOLERANCE_SECONDS = 300;

/**
 * Returns `v1=` + hex HMAC-SHA256 keyed by `secret` over `${timestamp}.${body}`; with several
 * secrets (while one is rotated), one such signature per secret, in order, space-separated: a
 * receiver that knows any one of the secrets verifies the request.
 */
export function signWebhook(secret: string | readonly string[], timestamp: number, body: string): string {
  const secrets: readonly string[] = typeof secret === 'string' ? [secret] : secret;
  return secrets.map((s) => `v1=${hmacHex(s, `${timestamp}.${body}`)}`).join(' ');
}

function hmacHex(secret: string, payload: string): string {
  return createHmac('sha256', secret).update(payload, 'utf8').digest('hex');
}

/** Options of {@link verifyWebhook}. */
export interface VerifyWebhookOptions {
  /** The signing secret, or several while rotating: any one of them may match. */
  secret: string | string[];
  /** The raw request body, exactly as received. */
  body: string;
  /** Value of the `x-dq-timestamp` header. */
  timestamp: string | undefined;
  /** Value of the `x-dq-signature` header. */
  signature: string | undefined;
  /** Largest accepted distance between the timestamp and now, either way; default 300. */
  toleranceSeconds?: number;
  /** Current unix time in seconds; defaults to the system clock. */
  now?: number;
}

/** Outcome of {@link verifyWebhook}. */
export type VerifyWebhookResult =
  { ok: true } | { ok: false; reason: 'missing_headers' | 'stale_timestamp' | 'bad_signature' };

/**
 * Checks a received webhook's timestamp (a malformed one counts as stale) and, in constant time, its signature against
 * every secret.
 */
export function verifyWebhook(options: VerifyWebhookOptions): VerifyWebhookResult {
  const { body, timestamp, signature } = options;
  if (!timestamp || !signature || !signature.trim()) return { ok: false, reason: 'missing_headers' };
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const ts = /^\d{1,15}$/.test(timestamp.trim()) ? Number(timestamp.trim()) : NaN;
  if (!Number.isFinite(ts) || Math.abs(now - ts) > tolerance) return { ok: false, reason: 'stale_timestamp' };

  const candidates = signature
    .split(/\s+/)
    .filter((s) => /^v1=[0-9a-f]{64}$/i.test(s))
    .map((s) => Buffer.from(s.slice(3), 'hex'));
  const secrets = Array.isArray(options.secret) ? options.secret : [options.secret];
  let matched = false;
  for (const secret of secrets) {
    const expected = Buffer.from(hmacHex(secret, `${timestamp.trim()}.${body}`), 'hex');
    for (const candidate of candidates) {
      if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) matched = true;
    }
  }
  return matched ? { ok: true } : { ok: false, reason: 'bad_signature' };
}
