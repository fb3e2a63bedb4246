import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveQueueConfig } from '../../lib/core/queue-config';
import { BATCH_JOBS, DEAD_PAGE, REDRIVE_COUNT, REDRIVE_IDS } from '../../lib/core/limits';
import { decodeDeadCursor } from '../../lib/engine';
import {
  HttpError,
  encodeDeadCursor,
  requireTopic,
  validateBatch,
  validateChange,
  validateDeadPage,
  validateGroupPage,
  validateJob,
  validateJobsQuery,
  validatePut,
  validateRedrive,
  validateSchedulesQuery,
} from '../../lib/testing';

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
    const job = validateJob(
      {
        topic: 'orders',
        id: 'o:1.a_b-c',
        delay: 1.5,
        body: { a: [1, 'x'] },
        maxAttempts: 3,
        ttr: 2,
        backoff: { type: 'fixed', delay: 1 },
      },
      config,
      NOW,
    );
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
    assert.deepEqual(validateJob({ topic: 'orders', runAt: '2030-01-01T00:00:01.5+01:00' }, config, NOW).when, {
      kind: 'a',
      ms: NOW + 1500 - 3_600_000,
    });
  });

  it('reports every problem at once, each with its path', () => {
    const r = problems({
      topic: 'orders',
      id: 'bad id',
      delay: -1,
      maxAttempts: 1.5,
      ttr: 0,
      backoff: { type: 'x' },
      url: 'ftp://x',
      extra: true,
    });
    assert.equal(r.code, 'VALIDATION_FAILED');
    assert.equal(r.status, 400);
    assert.deepEqual(r.paths.sort(), ['backoff.type', 'delay', 'extra', 'id', 'maxAttempts', 'ttr', 'url']);
  });

  it('takes delay, ttr and jitter as seconds or as durations like "10m", as a backoff ladder does', () => {
    const job = validateJob({ topic: 'orders', delay: '10m', ttr: '1.5m' }, config, NOW);
    assert.deepEqual(job.when, { kind: 'd', ms: 600_000 });
    assert.equal(job.ttrMs, 90_000);
    assert.deepEqual(
      problems({ topic: 'orders', delay: 1, jitter: '250ms', ttr: 'x' }).paths,
      ['ttr'],
      'a jitter of "250ms" is taken',
    );
    assert.deepEqual(
      validateJob({ topic: 'orders', delay: '2h' }, config, NOW).when,
      validateJob({ topic: 'orders', delay: 7200 }, config, NOW).when,
    );
    assert.deepEqual(validateChange({ delay: '30s' }, config, NOW).when, { kind: 'd', ms: 30_000 });
    for (const bad of ['10', '10 m', '-1m', '1w', 'soon', '', '1e3s'])
      assert.deepEqual(problems({ topic: 'orders', delay: bad }).paths, ['delay'], `delay ${JSON.stringify(bad)}`);
    assert.deepEqual(problems({ topic: 'orders', delay: '400d' }).paths, ['delay'], 'over the maximum delay');
    assert.deepEqual(problems({ topic: 'orders', delay: 1, ttr: '0s' }).paths, ['ttr']);
    assert.deepEqual(problems({ topic: 'orders', delay: 1, jitter: '2d' }).paths, ['jitter']);
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
    for (const topic of ['{p0}', 'a:b', 'a*', 'a b', 'a\nb', '', 'x'.repeat(65), 5])
      assert.ok(problems({ topic, delay: 0 }).paths.includes('topic'), String(topic));
    for (const id of ['{p0}', 'a b', 'a\nb', '', 'x'.repeat(129), 'é', 7])
      assert.ok(problems({ topic: 'orders', id, delay: 0 }).paths.includes('id'), String(id));
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
    assert.equal(
      validateJob({ topic: 'hooks', delay: 0, url: 'https://example.com/hook' }, config, NOW).url,
      'https://example.com/hook',
    );
  });

  it('gives a ladder its length + 1 attempts unless maxAttempts is set', () => {
    assert.equal(validateJob({ topic: 'orders', delay: 0, backoff: '1s 2s' }, config, NOW).maxAttempts, 3);
    assert.equal(
      validateJob({ topic: 'orders', delay: 0, backoff: '1s 2s', maxAttempts: 9 }, config, NOW).maxAttempts,
      9,
    );
  });

  it('refuses what is not an object', () => {
    for (const input of [null, [], 'x', 3]) assert.equal(problems(input).code, 'VALIDATION_FAILED');
  });

  it('validates changes to pending jobs', () => {
    assert.deepEqual(validateChange({ delay: 2 }, config, NOW), { when: { kind: 'd', ms: 2000 } });
    assert.deepEqual(validateChange({ body: null }, config, NOW), { body: 'null' });
    assert.throws(() => validateChange({}, config, NOW), /invalid field/);
    assert.throws(() => validateChange({ topic: 'x', delay: 1 }, config, NOW), /invalid field/);
    assert.throws(
      () => validateChange({ body: 'x'.repeat(200) }, config, NOW),
      (e: unknown) => e instanceof HttpError && e.status === 413,
    );
  });
});

