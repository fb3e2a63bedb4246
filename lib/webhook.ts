import { createHmac, timingSafeEqual } from 'node:crypto';
import dns, { type LookupAddress } from 'node:dns';
import http, { type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import https, { type RequestOptions } from 'node:https';
import net, { type LookupFunction } from 'node:net';
import { RetryLater } from './errors';
import type { ClaimedJob } from './queue';

/** Header carrying the signing time, unix seconds. */
export const TIMESTAMP_HEADER = 'x-dq-timestamp';
/** Header carrying one or more space-separated `v1=<hex HMAC-SHA256>` signatures. */
export const SIGNATURE_HEADER = 'x-dq-signature';
/** Header carrying the job's topic. */
export const TOPIC_HEADER = 'x-dq-topic';
/** Header carrying the job's id. */
export const JOB_ID_HEADER = 'x-dq-job-id';
/** Header carrying the attempt number, 1-based. */
export const ATTEMPT_HEADER = 'x-dq-attempt';
/** The `user-agent` every webhook delivery sends. */
export const WEBHOOK_USER_AGENT = 'delay-queue-webhook/1';

const DEFAULT_TOLERANCE_SECONDS = 300;
const MAX_BODY_READ = 1024;
const MAX_SNIPPET = 200;
const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/** Returns `v1=` + hex HMAC-SHA256 keyed by `secret` over `${timestamp}.${body}`. */
export function signWebhook(secret: string, timestamp: number, body: string): string {
  return `v1=${hmacHex(secret, `${timestamp}.${body}`)}`;
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
export type VerifyWebhookResult = { ok: true } | { ok: false; reason: 'missing_headers' | 'stale_timestamp' | 'bad_signature' };

/** Checks a received webhook's timestamp (a malformed one counts as stale) and, in constant time, its signature against every secret. */
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

/** Returns why `ip` must not be a webhook destination (loopback, private, link-local, …), or null for a public unicast address. */
export function isForbiddenAddress(ip: string): string | null {
  const address = ip.trim();
  if (net.isIPv4(address)) return forbiddenV4(parseV4(address));
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (!net.isIPv6(bare)) return 'not an IP address';
  const g = parseV6(bare);
  if (g.every((x) => x === 0)) return 'unspecified';
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return 'loopback';
  const embedded = embeddedV4(g);
  if (embedded) {
    const reason = forbiddenV4(embedded.v4);
    return reason && `${embedded.kind} ${reason}`;
  }
  const first = g[0]!;
  if ((first & 0xfe00) === 0xfc00) return 'private';
  if ((first & 0xffc0) === 0xfe80) return 'link-local';
  if ((first & 0xffc0) === 0xfec0) return 'private';
  if ((first & 0xff00) === 0xff00) return 'multicast';
  return null;
}

function parseV4(address: string): number[] {
  return address.split('.').map(Number);
}

function forbiddenV4([a = 0, b = 0]: number[]): string | null {
  if (a === 0) return 'unspecified';
  if (a === 127) return 'loopback';
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return 'private';
  if (a === 169 && b === 254) return 'link-local';
  if (a === 100 && b >= 64 && b <= 127) return 'CGNAT';
  if (a >= 224 && a <= 239) return 'multicast';
  if (a >= 240) return 'reserved';
  return null;
}

function parseV6(address: string): number[] {
  let text = address.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a = 0, b = 0, c = 0, d = 0] = parseV4(dotted[1]!);
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const parts = (s: string) => (s ? s.split(':').map((h) => parseInt(h, 16)) : []);
  const left = parts(head);
  const right = tail === undefined ? [] : parts(tail);
  return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
}

function embeddedV4(g: number[]): { v4: number[]; kind: string } | null {
  const v4 = [g[6]! >> 8, g[6]! & 0xff, g[7]! >> 8, g[7]! & 0xff];
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g[5] === 0xffff) return { v4, kind: 'IPv4-mapped' };
  if (zeros(0, 6)) return { v4, kind: 'IPv4-compatible' };
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return { v4, kind: 'NAT64' };
  return null;
}

/** The fields of a claimed job a webhook delivery uses. */
export type WebhookJob = Pick<ClaimedJob, 'topic' | 'id' | 'attempt' | 'url' | 'body'>;

