/**
 * The API's operations, as the routes (./routes.ts) call them: each validates its raw input once
 * (./validation.ts, ./schedule-input.ts), hands typed values to the engine (lib/engine, through its
 * index) and turns the engine's refusals into HttpErrors (./errors.ts). The Lambda roles use the
 * engine directly, never this.
 */
import {
  decodeDeadCursor,
  decodeGroupCursor,
  decodeJobsCursor,
  decodeScheduleCursor,
  encodeDeadCursor,
  encodeGroupCursor,
  encodeJobsCursor,
  encodeScheduleCursor,
  isRefused,
  NotReplicatedError,
  REFUSAL,
  secretDigest,
} from '../engine';
import type {
  Caller,
  DeadJob,
  Engine,
  FlowKeyChange,
  FlowKeyState,
  Job,
  KeyInfo,
  Refused,
  Schedule,
  TopicStatsView,
  Wake,
  WriteResult,
} from '../engine';
import type { QueueConfig } from '../core/queue-config';
import { MAX_KEYS, REDRIVE_COUNT } from '../core/limits';
import { mayUseTopic, newSecret, requireTopicAccess } from './auth';
import { HttpError, refusalError } from './api-errors';
import { validateSchedule } from './schedule-validation';
import {
  badCursor,
  checkFlowRef,
  checkGroupRef,
  checkJobRef,
  requireFlowTopic,
  requireTopic,
  validateChange,
  validateFlowChange,
  validateJob,
  validateNewKey,
  validatePut,
  type GroupPage,
  type IfMatch,
  type JobsQuery,
  type NewJob,
  type RedriveRequest,
} from './validation';

/** What an add or put of one job did (invalid input throws instead). */
export type WriteOutcome =
  | { status: 'created'; job: Job }
  | { status: 'replaced'; job: Job }
  | { status: 'exists'; job: Job; error: HttpError }
  | { status: 'finished'; job: Job; error: HttpError };

/** What the add of one job of a batch did; an invalid one says why. */
export type AddOutcome = WriteOutcome | { status: 'invalid'; error: HttpError };

/**
 * A write result with its refusal as the API error it becomes; a failed If-Match throws 412 with the job as it stands.
 */
function toOutcome(result: WriteResult, input: NewJob): WriteOutcome {
  if (result.status === 'mismatch') throw refusalError(result.refusal, input.topic, input.id, { job: result.job });
  if (!('refusal' in result)) return { status: result.status, job: result.job };
  const { refusal, status, job } = result;
  return { status, job, error: refusalError(refusal, job.topic, job.id) };
}

/** Throws the API error of a refusal; otherwise returns the outcome. */
function orThrow<T extends object>(outcome: T | Refused, topic: string, id: string): T {
  if (!isRefused(outcome)) return outcome;
  if (outcome.refusal === REFUSAL.VERSION_MISMATCH)
    throw refusalError(outcome.refusal, topic, id, { job: outcome.job ?? null });
  throw refusalError(outcome.refusal, topic, id, outcome.job ? { job: outcome.job } : undefined);
}

/** Runs an engine change; a change no replica confirmed becomes 503 NOT_REPLICATED (retry the same request). */
async function replicated<T>(change: Promise<T>): Promise<T> {
  try {
    return await change;
  } catch (error) {
    if (!(error instanceof NotReplicatedError)) throw error;
    const message = `the change reached the primary, but no replica confirmed it within ${error.timeoutMs} ms, so a failover could undo it; retry the same request (it is idempotent)`;
    throw new HttpError(503, 'NOT_REPLICATED', message, undefined, 1);
  }
}

const versionOf = (ifMatch: IfMatch | undefined): '' | '*' | number =>
  ifMatch === undefined ? '' : ifMatch === '*' ? '*' : ifMatch.version;

export class Queue {
  readonly config: QueueConfig;

  constructor(readonly engine: Engine) {
    this.config = engine.config;
  }

  /** The clock validation bounds runAt with: the engine's fixed test clock, else this machine's. */
  private clientNow(): number {
    return this.engine.fixedNow() ?? Date.now();
  }

  private async write(jobs: NewJob[], mode: 'add' | 'put', by = ''): Promise<{ outcomes: WriteOutcome[] } & Wake> {
    const { results, wake } = await replicated(this.engine.write(jobs, mode, by));
    return { outcomes: results.map((r, i) => toOutcome(r, jobs[i]!)), wake };
  }

