/**
 * lib/core/schedule.ts: validation of a schedule, and its run times by our written rules: a local time
 * that does not exist runs once, at the first valid instant after it; one that occurs twice runs
 * once, at its first occurrence; `every` counts real seconds. Transitions of 2026 and 2027:
 *   Europe/Berlin     spring 2026-03-29, 2027-03-28 at 01:00Z (02:00 CET -> 03:00 CEST)
 *                     fall   2026-10-25, 2027-10-31 at 01:00Z (03:00 CEST -> 02:00 CET)
 *   America/New_York  spring 2026-03-08, 2027-03-14 at 07:00Z (02:00 EST -> 03:00 EDT)
 *                     fall   2026-11-01, 2027-11-07 at 06:00Z (02:00 EDT -> 01:00 EST)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveQueueConfig } from '../../lib/core/queue-config';
import {
  advancePlan,
  catchUpPlan,
  CATCH_UP_GRACE_MS,
  instantOf,
  jitterWindowMs,
  latestRun,
  nextRuns,
  occurrenceId,
  SCHEDULE_ID_MAX,
  shortestGapMs,
  type Recurrence,
  type ScheduleSpec,
} from '../../lib/core/schedule';
import { HttpError, partitionOf, routingId, validateSchedule } from '../../lib/testing';

const at = (text: string) => Date.parse(text);
const isos = (runs: number[]) => runs.map((ms) => new Date(ms).toISOString().replace('.000Z', 'Z'));
const runs = (r: Recurrence, after: string, n: number) => isos(nextRuns(r, at(after), n));
const berlin = (cron: string): Recurrence => ({ cron, timezone: 'Europe/Berlin' });
const newYork = (cron: string): Recurrence => ({ cron, timezone: 'America/New_York' });

describe('schedule run times: a local time that does not exist (spring forward) runs once, at the first valid instant after it', () => {
  it('Europe/Berlin, daily 02:30 on 2026-03-29 and 2027-03-28 runs at 03:00 CEST (01:00Z)', () => {
    assert.deepEqual(runs(berlin('30 2 * * *'), '2026-03-28T12:00:00Z', 3), [
      '2026-03-29T01:00:00Z',
      '2026-03-30T00:30:00Z',
      '2026-03-31T00:30:00Z',
    ]);
    assert.deepEqual(runs(berlin('30 2 * * *'), '2027-03-27T12:00:00Z', 2), [
      '2027-03-28T01:00:00Z',
      '2027-03-29T00:30:00Z',
    ]);
  });

  it('America/New_York, daily 02:30 on 2026-03-08 and 2027-03-14 runs at 03:00 EDT (07:00Z)', () => {
    assert.deepEqual(runs(newYork('30 2 * * *'), '2026-03-07T12:00:00Z', 2), [
      '2026-03-08T07:00:00Z',
      '2026-03-09T06:30:00Z',
    ]);
    assert.deepEqual(runs(newYork('30 2 * * *'), '2027-03-13T12:00:00Z', 2), [
      '2027-03-14T07:00:00Z',
      '2027-03-15T06:30:00Z',
    ]);
  });

  it('hourly at :30 runs the missing 02:30 at the jump (croner alone skips it: an interval job)', () => {
    assert.deepEqual(runs(berlin('30 * * * *'), '2026-03-29T00:00:00Z', 3), [
      '2026-03-29T00:30:00Z',
      '2026-03-29T01:00:00Z',
      '2026-03-29T01:30:00Z',
    ]);
    assert.deepEqual(runs(newYork('30 * * * *'), '2027-03-14T06:00:00Z', 3), [
      '2027-03-14T06:30:00Z',
      '2027-03-14T07:00:00Z',
      '2027-03-14T07:30:00Z',
    ]);
  });

  it('hourly on the hour: 02:00 and 03:00 meet at the jump and run once', () => {
    assert.deepEqual(runs(berlin('0 * * * *'), '2026-03-28T23:30:00Z', 4), [
      '2026-03-29T00:00:00Z',
      '2026-03-29T01:00:00Z',
      '2026-03-29T02:00:00Z',
      '2026-03-29T03:00:00Z',
    ]);
    assert.deepEqual(runs(newYork('0 * * * *'), '2026-03-08T05:30:00Z', 3), [
      '2026-03-08T06:00:00Z',
      '2026-03-08T07:00:00Z',
      '2026-03-08T08:00:00Z',
    ]);
  });

  it('every 20 minutes: the gap times 02:00, 02:20, 02:40 run once together, at the jump', () => {
    assert.deepEqual(runs(berlin('*/20 * * * *'), '2027-03-28T00:30:00Z', 4), [
      '2027-03-28T00:40:00Z',
      '2027-03-28T01:00:00Z',
      '2027-03-28T01:20:00Z',
      '2027-03-28T01:40:00Z',
    ]);
  });

  it('instantOf maps every reading of the gap to the jump', () => {
    for (const reading of ['2026-03-29T02:00:00Z', '2026-03-29T02:30:00Z', '2026-03-29T02:59:59Z']) {
      assert.equal(instantOf(at(reading), 'Europe/Berlin'), at('2026-03-29T01:00:00Z'), reading);
    }
  });
});

