import { HttpError } from './errors';
import { errorBody, type ApiRequest, type ApiResponse } from './http';
import type { Job, WriteOutcome } from './queue';
import type { Runtime } from './runtime';
import { wakeSweeper } from './sweeper';

/** The routes of the HTTP API; each takes a parsed request and returns status and body. */

const location = (job: Job) => `/jobs/${encodeURIComponent(job.topic)}/${encodeURIComponent(job.id)}`;

function writeResponse(outcome: WriteOutcome): ApiResponse {
  switch (outcome.status) {
    case 'created':
      return { status: 201, body: { job: outcome.job }, headers: { location: location(outcome.job) } };
    case 'replaced':
      return { status: 200, body: { job: outcome.job } };
    case 'exists':
    case 'finished':
      return { status: 409, body: errorBody(outcome.error, { job: outcome.job }) };
  }
}

async function wakeFor(rt: Runtime, wake: boolean, runAt: string | undefined): Promise<void> {
  if (wake && runAt) await wakeSweeper(rt, Date.parse(runAt));
}

/** POST /jobs */
export async function addJob(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const outcome = await rt.queue.add(req.json());
  await wakeFor(rt, outcome.wake, outcome.job.runAt);
  return writeResponse(outcome);
}

/** POST /jobs/batch: { jobs: [...] }, one result per job, in order. */
export async function addJobs(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const body = req.json();
  const jobs = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as { jobs?: unknown }).jobs : undefined;
  if (!Array.isArray(jobs) || jobs.length === 0) {
    throw new HttpError(400, 'VALIDATION_FAILED', 'send { "jobs": [ ... ] } with 1 to 500 jobs', [{ path: 'jobs', message: 'must be a list of 1 to 500 jobs' }]);
  }
  const { outcomes, wake } = await rt.queue.addMany(jobs);
  if (wake) {
    const earliest = outcomes.flatMap((o) => (o.status === 'created' ? [Date.parse(o.job.runAt)] : [])).sort((a, b) => a - b)[0];
    if (earliest !== undefined) await wakeSweeper(rt, earliest);
  }
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
  const job = await rt.queue.get(topic, id);
  if (!job) throw new HttpError(404, 'NOT_FOUND', `job ${topic}/${id} not found`);
  return { status: 200, body: { job } };
}

/** PUT /jobs/{topic}/{id}: create, or replace a pending job. */
export async function putJob(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  const outcome = await rt.queue.put(topic, id, req.json());
  await wakeFor(rt, outcome.wake, outcome.job.runAt);
  return writeResponse(outcome);
}

/** DELETE /jobs/{topic}/{id} */
export async function deleteJob(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  return { status: 200, body: { job: await rt.queue.cancel(topic, id) } };
}

/** GET /topics */
export async function listTopics(_req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  return { status: 200, body: { topics: await rt.queue.statsAll() } };
}

function intParam(value: string | undefined, name: string, min: number, max: number): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new HttpError(400, 'VALIDATION_FAILED', `${name} must be an integer from ${min} to ${max}`, [{ path: name, message: `must be an integer from ${min} to ${max}` }]);
  return n;
}

/** GET /topics/{topic}/dead?limit=&after= */
export async function listDead(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const limit = intParam(req.query.limit, 'limit', 1, 100);
  const after = intParam(req.query.after, 'after', 0, Number.MAX_SAFE_INTEGER);
  const page = await rt.queue.listDead(req.params.topic ?? '', { ...(limit ? { limit } : {}), ...(after !== undefined ? { after } : {}) });
  return { status: 200, body: page };
}

/** POST /topics/{topic}/dead/redrive: { ids: [...] } or { count: n }; no body redrives the 100 oldest. */
export async function redrive(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const body = req.hasBody ? req.json() : {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, 'VALIDATION_FAILED', 'send { "ids": [...] } or { "count": n }', [{ path: '', message: 'must be an object' }]);
  const { ids, count, ...rest } = body as { ids?: unknown; count?: unknown };
  const problems = Object.keys(rest).map((k) => ({ path: k, message: 'is not a field (fields: ids, count)' }));
  if (ids !== undefined && (!Array.isArray(ids) || ids.length === 0 || ids.length > 500 || !ids.every((i) => typeof i === 'string'))) problems.push({ path: 'ids', message: 'must be a list of 1 to 500 job ids' });
  if (count !== undefined && (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > 1000)) problems.push({ path: 'count', message: 'must be an integer from 1 to 1000' });
  if (ids !== undefined && count !== undefined) problems.push({ path: 'count', message: 'give ids or count, not both' });
  if (problems.length) throw new HttpError(400, 'VALIDATION_FAILED', 'invalid redrive request', problems);
  const result = await rt.queue.redrive(req.params.topic ?? '', ids !== undefined ? { ids: ids as string[] } : { count: (count as number | undefined) ?? 100 });
  if (result.wake) await wakeSweeper(rt, 'now');
  return { status: 200, body: { redriven: result.redriven } };
}
