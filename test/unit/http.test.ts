// httpRoute's error mapping, through its runtime seam: a fake runtime with the token, a logger
// that records lines, and a key lookup answering from a table (the deployment's key, and a read
// key limited to one topic). This tests the HTTP mapping only; the key lookup in Redis is tested
// against a real redis-server in test/integration/access.test.ts, the routes in test/e2e.
import { NO_TRACER } from '../../lib/platform/tracing';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { httpRoute, type ApiRequest, type ApiResponse, type Route } from '../../lib/api/http';
import { secretDigest, type Caller } from '../../lib/engine';
import { createLogger } from '../../lib/platform/log';
import type { Runtime } from '../../lib/platform/runtime';
import { HttpError } from '../../lib/testing';

const TOKEN = 'unit-token';

const READER = 'unit-reader-secret';
const KEYS = new Map<string, Caller>([[secretDigest(READER), { name: 'reader', scope: 'read', topics: ['orders'] }]]);

function fakeRuntime(lines: string[]): () => Runtime {
  const authKey = async (sha: string, deploymentSha: string): Promise<Caller | null> =>
    sha === deploymentSha ? { name: 'deployment', scope: 'admin', topics: null } : (KEYS.get(sha) ?? null);
  const rt = {
    config: { apiToken: TOKEN },
    engine: { authKey },
    log: createLogger('test', {}, 'debug', (line) => lines.push(line)),
    tracer: NO_TRACER,
  } as unknown as Runtime;
  return () => rt;
}

function event(
  options: {
    token?: string | null;
    body?: string;
    base64?: boolean;
    headers?: Record<string, string>;
    params?: Record<string, string>;
  } = {},
): APIGatewayProxyEventV2 {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== null) headers.Authorization = `Bearer ${options.token ?? TOKEN}`;
  return {
    rawPath: '/jobs',
    routeKey: 'POST /jobs',
    headers,
    requestContext: { http: { method: 'POST' } },
    ...(options.params ? { pathParameters: options.params } : {}),
    ...(options.body !== undefined ? { body: options.body, isBase64Encoded: options.base64 ?? false } : {}),
  } as unknown as APIGatewayProxyEventV2;
}

async function call(route: Route, ev: APIGatewayProxyEventV2, lines: string[] = []) {
  const result = (await httpRoute(route, fakeRuntime(lines))(ev, {
    awsRequestId: 'req-1',
  })) as APIGatewayProxyStructuredResultV2;
  return {
    status: result.statusCode,
    headers: result.headers ?? {},
    text: String(result.body),
    body: JSON.parse(String(result.body)) as { error?: { code: string; message: string } },
  };
}

const echo = async (req: ApiRequest): Promise<ApiResponse> => ({ status: 200, body: { got: req.json() } });

