import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEFAULT_TIMINGS,
  loadConfig,
  loadDurability,
  loadTimings,
  resolveQueueConfig,
} from '../../lib/core/queue-config';

describe('queue configuration', () => {
  it('fills in defaults', () => {
    const c = resolveQueueConfig({ topics: { orders: {} } });
    assert.equal(c.partitions, 1);
    assert.equal(c.maxBodyBytes, 65536);
    assert.equal(c.maxDelayMs, 365 * 86_400_000);
    assert.equal(c.retentionMs, 86_400_000);
    assert.equal(c.moveLimit, 1000);
    assert.deepEqual(c.topics.get('orders'), {
      name: 'orders',
      maxAttempts: 5,
      backoff: 'e:5000:3600000:200',
      ttrMs: 30_000,
      batchSize: 1,
      concurrency: 10,
      kind: 'function',
      maxTtrMs: 86_400_000,
      jitterMs: 0,
      priority: 0,
      dedupeWindowMs: 3_600_000,
    });
  });

  it('names the bad field', () => {
    assert.throws(() => resolveQueueConfig({ topics: {} }), /topics must name at least one topic/);
    assert.throws(() => resolveQueueConfig({ topics: { 'a:b': {} } }), /topic name "a:b"/);
    assert.throws(() => resolveQueueConfig({ topics: { a: { maxAttempts: 0 } } }), /topics\.a\.maxAttempts/);
    assert.throws(() => resolveQueueConfig({ topics: { a: { backoff: 'soon' } } }), /topics\.a\.backoff/);
    assert.throws(() => resolveQueueConfig({ topics: { a: {} }, partitions: 0 }), /partitions/);
    assert.throws(() => resolveQueueConfig({ topics: { a: {} }, moveLimit: 10_000 }), /moveLimit/);
  });

  it('formerPartitions: only while the partition count changes, a count other than partitions', () => {
    assert.equal(resolveQueueConfig({ topics: { a: {} }, partitions: 6 }).formerPartitions, undefined);
    assert.equal(
      resolveQueueConfig({ topics: { a: {} }, partitions: 6, formerPartitions: null }).formerPartitions,
      undefined,
      'null (the deploy without the param): no change',
    );
    assert.equal(resolveQueueConfig({ topics: { a: {} }, partitions: 6, formerPartitions: 4 }).formerPartitions, 4);
    assert.throws(
      () => resolveQueueConfig({ topics: { a: {} }, partitions: 4, formerPartitions: 4 }),
      /formerPartitions: 4 is the partition count itself/,
    );
    assert.throws(
      () => resolveQueueConfig({ topics: { a: {} }, formerPartitions: 0 }),
      /formerPartitions must be an integer from 1 to 1024/,
    );
  });
});

describe('durability (issue 13)', () => {
  const env = (extra: Record<string, string>) => ({
    DQ_CONFIG: JSON.stringify({ topics: { a: {} }, durability: 'replica', durabilityTimeout: 0.5 }),
    REDIS_URL: 'redis://x',
    DQ_FUNCTION_PREFIX: 'p-',
    ...extra,
  });
  it('defaults to none with a 1 s wait; custom.queue sets it; DQ_DURABILITY and DQ_DURABILITY_TIMEOUT_MS override it', () => {
    assert.deepEqual(resolveQueueConfig({ topics: { a: {} } }).durability, { mode: 'none', timeoutMs: 1000 });
    assert.deepEqual(loadConfig(env({})).queue.durability, { mode: 'replica', timeoutMs: 500 });
    assert.deepEqual(loadConfig(env({ DQ_DURABILITY: 'none' })).queue.durability, { mode: 'none', timeoutMs: 500 });
    assert.deepEqual(loadConfig(env({ DQ_DURABILITY_TIMEOUT_MS: '250' })).queue.durability, {
      mode: 'replica',
      timeoutMs: 250,
    });
    assert.deepEqual(loadDurability({ DQ_DURABILITY: '' }, { mode: 'replica', timeoutMs: 9 }), {
      mode: 'replica',
      timeoutMs: 9,
    });
  });
  it('refuses an unknown mode or a wait out of range, naming the field or variable', () => {
    assert.throws(
      () => resolveQueueConfig({ topics: { a: {} }, durability: 'wait' }),
      /durability must be "replica" or "none", got "wait"/,
    );
    assert.throws(
      () => resolveQueueConfig({ topics: { a: {} }, durabilityTimeout: 5 }),
      /durabilityTimeout must be a number of seconds from 0.01 to 1.5/,
    );
    assert.throws(
      () => loadConfig(env({ DQ_DURABILITY: 'always' })),
      /environment variable DQ_DURABILITY must be "replica" or "none"/,
    );
    assert.throws(
      () => loadConfig(env({ DQ_DURABILITY_TIMEOUT_MS: '2000' })),
      /DQ_DURABILITY_TIMEOUT_MS must be a whole number of milliseconds from 10 to 1500/,
    );
    assert.throws(() => loadConfig(env({ DQ_DURABILITY_TIMEOUT_MS: '0.5' })), /DQ_DURABILITY_TIMEOUT_MS/);
  });
});

