import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, Context } from 'aws-lambda';
import { accessFor, requireScope, requireTopicAccess, type Caller, type Scope } from './auth';
import { HttpError } from './api-errors';
import { iamCaller, type IamIdentity } from './iam';
import { takeColdStart } from '../platform/log';
import { isUnavailable } from '../platform/redis';
import { runtime, type Runtime } from '../platform/runtime';
import { parseTraceparent, type SpanContext } from '../platform/tracing';
import type { Engine } from '../engine';

/** A request as a route sees it. */
export interface ApiRequest {
  method: string;
  path: string;
  params: Record<string, string>;
  query: Record<string, string>;
  /** The request's headers, names lower-cased (`if-match`, `content-type`). */
  headers: Record<string, string>;
  requestId: string;
  /** The key the request came with. */
  caller: Caller;
  /** True when the request has a non-empty body. */
  hasBody: boolean;
  /** The body parsed as JSON; throws 400 INVALID_JSON when it is not. */
  json(): unknown;
  /** The request's span, when tracing is on (a job added by it keeps it: its attempts are its children). */
  trace?: SpanContext;
}

/** A route's answer: a status and a JSON body. */
export interface ApiResponse {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' };
const MAX_REQUEST_BYTES = 6 * 1024 * 1024; // Lambda's own limit for a synchronous payload

/**
 * A route: takes a parsed request, returns status and body. `scope`: what a key needs to call it
 * (lib/api/routes.ts sets it on each); a route without one needs `admin`.
 */
export type Route = ((request: ApiRequest, rt: Runtime) => Promise<ApiResponse>) & { scope?: Scope };

/**
 * The job a refusal is about, when its details hold only `{ job }` (a Job, or null for "no such job"); else undefined.
 */
function refusedJob(error: HttpError): unknown {
  const details = error.details as { job?: unknown } | undefined;
  return details && typeof details === 'object' && Object.keys(details).length === 1 ? details.job : undefined;
}

/**
 * The JSON error body for an HttpError. A refusal about an existing job (its details hold only
 * `{ job }`) carries that job at the top level, as every 409 and 412 does.
 */
export function errorBody(error: HttpError, extra: Record<string, unknown> = {}): unknown {
  const job = refusedJob(error);
  if (job !== undefined) return { error: { code: error.code, message: error.message }, job, ...extra };
  return {
    error: {
      code: error.code,
      message: error.message,
      ...(error.details !== undefined ? { details: error.details } : {}),
    },
    ...extra,
  };
}

/**
 * The headers of an answer that carries one job: `ETag: "<version>"`, the job's version as a strong entity tag (none
 * for no job).
 */
export function jobHeaders(job: unknown): Record<string, string> {
  const version = job && typeof job === 'object' ? (job as { version?: unknown }).version : undefined;
  return typeof version === 'number' && Number.isSafeInteger(version) ? { etag: `"${version}"` } : {};
}

function respond(status: number, body: unknown, headers: Record<string, string> = {}): APIGatewayProxyResultV2 {
  return { statusCode: status, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) };
}

function parseBody(event: APIGatewayProxyEventV2): unknown {
  const raw = event.body ?? '';
  const text = event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw;
  if (Buffer.byteLength(text) > MAX_REQUEST_BYTES)
    throw new HttpError(413, 'PAYLOAD_TOO_LARGE', `the request is over ${MAX_REQUEST_BYTES} bytes`);
  if (text.trim() === '') throw new HttpError(400, 'INVALID_JSON', 'the request body must be JSON, and it is empty');
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, 'INVALID_JSON', `the request body is not valid JSON: ${(error as Error).message}`);
  }
}

/**
 * Wraps a route into an HTTP API Lambda handler: finds the request's key (401 when none; with
 * auth `iam`, the IAM signer API Gateway authorised instead, ./iam.ts), checks
 * its scope and, for a route with a `{topic}`, its topics (403 FORBIDDEN), parses JSON,
 * turns HttpErrors into their status and error body, a Redis outage into 503 UNAVAILABLE, and
 * anything else into a 500 with the request id (logged with its stack, never shown).
 * `getRuntime` is the seam for tests: the process's shared runtime by default.
 */
