import net from 'node:net';
import { parseBackoff } from './backoff';
import { checkCallback, type Callback } from './callback';
import {
  DEDUPE_WINDOW_SECONDS,
  EXPIRE_AFTER_SECONDS,
  JITTER_SECONDS,
  MAX_ATTEMPTS,
  MAX_BODY_BYTES,
  PRIORITY,
  TTR_SECONDS,
} from './limits';

/** A topic as the engine uses it: every default resolved. */
export interface TopicConfig {
  name: string;
  /** Attempts before a job goes dead, for jobs that set none. */
  maxAttempts: number;
  /** Compact backoff spec (lib/core/backoff.ts), for jobs that set none. */
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
  /** Longest ttr a job of this topic may set (ms): its handler function's timeout, when known. */
  maxTtrMs: number;
  /** At most `count` attempts of this topic start per `perMs`, across every fan-out; none when unset. */
  rateLimit?: RateLimit;
  /** Spread of a job's first run time (ms) for jobs that set no jitter: see lib/core/pacing.ts. 0: none. */
  jitterMs: number;
  /**
   * The expiry of a job that sets none (ms after its first runAt): no attempt starts at or after it, one due then ends
   * the job as `expired`. None when unset: such jobs never expire.
   */
  expireAfterMs?: number;
  /** The priority of a job that sets none: 0 unless configured. */
  priority: number;
  /** The dedupe window (ms) of an add that names a dedupe key and no window. */
  dedupeWindowMs: number;
  /** What a job that names no callback notifies when it ends (lib/core/callback.ts); none when unset. */
  callback?: Callback;
  /**
   * Flow control per key (lib/engine/flow.ts): present on a flow topic, whose jobs may carry a
   * `key` and are claimed round the keys, each within these limits (the key's pinned ones aside).
   */
  flow?: FlowDefaults;
}

/**
 * A flow topic's per-key defaults: attempts running at once per key (null: only the topic's `concurrency` caps) and
 * each key's pace (null: none).
 */
export interface FlowDefaults {
  concurrency: number | null;
  rate: { count: number; perMs: number; burst: number } | null;
}

/** A topic's pacing: at most `count` attempts start in any span of `perMs` (lua/takeTokens-1.lua). */
export interface RateLimit {
  count: number;
  perMs: number;
}

/** The engine's configuration. */
export interface QueueConfig {
  /** Partitions (cluster hash tags) jobs are spread over; 1 on a single node. */
  partitions: number;
  /**
   * While the partition count changes: the count before (lib/engine/keys.ts Layout). The former
   * partitions are served beside the current ones until no job or schedule is left in them.
   */
  formerPartitions?: number;
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
  /** When the API may acknowledge a change: see Durability. */
  durability: Durability;
}

/**
 * When an acknowledged change is safe. `replica`: the API answers success only after a replica
 * confirmed the change (WAIT 1 on the partition's primary), else 503 NOT_REPLICATED; a failover
 * then loses no acknowledged add or delete. `none`: success as soon as the primary has it (a
 * failover can lose the last changes; fine on a single Redis, or on an engine whose own log makes
 * writes durable).
 */
export interface Durability {
  mode: 'replica' | 'none';
  /** Longest wait for a replica's confirmation (ms) before answering 503. */
  timeoutMs: number;
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
  /** seconds: the handler function's timeout, added by scripts/serverless-vars.cjs from serverless.yml */
  handlerTimeout?: number;
  /** `count` attempts started per `per` seconds (default 1), across every fan-out. */
  rateLimit?: { count?: number; per?: number };
  /** seconds: each job's first run time is spread over [runAt, runAt + jitter), for jobs that set none. */
  jitter?: number;
  /** seconds after each job's first runAt after which no attempt of it starts (it expires), for jobs that set none. */
  expireAfter?: number;
  /** The priority of jobs that set none (an integer, -1000 to 1000; default 0): a higher one is claimed first. */
  priority?: number;
  /** seconds: the dedupe window of an add that names a dedupe key and no window (default 3600). */
  dedupeWindow?: number;
  /** What its jobs that name no callback notify when they end: { topic, url, on } (lib/core/callback.ts). */
  callback?: unknown;
  /** Flow control per key: `concurrency` per key, `rate` per key ({ count, per seconds, burst }). */
  flow?: { concurrency?: number; rate?: { count?: number; per?: number; burst?: number } };
}

