/**
 * The schedule routes: PUT, GET and DELETE /schedules/{topic}/{id}, its pause and resume, and
 * GET /schedules. Each route parses its request and answers status and body; `scheduleService`
 * beside them validates the raw input once (./schedule-validation.ts, ./validation.ts), hands typed
 * values to the engine and turns its refusals into HttpErrors (./api-errors.ts).
 */
import { decodeScheduleCursor, encodeScheduleCursor, type Engine, type Schedule, type Wake } from '../engine';
import { HttpError, replicated } from './api-errors';
import { requireTopicAccess } from './auth';
import { clientNow, needs, type ApiRequest, type ApiResponse } from './http';
import type { Runtime } from '../platform/runtime';
import { validateSchedule } from './schedule-validation';
import { badCursor, checkJobRef, requireTopic, validateSchedulesQuery } from './validation';
import { packContext, type SpanContext } from '../platform/tracing';

/** The API's schedule operations over an engine, from raw input (the routes below, and tests, call them). */
export const scheduleService = {
  /** Creates or replaces a schedule (validated here) and, in the same script, its pending occurrence. */
  async putSchedule(
    engine: Engine,
    ref: { topic: string; id: string },
    input: unknown,
    by = '',
    trace?: SpanContext,
  ): Promise<{ status: 'created' | 'replaced'; schedule: Schedule } & Wake> {
    const s = validateSchedule(ref.topic, ref.id, input, engine.config, clientNow(engine));
    // each occurrence's attempts link to the trace of this put (a trace of their own: not one endless trace)
    if (trace) s.spec = { ...s.spec, traceLink: packContext(trace) };
    return replicated(engine.putSchedule(ref.topic, { ...s, ...(by ? { by } : {}) }));
  },

  /** Schedule topic/id with its next 5 run times, or null when there is none. */
  async getSchedule(engine: Engine, topic: string, id: string): Promise<Schedule | null> {
    checkJobRef(topic, id, 'schedule');
    requireTopic(engine.config, topic);
    return engine.getSchedule(topic, id);
  },

  /** Deletes a schedule and withdraws its pending occurrence: 404 when there is none. */
  async deleteSchedule(engine: Engine, topic: string, id: string): Promise<void> {
    checkJobRef(topic, id, 'schedule');
    requireTopic(engine.config, topic);
    if (!(await replicated(engine.deleteSchedule(topic, id))))
      throw new HttpError(404, 'NOT_FOUND', `schedule ${topic}/${id} not found`);
  },

  /**
   * Pauses (`paused` true) or resumes schedule topic/id, its definition kept: once a pause returns
   * no occurrence of it starts; a resume catches up by its catchUp. 404 when there is none.
   */
  async pauseSchedule(engine: Engine, ref: { topic: string; id: string }, paused: boolean, by = ''): Promise<Schedule> {
    const { topic, id } = ref;
    checkJobRef(topic, id, 'schedule');
    requireTopic(engine.config, topic);
    const schedule = await replicated(engine.pauseSchedule(topic, id, paused, by));
    if (!schedule) throw new HttpError(404, 'NOT_FOUND', `schedule ${topic}/${id} not found`);
    return schedule;
  },

  /** A page of a topic's schedules by id. */
  async listSchedules(
    engine: Engine,
    topic: string,
    page: { limit?: number; cursor?: string } = {},
  ): Promise<{ schedules: Schedule[]; next: string | null }> {
    requireTopic(engine.config, topic);
    const after = page.cursor === undefined ? undefined : decodeScheduleCursor(page.cursor);
    if (after === null) throw badCursor();
    const result = await engine.listSchedules(topic, {
      ...(page.limit !== undefined ? { limit: page.limit } : {}),
      ...(after !== undefined ? { after } : {}),
    });
    return { schedules: result.schedules, next: result.next && encodeScheduleCursor(result.next) };
  },
};

/** PUT /schedules/{topic}/{id}: creates the schedule (201) or replaces it (200), its pending occurrence with it. */
export async function putSchedule(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  const { status, schedule } = await scheduleService.putSchedule(
    rt.engine,
    { topic, id },
    req.json(),
    req.caller.name,
    req.trace,
  );
  if (status === 'replaced') return { status: 200, body: { schedule } };
  return {
    status: 201,
    body: { schedule },
    headers: { location: `/schedules/${encodeURIComponent(topic)}/${encodeURIComponent(id)}` },
  };
}

/**
 * GET /schedules/{topic}/{id}: `{ schedule }` with its next 5 run times, pending occurrence and last run; 404 when
 * none.
 */
export async function getSchedule(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  const schedule = await scheduleService.getSchedule(rt.engine, topic, id);
  if (!schedule) throw new HttpError(404, 'NOT_FOUND', `schedule ${topic}/${id} not found`);
  return { status: 200, body: { schedule } };
}

/** DELETE /schedules/{topic}/{id}: deletes the schedule, withdraws its pending occurrence; 404 when none. */
export async function deleteSchedule(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  await scheduleService.deleteSchedule(rt.engine, topic, id);
  return { status: 200, body: { deleted: true } };
}

/** POST /schedules/{topic}/{id}/pause: once this answers no occurrence of the schedule starts; `{ schedule }`. */
export async function pauseSchedule(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  const schedule = await scheduleService.pauseSchedule(rt.engine, { topic, id }, true, req.caller.name);
  return { status: 200, body: { schedule } };
}

/** POST /schedules/{topic}/{id}/resume: the schedule runs again, catching up by its catchUp; `{ schedule }`. */
export async function resumeSchedule(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic = '', id = '' } = req.params;
  const schedule = await scheduleService.pauseSchedule(rt.engine, { topic, id }, false, req.caller.name);
  return { status: 200, body: { schedule } };
}

/** GET /schedules?topic=&limit=&cursor=: one page of a topic's schedules by id; `{ schedules, next }`. */
export async function listSchedules(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { topic, ...page } = validateSchedulesQuery(req.query);
  requireTopicAccess(req.caller, topic);
  return { status: 200, body: await scheduleService.listSchedules(rt.engine, topic, page) };
}

needs('read', getSchedule, listSchedules);
needs('write', putSchedule, deleteSchedule, pauseSchedule, resumeSchedule);
