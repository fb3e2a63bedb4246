/**
 * Webhook delivery: one signed POST of a job's body to its URL under the address policy, and the
 * mapping of the answer to success, RetryLater (429/503 with Retry-After) or a one-line error.
 */
import http, { type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import https, { type RequestOptions } from 'node:https';
import net from 'node:net';
import type { LookupAddress } from 'node:dns';
import { RetryLater } from '../retry-later';
import type { ClaimedJob } from '../../engine';
import { checkedAddresses, pinnedLookup } from './address';
import { SIGNATURE_HEADER, signWebhook, TIMESTAMP_HEADER } from './sign';

/** Header carrying the job's topic. */
export const TOPIC_HEADER = 'x-dq-topic';
/** Header carrying the job's id. */
export const JOB_ID_HEADER = 'x-dq-job-id';
/** Header carrying the attempt number, 1-based. */
export const ATTEMPT_HEADER = 'x-dq-attempt';
/** The `user-agent` every webhook delivery sends. */
export const WEBHOOK_USER_AGENT = 'delay-queue-webhook/1';

const MAX_BODY_READ = 1024;
const MAX_SNIPPET = 200;
const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/** The fields of a claimed job a webhook delivery uses. */
export type WebhookJob = Pick<ClaimedJob, 'topic' | 'id' | 'attempt' | 'url' | 'body'>;

/** Options of {@link deliverWebhook}. */
export interface DeliverWebhookOptions {
  /**
   * Secret the request is signed with; several while one is rotated: the request carries a signature made with each.
   */
  secret: string | readonly string[];
  /** Local development only: allows http: URLs and skips the address check. */
  allowPrivate: boolean;
  /** Hostnames (exact match) exempt from the address check. */
  allowHosts?: string[];
  /** CIDR blocks refused besides the special-purpose ranges: the stack's own VPC. */
  denyCidrs?: readonly string[];
  /** Aborts the delivery, failing it as timed out. */
  signal?: AbortSignal;
  /** Whole-delivery time limit, ms. */
  timeoutMs: number;
  /** Clock, epoch ms; defaults to `Date.now`. */
  now?: () => number;
  /** The attempt's W3C trace context, sent as the `traceparent` header (tracing on). */
  traceparent?: string;
}

/** Outcome of a successful delivery. */
export interface DeliveryResult {
  status: number;
  durationMs: number;
}

/**
 * POSTs the job's signed JSON body to its URL; resolves on 2xx, throws RetryLater on 429/503 with Retry-After and Error
 * on anything else.
 */
export async function deliverWebhook(job: WebhookJob, options: DeliverWebhookOptions): Promise<DeliveryResult> {
  const now = options.now ?? Date.now;
  const started = now();
  const secrets: readonly string[] = typeof options.secret === 'string' ? [options.secret] : options.secret;
  if (secrets.length === 0 || !secrets.every(Boolean))
    throw new Error('webhook secret is not configured (WEBHOOK_SECRET): refusing to send unsigned');
  if (!job.url) throw new Error('job has no url');
  let url: URL;
  try {
    url = new URL(job.url);
  } catch {
    throw new Error('job url is not a valid URL');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && options.allowPrivate)) {
    throw new Error(`refused: ${url.protocol.replace(/:$/, '')} URLs are not allowed, only https`);
  }
  const hostname = url.hostname.replace(/^\[|\]$/g, '');

  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error(`timed out after ${options.timeoutMs} ms`)), options.timeoutMs);
  const onOuterAbort = () => abort.abort(new Error(`timed out after ${Math.max(0, Math.round(now() - started))} ms`));
  if (options.signal?.aborted) onOuterAbort();
  else options.signal?.addEventListener('abort', onOuterAbort, { once: true });
  try {
    const exempt =
      options.allowPrivate || (options.allowHosts ?? []).some((h) => h.toLowerCase() === hostname.toLowerCase());
    const pinned = exempt ? undefined : await checkedAddresses(hostname, abort.signal, options.denyCidrs);
    const signing = { secrets, now, ...(options.traceparent ? { traceparent: options.traceparent } : {}) };
    const status = await post({ url, hostname, pinned }, job, signing, abort.signal);
    return { status, durationMs: Math.max(0, now() - started) };
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onOuterAbort);
  }
}

/**
 * One POST as a Promise over node's request callbacks (over 60 lines on purpose: the settle, abort,
 * response and error handlers share the request's state; split up, each would need it passed in).
 */
