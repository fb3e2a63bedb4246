import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveQueueConfig } from '../../lib/config';

describe('queue configuration', () => {
  it('fills in defaults', () => {
    const c = resolveQueueConfig({ topics: { orders: {} } });
    assert.equal(c.partitions, 1);
    assert.equal(c.maxBodyBytes, 65536);
    assert.equal(c.maxDelayMs, 365 * 86_400_000);
    assert.equal(c.retentionMs, 86_400_000);
    assert.equal(c.moveLimit, 1000);
    assert.deepEqual(c.topics.get('orders'), { name: 'orders', maxAttempts: 5, backoff: 'e:5000:3600000:200', ttrMs: 30_000, batchSize: 1, concurrency: 10, kind: 'function' });
  });

  it('names the bad field', () => {
    assert.throws(() => resolveQueueConfig({ topics: {} }), /topics must name at least one topic/);
    assert.throws(() => resolveQueueConfig({ topics: { 'a:b': {} } }), /topic name "a:b"/);
    assert.throws(() => resolveQueueConfig({ topics: { a: { maxAttempts: 0 } } }), /topics\.a\.maxAttempts/);
    assert.throws(() => resolveQueueConfig({ topics: { a: { backoff: 'soon' } } }), /topics\.a\.backoff/);
    assert.throws(() => resolveQueueConfig({ topics: { a: {} }, partitions: 0 }), /partitions/);
    assert.throws(() => resolveQueueConfig({ topics: { a: {} }, moveLimit: 10_000 }), /moveLimit/);
  });
});