describe('schedule run times: a local time that occurs twice (fall back) runs once, at its first occurrence', () => {
  it('Europe/Berlin, daily 02:30 on 2026-10-25 and 2027-10-31 runs at 02:30 CEST only', () => {
    assert.deepEqual(runs(berlin('30 2 * * *'), '2026-10-24T12:00:00Z', 2), [
      '2026-10-25T00:30:00Z',
      '2026-10-26T01:30:00Z',
    ]);
    assert.deepEqual(runs(berlin('30 2 * * *'), '2027-10-30T12:00:00Z', 2), [
      '2027-10-31T00:30:00Z',
      '2027-11-01T01:30:00Z',
    ]);
  });

  it('America/New_York, daily 01:30 on 2026-11-01 and 2027-11-07 runs at 01:30 EDT only', () => {
    assert.deepEqual(runs(newYork('30 1 * * *'), '2026-10-31T12:00:00Z', 2), [
      '2026-11-01T05:30:00Z',
      '2026-11-02T06:30:00Z',
    ]);
    assert.deepEqual(runs(newYork('30 1 * * *'), '2027-11-06T12:00:00Z', 2), [
      '2027-11-07T05:30:00Z',
      '2027-11-08T06:30:00Z',
    ]);
  });

  it('Europe/Berlin daily 01:30 is not ambiguous on its fall-back days (its repeated hour is 02:00-03:00)', () => {
    assert.deepEqual(runs(berlin('30 1 * * *'), '2026-10-24T12:00:00Z', 2), [
      '2026-10-24T23:30:00Z',
      '2026-10-26T00:30:00Z',
    ]);
  });

  it('hourly across fall back: the repeated hour runs once (croner alone runs it twice: an interval job)', () => {
    assert.deepEqual(runs(berlin('0 * * * *'), '2026-10-24T23:30:00Z', 3), [
      '2026-10-25T00:00:00Z',
      '2026-10-25T02:00:00Z',
      '2026-10-25T03:00:00Z',
    ]);
    assert.deepEqual(runs(newYork('0 * * * *'), '2026-11-01T03:30:00Z', 4), [
      '2026-11-01T04:00:00Z',
      '2026-11-01T05:00:00Z',
      '2026-11-01T07:00:00Z',
      '2026-11-01T08:00:00Z',
    ]);
    assert.deepEqual(runs(newYork('0 * * * *'), '2027-11-07T04:30:00Z', 2), [
      '2027-11-07T05:00:00Z',
      '2027-11-07T07:00:00Z',
    ]);
  });

  it('asked from inside the second pass, the next run is after the repeated hour, and the latest run is in the first pass', () => {
    assert.deepEqual(runs(newYork('0 * * * *'), '2026-11-01T06:30:00Z', 1), ['2026-11-01T07:00:00Z']);
    assert.deepEqual(isos([latestRun(newYork('0 * * * *'), at('2026-11-01T06:30:00Z'))!]), ['2026-11-01T05:00:00Z']);
    assert.deepEqual(isos([latestRun(newYork('30 1 * * *'), at('2026-11-01T06:45:00Z'))!]), ['2026-11-01T05:30:00Z']);
  });
});

