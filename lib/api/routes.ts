import { HttpError } from './api-errors';
import { accessFor, requireScope, requireTopicAccess, type Scope } from './auth';
import { errorBody, jobHeaders, type ApiRequest, type ApiResponse, type Route } from './http';
import type { Engine, FlowKeyState, FlowRate, Job, KeyInfo } from '../engine';
import type { Runtime } from '../platform/runtime';
import { Queue, type WriteOutcome } from './queue';
import {
  parseIfMatch,
  validateBatch,
  validateDeadPage,
  validateGroupPage,
  validateJobsQuery,
  validateRedrive,
  validateSchedulesQuery,
} from './validation';
import { isoOrNull } from '../core/time';

/**
 * The routes of the HTTP API; each takes a parsed request and returns status and body, and says
 * (at the end of this file) the scope a key needs to call it. ./http.ts checks the scope and, for
 * a route with a `{topic}` in its path, the key's topics; a route whose topic comes in the body or
 * the query checks it itself.
 */

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
    case 'exists':
    case 'finished':
      return { status: 409, body: errorBody(outcome.error, { job: outcome.job }), headers: jobHeaders(outcome.job) };
  }
}

const queues = new WeakMap<Engine, Queue>();

/** The API's operations over the runtime's engine (one per engine). */
function queueOf(rt: Runtime): Queue {
  let queue = queues.get(rt.engine);
  if (!queue) queues.set(rt.engine, (queue = new Queue(rt.engine)));
  return queue;
}

/** POST /jobs */
export async function addJob(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  return writeResponse(await queueOf(rt).add(req.json(), req.caller));
}

/** POST /jobs/batch: { jobs: [...] }, one result per job, in order. */
export async function addJobs(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { outcomes } = await queueOf(rt).addMany(validateBatch(req.json()), req.caller);
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
  const job = await queueOf(rt).get(topic, id);
  if (!job) throw new HttpError(404, 'NOT_FOUND', `job ${topic}/${id} not found`);
  return { status: 200, body: { job }, headers: jobHeaders(job) };
}

/**
 * PUT /jobs/{topic}/{id}: create, or replace a pending job; with If-Match only while the job is at that version (else
 * 412).
 */
export async function putJob(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  const ifMatch = parseIfMatch(req.headers['if-match']);
  return writeResponse(
    await queueOf(rt).put(topic, id, req.json(), {
      ...(ifMatch === undefined ? {} : { ifMatch }),
      by: req.caller.name,
    }),
  );
}

/** DELETE /jobs/{topic}/{id}; with If-Match only while the job is at that version (else 412). */
export async function deleteJob(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  const ifMatch = parseIfMatch(req.headers['if-match']);
  const job = await queueOf(rt).cancel(topic, id, {
    ...(ifMatch === undefined ? {} : { ifMatch }),
    by: req.caller.name,
  });
  return { status: 200, body: { job }, headers: jobHeaders(job) };
}

/** GET /topics */
export async function listTopics(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  return { status: 200, body: { topics: await queueOf(rt).statsAll(req.caller) } };
}

/** GET /topics/{topic}/dead?limit=&after= */
export async function listDead(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const page = await queueOf(rt).listDead(req.params.topic ?? '', validateDeadPage(req.query));
  return { status: 200, body: page };
}

/**
 * POST /topics/{topic}/dead/redrive: { ids: [...] } or { count: n }; no body redrives the REDRIVE_COUNT.default oldest.
 */
export async function redrive(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const result = await queueOf(rt).redrive(
    req.params.topic ?? '',
    validateRedrive(req.hasBody ? req.json() : undefined),
    req.caller.name,
  );
  return { status: 200, body: { redriven: result.redriven } };
}

/** DELETE /topics/{topic}/groups/{group}: cancels every pending job of the group; { cancelled, running }. */
export async function cancelGroup(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  return {
    status: 200,
    body: await queueOf(rt).cancelGroup(req.params.topic ?? '', req.params.group ?? '', req.caller.name),
  };
}

