/**
 * Validation of a schedule as PUT /schedules/{topic}/{id} receives it: every problem at once, then
 * the schedule normalised for the engine. The arithmetic of run times is lib/core/schedule.ts.
 */
import type { NewSchedule, StoredSpec } from '../engine';
import { layoutFor } from '../engine';
import type { QueueConfig } from '../core/queue-config';
import { ID_PATTERN, TOPIC_PATTERN } from '../core/queue-config';
import { EXPIRE_AFTER_SECONDS } from '../core/limits';
import { checkPriority } from './keyed-validation';
import {
  canonicalZone,
  cronProblem,
  ID_MAX,
  JITTER_CHECK_RUNS,
  nextRuns,
  OCCURRENCE_SUFFIX_LENGTH,
  SCHEDULE_ID_MAX,
  shortestGapMs,
  type CatchUp,
  type Recurrence,
} from '../core/schedule';
import { HttpError, type FieldProblem } from './api-errors';
import {
  checkBodySize,
  checkFlowKey,
  checkJitter,
  checkJobOptions,
  requireTopic,
  secondsOf,
  secondsRule,
  throwProblems,
} from './validation';

const SCHEDULE_FIELDS = [
  'cron',
  'every',
  'timezone',
  'body',
  'paused',
  'catchUp',
  'maxAttempts',
  'backoff',
  'ttr',
  'url',
  'group',
  'jitter',
  'key',
  'expireAfter',
  'priority',
];

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Refuses a jitter (ms) not smaller than the shortest time between two runs of `recurrence` (for
 * cron, among its next JITTER_CHECK_RUNS after `now`): it would hold an occurrence back past the
 * next one's run time.
 */
function checkScheduleJitter(jitterMs: number, recurrence: Recurrence, now: number, problems: FieldProblem[]): void {
  const gap = shortestGapMs(recurrence, now);
  if (gap === null || jitterMs < gap) return;
  const between =
    'every' in recurrence ? 'its period' : `the shortest time between two of its next ${JITTER_CHECK_RUNS} runs`;
  problems.push({
    path: 'jitter',
    message: `must be less than ${between}, ${gap / 1000} s: a jitter holds an occurrence back by less than the time to the next run`,
  });
}

/**
 * Each occurrence's expiry (ms after its due time): the schedule's own `expireAfter`, checked by the rule of a job's
 * (lib/api/validation.ts), else its topic's default (`topicMs`) as it is at the put; undefined for none, or when a
 * problem was added. A job's `expiresAt` (one time) has no meaning for a schedule: its problem says what to give.
 */
function checkExpireAfter(
  input: Record<string, unknown>,
  topicMs: number | undefined,
  problems: FieldProblem[],
): number | undefined {
  if (input.expiresAt !== undefined) {
    problems.push({
      path: 'expiresAt',
      message: "is not a schedule field: give expireAfter, seconds after each occurrence's due time",
    });
  }
  if (input.expireAfter === undefined) return topicMs;
  const seconds = secondsOf(input.expireAfter);
  const { min, max } = EXPIRE_AFTER_SECONDS;
  if (seconds === undefined || seconds < min || seconds > max) {
    problems.push({ path: 'expireAfter', message: secondsRule(min, max) });
    return undefined;
  }
  return Math.round(seconds * 1000);
}

/**
 * Validates a put of schedule topic/id and returns it normalised. Reports every problem at once:
 * 400 VALIDATION_FAILED naming each field, 400 UNKNOWN_TOPIC, 413 PAYLOAD_TOO_LARGE. `now` (epoch
 * ms) only serves to refuse an expression that never matches a date after it.
 */