/** What a caller may write for the engine; see QueueConfig for the meaning of each field. */
export interface QueueConfigInput {
  partitions?: number;
  /** While the partition count changes: the count before (null or absent: no change). */
  formerPartitions?: number | null;
  topics: Record<string, TopicInput>;
  maxBodyBytes?: number;
  /** seconds */
  maxDelay?: number;
  /** seconds */
  retention?: number;
  /** seconds */
  deadRetention?: number;
  moveLimit?: number;
  /** `replica` or `none` (Durability); DQ_DURABILITY overrides it. */
  durability?: string;
  /** seconds: longest wait for a replica's confirmation; DQ_DURABILITY_TIMEOUT_MS overrides it. */
  durabilityTimeout?: number;
}

export const DEFAULTS = {
  partitions: 1,
  maxBodyBytes: 64 * 1024,
  maxDelay: 365 * 86_400,
  retention: 86_400,
  deadRetention: 7 * 86_400,
  moveLimit: 1000, // one moveDue call then stays around a millisecond of Redis time (BENCHMARKS.md)
  durability: 'none',
  // A replica in the same region confirms within a millisecond or two; a second means it is cut
  // off or far behind. Below the client's 2 s command timeout (lib/platform/redis.ts), so the WAIT itself
  // never times out as a command.
  durabilityTimeout: 1,
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
const MAX_MOVE_LIMIT = 5000;
/** Range of the replica wait (ms): long enough for a cross-AZ round trip, shorter than the client's command timeout. */
export const DURABILITY_TIMEOUT_MS = { min: 10, max: 1500 } as const;
/**
 * A rate limit's range: `count` starts per `per` seconds (per at least 0.1 s: a window of 100 slots of 1 ms or more).
 */
export const RATE_LIMIT = {
  count: { min: 1, max: 1_000_000 },
  perSeconds: { min: 0.1, max: 86_400, default: 1 },
} as const;
// moveDue passes this many ids to one RPUSH (Lua's stack allows ~8000)
const DURABILITY_MODES = ['replica', 'none'] as const;

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

/** `formerPartitions`, when the partition count changes: a count other than `partitions`. */
function formerPartitions(input: QueueConfigInput): { formerPartitions?: number } {
  if (input.formerPartitions === undefined || input.formerPartitions === null) return {};
  const former = integer(input.formerPartitions, 'formerPartitions', 1, 1024);
  if (former === (input.partitions ?? DEFAULTS.partitions))
    throw new Error(
      `formerPartitions: ${former} is the partition count itself; set it only while the count changes (to the count before)`,
    );
  return { formerPartitions: former };
}

/** Validates and completes a configuration; throws an Error naming the first bad field. */
export function resolveQueueConfig(input: QueueConfigInput): QueueConfig {
  const maxDelayMs = seconds(input.maxDelay ?? DEFAULTS.maxDelay, 'maxDelay', 1, 10 * 365 * 86_400);
  const topics = new Map<string, TopicConfig>();
  if (typeof input.topics !== 'object' || input.topics === null || Object.keys(input.topics).length === 0) {
    throw new Error('topics must name at least one topic');
  }
  for (const [name, t] of Object.entries(input.topics)) topics.set(name, resolveTopic(name, t, maxDelayMs));
  // callbacks name topics: checked once every topic is known
  for (const [name, t] of Object.entries(input.topics)) topicCallback(topics, name, t.callback);
  return {
    partitions: integer(input.partitions ?? DEFAULTS.partitions, 'partitions', 1, 1024),
    ...formerPartitions(input),
    topics,
    // one job must fit a Lambda event
    maxBodyBytes: integer(input.maxBodyBytes ?? DEFAULTS.maxBodyBytes, 'maxBodyBytes', 1, MAX_BODY_BYTES),
    maxDelayMs,
    retentionMs: seconds(input.retention ?? DEFAULTS.retention, 'retention', 0, 365 * 86_400),
    deadRetentionMs: seconds(input.deadRetention ?? DEFAULTS.deadRetention, 'deadRetention', 1, 10 * 365 * 86_400),
    moveLimit: integer(input.moveLimit ?? DEFAULTS.moveLimit, 'moveLimit', 1, MAX_MOVE_LIMIT),
    durability: {
      mode: durabilityMode(input.durability ?? DEFAULTS.durability, 'durability'),
      timeoutMs: seconds(
        input.durabilityTimeout ?? DEFAULTS.durabilityTimeout,
        'durabilityTimeout',
        DURABILITY_TIMEOUT_MS.min / 1000,
        DURABILITY_TIMEOUT_MS.max / 1000,
      ),
    },
  };
}

/** Topic `name`'s configuration from its input `t`; throws on the first problem. `maxDelayMs` bounds its backoff. */
function resolveTopic(name: string, t: TopicInput, maxDelayMs: number): TopicConfig {
  if (!TOPIC_PATTERN.test(name)) throw new Error(`topic name ${JSON.stringify(name)} must match ${TOPIC_PATTERN}`);
  const where = `topics.${name}`;
  const backoff = parseBackoff(t.backoff ?? DEFAULTS.topic.backoff, `${where}.backoff`, maxDelayMs);
  if (!backoff.spec) throw new Error(backoff.problems.map((p) => `${p.path} ${p.message}`).join('; '));
  const kind = t.kind ?? 'function';
  if (kind !== 'function' && kind !== 'webhook') throw new Error(`${where}.kind must be "function" or "webhook"`);
  const maxTtrMs =
    t.handlerTimeout === undefined
      ? TTR_SECONDS.max * 1000
      : seconds(t.handlerTimeout, `${where}.handlerTimeout`, 1, 900); // Lambda's longest timeout
  const ttrMs = seconds(t.ttr ?? DEFAULTS.topic.ttr, `${where}.ttr`, TTR_SECONDS.min, TTR_SECONDS.max);
  if (ttrMs > maxTtrMs) {
    throw new Error(
      `${where}.ttr (${ttrMs / 1000} s) is longer than its handler ${t.handler} can run (timeout ${maxTtrMs / 1000} s): lower the ttr or raise the function's timeout`,
    );
  }
  return {
    name,
    maxAttempts: integer(
      t.maxAttempts ?? DEFAULTS.topic.maxAttempts,
      `${where}.maxAttempts`,
      MAX_ATTEMPTS.min,
      MAX_ATTEMPTS.max,
    ),
    backoff: backoff.spec,
    ttrMs,
    maxTtrMs,
    batchSize: integer(t.batchSize ?? DEFAULTS.topic.batchSize, `${where}.batchSize`, 1, 100),
    concurrency: integer(t.concurrency ?? DEFAULTS.topic.concurrency, `${where}.concurrency`, 1, 10_000),
    kind,
    ...(t.handler ? { handler: t.handler } : {}),
    ...(t.rateLimit !== undefined ? { rateLimit: rateLimit(t.rateLimit, `${where}.rateLimit`) } : {}),
    jitterMs: seconds(t.jitter ?? 0, `${where}.jitter`, JITTER_SECONDS.min, JITTER_SECONDS.max),
    ...expireAfter(t.expireAfter, `${where}.expireAfter`),
    priority: integer(t.priority ?? 0, `${where}.priority`, PRIORITY.min, PRIORITY.max),
    dedupeWindowMs: seconds(
      t.dedupeWindow ?? DEDUPE_WINDOW_SECONDS.default,
      `${where}.dedupeWindow`,
      DEDUPE_WINDOW_SECONDS.min,
      DEDUPE_WINDOW_SECONDS.max,
    ),
    ...(t.flow !== undefined ? { flow: flowDefaults(t.flow, `${where}.flow`) } : {}),
  };
}

/** Sets topic `name`'s default callback (its input `value`) in `topics`; throws on the first problem. */
function topicCallback(topics: Map<string, TopicConfig>, name: string, value: unknown): void {
  if (value === undefined || value === null) return;
  const callback = checkCallback(value, topics, `topics.${name}.callback`);
  if (Array.isArray(callback)) throw new Error(`${callback[0]!.path} ${callback[0]!.message}`);
  topics.set(name, { ...topics.get(name)!, callback });
}

/** A topic's default expiry (its `expireAfter`, seconds) as TopicConfig holds it: none when unset. */
function expireAfter(value: number | undefined, name: string): { expireAfterMs?: number } {
  if (value === undefined) return {};
  return { expireAfterMs: seconds(value, name, EXPIRE_AFTER_SECONDS.min, EXPIRE_AFTER_SECONDS.max) };
}

function rateLimit(value: unknown, name: string): RateLimit {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(
      `${name} must be an object { count, per }: count jobs started per per seconds, got ${JSON.stringify(value)}`,
    );
  }
  const { count, per, ...rest } = value as Record<string, unknown>;
  const extra = Object.keys(rest);
  if (extra.length > 0) throw new Error(`${name}.${extra[0]} is not a rateLimit field (fields: count, per)`);
  if (count === undefined) throw new Error(`${name}.count is required: the jobs started per per seconds`);
  const { count: c, perSeconds: p } = RATE_LIMIT;
  return {
    count: integer(count, `${name}.count`, c.min, c.max),
    perMs: seconds(per ?? p.default, `${name}.per`, p.min, p.max),
  };
}