describe('schedule run times: seconds, every, Feb 29', () => {
  it('every second in UTC, and in a zone across both transitions (the gap closes, the repeated hour runs once)', () => {
    assert.deepEqual(runs({ cron: '* * * * * *', timezone: 'UTC' }, '2026-06-01T00:00:00.500Z', 3), [
      '2026-06-01T00:00:01Z',
      '2026-06-01T00:00:02Z',
      '2026-06-01T00:00:03Z',
    ]);
    assert.deepEqual(runs(berlin('* * * * * *'), '2026-03-29T00:59:58Z', 3), [
      '2026-03-29T00:59:59Z',
      '2026-03-29T01:00:00Z',
      '2026-03-29T01:00:01Z',
    ]);
    assert.deepEqual(runs(newYork('* * * * * *'), '2026-11-01T05:59:58Z', 3), [
      '2026-11-01T05:59:59Z',
      '2026-11-01T07:00:00Z',
      '2026-11-01T07:00:01Z',
    ]);
  });

  it('every N seconds: at the multiples of N since the epoch, in real time whatever the zone', () => {
    assert.deepEqual(runs({ every: 1 }, '2026-11-01T05:59:58.200Z', 3), [
      '2026-11-01T05:59:59Z',
      '2026-11-01T06:00:00Z',
      '2026-11-01T06:00:01Z',
    ]);
    assert.deepEqual(runs({ every: 3600 }, '2026-10-25T00:10:00Z', 3), [
      '2026-10-25T01:00:00Z',
      '2026-10-25T02:00:00Z',
      '2026-10-25T03:00:00Z',
    ]);
    assert.deepEqual(runs({ every: 90 }, '2026-01-01T00:00:00Z', 2), ['2026-01-01T00:01:30Z', '2026-01-01T00:03:00Z']);
    assert.equal(latestRun({ every: 60 }, at('2026-01-01T00:01:59Z')), at('2026-01-01T00:01:00Z'));
  });

  it('Feb 29: `0 0 29 2 *` runs 2028-02-29 after 2026, then 2032', () => {
    assert.deepEqual(runs({ cron: '0 0 29 2 *', timezone: 'UTC' }, '2026-01-01T00:00:00Z', 2), [
      '2028-02-29T00:00:00Z',
      '2032-02-29T00:00:00Z',
    ]);
    assert.deepEqual(runs(berlin('0 0 29 2 *'), '2026-01-01T00:00:00Z', 1), ['2028-02-28T23:00:00Z']);
  });

  it('runs strictly after `after`; 6 fields put seconds first', () => {
    assert.deepEqual(runs({ cron: '0 0 * * *', timezone: 'UTC' }, '2026-01-01T00:00:00Z', 1), ['2026-01-02T00:00:00Z']);
    assert.deepEqual(runs({ cron: '15 0 0 * * *', timezone: 'UTC' }, '2026-01-01T00:00:00Z', 1), [
      '2026-01-01T00:00:15Z',
    ]);
  });

  it("occurrence ids: <schedule id>:<UTC time as YYYYMMDDTHHMMSSZ>, placed in the schedule's partition", () => {
    assert.equal(occurrenceId('daily-report', at('2027-03-28T01:00:00Z')), 'daily-report:20270328T010000Z');
    assert.equal(routingId('daily-report:20270328T010000Z'), 'daily-report');
    assert.equal(routingId('a:20270101T000000Z:20270328T010000Z'), 'a');
    assert.equal(routingId('plain:id'), 'plain:id');
    for (const id of ['daily-report', 'x', 'order:7']) {
      for (let s = 0; s < 20; s++) {
        const occurrence = occurrenceId(id, at('2027-01-01T00:00:00Z') + s * 3_600_000);
        assert.equal(partitionOf('reports', occurrence, 6), partitionOf('reports', id, 6));
      }
    }
  });
});

