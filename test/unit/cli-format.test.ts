/**
 * What `dq` prints for people (lib/cli/format.ts): aligned tables, spans and times relative to a
 * fixed now, job, schedule and topic views, and failures with their details.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DeadJob, Job, Schedule, TopicStats } from '../../lib/client';
import {
  deadTable,
  failureText,
  jobTable,
  jobView,
  recurrence,
  scheduleTable,
  scheduleView,
  span,
  table,
  topicTable,
  truncate,
  when,
} from '../../lib/cli/format';

const NOW = Date.parse('2030-01-01T12:00:00.000Z');
const iso = (offsetMs: number) => new Date(NOW + offsetMs).toISOString();

function job(fields: Partial<Job> = {}): Job {
  return {
    topic: 'example',
    id: 'order-7',
    state: 'delayed',
    runAt: iso(300_000),
    createdAt: iso(-1000),
    updatedAt: iso(-1000),
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
    updatedBy: null,
    body: { orderId: 7 },
    attemptHistory: [],
    ...fields,
  };
}

function schedule(fields: Partial<Schedule> = {}): Schedule {
  return {
    topic: 'example',
    id: 'daily',
    cron: '0 9 * * 1-5',
    timezone: 'Europe/Berlin',
    catchUp: 'latest',
    paused: false,
    body: { report: 'daily' },
    maxAttempts: 5,
    ttr: 30,
    backoff: { type: 'fixed', delay: 30 },
    url: null,
    group: null,
    key: null,
    jitter: null,
    expireAfter: null,
    priority: 0,
    version: 2,
    createdAt: iso(-86_400_000),
    updatedAt: iso(-86_400_000),
    updatedBy: null,
    pending: { id: 'daily:20300102T080000Z', runAt: iso(72_000_000) },
    lastRunAt: null,
    nextRuns: [iso(72_000_000), iso(158_400_000)],
    ...fields,
  };
}

describe('dq output for people', () => {
  it('tables pad every column to its widest cell and trim the line ends', () => {
    assert.equal(
      table(
        ['ID', 'STATE', 'GROUP'],
        [
          ['a', 'delayed', '-'],
          ['long-id', 'ready', ''],
        ],
      ),
      'ID       STATE    GROUP\na        delayed  -\nlong-id  ready\n',
    );
    assert.equal(truncate('abcdef', 4), 'abc…');
    assert.equal(truncate('abcd', 4), 'abcd');
  });

  it('spans in their two largest units, times with how far from now', () => {
    assert.deepEqual([250, 45_000, 245_000, 3_600_000, 12_000_000, 90_061_000].map(span), [
      '250ms',
      '45s',
      '4m 5s',
      '1h',
      '3h 20m',
      '1d 1h',
    ]);
    assert.equal(when(iso(245_000), NOW), `${iso(245_000)} (in 4m 5s)`);
    assert.equal(when(iso(-3_000), NOW), `${iso(-3_000)} (3s ago)`);
    assert.equal(when(iso(-400), NOW), `${iso(-400)} (now)`);
    assert.equal(when(null, NOW), '-');
  });

  it('a job: every field on its line, the body in full; a list: one row per job, bodies and errors cut', () => {
    const view = jobView(job({ lastError: 'HTTP 500', group: 'order-7' }), NOW);
    assert.match(view, /^job +example\/order-7$/m);
    assert.match(view, /^runAt +2030-01-01T12:05:00.000Z \(in 5m\)$/m);
    assert.match(view, /^attempts +0 of 5$/m);
    assert.match(view, /^backoff +exponential 5s to 3600s, jitter 0.2$/m);
    assert.match(view, /^lastError +HTTP 500$/m);
    assert.match(view, /^body +\{"orderId":7\}$/m);
    assert.doesNotMatch(view, /^deadline/m, 'no deadline line for a job not running');
    assert.doesNotMatch(view, /^expiresAt/m, 'no expiresAt line for a job that never expires');
    assert.match(view, /^state +delayed\npriority +0\n/m);
    assert.match(jobView(job({ priority: 250 }), NOW), /^priority +250$/m);
    assert.doesNotMatch(view, /^callback/m, 'no callback line for a job without one');
    const hooked = job({ callback: { topic: 'webhook', url: 'https://x.example/cb', on: ['done', 'dead'] } });
    assert.match(jobView(hooked, NOW), /^callback +webhook on done,dead to https:\/\/x\.example\/cb$/m);
    assert.match(
      jobView(job({ callback: { topic: 'after', on: ['cancelled'] } }), NOW),
      /^callback +after on cancelled$/m,
    );
    const expired = jobView(job({ state: 'expired', expiresAt: iso(-60_000) }), NOW);
    assert.match(expired, /^state +expired$/m);
    assert.match(expired, /^expiresAt +2030-01-01T11:59:00.000Z \(1m ago\)$/m);

    const rows = jobTable([job(), job({ id: 'big', body: { text: 'x'.repeat(100) } })], NOW).split('\n');
    assert.match(rows[0]!, /^ID +STATE +RUN AT +ATTEMPTS +GROUP +BODY +LAST ERROR$/);
    assert.match(rows[1]!, /^order-7 +delayed +2030-01-01T12:05:00.000Z \(in 5m\) +0\/5 +- +\{"orderId":7\} +-$/);
    assert.match(rows[2]!, /\{"text":"x+…/);
    assert.equal(jobTable([], NOW), '(no jobs)\n');
  });

  it("a job's attempt history: one row an attempt, oldest first, errors on one line and cut; none without it", () => {
    const history: Job['attemptHistory'] = [
      {
        attempt: 1,
        startedAt: iso(-120_000),
        endedAt: iso(-119_500),
        outcome: 'failed',
        error: 'HTTP 500:\n' + 'x'.repeat(100),
        durationMs: 500,
        latenessMs: 12,
      },
      {
        attempt: 2,
        startedAt: iso(-60_000),
        endedAt: iso(-30_000),
        outcome: 'timedOut',
        error: 'ttr of 30s passed',
        durationMs: 30_000,
        latenessMs: 3,
      },
      {
        attempt: 3,
        startedAt: iso(-1000),
        endedAt: iso(-900),
        outcome: 'done',
        error: null,
        durationMs: 100,
        latenessMs: 0,
      },
    ];
    const lines = jobView(job({ state: 'done', attempts: 3, attemptHistory: history }), NOW).split('\n');
    const head = lines.findIndex((l) => /^attempt +outcome +started +took +late +error$/.test(l));
    assert.ok(head > 0, lines.join('\n'));
    const rows = lines.slice(head + 1).filter(Boolean);
    assert.equal(rows.length, 3);
    assert.match(rows[0]!, /^1 +failed +2030-01-01T11:58:00.000Z +.* +12ms +HTTP 500: x+…$/);
    assert.ok(rows[0]!.length < 200, 'the error is cut');
    assert.match(rows[1]!, /^2 +timedOut +.* +3ms +ttr of 30s passed$/);
    assert.match(rows[2]!, /^3 +done +.* +0ms +-$/);
    assert.doesNotMatch(jobView(job(), NOW), /^attempt +outcome/m, 'no table for a job with no history');
  });

  it('dead jobs with the time they died', () => {
    const dead: DeadJob = {
      ...job({ state: 'dead', attempts: 1, maxAttempts: 1, lastError: 'HTTP 500' }),
      diedAt: iso(-60_000),
    };
    assert.match(deadTable([dead], NOW), /^order-7 +2030-01-01T11:59:00.000Z \(1m ago\) +1\/1 +- +HTTP 500$/m);
    assert.match(jobView(dead, NOW), /^diedAt +.*\(1m ago\)$/m);
    assert.equal(deadTable([], NOW), '(no dead jobs)\n');
  });

  it('topics: counts, next due, lateness', () => {
    const stats: TopicStats = {
      topic: 'webhook',
      flow: false,
      paused: false,
      expired: 4,
      delayed: 3,
      ready: 0,
      running: 1,
      dead: 2,
      nextDueAt: iso(10_000),
      lateness: { windowSeconds: 300, started: 12, p50Ms: 4, p99Ms: 30, maxMs: 31 },
      oldestReadyAgeMs: null,
      lastHour: [],
    };
    const text = topicTable([stats], NOW);
    assert.match(
      text,
      /^TOPIC +DELAYED +READY +RUNNING +DEAD +EXPIRED +NEXT DUE +STARTED 5M +LATE P50 +LATE P99 +LATE MAX +OLDEST READY$/m,
    );
    assert.match(text, /^webhook +3 +0 +1 +2 +4 +2030-01-01T12:00:10.000Z \(in 10s\) +12 +4ms +30ms +31ms +-$/m);
  });

  it('schedules: how they recur, their next runs', () => {
    assert.equal(recurrence({ cron: '0 9 * * 1-5', timezone: 'Europe/Berlin' }), 'cron 0 9 * * 1-5 Europe/Berlin');
    assert.equal(recurrence({ every: 600 }), 'every 600s');
    const view = scheduleView(schedule(), NOW);
    assert.match(view, /^runs +cron 0 9 \* \* 1-5 Europe\/Berlin$/m);
    assert.match(view, /^pending +daily:20300102T080000Z at 2030-01-02T08:00:00.000Z \(in 20h\)$/m);
    assert.match(view, /^nextRuns +2030-01-02T08:00:00.000Z \(in 20h\)\n +2030-01-03T08:00:00.000Z \(in 1d 20h\)$/m);
    assert.match(view, /^jitter +- \(the topic's\)\nexpireAfter +-$/m);
    assert.match(scheduleView(schedule({ expireAfter: 600 }), NOW), /^expireAfter +600s$/m);
    assert.doesNotMatch(view, /^key /m, 'no flow key, no line');
    assert.match(scheduleView(schedule({ key: 'acme' }), NOW), /^group +-\nkey +acme$/m);
    assert.match(
      scheduleTable([schedule({ paused: true, cron: undefined, timezone: undefined, every: 60, nextRuns: [] })], NOW),
      /^daily +every 60s +paused +- +-$/m,
    );
    assert.equal(scheduleTable([], NOW), '(no schedules)\n');
  });

  it('failures: the code, the status, every detail, the job as it is', () => {
    assert.equal(
      failureText({
        exitCode: 1,
        code: 'VALIDATION_FAILED',
        status: 400,
        message: 'the job has 2 invalid fields',
        details: [
          { path: 'delay', message: 'must be ≥ 0' },
          { path: '', message: 'must be an object' },
        ],
      }),
      'dq: VALIDATION_FAILED (HTTP 400): the job has 2 invalid fields\n  delay: must be ≥ 0\n  (body): must be an object\n',
    );
    assert.equal(
      failureText({ exitCode: 1, code: 'JOB_EXISTS', status: 409, message: 'exists', job: job({ version: 3 }) }),
      'dq: JOB_EXISTS (HTTP 409): exists\n  the job as it is: example/order-7, state delayed, version 3\n',
    );
    assert.equal(
      failureText({ exitCode: 4, code: 'NETWORK_ERROR', status: 0, message: 'GET /topics failed' }),
      'dq: NETWORK_ERROR (no answer): GET /topics failed\n',
    );
    assert.equal(failureText({ exitCode: 2, code: 'USAGE', message: 'missing <id>' }), 'dq: USAGE: missing <id>\n');
  });
});
