/**
 * Validation of flow control per key at the edge: a job's and a schedule's `key` (only on a flow
 * topic), a flow key's path, and the body of PUT /topics/{topic}/flows/{key}. Every problem is reported at once,
 * each with its path.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveQueueConfig } from '../../lib/core/queue-config';
import {
  HttpError,
  checkFlowRef,
  requireFlowTopic,
  validateFlowChange,
  validateJob,
  validateSchedule,
} from '../../lib/testing';

const config = resolveQueueConfig({
  topics: { orders: {}, partner: { flow: { concurrency: 2, rate: { count: 10, per: 1 } } }, open: { flow: {} } },
  partitions: 4,
});
const NOW = Date.UTC(2030, 0, 1);

/** The code, status and detail paths of the HttpError `run` throws. */
function refusal(run: () => unknown): [number, string, string[]] {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof HttpError, String(error));
    return [error.status, error.code, ((error.details ?? []) as { path: string }[]).map((d) => d.path).sort()];
  }
  assert.fail('expected a refusal');
}

/** The HttpError `run` throws (fails the test when it throws none). */
function refused(run: () => unknown): HttpError {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof HttpError, String(error));
    return error;
  }
  assert.fail('expected a refusal');
}

describe('a job’s flow key', () => {
  it('is taken on a flow topic, with the rules of an id, and passed on; left out, the job has none', () => {
    const job = validateJob({ topic: 'partner', id: 'p-1', delay: 0, key: 'acme:eu-1' }, config, NOW);
    assert.equal(job.key, 'acme:eu-1');
    assert.equal('key' in validateJob({ topic: 'partner', delay: 0 }, config, NOW), false);
    assert.equal(validateJob({ topic: 'open', delay: 0, key: 'k' }, config, NOW).key, 'k', 'flow: {} takes keys');
  });

  it('every job of a flow topic goes to the topic’s one partition', () => {
    const partitions = new Set(
      Array.from(
        { length: 40 },
        (_, i) => validateJob({ topic: 'partner', id: `j-${i}`, delay: 0, key: `k-${i % 3}` }, config, NOW).partition,
      ),
    );
    assert.equal(partitions.size, 1);
  });

  it('is refused on a topic without flow, naming key and what to set; malformed, naming key; beside other problems', () => {
    const noFlow = refused(() => validateJob({ topic: 'orders', delay: 0, key: 'acme' }, config, NOW));
    assert.deepEqual([noFlow.status, noFlow.code], [400, 'VALIDATION_FAILED']);
    const [detail] = noFlow.details as { path: string; message: string }[];
    assert.equal(detail!.path, 'key');
    assert.match(detail!.message, /no flow control.*flow.*serverless\.yml custom\.queue\.topics/);
    for (const key of ['has space', '', 'x'.repeat(129), 7, null])
      assert.deepEqual(
        refusal(() => validateJob({ topic: 'partner', delay: 0, key }, config, NOW)),
        [400, 'VALIDATION_FAILED', ['key']],
        JSON.stringify(key),
      );
    assert.deepEqual(
      refusal(() => validateJob({ topic: 'orders', delay: -1, key: 'acme' }, config, NOW)),
      [400, 'VALIDATION_FAILED', ['delay', 'key']],
    );
    assert.deepEqual(
      refusal(() => validateJob({ topic: 'nope', delay: 0, key: 'acme' }, config, NOW)),
      [400, 'UNKNOWN_TOPIC', []],
      'an unknown topic is UNKNOWN_TOPIC, not a key problem',
    );
  });
});

describe('a schedule’s flow key', () => {
  it('is taken on a flow topic, with the rules of an id, and passed on; left out, the schedule has none', () => {
    const s = validateSchedule('partner', 'sync', { every: 60, key: 'acme:eu-1' }, config, NOW);
    assert.equal(s.key, 'acme:eu-1');
    assert.equal(
      s.partition,
      validateJob({ topic: 'partner', delay: 0 }, config, NOW).partition,
      'in the flow topic’s one partition',
    );
    assert.equal('key' in validateSchedule('partner', 'sync', { every: 60 }, config, NOW), false);
  });

  it('is refused as a job’s is: on a topic without flow naming key and what to set; malformed naming key; beside other problems', () => {
    const noFlow = refused(() => validateSchedule('orders', 'nightly', { every: 60, key: 'acme' }, config, NOW));
    assert.deepEqual([noFlow.status, noFlow.code], [400, 'VALIDATION_FAILED']);
    const [detail] = noFlow.details as { path: string; message: string }[];
    assert.equal(detail!.path, 'key');
    assert.match(
      detail!.message,
      /topic orders has no flow control, so its schedules take no key: set flow for it in serverless\.yml custom\.queue\.topics/,
    );
    for (const key of ['has space', '', 'x'.repeat(129), 7, null])
      assert.deepEqual(
        refusal(() => validateSchedule('partner', 'sync', { every: 60, key }, config, NOW)),
        [400, 'VALIDATION_FAILED', ['key']],
        JSON.stringify(key),
      );
    assert.deepEqual(
      refusal(() => validateSchedule('orders', 'nightly', { every: 0, key: 'acme' }, config, NOW)),
      [400, 'VALIDATION_FAILED', ['every', 'key']],
    );
    assert.deepEqual(
      refusal(() => validateSchedule('nope', 'nightly', { every: 60, key: 'acme' }, config, NOW)),
      [400, 'UNKNOWN_TOPIC', []],
      'an unknown topic is UNKNOWN_TOPIC, not a key problem',
    );
  });
});

