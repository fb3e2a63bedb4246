/**
 * The topic routes: GET /topics, a topic's dead letters, listings, groups, pause and resume, and a
 * flow topic's keys. Each route parses its request and answers status and body; `topicService`
 * beside them validates the raw input once (./validation.ts), hands typed values to the engine and
 * turns its refusals into HttpErrors (./api-errors.ts).
 */
import {
  decodeDeadCursor,
  decodeGroupCursor,
  decodeJobsCursor,
  encodeDeadCursor,
  encodeGroupCursor,
  encodeJobsCursor,
  type Caller,
  type DeadJob,
  type Engine,
  type FlowKeyChange,
  type FlowKeyState,
  type FlowRate,
  type Job,
  type TopicStatsView,
  type Wake,
} from '../engine';
import { REDRIVE_COUNT } from '../core/limits';
import { isoOrNull } from '../core/time';
import { HttpError, replicated } from './api-errors';
import { mayUseTopic, requireScope } from './auth';
import { needs, type ApiRequest, type ApiResponse } from './http';
import type { Runtime } from '../platform/runtime';
import {
  badCursor,
  checkFlowRef,
  checkGroupRef,
  checkJobRef,
  requireFlowTopic,
  requireTopic,
  validateDeadPage,
  validateFlowChange,
  validateGroupPage,
  validateJobsQuery,
  validateRedrive,
  type GroupPage,
  type JobsQuery,
  type RedriveRequest,
} from './validation';

const changeFlowKey = (engine: Engine, ref: { topic: string; key: string }, change: FlowKeyChange | 'clear', by = '') =>
  replicated(engine.setFlowKey(ref.topic, ref.key, change, by));

/** The API's topic operations over an engine, from raw input (the routes below, and tests, call them). */
export const topicService = {
  /** Moves dead jobs back to delayed, due now: the given ids, or the `count` oldest. */
  async redrive(
    engine: Engine,
    topic: string,
    request: Partial<RedriveRequest> & { ids?: string[]; count?: number } = {},
    by = '',
  ): Promise<{ redriven: number } & Wake> {
    requireTopic(engine.config, topic);
    if (request.ids) for (const id of request.ids) checkJobRef(topic, id);
    const which = request.ids ? { ids: request.ids } : { count: request.count ?? REDRIVE_COUNT.default };
    return replicated(engine.redrive(topic, which, by));
  },

  /** Stats of one topic. */
  async stats(engine: Engine, topic: string): Promise<TopicStatsView> {
    requireTopic(engine.config, topic);
    return engine.stats(topic);
  },

  /** Stats of every configured topic `caller` may use. */
  async statsAll(engine: Engine, caller?: Caller): Promise<TopicStatsView[]> {
    const all = await engine.statsAll();
    return caller ? all.filter((t) => mayUseTopic(caller, t.topic)) : all;
  },

  /** Cancels every unfinished job of a group; once it returns, none that was delayed or ready starts. */
  async cancelGroup(
    engine: Engine,
    topic: string,
    group: string,
    by = '',
  ): Promise<{ cancelled: number; running: number }> {
    checkGroupRef(topic, group);
    requireTopic(engine.config, topic);
    return replicated(engine.cancelGroup(topic, group, by));
  },

  /** A page of a group's jobs with their states; `next` is null at the end. */
  async listGroup(
    engine: Engine,
    topic: string,
    group: string,
    page: GroupPage = {},
  ): Promise<{ jobs: Job[]; next: string | null }> {
    checkGroupRef(topic, group);
    requireTopic(engine.config, topic);
    const cursor =
      page.cursor === undefined
        ? undefined
        : decodeGroupCursor(page.cursor, engine.partitionCount(topic), topic, group);
    if (cursor === null) throw badCursor();
    const result = await engine.listGroup(topic, group, {
      ...(page.limit !== undefined ? { limit: page.limit } : {}),
      ...(cursor ? { cursor } : {}),
    });
    return { jobs: result.jobs, next: result.next && encodeGroupCursor(result.next, topic, group) };
  },

  /** A page of a topic's jobs in one state, in that state's time order, within [from, to]. */
  async listJobs(engine: Engine, topic: string, query: JobsQuery): Promise<{ jobs: Job[]; next: string | null }> {
    requireTopic(engine.config, topic);
    const { state, cursor: text, ...bounds } = query;
    if (state === 'ready' && engine.config.topics.get(topic)!.flow) {
      // its ready jobs wait in its keys' lanes, not in the ready lists this listing pages through
      const message = `topic ${topic} is a flow topic: its ready jobs wait per key, so they are not listed here; GET /topics/${topic}/flows/{key} shows a key's`;
      throw new HttpError(400, 'VALIDATION_FAILED', message, [{ path: 'state', message }]);
    }
    const cursor = text === undefined ? undefined : decodeJobsCursor(text, state, engine.partitionCount(topic), topic);
    if (cursor === null) throw badCursor();
    const page = await engine.listJobs(topic, state, { ...bounds, ...(cursor ? { cursor } : {}) });
    return { jobs: page.jobs, next: page.next && encodeJobsCursor(page.next, topic) };
  },

  /** Dead jobs of a topic, oldest first, after `after` (a previous page's `next`). */
  async listDead(
    engine: Engine,
    topic: string,
    page: { limit?: number; after?: string } = {},
  ): Promise<{ jobs: DeadJob[]; next: string | null }> {
    requireTopic(engine.config, topic);
    const after = page.after === undefined ? undefined : decodeDeadCursor(page.after);
    if (after === null) throw badCursor('after');
    const result = await engine.listDead(topic, {
      ...(page.limit !== undefined ? { limit: page.limit } : {}),
      ...(after ? { after } : {}),
    });
    return { jobs: result.jobs, next: result.next && encodeDeadCursor(result.next) };
  },

  /**
   * Pauses a topic (any configured one): once this returns no job of it starts until it is
   * resumed; adds are still taken, running attempts finish.
   */
  async pauseTopic(engine: Engine, topic: string, by = ''): Promise<void> {
    requireTopic(engine.config, topic);
    await replicated(engine.pauseTopic(topic, by));
  },

  /** Resumes a paused topic (a topic not paused stays as it is): its jobs start again, within its limits. */
  async resumeTopic(engine: Engine, topic: string, by = ''): Promise<void> {
    requireTopic(engine.config, topic);
    await replicated(engine.resumeTopic(topic, by));
  },

  /** The live state of flow key `key` of flow topic `topic` (a key no job has used yet shows the topic's defaults). */
  async flowKey(engine: Engine, topic: string, key: string): Promise<FlowKeyState> {
    checkFlowRef(topic, key);
    requireFlowTopic(engine.config, topic);
    return engine.flowKey(topic, key);
  },

  /** Pins a flow key's limits and/or pauses or resumes it, from the raw body `{ concurrency?, rate?, paused? }`. */
  async setFlowKey(engine: Engine, topic: string, key: string, input: unknown, by = ''): Promise<FlowKeyState> {
    checkFlowRef(topic, key);
    requireFlowTopic(engine.config, topic);
    return changeFlowKey(engine, { topic, key }, validateFlowChange(input), by);
  },

  /** Pauses (`paused` true) or resumes a flow key; a pause has the cut-off of a topic's. */
  async pauseFlowKey(engine: Engine, topic: string, key: string, paused: boolean, by = ''): Promise<FlowKeyState> {
    checkFlowRef(topic, key);
    requireFlowTopic(engine.config, topic);
    return changeFlowKey(engine, { topic, key }, { paused }, by);
  },

  /** Drops a flow key's pinned limits and its pause: it follows the topic's defaults again. */
  async clearFlowKey(engine: Engine, topic: string, key: string, by = ''): Promise<FlowKeyState> {
    checkFlowRef(topic, key);
    requireFlowTopic(engine.config, topic);
    return changeFlowKey(engine, { topic, key }, 'clear', by);
  },
};

