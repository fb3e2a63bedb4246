/**
 * openapi.yaml cannot import lib/core/limits.ts, so it repeats each limit: this checks every number
 * it states against the constant, and its example error messages against what validation says.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { DEFAULTS, ID_PATTERN, resolveQueueConfig, TOPIC_PATTERN } from '../../lib/core/queue-config';
import {
  BATCH_JOBS,
  DEAD_PAGE,
  DEBOUNCE_MAX_WAIT_SECONDS,
  DEBOUNCE_PERIOD_SECONDS,
  DEDUPE_WINDOW_SECONDS,
  KEYED_KEY_LENGTH,
  PRIORITY,
  EARLIEST_RUN_AT_MS,
  JITTER_SECONDS,
  JOBS_PAGE,
  MAX_ATTEMPTS,
  REDRIVE_COUNT,
  REDRIVE_IDS,
  SCHEDULES_PAGE,
  TTR_SECONDS,
  URL_MAX_LENGTH,
} from '../../lib/core/limits';
import { SCHEDULE_ID_MAX } from '../../lib/core/schedule';
import {
  REFUSAL,
  HttpError,
  refusalError,
  validateSchedule,
  badCursor,
  checkGroupRef,
  checkJobRef,
  LISTED_STATES,
  parseIfMatch,
  validateBatch,
  validateJob,
  validateJobsQuery,
  validateSchedulesQuery,
} from '../../lib/testing';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the parsed openapi.yaml, walked by property paths; a wrong path fails the test
type Json = Record<string, any>;
const spec = parse(readFileSync(join(__dirname, '..', '..', 'openapi.yaml'), 'utf8')) as Json;
const schemas = spec.components.schemas as Json;
const jsonBody = (operation: Json) => operation.requestBody.content['application/json'];
/** An example's value, its `$ref` to components/examples resolved. */
const exampleValue = (example: Json): Json =>
  (example.$ref ? spec.components.examples[String(example.$ref).split('/').pop()!] : example).value;

/** The error body validation throws for `fn`, as the API sends it. */
function refusal(fn: () => unknown): Json {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof HttpError);
    return {
      error: {
        code: error.code,
        message: error.message,
        ...(error.details !== undefined ? { details: error.details } : {}),
      },
    };
  }
  assert.fail('expected a validation error');
}