  /**
   * Adds one job: created, or `exists` (nothing changed) with the job that holds the id; 403 when `caller` may not use
   * its topic.
   */
  async add(input: unknown, caller?: Caller): Promise<WriteOutcome & Wake> {
    const job = validateJob(input, this.config, this.clientNow());
    if (caller) requireTopicAccess(caller, job.topic);
    const { outcomes, wake } = await this.write([job], 'add', caller?.name);
    return { ...outcomes[0]!, wake };
  }

  /**
   * Adds the jobs of a batch (its size checked by validateBatch); one outcome per input, in order, invalid ones (and
   * 403s for topics `caller` may not use) included.
   */
  async addMany(inputs: readonly unknown[], caller?: Caller): Promise<{ outcomes: AddOutcome[] } & Wake> {
    const outcomes: AddOutcome[] = new Array(inputs.length);
    const valid: NewJob[] = [];
    const validIndex: number[] = [];
    inputs.forEach((input, i) => {
      try {
        const job = validateJob(input, this.config, this.clientNow());
        if (caller) requireTopicAccess(caller, job.topic);
        valid.push(job);
        validIndex.push(i);
      } catch (error) {
        if (!(error instanceof HttpError)) throw error;
        outcomes[i] = { status: 'invalid', error };
      }
    });
    const written = await this.write(valid, 'add', caller?.name);
    written.outcomes.forEach((o, j) => (outcomes[validIndex[j]!] = o));
    return { outcomes, wake: written.wake };
  }

  /**
   * Creates job topic/id, or replaces it while pending (`finished` when running, done or dead); If-Match checked in the
   * same script. `by`: the key's name (updatedBy).
   */
  async put(
    topic: string,
    id: string,
    input: unknown,
    options: { ifMatch?: IfMatch; by?: string } = {},
  ): Promise<WriteOutcome & Wake> {
    const job = validatePut(topic, id, input, this.config, this.clientNow());
    if (options.ifMatch !== undefined) job.ifMatch = versionOf(options.ifMatch) as '*' | number;
    const { outcomes, wake } = await this.write([job], 'put', options.by);
    return { ...outcomes[0]!, wake };
  }

  /** The job, or null when there is none (or it was purged after its retention). */
  async get(topic: string, id: string): Promise<Job | null> {
    checkJobRef(topic, id);
    requireTopic(this.config, topic);
    return this.engine.get(topic, id);
  }

  /** Cancels a pending or running job (twice is fine): 404, 409 JOB_FINISHED, or 412 with the job as it stands. */
  async cancel(topic: string, id: string, options: { ifMatch?: IfMatch; by?: string } = {}): Promise<Job> {
    checkJobRef(topic, id);
    requireTopic(this.config, topic);
    return orThrow(await replicated(this.engine.cancel(topic, id, versionOf(options.ifMatch), options.by)), topic, id)
      .job;
  }

  /** Changes the due time and/or body of a pending job: 404, or 409 unless it is delayed or ready. */
  async reschedule(topic: string, id: string, input: unknown): Promise<{ job: Job } & Wake> {
    checkJobRef(topic, id);
    requireTopic(this.config, topic);
    const change = validateChange(input, this.config, this.clientNow());
    return orThrow(await replicated(this.engine.reschedule(topic, id, change)), topic, id);
  }

  /** Moves dead jobs back to delayed, due now: the given ids, or the `count` oldest. */
  async redrive(
    topic: string,
    request: Partial<RedriveRequest> & { ids?: string[]; count?: number } = {},
    by = '',
  ): Promise<{ redriven: number } & Wake> {
    requireTopic(this.config, topic);
    if (request.ids) for (const id of request.ids) checkJobRef(topic, id);
    return replicated(
      this.engine.redrive(
        topic,
        request.ids ? { ids: request.ids } : { count: request.count ?? REDRIVE_COUNT.default },
        by,
      ),
    );
  }

  /** Stats of one topic, or of every configured topic. */
  async stats(topic: string): Promise<TopicStatsView> {
    requireTopic(this.config, topic);
    return this.engine.stats(topic);
  }

  /** Stats of every configured topic `caller` may use. */
  async statsAll(caller?: Caller): Promise<TopicStatsView[]> {
    const all = await this.engine.statsAll();
    return caller ? all.filter((t) => mayUseTopic(caller, t.topic)) : all;
  }

  /** Cancels every unfinished job of a group; once it returns, none that was delayed or ready starts. */
  async cancelGroup(topic: string, group: string, by = ''): Promise<{ cancelled: number; running: number }> {
    checkGroupRef(topic, group);
    requireTopic(this.config, topic);
    return replicated(this.engine.cancelGroup(topic, group, by));
  }