export function httpRoute(route: Route, getRuntime: () => Runtime = runtime) {
  return async (
    event: APIGatewayProxyEventV2,
    context?: Pick<Context, 'awsRequestId'>,
  ): Promise<APIGatewayProxyResultV2> => {
    const requestId = context?.awsRequestId ?? randomUUID();
    let rt: Runtime;
    try {
      rt = getRuntime();
    } catch (error) {
      return configurationError(error, requestId);
    }
    const line = requestLine(event);
    let log = rt.log.child({
      function_request_id: requestId,
      cold_start: takeColdStart(),
      method: line.method,
      path: event.routeKey ?? line.path,
    });
    const found = await callerOf(event, line.headers.authorization, rt, log, requestId);
    if ('response' in found) return found.response;
    log = log.child({ key: found.caller.name });
    return answer(route, apiRequest(event, line, requestId, found.caller), rt, log);
  };
}

/** The answer when the runtime cannot be built (its configuration is wrong): a 500, logged without a logger. */
function configurationError(error: unknown, requestId: string): APIGatewayProxyResultV2 {
  console.error(
    JSON.stringify({ level: 'ERROR', message: 'configuration error', error: (error as Error).message, requestId }),
  );
  return respond(500, { error: { code: 'INTERNAL', message: `internal error (request ${requestId})` } });
}

/** What a request asks for before its key is known: method, path, and its headers, names lower-cased. */
interface RequestLine {
  method: string;
  path: string;
  headers: Record<string, string>;
}

/** The RequestLine of `event`. */
function requestLine(event: APIGatewayProxyEventV2): RequestLine {
  return {
    method: event.requestContext?.http?.method ?? 'GET',
    path: event.rawPath ?? '/',
    headers: Object.fromEntries(
      Object.entries(event.headers ?? {}).flatMap(([k, v]) => (v === undefined ? [] : [[k.toLowerCase(), v]])),
    ),
  };
}

/**
 * Who sent the request: its IAM signer (auth `iam`) or the key its `authorization` header names; else the answer to
 * give instead (401, or the failure of looking the key up).
 */
async function callerOf(
  event: APIGatewayProxyEventV2,
  authorization: string | undefined,
  rt: Runtime,
  log: Runtime['log'],
  requestId: string,
): Promise<{ caller: Caller } | { response: APIGatewayProxyResultV2 }> {
  if (rt.config.auth === 'iam') {
    // API Gateway checked the signature and the IAM policy (./iam.ts); no context: not through it
    const caller = iamCaller(
      (event.requestContext as { authorizer?: { iam?: IamIdentity } } | undefined)?.authorizer?.iam,
    );
    if (caller) return { caller };
    log.warn('unauthorized request', { status: 401 });
    return {
      response: respond(401, {
        error: {
          code: 'UNAUTHORIZED',
          message: 'this deployment takes AWS IAM (SigV4) signed requests through API Gateway; none reached it',
        },
      }),
    };
  }
  let caller: Caller | null;
  try {
    caller = await accessFor(rt.engine, rt.config.apiToken).caller(authorization);
  } catch (error) {
    return { response: failed(error, log, requestId) };
  }
  if (caller) return { caller };
  log.warn('unauthorized request', { status: 401 });
  return {
    response: respond(
      401,
      {
        error: {
          code: 'UNAUTHORIZED',
          message: 'send Authorization: Bearer <key>, with a key that exists and is not revoked',
        },
      },
      { 'www-authenticate': 'Bearer' },
    ),
  };
}