function post(
  target: { url: URL; hostname: string; pinned: LookupAddress[] | undefined },
  job: WebhookJob,
  signing: { secrets: readonly string[]; now: () => number; traceparent?: string },
  signal: AbortSignal,
): Promise<number> {
  const { url, hostname, pinned } = target;
  const { secrets, now } = signing;
  const payload = JSON.stringify(job.body) ?? 'null';
  const timestamp = Math.floor(now() / 1000);
  const headers: OutgoingHttpHeaders = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
    'user-agent': WEBHOOK_USER_AGENT,
    [TIMESTAMP_HEADER]: String(timestamp),
    [SIGNATURE_HEADER]: signWebhook(secrets, timestamp, payload),
    [TOPIC_HEADER]: job.topic,
    [JOB_ID_HEADER]: job.id,
    [ATTEMPT_HEADER]: String(job.attempt),
    ...(signing.traceparent ? { traceparent: signing.traceparent } : {}),
  };
  const isHttps = url.protocol === 'https:';
  const requestOptions: RequestOptions = {
    method: 'POST',
    host: hostname,
    port: url.port || (isHttps ? 443 : 80),
    path: `${url.pathname}${url.search}`,
    headers,
    agent: false,
    ...(url.username ? { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` } : {}),
    ...(pinned ? { lookup: pinnedLookup(pinned) } : {}),
    ...(isHttps && !net.isIP(hostname) ? { servername: hostname } : {}),
  };

  return new Promise<number>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    let settled = false;
    let response: IncomingMessage | undefined;
    const chunks: Buffer[] = [];
    let received = 0;

    const settle = (err: Error | null, status?: number) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      req.destroy();
      if (err) reject(err);
      else resolve(status!);
    };
    const finishResponse = () => {
      if (!response) return;
      const body = Buffer.concat(chunks).subarray(0, MAX_BODY_READ);
      try {
        settle(null, outcome(response, body, now));
      } catch (err) {
        settle(err as Error);
      }
    };
    const onAbort = () => {
      if (response) finishResponse();
      else settle(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    };

    const req = (isHttps ? https : http).request(requestOptions, (res) => {
      response = res;
      res.on('error', finishResponse);
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300) return settle(null, status);
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        received += chunk.length;
        if (received >= MAX_BODY_READ) finishResponse();
      });
      res.on('end', finishResponse);
    });
    req.on('error', (err) => {
      if (response) finishResponse();
      else settle(new Error(networkMessage(err as NodeJS.ErrnoException & { address?: string; port?: number })));
    });
    signal.addEventListener('abort', onAbort, { once: true });
    req.end(payload);
  });
}

function outcome(res: IncomingMessage, body: Buffer, now: () => number): number {
  const status = res.statusCode ?? 0;
  if (status >= 200 && status < 300) return status;
  if (status >= 300 && status < 400) {
    const location = res.headers.location;
    throw new Error(
      location
        ? `HTTP ${status}: redirect to ${describeLocation(location)} not followed`
        : `HTTP ${status}: redirect not followed`,
    );
  }
  const message = `HTTP ${status}: ${snippet(body) || oneLine(res.statusMessage ?? '')}`.trimEnd().replace(/:$/, '');
  if (status === 429 || status === 503) {
    const delay = retryAfterMs(res.headers['retry-after'], now());
    if (delay !== undefined) throw new RetryLater(message, delay);
  }
  throw new Error(message);
}

function describeLocation(location: string): string {
  try {
    const target = new URL(location, 'http://relative.invalid');
    const text =
      target.host === 'relative.invalid' ? target.pathname : `${target.protocol}//${target.host}${target.pathname}`;
    return oneLine(text).slice(0, MAX_SNIPPET);
  } catch {
    return 'an invalid location';
  }
}

function retryAfterMs(header: string | undefined, nowMs: number): number | undefined {
  if (!header) return undefined;
  const value = header.trim();
  let ms: number;
  if (/^\d+$/.test(value)) ms = Number(value) * 1000;
  else {
    const at = Date.parse(value);
    if (Number.isNaN(at)) return undefined;
    ms = at - nowMs;
  }
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms));
}

function oneLine(text: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are what this removes, so a receiver's reply becomes one printable line
  return text.replace(/[\u0000-\u001f\u007f\s]+/g, ' ').trim();
}

function snippet(body: Buffer): string {
  return oneLine(body.toString('utf8')).slice(0, MAX_SNIPPET);
}

function networkMessage(err: NodeJS.ErrnoException & { address?: string; port?: number }): string {
  const code = err.code;
  if (code && err.address)
    return `${code} ${err.address.includes(':') ? `[${err.address}]` : err.address}${err.port ? `:${err.port}` : ''}`;
  const text = oneLine(err.message ?? '').slice(0, MAX_SNIPPET);
  if (code && text && !text.includes(code)) return `${code}: ${text}`;
  return text || code || 'network error';
}