describe('catch-up: at most one run for the runs due, never a burst', () => {
  const hourly = (catchUp: 'latest' | 'none'): ScheduleSpec => ({
    cron: '0 * * * *',
    timezone: 'UTC',
    catchUp,
    paused: false,
  });

  it('on time: the pending occurrence runs, the next is the following one', () => {
    assert.deepEqual(catchUpPlan(hourly('latest'), at('2026-05-01T10:00:00Z'), at('2026-05-01T10:00:00.040Z')), {
      run: at('2026-05-01T10:00:00Z'),
      latest: at('2026-05-01T10:00:00Z'),
      next: at('2026-05-01T11:00:00Z'),
    });
  });

  it('latest: after four missed hours, only the latest runs', () => {
    const plan = catchUpPlan(hourly('latest'), at('2026-05-01T10:00:00Z'), at('2026-05-01T13:20:00Z'));
    assert.deepEqual(plan, {
      run: at('2026-05-01T13:00:00Z'),
      latest: at('2026-05-01T13:00:00Z'),
      next: at('2026-05-01T14:00:00Z'),
    });
  });

  it('none: missed runs are skipped; one within the grace still runs', () => {
    assert.equal(catchUpPlan(hourly('none'), at('2026-05-01T10:00:00Z'), at('2026-05-01T13:20:00Z')).run, null);
    assert.equal(
      catchUpPlan(hourly('none'), at('2026-05-01T10:00:00Z'), at('2026-05-01T10:00:00Z') + CATCH_UP_GRACE_MS).run,
      at('2026-05-01T10:00:00Z'),
    );
    assert.equal(
      catchUpPlan(hourly('none'), at('2026-05-01T10:00:00Z'), at('2026-05-01T10:00:00Z') + CATCH_UP_GRACE_MS + 1).run,
      null,
    );
  });

  it('nothing due: no run', () => {
    assert.deepEqual(catchUpPlan(hourly('latest'), at('2026-05-01T11:00:00Z'), at('2026-05-01T10:30:00Z')), {
      run: null,
      latest: null,
      next: at('2026-05-01T11:00:00Z'),
    });
  });
});

describe("the sweeper's advance: late is not missed", () => {
  const everySecond = (catchUp: 'latest' | 'none'): ScheduleSpec => ({ every: 1, catchUp, paused: false });
  const t0 = at('2026-05-01T10:00:00Z');

  it('a pending occurrence up to the grace late runs, and the next is the run right after it, even when due', () => {
    for (const catchUp of ['latest', 'none'] as const) {
      assert.deepEqual(
        advancePlan(everySecond(catchUp), t0, t0 + 2500),
        { run: t0, latest: t0, next: t0 + 1000 },
        catchUp,
      );
      assert.deepEqual(
        advancePlan(everySecond(catchUp), t0, t0 + CATCH_UP_GRACE_MS),
        { run: t0, latest: t0, next: t0 + 1000 },
        catchUp,
      );
    }
  });

  it('later than the grace the queue was down, and catch-up decides: latest once, or none', () => {
    const now = t0 + CATCH_UP_GRACE_MS + 500;
    assert.deepEqual(advancePlan(everySecond('latest'), t0, now), catchUpPlan(everySecond('latest'), t0, now));
    assert.deepEqual(advancePlan(everySecond('latest'), t0, now), {
      run: t0 + CATCH_UP_GRACE_MS,
      latest: t0 + CATCH_UP_GRACE_MS,
      next: t0 + CATCH_UP_GRACE_MS + 1000,
    });
    assert.equal(
      advancePlan(everySecond('none'), t0, now).run,
      t0 + CATCH_UP_GRACE_MS,
      'none: the latest run is only 0.5 s late, so it runs',
    );
    assert.equal(
      advancePlan({ every: 3600, catchUp: 'none', paused: false }, t0, t0 + 3600_000 + CATCH_UP_GRACE_MS + 1).run,
      null,
      'none: every run due is older than the grace',
    );
  });
});