/** The request as a route sees it; its body is parsed when the route first asks for it, once. */
function apiRequest(event: APIGatewayProxyEventV2, line: RequestLine, requestId: string, caller: Caller): ApiRequest {
  let parsed: { value: unknown } | undefined;
  return {
    method: line.method,
    path: line.path,
    params: Object.fromEntries(Object.entries(event.pathParameters ?? {}).map(([k, v]) => [k, v ?? ''])),
    query: Object.fromEntries(Object.entries(event.queryStringParameters ?? {}).map(([k, v]) => [k, v ?? ''])),
    headers: line.headers,
    requestId,
    caller,
    hasBody: (event.body ?? '').trim() !== '',
    json: () => (parsed ??= { value: parseBody(event) }).value,
  };
}

/** The answer to `request`: `route` run, in a span of the request when tracing is on. */
async function answer(
  route: Route,
  request: ApiRequest,
  rt: Runtime,
  log: Runtime['log'],
): Promise<APIGatewayProxyResultV2> {
  return rt.tracer.enabled ? traced(route, request, rt, log) : run(route, request, rt, log);
}

/** Runs `route` for `request` once its caller's scope and topics allow it; its answer, or its failure's. */
async function run(
  route: Route,
  request: ApiRequest,
  rt: Runtime,
  log: Runtime['log'],
): Promise<APIGatewayProxyResultV2> {
  try {
    requireScope(request.caller, route.scope ?? 'admin');
    if (request.params.topic !== undefined) requireTopicAccess(request.caller, request.params.topic);
    const response = await route(request, rt);
    log.info('request', { status: response.status });
    return respond(response.status, response.body, response.headers);
  } catch (error) {
    return failed(error, log, request.requestId);
  }
}

/**
 * `run` in a span of the request (a server span, continuing the trace of an incoming `traceparent`), exported
 * before the answer goes back (a Lambda may be frozen after it).
 */
async function traced(
  route: Route,
  request: ApiRequest,
  rt: Runtime,
  log: Runtime['log'],
): Promise<APIGatewayProxyResultV2> {
  const span = rt.tracer.start(`${request.method} ${request.path}`, {
    kind: 'server',
    parent: parseTraceparent(request.headers.traceparent),
    attributes: { 'http.request.method': request.method, 'url.path': request.path, 'dq.request_id': request.requestId },
  });
  const result = await run(route, { ...request, trace: span.context }, rt, log);
  const status = typeof result === 'object' ? (result.statusCode ?? 200) : 200;
  span.setAttributes({ 'http.response.status_code': status });
  span.end(status >= 500 ? `HTTP ${status}` : undefined);
  await rt.tracer.flush();
  return result;
}

/**
 * The answer to a route's failure: an HttpError as it is, a Redis outage as 503 UNAVAILABLE, anything else as 500
 * (logged with its stack).
 */
function failed(error: unknown, log: Runtime['log'], requestId: string): APIGatewayProxyResultV2 {
  if (error instanceof HttpError && error.expose) {
    log.warn('request refused', { status: error.status, code: error.code });
    const retryAfter: Record<string, string> =
      error.retryAfterSeconds === undefined ? {} : { 'retry-after': String(error.retryAfterSeconds) };
    return respond(error.status, errorBody(error), { ...retryAfter, ...jobHeaders(refusedJob(error)) });
  }
  if (isUnavailable(error)) {
    log.error('redis unavailable', { status: 503, error });
    return respond(
      503,
      { error: { code: 'UNAVAILABLE', message: 'the queue store is unavailable; retry shortly' } },
      { 'retry-after': '1' },
    );
  }
  log.error('request failed', { status: 500, error });
  return respond(500, { error: { code: 'INTERNAL', message: `internal error (request ${requestId})` } });
}

/** Sets the scope `routes` need (a route without one needs admin). */
export function needs(scope: Scope, ...routes: Route[]): void {
  for (const route of routes) route.scope = scope;
}

/** The clock validation bounds runAt with: the engine's fixed test clock, else this machine's. */
export function clientNow(engine: Engine): number {
  return engine.fixedNow() ?? Date.now();
}
