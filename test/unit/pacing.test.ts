import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveQueueConfig } from '../../lib/core/queue-config';
import { jitterOffsetMs } from '../../lib/core/pacing';
import { HttpError, validateJob } from '../../lib/testing';

const NOW = Date.UTC(2030, 0, 1);
const config = resolveQueueConfig({
  topics: { plain: {}, spread: { jitter: 60 }, paced: { rateLimit: { count: 1000 } } },
});

function problems(fn: () => unknown): { path: string; message: string }[] {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof HttpError, String(error));
    return error.details as { path: string; message: string }[];
  }
  return assert.fail('expected a 400');
}

describe('pacing: rateLimit in the configuration', () => {
  it('resolves count and per (seconds, default 1) to count per perMs', () => {
    assert.deepEqual(config.topics.get('paced')!.rateLimit, { count: 1000, perMs: 1000 });
    assert.deepEqual(
      resolveQueueConfig({ topics: { a: { rateLimit: { count: 5, per: 60 } } } }).topics.get('a')!.rateLimit,
      { count: 5, perMs: 60_000 },
    );
    assert.equal(config.topics.get('plain')!.rateLimit, undefined);
  });

  it('names the bad field', () => {
    const bad = (rateLimit: unknown) => () =>
      resolveQueueConfig({ topics: { a: { rateLimit: rateLimit as { count: number } } } });
    assert.throws(bad(5), /topics\.a\.rateLimit must be an object \{ count, per \}/);
    assert.throws(bad({}), /topics\.a\.rateLimit\.count is required/);
    assert.throws(bad({ count: 0 }), /topics\.a\.rateLimit\.count must be an integer from 1 to 1000000, got 0/);
    assert.throws(bad({ count: 1.5 }), /topics\.a\.rateLimit\.count must be an integer/);
    assert.throws(
      bad({ count: 10, per: 0 }),
      /topics\.a\.rateLimit\.per must be a number of seconds from 0\.1 to 86400, got 0/,
    );
    assert.throws(bad({ count: 10, per: '1' }), /topics\.a\.rateLimit\.per must be a number of seconds/);
    assert.throws(
      bad({ count: 10, every: 1 }),
      /topics\.a\.rateLimit\.every is not a rateLimit field \(fields: count, per\)/,
    );
  });

  it('takes a topic jitter in seconds, 0 by default, and names it when bad', () => {
    assert.equal(config.topics.get('spread')!.jitterMs, 60_000);
    assert.equal(config.topics.get('plain')!.jitterMs, 0);
    assert.throws(
      () => resolveQueueConfig({ topics: { a: { jitter: -1 } } }),
      /topics\.a\.jitter must be a number of seconds from 0 to 86400, got -1/,
    );
  });
});

describe('pacing: jitter', () => {
  it('is FNV-1a of topic:id modulo the jitter: deterministic, in [0, jitter), 0 without one', () => {
    assert.equal(jitterOffsetMs('t', 'a', 0), 0);
    assert.equal(jitterOffsetMs('orders', 'order-1', 10_000), jitterOffsetMs('orders', 'order-1', 10_000));
    const offsets = Array.from({ length: 5000 }, (_, i) => jitterOffsetMs('orders', `id-${i}`, 10_000));
    assert.ok(
      offsets.every((o) => Number.isInteger(o) && o >= 0 && o < 10_000),
      'every offset in range',
    );
    const tenths = new Array<number>(10).fill(0);
    for (const o of offsets) tenths[Math.floor(o / 1000)]! += 1;
    assert.ok(
      tenths.every((n) => n > 400 && n < 600),
      `spread evenly: ${tenths.join(' ')}`,
    );
    const ids = ['a', 'b', 'c', 'd'];
    assert.notDeepEqual(
      ids.map((id) => jitterOffsetMs('orders', id, 10_000)),
      ids.map((id) => jitterOffsetMs('invoices', id, 10_000)),
      'the topic is part of the hash',
    );
  });

  it("moves a job's run time by its own jitter, else its topic's; the same on every add", () => {
    const runAt = NOW + 60_000;
    const job = (input: Record<string, unknown>) =>
      validateJob({ id: 'j-1', body: null, runAt, ...input }, config, NOW);
    assert.deepEqual(job({ topic: 'plain' }).when, { kind: 'a', ms: runAt });
    const own = job({ topic: 'plain', jitter: 30 }).when;
    assert.deepEqual(own, { kind: 'a', ms: runAt + jitterOffsetMs('plain', 'j-1', 30_000) });
    assert.deepEqual(job({ topic: 'plain', jitter: 30 }).when, own, 'a retried add computes the same run time');
    assert.deepEqual(job({ topic: 'spread' }).when, { kind: 'a', ms: runAt + jitterOffsetMs('spread', 'j-1', 60_000) });
    assert.deepEqual(
      job({ topic: 'spread', jitter: 0 }).when,
      { kind: 'a', ms: runAt },
      "a job's jitter 0 overrides its topic's",
    );
    const delayed = validateJob({ topic: 'plain', id: 'j-2', body: null, delay: 5, jitter: 2 }, config, NOW).when;
    assert.deepEqual(delayed, { kind: 'd', ms: 5000 + jitterOffsetMs('plain', 'j-2', 2000) });
  });

  it('names jitter when it is bad, with the other problems', () => {
    for (const jitter of [-1, 'soon', 86_401, Number.NaN]) {
      const found = problems(() => validateJob({ topic: 'plain', body: null, delay: -1, jitter }, config, NOW));
      assert.deepEqual(found.map((p) => p.path).sort(), ['delay', 'jitter']);
      assert.equal(
        found.find((p) => p.path === 'jitter')!.message,
        'must be a number of seconds from 0 to 86400, or a duration like "10m" (ms, s, m, h, d)',
      );
    }
  });
});
