/**
 * The job routes: POST /jobs, POST /jobs/batch, GET, PUT and DELETE /jobs/{topic}/{id}. Each route
 * parses its request and answers status and body; `jobService` beside them validates the raw
 * input once (./validation.ts), hands typed values to the engine and turns its refusals into
 * HttpErrors (./api-errors.ts). ./http.ts has checked the caller's scope and, for a path with a
 * `{topic}`, the key's topics; a route whose topic comes in the body checks it itself.
 */
import type { Caller, Engine, Job, Wake, WriteResult } from '../engine';
import { HttpError, orThrow, refusalError, replicated } from './api-errors';
import { requireTopicAccess } from './auth';
import { clientNow, errorBody, jobHeaders, needs, type ApiRequest, type ApiResponse } from './http';
import type { Runtime } from '../platform/runtime';
import { packContext, type SpanContext } from '../platform/tracing';
import {
  checkJobRef,
  parseIfMatch,
  requireTopic,
  validateBatch,
  validateChange,
  validateJob,
  validatePut,
  type IfMatch,
  type NewJob,
} from './validation';

/** What an add or put of one job did (invalid input throws instead). */
export type WriteOutcome =
  | { status: 'created'; job: Job }
  | { status: 'replaced'; job: Job }
  | { status: 'exists'; job: Job; error: HttpError }
  | { status: 'finished'; job: Job; error: HttpError }
  /** a dedupe add within its key's window: nothing changed; `job` stands (null: purged after its retention) */
  | { status: 'duplicate'; job: Job | null; id: string }
  /** a debounce add folded into its key's waiting job */
  | { status: 'debounced'; job: Job };

/** What the add of one job of a batch did; an invalid one says why. */
export type AddOutcome = WriteOutcome | { status: 'invalid'; error: HttpError };

/**
 * A write result with its refusal as the API error it becomes; a failed If-Match throws 412 with
 * the job as it stands.
 */
function toOutcome(result: WriteResult, input: NewJob): WriteOutcome {
  if (result.status === 'mismatch') throw refusalError(result.refusal, input.topic, input.id, { job: result.job });
  if (result.status === 'duplicate') return result;
  if (!('refusal' in result)) return { status: result.status, job: result.job };
  const { refusal, status, job } = result;
  return { status, job, error: refusalError(refusal, job.topic, job.id) };
}

const versionOf = (ifMatch: IfMatch | undefined): '' | '*' | number =>
  ifMatch === undefined ? '' : ifMatch === '*' ? '*' : ifMatch.version;

async function write(
  engine: Engine,
  jobs: NewJob[],
  mode: 'add' | 'put',
  by = '',
): Promise<{ outcomes: WriteOutcome[] } & Wake> {
  const { results, wake } = await replicated(engine.write(jobs, mode, by));
  return { outcomes: results.map((r, i) => toOutcome(r, jobs[i]!)), wake };
}

/** The API's job operations over an engine, from raw input (the routes below, and tests, call them). */
export const jobService = {
  /**
   * Adds one job: created, or `exists` (nothing changed) with the job that holds the id; 403 when
   * `caller` may not use its topic.
   */
  async add(engine: Engine, input: unknown, caller?: Caller, trace?: SpanContext): Promise<WriteOutcome & Wake> {
    const job = validateJob(input, engine.config, clientNow(engine));
    if (caller) requireTopicAccess(caller, job.topic);
    if (trace) job.trace = packContext(trace);
    const { outcomes, wake } = await write(engine, [job], 'add', caller?.name);
    return { ...outcomes[0]!, wake };
  },

  /**
   * Adds the jobs of a batch (its size checked by validateBatch); one outcome per input, in order,
   * invalid ones (and 403s for topics `caller` may not use) included.
   */
  async addMany(
    engine: Engine,
    inputs: readonly unknown[],
    caller?: Caller,
    trace?: SpanContext,
  ): Promise<{ outcomes: AddOutcome[] } & Wake> {
    const packed = trace && packContext(trace);
    const outcomes: AddOutcome[] = new Array(inputs.length);
    const valid: NewJob[] = [];
    const validIndex: number[] = [];
    const freshId = engine.freshIds(); // the jobs without ids: placed together, as few calls as on one partition
    inputs.forEach((input, i) => {
      try {
        const job = validateJob(input, engine.config, clientNow(engine), freshId);
        if (caller) requireTopicAccess(caller, job.topic);
        if (packed) job.trace = packed;
        valid.push(job);
        validIndex.push(i);
      } catch (error) {
        if (!(error instanceof HttpError)) throw error;
        outcomes[i] = { status: 'invalid', error };
      }
    });
    const written = await write(engine, valid, 'add', caller?.name);
    written.outcomes.forEach((o, j) => (outcomes[validIndex[j]!] = o));
    return { outcomes, wake: written.wake };
  },

  /**
   * Creates job topic/id, or replaces it while pending (`finished` when running, done or dead);
   * If-Match checked in the same script. `by`: the key's name (updatedBy).
   */
  async put(
    engine: Engine,
    ref: { topic: string; id: string },
    input: unknown,
    options: { ifMatch?: IfMatch; by?: string } = {},
  ): Promise<WriteOutcome & Wake> {
    const job = validatePut(ref.topic, ref.id, input, engine.config, clientNow(engine));
    if (options.ifMatch !== undefined) job.ifMatch = versionOf(options.ifMatch) as '*' | number;
    const { outcomes, wake } = await write(engine, [job], 'put', options.by);
    return { ...outcomes[0]!, wake };
  },

  /** The job, or null when there is none (or it was purged after its retention). */
  async get(engine: Engine, topic: string, id: string): Promise<Job | null> {
    checkJobRef(topic, id);
    requireTopic(engine.config, topic);
    return engine.get(topic, id);
  },

  /** Cancels a pending or running job (twice is fine): 404, 409 JOB_FINISHED, or 412 with the job as it stands. */
  async cancel(
    engine: Engine,
    ref: { topic: string; id: string },
    options: { ifMatch?: IfMatch; by?: string } = {},
  ): Promise<Job> {
    const { topic, id } = ref;
    checkJobRef(topic, id);
    requireTopic(engine.config, topic);
    return orThrow(await replicated(engine.cancel(topic, id, versionOf(options.ifMatch), options.by)), topic, id).job;
  },

  /** Changes the due time and/or body of a pending job: 404, or 409 unless it is delayed or ready. */
  async reschedule(engine: Engine, topic: string, id: string, input: unknown): Promise<{ job: Job } & Wake> {
    checkJobRef(topic, id);
    requireTopic(engine.config, topic);
    const change = validateChange(input, engine.config, clientNow(engine));
    return orThrow(await replicated(engine.reschedule(topic, id, change)), topic, id);
  },
};