/** Options of {@link deliverWebhook}. */
export interface DeliverWebhookOptions {
  /** Secret the request is signed with. */
  secret: string;
  /** Local development only: allows http: URLs and skips the address check. */
  allowPrivate: boolean;
  /** Hostnames (exact match) exempt from the address check. */
  allowHosts?: string[];
  /** Aborts the delivery, failing it as timed out. */
  signal?: AbortSignal;
  /** Whole-delivery time limit, ms. */
  timeoutMs: number;
  /** Clock, epoch ms; defaults to `Date.now`. */
  now?: () => number;
}

/** Outcome of a successful delivery. */
export interface DeliveryResult {
  status: number;
  durationMs: number;
}

/** POSTs the job's signed JSON body to its URL; resolves on 2xx, throws RetryLater on 429/503 with Retry-After and Error on anything else. */
export async function deliverWebhook(job: WebhookJob, options: DeliverWebhookOptions): Promise<DeliveryResult> {
  const now = options.now ?? Date.now;
  const started = now();
  if (!options.secret) throw new Error('webhook secret is not configured (WEBHOOK_SECRET): refusing to send unsigned');
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
    const exempt = options.allowPrivate || (options.allowHosts ?? []).some((h) => h.toLowerCase() === hostname.toLowerCase());
    const pinned = exempt ? undefined : await checkedAddresses(hostname, abort.signal);
    const status = await post(url, hostname, job, options.secret, now, pinned, abort.signal);
    return { status, durationMs: Math.max(0, now() - started) };
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onOuterAbort);
  }
}

async function checkedAddresses(hostname: string, signal: AbortSignal): Promise<LookupAddress[]> {
  let addresses: LookupAddress[];
  const family = net.isIP(hostname);
  if (family) {
    addresses = [{ address: hostname, family }];
  } else {
    const lookup = dns.promises.lookup(hostname, { all: true });
    lookup.catch(() => {});
    try {
      addresses = await abortable(lookup, signal);
    } catch (err) {
      if (signal.aborted) throw err;
      throw new Error(`DNS lookup of ${hostname} failed: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    if (addresses.length === 0) throw new Error(`DNS lookup of ${hostname} returned no address`);
  }
  for (const { address } of addresses) {
    const reason = isForbiddenAddress(address);
    if (reason) {
      throw new Error(family ? `refused: ${hostname} is a forbidden address (${reason})` : `refused: ${hostname} resolves to ${address} (${reason})`);
    }
  }
  return addresses;
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function pinnedLookup(addresses: LookupAddress[]): LookupFunction {
  return (_hostname, opts, callback) => {
    const fitting = addresses.filter((a) => !opts.family || a.family === opts.family);
    const usable = fitting.length ? fitting : addresses;
    if (opts.all) callback(null, usable);
    else callback(null, usable[0]!.address, usable[0]!.family);
  };
}

function post(
  url: URL,
  hostname: string,
  job: WebhookJob,
  secret: string,
  now: () => number,
  pinned: LookupAddress[] | undefined,
  signal: AbortSignal,
): Promise<number> {
  const payload = JSON.stringify(job.body) ?? 'null';
  const timestamp = Math.floor(now() / 1000);
  const headers: OutgoingHttpHeaders = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
    'user-agent': WEBHOOK_USER_AGENT,
    [TIMESTAMP_HEADER]: String(timestamp),
    [SIGNATURE_HEADER]: signWebhook(secret, timestamp, payload),
    [TOPIC_HEADER]: job.topic,
    [JOB_ID_HEADER]: job.id,
    [ATTEMPT_HEADER]: String(job.attempt),
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
    throw new Error(location ? `HTTP ${status}: redirect to ${describeLocation(location)} not followed` : `HTTP ${status}: redirect not followed`);
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
    const text = target.host === 'relative.invalid' ? target.pathname : `${target.protocol}//${target.host}${target.pathname}`;
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
  return text.replace(/[\u0000-\u001f\u007f\s]+/g, ' ').trim();
}

function snippet(body: Buffer): string {
  return oneLine(body.toString('utf8')).slice(0, MAX_SNIPPET);
}

function networkMessage(err: NodeJS.ErrnoException & { address?: string; port?: number }): string {
  const code = err.code;
  if (code && err.address) return `${code} ${err.address.includes(':') ? `[${err.address}]` : err.address}${err.port ? `:${err.port}` : ''}`;
  const text = oneLine(err.message ?? '').slice(0, MAX_SNIPPET);
  if (code && text && !text.includes(code)) return `${code}: ${text}`;
  return text || code || 'network error';
}