describe('jitter: an occurrence is moved by less than the time to the next run', () => {
  it("jitterWindowMs: the jitter, cut to the time to the next run (a topic's default longer than the period, a spring-forward jump)", () => {
    assert.equal(jitterWindowMs({ every: 10 }, at('2026-06-01T00:00:10Z'), 600_000), 10_000);
    assert.equal(jitterWindowMs({ every: 3600 }, at('2026-06-01T01:00:00Z'), 600_000), 600_000);
    assert.equal(jitterWindowMs({ every: 10 }, at('2026-06-01T00:00:10Z'), 0), 0);
    // hourly at :30 in Berlin: 01:30 CET (00:30Z) is followed by the jump to 03:00 CEST (01:00Z), 30 minutes on
    assert.equal(jitterWindowMs(berlin('30 * * * *'), at('2026-03-29T00:30:00Z'), 3_000_000), 1_800_000);
    assert.equal(
      jitterWindowMs(berlin('30 * * * *'), at('2026-03-29T00:30:00Z'), 3_000_000, at('2026-03-29T01:00:00Z')),
      1_800_000,
      'the next run as the caller knows it',
    );
    assert.equal(jitterWindowMs(berlin('30 * * * *'), at('2026-03-29T01:00:00Z'), 3_000_000), 1_800_000);
    assert.equal(jitterWindowMs(berlin('30 * * * *'), at('2026-03-29T01:30:00Z'), 3_000_000), 3_000_000);
    assert.equal(
      jitterWindowMs({ cron: '0 0 29 2 *', timezone: 'UTC' }, at('2028-02-29T00:00:00Z'), 86_400_000),
      86_400_000,
    );
  });

  it('shortestGapMs: the period of every; for cron the shortest gap among its next runs', () => {
    const from = at('2026-06-01T00:00:00Z');
    assert.equal(shortestGapMs({ every: 90 }, from), 90_000);
    assert.equal(shortestGapMs({ cron: '*/5 * * * *', timezone: 'UTC' }, from), 300_000);
    assert.equal(shortestGapMs({ cron: '0 0,23 * * *', timezone: 'UTC' }, from), 3_600_000, '23:00 to 00:00');
    assert.equal(shortestGapMs(berlin('0 9 * * 1-5'), from), 86_400_000);
    assert.equal(
      shortestGapMs(berlin('30 1,3 * * *'), at('2026-03-28T12:00:00Z')),
      3_600_000,
      '01:30 CET to 03:30 CEST: 1 h, not 2',
    );
    assert.equal(shortestGapMs({ cron: '0 0 29 2 *', timezone: 'UTC' }, from), 4 * 365 * 86_400_000 + 86_400_000);
  });
});