/**
 * A key's limits' ranges (flow control): concurrency per key, and a pace of `count` per `per` seconds with `burst` at
 * once.
 */
export const FLOW_LIMITS = {
  concurrency: { min: 1, max: 10_000 },
  count: { min: 1, max: 1_000_000 },
  perSeconds: { min: 0.001, max: 86_400, default: 1 },
} as const;

function flowDefaults(value: unknown, name: string): FlowDefaults {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(`${name} must be an object { concurrency, rate }: per-key limits, got ${JSON.stringify(value)}`);
  }
  const { concurrency, rate, ...rest } = value as Record<string, unknown>;
  const extra = Object.keys(rest);
  if (extra.length > 0) throw new Error(`${name}.${extra[0]} is not a flow field (fields: concurrency, rate)`);
  const { concurrency: c } = FLOW_LIMITS;
  return {
    concurrency:
      concurrency === undefined || concurrency === null
        ? null
        : integer(concurrency, `${name}.concurrency`, c.min, c.max),
    rate: rate === undefined || rate === null ? null : flowRate(rate, `${name}.rate`),
  };
}

/** A key's pace from `{ count, per, burst }` (per in seconds, default 1; burst default 1, at most count). */
export function flowRate(value: unknown, name: string): { count: number; perMs: number; burst: number } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(
      `${name} must be an object { count, per, burst }: count starts per per seconds, got ${JSON.stringify(value)}`,
    );
  }
  const { count, per, burst, ...rest } = value as Record<string, unknown>;
  const extra = Object.keys(rest);
  if (extra.length > 0) throw new Error(`${name}.${extra[0]} is not a rate field (fields: count, per, burst)`);
  if (count === undefined) throw new Error(`${name}.count is required: the starts per per seconds`);
  const { count: c, perSeconds: p } = FLOW_LIMITS;
  const n = integer(count, `${name}.count`, c.min, c.max);
  return {
    count: n,
    perMs: seconds(per ?? p.default, `${name}.per`, p.min, p.max),
    burst: integer(burst ?? 1, `${name}.burst`, 1, n),
  };
}