/** The status, code and detail paths of the HttpError `fn` throws. */
function refused(fn: () => unknown): { status: number; code: string; message: string; paths: string[] } {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof HttpError);
    const details = (error.details ?? []) as { path: string }[];
    return { status: error.status, code: error.code, message: error.message, paths: details.map((d) => d.path) };
  }
  assert.fail('expected a refusal');
}

describe('request validation', () => {
  it("requireTopic returns the topic's configuration, or 400 UNKNOWN_TOPIC", () => {
    assert.equal(requireTopic(config, 'orders').name, 'orders');
    assert.equal(refused(() => requireTopic(config, 'nope')).code, 'UNKNOWN_TOPIC');
  });

  it('a put: the path names the job, and topic and id in the body must match it', () => {
    assert.deepEqual(validatePut('orders', 'p-1', { delay: 1 }, config, NOW), {
      topic: 'orders',
      id: 'p-1',
      partition: 0,
      when: { kind: 'd', ms: 1000 },
      body: 'null',
    });
    assert.equal(validatePut('orders', 'p-1', { topic: 'orders', id: 'p-1', delay: 1 }, config, NOW).id, 'p-1');
    assert.deepEqual(refused(() => validatePut('orders', 'p-1', { id: 'other', delay: 1 }, config, NOW)).paths, ['id']);
    assert.deepEqual(refused(() => validatePut('orders', 'bad id', { delay: 1 }, config, NOW)).paths, ['id']);
    assert.equal(refused(() => validatePut('orders', 'p-1', [], config, NOW)).code, 'VALIDATION_FAILED');
  });

  it(`a batch holds ${BATCH_JOBS.min} to ${BATCH_JOBS.max} jobs`, () => {
    const jobs = Array.from({ length: BATCH_JOBS.max }, () => ({}));
    assert.equal(validateBatch({ jobs }), jobs);
    for (const body of [{}, { jobs: [] }, { jobs: {} }, [], null]) {
      assert.deepEqual(
        refused(() => validateBatch(body)),
        {
          status: 400,
          code: 'VALIDATION_FAILED',
          message: 'send { "jobs": [ ... ] } with 1 to 500 jobs',
          paths: ['jobs'],
        },
      );
    }
    assert.equal(
      refused(() => validateBatch({ jobs: [...jobs, {}] })).message,
      `a batch holds at most ${BATCH_JOBS.max} jobs`,
    );
  });

  it('a redrive: ids or count, within their limits, and no body means the default count', () => {
    assert.deepEqual(validateRedrive(undefined), { count: REDRIVE_COUNT.default });
    assert.deepEqual(validateRedrive({}), { count: REDRIVE_COUNT.default });
    assert.deepEqual(validateRedrive({ count: REDRIVE_COUNT.max }), { count: REDRIVE_COUNT.max });
    assert.deepEqual(validateRedrive({ ids: ['a', 'b'] }), { ids: ['a', 'b'] });
    assert.deepEqual(refused(() => validateRedrive({ count: REDRIVE_COUNT.max + 1 })).paths, ['count']);
    assert.deepEqual(refused(() => validateRedrive({ count: 1.5 })).paths, ['count']);
    assert.deepEqual(
      refused(() => validateRedrive({ ids: Array.from({ length: REDRIVE_IDS.max + 1 }, (_, i) => `j${i}`) })).paths,
      ['ids'],
    );
    assert.deepEqual(refused(() => validateRedrive({ ids: [], extra: 1 })).paths, ['extra', 'ids']);
    assert.deepEqual(refused(() => validateRedrive({ ids: ['a'], count: 1 })).paths, ['count']);
    assert.deepEqual(refused(() => validateRedrive(null)).paths, ['']);
  });

  it('a page of dead jobs: limit and after, each optional', () => {
    assert.deepEqual(validateDeadPage({}), {});
    assert.deepEqual(validateDeadPage({ limit: '', after: '' }), {});
    assert.deepEqual(
      validateDeadPage({ limit: String(DEAD_PAGE.max), after: 'MTIz' }),
      { limit: DEAD_PAGE.max, after: 'MTIz' },
      'after is decoded once, by the listing',
    );
    const next = encodeDeadCursor({ diedAt: 1_700_000_000_000, id: 'a.b:c-D_9' });
    assert.match(next, /^[A-Za-z0-9_-]+$/, 'a cursor needs no escaping in a query string');
    assert.deepEqual(validateDeadPage({ after: next }), { after: next });
    assert.deepEqual(decodeDeadCursor(next), { diedAt: 1_700_000_000_000, id: 'a.b:c-D_9' });
    assert.deepEqual(validateDeadPage({ after: '' }), {});
    assert.deepEqual(
      refused(() => validateDeadPage({ limit: String(DEAD_PAGE.max + 1) })),
      {
        status: 400,
        code: 'VALIDATION_FAILED',
        message: `limit must be an integer from ${DEAD_PAGE.min} to ${DEAD_PAGE.max}`,
        paths: ['limit'],
      },
    );
    assert.deepEqual(refused(() => validateDeadPage({ limit: '0' })).paths, ['limit']);
    for (const after of [
      '-1',
      'x',
      '0',
      '1.5',
      '1'.repeat(17),
      `${next}=`,
      Buffer.from('5:no spaces').toString('base64url'),
      Buffer.from('x:a').toString('base64url'),
    ]) {
      assert.equal(decodeDeadCursor(after), null, after);
    }
  });
});