describe('a flow key’s path and its change', () => {
  it('the path: a topic and a key with the rules of an id; the topic configured, with flow', () => {
    checkFlowRef('partner', 'acme:eu-1');
    assert.deepEqual(
      refusal(() => checkFlowRef('partner', 'has space')),
      [400, 'VALIDATION_FAILED', ['key']],
    );
    assert.deepEqual(
      refusal(() => checkFlowRef('a b', 'x'.repeat(129))),
      [400, 'VALIDATION_FAILED', ['key', 'topic']],
    );
    assert.equal(requireFlowTopic(config, 'partner').name, 'partner');
    assert.deepEqual(
      refusal(() => requireFlowTopic(config, 'orders')),
      [400, 'VALIDATION_FAILED', ['topic']],
    );
    assert.deepEqual(
      refusal(() => requireFlowTopic(config, 'nope')),
      [400, 'UNKNOWN_TOPIC', []],
    );
  });

  it('a change: concurrency, rate ({ count, per in seconds or a duration, burst }) and paused, each optional, null for the default', () => {
    assert.deepEqual(validateFlowChange({ concurrency: 1, rate: { count: 5, per: 2, burst: 2 }, paused: true }), {
      concurrency: 1,
      rate: { count: 5, perMs: 2000, burst: 2 },
      paused: true,
    });
    assert.deepEqual(
      validateFlowChange({ rate: { count: 3 } }),
      { rate: { count: 3, perMs: 1000, burst: 1 } },
      'per 1 s and burst 1 by default',
    );
    assert.deepEqual(validateFlowChange({ rate: { count: 1, per: '1m' } }), {
      rate: { count: 1, perMs: 60_000, burst: 1 },
    });
    assert.deepEqual(validateFlowChange({ rate: { count: 1, per: 0.001 } }), {
      rate: { count: 1, perMs: 1, burst: 1 },
    });
    assert.deepEqual(validateFlowChange({ concurrency: null, rate: null }), { concurrency: null, rate: null });
    assert.deepEqual(validateFlowChange({ paused: false }), { paused: false });
    assert.deepEqual(
      validateFlowChange({ concurrency: 10_000, rate: { count: 1_000_000, per: 86_400, burst: 1_000_000 } }),
      { concurrency: 10_000, rate: { count: 1_000_000, perMs: 86_400_000, burst: 1_000_000 } },
    );
  });

  it('a change is refused whole, every bad field named', () => {
    const bad = (body: unknown) => refusal(() => validateFlowChange(body));
    assert.deepEqual(bad({ concurrency: 0, rate: { count: 2, burst: 3, extra: 1 }, paused: 'yes', other: 1 }), [
      400,
      'VALIDATION_FAILED',
      ['concurrency', 'other', 'paused', 'rate.burst', 'rate.extra'],
    ]);
    assert.deepEqual(bad({ concurrency: 10_001 }), [400, 'VALIDATION_FAILED', ['concurrency']]);
    assert.deepEqual(bad({ concurrency: 1.5 }), [400, 'VALIDATION_FAILED', ['concurrency']]);
    assert.deepEqual(bad({ rate: { count: 0, per: 0 } }), [400, 'VALIDATION_FAILED', ['rate.count', 'rate.per']]);
    assert.deepEqual(bad({ rate: { count: 1_000_001, per: 86_401 } }), [
      400,
      'VALIDATION_FAILED',
      ['rate.count', 'rate.per'],
    ]);
    assert.deepEqual(bad({ rate: { per: 1 } }), [400, 'VALIDATION_FAILED', ['rate.count']]);
    assert.deepEqual(bad({ rate: { count: 1, burst: 0 } }), [400, 'VALIDATION_FAILED', ['rate.burst']]);
    assert.deepEqual(bad({ rate: 5 }), [400, 'VALIDATION_FAILED', ['rate']]);
    assert.deepEqual(bad({}), [400, 'VALIDATION_FAILED', ['']]);
    assert.deepEqual(bad([1]), [400, 'VALIDATION_FAILED', ['']]);
    assert.deepEqual(bad(null), [400, 'VALIDATION_FAILED', ['']]);
  });
});