function durabilityMode(value: unknown, name: string): Durability['mode'] {
  if (!DURABILITY_MODES.includes(value as Durability['mode']))
    throw new Error(`${name} must be "replica" or "none", got ${JSON.stringify(value)}`);
  return value as Durability['mode'];
}

/**
 * The durability of `queue` with DQ_DURABILITY (`replica` | `none`) and DQ_DURABILITY_TIMEOUT_MS
 * (whole ms) applied over it when set; throws naming the variable.
 */
export function loadDurability(env: Env, configured: Durability): Durability {
  const mode = env.DQ_DURABILITY
    ? durabilityMode(env.DQ_DURABILITY, 'environment variable DQ_DURABILITY')
    : configured.mode;
  const raw = env.DQ_DURABILITY_TIMEOUT_MS;
  if (raw === undefined || raw === '') return { mode, timeoutMs: configured.timeoutMs };
  const n = Number(raw);
  if (!Number.isInteger(n) || n < DURABILITY_TIMEOUT_MS.min || n > DURABILITY_TIMEOUT_MS.max) {
    throw new Error(
      `environment variable DQ_DURABILITY_TIMEOUT_MS must be a whole number of milliseconds from ${DURABILITY_TIMEOUT_MS.min} to ${DURABILITY_TIMEOUT_MS.max}, got ${JSON.stringify(raw)}`,
    );
  }
  return { mode, timeoutMs: n };
}