describe('openapi.yaml states the limits of lib/core/limits.ts', () => {
  it('a batch: 1 to BATCH_JOBS.max jobs', () => {
    const batch = spec.paths['/jobs/batch'].post;
    const jobs = jsonBody(batch).schema.properties.jobs;
    assert.deepEqual([jobs.minItems, jobs.maxItems], [BATCH_JOBS.min, BATCH_JOBS.max]);
    assert.equal(batch.summary, `Add up to ${BATCH_JOBS.max} jobs`);
    assert.match(batch.responses['400'].description, new RegExp(`more than ${BATCH_JOBS.max}\\b`));
    const example = batch.responses['400'].content['application/json'].examples.empty.value;
    assert.deepEqual(
      example,
      refusal(() => validateBatch({})),
    );
  });

  it('a redrive: ids, count and the default count', () => {
    const redrive = spec.paths['/topics/{topic}/dead/redrive'].post;
    const { ids, count } = jsonBody(redrive).schema.properties;
    assert.deepEqual([ids.minItems, ids.maxItems], [REDRIVE_IDS.min, REDRIVE_IDS.max]);
    assert.deepEqual([count.minimum, count.maximum], [REDRIVE_COUNT.min, REDRIVE_COUNT.max]);
    assert.match(redrive.description, new RegExp(`no body redrives the ${REDRIVE_COUNT.default} oldest`));
  });

  it('a page of dead jobs: limit and its default', () => {
    const parameters = spec.paths['/topics/{topic}/dead'].get.parameters as Json[];
    const limit = parameters.find((p) => p.name === 'limit')!.schema;
    assert.deepEqual([limit.minimum, limit.maximum, limit.default], [DEAD_PAGE.min, DEAD_PAGE.max, DEAD_PAGE.default]);
  });

  it('a page of a listing (a state, a group): limit and its default; the states listed', () => {
    const limit = spec.components.parameters.PageLimit.schema;
    assert.deepEqual([limit.minimum, limit.maximum, limit.default], [JOBS_PAGE.min, JOBS_PAGE.max, JOBS_PAGE.default]);
    const state = (spec.paths['/topics/{topic}/jobs'].get.parameters as Json[]).find((p) => p.name === 'state')!.schema;
    assert.deepEqual([state.enum, state.default], [[...LISTED_STATES], 'delayed']);
    for (const path of ['/topics/{topic}/jobs', '/topics/{topic}/groups/{group}']) {
      const refs = (spec.paths[path].get.parameters as Json[]).map((p) => p.$ref ?? p.name);
      assert.ok(
        refs.includes('#/components/parameters/PageLimit') && refs.includes('#/components/parameters/PageCursor'),
        path,
      );
    }
  });

  it('a page of schedules: limit and its default; a schedule id leaves room for the occurrence suffix; every at most maxDelay', () => {
    const parameters = spec.paths['/schedules'].get.parameters as Json[];
    const limit = parameters.find((p) => p.name === 'limit')!.schema;
    assert.deepEqual(
      [limit.minimum, limit.maximum, limit.default],
      [SCHEDULES_PAGE.min, SCHEDULES_PAGE.max, SCHEDULES_PAGE.default],
    );
    assert.ok(parameters.some((p) => p.$ref === '#/components/parameters/PageCursor'));
    assert.equal(schemas.ScheduleId.pattern, `^[A-Za-z0-9._:-]{1,${SCHEDULE_ID_MAX}}$`);
    assert.match(
      spec.paths['/schedules/{topic}/{id}'].put.responses['400'].description,
      new RegExp(`over ${SCHEDULE_ID_MAX} characters`),
    );
    assert.deepEqual(
      [
        schemas.ScheduleInput.properties.every.oneOf[0].minimum,
        schemas.ScheduleInput.properties.every.oneOf[0].maximum,
      ],
      [1, DEFAULTS.maxDelay],
    );
  });

  it('its example schedule errors are the ones validation gives', () => {
    const config = resolveQueueConfig({ topics: { example: {}, webhook: { kind: 'webhook' } } });
    const put = spec.paths['/schedules/{topic}/{id}'].put.responses['400'].content['application/json'].examples;
    const cases: [string, string, string, unknown][] = [
      ['badCron', 'example', 'r', { cron: '61 * * * *' }],
      ['badTimezone', 'example', 'r', { cron: '0 9 * * *', timezone: 'Mars/Olympus' }],
      ['cronAndEvery', 'example', 'r', { cron: '0 9 * * *', every: 60 }],
      ['neither', 'example', 'r', { body: 1 }],
      ['everyTooSmall', 'example', 'r', { every: 0 }],
      ['idTooLong', 'example', 'x'.repeat(SCHEDULE_ID_MAX + 1), { every: 5 }],
      ['unknownTopic', 'nope', 'r', { every: 5 }],
    ];
    for (const [name, topic, id, input] of cases)
      assert.deepEqual(
        exampleValue(put[name]),
        refusal(() => validateSchedule(topic, id, input, config)),
        name,
      );
    const list = spec.paths['/schedules'].get.responses['400'].content['application/json'].examples;
    assert.deepEqual(
      list.noTopic.value,
      refusal(() => validateSchedulesQuery({})),
    );
    assert.deepEqual(
      list.badLimit.value,
      refusal(() => validateSchedulesQuery({ topic: 'example', limit: String(SCHEDULES_PAGE.max + 1) })),
    );
  });

  it("a job's fields: ttr, maxAttempts, url, runAt, delay, topic and id", () => {
    const job = schemas.JobOptions.properties;
    assert.deepEqual([job.ttr.oneOf[0].minimum, job.ttr.oneOf[0].maximum], [TTR_SECONDS.min, TTR_SECONDS.max]);
    assert.deepEqual(
      [job.jitter.oneOf[0].minimum, job.jitter.oneOf[0].maximum],
      [JITTER_SECONDS.min, JITTER_SECONDS.max],
    );
    for (const field of ['delay', 'ttr', 'jitter'])
      assert.equal(job[field].oneOf[1].$ref, '#/components/schemas/Duration', `${field} takes a duration`);
    assert.equal(schemas.Duration.pattern, '^\\d+(\\.\\d+)?(ms|s|m|h|d)$');
    assert.deepEqual([job.maxAttempts.minimum, job.maxAttempts.maximum], [MAX_ATTEMPTS.min, MAX_ATTEMPTS.max]);
    assert.equal(job.url.maxLength, URL_MAX_LENGTH);
    assert.equal(job.runAt.oneOf[0].minimum, EARLIEST_RUN_AT_MS);
    assert.equal(job.delay.oneOf[0].maximum, DEFAULTS.maxDelay);
    assert.equal(schemas.TopicName.pattern, TOPIC_PATTERN.source);
    assert.equal(schemas.JobId.pattern, ID_PATTERN.source);
    assert.equal(schemas.GroupName.pattern, ID_PATTERN.source);
    assert.equal(schemas.JobFields.properties.group.pattern, ID_PATTERN.source);
  });

  it("a job's priority, dedupe window, debounce period and max wait, and a dedupe or debounce key", () => {
    const range = (node: Json) => [node.minimum, node.maximum];
    for (const node of [schemas.JobOptions.properties.priority, schemas.JobFields.properties.priority])
      assert.deepEqual(range(node), [PRIORITY.min, PRIORITY.max]);
    const window = schemas.DedupeSpec.properties.window.oneOf;
    assert.deepEqual(range(window[0]), [DEDUPE_WINDOW_SECONDS.min, DEDUPE_WINDOW_SECONDS.max]);
    assert.match(schemas.DedupeSpec.properties.window.description, new RegExp(`${DEDUPE_WINDOW_SECONDS.default}$`));
    const { period, maxWait } = schemas.DebounceSpec.properties;
    assert.deepEqual(range(period.oneOf[0]), [DEBOUNCE_PERIOD_SECONDS.min, DEBOUNCE_PERIOD_SECONDS.max]);
    assert.deepEqual(range(maxWait.oneOf[0]), [DEBOUNCE_MAX_WAIT_SECONDS.min, DEBOUNCE_MAX_WAIT_SECONDS.max]);
    for (const node of [window, period.oneOf, maxWait.oneOf])
      assert.equal(node[1].$ref, '#/components/schemas/Duration', 'takes a duration');
    assert.equal(schemas.KeyedKey.maxLength, KEYED_KEY_LENGTH);
    assert.equal(schemas.KeyedKey.pattern, `^(?!.*::)${ID_PATTERN.source.replace(/^\^|\{[^}]*\}\$$/g, '')}+$`);
  });

  it('its example errors are the ones validation gives', () => {
    const config = resolveQueueConfig({ topics: { example: {}, webhook: { kind: 'webhook' } } });
    const invalid = spec.components.responses.BadJob.content['application/json'].examples.invalid.value;
    const actual = refusal(() => validateJob({ topic: 'example', delay: -1, dealy: 3 }, config));
    const byPath = (a: { path: string }, b: { path: string }) => a.path.localeCompare(b.path);
    assert.deepEqual(
      { ...invalid.error, details: [...invalid.error.details].sort(byPath) },
      { ...actual.error, details: [...actual.error.details].sort(byPath) },
    );
    const unknown = exampleValue(spec.components.responses.BadJob.content['application/json'].examples.unknownTopic);
    assert.deepEqual(
      unknown,
      refusal(() => validateJob({ topic: 'nope', delay: 1 }, config)),
    );
    const badId = spec.components.responses.BadRef.content['application/json'].examples.badId.value;
    assert.deepEqual(
      badId,
      refusal(() => checkJobRef('example', 'bad id')),
    );

    const badIfMatch = spec.components.examples.BadIfMatch.value;
    for (const header of ['W/"3"', '3', '"3", "4"'])
      assert.deepEqual(
        badIfMatch,
        refusal(() => parseIfMatch(header)),
        header,
      );
    const badGroup = spec.components.responses.BadGroup.content['application/json'].examples;
    assert.deepEqual(
      badGroup.badGroup.value,
      refusal(() => checkGroupRef('example', 'bad group')),
    );
    assert.deepEqual(
      badGroup.badCursor.value,
      refusal(() => {
        throw badCursor();
      }),
    );
    const listing = spec.paths['/topics/{topic}/jobs'].get.responses['400'].content['application/json'].examples;
    assert.deepEqual(
      listing.badState.value,
      refusal(() => validateJobsQuery({ state: 'done' })),
    );
    assert.deepEqual(
      listing.fromAfterTo.value,
      refusal(() => validateJobsQuery({ from: '2027-01-01T00:00:01Z', to: '2027-01-01T00:00:00Z' })),
    );
    const mismatch = spec.components.responses.VersionMismatch.content['application/json'].examples;
    const version = refusalError(REFUSAL.VERSION_MISMATCH, 'example', 'close-order-7');
    assert.deepEqual([version.status, version.code], [412, 'VERSION_MISMATCH']);
    for (const example of [mismatch.changed.value, mismatch.gone.value])
      assert.deepEqual(example.error, { code: version.code, message: version.message });
  });
});

describe('lib/client.ts (self-contained, so it repeats the batch limit)', () => {
  it('splits batches at BATCH_JOBS.max', () => {
    const source = readFileSync(join(__dirname, '..', '..', 'lib', 'client.ts'), 'utf8');
    const stated = source.match(/const MAX_BATCH = (\d+);/);
    assert.ok(stated, 'lib/client.ts declares MAX_BATCH');
    assert.equal(Number(stated[1]), BATCH_JOBS.max);
  });
});
