/**
 * openapi.yaml on its own, without the stack: its schemas compile in ajv's strict mode, every
 * example matches its schema, no `$ref` has sibling keywords (the form tools read differently),
 * and the schemas still accept and refuse what the API does — the `allOf` forms keep the meaning
 * of `unevaluatedProperties: false` and `additionalProperties: false`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Contract, refsWithSiblings } from '../support/openapi';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the parsed openapi.yaml, walked by property paths; a wrong path fails the test
type Json = Record<string, any>;

const contract = new Contract();
const doc = contract.doc;
const schemaRef = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const jsonSchema = (node: Json) => node.content['application/json'].schema;

/** A copy of the document to alter. */
const copy = (): Json => structuredClone(doc);

const job = {
  topic: 'example',
  id: 'close-order-7',
  state: 'delayed',
  runAt: '2026-11-21T15:30:00.000Z',
  createdAt: '2026-11-21T15:00:00.000Z',
  updatedAt: '2026-11-21T15:00:00.000Z',
  attempts: 0,
  maxAttempts: 5,
  ttr: 30,
  backoff: { type: 'exponential', delay: 5, max: 3600, jitter: 0.2 },
  url: null,
  lastError: null,
  deadline: null,
  expiresAt: null,
  priority: 0,
  version: 1,
  group: null,
  key: null,
  updatedBy: 'orders-service',
  attemptHistory: [
    {
      attempt: 1,
      startedAt: '2026-11-21T15:30:00.100Z',
      endedAt: '2026-11-21T15:30:30.100Z',
      outcome: 'timedOut',
      error: 'attempt 1 timed out: no ack within its ttr',
      durationMs: 30000,
      latenessMs: 100,
    },
  ],
  body: { orderId: 7 },
};
const dead = { ...job, state: 'dead', diedAt: '2026-11-21T15:32:00.000Z' };
const schedule = {
  topic: 'example',
  id: 'daily-report',
  cron: '0 9 * * 1-5',
  timezone: 'Europe/Berlin',
  catchUp: 'latest',
  paused: false,
  body: null,
  maxAttempts: 5,
  ttr: 30,
  backoff: { type: 'fixed', delay: 5 },
  url: null,
  group: null,
  key: null,
  jitter: null,
  version: 3,
  createdAt: '2026-11-23T10:00:00.000Z',
  updatedAt: '2026-11-23T10:00:00.000Z',
  updatedBy: null,
  pending: { id: 'daily-report:20261124T080000Z', runAt: '2026-11-24T08:00:00.000Z' },
  lastRunAt: null,
  nextRuns: ['2026-11-24T08:00:00.000Z'],
};
const flow = {
  topic: 'partner',
  key: 'partner-42',
  running: 0,
  ready: 3,
  paused: false,
  heldUntil: null,
  limits: { concurrency: 2, rate: { count: 10, per: 1, burst: 1 } },
  pinned: null,
  updatedBy: null,
  updatedAt: null,
};
const error = (code: string, extra: Json = {}) => ({ error: { code, message: 'm', ...extra } });

