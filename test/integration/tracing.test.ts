/**
 * Traces end to end against a real redis-server and a local OTLP/HTTP receiver that decodes what the
 * tracer sends: a job added through POST /jobs (httpRoute, with an incoming traceparent), failed
 * once by its handler and then done, shows as one add span (a server span continuing the caller's
 * trace) and two attempt spans, children of the add span, with topic, id, attempt, lateness and
 * outcome; the handler's function gets each attempt's traceparent, and the fan-out's claim span
 * links the job. The trace context rides in the job's record: no Redis call more than without it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { httpRoute } from '../../lib/api/http';
import { addJob, putSchedule } from '../../lib/api/routes';
import { toWire, runFanout } from '../../lib/workers/fanout';
import type { Runtime } from '../../lib/platform/runtime';
import { formatTraceparent, parseTraceparent } from '../../lib/platform/tracing';
import { topicHandler } from '../../lib/workers/handler';
import { startRedis, type RedisProcess } from '../support/redis';
import { testRuntime } from '../support/runtime';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp';

const TOPIC = 'traced';
const CALLER = '0af7651916cd43dd8448eb211c80319c';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- OTLP JSON spans as the receiver decoded them
type OtlpSpan = any;

describe('traces: add, a failed attempt and its retry in one trace (real redis-server, OTLP receiver)', () => {
  let server: RedisProcess;
  let receiver: OtlpReceiver;
  let rt: Runtime;
  const spans = (): OtlpSpan[] => receiver.spans();

  before(async () => {
    receiver = await startOtlpReceiver();
    server = await startRedis();
    rt = testRuntime(
      server.url,
      { [TOPIC]: { handler: 'h', ttr: 30, maxAttempts: 3, backoff: { type: 'fixed', delay: 0 } } },
      { DQ_OTLP_ENDPOINT: receiver.url },
    );
  });
  after(async () => {
    rt?.redis.disconnect();
    await server?.stop();
    await receiver?.close();
  });

  /** Sweeps until a job of TOPIC is ready, then claims it as the fan-out does (with its claim span). */
  async function claimOne() {
    for (;;) {
      await rt.engine.sweep();
      const claimed = await rt.engine.claim(TOPIC, 1);
      if (claimed.length > 0) return claimed;
    }
  }

  it('shows the add and both attempts, with parents and attributes', async () => {
    const event = {
      rawPath: '/jobs',
      routeKey: 'POST /jobs',
      headers: { authorization: 'Bearer t', traceparent: `00-${CALLER}-b7ad6b7169203331-01` },
      requestContext: { http: { method: 'POST' } },
      body: JSON.stringify({ topic: TOPIC, id: 'j1', delay: 0, body: { n: 1 } }),
    } as unknown as APIGatewayProxyEventV2;
    const answer = (await httpRoute(addJob, () => rt)(event, { awsRequestId: 'req-1' })) as { statusCode: number };
    assert.equal(answer.statusCode, 201);

    const seen: (string | undefined)[] = [];
    let calls = 0;
    const handler = topicHandler(
      async (_job, context) => {
        seen.push(context.traceparent);
        calls += 1;
        if (calls === 1) throw new Error('first attempt fails');
      },
      () => rt,
    );
    const context = { awsRequestId: 'h', getRemainingTimeInMillis: () => 0 };
    for (let attempt = 1; attempt <= 2; attempt++)
      await handler({ topic: TOPIC, jobs: (await claimOne()).map(toWire), more: false }, context);
    const done = await rt.engine.get(TOPIC, 'j1');
    assert.equal(done?.state, 'done');
    assert.equal(done?.traceId, CALLER, 'GET shows the trace of its attempts');

    const add = spans().find((s) => s.kind === 2);
    const runs = spans().filter((s) => s.name === `run ${TOPIC}`);
    assert.ok(add, `an add span: ${JSON.stringify(spans().map((s) => s.name))}`);
    assert.equal(add.traceId, CALLER, 'the add continues the caller trace');
    assert.equal(add.parentSpanId, 'b7ad6b7169203331');
    assert.equal(runs.length, 2);
    const attr = (s: OtlpSpan, key: string) => {
      const v = s.attributes.find((a: { key: string }) => a.key === key)?.value;
      return v?.stringValue ?? (v?.intValue !== undefined ? Number(v.intValue) : v?.boolValue);
    };
    for (const [i, run] of runs.entries()) {
      assert.equal(run.traceId, CALLER, 'each attempt is in the add trace');
      assert.equal(run.parentSpanId, add.spanId, 'a child of the add span');
      assert.equal(run.kind, 5);
      assert.equal(attr(run, 'dq.topic'), TOPIC);
      assert.equal(attr(run, 'dq.job.id'), 'j1');
      assert.equal(attr(run, 'dq.attempt'), i + 1);
      assert.equal(typeof attr(run, 'dq.lateness_ms'), 'number');
      assert.deepEqual(parseTraceparent(seen[i]), { traceId: CALLER, spanId: run.spanId }, 'the function got it');
    }
    assert.equal(attr(runs[0], 'dq.outcome'), 'retry');
    assert.deepEqual(runs[0].status, { code: 2, message: 'first attempt fails' });
    assert.equal(attr(runs[1], 'dq.outcome'), 'done');
    assert.equal(runs[1].status, undefined);
  });

  it("a schedule's occurrence is a trace of its own, linked to the schedule's put; it keeps the schedule's priority", async () => {
    const put = {
      rawPath: `/schedules/${TOPIC}/every-second`,
      routeKey: 'PUT /schedules/{topic}/{id}',
      headers: {
        authorization: 'Bearer t',
        traceparent: formatTraceparent({ traceId: 'e'.repeat(32), spanId: 'f'.repeat(16) }),
      },
      requestContext: { http: { method: 'PUT' } },
      pathParameters: { topic: TOPIC, id: 'every-second' },
      body: JSON.stringify({ every: 1, priority: 4, body: { tick: true } }),
    } as unknown as APIGatewayProxyEventV2;
    const answer = (await httpRoute(putSchedule, () => rt)(put, { awsRequestId: 'req-s' })) as {
      statusCode: number;
      body: string;
    };
    assert.equal(answer.statusCode, 201, answer.body);
    assert.equal(JSON.parse(answer.body).schedule.priority, 4);
    const putSpan = spans().find((s) => s.traceId === 'e'.repeat(32) && s.kind === 2);
    const before = spans().length;
    const handler = topicHandler(
      async () => {},
      () => rt,
    );
    const [occurrence] = await claimOne();
    assert.match(occurrence!.id, /^every-second:/);
    const job = await rt.engine.get(TOPIC, occurrence!.id);
    assert.equal(job?.priority, 4, 'the occurrence has the schedule priority');
    assert.equal(job?.traceId, 'e'.repeat(32), "its traceId names the put's trace, which its attempts link to");
    await handler(
      { topic: TOPIC, jobs: [toWire(occurrence!)], more: false },
      { awsRequestId: 'h2', getRemainingTimeInMillis: () => 0 },
    );
    const run = spans()
      .slice(before)
      .find((s) => s.name === `run ${TOPIC}`);
    assert.ok(run, 'an attempt span');
    assert.notEqual(run.traceId, 'e'.repeat(32), 'a trace of its own');
    assert.equal(run.parentSpanId, undefined, 'the root of its trace');
    assert.deepEqual(run.links, [{ traceId: 'e'.repeat(32), spanId: putSpan.spanId }], 'linked to the put');
    await rt.engine.deleteSchedule(TOPIC, 'every-second');
  });

  it("a fan-out's claim is a span linked to the jobs it claimed", async () => {
    const traceparent = formatTraceparent({ traceId: 'c'.repeat(32), spanId: 'd'.repeat(16) });
    const event = {
      rawPath: '/jobs',
      routeKey: 'POST /jobs',
      headers: { authorization: 'Bearer t', traceparent },
      requestContext: { http: { method: 'POST' } },
      body: JSON.stringify({ topic: TOPIC, id: 'j2', delay: 0 }),
    } as unknown as APIGatewayProxyEventV2;
    await httpRoute(addJob, () => rt)(event, { awsRequestId: 'req-2' });
    const add = spans().find((s) => s.traceId === 'c'.repeat(32) && s.kind === 2);
    await rt.engine.sweep();
    const invoked: unknown[] = [];
    await runFanout({ ...rt, invoker: { invokeAsync: async (_name, payload) => void invoked.push(payload) } });
    assert.equal(invoked.length, 1);
    const claim = spans().find((s) => s.name === `claim ${TOPIC}`);
    assert.ok(claim, 'a claim span');
    assert.deepEqual(claim.links, [{ traceId: 'c'.repeat(32), spanId: add.spanId }]);
  });
});