  /** A page of a group's jobs with their states; `next` is null at the end. */
  async listGroup(topic: string, group: string, page: GroupPage = {}): Promise<{ jobs: Job[]; next: string | null }> {
    checkGroupRef(topic, group);
    requireTopic(this.config, topic);
    const cursor =
      page.cursor === undefined
        ? undefined
        : decodeGroupCursor(
            page.cursor,
            this.engine.ctx.layout.partitionsOf(this.config.topics.get(topic)!).length,
            topic,
            group,
          );
    if (cursor === null) throw badCursor();
    const result = await this.engine.listGroup(topic, group, {
      ...(page.limit !== undefined ? { limit: page.limit } : {}),
      ...(cursor ? { cursor } : {}),
    });
    return { jobs: result.jobs, next: result.next && encodeGroupCursor(result.next, topic, group) };
  }

  /** A page of a topic's jobs in one state, in that state's time order, within [from, to]. */
  async listJobs(topic: string, query: JobsQuery): Promise<{ jobs: Job[]; next: string | null }> {
    requireTopic(this.config, topic);
    const { state, cursor: text, ...bounds } = query;
    if (state === 'ready' && this.config.topics.get(topic)!.flow) {
      // its ready jobs wait in its keys' lanes, not in the ready lists this listing pages through
      const message = `topic ${topic} is a flow topic: its ready jobs wait per key, so they are not listed here; GET /topics/${topic}/flows/{key} shows a key's`;
      throw new HttpError(400, 'VALIDATION_FAILED', message, [{ path: 'state', message }]);
    }
    const cursor =
      text === undefined
        ? undefined
        : decodeJobsCursor(
            text,
            state,
            this.engine.ctx.layout.partitionsOf(this.config.topics.get(topic)!).length,
            topic,
          );
    if (cursor === null) throw badCursor();
    const page = await this.engine.listJobs(topic, state, { ...bounds, ...(cursor ? { cursor } : {}) });
    return { jobs: page.jobs, next: page.next && encodeJobsCursor(page.next, topic) };
  }

  /** Dead jobs of a topic, oldest first, after `after` (a previous page's `next`). */
  async listDead(
    topic: string,
    page: { limit?: number; after?: string } = {},
  ): Promise<{ jobs: DeadJob[]; next: string | null }> {
    requireTopic(this.config, topic);
    const after = page.after === undefined ? undefined : decodeDeadCursor(page.after);
    if (after === null) throw badCursor('after');
    const result = await this.engine.listDead(topic, {
      ...(page.limit !== undefined ? { limit: page.limit } : {}),
      ...(after ? { after } : {}),
    });
    return { jobs: result.jobs, next: result.next && encodeDeadCursor(result.next) };
  }

  /** Creates or replaces a schedule (validated here) and, in the same script, its pending occurrence. */
  async putSchedule(
    topic: string,
    id: string,
    input: unknown,
    by = '',
  ): Promise<{ status: 'created' | 'replaced'; schedule: Schedule } & Wake> {
    const s = validateSchedule(topic, id, input, this.config, this.clientNow());
    return replicated(this.engine.putSchedule(topic, { ...s, ...(by ? { by } : {}) }));
  }

  /** Schedule topic/id with its next 5 run times, or null when there is none. */
  async getSchedule(topic: string, id: string): Promise<Schedule | null> {
    checkJobRef(topic, id, 'schedule');
    requireTopic(this.config, topic);
    return this.engine.getSchedule(topic, id);
  }

  /** Deletes a schedule and withdraws its pending occurrence: 404 when there is none. */
  async deleteSchedule(topic: string, id: string): Promise<void> {
    checkJobRef(topic, id, 'schedule');
    requireTopic(this.config, topic);
    if (!(await replicated(this.engine.deleteSchedule(topic, id))))
      throw new HttpError(404, 'NOT_FOUND', `schedule ${topic}/${id} not found`);
  }

  /**
   * Pauses (`paused` true) or resumes schedule topic/id, its definition kept: once a pause returns
   * no occurrence of it starts; a resume catches up by its catchUp. 404 when there is none.
   */
  async pauseSchedule(topic: string, id: string, paused: boolean, by = ''): Promise<Schedule> {
    checkJobRef(topic, id, 'schedule');
    requireTopic(this.config, topic);
    const schedule = await replicated(this.engine.pauseSchedule(topic, id, paused, by));
    if (!schedule) throw new HttpError(404, 'NOT_FOUND', `schedule ${topic}/${id} not found`);
    return schedule;
  }

