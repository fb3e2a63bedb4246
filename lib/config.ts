import { parseBackoff } from './backoff';

/** A topic as the engine uses it: every default resolved. */
export interface TopicConfig {
  name: string;
  /** Attempts before a job goes dead, for jobs that set none. */
  maxAttempts: number;
  /** Compact backoff spec (lib/backoff.ts), for jobs that set none. */
  backoff: string;
  /** Time-to-run of one attempt (ms), for jobs that set none. */
  ttrMs: number;
  /** Jobs per handler invocation. */
  batchSize: number;
  /** Attempts of this topic running at once, at most. */
  concurrency: number;
  /** `webhook` jobs carry a url that the built-in webhook handler POSTs the body to. */
  kind: 'function' | 'webhook';
  /** Name of the handler function (serverless.yml key), if any. */
  handler?: string;
}

/** The engine's configuration. */
export interface QueueConfig {
  /** Partitions (cluster hash tags) jobs are spread over; 1 on a single node. */
  partitions: number;
  topics: ReadonlyMap<string, TopicConfig>;
  /** Largest body, in bytes of its JSON text. */
  maxBodyBytes: number;
  /** Furthest a job may be scheduled ahead, and the longest single retry delay (ms). */
  maxDelayMs: number;
  /** How long done and cancelled jobs stay readable (ms); 0 deletes them when they finish. */
  retentionMs: number;
  /** How long dead jobs are kept for inspection and redrive (ms). */
  deadRetentionMs: number;
  /** Most jobs one moveDue call moves (and, separately, times out and purges). */
  moveLimit: number;
}

/** What a caller may write for a topic; every field but the name has a default. */
export interface TopicInput {
  maxAttempts?: number;
  backoff?: unknown;
  /** seconds */
  ttr?: number;
  batchSize?: number;
  concurrency?: number;
  kind?: 'function' | 'webhook';
  handler?: string;
}

/** What a caller may write for the engine; see QueueConfig for the meaning of each field. */
export interface QueueConfigInput {
  partitions?: number;
  topics: Record<string, TopicInput>;
  maxBodyBytes?: number;
  /** seconds */
  maxDelay?: number;
  /** seconds */
  retention?: number;
  /** seconds */
  deadRetention?: number;
  moveLimit?: number;
}

export const DEFAULTS = {
  partitions: 1,
  maxBodyBytes: 64 * 1024,
  maxDelay: 365 * 86_400,
  retention: 86_400,
  deadRetention: 7 * 86_400,
  moveLimit: 1000, // one moveDue call then stays around a millisecond of Redis time (BENCHMARKS.md)
  topic: {
    maxAttempts: 5,
    backoff: { type: 'exponential', delay: 5, max: 3600, jitter: 0.2 },
    ttr: 30,
    batchSize: 1,
    concurrency: 10,
  },
} as const;

export const TOPIC_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;
const MAX_MOVE_LIMIT = 5000; // moveDue passes this many ids to one RPUSH (Lua's stack allows ~8000)

function integer(value: unknown, name: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
  }
  return value;
}

function seconds(value: unknown, name: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw new Error(`${name} must be a number of seconds from ${min} to ${max}, got ${JSON.stringify(value)}`);
  }
  return Math.round(value * 1000);
}

/** Validates and completes a configuration; throws an Error naming the first bad field. */
export function resolveQueueConfig(input: QueueConfigInput): QueueConfig {
  const maxDelayMs = seconds(input.maxDelay ?? DEFAULTS.maxDelay, 'maxDelay', 1, 10 * 365 * 86_400);
  const topics = new Map<string, TopicConfig>();
  if (typeof input.topics !== 'object' || input.topics === null || Object.keys(input.topics).length === 0) {
    throw new Error('topics must name at least one topic');
  }
  for (const [name, t] of Object.entries(input.topics)) {
    if (!TOPIC_PATTERN.test(name)) throw new Error(`topic name ${JSON.stringify(name)} must match ${TOPIC_PATTERN}`);
    const where = `topics.${name}`;
    const backoff = parseBackoff(t.backoff ?? DEFAULTS.topic.backoff, `${where}.backoff`, maxDelayMs);
    if (!backoff.spec) throw new Error(backoff.problems.map((p) => `${p.path} ${p.message}`).join('; '));
    const kind = t.kind ?? 'function';
    if (kind !== 'function' && kind !== 'webhook') throw new Error(`${where}.kind must be "function" or "webhook"`);
    topics.set(name, {
      name,
      maxAttempts: integer(t.maxAttempts ?? DEFAULTS.topic.maxAttempts, `${where}.maxAttempts`, 1, 1000),
      backoff: backoff.spec,
      ttrMs: seconds(t.ttr ?? DEFAULTS.topic.ttr, `${where}.ttr`, 0.1, 86_400),
      batchSize: integer(t.batchSize ?? DEFAULTS.topic.batchSize, `${where}.batchSize`, 1, 100),
      concurrency: integer(t.concurrency ?? DEFAULTS.topic.concurrency, `${where}.concurrency`, 1, 10_000),
      kind,
      ...(t.handler ? { handler: t.handler } : {}),
    });
  }
  return {
    partitions: integer(input.partitions ?? DEFAULTS.partitions, 'partitions', 1, 1024),
    topics,
    maxBodyBytes: integer(input.maxBodyBytes ?? DEFAULTS.maxBodyBytes, 'maxBodyBytes', 1, 4 * 1024 * 1024),
    maxDelayMs,
    retentionMs: seconds(input.retention ?? DEFAULTS.retention, 'retention', 0, 365 * 86_400),
    deadRetentionMs: seconds(input.deadRetention ?? DEFAULTS.deadRetention, 'deadRetention', 1, 10 * 365 * 86_400),
    moveLimit: integer(input.moveLimit ?? DEFAULTS.moveLimit, 'moveLimit', 1, MAX_MOVE_LIMIT),
  };
}