/** Timings of the sweeper and the fan-out (ms). Defaults suit AWS; fault tests shorten them through the environment. */
export interface Timings {
  /**
   * A job due further ahead than this is left to the per-minute tick: the sweeper exits.
   * DQ_SWEEPER_HORIZON_MS. Two tick periods: the tick that must start a sweeper for a job then
   * comes at least a minute before the job is due, so a tick up to a minute late still makes no
   * job late (with one period, a job due just after the next tick waited for that tick's delivery).
   */
  sweeperHorizonMs: number;
  /** The sweeper's lease outlives a crashed sweeper by at most this. DQ_SWEEPER_LEASE_MS */
  sweeperLeaseMs: number;
  /** Longest single wait of the sweeper, so its lease is renewed well before it expires. DQ_SWEEPER_MAX_WAIT_MS */
  sweeperMaxWaitMs: number;
  /** Time kept in hand at the end of a sweeper invocation to hand over to the next one. DQ_SWEEPER_RESERVE_MS */
  sweeperReserveMs: number;
  /** Pause after a Redis error before the sweeper tries again. DQ_SWEEPER_ERROR_PAUSE_MS */
  sweeperErrorPauseMs: number;
  /** How long a fan-out's mark outlives it if it dies (its function timeout). DQ_FANOUT_MARK_MS */
  fanoutMarkMs: number;
}

export const DEFAULT_TIMINGS: Readonly<Timings> = Object.freeze({
  sweeperHorizonMs: 120_000,
  sweeperLeaseMs: 30_000,
  sweeperMaxWaitMs: 10_000,
  sweeperReserveMs: 5_000,
  sweeperErrorPauseMs: 500,
  fanoutMarkMs: 30_000,
});

const TIMING_ENV: Record<keyof Timings, string> = {
  sweeperHorizonMs: 'DQ_SWEEPER_HORIZON_MS',
  sweeperLeaseMs: 'DQ_SWEEPER_LEASE_MS',
  sweeperMaxWaitMs: 'DQ_SWEEPER_MAX_WAIT_MS',
  sweeperReserveMs: 'DQ_SWEEPER_RESERVE_MS',
  sweeperErrorPauseMs: 'DQ_SWEEPER_ERROR_PAUSE_MS',
  fanoutMarkMs: 'DQ_FANOUT_MARK_MS',
};

/**
 * The timings from DQ_SWEEPER_* and DQ_FANOUT_MARK_MS, each a whole number of ms from 1 to 900,000, else its default.
 */
export function loadTimings(env: Env): Timings {
  const timings = { ...DEFAULT_TIMINGS };
  for (const [key, name] of Object.entries(TIMING_ENV) as [keyof Timings, string][]) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > 900_000)
      throw new Error(
        `environment variable ${name} must be a whole number of milliseconds from 1 to 900000, got ${JSON.stringify(raw)}`,
      );
    timings[key] = n;
  }
  if (timings.sweeperMaxWaitMs >= timings.sweeperLeaseMs) {
    throw new Error(
      `DQ_SWEEPER_MAX_WAIT_MS (${timings.sweeperMaxWaitMs}) must be below DQ_SWEEPER_LEASE_MS (${timings.sweeperLeaseMs}): the lease is renewed after each wait`,
    );
  }
  return timings;
}

/** Everything a Lambda needs, read from its environment once at cold start. */
export interface AppConfig {
  queue: QueueConfig;
  redis: {
    /** redis:// or rediss:// (TLS) URL, with the password if any. */
    url: string;
    /** Use the cluster client (ElastiCache cluster mode). */
    cluster: boolean;
  };
  /**
   * The API's bearer token; '' in a function that serves no API (the AWS stages give it to the
   * API functions only), where every request is refused.
   */
  apiToken: string;
  /**
   * How API requests are authenticated (DQ_AUTH, from `custom.queue.auth`): `token`, a bearer key
   * (the API token or a named key); `iam`, AWS IAM signatures checked by API Gateway, the caller
   * taken from the request's IAM authorizer context (lib/api/iam.ts).
   */
  auth: 'token' | 'iam';
  /**
   * Secrets that sign webhook requests (WEBHOOK_SECRET: one, or several separated by whitespace
   * while one is rotated; each request carries a signature made with each); none in a function
   * that sends none (AWS stages: all but the webhook handler).
   */
  webhookSecrets: string[];
  /** Lets webhooks reach loopback and private addresses, and plain http (the local stage). */
  webhookAllowPrivate: boolean;
  /** Hosts webhooks may reach whatever they resolve to. */
  webhookAllowHosts: string[];
  /**
   * CIDR blocks webhooks may not reach besides the special-purpose ranges: the stack's own VPC (DQ_WEBHOOK_DENY_CIDRS).
   */
  webhookDenyCidrs: string[];
  /**
   * API functions and topic handlers may start a sweeper or a fan-out by invoking it (false:
   * they only wake a running sweeper through Redis; with none running, the tick starts one).
   */
  wakeInvokes: boolean;
  /** `<service>-<stage>-`: prefix of this deployment's function names. */
  functionPrefix: string;
  /** Lambda API endpoint override (serverless-offline's invoke port); unset on AWS. */
  lambdaEndpoint?: string;
  region: string;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  timings: Timings;
}