  /** A page of a topic's schedules by id. */
  async listSchedules(
    topic: string,
    page: { limit?: number; cursor?: string } = {},
  ): Promise<{ schedules: Schedule[]; next: string | null }> {
    requireTopic(this.config, topic);
    const after = page.cursor === undefined ? undefined : decodeScheduleCursor(page.cursor);
    if (after === null) throw badCursor();
    const result = await this.engine.listSchedules(topic, {
      ...(page.limit !== undefined ? { limit: page.limit } : {}),
      ...(after !== undefined ? { after } : {}),
    });
    return { schedules: result.schedules, next: result.next && encodeScheduleCursor(result.next) };
  }

  /**
   * Pauses a topic (any configured one): once this returns no job of it starts until it is resumed; adds are still
   * taken, running attempts finish.
   */
  async pauseTopic(topic: string, by = ''): Promise<void> {
    requireTopic(this.config, topic);
    await replicated(this.engine.pauseTopic(topic, by));
  }

  /** Resumes a paused topic (a topic not paused stays as it is): its jobs start again, within its limits. */
  async resumeTopic(topic: string, by = ''): Promise<void> {
    requireTopic(this.config, topic);
    await replicated(this.engine.resumeTopic(topic, by));
  }

  /** The live state of flow key `key` of flow topic `topic` (a key no job has used yet shows the topic's defaults). */
  async flowKey(topic: string, key: string): Promise<FlowKeyState> {
    checkFlowRef(topic, key);
    requireFlowTopic(this.config, topic);
    return this.engine.flowKey(topic, key);
  }

  /** Pins a flow key's limits and/or pauses or resumes it, from the raw body `{ concurrency?, rate?, paused? }`. */
  async setFlowKey(topic: string, key: string, input: unknown, by = ''): Promise<FlowKeyState> {
    checkFlowRef(topic, key);
    requireFlowTopic(this.config, topic);
    return this.changeFlowKey(topic, key, validateFlowChange(input), by);
  }

  /** Pauses (`paused` true) or resumes a flow key; a pause has the cut-off of a topic's. */
  async pauseFlowKey(topic: string, key: string, paused: boolean, by = ''): Promise<FlowKeyState> {
    checkFlowRef(topic, key);
    requireFlowTopic(this.config, topic);
    return this.changeFlowKey(topic, key, { paused }, by);
  }

  /** Drops a flow key's pinned limits and its pause: it follows the topic's defaults again. */
  async clearFlowKey(topic: string, key: string, by = ''): Promise<FlowKeyState> {
    checkFlowRef(topic, key);
    requireFlowTopic(this.config, topic);
    return this.changeFlowKey(topic, key, 'clear', by);
  }

  private changeFlowKey(
    topic: string,
    key: string,
    change: FlowKeyChange | 'clear',
    by: string,
  ): Promise<FlowKeyState> {
    return replicated(this.engine.setFlowKey(topic, key, change, by));
  }

  // API keys: the HTTP edge (./http.ts) has checked the caller's scope.

  /**
   * Creates a key (validated here) made by `by`; its secret is in the answer and nowhere else. 409 KEY_EXISTS, 409
   * TOO_MANY_KEYS.
   */
  async createKey(input: unknown, by: Caller): Promise<{ key: KeyInfo; secret: string }> {
    const request = validateNewKey(input, this.config);
    const secret = newSecret();
    const created = await replicated(
      this.engine.createKey({ ...request, sha: secretDigest(secret), createdBy: by.name }),
    );
    if (created === 'taken')
      throw new HttpError(
        409,
        'KEY_EXISTS',
        `a key named ${request.name} exists; revoke it first or pick another name`,
      );
    if (created === 'full')
      throw new HttpError(
        409,
        'TOO_MANY_KEYS',
        `the deployment holds ${MAX_KEYS} keys, the most it may; revoke one first`,
      );
    return {
      key: { ...request, source: 'api', createdAt: created.createdAt, createdBy: by.name, lastUsedAt: null },
      secret,
    };
  }

  /** Every key, never a secret. */
  listKeys(deploymentSha: string): Promise<KeyInfo[]> {
    return this.engine.listKeys(deploymentSha);
  }

  /** Revokes key `name`: 404 when there is none (or it was revoked already). */
  async revokeKey(name: string, deploymentSha: string): Promise<void> {
    if (!(await replicated(this.engine.revokeKey(name, deploymentSha))))
      throw new HttpError(404, 'NOT_FOUND', `key ${name} not found`);
  }
}
