import { HttpError } from './errors';
import { errorBody, jobHeaders, type ApiRequest, type ApiResponse } from './http';
import type { Job, WriteOutcome } from './queue';
import type { Runtime } from '../platform/runtime';
import { wakeSweeper } from '../roles/sweeper';
import { parseIfMatch, validateBatch, validateDeadPage, validateGroupPage, validateJobsQuery, validateRedrive, validateSchedulesQuery } from './validation';

/** The routes of the HTTP API; each takes a parsed request and returns status and body. */

const location = (job: Job) => `/jobs/${encodeURIComponent(job.topic)}/${encodeURIComponent(job.id)}`;

function writeResponse(outcome: WriteOutcome): ApiResponse {
  switch (outcome.status) {
    case 'created':
      return { status: 201, body: { job: outcome.job }, headers: { location: location(outcome.job), ...jobHeaders(outcome.job) } };
    case 'replaced':
      return { status: 200, body: { job: outcome.job }, headers: jobHeaders(outcome.job) };
    case 'exists':
    case 'finished':
      return { status: 409, body: errorBody(outcome.error, { job: outcome.job }), headers: jobHeaders(outcome.job) };
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
  const { outcomes, wake } = await rt.queue.addMany(validateBatch(req.json()));
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
  return { status: 200, body: { job }, headers: jobHeaders(job) };
}

/** PUT /jobs/{topic}/{id}: create, or replace a pending job; with If-Match only while the job is at that version (else 412). */
export async function putJob(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  const ifMatch = parseIfMatch(req.headers['if-match']);
  const outcome = await rt.queue.put(topic, id, req.json(), ifMatch === undefined ? undefined : { ifMatch });
  await wakeFor(rt, outcome.wake, outcome.job.runAt);
  return writeResponse(outcome);
}

/** DELETE /jobs/{topic}/{id}; with If-Match only while the job is at that version (else 412). */
export async function deleteJob(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  const ifMatch = parseIfMatch(req.headers['if-match']);
  const job = await rt.queue.cancel(topic, id, ifMatch === undefined ? undefined : { ifMatch });
  return { status: 200, body: { job }, headers: jobHeaders(job) };
}

/** GET /topics */
export async function listTopics(_req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  return { status: 200, body: { topics: await rt.queue.statsAll() } };
}

/** GET /topics/{topic}/dead?limit=&after= */
export async function listDead(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const page = await rt.queue.listDead(req.params.topic ?? '', validateDeadPage(req.query));
  return { status: 200, body: page };
}

/** POST /topics/{topic}/dead/redrive: { ids: [...] } or { count: n }; no body redrives the REDRIVE_COUNT.default oldest. */
export async function redrive(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const result = await rt.queue.redrive(req.params.topic ?? '', validateRedrive(req.hasBody ? req.json() : undefined));
  if (result.wake) await wakeSweeper(rt, 'now');
  return { status: 200, body: { redriven: result.redriven } };
}

/** DELETE /topics/{topic}/groups/{group}: cancels every pending job of the group; { cancelled, running }. */
export async function cancelGroup(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  return { status: 200, body: await rt.queue.cancelGroup(req.params.topic ?? '', req.params.group ?? '') };
}

/** GET /topics/{topic}/groups/{group}?limit=&cursor=: one page of the group's jobs; { jobs, next }. */
export async function listGroup(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const page = validateGroupPage(req.query);
  return { status: 200, body: await rt.queue.listGroup(req.params.topic ?? '', req.params.group ?? '', page) };
}

/** GET /topics/{topic}/jobs?state=&from=&to=&limit=&cursor=: one page of a topic's jobs in one state, in that state's time order; { jobs, next }. */
export async function listJobs(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const query = validateJobsQuery(req.query);
  return { status: 200, body: await rt.queue.listJobs(req.params.topic ?? '', query) };
}

/**
 * PUT /schedules/{topic}/{id}: creates the schedule (201) or replaces it (200), its pending
 * occurrence with it; `{ schedule }`. When an occurrence became the earliest due job of its
 * partition, wakes the sweeper for the earliest one the put may have created: the pending
 * occurrence, or a missed one caught up on resume (due now, at `lastRunAt`). Waking early costs
 * one sweep that finds nothing; waking late would make the occurrence late.
 */
export async function putSchedule(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  const { status, schedule, wake } = await rt.queue.putSchedule(topic, id, req.json());
  if (wake) {
    const times = [schedule.pending?.runAt, schedule.lastRunAt].flatMap((t) => (t ? [Date.parse(t)] : []));
    await wakeSweeper(rt, times.length > 0 ? Math.min(...times) : 'now');
  }
  if (status === 'replaced') return { status: 200, body: { schedule } };
  return { status: 201, body: { schedule }, headers: { location: `/schedules/${encodeURIComponent(topic)}/${encodeURIComponent(id)}` } };
}

/** GET /schedules/{topic}/{id}: `{ schedule }` with its next 5 run times, pending occurrence and last run; 404 when there is none. */
export async function getSchedule(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  const schedule = await rt.queue.getSchedule(topic, id);
  if (!schedule) throw new HttpError(404, 'NOT_FOUND', `schedule ${topic}/${id} not found`);
  return { status: 200, body: { schedule } };
}

/** DELETE /schedules/{topic}/{id}: deletes the schedule and withdraws its pending occurrence; `{ deleted: true }`, 404 when there is none. */
export async function deleteSchedule(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  await rt.queue.deleteSchedule(topic, id);
  return { status: 200, body: { deleted: true } };
}

/** GET /schedules?topic=&limit=&cursor=: one page of a topic's schedules by id; `{ schedules, next }`. */
export async function listSchedules(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic, ...page } = validateSchedulesQuery(req.query);
  return { status: 200, body: await rt.queue.listSchedules(topic, page) };
}
