/**
 * The reference model of the queue's promises (README: jobs, attempts, groups, versions and
 * If-Match, schedules, pause, jitter), in plain TypeScript with no Redis: what each operation
 * must answer and what it leaves behind, on a fixed clock. The model runner
 * (./runner.ts) applies every operation it sends to the engine to the model with the engine's
 * answer; an operation returns null when the answer is one the model allows (and then holds the
 * state after it), or the reason it is not. An answer the client never got is handled by the
 * runner, which keeps two models, one with the change made and one without.
 *
 * Two pure functions of the product are taken as given, not modelled: where jitter puts a job in
 * its window (`offsetOf`, "a point of [runAt, runAt + jitter) derived from topic and id": the
 * model checks the window) and the partition of an id (`partitionOf`, which orders a redrive by
 * count: "dead jobs of one partition are ordered, not across partitions").
 */
import type { AckOutcome, ClaimedJob, FailOutcome, Job, Schedule } from '../../../lib/engine';

/** How late a pending occurrence may be and still run as late, not missed (README, Schedules). */
export const GRACE_MS = 60_000;
/** Give-backs in a row that cost no attempt (DESIGN, Timeouts and give-backs). */
export const MAX_GIVE_BACKS = 5;
/** Deleted jobs the model remembers (for messages, and to read back as none). */
const GONE_KEPT = 400;
/** Occurrences whose runs the model counts: the latest (an older one is never made again). */
const RUNS_KEPT = 4000;
/** lastError is some text the model does not spell out. */
export const SOME_ERROR = '\u0000some error';

export type Backoff =
  { kind: 'fixed'; ms: number } | { kind: 'exp'; baseMs: number; capMs: number } | { kind: 'ladder'; ms: number[] };

/** The wait after failed attempt `attempt` (1-based); exponential jitter is 0 (the engine's random is 0 in tests). */
export function retryDelay(b: Backoff, attempt: number): number {
  if (b.kind === 'fixed') return b.ms;
  if (b.kind === 'exp') return Math.floor(Math.min(b.capMs, b.baseMs * 2 ** (attempt - 1)));
  return b.ms[Math.min(attempt, b.ms.length) - 1]!;
}

export interface TopicModel {
  maxAttempts: number;
  backoff: Backoff;
  ttrMs: number;
  concurrency: number;
  jitterMs: number;
  /** The topic's expireAfter default (ms after a job's runAt), or null for none. */
  expireAfterMs: number | null;
  /** The topic's dedupe window default (ms). */
  dedupeWindowMs: number;
  /** The priority of its jobs and schedules that set none (0: none). */
  priority: number;
}

export interface ModelConfig {
  topics: Record<string, TopicModel>;
  partitions: number;
  retentionMs: number;
  deadRetentionMs: number;
  offsetOf(topic: string, id: string, jitterMs: number): number;
  partitionOf(topic: string, id: string): number;
}

export type JobState = 'pending' | 'running' | 'done' | 'dead' | 'cancelled' | 'expired';

export interface Attempt {
  attempt: number;
  token: string;
  deadline: number;
  started: boolean;
}

export interface MJob {
  topic: string;
  id: string;
  state: JobState;
  /** Pending only: taken off the delayed zset onto the ready list. */
  ready: boolean;
  /**
   * While ready: the step it became so (a sweep moved it: the tail of its priority), or minus the step it was given
   * back (the head of its priority). Jobs of one step share it, so it orders only those of different steps.
   */
  readyStep: number;
  dueAt: number;
  createdAt: number;
  attempts: number;
  /** The job's own settings (null: the topic's). */
  maxAttempts: number | null;
  ttrMs: number | null;
  backoff: Backoff | null;
  group: string | null;
  /** JSON text. */
  body: string;
  lastError: string | null;
  claim: Attempt | null;
  giveBacks: number;
  /** Done and cancelled: when the sweep deletes it. */
  purgeAt: number | null;
  diedAt: number | null;
  /** As last seen in an answer; null when a write since has not been seen. */
  version: number | null;
  /** The schedule whose occurrence this is. */
  occurrence: string | null;
  /** Some attempt of this job (since it was created) started. */
  startedOnce: boolean;
  /** Why it is cancelled, for messages. */
  why: string | null;
  /** No attempt may start at or after this time (ms); null: it never expires. */
  expiresAt: number | null;
  /** `dedupe <key>` or `debounce <key>`: the keyed add that created it. */
  keyed: string | null;
  /** Its priority: its add's or put's (else the topic's default), kept by retries, give-backs and folds. */
  priority: number;
}

/** A schedule as the model holds it: its definition (as put), and where its runs stand. */
export interface MSchedule extends ScheduleSpec {
  pending: { ms: number; id: string } | null;
  last: number | null;
  /** The occurrence handed over last (its job may still wait: held back by jitter, or ready). */
  lastId: string | null;
  version: number | null;
}

/** The data of one model: what a branch clones. */
export interface ModelState {
  now: number;
  step: number;
  jobs: Record<string, MJob>;
  schedules: Record<string, MSchedule>;
  /** Jobs deleted: why, for messages. */
  gone: Record<string, string>;
  /** Occurrence id → how many times (creations) it started. */
  runs: Record<string, number>;
  /** Dedupe keys (topic/key): until when (ms, exclusive) the job named stands. */
  dedupe: Record<string, { until: number; id: string }>;
  /** Debounce keys (topic/key): the job the key names last. */
  debounce: Record<string, string>;
}

/** What an engine call answered, as the model compares it. */
export type Answer<T> =
  // made, answer not known (503 NOT_REPLICATED after the script ran; or the "made" side of a lost answer)
  { kind: 'applied' } | { kind: 'value'; value: T } | { kind: 'error'; status: number; code: string; job?: Job | null };

/**
 * What an operation passes besides its arguments: the keys it touched, and whether it is a client's retry after a lost
 * answer.
 */
export interface Cx {
  touched: Set<string>;
  retry: boolean;
}

export interface JobSpec {
  topic: string;
  id: string;
  /** When it is due, before jitter: `delayMs` from the clock when the engine gets it, or at `at` (ms). */
  when: { delayMs: number } | { at: number };
  body: string;
  group: string | null;
  maxAttempts: number | null;
  ttrMs: number | null;
  backoff: Backoff | null;
  jitterMs: number | null;
  /** Its own expiry (else the topic's default): a time (ms), or ms after its runAt. */
  expires?: { at: number } | { afterMs: number } | null;
  /** An add's dedupe or debounce key (the API's `dedupe` / `debounce`). */
  keyed?: KeyedAdd | null;
  /** Its own priority (null or left out: the topic's default). */
  priority?: number | null;
}

/** A keyed add: `dedupe` (windowMs null: the topic's default) or `debounce` (maxWaitMs already defaulted). */
export type KeyedAdd =
  | { kind: 'dedupe'; key: string; windowMs: number | null }
  | { kind: 'debounce'; key: string; periodMs: number; maxWaitMs: number };