/** GET /topics/{topic}/groups/{group}?limit=&cursor=: one page of the group's jobs; { jobs, next }. */
export async function listGroup(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const page = validateGroupPage(req.query);
  return { status: 200, body: await queueOf(rt).listGroup(req.params.topic ?? '', req.params.group ?? '', page) };
}

/**
 * GET /topics/{topic}/jobs?state=&from=&to=&limit=&cursor=: one page of a topic's jobs in one state, in that state's
 * time order; { jobs, next }.
 */
export async function listJobs(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const query = validateJobsQuery(req.query);
  return { status: 200, body: await queueOf(rt).listJobs(req.params.topic ?? '', query) };
}

/**
 * POST /topics/{topic}/pause: once this answers no job of the topic starts until it is resumed; { topic, paused: true
 * }.
 */
export async function pauseTopic(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const topic = req.params.topic ?? '';
  await queueOf(rt).pauseTopic(topic, req.caller.name);
  return { status: 200, body: { topic, paused: true } };
}

/** POST /topics/{topic}/resume: the topic's jobs start again; { topic, paused: false }. */
export async function resumeTopic(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const topic = req.params.topic ?? '';
  await queueOf(rt).resumeTopic(topic, req.caller.name);
  return { status: 200, body: { topic, paused: false } };
}

/**
 * GET, PUT and DELETE /topics/{topic}/flows/{key}, POST /topics/{topic}/flows/{key}/pause and
 * /resume: one function. Reading needs scope read (the route's), every change write. Each answers
 * the key's state.
 */
export async function flows(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', key = '' } = req.params;
  const q = queueOf(rt);
  const by = req.caller.name;
  if (req.method === 'GET') return flowResponse(await q.flowKey(topic, key));
  requireScope(req.caller, 'write');
  if (req.method === 'PUT') return flowResponse(await q.setFlowKey(topic, key, req.json(), by));
  if (req.method === 'DELETE') return flowResponse(await q.clearFlowKey(topic, key, by));
  if (req.method === 'POST' && /\/(pause|resume)$/.test(req.path))
    return flowResponse(await q.pauseFlowKey(topic, key, req.path.endsWith('/pause'), by));
  throw new HttpError(404, 'NOT_FOUND', `no route ${req.method} ${req.path}`);
}

/** A flow key's pace as the API shows it: per in seconds, like every duration it answers. */
function rateView(rate: FlowRate | null): { count: number; per: number; burst: number } | null {
  return rate && { count: rate.count, per: rate.perMs / 1000, burst: rate.burst };
}

/** A flow key's state as the API shows it: heldUntil and updatedAt as ISO times, rates with per in seconds. */
function flowResponse(state: FlowKeyState): ApiResponse {
  const { pinned, limits, heldUntil, updatedAt } = state;
  const shown = pinned && {
    ...(pinned.concurrency !== undefined ? { concurrency: pinned.concurrency } : {}),
    ...(pinned.rate !== undefined ? { rate: rateView(pinned.rate) } : {}),
  };
  const body = {
    ...state,
    heldUntil: isoOrNull(heldUntil),
    updatedAt: isoOrNull(updatedAt),
    limits: { concurrency: limits.concurrency, rate: rateView(limits.rate) },
    pinned: shown,
  };
  return { status: 200, body };
}

/**
 * PUT /schedules/{topic}/{id}: creates the schedule (201) or replaces it (200), its pending occurrence with it; `{
 * schedule }`.
 */
export async function putSchedule(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  const { status, schedule } = await queueOf(rt).putSchedule(topic, id, req.json(), req.caller.name);
  if (status === 'replaced') return { status: 200, body: { schedule } };
  return {
    status: 201,
    body: { schedule },
    headers: { location: `/schedules/${encodeURIComponent(topic)}/${encodeURIComponent(id)}` },
  };
}

/**
 * GET /schedules/{topic}/{id}: `{ schedule }` with its next 5 run times, pending occurrence and last run; 404 when
 * there is none.
 */