describe('httpRoute maps failures to HTTP answers', () => {
  it('200 with the route body for a good request', async () => {
    const res = await call(echo, event({ body: '{"a":1}' }));
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { got: { a: 1 } });
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
  });

  it('401 UNAUTHORIZED with WWW-Authenticate, without running the route, for no token or a wrong one', async () => {
    let ran = 0;
    const route = async () => ((ran += 1), { status: 200, body: {} });
    for (const token of [null, 'wrong-token', '']) {
      const res = await call(route, event({ token, body: '{}' }));
      assert.equal(res.status, 401, `token ${JSON.stringify(token)}`);
      assert.equal(res.body.error?.code, 'UNAUTHORIZED');
      assert.equal(res.headers['www-authenticate'], 'Bearer');
    }
    assert.equal(ran, 0);
  });

  it("403 FORBIDDEN naming the scope for a key below the route's, or the topic for a topic it is not limited to, without running the route", async () => {
    let ran = 0;
    const route: Route = async (req) => ((ran += 1), { status: 200, body: { key: req.caller.name } });
    route.scope = 'write';
    const low = await call(route, event({ token: READER }));
    assert.deepEqual([low.status, low.body.error?.code], [403, 'FORBIDDEN']);
    assert.match(low.body.error!.message, /key reader has scope read; this needs scope write/);
    route.scope = 'read';
    const other = await call(route, event({ token: READER, params: { topic: 'emails' } }));
    assert.deepEqual([other.status, other.body.error?.code], [403, 'FORBIDDEN']);
    assert.match(other.body.error!.message, /may not use topic emails/);
    assert.equal(ran, 0);
    const mine = await call(route, event({ token: READER, params: { topic: 'orders' } }));
    assert.deepEqual([mine.status, mine.body], [200, { key: 'reader' }]);
    const unscoped = await call(async () => ({ status: 200, body: {} }), event({ token: READER }));
    assert.equal(unscoped.status, 403, 'a route that names no scope needs admin');
  });

  it('the request log line names the key', async () => {
    const lines: string[] = [];
    const route: Route = async () => ({ status: 200, body: {} });
    route.scope = 'read';
    await call(route, event({ token: READER, params: { topic: 'orders' } }), lines);
    const logged = lines
      .map((l) => JSON.parse(l) as { message: string; key?: string })
      .find((l) => l.message === 'request');
    assert.equal(logged?.key, 'reader');
  });

  it('413 PAYLOAD_TOO_LARGE for a body over 6 MiB, also when base64-encoded', async () => {
    const big = JSON.stringify({ pad: 'x'.repeat(6 * 1024 * 1024) });
    assert.equal((await call(echo, event({ body: big }))).status, 413);
    const res = await call(echo, event({ body: Buffer.from(big).toString('base64'), base64: true }));
    assert.equal(res.status, 413);
    assert.equal(res.body.error?.code, 'PAYLOAD_TOO_LARGE');
  });

  it('400 INVALID_JSON for a malformed or empty body', async () => {
    for (const body of ['{"a":', 'not json', '   ']) {
      const res = await call(echo, event({ body }));
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error?.code, 'INVALID_JSON');
    }
  });

  it('an HttpError below 500 keeps its status, code and message', async () => {
    const res = await call(async () => {
      throw new HttpError(409, 'JOB_EXISTS', 'job x exists');
    }, event());
    assert.deepEqual([res.status, res.body.error?.code, res.body.error?.message], [409, 'JOB_EXISTS', 'job x exists']);
  });

  it('503 UNAVAILABLE with Retry-After when Redis cannot be reached', async () => {
    for (const error of [
      new Error('connect ECONNREFUSED 127.0.0.1:6379'),
      Object.assign(new Error('Reached the max retries per request limit'), { name: 'MaxRetriesPerRequestError' }),
      new Error('READONLY You cannot write against a read only replica.'),
    ]) {
      const lines: string[] = [];
      const res = await call(
        async () => {
          throw error;
        },
        event(),
        lines,
      );
      assert.equal(res.status, 503, error.message);
      assert.equal(res.body.error?.code, 'UNAVAILABLE');
      assert.equal(res.headers['retry-after'], '1');
      assert.ok(
        lines.some((l) => l.includes('redis unavailable')),
        'logged',
      );
    }
  });

  it('the route sees the request headers under lower-cased names', async () => {
    let seen: Record<string, string> = {};
    const route = async (req: ApiRequest): Promise<ApiResponse> => ((seen = req.headers), { status: 200, body: {} });
    await call(route, event({ headers: { 'If-Match': '"3"', 'X-Trace-ID': 'abc' } }));
    assert.equal(seen['if-match'], '"3"');
    assert.equal(seen['x-trace-id'], 'abc');
    assert.ok(
      Object.keys(seen).every((k) => k === k.toLowerCase()),
      Object.keys(seen).join(', '),
    );
  });

  it('a refusal about one job carries it at the top level, with ETag "<version>"; none when the job is null', async () => {
    const job = { topic: 'example', id: 'j1', version: 7 };
    const conflict = await call(async () => {
      throw new HttpError(412, 'VERSION_MISMATCH', 'job example/j1 is at version 7', { job });
    }, event());
    assert.deepEqual(
      [conflict.status, conflict.body, conflict.headers.etag],
      [412, { error: { code: 'VERSION_MISMATCH', message: 'job example/j1 is at version 7' }, job }, '"7"'],
    );
    const gone = await call(async () => {
      throw new HttpError(412, 'VERSION_MISMATCH', 'job example/j1 does not exist', { job: null });
    }, event());
    assert.deepEqual(
      [gone.status, gone.body, gone.headers.etag],
      [412, { error: { code: 'VERSION_MISMATCH', message: 'job example/j1 does not exist' }, job: null }, undefined],
    );
    const invalid = await call(async () => {
      throw new HttpError(400, 'VALIDATION_FAILED', 'bad', [{ path: 'If-Match', message: 'must be a quoted version' }]);
    }, event());
    assert.equal(invalid.headers.etag, undefined);
  });

  it('500 INTERNAL with the request id and nothing of the error, which is logged with its stack', async () => {
    const lines: string[] = [];
    const res = await call(
      async () => {
        throw new TypeError('secret-detail: cannot read properties of undefined');
      },
      event(),
      lines,
    );
    assert.equal(res.status, 500);
    assert.deepEqual(res.body, { error: { code: 'INTERNAL', message: 'internal error (request req-1)' } });
    assert.ok(
      !res.text.includes('secret-detail') && !res.text.includes('TypeError') && !res.text.includes('at '),
      res.text,
    );
    const logged = lines.find((l) => l.includes('request failed'));
    assert.ok(logged?.includes('secret-detail') && logged.includes('"stack"'), 'the log keeps the error and its stack');
  });

  it('500 INTERNAL without internals when an HttpError is 5xx or the runtime cannot be built', async () => {
    const res = await call(async () => {
      throw new HttpError(500, 'INTERNAL', 'secret-detail');
    }, event());
    assert.equal(res.status, 500);
    assert.ok(!res.text.includes('secret-detail'));
    const broken = httpRoute(echo, () => {
      throw new Error('environment variable REDIS_URL is required');
    });
    const original = console.error;
    console.error = () => undefined; // the configuration error is logged there
    try {
      const out = (await broken(event(), { awsRequestId: 'req-2' })) as APIGatewayProxyStructuredResultV2;
      assert.equal(out.statusCode, 500);
      assert.ok(!String(out.body).includes('REDIS_URL'));
    } finally {
      console.error = original;
    }
  });
});