describe('openapi.yaml, the document', () => {
  it('is OpenAPI 3.1 with the 2020-12 dialect, and every schema compiles in strict mode', () => {
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.jsonSchemaDialect, 'https://json-schema.org/draft/2020-12/schema');
    for (const name of Object.keys(doc.components.schemas)) contract.validator(schemaRef(name), `schema ${name}`);
  });

  it('puts no $ref beside other keywords (tools drop or shallow-merge such siblings)', () => {
    const found = refsWithSiblings(doc);
    assert.equal(found.length, 0, `${found.length} $refs with siblings:\n${found.join('\n')}`);
  });

  it('every example matches its schema (media types, parameters, headers, schema examples)', () => {
    const problems = contract.exampleProblems();
    assert.equal(problems.length, 0, `${problems.length} examples do not match their schema:\n${problems.join('\n')}`);
    const examples = contract.examples();
    assert.ok(examples.length >= 32, `only ${examples.length} examples found`);
    const where = examples.map((e) => e.where);
    for (const kind of ['/requestBody/', '/parameters/', '/headers/', '/components/schemas/']) {
      assert.ok(
        where.some((w) => w.includes(kind)),
        `no example found under ${kind}`,
      );
    }
    const used = JSON.stringify(doc.paths) + JSON.stringify(doc.components.responses);
    for (const name of Object.keys(doc.components.examples)) {
      assert.ok(
        used.includes(`"#/components/examples/${name}"`),
        `components/examples/${name} is used nowhere, so it is checked against no schema`,
      );
    }
  });

  it('the example check catches an example that does not match (each kind of place)', () => {
    const broken = copy();
    const addExamples = broken.paths['/jobs'].post.requestBody.content['application/json'].examples;
    addExamples.closeOrder.value.dealy = 3;
    broken.components.examples.CreatedJob.value.job.extra = 1;
    broken.components.responses.Unauthorized.content['application/json'].examples.noToken.value.error.code =
      'NOT_FOUND';
    broken.components.responses.Unavailable.headers['Retry-After'].schema.examples = [1];
    broken.components.parameters.JobId.example = 'has space';
    broken.components.schemas.BackoffInput.oneOf[3].examples = [15];
    const problems = new Contract(broken).exampleProblems();
    const where = problems.map((p) => p.split(': ')[0]);
    assert.deepEqual(where, [
      '#/paths/~1jobs/post/requestBody/content/application~1json/examples/closeOrder',
      '#/paths/~1jobs/post/responses/201/content/application~1json/examples/created',
      '#/components/responses/Unauthorized/content/application~1json/examples/noToken',
      '#/components/responses/Unavailable/headers/Retry-After/schema/examples/0',
      '#/components/parameters/JobId/example',
      '#/components/schemas/BackoffInput/oneOf/3/examples/0',
    ]);
    assert.match(problems[0]!, /unevaluated properties/);
  });

  it('the schemas accept and refuse what the API does', () => {
    const redrive = jsonSchema(doc.paths['/topics/{topic}/dead/redrive'].post.requestBody);
    const responses = doc.components.responses as Json;
    const cancelled = jsonSchema(doc.paths['/topics/{topic}/groups/{group}'].delete.responses['200']);
    const ifMatch = doc.components.parameters.IfMatch.schema;
    const cases: [string, unknown, unknown, boolean][] = [
      ['NewJob', schemaRef('NewJob'), { topic: 'example', delay: 1 }, true],
      [
        'NewJob',
        schemaRef('NewJob'),
        { topic: 'example', id: 'a-1', delay: 0, body: [1], ttr: 5, maxAttempts: 2, backoff: '15s 1m' },
        true,
      ],
      [
        'NewJob',
        schemaRef('NewJob'),
        { topic: 'webhook', runAt: '2027-06-01T09:50:00Z', url: 'https://x.example/h' },
        true,
      ],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', delay: 1, dealy: 3 }, false],
      ['NewJob', schemaRef('NewJob'), { topic: 'example' }, false],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', delay: 1, runAt: 0 }, false],
      ['NewJob', schemaRef('NewJob'), { delay: 1 }, false],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', id: 'has space', delay: 1 }, false],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', delay: -1 }, false],
      ['JobReplacement', schemaRef('JobReplacement'), { delay: 600, body: { v: 2 } }, true],
      ['JobReplacement', schemaRef('JobReplacement'), { runAt: 1_900_000_000_000, topic: 'example', id: 'a-1' }, true],
      ['JobReplacement', schemaRef('JobReplacement'), { delay: 1, state: 'ready' }, false],
      ['JobReplacement', schemaRef('JobReplacement'), { body: 1 }, false],
      ['Job', schemaRef('Job'), job, true],
      ['Job', schemaRef('Job'), { ...job, extra: 1 }, false],
      ['Job', schemaRef('Job'), { ...job, body: undefined }, false],
      ['Job', schemaRef('Job'), { ...job, group: 'order-7', version: 12 }, true],
      ['Job', schemaRef('Job'), { ...job, version: undefined }, false],
      ['Job', schemaRef('Job'), { ...job, group: undefined }, false],
      ['Job', schemaRef('Job'), { ...job, version: -1 }, false],
      ['Job', schemaRef('Job'), { ...job, version: 1.5 }, false],
      ['Job', schemaRef('Job'), { ...job, group: 'has space' }, false],
      [
        'ScheduleInput',
        schemaRef('ScheduleInput'),
        { cron: '0 9 * * 1-5', timezone: 'Europe/Berlin', body: { r: 1 } },
        true,
      ],
      [
        'ScheduleInput',
        schemaRef('ScheduleInput'),
        { every: 1, paused: true, catchUp: 'none', maxAttempts: 2, backoff: '15s 1m', ttr: 5, group: 'g' },
        true,
      ],
      ['ScheduleInput', schemaRef('ScheduleInput'), { cron: '* * * * *', every: 1 }, false],
      ['ScheduleInput', schemaRef('ScheduleInput'), { body: 1 }, false],
      ['ScheduleInput', schemaRef('ScheduleInput'), { every: 0 }, false],
      ['ScheduleInput', schemaRef('ScheduleInput'), { every: 5, timezone: 'UTC' }, false],
      ['ScheduleInput', schemaRef('ScheduleInput'), { every: 5, delay: 1 }, false],
      ['ScheduleInput', schemaRef('ScheduleInput'), { every: 5, catchUp: 'all' }, false],
      ['ScheduleInput', schemaRef('ScheduleInput'), { every: 5, jitter: 2.5 }, true],
      ['ScheduleInput', schemaRef('ScheduleInput'), { every: 5, jitter: -1 }, false],
      ['ScheduleInput', schemaRef('ScheduleInput'), { every: '1h', key: 'partner-42' }, true],
      ['ScheduleInput', schemaRef('ScheduleInput'), { every: 5, key: '' }, false],
      ['ScheduleInput', schemaRef('ScheduleInput'), { every: 5, key: 'has space' }, false],
      ['Schedule', schemaRef('Schedule'), schedule, true],
      [
        'Schedule',
        schemaRef('Schedule'),
        { ...schedule, cron: undefined, timezone: undefined, every: 10, pending: null, nextRuns: [] },
        true,
      ],
      ['Schedule', schemaRef('Schedule'), { ...schedule, every: 10 }, false],
      ['Schedule', schemaRef('Schedule'), { ...schedule, timezone: undefined }, false],
      ['Schedule', schemaRef('Schedule'), { ...schedule, extra: 1 }, false],
      ['Schedule', schemaRef('Schedule'), { ...schedule, jitter: 30 }, true],
      ['Schedule', schemaRef('Schedule'), { ...schedule, jitter: undefined }, false],
      ['Schedule', schemaRef('Schedule'), { ...schedule, key: 'partner-42' }, true],
      ['Schedule', schemaRef('Schedule'), { ...schedule, key: undefined }, false],
      ['Schedule', schemaRef('Schedule'), { ...schedule, pending: { id: 'r:20261124T080000Z' } }, false],
      ['Schedule', schemaRef('Schedule'), { ...schedule, id: 'x'.repeat(112) }, false],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', delay: 1, group: 'order-7' }, true],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', delay: 1, group: 'has space' }, false],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', delay: 1, group: null }, false],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', delay: 1, version: 1 }, false],
      ['JobReplacement', schemaRef('JobReplacement'), { delay: 1, group: 'g.1:a-b_c' }, true],
      ['JobReplacement', schemaRef('JobReplacement'), { delay: 1, group: '' }, false],
      [
        'NewJob',
        schemaRef('NewJob'),
        { topic: 'example', delay: 1, callback: { topic: 'example', on: ['done', 'expired'] } },
        true,
      ],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', delay: 1, callback: { url: 'https://x.example/cb' } }, true],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', delay: 1, callback: null }, true],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', delay: 1, callback: {} }, false],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', delay: 1, callback: { topic: 'example', on: [] } }, false],
      [
        'NewJob',
        schemaRef('NewJob'),
        { topic: 'example', delay: 1, callback: { topic: 'a', on: ['finished'] } },
        false,
      ],
      [
        'NewJob',
        schemaRef('NewJob'),
        { topic: 'example', delay: 1, callback: { topic: 'a', on: ['done', 'done'] } },
        false,
      ],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', delay: 1, callback: { topic: 'a', extra: 1 } }, false],
      ['JobReplacement', schemaRef('JobReplacement'), { delay: 1, callback: { topic: 'example' } }, true],
      [
        'Job',
        schemaRef('Job'),
        { ...job, callback: { topic: 'webhook', url: 'https://x.example/cb', on: ['done'] } },
        true,
      ],
      ['Job', schemaRef('Job'), { ...job, callback: { topic: 'webhook', url: 'https://x.example/cb' } }, false],
      ['Job', schemaRef('Job'), { ...job, callback: null }, false],
      ['NewJob', schemaRef('NewJob'), { topic: 'partner', delay: 1, key: 'partner-42' }, true],
      ['NewJob', schemaRef('NewJob'), { topic: 'partner', delay: 1, key: 'has space' }, false],
      ['Job', schemaRef('Job'), { ...job, key: 'partner-42' }, true],
      ['Job', schemaRef('Job'), { ...job, key: '' }, true],
      ['Job', schemaRef('Job'), { ...job, key: undefined }, false],
      [
        'FlowKeyChange',
        schemaRef('FlowKeyChange'),
        { concurrency: 1, rate: { count: 2, per: '1m', burst: 2 }, paused: true },
        true,
      ],
      ['FlowKeyChange', schemaRef('FlowKeyChange'), { concurrency: null, rate: null }, true],
      ['FlowKeyChange', schemaRef('FlowKeyChange'), {}, false],
      ['FlowKeyChange', schemaRef('FlowKeyChange'), { concurrency: 0 }, false],
      ['FlowKeyChange', schemaRef('FlowKeyChange'), { rate: { per: 1 } }, false],
      ['FlowKeyChange', schemaRef('FlowKeyChange'), { paused: 'yes' }, false],
      ['FlowKeyState', schemaRef('FlowKeyState'), flow, true],
      [
        'FlowKeyState',
        schemaRef('FlowKeyState'),
        { ...flow, heldUntil: '2026-11-21T15:00:00.500Z', pinned: { concurrency: 1 } },
        true,
      ],
      [
        'FlowKeyState',
        schemaRef('FlowKeyState'),
        { ...flow, limits: { concurrency: 2, rate: { count: 10, per: 1 } } },
        false,
      ],
      ['FlowKeyState', schemaRef('FlowKeyState'), { ...flow, extra: 1 }, false],
      ['TopicPause', schemaRef('TopicPause'), { topic: 'example', paused: true }, true],
      ['TopicPause', schemaRef('TopicPause'), { topic: 'example' }, false],
      ['JobPage', schemaRef('JobPage'), { jobs: [job], next: 'abc' }, true],
      ['JobPage', schemaRef('JobPage'), { jobs: [], next: null }, true],
      ['JobPage', schemaRef('JobPage'), { jobs: [dead], next: null }, false],
      ['JobPage', schemaRef('JobPage'), { jobs: [] }, false],
      ['VersionMismatch', schemaRef('VersionMismatch'), { ...error('VERSION_MISMATCH'), job }, true],
      ['VersionMismatch', schemaRef('VersionMismatch'), { ...error('VERSION_MISMATCH'), job: null }, true],
      ['VersionMismatch', schemaRef('VersionMismatch'), error('VERSION_MISMATCH'), false],
      ['VersionMismatch', schemaRef('VersionMismatch'), { ...error('JOB_FINISHED'), job }, false],
      ['EntityTag', schemaRef('EntityTag'), '"12"', true],
      ['EntityTag', schemaRef('EntityTag'), '"0"', true],
      ['EntityTag', schemaRef('EntityTag'), '12', false],
      ['EntityTag', schemaRef('EntityTag'), 'W/"12"', false],
      ['If-Match', ifMatch, '"12"', true],
      ['If-Match', ifMatch, '*', true],
      ['If-Match', ifMatch, 'W/"12"', false],
      ['If-Match', ifMatch, '"1234567890123456"', false],
      ['If-Match', ifMatch, '"a"', false],
      ['cancelGroup 200', cancelled, { cancelled: 50, running: 0 }, true],
      ['cancelGroup 200', cancelled, { cancelled: 50 }, false],
      ['cancelGroup 200', cancelled, { cancelled: -1, running: 0 }, false],
      ['DeadJob', schemaRef('DeadJob'), dead, true],
      ['DeadJob', schemaRef('DeadJob'), { ...dead, diedAt: undefined }, false],
      ['DeadJob', schemaRef('DeadJob'), { ...dead, state: 'ready' }, false],
      ['DeadJob', schemaRef('DeadJob'), { ...dead, extra: 1 }, false],
      ['Error400', schemaRef('Error400'), error('UNKNOWN_TOPIC', { details: [{ path: 'topic', message: 'm' }] }), true],
      ['Error400', schemaRef('Error400'), error('NOT_FOUND'), false],
      ['Error400', schemaRef('Error400'), error('INVALID_JSON', { extra: 1 }), false],
      ['Error400', schemaRef('Error400'), { ...error('INVALID_JSON'), extra: 1 }, false],
      ['Error400', schemaRef('Error400'), { error: { code: 'INVALID_JSON' } }, false],
      ['JobExists', schemaRef('JobExists'), { ...error('JOB_EXISTS'), job }, true],
      ['JobExists', schemaRef('JobExists'), { ...error('JOB_FINISHED'), job }, false],
      ['JobExists', schemaRef('JobExists'), { ...error('JOB_EXISTS', { extra: 1 }), job }, false],
      ['JobFinished', schemaRef('JobFinished'), { ...error('JOB_FINISHED'), job }, true],
      ['JobFinished', schemaRef('JobFinished'), { ...error('JOB_EXISTS'), job }, false],
      ['BatchResult', schemaRef('BatchResult'), { status: 201, job }, true],
      ['BatchResult', schemaRef('BatchResult'), { status: 409, ...error('JOB_EXISTS'), job }, true],
      ['BatchResult', schemaRef('BatchResult'), { status: 400, ...error('VALIDATION_FAILED', { details: [] }) }, true],
      ['BatchResult', schemaRef('BatchResult'), { status: 413, ...error('PAYLOAD_TOO_LARGE') }, true],
      ['BatchResult', schemaRef('BatchResult'), { status: 400, ...error('JOB_EXISTS') }, false],
      ['BatchResult', schemaRef('BatchResult'), { status: 409, ...error('JOB_FINISHED'), job }, false],
      ['BatchResult', schemaRef('BatchResult'), { status: 400, ...error('VALIDATION_FAILED', { extra: 1 }) }, false],
      ['401', jsonSchema(responses.Unauthorized), error('UNAUTHORIZED'), true],
      ['401', jsonSchema(responses.Unauthorized), error('NOT_FOUND'), false],
      ['401', jsonSchema(responses.Unauthorized), error('UNAUTHORIZED', { extra: 1 }), false],
      ['404', jsonSchema(responses.NotFound), error('NOT_FOUND'), true],
      ['404', jsonSchema(responses.NotFound), error('UNAUTHORIZED'), false],
      [
        '413',
        jsonSchema(responses.PayloadTooLarge),
        error('PAYLOAD_TOO_LARGE', { details: [{ path: 'body', message: 'm' }] }),
        true,
      ],
      ['413', jsonSchema(responses.PayloadTooLarge), error('INTERNAL'), false],
      ['503', jsonSchema(responses.Unavailable), error('NOT_REPLICATED'), true],
      ['503', jsonSchema(responses.Unavailable), error('INTERNAL'), false],
      ['500', jsonSchema(responses.Internal), error('INTERNAL'), true],
      ['500', jsonSchema(responses.Internal), { ...error('INTERNAL'), extra: 1 }, false],
      ['redrive', redrive, { ids: ['a-1'] }, true],
      ['redrive', redrive, { count: 10 }, true],
      ['redrive', redrive, {}, true],
      ['redrive', redrive, { ids: ['a-1'], count: 10 }, false],
      ['redrive', redrive, { count: 10, extra: 1 }, false],
      ['Job', schemaRef('Job'), { ...job, priority: -1000, id: 'order-7::Xq3kP9sLm2VbT7wZ' }, true],
      ['Job', schemaRef('Job'), { ...job, priority: undefined }, false],
      ['Job', schemaRef('Job'), { ...job, priority: 1001 }, false],
      ['Job', schemaRef('Job'), { ...job, priority: 1.5 }, false],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', delay: 1, priority: 1000 }, true],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', delay: 1, priority: -1001 }, false],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', delay: 1, dedupe: { key: 'order-7' } }, true],
      [
        'NewJob',
        schemaRef('NewJob'),
        { topic: 'example', runAt: 1_900_000_000_000, dedupe: { key: 'a:b', window: '30d' } },
        true,
      ],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', dedupe: { key: 'order-7' } }, false],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', delay: 1, dedupe: { key: 'a::b' } }, false],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', delay: 1, dedupe: { key: 'x'.repeat(111) } }, false],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', delay: 1, dedupe: { key: 'k', window: 0 } }, false],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', delay: 1, dedupe: { key: 'k', extra: 1 } }, false],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', debounce: { key: 'k', period: '500ms' } }, true],
      [
        'NewJob',
        schemaRef('NewJob'),
        { topic: 'example', debounce: { key: 'k', period: 0.01, maxWait: 604800 } },
        true,
      ],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', debounce: { key: 'k', period: 0.001 } }, false],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', debounce: { key: 'k' } }, false],
      ['NewJob', schemaRef('NewJob'), { topic: 'example', delay: 1, debounce: { key: 'k', period: 1 } }, false],
      [
        'NewJob',
        schemaRef('NewJob'),
        { topic: 'example', delay: 1, dedupe: { key: 'k' }, debounce: { key: 'k', period: 1 } },
        false,
      ],
      ['JobReplacement', schemaRef('JobReplacement'), { delay: 1, priority: 3 }, true],
      ['JobReplacement', schemaRef('JobReplacement'), { delay: 1, dedupe: { key: 'k' } }, false],
      ['JobDuplicate', schemaRef('JobDuplicate'), { job, duplicateOf: job.id }, true],
      ['JobDuplicate', schemaRef('JobDuplicate'), { job: null, duplicateOf: job.id }, true],
      ['JobDuplicate', schemaRef('JobDuplicate'), { job: null }, false],
      ['JobDebounced', schemaRef('JobDebounced'), { job, debounced: true }, true],
      ['JobDebounced', schemaRef('JobDebounced'), { job: null, debounced: true }, false],
      ['JobDebounced', schemaRef('JobDebounced'), { job, debounced: false }, false],
      ['BatchResult', schemaRef('BatchResult'), { status: 200, job, duplicateOf: job.id }, true],
      ['BatchResult', schemaRef('BatchResult'), { status: 200, job: null, duplicateOf: job.id }, true],
      ['BatchResult', schemaRef('BatchResult'), { status: 200, job, debounced: true }, true],
      ['BatchResult', schemaRef('BatchResult'), { status: 200, job }, false],
      ['BatchResult', schemaRef('BatchResult'), { status: 201, job, debounced: true }, false],
    ];
    const wrong = cases.flatMap(([name, schema, value, valid], i) => {
      const v = contract.validator(schema, `case schema ${name}`);
      return v(JSON.parse(JSON.stringify(value))) === valid
        ? []
        : [
            `case ${i} (${name}) should be ${valid ? 'accepted' : 'refused'}: ${JSON.stringify(value)} ${contract.errorsText(v.errors)}`,
          ];
    });
    assert.deepEqual(wrong, []);
  });
});
