/**
 * How many modules POST /jobs passes through, from functions/addJob.ts to its Lua script: the
 * stack at the moment the addJobs script call is sent, read from a real request against a real
 * redis-server. The answer returns along the same frames. DESIGN.md states the budget: at most 5
 * modules, none entered twice.
 */
import assert from 'node:assert/strict';
import { Session } from 'node:inspector/promises';
import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { httpRoute } from '../../lib/api/http';
import { addJob } from '../../lib/api/routes';
import { useRedisServer } from '../support/redis';
import { testRuntime } from '../support/runtime';
import { scriptLibrary } from '../../lib/testing';

const ROOT = resolve(__dirname, '../..');

/** The project modules of a stack, innermost last, consecutive frames of one module merged. */
function modulesOf(stack: string): string[] {
  const files = stack
    .split('\n')
    .slice(1)
    .flatMap((line) => {
      const m = /\(?((?:\/|file:\/\/)[^():]+\.ts):\d+:\d+\)?$/.exec(line.trim());
      return m ? [relative(ROOT, m[1]!.replace(/^file:\/\//, ''))] : [];
    })
    .filter((f) => f.startsWith('lib/') || f.startsWith('functions/'))
    .reverse();
  return files.filter((f, i) => f !== files[i - 1]);
}

describe('POST /jobs: the modules on the way to the script (real redis-server)', () => {
  const redis = useRedisServer();

  it('passes through at most 5 modules, none twice', async () => {
    const rt = testRuntime(redis.server().url, { example: {} });
    const stacks: string[] = [];
    const client = rt.redis as unknown as {
      pipeline: (...args: unknown[]) => Record<string, (...a: unknown[]) => unknown>;
    };
    const pipeline = client.pipeline.bind(client);
    client.pipeline = (...args: unknown[]) => {
      const p = pipeline(...args);
      const send = p.fcall!;
      p.fcall = function (this: unknown, ...a: unknown[]) {
        if (a[0] === scriptLibrary().functions.addJobs) {
          const limit = Error.stackTraceLimit;
          Error.stackTraceLimit = 100;
          stacks.push(new Error('addJobs sent').stack ?? '');
          Error.stackTraceLimit = limit;
        }
        return send.apply(this, a);
      };
      return p;
    };
    try {
      const event = {
        rawPath: '/jobs',
        routeKey: 'POST /jobs',
        headers: { authorization: 'Bearer t' },
        body: JSON.stringify({ topic: 'example', id: 'path-1', delay: 60 }),
        requestContext: { http: { method: 'POST' } },
      };
      // a first add loads the function library on this fresh server (its first call is sent twice)
      const warm = { ...event, body: JSON.stringify({ topic: 'example', id: 'path-0', delay: 60 }) };
      assert.equal(
        (
          (await httpRoute(addJob, () => rt)(warm as unknown as APIGatewayProxyEventV2, {
            awsRequestId: 'w',
          })) as APIGatewayProxyStructuredResultV2
        ).statusCode,
        201,
      );
      stacks.length = 0;
      const answer = (await httpRoute(addJob, () => rt)(event as unknown as APIGatewayProxyEventV2, {
        awsRequestId: 'r',
      })) as APIGatewayProxyStructuredResultV2;
      assert.equal(answer.statusCode, 201, String(answer.body));
      assert.equal(stacks.length, 1, 'one addJobs call');
      // functions/addJob.ts is `httpRoute(addJob)`: its handler is the closure in lib/api/http.ts
      const path = ['functions/addJob.ts', ...modulesOf(stacks[0]!)];
      console.log(`POST /jobs: ${path.length} modules: ${path.join(' -> ')}`);
      assert.equal(new Set(path).size, path.length, `a module entered twice: ${path.join(' -> ')}`);
      assert.ok(path.length <= 5, `${path.length} modules: ${path.join(' -> ')}`);
      assert.ok(
        path.includes('lib/engine/script-runner.ts'),
        `the stack reaches the script runner: ${path.join(' -> ')}`,
      );
    } finally {
      rt.redis.disconnect();
    }
  });

  it('touches these modules in all (every function run during one add, by V8 precise coverage)', async () => {
    const rt = testRuntime(redis.server().url, { example: {} });
    const route = httpRoute(addJob, () => rt);
    const send = (id: string) =>
      route(
        {
          rawPath: '/jobs',
          routeKey: 'POST /jobs',
          headers: { authorization: 'Bearer t' },
          body: JSON.stringify({ topic: 'example', id, delay: 60 }),
          requestContext: { http: { method: 'POST' } },
        } as unknown as APIGatewayProxyEventV2,
        { awsRequestId: 'r' },
      );
    const session = new Session();
    session.connect();
    try {
      await send('warm'); // connects, loads the script, fills every lazy cache
      await session.post('Profiler.enable');
      await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
      const answer = (await send('counted')) as APIGatewayProxyStructuredResultV2;
      assert.equal(answer.statusCode, 201);
      const { result } = await session.post('Profiler.takePreciseCoverage');
      await session.post('Profiler.stopPreciseCoverage');
      const touched = result
        .filter(
          (s) =>
            s.url.startsWith('file://') && s.functions.some((f) => f.functionName !== '' && f.ranges[0]!.count > 0),
        )
        .map((s) => relative(ROOT, fileURLToPath(s.url)))
        .filter((f) => f.startsWith('lib/') || f.startsWith('functions/'))
        .sort();
      console.log(`POST /jobs touches ${touched.length} modules: ${touched.join(', ')}`);
      assert.ok(touched.includes('lib/engine/write.ts'), touched.join(', '));
    } finally {
      session.disconnect();
      rt.redis.disconnect();
    }
  });
});