describe('httpRoute with auth iam (API Gateway checked the SigV4 signature and the policy)', () => {
  function iamRuntime(lines: string[]): () => Runtime {
    const authKey = async (): Promise<Caller | null> => assert.fail('auth iam never looks a key up');
    const rt = {
      config: { apiToken: TOKEN, auth: 'iam' },
      engine: { authKey },
      log: createLogger('test', {}, 'debug', (line) => lines.push(line)),
      tracer: NO_TRACER,
    } as unknown as Runtime;
    return () => rt;
  }
  function iamEvent(iam: Record<string, unknown> | undefined, params?: Record<string, string>): APIGatewayProxyEventV2 {
    const ev = event({ token: TOKEN, body: '{}', ...(params ? { params } : {}) }) as unknown as {
      requestContext: Record<string, unknown>;
    };
    if (iam) ev.requestContext.authorizer = { iam };
    return ev as unknown as APIGatewayProxyEventV2;
  }
  const whoami: Route = Object.assign(
    async (req: ApiRequest): Promise<ApiResponse> => ({ status: 200, body: req.caller }),
    { scope: 'admin' as const },
  );

  it('takes the caller from requestContext.authorizer.iam: the signer, admin on every topic', async () => {
    const lines: string[] = [];
    const result = (await httpRoute(whoami, iamRuntime(lines))(
      iamEvent(
        {
          userArn: 'arn:aws:sts::123456789012:assumed-role/deployer/ci-run-7',
          callerId: 'AROAEXAMPLE:ci-run-7',
          accountId: '123456789012',
        },
        { topic: 'orders' },
      ),
      {
        awsRequestId: 'req-1',
      },
    )) as APIGatewayProxyStructuredResultV2;
    assert.equal(result.statusCode, 200);
    assert.deepEqual(JSON.parse(String(result.body)), { name: 'deployer:ci-run-7', scope: 'admin', topics: null });
    assert.ok(
      lines.some((l) => l.includes('"key":"deployer:ci-run-7"')),
      'the request log names the signer',
    );
  });

  it('401 without IAM context (the bearer token is not looked at), without running the route', async () => {
    let ran = 0;
    const route = async () => ((ran += 1), { status: 200, body: {} });
    for (const iam of [undefined, {}, { userArn: '', callerId: '' }]) {
      const result = (await httpRoute(route, iamRuntime([]))(iamEvent(iam), {
        awsRequestId: 'req-1',
      })) as APIGatewayProxyStructuredResultV2;
      assert.equal(result.statusCode, 401, JSON.stringify(iam));
      assert.equal((JSON.parse(String(result.body)) as { error: { code: string } }).error.code, 'UNAUTHORIZED');
    }
    assert.equal(ran, 0);
  });
});