export interface ScheduleSpec {
  topic: string;
  id: string;
  everyMs: number;
  catchUp: 'latest' | 'none';
  paused: boolean;
  jitterMs: number | null;
  group: string | null;
  body: string;
  maxAttempts: number | null;
  ttrMs: number | null;
  backoff: Backoff | null;
  /** Its occurrences' priority (null: the topic's default). */
  priority: number | null;
}

export type IfMatch = undefined | '*' | number;

export const keyOf = (topic: string, id: string) => `${topic}/${id}`;
const iso = (ms: number) => new Date(ms).toISOString();

/** `<schedule id>:<UTC time as YYYYMMDDTHHMMSSZ>` (README, Schedules). */
export function occurrenceId(scheduleId: string, ms: number): string {
  const d = new Date(ms);
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${scheduleId}:${p(d.getUTCFullYear(), 4)}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}T${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}Z`;
}

/** `every: N` runs at the multiples of N since the epoch: the first strictly after `t`. */
const nextRunAfter = (everyMs: number, t: number) => (Math.floor(t / everyMs) + 1) * everyMs;
const latestAtOrBefore = (everyMs: number, t: number) => Math.floor(t / everyMs) * everyMs;

export class Model {
  constructor(
    readonly config: ModelConfig,
    public s: ModelState,
  ) {}

  static empty(config: ModelConfig, now: number): Model {
    return new Model(config, { now, step: 0, jobs: {}, schedules: {}, gone: {}, runs: {}, dedupe: {}, debounce: {} });
  }

  clone(): Model {
    return new Model(this.config, structuredClone(this.s));
  }

  /** The state as one string with keys sorted: two branches that print the same are the same. */
  canonical(): string {
    const sorted = (o: Record<string, unknown>) =>
      Object.keys(o)
        .sort()
        .map((k) => [k, o[k]]);
    return JSON.stringify([
      this.s.now,
      sorted(this.s.jobs as Record<string, unknown>),
      sorted(this.s.schedules as Record<string, unknown>),
      sorted(this.s.runs),
      sorted(this.s.dedupe),
      sorted(this.s.debounce),
    ]);
  }

  topic(name: string): TopicModel {
    return this.config.topics[name]!;
  }

  job(topic: string, id: string): MJob | undefined {
    return this.s.jobs[keyOf(topic, id)];
  }

  jobsOf(topic: string): MJob[] {
    return Object.values(this.s.jobs).filter((j) => j.topic === topic);
  }

  // ---- the job as the API shows it ------------------------------------------------------------

  apiState(j: MJob): Job['state'] {
    if (j.state === 'pending') return j.ready ? 'ready' : 'delayed';
    return j.state;
  }

  /** Why `job` (an answer) is not the model's job `j`; null when it is. Learns its version. */
  compare(j: MJob | undefined, job: Job | null, where: string): string | null {
    const key = j ? keyOf(j.topic, j.id) : '';
    if (!j)
      return job
        ? `${where}: the engine has ${job.topic}/${job.id} (${job.state}, runAt ${job.runAt}), the model has none${this.goneWhy(keyOf(job.topic, job.id))}`
        : null;
    if (!job) return `${where}: the engine has no ${key}, the model has it ${this.describe(j)} [lost]`;
    const t = this.topic(j.topic);
    const expected: Record<string, unknown> = {
      state: this.apiState(j),
      runAt: iso(j.dueAt),
      createdAt: iso(j.createdAt),
      attempts: j.attempts,
      maxAttempts: j.maxAttempts ?? t.maxAttempts,
      ttr: (j.ttrMs ?? t.ttrMs) / 1000,
      group: j.group,
      body: j.body,
      deadline: j.state === 'running' && j.claim ? iso(j.claim.deadline) : null,
      expiresAt: j.expiresAt === null ? null : iso(j.expiresAt),
      priority: j.priority,
    };
    const actual: Record<string, unknown> = {
      state: job.state,
      runAt: job.runAt,
      createdAt: job.createdAt,
      attempts: job.attempts,
      maxAttempts: job.maxAttempts,
      ttr: job.ttr,
      group: job.group,
      body: JSON.stringify(job.body),
      deadline: job.deadline,
      expiresAt: job.expiresAt,
      priority: job.priority,
    };
    const diffs = Object.keys(expected)
      .filter((f) => expected[f] !== actual[f])
      .map((f) => `${f}: engine ${JSON.stringify(actual[f])}, model ${JSON.stringify(expected[f])}`);
    if (j.lastError === null && job.lastError !== null)
      diffs.push(`lastError: engine ${JSON.stringify(job.lastError)}, model null`);
    if (j.lastError !== null && j.lastError !== SOME_ERROR && job.lastError !== j.lastError)
      diffs.push(`lastError: engine ${JSON.stringify(job.lastError)}, model ${JSON.stringify(j.lastError)}`);
    if (j.lastError === SOME_ERROR && job.lastError === null) diffs.push('lastError: engine null, model some text');
    if (diffs.length > 0) return `${where}: ${key} differs (${diffs.join('; ')})`;
    j.version = job.version;
    return null;
  }

  describe(j: MJob): string {
    const parts = [`${this.apiState(j)}`, `due ${iso(j.dueAt)}`, `attempts ${j.attempts}`];
    if (j.group) parts.push(`group ${j.group}`);
    if (j.priority !== 0) parts.push(`priority ${j.priority}`);
    if (j.expiresAt !== null) parts.push(`expires ${iso(j.expiresAt)}`);
    if (j.why) parts.push(j.why);
    return `(${parts.join(', ')})`;
  }

  goneWhy(key: string): string {
    const why = this.s.gone[key];
    return why ? ` (${why})` : '';
  }

  // ---- changes shared by operations -----------------------------------------------------------

  private touch(cx: Cx, key: string): void {
    cx.touched.add(key);
  }

  private remove(cx: Cx, j: MJob, why: string): void {
    const key = keyOf(j.topic, j.id);
    delete this.s.jobs[key];
    delete this.s.gone[key];
    this.s.gone[key] = `${why} at step ${this.s.step}`;
    this.touch(cx, key);
    // only for messages and read-backs: the latest deletions (keys keep their insertion order)
    const keys = Object.keys(this.s.gone);
    if (keys.length > GONE_KEPT) for (const k of keys.slice(0, keys.length - GONE_KEPT)) delete this.s.gone[k];
  }

  private newJob(spec: JobSpec, dueAt: number, occurrence: string | null): MJob {
    return {
      expiresAt: this.expiryOf(spec, dueAt),
      keyed: spec.keyed ? `${spec.keyed.kind} ${spec.keyed.key}` : null,
      priority: this.priorityOf(spec),
      topic: spec.topic,
      id: spec.id,
      state: 'pending',
      ready: false,
      readyStep: 0,
      dueAt,
      createdAt: this.s.now,
      attempts: 0,
      maxAttempts: spec.maxAttempts,
      ttrMs: spec.ttrMs,
      backoff: spec.backoff,
      group: spec.group,
      body: spec.body,
      lastError: null,
      claim: null,
      giveBacks: 0,
      purgeAt: null,
      diedAt: null,
      version: null,
      occurrence,
      startedOnce: false,
      why: null,
    };
  }

  /** The priority of a job of `spec`: its own, else its topic's default. */
  priorityOf(spec: { topic: string; priority?: number | null }): number {
    return spec.priority ?? this.topic(spec.topic).priority;
  }

  /** The expiry of a job of `spec` due at `dueAt`: its own, else its topic's default, else none. */
  expiryOf(spec: JobSpec, dueAt: number): number | null {
    const e = spec.expires ?? null;
    if (e !== null) return 'at' in e ? e.at : dueAt + e.afterMs;
    const d = this.topic(spec.topic).expireAfterMs;
    return d === null ? null : dueAt + d;
  }

  /** A job of `spec` the API refuses (400): an expiresAt not later than its first runAt. */
  invalid(spec: JobSpec): boolean {
    const e = spec.expires ?? null;
    return e !== null && 'at' in e && e.at <= this.dueOf(spec);
  }

  /** Where a job of `spec` is first due: its base, moved by its jitter offset (none for a keyed add). */
  dueOf(spec: JobSpec): number {
    if (spec.keyed?.kind === 'debounce') return this.s.now + spec.keyed.periodMs;
    if (spec.keyed) return 'at' in spec.when ? spec.when.at : this.s.now + spec.when.delayMs;
    const jitter = spec.jitterMs ?? this.topic(spec.topic).jitterMs;
    const offset = this.config.offsetOf(spec.topic, spec.id, jitter);
    if (offset < 0 || (jitter > 0 && offset >= jitter) || (jitter === 0 && offset !== 0))
      throw new Error(`offsetOf(${spec.id}, ${jitter}) = ${offset}: outside [0, jitter)`);
    return ('at' in spec.when ? spec.when.at : this.s.now + spec.when.delayMs) + offset;
  }

  /** Ends job `j` as cancelled (pending or running): readable until the retention passes. */
  private cancelNow(cx: Cx, j: MJob, retentionMs: number, why: string): void {
    j.state = 'cancelled';
    j.ready = false;
    j.claim = null;
    j.version = null;
    j.why = `${why} at step ${this.s.step}`;
    this.touch(cx, keyOf(j.topic, j.id));
    if (retentionMs > 0 || j.group !== null) j.purgeAt = this.s.now + retentionMs;
    else this.remove(cx, j, why);
  }

  /** A failed attempt: a retry after the backoff (or `retryAfterMs`), or dead. */
  private failAttempt(
    cx: Cx,
    j: MJob,
    error: string,
    retryAfterMs?: number,
  ): { outcome: 'retry'; runAt: number } | { outcome: 'dead' } {
    const t = this.topic(j.topic);
    j.lastError = error;
    j.claim = null;
    j.version = null;
    this.touch(cx, keyOf(j.topic, j.id));
    if (j.attempts >= (j.maxAttempts ?? t.maxAttempts)) {
      j.state = 'dead';
      j.ready = false;
      j.diedAt = this.s.now;
      return { outcome: 'dead' };
    }
    j.state = 'pending';
    j.ready = false;
    j.dueAt = this.s.now + (retryAfterMs ?? retryDelay(j.backoff ?? t.backoff, j.attempts));
    return { outcome: 'retry', runAt: j.dueAt };
  }

  /**
   * A claimed attempt no handler started, at its deadline: back to ready, uncounted, or after 5 in a row a failed
   * attempt.
   */
  private giveBack(cx: Cx, j: MJob): void {
    const n = j.giveBacks + 1;
    j.claim = null;
    if (n > MAX_GIVE_BACKS) {
      j.giveBacks = 0;
      this.failAttempt(cx, j, SOME_ERROR);
      return;
    }
    j.lastError = SOME_ERROR;
    j.state = 'pending';
    j.ready = true;
    j.readyStep = -this.s.step;
    j.attempts -= 1;
    j.giveBacks = n;
    j.version = null;
    this.touch(cx, keyOf(j.topic, j.id));
  }

  private isAttempt(j: MJob | undefined, ref: { attempt: number; claim: string }): boolean {
    return (
      !!j && j.state === 'running' && j.claim !== null && j.claim.attempt === ref.attempt && j.claim.token === ref.claim
    );
  }

  // ---- producers' operations ------------------------------------------------------------------

  /** POST /jobs: created, or `exists` with the job that holds the id. */
  add(spec: JobSpec, ans: Answer<{ status: string; job: Job | null; id?: string }>, cx: Cx): string | null {
    if (this.invalid(spec)) return this.refused(`add ${keyOf(spec.topic, spec.id)}`, ans);
    if (spec.keyed) {
      const met = this.keyedMeets(spec, ans, cx);
      if (met !== undefined) return met;
      if (spec.id === '') {
        // an id the engine made: `<key>::<random>`, known from the answer
        const made = ans.kind === 'value' ? ans.value.job?.id : undefined;
        if (made === undefined)
          return `add ${spec.topic} keyed ${spec.keyed.key}: answered ${show(ans)}, the model says created`;
        if (!made.startsWith(`${spec.keyed.key}::`))
          return `add ${spec.topic} keyed ${spec.keyed.key}: created ${made}, which does not start with the key`;
        spec = { ...spec, id: made };
      }
    }
    const key = keyOf(spec.topic, spec.id);
    const existing = this.s.jobs[key];
    this.touch(cx, key);
    if (existing) {
      if (ans.kind === 'applied') return null;
      if (ans.kind !== 'value' || ans.value.status !== 'exists')
        return `add ${key}: answered ${show(ans)}, the model says exists ${this.describe(existing)}`;
      return this.compare(existing, ans.value.job, `add ${key} (exists)`);
    }
    const j = this.newJob(spec, this.dueOf(spec), null);
    if (ans.kind === 'value' && ans.value.status !== 'created')
      return `add ${key}: answered ${ans.value.status} ${jobLine(ans.value.job)}, the model says created (there is no such job${this.goneWhy(key)})`;
    if (ans.kind === 'error') return `add ${key}: answered ${show(ans)}, the model says created`;
    this.s.jobs[key] = j;
    delete this.s.gone[key];
    const k = spec.keyed;
    if (k?.kind === 'dedupe')
      this.s.dedupe[keyOf(spec.topic, k.key)] = {
        until: this.s.now + (k.windowMs ?? this.topic(spec.topic).dedupeWindowMs),
        id: spec.id,
      };
    if (k?.kind === 'debounce') this.s.debounce[keyOf(spec.topic, k.key)] = spec.id;
    if (ans.kind === 'value') return this.compare(j, ans.value.job, `add ${key} (created)`);
    return null;
  }

  /**
   * A 400 VALIDATION_FAILED the model expects (nothing changes); or `applied`: the answer to a batch holding it was
   * lost or not replicated, and the batch made the others only.
   */
  private refused(what: string, ans: Answer<unknown>): string | null {
    if (ans.kind === 'applied') return null;
    if (ans.kind === 'error' && ans.status === 400 && ans.code === 'VALIDATION_FAILED') return null;
    return `${what}: answered ${show(ans)}, the model says 400 VALIDATION_FAILED (expiresAt not after the runAt)`;
  }

  /**
   * A keyed add that meets its key's job: a dedupe add within the window (`duplicate`, nothing changes), a debounce
   * add while the key's job waits, not yet due (`debounced`: its body, its runAt min(now + period, created + max
   * wait), and its expiry when the add carries one). Undefined when the add creates its job instead.
   */
  private keyedMeets(
    spec: JobSpec,
    ans: Answer<{ status: string; job: Job | null; id?: string }>,
    cx: Cx,
  ): string | null | undefined {
    const k = spec.keyed!;
    const entry = keyOf(spec.topic, k.key);
    const what = `add ${spec.topic} ${k.kind} ${k.key}`;
    if (k.kind === 'dedupe') {
      const e = this.s.dedupe[entry];
      if (!e || this.s.now >= e.until) return undefined;
      const key = keyOf(spec.topic, e.id);
      this.touch(cx, key);
      if (ans.kind === 'applied') return null;
      if (ans.kind !== 'value' || ans.value.status !== 'duplicate' || ans.value.id !== e.id)
        return `${what}: answered ${show(ans)}${ans.kind === 'value' ? ` (id ${ans.value.id ?? ans.value.job?.id})` : ''}, the model says duplicate of ${e.id} (its window ends ${iso(e.until)}) [dedupe]`;
      return this.compare(this.s.jobs[key], ans.value.job, `${what} (duplicate)`);
    }
    const id = this.s.debounce[entry];
    const j = id === undefined ? undefined : this.s.jobs[keyOf(spec.topic, id)];
    if (!j || j.state !== 'pending' || j.dueAt <= this.s.now) return undefined;
    this.touch(cx, keyOf(j.topic, j.id));
    if (ans.kind === 'error' || (ans.kind === 'value' && ans.value.status !== 'debounced'))
      return `${what}: answered ${show(ans)}, the model says debounced into ${j.id} ${this.describe(j)} [debounce]`;
    const at = Math.max(this.s.now, Math.min(this.s.now + k.periodMs, j.createdAt + k.maxWaitMs));
    j.dueAt = at;
    j.ready = false;
    j.body = spec.body;
    j.version = null;
    if (spec.expires || this.topic(spec.topic).expireAfterMs !== null) j.expiresAt = this.expiryOf(spec, at);
    if (ans.kind === 'value') return this.compare(j, ans.value.job, `${what} (debounced into ${j.id})`);
    return null;
  }

  /** PUT /jobs/{topic}/{id}: created, replaced while pending, `finished`, or 412. */
  put(spec: JobSpec, ifMatch: IfMatch, ans: Answer<{ status: string; job: Job }>, cx: Cx): string | null {
    const key = keyOf(spec.topic, spec.id);
    const j = this.s.jobs[key];
    this.touch(cx, key);
    // a version the model has not seen (null) was written after every version the client holds
    if (this.invalid(spec)) return this.refused(`put ${key}`, ans);
    const matches = ifMatch === undefined || (j !== undefined && (ifMatch === '*' || ifMatch === j.version));
    if (!matches) {
      if (ans.kind === 'applied') return null;
      if (ans.kind !== 'error' || ans.status !== 412)
        return `put ${key} If-Match ${ifMatch}: answered ${show(ans)}, the model says 412 (version ${j?.version ?? 'none'})`;
      return j
        ? this.compare(j, ans.job ?? null, `put ${key} (412)`)
        : ans.job
          ? `put ${key} (412): the answer carries a job, the model has none`
          : null;
    }
    if (j && (j.state === 'running' || j.state === 'done' || j.state === 'dead' || j.state === 'expired')) {
      if (ans.kind === 'applied') return null;
      if (ans.kind !== 'value' || ans.value.status !== 'finished')
        return `put ${key}: answered ${show(ans)}, the model says finished ${this.describe(j)}`;
      return this.compare(j, ans.value.job, `put ${key} (finished)`);
    }
    if (ans.kind === 'error')
      return `put ${key}: answered ${show(ans)}, the model says ${j && j.state === 'pending' ? 'replaced' : 'created'}`;
    const dueAt = this.dueOf(spec);
    let next: MJob;
    let status: string;
    if (j && j.state === 'pending') {
      // replaced: due time, body, group and options; attempts, lastError and createdAt stay
      status = 'replaced';
      next = {
        ...j,
        dueAt,
        ready: false,
        maxAttempts: spec.maxAttempts,
        ttrMs: spec.ttrMs,
        backoff: spec.backoff,
        group: spec.group,
        body: spec.body,
        version: null,
        occurrence: j.occurrence,
        expiresAt: this.expiryOf(spec, dueAt),
        priority: this.priorityOf(spec),
      };
    } else {
      status = 'created';
      next = this.newJob(spec, dueAt, null);
    }
    if (ans.kind === 'value' && ans.value.status !== status)
      return `put ${key}: answered ${ans.value.status} ${jobLine(ans.value.job)}, the model says ${status}${j ? ' ' + this.describe(j) : ''}`;
    this.s.jobs[key] = next;
    delete this.s.gone[key];
    if (ans.kind === 'value') return this.compare(next, ans.value.job, `put ${key} (${status})`);
    return null;
  }

  /** DELETE /jobs/{topic}/{id}. */
  cancel(topic: string, id: string, ifMatch: IfMatch, ans: Answer<Job>, cx: Cx): string | null {
    const key = keyOf(topic, id);
    const j = this.s.jobs[key];
    this.touch(cx, key);
    const expectError = (status: number, code: string): string | null => {
      if (ans.kind === 'applied') return null;
      if (ans.kind !== 'error' || ans.status !== status || ans.code !== code)
        return `cancel ${key}${ifMatch !== undefined ? ` If-Match ${ifMatch}` : ''}: answered ${show(ans)}, the model says ${status} ${code}${j ? ' ' + this.describe(j) : this.goneWhy(key)}`;
      if (j && ans.job !== undefined) return this.compare(j, ans.job, `cancel ${key} (${status})`);
      return null;
    };
    if (!j)
      return expectError(ifMatch !== undefined ? 412 : 404, ifMatch !== undefined ? 'VERSION_MISMATCH' : 'NOT_FOUND');
    if (ifMatch !== undefined && ifMatch !== '*' && ifMatch !== j.version) return expectError(412, 'VERSION_MISMATCH');
    if (j.state === 'done' || j.state === 'dead' || j.state === 'expired') return expectError(409, 'JOB_FINISHED');
    if (ans.kind === 'error')
      return `cancel ${key}: answered ${show(ans)}, the model says cancelled ${this.describe(j)}`;
    if (j.state !== 'cancelled') this.cancelNow(cx, j, this.config.retentionMs, 'cancelled by DELETE');
    if (ans.kind === 'value') return this.compare(j, ans.value, `cancel ${key}`);
    return null;
  }

  /** DELETE /topics/{topic}/groups/{group}: every delayed, ready and running job of the group, cancelled. */
  cancelGroup(
    topic: string,
    group: string,
    ans: Answer<{ cancelled: number; running: number }>,
    cx: Cx,
  ): string | null {
    let cancelled = 0;
    let running = 0;
    for (const j of this.jobsOf(topic)) {
      if (j.group !== group || (j.state !== 'pending' && j.state !== 'running')) continue;
      if (j.state === 'pending') cancelled += 1;
      else running += 1;
      this.cancelNow(cx, j, this.config.retentionMs, `cancelled with group ${group}`);
    }
    if (ans.kind === 'applied') return null;
    if (ans.kind === 'error') return `cancelGroup ${topic}/${group}: answered ${show(ans)}`;
    const { value } = ans;
    // a retry after a lost answer finds part or all of the work done
    const ok = cx.retry
      ? value.cancelled <= cancelled && value.running <= running
      : value.cancelled === cancelled && value.running === running;
    return ok
      ? null
      : `cancelGroup ${topic}/${group}: answered ${JSON.stringify(value)}, the model says ${JSON.stringify({ cancelled, running })}`;
  }

  /**
   * POST /topics/{topic}/dead/redrive: the given ids, or the `count` oldest of partition 0, then of
   * 1, ... `partitions`: only the first so many partitions were reached (an answer lost half-way).
   */
  redrive(
    topic: string,
    which: { ids: string[] } | { count: number },
    ans: Answer<{ redriven: number }>,
    cx: Cx,
    partitions = this.config.partitions,
  ): string | null {
    const p = (j: MJob) => this.config.partitionOf(j.topic, j.id);
    const dead = this.jobsOf(topic).filter((j) => j.state === 'dead' && p(j) < partitions);
    let chosen: MJob[];
    if ('ids' in which) chosen = dead.filter((j) => which.ids.includes(j.id));
    else
      chosen = dead
        .sort((a, b) => p(a) - p(b) || a.diedAt! - b.diedAt! || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
        .slice(0, which.count);
    for (const j of chosen) {
      j.state = 'pending';
      j.ready = false;
      j.attempts = 0;
      j.dueAt = this.s.now;
      j.diedAt = null;
      j.version = null;
      this.touch(cx, keyOf(j.topic, j.id));
    }
    if (ans.kind === 'applied') return null;
    if (ans.kind === 'error') return `redrive ${topic} ${JSON.stringify(which)}: answered ${show(ans)}`;
    const ok = cx.retry ? ans.value.redriven <= chosen.length : ans.value.redriven === chosen.length;
    return ok
      ? null
      : `redrive ${topic} ${JSON.stringify(which)}: answered ${ans.value.redriven}, the model says ${chosen.length} (${chosen.map((j) => j.id).join(' ')})`;
  }

  // ---- schedules ------------------------------------------------------------------------------

  /**
   * Occurrence `id` at run time `ms` of `s`: its jitter (its own, else the topic's) is kept below
   * the time to the next run, so the jitter never holds back two occurrences of one schedule.
   */
  private occurrenceSpec(s: MSchedule, id: string, ms: number): JobSpec {
    const jitterMs = Math.min(s.jitterMs ?? this.topic(s.topic).jitterMs, s.everyMs);
    return {
      topic: s.topic,
      id,
      when: { at: ms },
      body: s.body,
      group: s.group,
      maxAttempts: s.maxAttempts,
      ttrMs: s.ttrMs,
      backoff: s.backoff,
      jitterMs,
      priority: s.priority,
    };
  }

  /** Creates occurrence `ms` of `s`, unless a job holds its id that is not cancelled (that job is the occurrence). */
  private createOccurrence(cx: Cx, s: MSchedule, ms: number): void {
    const id = occurrenceId(s.id, ms);
    const key = keyOf(s.topic, id);
    this.touch(cx, key);
    const existing = this.s.jobs[key];
    if (existing && existing.state !== 'cancelled') return;
    const spec = this.occurrenceSpec(s, id, ms);
    this.s.jobs[key] = this.newJob(spec, this.dueOf(spec), s.id);
    delete this.s.gone[key];
  }

  /** Withdraws occurrence `id` while pending; false when it started (running, done or dead: it runs on). */
  private withdraw(cx: Cx, topic: string, id: string, why: string): boolean {
    const j = this.s.jobs[keyOf(topic, id)];
    if (!j) return true;
    if (j.state === 'pending') {
      this.cancelNow(cx, j, 0, why);
      return true;
    }
    return j.state === 'cancelled';
  }

  /**
   * The runs due by `now` from `from` on: the latest runs once (catchUp latest), or under `none`
   * only when it is at most a grace late; the next pending is the first run after `now`.
   */
  private catchUp(
    s: { everyMs: number; catchUp: 'latest' | 'none' },
    from: number,
  ): { run: number | null; latest: number | null; next: number } {
    const now = this.s.now;
    const next = nextRunAfter(s.everyMs, now);
    if (from > now) return { run: null, latest: null, next };
    const latest = Math.max(from, latestAtOrBefore(s.everyMs, now));
    const run = s.catchUp === 'latest' || now - latest <= GRACE_MS ? latest : null;
    return { run, latest, next };
  }

  /**
   * Occurrence `id` is handed over to run: the one handed over before it, if its jitter still
   * holds it back (pending, never attempted, not yet due), falls due now, so a schedule never
   * holds back more than one occurrence.
   */
  private handOver(cx: Cx, s: MSchedule, id: string): void {
    const before = s.lastId;
    s.lastId = id;
    if (before === null || before === id) return;
    const j = this.s.jobs[keyOf(s.topic, before)];
    if (!j || j.state !== 'pending' || j.ready || j.dueAt <= this.s.now || j.attempts !== 0) return;
    j.dueAt = this.s.now;
    j.version = null;
    this.touch(cx, keyOf(s.topic, before));
  }

  /** PUT /schedules/{topic}/{id}. */
  putSchedule(spec: ScheduleSpec, ans: Answer<{ status: string; schedule: Schedule }>, cx: Cx): string | null {
    const key = keyOf(spec.topic, spec.id);
    if (spec.jitterMs !== null && spec.jitterMs > 0 && spec.jitterMs >= spec.everyMs) {
      // a jitter of the period or more would hold an occurrence back past the next one's run time
      if (ans.kind === 'applied') return null;
      return ans.kind === 'error' && ans.status === 400 && ans.code === 'VALIDATION_FAILED'
        ? null
        : `putSchedule ${key} with jitter ${spec.jitterMs} ms, every ${spec.everyMs} ms: answered ${show(ans)}, the model says 400 VALIDATION_FAILED`;
    }
    const current = this.s.schedules[key];
    const now = this.s.now;
    const pendingAt = current?.pending?.ms ?? null;
    const keep = pendingAt !== null && pendingAt <= now;
    let last = keep ? pendingAt : (current?.last ?? null);
    let run: number | null = null;
    let next: number | null = null;
    if (!spec.paused) {
      const resumed = current !== undefined && current.paused;
      if (resumed && last !== null) {
        const plan = this.catchUp(spec, nextRunAfter(spec.everyMs, last));
        run = plan.run;
        next = plan.next;
        if (plan.latest !== null) last = plan.latest;
      } else next = nextRunAfter(spec.everyMs, now);
    }
    if (ans.kind === 'error') return `putSchedule ${key}: answered ${show(ans)}`;
    if (current?.pending && !keep)
      this.withdraw(cx, spec.topic, current.pending.id, `withdrawn by a put of schedule ${spec.id}`);
    const s: MSchedule = { ...spec, pending: null, last, lastId: current?.lastId ?? null, version: null };
    this.s.schedules[key] = s;
    if (current?.pending && keep) this.handOver(cx, s, current.pending.id);
    if (run !== null) {
      this.createOccurrence(cx, s, run);
      this.handOver(cx, s, occurrenceId(s.id, run));
    }
    if (next !== null) {
      s.pending = { ms: next, id: occurrenceId(s.id, next) };
      this.createOccurrence(cx, s, next);
    }
    cx.touched.add(`schedule:${key}`);
    if (ans.kind === 'applied') return null;
    const status = current ? 'replaced' : 'created';
    if (ans.value.status !== status && !(cx.retry && ans.value.status === 'replaced'))
      return `putSchedule ${key}: answered ${ans.value.status}, the model says ${status}`;
    return this.compareSchedule(s, ans.value.schedule, `putSchedule ${key}`);
  }

  /** DELETE /schedules/{topic}/{id}. */
  deleteSchedule(topic: string, id: string, ans: Answer<true>, cx: Cx): string | null {
    const key = keyOf(topic, id);
    const s = this.s.schedules[key];
    cx.touched.add(`schedule:${key}`);
    if (!s) {
      if (ans.kind === 'applied') return null;
      return ans.kind === 'error' && ans.status === 404
        ? null
        : `deleteSchedule ${key}: answered ${show(ans)}, the model says 404`;
    }
    if (s.pending) this.withdraw(cx, topic, s.pending.id, `withdrawn by the delete of schedule ${id}`);
    // the occurrence handed over last, while it waits for its first attempt (held back by its jitter, or ready)
    if (s.lastId !== null && s.lastId !== s.pending?.id) {
      const j = this.s.jobs[keyOf(topic, s.lastId)];
      if (j && j.state === 'pending' && j.attempts === 0)
        this.withdraw(cx, topic, s.lastId, `withdrawn (handed over, waiting) by the delete of schedule ${id}`);
    }
    delete this.s.schedules[key];
    if (ans.kind === 'error') return `deleteSchedule ${key}: answered ${show(ans)}, the model says deleted`;
    return null;
  }

  /** Why `view` (an answer) is not schedule `s`; null when it is (or both are absent). Learns its version. */
  compareSchedule(s: MSchedule | undefined, view: Schedule | null, where: string): string | null {
    if (!s) return view ? `${where}: the engine has schedule ${view.topic}/${view.id}, the model has none` : null;
    if (!view) return `${where}: the engine has no schedule ${s.topic}/${s.id}, the model has it [lost]`;
    const expected = {
      paused: s.paused,
      pending: s.pending ? { id: s.pending.id, runAt: iso(s.pending.ms) } : null,
      lastRunAt: s.last === null ? null : iso(s.last),
      every: s.everyMs / 1000,
      group: s.group,
      body: s.body,
      priority: this.priorityOf(s),
    };
    const actual = {
      paused: view.paused,
      pending: view.pending,
      lastRunAt: view.lastRunAt,
      every: view.every,
      group: view.group,
      body: JSON.stringify(view.body),
      priority: view.priority,
    };
    if (JSON.stringify(expected) !== JSON.stringify(actual))
      return `${where}: schedule ${s.topic}/${s.id} differs: engine ${JSON.stringify(actual)}, model ${JSON.stringify(expected)}`;
    s.version = view.version;
    return null;
  }

  /** The sweeper moves a due schedule on (pending at most a grace late: it runs, the next is the run after it). */
  private advance(cx: Cx, s: MSchedule): void {
    const now = this.s.now;
    const pending = s.pending!;
    let run: number | null;
    let next: number;
    let last: number;
    if (now - pending.ms <= GRACE_MS) {
      run = pending.ms;
      next = pending.ms + s.everyMs;
      last = pending.ms;
    } else {
      const plan = this.catchUp(s, pending.ms);
      run = plan.run;
      next = plan.next;
      last = plan.latest ?? pending.ms;
    }
    const runId = run === null ? null : occurrenceId(s.id, run);
    let handed: string | null = pending.id;
    if (runId !== pending.id) {
      // a catch-up: the pending occurrence is withdrawn while it waits for its first attempt, and
      // the latest run takes its place; one no longer waiting (claimed, retrying, finished,
      // cancelled, or gone) stands for the runs due, and nothing is made (never two for one catch-up)
      const j = this.s.jobs[keyOf(s.topic, pending.id)];
      if (j && j.state === 'pending' && j.attempts === 0) {
        this.cancelNow(cx, j, 0, `withdrawn by the catch-up of schedule ${s.id}`);
        handed = runId;
        if (run !== null) this.createOccurrence(cx, s, run);
      }
    }
    if (handed !== null) this.handOver(cx, s, handed);
    s.pending = { ms: next, id: occurrenceId(s.id, next) };
    this.createOccurrence(cx, s, next);
    s.last = last;
    s.version = null;
    cx.touched.add(`schedule:${keyOf(s.topic, s.id)}`);
  }

  // ---- the sweeper, the fan-out and the handlers ------------------------------------------------

  /** Sweeps until nothing is left to do at `now`: timeouts, due jobs to ready, purges, schedules moved on. */
  sweep(cx: Cx): void {
    const now = this.s.now;
    for (let round = 0; round < 10_000; round++) {
      let changed = false;
      for (const j of Object.values(this.s.jobs)) {
        if (j.state === 'running' && j.claim && j.claim.deadline <= now) {
          if (j.claim.started) this.failAttempt(cx, j, SOME_ERROR);
          else this.giveBack(cx, j);
          changed = true;
        }
      }
      for (const j of Object.values(this.s.jobs)) {
        if (j.state === 'pending' && !j.ready && j.dueAt <= now) {
          j.ready = true;
          j.readyStep = this.s.step;
          this.touch(cx, keyOf(j.topic, j.id));
          changed = true;
        }
      }
      for (const j of Object.values(this.s.jobs)) {
        const purge =
          ((j.state === 'done' || j.state === 'cancelled' || j.state === 'expired') && j.purgeAt! <= now) ||
          (j.state === 'dead' && j.diedAt! <= now - this.config.deadRetentionMs);
        if (purge) {
          this.remove(cx, j, `purged (${j.state}) by a sweep`);
          changed = true;
        }
      }
      for (const s of Object.values(this.s.schedules)) {
        if (!s.paused && s.pending && s.pending.ms <= now) {
          this.advance(cx, s);
          changed = true;
        }
      }
      if (!changed) return;
    }
    throw new Error('the model sweep does not settle');
  }

  /** Jobs a claim may take now: pending and on the ready list. */
  claimable(topic: string): MJob[] {
    return this.jobsOf(topic).filter((j) => j.state === 'pending' && j.ready);
  }

  running(topic: string): number {
    return this.jobsOf(topic).filter((j) => j.state === 'running').length;
  }

  /** A claim of up to `n` jobs that took `claimed`: each must be ready, and the topic's concurrency kept. */
  claim(topic: string, n: number, claimed: readonly ClaimedJob[], cx: Cx): string | null {
    const t = this.topic(topic);
    const room = t.concurrency - this.running(topic);
    if (claimed.length > Math.min(n, Math.max(0, room)))
      return `claim ${topic} ${n}: took ${claimed.length}, more than min(n ${n}, room ${room} of concurrency ${t.concurrency})`;
    const ready = this.claimable(topic);
    const taken = new Set(claimed.map((c) => keyOf(topic, c.id)));
    const seen = new Set<string>();
    for (const c of claimed) {
      const key = keyOf(topic, c.id);
      this.touch(cx, key);
      if (seen.has(key)) return `claim ${topic}: took ${c.id} twice`;
      seen.add(key);
      const j = this.s.jobs[key];
      if (!j)
        return `claim ${topic}: took ${c.id}, which the model does not have${this.goneWhy(key)} [${this.s.gone[key] ? 'deleted-starts' : 'model'}]`;
      if (j.state === 'cancelled')
        return `claim ${topic}: took ${c.id}, cancelled ${this.describe(j)} [cancelled-starts]`;
      if (j.state !== 'pending')
        return `claim ${topic}: took ${c.id}, ${this.describe(j)} [${j.occurrence && j.startedOnce ? 'runs-twice' : 'model'}]`;
      if (!j.ready) return `claim ${topic}: took ${c.id}, not moved to ready by a sweep ${this.describe(j)}`;
      const deadline = this.s.now + (j.ttrMs ?? t.ttrMs);
      const diffs: string[] = [];
      if (c.attempt !== j.attempts + 1) diffs.push(`attempt ${c.attempt}, model ${j.attempts + 1}`);
      if (c.runAt !== j.dueAt) diffs.push(`runAt ${iso(c.runAt)}, model ${iso(j.dueAt)}`);
      if (c.deadline !== deadline) diffs.push(`deadline ${iso(c.deadline)}, model ${iso(deadline)}`);
      if (JSON.stringify(c.body) !== j.body) diffs.push(`body ${JSON.stringify(c.body)}, model ${j.body}`);
      if (c.maxAttempts !== (j.maxAttempts ?? t.maxAttempts))
        diffs.push(`maxAttempts ${c.maxAttempts}, model ${j.maxAttempts ?? t.maxAttempts}`);
      if (diffs.length > 0) return `claim ${topic}: ${c.id} differs (${diffs.join('; ')})`;
      const passed = this.passedOver(j, ready, taken);
      if (passed.length > 0)
        return `claim ${topic} ${n}: took ${c.id} (priority ${j.priority}, partition ${this.config.partitionOf(topic, c.id)}, ${this.readySince(j)}) while ${passed.map((o) => `${o.id} (priority ${o.priority}, ${this.readySince(o)})`).join(', ')} of its partition stayed ready [priority]`;
      j.state = 'running';
      j.ready = false;
      j.attempts += 1;
      j.claim = { attempt: c.attempt, token: c.claim, deadline, started: false };
      j.version = null;
    }
    return null;
  }

  /**
   * [priority] The ready jobs of `j`'s topic and partition that a claim taking `j` had to take first but left ready
   * (`ready`: the topic's ready jobs before the claim; `taken`: the keys it took): those of a higher priority, and
   * those of `j`'s priority, when it is not 0, that became ready at an earlier step (or were given back since `j`
   * became ready). Within one partition a claim looks at the prioritized jobs above 0 (highest first, first come
   * first), then the ready list, then those below 0, and each id it looks at, live or stale, counts against its n: a
   * job is handed out only after every one before it in that order (or the claim stopped before it, at its n, its
   * byte budget or the topic's concurrency, taking nothing after). Not checked: the order across partitions (a claim
   * visits them in turn, passing over one whose ready list was empty when counted), of jobs that became ready in one
   * step (a sweep moves them in due order, the model all at once), and FIFO within priority 0: the ready list keeps
   * the id of a ready job that is put (or cancelled and added again), and once it is due again the claim takes it at
   * that first place (a prioritized job has one place in its zset, moved when it is due again).
   */
  private passedOver(j: MJob, ready: readonly MJob[], taken: ReadonlySet<string>): MJob[] {
    const p = this.config.partitionOf(j.topic, j.id);
    return ready.filter(
      (o) =>
        (o.priority > j.priority || (o.priority === j.priority && j.priority !== 0 && o.readyStep < j.readyStep)) &&
        !taken.has(keyOf(o.topic, o.id)) &&
        this.config.partitionOf(o.topic, o.id) === p,
    );
  }

  private readySince(j: MJob): string {
    return j.readyStep < 0 ? `given back at step ${-j.readyStep}` : `ready since step ${j.readyStep}`;
  }

  /** The handler marks attempts started; live ones only: running that claim, before the deadline, not started yet. */
  start(
    topic: string,
    refs: readonly { id: string; attempt: number; claim: string }[],
    ans: Answer<boolean[]>,
    cx: Cx,
  ): string | null {
    const live = refs.map((ref) => {
      const j = this.s.jobs[keyOf(topic, ref.id)];
      return this.isAttempt(j, ref) && !j!.claim!.started && j!.claim!.deadline > this.s.now;
    });
    // a live attempt due at or after its job's expiry does not start: the job ends expired
    const expiring = refs.map((ref, i) => {
      const j = this.s.jobs[keyOf(topic, ref.id)];
      return live[i]! && j!.expiresAt !== null && j!.expiresAt <= this.s.now;
    });
    const expected = live.map((l, i) => l && !expiring[i]);
    if (ans.kind === 'error') return `start: answered ${show(ans)}`;
    if (ans.kind === 'value') {
      for (let i = 0; i < refs.length; i++) {
        if (ans.value[i] === expected[i]) continue;
        const key = keyOf(topic, refs[i]!.id);
        const j = this.s.jobs[key];
        const tag = !j
          ? this.s.gone[key]
            ? ' [deleted-starts]'
            : ''
          : j.state === 'cancelled'
            ? ' [cancelled-starts]'
            : expiring[i] && ans.value[i]
              ? ' [expiry]'
              : '';
        return `start ${key} attempt ${refs[i]!.attempt} (${refs[i]!.claim}): engine ${ans.value[i] ? 'started' : 'refused'}, the model says ${expected[i] ? 'live' : 'not live'} ${j ? this.describe(j) : this.goneWhy(key)}${tag}`;
      }
    }
    for (let i = 0; i < refs.length; i++) {
      if (!expiring[i]) continue;
      const j = this.s.jobs[keyOf(topic, refs[i]!.id)]!;
      j.state = 'expired';
      j.attempts -= 1; // its claim never started: not an attempt
      j.claim = null;
      j.version = null;
      j.purgeAt = this.s.now + this.config.retentionMs;
      this.touch(cx, keyOf(topic, j.id));
    }
    for (let i = 0; i < refs.length; i++) {
      if (!expected[i]) continue;
      const key = keyOf(topic, refs[i]!.id);
      const j = this.s.jobs[key]!;
      j.claim!.started = true;
      j.giveBacks = 0;
      j.version = null;
      this.touch(cx, key);
      if (j.occurrence && !j.startedOnce) {
        const runs = (this.s.runs[key] ?? 0) + 1;
        delete this.s.runs[key];
        this.s.runs[key] = runs;
        const keys = Object.keys(this.s.runs);
        if (keys.length > RUNS_KEPT) for (const k of keys.slice(0, keys.length - RUNS_KEPT)) delete this.s.runs[k];
        if (runs > 1)
          return `start ${key}: occurrence ${j.id} of schedule ${j.occurrence} starts a second time (a new job of the same run time) [runs-twice]`;
      }
      j.startedOnce = true;
    }
    return null;
  }

  /**
   * The fan-out gives claimed attempts back (their handler could not be invoked): uncounted, or after 5 in a row a
   * failed attempt.
   */
  release(
    refs: readonly { topic: string; id: string; attempt: number; claim: string }[],
    ans: Answer<number>,
    cx: Cx,
  ): string | null {
    let released = 0;
    for (const ref of refs) {
      const j = this.s.jobs[keyOf(ref.topic, ref.id)];
      this.touch(cx, keyOf(ref.topic, ref.id));
      if (!this.isAttempt(j, ref)) continue;
      const wasGiveBacks = j!.giveBacks;
      this.giveBack(cx, j!);
      if (wasGiveBacks + 1 <= MAX_GIVE_BACKS) released += 1;
    }
    if (ans.kind === 'error') return `release: answered ${show(ans)}`;
    if (ans.kind === 'value' && ans.value !== released)
      return `release ${refs.map((r) => `${r.topic}/${r.id}#${r.attempt}`).join(' ')}: engine gave back ${ans.value}, the model says ${released}`;
    return null;
  }

  /** The handler acks its attempt. */
  ack(
    topic: string,
    id: string,
    ref: { attempt: number; claim: string },
    ans: Answer<AckOutcome>,
    cx: Cx,
  ): string | null {
    const key = keyOf(topic, id);
    const j = this.s.jobs[key];
    this.touch(cx, key);
    const expected: AckOutcome = !j
      ? 'not_found'
      : j.state === 'cancelled'
        ? 'cancelled'
        : this.isAttempt(j, ref)
          ? 'done'
          : 'stale';
    if (ans.kind === 'error') return `ack ${key}: answered ${show(ans)}`;
    if (ans.kind === 'value' && ans.value !== expected && !(cx.retry && expected === 'stale' && ans.value === 'done')) {
      return `ack ${key} attempt ${ref.attempt}: engine ${ans.value}, the model says ${expected} ${j ? this.describe(j) : this.goneWhy(key)}`;
    }
    if (expected === 'done') {
      j!.state = 'done';
      j!.claim = null;
      j!.version = null;
      j!.purgeAt = this.s.now + this.config.retentionMs;
      if (this.config.retentionMs === 0 && j!.group === null) this.remove(cx, j!, 'acked');
    }
    return null;
  }

  /** The handler fails its attempt (`retryAfterMs`: a RetryLater). */
  fail(
    topic: string,
    id: string,
    ref: { attempt: number; claim: string },
    error: string,
    retryAfterMs: number | undefined,
    ans: Answer<FailOutcome>,
    cx: Cx,
  ): string | null {
    const key = keyOf(topic, id);
    const j = this.s.jobs[key];
    this.touch(cx, key);
    if (ans.kind === 'error') return `fail ${key}: answered ${show(ans)}`;
    const refused = !j ? 'not_found' : j.state === 'cancelled' ? 'cancelled' : this.isAttempt(j, ref) ? null : 'stale';
    if (refused) {
      if (ans.kind === 'value' && ans.value.outcome !== refused)
        return `fail ${key} attempt ${ref.attempt}: engine ${JSON.stringify(ans.value)}, the model says ${refused} ${j ? this.describe(j) : this.goneWhy(key)}`;
      return null;
    }
    const outcome = this.failAttempt(cx, j!, error, retryAfterMs);
    if (
      ans.kind === 'value' &&
      JSON.stringify({ ...ans.value, wake: undefined }) !== JSON.stringify({ ...outcome, wake: undefined })
    ) {
      const shown = ans.value.outcome === 'retry' ? `retry at ${iso(ans.value.runAt)}` : ans.value.outcome;
      return `fail ${key} attempt ${ref.attempt}: engine ${shown}, the model says ${outcome.outcome === 'retry' ? `retry at ${iso(outcome.runAt)}` : 'dead'}`;
    }
    return null;
  }

  // ---- listings -------------------------------------------------------------------------------

  /** The score a jobs listing of `state` orders `j` by. */
  scoreOf(j: MJob, state: 'delayed' | 'ready' | 'running' | 'dead'): number {
    if (state === 'running') return j.claim!.deadline;
    if (state === 'dead') return j.diedAt!;
    return j.dueAt;
  }

  /** The jobs a listing shows now, each with what must not change for it to "stay" in the listing. */
  listed(spec: ListingSpec): Map<string, string> {
    const out = new Map<string, string>();
    for (const j of this.jobsOf(spec.topic)) {
      const key = keyOf(j.topic, j.id);
      if (spec.kind === 'group') {
        if (j.group === spec.group) out.set(key, spec.group);
        continue;
      }
      const state = spec.kind === 'dead' ? 'dead' : spec.state;
      if (this.apiState(j) !== state) continue;
      const score = this.scoreOf(j, state);
      if (spec.from !== undefined && score < spec.from) continue;
      if (spec.to !== undefined && score > spec.to) continue;
      out.set(key, `${state}@${score}`);
    }
    return out;
  }
}

export type ListingSpec =
  | { kind: 'jobs'; topic: string; state: 'delayed' | 'ready' | 'running' | 'dead'; from?: number; to?: number }
  | { kind: 'dead'; topic: string; from?: undefined; to?: undefined }
  | { kind: 'group'; topic: string; group: string };

function jobLine(job: Job | null | undefined): string {
  return job ? `(${job.state}, runAt ${job.runAt}, v${job.version})` : '';
}

export function show(ans: Answer<unknown>): string {
  if (ans.kind === 'applied') return 'nothing (applied)';
  if (ans.kind === 'error') return `${ans.status} ${ans.code}${ans.job ? ' ' + jobLine(ans.job) : ''}`;
  const v = ans.value as { status?: string; job?: Job } | undefined;
  if (v && typeof v === 'object' && 'status' in v) return `${v.status} ${jobLine(v.job)}`;
  const batch = ans.value as { outcomes?: { status: string; job?: Job }[] } | undefined;
  if (batch && typeof batch === 'object' && Array.isArray(batch.outcomes))
    return batch.outcomes.map((o) => `${o.job?.id ?? '?'} ${o.status}`).join(', ');
  if (ans.value && typeof ans.value === 'object' && 'schedule' in (ans.value as object))
    return `${(ans.value as { status: string }).status}`;
  return JSON.stringify(ans.value);
}