describe('a job ttr and its topic handler timeout (issue 12, finding 5)', () => {
  it('a job may not ask for more time than its handler has', () => {
    const c = resolveQueueConfig({ topics: { timed: { handler: 'h', ttr: 30, handlerTimeout: 60 } } });
    assert.equal(validateJob({ topic: 'timed', delay: 1, ttr: 60 }, c).ttrMs, 60_000);
    assert.throws(
      () => validateJob({ topic: 'timed', delay: 1, ttr: 61 }, c),
      (error: HttpError) => {
        assert.equal(error.status, 400);
        assert.match(
          JSON.stringify(error.details),
          /"path":"ttr".*at most 60 seconds: the handler of topic timed times out after 60 s/,
        );
        return true;
      },
    );
  });
});

describe('listing queries take only what they say: real dates and plain decimal integers', () => {
  const refusedPaths = (fn: () => unknown): string[] => {
    try {
      fn();
    } catch (error) {
      assert.ok(
        error instanceof HttpError && error.status === 400 && error.code === 'VALIDATION_FAILED',
        String(error),
      );
      return ((error.details ?? []) as { path: string }[]).map((p) => p.path);
    }
    return assert.fail('accepted');
  };

  it('refuses a bound on a date that does not exist, as runAt does', () => {
    assert.deepEqual(
      refusedPaths(() => validateJobsQuery({ from: '2027-02-30T00:00:00Z' })),
      ['from'],
    );
    assert.deepEqual(
      refusedPaths(() => validateJobsQuery({ to: '2027-04-31T12:00:00+02:00' })),
      ['to'],
    );
    assert.equal(validateJobsQuery({ from: '2028-02-29T00:00:00Z' }).from, Date.UTC(2028, 1, 29), 'a leap day exists');
  });

  it('refuses a limit written as anything but a plain decimal integer', () => {
    for (const limit of ['1e2', '0x10', '10.0', '+5', ' 5', '5 ', '0b11']) {
      assert.deepEqual(
        refusedPaths(() => validateJobsQuery({ limit })),
        ['limit'],
        `jobs ${limit}`,
      );
      assert.deepEqual(
        refusedPaths(() => validateGroupPage({ limit })),
        ['limit'],
        `group ${limit}`,
      );
      assert.deepEqual(
        refusedPaths(() => validateDeadPage({ limit })),
        ['limit'],
        `dead ${limit}`,
      );
      assert.deepEqual(
        refusedPaths(() => validateSchedulesQuery({ topic: 'orders', limit })),
        ['limit'],
        `schedules ${limit}`,
      );
    }
    assert.equal(validateJobsQuery({ limit: '100' }).limit, 100);
    assert.equal(validateDeadPage({ limit: '7' }).limit, 7);
  });
});