type Env = Record<string, string | undefined>;

function required(env: Env, name: string): string {
  const value = env[name];
  if (value === undefined || value === '') throw new Error(`environment variable ${name} is required`);
  return value;
}

function flag(env: Env, name: string): boolean {
  const value = env[name];
  if (value === undefined || value === '' || value === 'false' || value === '0') return false;
  if (value === 'true' || value === '1') return true;
  throw new Error(`environment variable ${name} must be true or false, got ${JSON.stringify(value)}`);
}

/**
 * A comma-separated list of CIDR blocks (`10.42.0.0/16,2600:1f18::/56`); throws naming the variable and the bad block.
 */
function cidrList(env: Env, name: string): string[] {
  const cidrs = (env[name] ?? '')
    .split(',')
    .map((c) => c.trim())
    .filter(Boolean);
  for (const cidr of cidrs) {
    const [address = '', bits = '', extra] = cidr.split('/');
    const family = net.isIP(address);
    if (!family || extra !== undefined || !/^\d{1,3}$/.test(bits) || Number(bits) > (family === 4 ? 32 : 128)) {
      throw new Error(`environment variable ${name} must be comma-separated CIDR blocks, got ${JSON.stringify(cidr)}`);
    }
  }
  return cidrs;
}

/** DQ_AUTH: `token` (also when unset) or `iam`; throws naming the variable otherwise. */
function authMode(env: Env): AppConfig['auth'] {
  const value = env.DQ_AUTH || 'token';
  if (value !== 'token' && value !== 'iam')
    throw new Error(`environment variable DQ_AUTH must be token or iam, got ${JSON.stringify(value)}`);
  return value;
}

/**
 * Reads the configuration from environment variables (DQ_CONFIG holds serverless.yml's
 * `custom.queue` as JSON). The only reader of process.env; fails fast naming the bad variable.
 */
export function loadConfig(env: Env): AppConfig {
  let queueInput: QueueConfigInput;
  try {
    queueInput = JSON.parse(required(env, 'DQ_CONFIG')) as QueueConfigInput;
  } catch (error) {
    throw new Error(`environment variable DQ_CONFIG is not valid JSON: ${(error as Error).message}`);
  }
  let queue: QueueConfig;
  try {
    queue = resolveQueueConfig(queueInput);
  } catch (error) {
    throw new Error(`DQ_CONFIG: ${(error as Error).message}`);
  }
  queue = { ...queue, durability: loadDurability(env, queue.durability) };
  const url = required(env, 'REDIS_URL');
  if (!/^rediss?:\/\//.test(url))
    throw new Error('environment variable REDIS_URL must start with redis:// or rediss://');
  const logLevel = env.LOG_LEVEL ?? 'info';
  if (!['debug', 'info', 'warn', 'error'].includes(logLevel))
    throw new Error('environment variable LOG_LEVEL must be debug, info, warn or error');
  return {
    queue,
    redis: { url, cluster: flag(env, 'REDIS_CLUSTER') },
    apiToken: env.API_TOKEN ?? '',
    auth: authMode(env),
    webhookSecrets: (env.WEBHOOK_SECRET ?? '').split(/\s+/).filter((s) => s !== ''),
    webhookAllowPrivate: flag(env, 'DQ_WEBHOOK_ALLOW_PRIVATE'),
    webhookAllowHosts: (env.DQ_WEBHOOK_ALLOW_HOSTS ?? '')
      .split(',')
      .map((h) => h.trim())
      .filter(Boolean),
    webhookDenyCidrs: cidrList(env, 'DQ_WEBHOOK_DENY_CIDRS'),
    wakeInvokes: env.DQ_WAKE_INVOKES === undefined || env.DQ_WAKE_INVOKES === '' ? true : flag(env, 'DQ_WAKE_INVOKES'),
    functionPrefix: required(env, 'DQ_FUNCTION_PREFIX'),
    ...(env.DQ_LAMBDA_ENDPOINT ? { lambdaEndpoint: env.DQ_LAMBDA_ENDPOINT } : {}),
    region: env.AWS_REGION ?? 'us-east-1',
    logLevel: logLevel as AppConfig['logLevel'],
    timings: loadTimings(env),
  };
}
