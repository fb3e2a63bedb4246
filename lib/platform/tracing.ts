/**
 * OpenTelemetry traces, off unless DQ_OTLP_ENDPOINT names an OTLP/HTTP receiver (an OpenTelemetry
 * Collector, the AWS Distro for OpenTelemetry Lambda layer's collector at http://localhost:4318,
 * or any backend that takes OTLP/HTTP JSON). A small tracer of our own, no SDK: spans with W3C
 * trace context (`traceparent`), links and attributes, batched and sent as OTLP/HTTP JSON to
 * `<endpoint>/v1/traces` when the invocation flushes them.
 *
 * Off, the tracer is NO_TRACER: `start` hands back one shared span that records nothing, so a
 * span costs a function call and no allocation.
 */
import { randomHex } from '../core/random';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

import { packContext, unpackContext, type SpanContext } from '../core/trace-context';

export { packContext, unpackContext, type SpanContext };

export type Attributes = Record<string, string | number | boolean>;

/** What a span is to its trace (OTLP's SpanKind). */
export type SpanKind = 'internal' | 'server' | 'client' | 'producer' | 'consumer';
const KIND: Record<SpanKind, number> = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 };

export interface Span {
  /** Its context: what a child names as parent, and what `traceparent` carries. */
  readonly context: SpanContext;
  setAttributes(attributes: Attributes): void;
  /** Ends it (once; later calls do nothing), as an error when `error` is given. */
  end(error?: string): void;
}

export interface SpanOptions {
  /** Its parent: a child span of the same trace; none, the root of a new trace. */
  parent?: SpanContext | undefined;
  /** Spans it is linked to (at most MAX_LINKS are kept). */
  links?: readonly SpanContext[];
  kind?: SpanKind;
  attributes?: Attributes;
  /** Its start, epoch ms (default: now). */
  startMs?: number;
}

export interface Tracer {
  /** False for NO_TRACER: a caller may skip work that only feeds spans. */
  readonly enabled: boolean;
  start(name: string, options?: SpanOptions): Span;
  /** Sends the ended spans not sent yet; never throws (a failed export is logged by `onError`). */
  flush(): Promise<void>;
}

/** Links kept on one span: a claim of many jobs links its first MAX_LINKS. */
export const MAX_LINKS = 32;

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;

/** The context a `traceparent` header names (version 00), or undefined when it is absent or malformed. */
export function parseTraceparent(value: string | undefined): SpanContext | undefined {
  const m = value === undefined ? null : TRACEPARENT.exec(value.trim().toLowerCase());
  if (!m || /^0+$/.test(m[1]!) || /^0+$/.test(m[2]!)) return undefined;
  return { traceId: m[1]!, spanId: m[2]! };
}

/** The `traceparent` header of `context` (sampled). */
export function formatTraceparent(context: SpanContext): string {
  return `00-${context.traceId}-${context.spanId}-01`;
}

const NO_CONTEXT: SpanContext = { traceId: '0'.repeat(32), spanId: '0'.repeat(16) };
const NO_SPAN: Span = { context: NO_CONTEXT, setAttributes() {}, end() {} };

/** The tracer when tracing is off: every span is NO_SPAN. */
export const NO_TRACER: Tracer = { enabled: false, start: () => NO_SPAN, flush: async () => {} };

/** A span as OTLP/HTTP JSON carries it. */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: { key: string; value: Record<string, unknown> }[];
  links?: { traceId: string; spanId: string }[];
  status?: { code: number; message?: string };
}

const nanos = (ms: number) => `${BigInt(Math.round(ms * 1000)) * 1000n}`;

function otlpValue(v: string | number | boolean): Record<string, unknown> {
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  return Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
}

const otlpAttributes = (a: Attributes) => Object.entries(a).map(([key, v]) => ({ key, value: otlpValue(v) }));

export interface TracerOptions {
  /** The OTLP/HTTP receiver: spans go to `<endpoint>/v1/traces`. */
  endpoint: string;
  /** The resource's service.name. */
  service: string;
  /** Extra headers of each export (OTEL_EXPORTER_OTLP_HEADERS' `k=v,k=v`). */
  headers?: Record<string, string>;
  /** Sends at once when this many spans wait (default 512). */
  maxBatch?: number;
  onError?: (error: unknown) => void;
  /** Now, epoch ms (tests). */
  now?: () => number;
}

