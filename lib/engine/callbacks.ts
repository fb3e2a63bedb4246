/**
 * Callbacks: what a job notifies when it ends. A job (or its topic) names a topic, and for a webhook topic a URL, and
 * which ends notify (done, dead, cancelled, expired). The script that ends the job writes an entry in its partition's
 * outbox in the same atomic step (lua/includes/callbacks.lua); the engine hands entries out (lua/takeCallbacks-1.lua),
 * adds the job each names to its topic, with an id made of the entry (a second add of it is refused as existing), and
 * removes them (lua/endCallbacks-1.lua). An entry whose taker died is handed out again once its lease ends: each end
 * notifies at least once, with an id a receiver can deduplicate on. This file: the callback and entry formats;
 * ./outbox.ts drains.
 */
import { createHash } from 'node:crypto';
import { ID_PATTERN } from '../core/queue-config';
import { CALLBACK_ENDS, type Callback, type CallbackEnd } from '../core/callback';

export type { Callback, CallbackEnd } from '../core/callback';

/** Each end's letter in a stored callback (H_CALLBACK in lua/includes/job.lua), in CALLBACK_ENDS's order. */
const LETTERS = 'dxce';

/** A callback as the add script stores it: '<on> <topic>[ <url>]' (the URL holds no space, tab or '|'). */
export function callbackArg(c: Callback): string {
  const on = CALLBACK_ENDS.map((end, i) => (c.on.includes(end) ? LETTERS[i] : '-')).join('');
  return c.url ? `${on} ${c.topic} ${c.url}` : `${on} ${c.topic}`;
}

/** A stored callback (callbackArg's text) as the engine shows it. */
export function parseCallback(text: string): Callback {
  const [on = '', topic = '', url] = text.split(' ');
  return { topic, ...(url ? { url } : {}), on: CALLBACK_ENDS.filter((_, i) => on[i] === LETTERS[i]) };
}

/** One outbox entry, as lua/includes/callbacks.lua writes it. */
export interface OutboxEntry {
  end: CallbackEnd;
  /** Tells this end from the id's other ends (lua/includes/callbacks.lua): its creation, or for dead its version. */
  mark: string;
  attempts: number;
  endedAt: number;
  id: string;
  callback: Callback;
  lastError: string | null;
}

/** An outbox entry's fields; null for text that is not one. */
export function parseEntry(text: string): OutboxEntry | null {
  const parts = text.split('\t');
  if (parts.length < 7) return null;
  const end = CALLBACK_ENDS[Number(parts[0]) - 1];
  if (!end) return null;
  const error = parts.slice(6).join('\t');
  return {
    end,
    mark: parts[1]!,
    attempts: Number(parts[2]),
    endedAt: Number(parts[3]),
    id: parts[4]!,
    callback: parseCallback(parts[5]!),
    lastError: error === '' ? null : error,
  };
}

/**
 * The id of the job an end of job `topic`/`entry.id` notifies with: `<topic>.<id>.<end>.<mark>`, the same each time
 * the entry is handed out and when a failover lost the end and the job came to it again, another for each end.
 * Longer than an id may be: `cb.<sha-256 of it, 40 hex>.<end>`.
 */
export function callbackId(topic: string, entry: Pick<OutboxEntry, 'id' | 'end' | 'mark'>): string {
  const full = `${topic}.${entry.id}.${entry.end}.${entry.mark}`;
  if (ID_PATTERN.test(full)) return full;
  return `cb.${createHash('sha256').update(full).digest('hex').slice(0, 40)}.${entry.end}`;
}

/** The body of the job an end notifies with. */
export function callbackBody(topic: string, entry: OutboxEntry): Record<string, unknown> {
  return {
    callbackId: callbackId(topic, entry),
    topic,
    id: entry.id,
    outcome: entry.end,
    attempts: entry.attempts,
    endedAt: new Date(entry.endedAt).toISOString(),
    lastError: entry.lastError,
  };
}