describe('sweeper and fan-out timings (environment)', () => {
  it('default to the AWS values, and each can be set by its variable', () => {
    assert.deepEqual(loadTimings({}), DEFAULT_TIMINGS);
    assert.deepEqual(DEFAULT_TIMINGS, {
      sweeperHorizonMs: 120_000,
      sweeperLeaseMs: 30_000,
      sweeperMaxWaitMs: 10_000,
      sweeperReserveMs: 5_000,
      sweeperErrorPauseMs: 500,
      fanoutMarkMs: 30_000,
    });
    const t = loadTimings({
      DQ_SWEEPER_LEASE_MS: '3000',
      DQ_SWEEPER_MAX_WAIT_MS: '1000',
      DQ_SWEEPER_RESERVE_MS: '500',
      DQ_FANOUT_MARK_MS: '2000',
      DQ_SWEEPER_HORIZON_MS: '',
      DQ_SWEEPER_ERROR_PAUSE_MS: '100',
    });
    assert.deepEqual(t, {
      sweeperHorizonMs: 120_000,
      sweeperLeaseMs: 3000,
      sweeperMaxWaitMs: 1000,
      sweeperReserveMs: 500,
      sweeperErrorPauseMs: 100,
      fanoutMarkMs: 2000,
    });
  });
  it('refuse a bad value, naming the variable', () => {
    assert.throws(() => loadTimings({ DQ_SWEEPER_LEASE_MS: '30s' }), /DQ_SWEEPER_LEASE_MS must be a whole number/);
    assert.throws(() => loadTimings({ DQ_FANOUT_MARK_MS: '0' }), /DQ_FANOUT_MARK_MS/);
    assert.throws(
      () => loadTimings({ DQ_SWEEPER_MAX_WAIT_MS: '40000' }),
      /DQ_SWEEPER_MAX_WAIT_MS \(40000\) must be below DQ_SWEEPER_LEASE_MS/,
    );
  });
});

describe('ttr and the handler timeout (issue 12, finding 5)', () => {
  it('a topic ttr longer than its handler can run is refused, naming both', () => {
    assert.throws(
      () => resolveQueueConfig({ topics: { slow: { handler: 'h', ttr: 90, handlerTimeout: 60 } } }),
      /topics\.slow\.ttr \(90 s\) is longer than its handler h can run \(timeout 60 s\)/,
    );
    const c = resolveQueueConfig({ topics: { ok: { handler: 'h', ttr: 60, handlerTimeout: 60 }, free: { ttr: 30 } } });
    assert.equal(c.topics.get('ok')!.maxTtrMs, 60_000);
    assert.equal(c.topics.get('free')!.maxTtrMs, 86_400_000, 'no handler timeout known: the API limit');
  });
});

describe('the webhook signing secrets', () => {
  const env = (extra: Record<string, string>) => ({
    DQ_CONFIG: JSON.stringify({ topics: { a: {} } }),
    REDIS_URL: 'redis://x',
    DQ_FUNCTION_PREFIX: 'p-',
    ...extra,
  });
  it('reads WEBHOOK_SECRET as one secret, or several separated by whitespace while one is rotated', () => {
    assert.deepEqual(loadConfig(env({ WEBHOOK_SECRET: 'abc' })).webhookSecrets, ['abc']);
    assert.deepEqual(loadConfig(env({ WEBHOOK_SECRET: ' new1  old2\n' })).webhookSecrets, ['new1', 'old2']);
    assert.deepEqual(loadConfig(env({})).webhookSecrets, []);
  });
});