/** Keep-alive connections to the receiver: an export a request costs no new connection (and far less than fetch). */
const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };

/** Sends `spans` as one OTLP/HTTP JSON export to `url`; a failure goes to `onError`. */
function exportSpans(url: URL, options: TracerOptions, spans: OtlpSpan[]): Promise<void> {
  const body = JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: otlpAttributes({ 'service.name': options.service }) },
        scopeSpans: [{ scope: { name: 'delay-queue' }, spans }],
      },
    ],
  });
  const https = url.protocol === 'https:';
  return new Promise<void>((settle) => {
    const fail = (error: unknown) => {
      options.onError?.(error);
      settle();
    };
    const req = (https ? httpsRequest : httpRequest)(
      url,
      {
        method: 'POST',
        agent: https ? agents.https : agents.http,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...options.headers },
        timeout: 5000,
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => {
          if (res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300) settle();
          else fail(new Error(`OTLP export to ${url.href}: HTTP ${res.statusCode} ${text.slice(0, 200)}`));
        });
        res.on('error', fail);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`OTLP export to ${url.href}: no answer in 5 s`)));
    req.on('error', fail);
    req.end(body);
  });
}

/** A span that, once ended, hands itself to `done` as OTLP JSON. */
function recordingSpan(name: string, o: SpanOptions, now: () => number, done: (span: OtlpSpan) => void): Span {
  const context = {
    traceId: o.parent?.traceId ?? randomHex(16),
    spanId: randomHex(8),
  };
  const startMs = o.startMs ?? now();
  const attributes: Attributes = { ...o.attributes };
  let ended = false;
  return {
    context,
    setAttributes: (a) => Object.assign(attributes, a),
    end(error) {
      if (ended) return;
      ended = true;
      done({
        traceId: context.traceId,
        spanId: context.spanId,
        ...(o.parent ? { parentSpanId: o.parent.spanId } : {}),
        name,
        kind: KIND[o.kind ?? 'internal'],
        startTimeUnixNano: nanos(startMs),
        endTimeUnixNano: nanos(Math.max(now(), startMs)),
        attributes: otlpAttributes(attributes),
        ...(o.links?.length ? { links: o.links.slice(0, MAX_LINKS).map((l) => ({ ...l })) } : {}),
        ...(error !== undefined ? { status: { code: 2, message: error } } : {}),
      });
    },
  };
}

/** A tracer that exports to `options.endpoint`: ended spans wait for a flush, or go once maxBatch of them wait. */
export function createTracer(options: TracerOptions): Tracer {
  const url = new URL(`${options.endpoint.replace(/\/+$/, '')}/v1/traces`);
  const now = options.now ?? Date.now;
  const maxBatch = options.maxBatch ?? 512;
  let ended: OtlpSpan[] = [];
  const sending = new Set<Promise<void>>();
  const send = () => {
    const p = exportSpans(url, options, ended).finally(() => sending.delete(p));
    sending.add(p);
    ended = [];
  };
  const done = (span: OtlpSpan) => {
    ended.push(span);
    if (ended.length >= maxBatch) send();
  };
  return {
    enabled: true,
    start: (name, o = {}) => recordingSpan(name, o, now, done),
    async flush() {
      if (ended.length > 0) send();
      await Promise.all([...sending]);
    },
  };
}

/** OTEL_EXPORTER_OTLP_HEADERS (`k=v,k2=v2`, values URL-encoded) as headers. */
export function parseOtlpHeaders(value: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (value ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at > 0) headers[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
  }
  return headers;
}

/**
 * The tracer of environment `env`: NO_TRACER unless DQ_OTLP_ENDPOINT is set; its spans name service `service`.
 */
export function tracerFromEnv(env: NodeJS.ProcessEnv, service: string, onError?: (error: unknown) => void): Tracer {
  const endpoint = env.DQ_OTLP_ENDPOINT ?? '';
  if (endpoint === '') return NO_TRACER;
  if (!/^https?:\/\//.test(endpoint))
    throw new Error('environment variable DQ_OTLP_ENDPOINT must start with http:// or https://');
  return createTracer({
    endpoint,
    service,
    headers: parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_HEADERS),
    ...(onError ? { onError } : {}),
  });
}
