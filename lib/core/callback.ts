/**
 * A job's callback: what it notifies when it ends. A job added to `topic` for each end in `on`; on a webhook topic that
 * job carries `url`, so the webhook handler POSTs it there, signed, with that topic's retries and address checks. The
 * checks here serve a job's `callback` (lib/api/validation.ts) and a topic's default (lib/core/queue-config.ts) alike.
 */
import { checkHttpUrl } from './http-url';
import { URL_MAX_LENGTH } from './limits';

/** The ends a callback may name. */
export const CALLBACK_ENDS = ['done', 'dead', 'cancelled', 'expired'] as const;
export type CallbackEnd = (typeof CALLBACK_ENDS)[number];
/** The ends a callback notifies when it names none: done and dead. */
export const DEFAULT_CALLBACK_ENDS: readonly CallbackEnd[] = ['done', 'dead'];

/** What a job notifies when it ends: a job added to `topic` (carrying `url`, on a webhook topic) per end in `on`. */
export interface Callback {
  topic: string;
  url?: string;
  on: readonly CallbackEnd[];
}

/** The topics a callback may name, by name: whether each is a webhook topic. */
export type CallbackTopics = ReadonlyMap<string, { kind: 'function' | 'webhook' }>;

const FIELDS = ['topic', 'url', 'on'];

/**
 * `value` as a callback, or the problems with it (each a path under `where` and a message). A URL alone goes to the
 * only webhook topic; a webhook topic needs a URL, and only a webhook topic takes one.
 */
export function checkCallback(
  value: unknown,
  topics: CallbackTopics,
  where = 'callback',
): Callback | { path: string; message: string }[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return [{ path: where, message: 'must be an object { topic, url, on }' }];
  const v = value as Record<string, unknown>;
  const problems = Object.keys(v)
    .filter((k) => !FIELDS.includes(k))
    .map((k) => ({ path: `${where}.${k}`, message: `is not a callback field (fields: ${FIELDS.join(', ')})` }));
  const url = v.url === undefined ? undefined : checkUrl(v.url);
  if (typeof url === 'object') problems.push({ path: `${where}.url`, message: url.message });
  const topic = callbackTopic(v.topic, url !== undefined, topics);
  if (typeof topic === 'object') problems.push({ path: `${where}.topic`, message: topic.message });
  else if (topics.get(topic)?.kind === 'webhook' && url === undefined)
    problems.push({ path: `${where}.url`, message: `is required: ${topic} is a webhook topic` });
  else if (topics.get(topic)?.kind !== 'webhook' && url !== undefined)
    problems.push({ path: `${where}.url`, message: `is only for a webhook topic, and ${topic} is not one` });
  const on = checkEnds(v.on);
  if (!Array.isArray(on)) problems.push({ path: `${where}.on`, message: on.message });
  if (problems.length > 0) return problems;
  return { topic: topic as string, ...(typeof url === 'string' ? { url } : {}), on: on as CallbackEnd[] };
}

/** A callback's URL (checkHttpUrl), with '|' escaped: the add script's argument separates with it. */
function checkUrl(value: unknown): string | { message: string } {
  const url = checkHttpUrl(value);
  if (typeof url !== 'string') return url;
  const href = url.replace(/\|/g, '%7C');
  if (href.length > URL_MAX_LENGTH) return { message: `must be at most ${URL_MAX_LENGTH} characters with '|' escaped` };
  return href;
}

/** The callback's topic: the one named, else (a URL given) the only webhook topic. */
function callbackTopic(value: unknown, hasUrl: boolean, topics: CallbackTopics): string | { message: string } {
  if (value === undefined) {
    const webhooks = [...topics].filter(([, t]) => t.kind === 'webhook').map(([name]) => name);
    if (!hasUrl) return { message: 'is required (or a url, for the webhook topic)' };
    if (webhooks.length === 1) return webhooks[0]!;
    return { message: `is required: name the webhook topic that delivers the url (${webhooks.join(', ') || 'none'})` };
  }
  if (typeof value !== 'string' || !topics.has(value))
    return { message: `must name a configured topic (${[...topics.keys()].join(', ')})` };
  return value;
}

/** The ends `value` names: a list of CALLBACK_ENDS without repeats; DEFAULT_CALLBACK_ENDS when undefined. */
function checkEnds(value: unknown): CallbackEnd[] | { message: string } {
  if (value === undefined) return [...DEFAULT_CALLBACK_ENDS];
  const rule = { message: `must be a list of one or more of ${CALLBACK_ENDS.join(', ')}, each once` };
  if (!Array.isArray(value) || value.length === 0 || new Set(value).size !== value.length) return rule;
  if (!value.every((e) => (CALLBACK_ENDS as readonly unknown[]).includes(e))) return rule;
  return CALLBACK_ENDS.filter((e) => value.includes(e));
}