export function validateSchedule(
  topic: string,
  id: string,
  input: unknown,
  config: QueueConfig,
  now = Date.now(),
): NewSchedule {
  if (!isObject(input)) {
    throw new HttpError(400, 'VALIDATION_FAILED', 'the schedule must be a JSON object', [
      { path: '', message: 'must be an object' },
    ]);
  }
  const problems: FieldProblem[] = [];
  const problem = (path: string, message: string) => problems.push({ path, message });
  for (const key of Object.keys(input)) {
    if (!SCHEDULE_FIELDS.includes(key) && key !== 'expiresAt')
      problem(key, `is not a schedule field (fields: ${SCHEDULE_FIELDS.join(', ')})`);
  }
  const topicOk = TOPIC_PATTERN.test(topic);
  if (!topicOk) problem('topic', `must match ${TOPIC_PATTERN.source}`);
  if (!ID_PATTERN.test(id)) problem('id', `must match ${ID_PATTERN.source}`);
  else if (id.length > SCHEDULE_ID_MAX) {
    problem(
      'id',
      `must be at most ${SCHEDULE_ID_MAX} characters: an occurrence's id adds ${OCCURRENCE_SUFFIX_LENGTH} (":YYYYMMDDTHHMMSSZ") and ids have at most ${ID_MAX}`,
    );
  }

  let recurrence: Recurrence | undefined;
  const { cron, every, timezone } = input;
  if (cron !== undefined && every !== undefined) problem('cron', 'give either cron or every, not both');
  else if (cron === undefined && every === undefined) problem('cron', 'give cron (an expression) or every (seconds)');
  else if (cron !== undefined) {
    let zone: string | undefined = 'UTC';
    if (timezone !== undefined) {
      zone = typeof timezone === 'string' ? canonicalZone(timezone) : undefined;
      if (!zone) problem('timezone', 'must be an IANA time zone, like Europe/Berlin or America/New_York');
    }
    const bad = cronProblem(cron);
    if (bad) problem('cron', bad);
    else if (zone) {
      recurrence = { cron: (cron as string).trim(), timezone: zone };
      if (nextRuns(recurrence, now, 1).length === 0) problem('cron', 'never matches a date from now on');
    }
  } else {
    const maxEvery = Math.floor(config.maxDelayMs / 1000);
    const seconds = secondsOf(every);
    if (seconds === undefined || !Number.isInteger(seconds) || seconds < 1 || seconds > maxEvery) {
      problem(
        'every',
        `must be a whole number of seconds from 1 to ${maxEvery}, or a duration like "10m" (s, m, h, d)`,
      );
    } else recurrence = { every: seconds };
    if (timezone !== undefined) problem('timezone', 'applies to cron only: every counts seconds in real time');
  }
  let catchUp: CatchUp = 'latest';
  if (input.catchUp !== undefined) {
    if (input.catchUp === 'latest' || input.catchUp === 'none') catchUp = input.catchUp;
    else problem('catchUp', 'must be "latest" (run the latest missed occurrence once) or "none"');
  }
  if (input.paused !== undefined && typeof input.paused !== 'boolean') problem('paused', 'must be true or false');
  const options = checkJobOptions(input, topicOk ? topic : undefined, config, problems);
  const key = checkFlowKey(input.key, topicOk ? topic : undefined, config, problems, 'schedule');
  const jitterMs = checkJitter(input.jitter, problems);
  const expireAfterMs = checkExpireAfter(
    input,
    topicOk ? config.topics.get(topic)?.expireAfterMs : undefined,
    problems,
  );
  const priority = checkPriority(input.priority, topicOk ? config.topics.get(topic) : undefined, problems);
  if (jitterMs !== undefined && jitterMs > 0 && recurrence) checkScheduleJitter(jitterMs, recurrence, now, problems);
  let body: string | undefined;
  try {
    const text = JSON.stringify(input.body === undefined ? null : input.body);
    if (typeof text === 'string') body = text;
  } catch {
    body = undefined;
  }
  if (body === undefined) problem('body', 'must be a JSON value');
  throwProblems(problems, 'schedule');
  requireTopic(config, topic);
  checkBodySize(body!, config, true);
  // expireAfterMs and priority ride in the definition, which the schedule scripts read them from
  // (lib/engine/schedules.ts specOf)
  const spec: StoredSpec = {
    ...recurrence!,
    catchUp,
    paused: input.paused === true,
    ...(jitterMs !== undefined ? { jitterMs } : {}),
    ...(expireAfterMs !== undefined ? { expireAfterMs } : {}),
    ...(priority !== undefined ? { priority } : {}),
  };
  return {
    topic,
    id,
    partition: layoutFor(config).placeOf(config.topics.get(topic) ?? topic, id),
    spec,
    body: body!,
    ...options,
    ...(key !== undefined ? { key } : {}),
  };
}
