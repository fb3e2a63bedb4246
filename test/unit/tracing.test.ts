/**
 * The tracer (lib/platform/tracing.ts) against a local OTLP/HTTP receiver that decodes what it is
 * sent: W3C trace context in and out, spans with parents, links and attributes as OTLP JSON, one
 * export per flush, and nothing at all when tracing is off.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  createTracer,
  formatTraceparent,
  MAX_LINKS,
  NO_TRACER,
  packContext,
  parseOtlpHeaders,
  parseTraceparent,
  tracerFromEnv,
  unpackContext,
} from '../../lib/platform/tracing';
import { startOtlpReceiver, type OtlpExport, type OtlpReceiver } from '../support/otlp';

describe('tracing', () => {
  let receiver: OtlpReceiver;
  let endpoint: string;

  before(async () => {
    receiver = await startOtlpReceiver();
    endpoint = receiver.url;
  });
  after(() => receiver.close());

  it('reads and writes W3C traceparent, refusing malformed and all-zero ids', () => {
    const header = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const context = parseTraceparent(header)!;
    assert.deepEqual(context, { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' });
    assert.equal(formatTraceparent(context), header);
    for (const bad of [
      undefined,
      '',
      'x',
      '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331',
      `00-${'0'.repeat(32)}-b7ad6b7169203331-01`,
    ])
      assert.equal(parseTraceparent(bad), undefined, String(bad));
    assert.deepEqual(unpackContext(packContext(context)), context, 'a job keeps it in 32 characters');
    assert.equal(packContext(context).length, 32);
    assert.equal(unpackContext('short'), undefined);
  });

  it('off: every span is the same no-op, nothing is sent, and the environment decides', async () => {
    const a = NO_TRACER.start('a');
    assert.equal(a, NO_TRACER.start('b', { parent: a.context }), 'one shared span: nothing allocated per span');
    a.end();
    await NO_TRACER.flush();
    assert.equal(tracerFromEnv({}, 's'), NO_TRACER);
    assert.equal(tracerFromEnv({ DQ_OTLP_ENDPOINT: '' }, 's'), NO_TRACER);
    assert.throws(() => tracerFromEnv({ DQ_OTLP_ENDPOINT: 'localhost:4318' }, 's'), /DQ_OTLP_ENDPOINT must start/);
    assert.deepEqual(parseOtlpHeaders('api-key=a%20b, x=1'), { 'api-key': 'a b', x: '1' });
  });

  it('on: exports spans as OTLP/HTTP JSON to <endpoint>/v1/traces, parents, links and attributes kept', async () => {
    receiver.exports.length = 0;
    let clock = 1_700_000_000_000;
    const tracer = createTracer({
      endpoint: `${endpoint}/`,
      service: 'dq-test',
      headers: { 'x-key': 'k' },
      now: () => clock,
    });
    const root = tracer.start('POST /jobs', { kind: 'server', attributes: { 'http.request.method': 'POST' } });
    const child = tracer.start('run orders', {
      kind: 'consumer',
      parent: root.context,
      attributes: { 'dq.attempt': 2, 'dq.ok': true, 'dq.ratio': 0.5 },
    });
    clock += 25;
    child.end('boom');
    child.end(); // a second end changes nothing
    root.end();
    const links = Array.from({ length: MAX_LINKS + 5 }, (_, i) => ({
      traceId: `${i}`.padStart(32, 'a'),
      spanId: 'b'.repeat(16),
    }));
    tracer.start('claim orders', { links }).end();
    assert.equal(receiver.exports.length, 0, 'nothing sent before the flush');
    await tracer.flush();
    assert.equal(receiver.exports.length, 1, 'one export a flush');
    const [{ path, headers, body }] = receiver.exports as [OtlpExport];
    assert.equal(path, '/v1/traces');
    assert.equal(headers['content-type'], 'application/json');
    assert.equal(headers['x-key'], 'k');
    const rs = body.resourceSpans[0];
    assert.deepEqual(rs.resource.attributes, [{ key: 'service.name', value: { stringValue: 'dq-test' } }]);
    const spans = rs.scopeSpans[0].spans;
    const byName = Object.fromEntries(spans.map((s: { name: string }) => [s.name, s]));
    const run = byName['run orders'];
    const post = byName['POST /jobs'];
    assert.equal(run.traceId, post.traceId, 'one trace');
    assert.equal(run.parentSpanId, post.spanId);
    assert.equal(post.parentSpanId, undefined, 'a root');
    assert.match(post.traceId, /^[0-9a-f]{32}$/);
    assert.match(post.spanId, /^[0-9a-f]{16}$/);
    assert.deepEqual([post.kind, run.kind], [2, 5], 'server, consumer');
    assert.deepEqual(run.status, { code: 2, message: 'boom' });
    assert.equal(BigInt(run.endTimeUnixNano) - BigInt(run.startTimeUnixNano), 25_000_000n);
    assert.deepEqual(run.attributes, [
      { key: 'dq.attempt', value: { intValue: '2' } },
      { key: 'dq.ok', value: { boolValue: true } },
      { key: 'dq.ratio', value: { doubleValue: 0.5 } },
    ]);
    assert.equal(byName['claim orders'].links.length, MAX_LINKS, 'links bounded');
    await tracer.flush();
    assert.equal(receiver.exports.length, 1, 'nothing left to send');
  });

  it('a failed export is reported, never thrown', async () => {
    const errors: unknown[] = [];
    const tracer = createTracer({ endpoint: 'http://127.0.0.1:1', service: 's', onError: (e) => errors.push(e) });
    tracer.start('x').end();
    await tracer.flush();
    assert.equal(errors.length, 1);
  });
});
