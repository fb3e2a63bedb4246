/**
 * W3C trace context as a job keeps it: the trace and span ids of the request that added it, packed
 * into 32 characters (base64url of their 24 bytes) and stored in the job's record (H_TRACE in
 * lua/includes/job.lua). A schedule's occurrence keeps the put's context with an `L` first: its
 * attempts link to it rather than being its children. Used by the tracer (lib/platform/tracing.ts)
 * and the engine's job view.
 */

/** A span's identity, as W3C trace context carries it. */
export interface SpanContext {
  /** 32 lowercase hex digits. */
  traceId: string;
  /** 16 lowercase hex digits. */
  spanId: string;
}

/** `context` in 32 characters (base64url of its 24 bytes). */
export function packContext(context: SpanContext): string {
  return Buffer.from(context.traceId + context.spanId, 'hex').toString('base64url');
}

/** The context `packContext` packed (an `L` first, a link's, read as well), or undefined for anything else. */
export function unpackContext(packed: string | null | undefined): SpanContext | undefined {
  const body = packed?.startsWith('L') ? packed.slice(1) : packed;
  if (!body || body.length !== 32) return undefined;
  const hex = Buffer.from(body, 'base64url').toString('hex');
  return hex.length === 48 ? { traceId: hex.slice(0, 32), spanId: hex.slice(32) } : undefined;
}