describe('schedule validation: 400 naming the field', () => {
  const config = resolveQueueConfig({ topics: { reports: {}, hooks: { kind: 'webhook' } } });
  const now = at('2026-06-01T00:00:00Z');
  const fails = (input: unknown, id = 'daily'): string[] => {
    try {
      validateSchedule('reports', id, input, config, now);
    } catch (error) {
      assert.ok(
        error instanceof HttpError && error.status === 400 && error.code === 'VALIDATION_FAILED',
        String(error),
      );
      return (error.details as { path: string }[]).map((d) => d.path).sort();
    }
    assert.fail('expected 400 VALIDATION_FAILED');
  };

  it('refuses minute 61, an unknown zone, both or neither of cron and every, every below 1, and says which field', () => {
    assert.deepEqual(fails({ cron: '61 * * * *' }), ['cron']);
    assert.deepEqual(fails({ cron: '0 0 * * * * *' }), ['cron'], '7 fields');
    assert.deepEqual(fails({ cron: '@daily' }), ['cron'], 'a nickname is not 5 or 6 fields');
    assert.deepEqual(fails({ cron: '0 0 31 2 *' }), ['cron'], 'never matches');
    assert.deepEqual(fails({ cron: '0 9 * * *', timezone: 'Mars/Olympus' }), ['timezone']);
    assert.deepEqual(fails({ cron: '0 9 * * *', timezone: '+01:00' }), ['timezone']);
    assert.deepEqual(fails({ cron: '0 9 * * *', every: 60 }), ['cron']);
    assert.deepEqual(fails({ body: 1 }), ['cron']);
    assert.deepEqual(fails({ every: 0 }), ['every']);
    assert.deepEqual(fails({ every: 0.5 }), ['every']);
    assert.deepEqual(fails({ every: 60, timezone: 'UTC' }), ['timezone']);
    assert.deepEqual(fails({ every: 60, catchUp: 'all', paused: 'no', ttr: -1, colour: 1 }), [
      'catchUp',
      'colour',
      'paused',
      'ttr',
    ]);
    assert.deepEqual(fails({ every: 60, jitter: -1 }), ['jitter']);
    assert.deepEqual(fails({ every: 60, jitter: 'soon' }), ['jitter']);
    assert.deepEqual(fails({ every: 60, jitter: 86_401 }), ['jitter']);
  });

  it('refuses a jitter not smaller than the shortest time between two runs, which would hold back more than one occurrence (issue 30 item 4)', () => {
    assert.deepEqual(fails({ every: 1, jitter: 3600 }), ['jitter']);
    assert.deepEqual(fails({ every: 1, jitter: 86_400 }), ['jitter']);
    assert.deepEqual(fails({ every: 60, jitter: 60 }), ['jitter']);
    assert.deepEqual(fails({ cron: '*/5 * * * *', jitter: 300 }), ['jitter']);
    assert.deepEqual(
      fails({ cron: '0 0,23 * * *', jitter: 3600 }),
      ['jitter'],
      'the shortest gap (23:00 to 00:00), not the first (23 h)',
    );
    assert.deepEqual(
      fails({ cron: '0 9 * * 1-5', timezone: 'Europe/Berlin', jitter: 86_400 }),
      ['jitter'],
      'a day from one weekday to the next',
    );
    for (const ok of [
      { every: 60, jitter: 59.999 },
      { cron: '*/5 * * * *', jitter: 299 },
      { cron: '0 0,23 * * *', jitter: 3599 },
      { cron: '0 9 * * 1-5', jitter: 86_399 },
    ]) {
      assert.ok(validateSchedule('reports', 'ok', ok, config, now).spec.jitterMs! > 0, JSON.stringify(ok));
    }
  });

  it('takes every and jitter as seconds or as durations like "10m"', () => {
    const every = (input: object) =>
      (validateSchedule('reports', 'a', input, config, now).spec as { every?: number }).every;
    assert.equal(every({ every: '10m', jitter: '30s' }), 600);
    assert.equal(validateSchedule('reports', 'a', { every: '10m', jitter: '30s' }, config, now).spec.jitterMs, 30_000);
    assert.equal(every({ every: '1d' }), 86_400);
    for (const every of ['1.5s', '500ms', '0s', '10 m', 'hourly'])
      assert.deepEqual(fails({ every }), ['every'], `every ${every}`);
  });

  it('refuses an id too long to leave room for the occurrence suffix', () => {
    assert.deepEqual(fails({ every: 60 }, 'x'.repeat(SCHEDULE_ID_MAX + 1)), ['id']);
    assert.equal(
      validateSchedule('reports', 'x'.repeat(SCHEDULE_ID_MAX), { every: 60 }, config, now).id.length,
      SCHEDULE_ID_MAX,
    );
    assert.equal(occurrenceId('x'.repeat(SCHEDULE_ID_MAX), now).length, 128);
  });

  it('refuses an unknown topic and a webhook schedule without url', () => {
    assert.throws(
      () => validateSchedule('nope', 'a', { every: 60 }, config, now),
      (e: unknown) => e instanceof HttpError && e.code === 'UNKNOWN_TOPIC',
    );
    assert.throws(
      () => validateSchedule('hooks', 'a', { every: 60 }, config, now),
      (e: unknown) => e instanceof HttpError && (e.details as { path: string }[])[0]!.path === 'url',
    );
  });

  it('normalises: UTC by default, catchUp latest, not paused, the zone by its canonical name, options for each occurrence', () => {
    const s = validateSchedule(
      'reports',
      'daily',
      { cron: ' 0 9 * * 1-5 ', body: { r: 1 }, ttr: 5, group: 'g' },
      config,
      now,
    );
    assert.deepEqual(s.spec, { cron: '0 9 * * 1-5', timezone: 'UTC', catchUp: 'latest', paused: false });
    assert.equal(s.body, '{"r":1}');
    assert.equal(s.ttrMs, 5000);
    assert.equal(s.group, 'g');
    assert.deepEqual(
      validateSchedule(
        'reports',
        'd',
        { cron: '0 9 * * *', timezone: 'europe/berlin', catchUp: 'none', paused: true },
        config,
        now,
      ).spec,
      { cron: '0 9 * * *', timezone: 'Europe/Berlin', catchUp: 'none', paused: true },
    );
    assert.deepEqual(
      validateSchedule('reports', 'j', { every: 60, jitter: 2.5 }, config, now).spec,
      { every: 60, catchUp: 'latest', paused: false, jitterMs: 2500 },
      'its own jitter, in ms',
    );
  });
});
