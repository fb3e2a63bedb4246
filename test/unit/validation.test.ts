import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveQueueConfig } from '../../lib/config';
import { HttpError } from '../../lib/errors';
import { validateChange, validateJob } from '../../lib/validation';

const config = resolveQueueConfig({ topics: { orders: {}, hooks: { kind: 'webhook' } }, maxBodyBytes: 100 });
const NOW = Date.UTC(2030, 0, 1);

function problems(input: unknown): { code: string; status: number; paths: string[] } {
  try {
    validateJob(input, config, NOW);
  } catch (error) {
    assert.ok(error instanceof HttpError);
    const details = (error.details ?? []) as { path: string }[];
    return { code: error.code, status: error.status, paths: details.map((d) => d.path) };
  }
  assert.fail('expected the job to be refused');
}

describe('job validation', () => {
  it('normalises a valid job', () => {
    const job = validateJob({ topic: 'orders', id: 'o:1.a_b-c', delay: 1.5, body: { a: [1, 'x'] }, maxAttempts: 3, ttr: 2, backoff: { type: 'fixed', delay: 1 } }, config, NOW);
    assert.deepEqual(job, {
      topic: 'orders',
      id: 'o:1.a_b-c',
      partition: 0,
      when: { kind: 'd', ms: 1500 },
      body: '{"a":[1,"x"]}',
      maxAttempts: 3,
      ttrMs: 2000,
      backoff: 'f:1000',
    });
  });

  it('generates an id and stores a missing body as null', () => {
    const job = validateJob({ topic: 'orders', delay: 0 }, config, NOW);
    assert.match(job.id, /^[A-Za-z0-9_-]{16}$/);
    assert.equal(job.body, 'null');
  });

  it('accepts runAt as epoch ms or ISO-8601 with a zone', () => {
    assert.deepEqual(validateJob({ topic: 'orders', runAt: NOW + 5 }, config, NOW).when, { kind: 'a', ms: NOW + 5 });
    assert.deepEqual(validateJob({ topic: 'orders', runAt: '2030-01-01T00:00:01.5+01:00' }, config, NOW).when, { kind: 'a', ms: NOW + 1500 - 3_600_000 });
  });

  it('reports every problem at once, each with its path', () => {
    const r = problems({ topic: 'orders', id: 'bad id', delay: -1, maxAttempts: 1.5, ttr: 0, backoff: { type: 'x' }, url: 'ftp://x', extra: true });
    assert.equal(r.code, 'VALIDATION_FAILED');
    assert.equal(r.status, 400);
    assert.deepEqual(r.paths.sort(), ['backoff.type', 'delay', 'extra', 'id', 'maxAttempts', 'ttr', 'url']);
  });

  it('needs exactly one of delay and runAt', () => {
    assert.deepEqual(problems({ topic: 'orders' }).paths, ['delay']);
    assert.deepEqual(problems({ topic: 'orders', delay: 1, runAt: NOW }).paths, ['delay']);
  });

  it('refuses runAt in seconds, without a zone, or beyond the maximum delay', () => {
    assert.deepEqual(problems({ topic: 'orders', runAt: 1_900_000_000 }).paths, ['runAt']);
    assert.deepEqual(problems({ topic: 'orders', runAt: '2030-01-01T00:00:00' }).paths, ['runAt']);
    assert.deepEqual(problems({ topic: 'orders', runAt: '2030-02-30T00:00:00Z' }).paths, ['runAt']);
    assert.deepEqual(problems({ topic: 'orders', runAt: NOW + 366 * 86_400_000 }).paths, ['runAt']);
    assert.deepEqual(problems({ topic: 'orders', delay: 366 * 86_400 }).paths, ['delay']);
    assert.deepEqual(problems({ topic: 'orders', delay: Number.POSITIVE_INFINITY }).paths, ['delay']);
  });

  it('refuses topics and ids that could escape the key space', () => {
    for (const topic of ['{p0}', 'a:b', 'a*', 'a b', 'a\nb', '', 'x'.repeat(65), 5]) assert.ok(problems({ topic, delay: 0 }).paths.includes('topic'), String(topic));
    for (const id of ['{p0}', 'a b', 'a\nb', '', 'x'.repeat(129), 'é', 7]) assert.ok(problems({ topic: 'orders', id, delay: 0 }).paths.includes('id'), String(id));
  });

  it('says UNKNOWN_TOPIC for a well-formed topic that is not configured', () => {
    assert.equal(problems({ topic: 'payments', delay: 0 }).code, 'UNKNOWN_TOPIC');
  });

  it('says PAYLOAD_TOO_LARGE for a body over the limit, in bytes of JSON', () => {
    assert.equal(validateJob({ topic: 'orders', delay: 0, body: 'x'.repeat(98) }, config, NOW).body.length, 100);
    const r = problems({ topic: 'orders', delay: 0, body: 'x'.repeat(99) });
    assert.deepEqual([r.status, r.code], [413, 'PAYLOAD_TOO_LARGE']);
    assert.equal(problems({ topic: 'orders', delay: 0, body: 'é'.repeat(50) }).code, 'PAYLOAD_TOO_LARGE');
  });

  it('requires a url on webhook topics, without credentials', () => {
    assert.deepEqual(problems({ topic: 'hooks', delay: 0 }).paths, ['url']);
    assert.deepEqual(problems({ topic: 'hooks', delay: 0, url: 'https://u:p@example.com/' }).paths, ['url']);
    assert.equal(validateJob({ topic: 'hooks', delay: 0, url: 'https://example.com/hook' }, config, NOW).url, 'https://example.com/hook');
  });

  it('gives a ladder its length + 1 attempts unless maxAttempts is set', () => {
    assert.equal(validateJob({ topic: 'orders', delay: 0, backoff: '1s 2s' }, config, NOW).maxAttempts, 3);
    assert.equal(validateJob({ topic: 'orders', delay: 0, backoff: '1s 2s', maxAttempts: 9 }, config, NOW).maxAttempts, 9);
  });

  it('refuses what is not an object', () => {
    for (const input of [null, [], 'x', 3]) assert.equal(problems(input).code, 'VALIDATION_FAILED');
  });

  it('validates changes to pending jobs', () => {
    assert.deepEqual(validateChange({ delay: 2 }, config, NOW), { when: { kind: 'd', ms: 2000 } });
    assert.deepEqual(validateChange({ body: null }, config, NOW), { body: 'null' });
    assert.throws(() => validateChange({}, config, NOW), /invalid field/);
    assert.throws(() => validateChange({ topic: 'x', delay: 1 }, config, NOW), /invalid field/);
    assert.throws(() => validateChange({ body: 'x'.repeat(200) }, config, NOW), (e: unknown) => e instanceof HttpError && e.status === 413);
  });
});