export async function getSchedule(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  const schedule = await queueOf(rt).getSchedule(topic, id);
  if (!schedule) throw new HttpError(404, 'NOT_FOUND', `schedule ${topic}/${id} not found`);
  return { status: 200, body: { schedule } };
}

/**
 * DELETE /schedules/{topic}/{id}: deletes the schedule and withdraws its pending occurrence; `{ deleted: true }`, 404
 * when there is none.
 */
export async function deleteSchedule(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  await queueOf(rt).deleteSchedule(topic, id);
  return { status: 200, body: { deleted: true } };
}

/**
 * POST /schedules/{topic}/{id}/pause: once this answers no occurrence of the schedule starts; `{ schedule }` (paused),
 * 404 when there is none.
 */
export async function pauseSchedule(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  return { status: 200, body: { schedule: await queueOf(rt).pauseSchedule(topic, id, true, req.caller.name) } };
}

/**
 * POST /schedules/{topic}/{id}/resume: the schedule runs again, catching up by its catchUp; `{ schedule }`, 404 when
 * there is none.
 */
export async function resumeSchedule(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  return { status: 200, body: { schedule: await queueOf(rt).pauseSchedule(topic, id, false, req.caller.name) } };
}

/** GET /schedules?topic=&limit=&cursor=: one page of a topic's schedules by id; `{ schedules, next }`. */
export async function listSchedules(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic, ...page } = validateSchedulesQuery(req.query);
  requireTopicAccess(req.caller, topic);
  return { status: 200, body: await queueOf(rt).listSchedules(topic, page) };
}

/** POST /keys: { name, scope, topics? } -> 201 { key, secret }: the secret is shown this once. */
export async function createKey(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { key, secret } = await queueOf(rt).createKey(req.json(), req.caller);
  return {
    status: 201,
    body: { key: keyView(key), secret },
    headers: { location: `/keys/${encodeURIComponent(key.name)}` },
  };
}

/** GET /keys: { keys }: every key's name, scope, topics, source, created and last used; never a secret. */
export async function listKeys(_req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  return {
    status: 200,
    body: { keys: (await queueOf(rt).listKeys(accessFor(rt.engine, rt.config.apiToken).deploymentSha)).map(keyView) },
  };
}

/**
 * DELETE /keys/{name}: revokes the key; { revoked: true }, 404 when there is none. Every warm instance refuses it
 * within KEY_RECHECK_MS.
 */
export async function revokeKey(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const name = req.params.name ?? '';
  const access = accessFor(rt.engine, rt.config.apiToken);
  await queueOf(rt).revokeKey(name, access.deploymentSha);
  access.forgetName(name);
  return { status: 200, body: { revoked: true } };
}

/** GET /whoami: { key }: the name, scope and topics of the key the request came with. */
export async function whoami(req: ApiRequest): Promise<ApiResponse> {
  const { name, scope, topics } = req.caller;
  return { status: 200, body: { key: { name, scope, topics } } };
}

/** POST /keys, GET /keys and DELETE /keys/{name}: one function, all admin. */
export async function keys(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  if (req.method === 'POST') return createKey(req, rt);
  if (req.method === 'DELETE') return revokeKey(req, rt);
  return listKeys(req, rt);
}

/** A key as the API shows it: times as ISO strings. */
function keyView(key: KeyInfo) {
  return { ...key, createdAt: isoOrNull(key.createdAt), lastUsedAt: isoOrNull(key.lastUsedAt) };
}

/** Sets the scope `routes` need (./http.ts: a route without one needs admin). */
function needs(scope: Scope, ...routes: Route[]): void {
  for (const route of routes) route.scope = scope;
}

// flows: its changes need write
needs('read', getJob, listTopics, listDead, listGroup, listJobs, getSchedule, listSchedules, whoami, flows);
needs(
  'write',
  addJob,
  addJobs,
  putJob,
  deleteJob,
  redrive,
  cancelGroup,
  putSchedule,
  deleteSchedule,
  pauseSchedule,
  resumeSchedule,
  pauseTopic,
  resumeTopic,
);
needs('admin', createKey, listKeys, revokeKey, keys);