/** GET /topics */
export async function listTopics(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  return { status: 200, body: { topics: await topicService.statsAll(rt.engine, req.caller) } };
}

/** GET /topics/{topic}/dead?limit=&after= */
export async function listDead(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const page = await topicService.listDead(rt.engine, req.params.topic ?? '', validateDeadPage(req.query));
  return { status: 200, body: page };
}

/**
 * POST /topics/{topic}/dead/redrive: { ids: [...] } or { count: n }; no body redrives the
 * REDRIVE_COUNT.default oldest.
 */
export async function redrive(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const request = validateRedrive(req.hasBody ? req.json() : undefined);
  const result = await topicService.redrive(rt.engine, req.params.topic ?? '', request, req.caller.name);
  return { status: 200, body: { redriven: result.redriven } };
}

/** DELETE /topics/{topic}/groups/{group}: cancels every pending job of the group; { cancelled, running }. */
export async function cancelGroup(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', group = '' } = req.params;
  return { status: 200, body: await topicService.cancelGroup(rt.engine, topic, group, req.caller.name) };
}

/** GET /topics/{topic}/groups/{group}?limit=&cursor=: one page of the group's jobs; { jobs, next }. */
export async function listGroup(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', group = '' } = req.params;
  return { status: 200, body: await topicService.listGroup(rt.engine, topic, group, validateGroupPage(req.query)) };
}

/**
 * GET /topics/{topic}/jobs?state=&from=&to=&limit=&cursor=: one page of a topic's jobs in one
 * state, in that state's time order; { jobs, next }.
 */
export async function listJobs(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const query = validateJobsQuery(req.query);
  return { status: 200, body: await topicService.listJobs(rt.engine, req.params.topic ?? '', query) };
}

/** POST /topics/{topic}/pause: once this answers no job of the topic starts until it is resumed. */
export async function pauseTopic(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const topic = req.params.topic ?? '';
  await topicService.pauseTopic(rt.engine, topic, req.caller.name);
  return { status: 200, body: { topic, paused: true } };
}

/** POST /topics/{topic}/resume: the topic's jobs start again; { topic, paused: false }. */
export async function resumeTopic(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const topic = req.params.topic ?? '';
  await topicService.resumeTopic(rt.engine, topic, req.caller.name);
  return { status: 200, body: { topic, paused: false } };
}

/**
 * GET, PUT and DELETE /topics/{topic}/flows/{key}, POST /topics/{topic}/flows/{key}/pause and
 * /resume: one function. Reading needs scope read (the route's), every change write. Each answers
 * the key's state.
 */
export async function flows(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', key = '' } = req.params;
  const { engine } = rt;
  const by = req.caller.name;
  if (req.method === 'GET') return flowResponse(await topicService.flowKey(engine, topic, key));
  requireScope(req.caller, 'write');
  if (req.method === 'PUT') return flowResponse(await topicService.setFlowKey(engine, topic, key, req.json(), by));
  if (req.method === 'DELETE') return flowResponse(await topicService.clearFlowKey(engine, topic, key, by));
  if (req.method === 'POST' && /\/(pause|resume)$/.test(req.path)) {
    const paused = req.path.endsWith('/pause');
    return flowResponse(await topicService.pauseFlowKey(engine, topic, key, paused, by));
  }
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

// flows: its changes need write
needs('read', listTopics, listDead, listGroup, listJobs, flows);
needs('write', redrive, cancelGroup, pauseTopic, resumeTopic);