const location = (job: Job) => `/jobs/${encodeURIComponent(job.topic)}/${encodeURIComponent(job.id)}`;

function writeResponse(outcome: WriteOutcome): ApiResponse {
  switch (outcome.status) {
    case 'created':
      return {
        status: 201,
        body: { job: outcome.job },
        headers: { location: location(outcome.job), ...jobHeaders(outcome.job) },
      };
    case 'replaced':
      return { status: 200, body: { job: outcome.job }, headers: jobHeaders(outcome.job) };
    case 'debounced':
      return { status: 200, body: { job: outcome.job, debounced: true }, headers: jobHeaders(outcome.job) };
    case 'duplicate':
      return {
        status: 200,
        body: { job: outcome.job, duplicateOf: outcome.id },
        ...(outcome.job ? { headers: jobHeaders(outcome.job) } : {}),
      };
    case 'exists':
    case 'finished':
      return { status: 409, body: errorBody(outcome.error, { job: outcome.job }), headers: jobHeaders(outcome.job) };
  }
}

/** POST /jobs */
export async function addJob(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  return writeResponse(await jobService.add(rt.engine, req.json(), req.caller, req.trace));
}

/** POST /jobs/batch: { jobs: [...] }, one result per job, in order. */
export async function addJobs(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { outcomes } = await jobService.addMany(rt.engine, validateBatch(req.json()), req.caller, req.trace);
  const results = outcomes.map((o) => {
    if (o.status === 'invalid') return { status: o.error.status, ...(errorBody(o.error) as object) };
    const r = writeResponse(o);
    return { status: r.status, ...(r.body as object) };
  });
  return { status: 200, body: { results } };
}

/** GET /jobs/{topic}/{id} */
export async function getJob(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  const job = await jobService.get(rt.engine, topic, id);
  if (!job) throw new HttpError(404, 'NOT_FOUND', `job ${topic}/${id} not found`);
  return { status: 200, body: { job }, headers: jobHeaders(job) };
}

/**
 * PUT /jobs/{topic}/{id}: create, or replace a pending job; with If-Match only while the job is at
 * that version (else 412).
 */
export async function putJob(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  const ifMatch = parseIfMatch(req.headers['if-match']);
  return writeResponse(
    await jobService.put(rt.engine, { topic, id }, req.json(), {
      ...(ifMatch === undefined ? {} : { ifMatch }),
      by: req.caller.name,
    }),
  );
}

/** DELETE /jobs/{topic}/{id}; with If-Match only while the job is at that version (else 412). */
export async function deleteJob(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  const ifMatch = parseIfMatch(req.headers['if-match']);
  const job = await jobService.cancel(
    rt.engine,
    { topic, id },
    { ...(ifMatch === undefined ? {} : { ifMatch }), by: req.caller.name },
  );
  return { status: 200, body: { job }, headers: jobHeaders(job) };
}

needs('read', getJob);
needs('write', addJob, addJobs, putJob, deleteJob);
