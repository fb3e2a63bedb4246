/**
 * Recurring schedules on the engine, on whatever Redis the caller provides (a single node, or a
 * cluster with several partitions): put, get, list, delete, the sweeper's advance, catch-up after
 * downtime and pause, and an advance killed between computing and committing. Fixed clock.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Cluster, Redis } from 'ioredis';
import type { TopicInput } from '../../lib/core/queue-config';
import type { Queue } from '../support/queue';
import { jitterOffsetMs } from '../../lib/core/pacing';
import { occurrenceId } from '../../lib/core/schedule';
import { bucketState, firstChunk } from '../support/group-layout';
import { makeQueue, rejects, TestClock, uniqueTopic } from '../support/queue';
import {
  OUTCOME,
  REFUSAL,
  groupKey,
  partitionOf,
  scheduleKeys,
  topicKeys,
  HttpError,
  validateSchedulesQuery,
  validateSchedule,
  moveDue,
  run,
  engineContext,
  schedules as engine,
  scripts as script,
} from '../../lib/testing';

export interface ScheduleSuiteTarget {
  redis(): Redis | Cluster;
  partitions: number;
}

const SEC = 1000;
const MIN = 60 * SEC;
const HOUR = 60 * MIN;
const iso = (ms: number) => new Date(ms).toISOString();

export function schedulesSuite(target: ScheduleSuiteTarget): void {
  function setup(topic: TopicInput = {}, extra: { retention?: number } = {}) {
    const name = uniqueTopic('sched');
    // 2030-01-01T00:00:00Z, on the hour
    const clock = new TestClock();
    const q = makeQueue(
      target.redis(),
      { [name]: { ttr: 30, maxAttempts: 3, backoff: { type: 'fixed', delay: 10 }, concurrency: 1000, ...topic } },
      {
        clock,
        config: { partitions: target.partitions, ...extra },
      },
    );
    const ctx = engineContext(q.engine);
    return { q, topic: name, clock, ctx };
  }

  /** Every job of the topic that is delayed, ready or running, by id (across partitions). */
  async function liveJobs(q: Queue, topic: string): Promise<string[]> {
    const ids: string[] = [];
    for (const state of ['delayed', 'ready', 'running'] as const) {
      let page = await q.listJobs(topic, { state, limit: 500 });
      ids.push(...page.jobs.map((j) => j.id));
      while (page.next) {
        page = await q.listJobs(topic, { state, limit: 500, cursor: page.next });
        ids.push(...page.jobs.map((j) => j.id));
      }
    }
    return ids.sort();
  }

  /** Sweeps, then claims and acks every ready job; returns the ids run, sorted. */
  async function sweepAndRun(q: Queue, topic: string): Promise<string[]> {
    for (let i = 0; i < 10 && (await q.engine.sweep()).more; i++);
    const claimed = await q.engine.claim(topic, 1000);
    for (const job of claimed) assert.equal(await q.engine.ack(topic, job.id, job), 'done');
    return claimed.map((j) => j.id).sort();
  }

  /**
   * For `seconds` seconds: advances the clock a second, then sweeps and runs what is ready (and
   * calls `each` with the seconds gone); asserts no occurrence runs twice. Returns when each ran.
   */
  async function runEachSecond(
    q: Queue,
    topic: string,
    clock: TestClock,
    seconds: number,
    each?: (s: number) => Promise<void>,
  ): Promise<Map<string, number>> {
    const ran = new Map<string, number>();
    for (let s = 1; s <= seconds; s++) {
      clock.advance(SEC);
      for (const id of await sweepAndRun(q, topic)) {
        assert.ok(!ran.has(id), `${id} ran twice`);
        ran.set(id, clock.now);
      }
      await each?.(s);
    }
    return ran;
  }

  /**
   * A schedule every hour with a 3000-s jitter whose first occurrence (its id picked so that the
   * jitter holds it back more than 2 minutes) is handed over and held back; then a put shortens
   * the period to a minute.
   */
  async function heldBackThenShortened(
    q: Queue,
    topic: string,
    clock: TestClock,
  ): Promise<{ start: number; id: string; held: string }> {
    const start = clock.now;
    const id = ['slow', 'slow-b', 'slow-c', 'slow-d', 'slow-e'].find(
      (x) => jitterOffsetMs(topic, occurrenceId(x, start + HOUR), 3_000_000) > 2 * MIN,
    )!;
    await q.putSchedule(topic, id, { every: 3600, jitter: 3000 });
    const held = occurrenceId(id, start + HOUR);
    clock.advance(HOUR + 5 * SEC);
    assert.deepEqual(await sweepAndRun(q, topic), [], 'handed over, held back');
    await q.putSchedule(topic, id, { every: 60 });
    return { start, id, held };
  }

  describe('schedules', () => {
    it('put creates the schedule and its first occurrence, an ordinary job of the topic, found by GET', async () => {
      const { q, topic, clock } = setup();
      const put = await q.putSchedule(topic, 'report', {
        cron: '0 9 * * *',
        timezone: 'Europe/Berlin',
        body: { kind: 'daily' },
        maxAttempts: 7,
        group: 'reports',
      });
      assert.equal(put.status, 'created');
      assert.equal(put.wake, true);
      const first = Date.parse('2030-01-01T08:00:00Z'); // 09:00 CET
      assert.deepEqual(put.schedule.pending, { id: 'report:20300101T080000Z', runAt: iso(first) });
      assert.deepEqual(
        put.schedule.nextRuns,
        [0, 1, 2, 3, 4].map((d) => iso(first + d * 24 * HOUR)),
      );
      assert.equal(put.schedule.cron, '0 9 * * *');
      assert.equal(put.schedule.timezone, 'Europe/Berlin');
      assert.equal(put.schedule.paused, false);
      assert.equal(put.schedule.catchUp, 'latest');
      assert.equal(put.schedule.lastRunAt, null);
      const job = await q.get(topic, 'report:20300101T080000Z');
      assert.equal(job?.state, 'delayed');
      assert.equal(job?.runAt, iso(first));
      assert.equal(job?.maxAttempts, 7);
      assert.equal(job?.group, 'reports');
      assert.deepEqual(job?.body, { kind: 'daily' });
      const got = await q.getSchedule(topic, 'report');
      assert.deepEqual(got, put.schedule);
      assert.equal(await q.getSchedule(topic, 'nope'), null);
      assert.deepEqual(
        (await q.listGroup(topic, 'reports')).jobs.map((j) => j.id),
        ['report:20300101T080000Z'],
      );
      assert.equal(clock.now, Date.parse('2030-01-01T00:00:00Z'));
    });

    it('the sweeper runs each occurrence once and creates the next in the same step: every second for 20 s, none missed, none doubled', async () => {
      const { q, topic, clock } = setup();
      await q.putSchedule(topic, 'tick', { every: 1, body: 't' });
      const ran: string[] = [];
      for (let s = 1; s <= 20; s++) {
        clock.advance(SEC);
        const before = await q.getSchedule(topic, 'tick');
        assert.equal(before?.pending?.runAt, iso(clock.now), 'the pending occurrence is the one due now');
        ran.push(...(await sweepAndRun(q, topic)));
        const after = await q.getSchedule(topic, 'tick');
        assert.equal(after?.pending?.runAt, iso(clock.now + SEC), 'moved on to the next second');
        assert.equal(after?.lastRunAt, iso(clock.now));
        assert.ok(after!.version > before!.version);
      }
      const start = Date.parse('2030-01-01T00:00:00Z');
      assert.deepEqual(
        ran,
        Array.from({ length: 20 }, (_, i) => occurrenceId('tick', start + (i + 1) * SEC)),
      );
      assert.deepEqual(
        await liveJobs(q, topic),
        [occurrenceId('tick', start + 21 * SEC)],
        'only the next occurrence is pending',
      );
      assert.equal((await q.get(topic, ran[0]!))?.state, 'done', 'an occurrence is an ordinary job: acked, done');
    });

    it('a sweep hands its ready jobs to onReady before it moves the due schedules on (the sweeper invokes the fan-out there), once', async () => {
      const { q, topic, clock } = setup();
      await q.putSchedule(topic, 'tick', { every: 1, body: 't' });
      clock.advance(SEC);
      const seen: { ready: Record<string, number>; pending: string | undefined }[] = [];
      const swept = await q.engine.sweep(undefined, async (ready) => {
        // sent at once, on the connection the advance uses after it: Redis answers it first
        const read = q.getSchedule(topic, 'tick');
        seen.push({ ready: { ...ready }, pending: (await read)?.pending?.runAt });
      });
      assert.equal(seen.length, 1, 'called once');
      assert.deepEqual(seen[0]!.ready, { [topic]: 1 });
      assert.equal(seen[0]!.pending, iso(clock.now), 'called before the schedule moved on');
      assert.equal(swept.schedulesAdvanced, 1);
      assert.equal(
        (await q.getSchedule(topic, 'tick'))?.pending?.runAt,
        iso(clock.now + SEC),
        'the same sweep then moved it on',
      );
      const [job] = await q.engine.claim(topic, 10);
      assert.equal(await q.engine.ack(topic, job!.id, job!), 'done');
      let calls = 0;
      await q.engine.sweep(undefined, async () => {
        calls += 1;
      });
      assert.equal(calls, 0, 'not called when nothing is ready');
    });

    it("jitter (the schedule's, else the topic's) moves each occurrence by its deterministic offset; each runs once", async () => {
      const { q, topic, clock } = setup({ jitter: 600 });
      const start = clock.now;
      const own = await q.putSchedule(topic, 'spread', { every: 10, jitter: 8, body: 's' });
      const inherited = await q.putSchedule(topic, 'herd', { cron: '0 * * * *', body: 'h' });
      assert.equal(own.schedule.jitter, 8);
      assert.equal(inherited.schedule.jitter, null, "none of its own: the topic's applies");
      // the schedule's run times stay nominal; the occurrence (a job) carries the offset
      assert.deepEqual(own.schedule.pending, {
        id: occurrenceId('spread', start + 10 * SEC),
        runAt: iso(start + 10 * SEC),
      });
      const due = (id: string, nominal: number, jitterMs: number) => nominal + jitterOffsetMs(topic, id, jitterMs);
      const herdId = occurrenceId('herd', start + HOUR);
      assert.equal((await q.get(topic, herdId))?.runAt, iso(due(herdId, start + HOUR, 600_000)));
      const offsets = new Set<number>();
      const ran = await runEachSecond(q, topic, clock, 120);
      const expected: string[] = [];
      for (let nominal = start + 10 * SEC; nominal <= clock.now; nominal += 10 * SEC) {
        const id = occurrenceId('spread', nominal);
        const at = due(id, nominal, 8_000);
        offsets.add(at - nominal);
        if (at > clock.now) continue; // not due yet
        expected.push(id);
        assert.ok(ran.has(id), `${id} never ran`);
        assert.ok(ran.get(id)! >= at && ran.get(id)! < at + SEC, `${id} ran at ${iso(ran.get(id)!)}, due ${iso(at)}`);
      }
      assert.ok(expected.length >= 9, `${expected.length} occurrences due`);
      assert.ok(offsets.size > 1, 'the offsets differ from one occurrence to the next');
      assert.deepEqual([...ran.keys()].sort(), expected.sort(), 'each due occurrence ran once, and nothing else');
    });

    it('an occurrence is retried on its backoff and dead-lettered like any job, while the schedule moves on', async () => {
      const { q, topic, clock } = setup({ maxAttempts: 2 });
      await q.putSchedule(topic, 'flaky', { every: 60 });
      clock.advance(MIN);
      await q.engine.sweep();
      const [first] = await q.engine.claim(topic, 10);
      assert.equal(first?.id, occurrenceId('flaky', clock.now));
      assert.equal((await q.engine.fail(topic, first!.id, first!, 'boom')).outcome, 'retry');
      clock.advance(10 * SEC);
      await q.engine.sweep();
      const [second] = await q.engine.claim(topic, 10);
      assert.deepEqual([second?.id, second?.attempt], [first!.id, 2]);
      assert.equal((await q.engine.fail(topic, second!.id, second!, 'boom')).outcome, 'dead');
      assert.deepEqual(
        (await q.listDead(topic)).jobs.map((j) => j.id),
        [first!.id],
      );
      assert.equal((await q.getSchedule(topic, 'flaky'))?.pending?.runAt, iso(Date.parse('2030-01-01T00:02:00Z')));
    });

    it('editing replaces the pending occurrence atomically; an occurrence already due runs as it was', async () => {
      const { q, topic, clock } = setup();
      await q.putSchedule(topic, 'edit', { cron: '0 * * * *', body: 'v1' });
      const first = occurrenceId('edit', Date.parse('2030-01-01T01:00:00Z'));
      const edited = await q.putSchedule(topic, 'edit', { cron: '30 * * * *', body: 'v2', ttr: 5 });
      assert.equal(edited.status, 'replaced');
      const second = occurrenceId('edit', Date.parse('2030-01-01T00:30:00Z'));
      assert.equal(edited.schedule.pending?.id, second);
      assert.equal(await q.get(topic, first), null, 'the replaced occurrence is gone');
      assert.deepEqual((await q.get(topic, second))?.body, 'v2');
      assert.equal((await q.get(topic, second))?.ttr, 5);
      assert.deepEqual(await liveJobs(q, topic), [second]);
      // due, not yet swept: the edit leaves it to run, and the new definition starts after now
      clock.advance(30 * MIN + 5 * SEC);
      const late = await q.putSchedule(topic, 'edit', { cron: '45 * * * *', body: 'v3' });
      assert.equal(late.schedule.lastRunAt, iso(Date.parse('2030-01-01T00:30:00Z')));
      const third = occurrenceId('edit', Date.parse('2030-01-01T00:45:00Z'));
      assert.equal(late.schedule.pending?.id, third);
      assert.deepEqual(await sweepAndRun(q, topic), [second]);
      assert.deepEqual((await q.get(topic, second))?.body, 'v2', 'it ran with the body it had');
      assert.deepEqual(await liveJobs(q, topic), [third]);
      assert.deepEqual((await q.get(topic, third))?.body, 'v3');
    });

    it('an occurrence whose run time passed is handed over, held back by its jitter: a delete withdraws it with the pending one (issue 30 item 4)', async () => {
      const { q, topic, clock } = setup();
      const start = clock.now;
      // an id whose offset within a 50-s jitter is over 2 s, so it is still delayed after its run time
      const id = ['held', 'held-b', 'held-c', 'held-d', 'held-e'].find(
        (x) => jitterOffsetMs(topic, occurrenceId(x, start + MIN), 50_000) > 2 * SEC,
      )!;
      await q.putSchedule(topic, id, { every: 60, jitter: 50 });
      const first = occurrenceId(id, start + MIN);
      clock.advance(MIN + SEC);
      assert.deepEqual(await sweepAndRun(q, topic), [], 'its run time passed, its jitter holds it back');
      assert.equal(
        (await q.getSchedule(topic, id))?.pending?.id,
        occurrenceId(id, start + 2 * MIN),
        'the schedule moved on',
      );
      assert.equal((await q.get(topic, first))?.state, 'delayed', 'handed over, held back');
      await q.deleteSchedule(topic, id);
      for (const occurrence of [first, occurrenceId(id, start + 2 * MIN)]) {
        assert.ok(
          ['gone', 'cancelled'].includes((await q.get(topic, occurrence))?.state ?? 'gone'),
          `${occurrence} is withdrawn`,
        );
      }
      assert.deepEqual(await liveJobs(q, topic), [], 'nothing of the schedule is left to run');
      clock.advance(MIN);
      assert.deepEqual(await sweepAndRun(q, topic), []);
    });

    it("a topic's jitter of a period or more (every 1 s, jitter 3600 s) holds back at most one occurrence beside the pending one, each falls due within its period, and a delete leaves none to run (issue 30 item 4)", async () => {
      const { q, topic, clock } = setup({ jitter: 3600 });
      const start = clock.now;
      await q.putSchedule(topic, 'fast', { every: 1 });
      const ran = await runEachSecond(q, topic, clock, 120, async (s) => {
        const waiting = await liveJobs(q, topic);
        assert.ok(
          waiting.length <= 2,
          `after ${s} s, ${waiting.length} occurrences wait: ${waiting.slice(0, 4).join(', ')}…`,
        );
      });
      // the topic's jitter applies up to the period: an occurrence falls due within [run time, run time + 1 s)
      for (let n = 1; n < 120; n++) {
        const id = occurrenceId('fast', start + n * SEC);
        const offset = jitterOffsetMs(topic, id, SEC);
        assert.equal(
          ran.get(id),
          start + n * SEC + (offset === 0 ? 0 : SEC),
          `${id} (offset ${offset} ms) ran at the sweep after it fell due`,
        );
      }
      await q.deleteSchedule(topic, 'fast');
      assert.deepEqual(await liveJobs(q, topic), [], 'the delete withdrew every occurrence that had not started');
      clock.advance(HOUR);
      assert.deepEqual(await sweepAndRun(q, topic), []);
    });

    it("a schedule's own jitter of a period or more is 400 VALIDATION_FAILED naming jitter (issue 30 item 4)", async () => {
      const { q, topic } = setup();
      for (const input of [
        { every: 1, jitter: 3600 },
        { every: 1, jitter: 86_400 },
        { cron: '* * * * *', jitter: 60 },
      ]) {
        const error = await rejects(q.putSchedule(topic, 'wide', input), 400, 'VALIDATION_FAILED');
        assert.deepEqual(
          (error.details as { path: string }[]).map((d) => d.path),
          ['jitter'],
          JSON.stringify(input),
        );
      }
      assert.equal(await q.getSchedule(topic, 'wide'), null);
    });

    it('a put that shortens the period: the occurrence handed over under the old definition, still held back by its jitter, falls due when the next is handed over, so never two are held back (issue 30 item 4)', async () => {
      const { q, topic, clock } = setup();
      const { start, id, held } = await heldBackThenShortened(q, topic, clock);
      const next = occurrenceId(id, start + HOUR + MIN);
      assert.deepEqual(await liveJobs(q, topic), [held, next].sort());
      clock.now = start + HOUR + MIN;
      const ran = [...(await sweepAndRun(q, topic)), ...(await sweepAndRun(q, topic))].sort();
      assert.deepEqual(ran, [held, next].sort(), 'the held one fell due when the next was handed over');
      await q.deleteSchedule(topic, id);
      assert.deepEqual(await liveJobs(q, topic), []);
    });

    it('the occurrence the hand-over releases (held back by its jitter when the next is handed over) makes the sweep look again at once, not at the next run time', async () => {
      const { q, topic, clock } = setup();
      const { start, id, held } = await heldBackThenShortened(q, topic, clock);
      clock.now = start + HOUR + MIN;
      const swept = await q.engine.sweep();
      assert.equal(swept.schedulesAdvanced, 1);
      assert.ok(
        swept.nextAt !== null && swept.nextAt <= swept.now,
        `the sweep at ${iso(swept.now)} looks again at ${swept.nextAt === null ? 'never' : iso(swept.nextAt)}`,
      );
      assert.deepEqual(
        await sweepAndRun(q, topic),
        [held, occurrenceId(id, start + HOUR + MIN)].sort(),
        'the next look moves the released one',
      );
    });

    it('a delete leaves an occurrence that ran and waits for its retry to its backoff: one that started runs on', async () => {
      const { q, topic, clock } = setup();
      await q.putSchedule(topic, 'retry', { every: 60 });
      clock.advance(MIN);
      await q.engine.sweep();
      const [job] = await q.engine.claim(topic, 10);
      assert.equal(job?.id, occurrenceId('retry', clock.now));
      assert.equal((await q.engine.fail(topic, job!.id, job!, 'boom')).outcome, 'retry');
      await q.deleteSchedule(topic, 'retry');
      assert.equal((await q.get(topic, job!.id))?.state, 'delayed', 'its retry stays');
      clock.advance(10 * SEC);
      assert.deepEqual(await sweepAndRun(q, topic), [job!.id]);
    });

    it('a sweeper seconds late (busy, cold-starting) is late, not down: each late occurrence runs once, in order, none withdrawn', async () => {
      for (const catchUp of ['latest', 'none'] as const) {
        const { q, topic, clock } = setup();
        const start = clock.now;
        await q.putSchedule(topic, 'late', { every: 1, catchUp });
        clock.advance(3 * SEC + 500); // the first occurrence 2.5 s late, the next two due too
        const ran: string[] = [];
        for (let i = 0; i < 6; i++) ran.push(...(await sweepAndRun(q, topic)));
        assert.deepEqual(
          ran,
          [1, 2, 3].map((n) => occurrenceId('late', start + n * SEC)),
          `catchUp ${catchUp}: none missed, none doubled`,
        );
        assert.deepEqual(await liveJobs(q, topic), [occurrenceId('late', start + 4 * SEC)]);
        assert.equal((await q.getSchedule(topic, 'late'))?.lastRunAt, iso(start + 3 * SEC));
      }
    });

    it('the queue was down for hours: catchUp latest runs the latest missed occurrence once', async () => {
      const { q, topic, clock } = setup();
      await q.putSchedule(topic, 'hourly', { cron: '0 * * * *' });
      clock.advance(4 * HOUR + 20 * MIN); // 01:00, 02:00, 03:00 and 04:00 missed
      assert.deepEqual(await sweepAndRun(q, topic), [], 'the pending 01:00 was withdrawn, 04:00 is created due now');
      assert.deepEqual(await sweepAndRun(q, topic), [occurrenceId('hourly', Date.parse('2030-01-01T04:00:00Z'))]);
      assert.deepEqual(await sweepAndRun(q, topic), [], 'no burst');
      assert.equal(await q.get(topic, occurrenceId('hourly', Date.parse('2030-01-01T01:00:00Z'))), null);
      const s = await q.getSchedule(topic, 'hourly');
      assert.equal(s?.lastRunAt, iso(Date.parse('2030-01-01T04:00:00Z')));
      assert.equal(s?.pending?.id, occurrenceId('hourly', Date.parse('2030-01-01T05:00:00Z')));
      assert.deepEqual(await liveJobs(q, topic), [s!.pending!.id]);
    });

    it('the queue was down for hours: catchUp none skips the missed occurrences; one at most a minute late still runs', async () => {
      const { q, topic, clock } = setup();
      await q.putSchedule(topic, 'skip', { cron: '0 * * * *', catchUp: 'none' });
      clock.advance(4 * HOUR + 20 * MIN);
      assert.deepEqual(await sweepAndRun(q, topic), []);
      assert.deepEqual(await sweepAndRun(q, topic), []);
      assert.deepEqual(await liveJobs(q, topic), [occurrenceId('skip', Date.parse('2030-01-01T05:00:00Z'))]);
      assert.equal(
        (await q.getSchedule(topic, 'skip'))?.lastRunAt,
        iso(Date.parse('2030-01-01T04:00:00Z')),
        'skipped up to the latest missed',
      );
      clock.advance(40 * MIN + 30 * SEC); // 05:00:30: 30 s late, within the grace
      assert.deepEqual(await sweepAndRun(q, topic), [occurrenceId('skip', Date.parse('2030-01-01T05:00:00Z'))]);
    });

    it('paused: nothing pending; resumed: latest catches up once, none does not', async () => {
      const { q, topic, clock } = setup();
      for (const [id, catchUp] of [
        ['p-latest', 'latest'],
        ['p-none', 'none'],
      ] as const) {
        await q.putSchedule(topic, id, { cron: '*/10 * * * *', catchUp });
      }
      clock.advance(10 * MIN);
      assert.deepEqual(await sweepAndRun(q, topic), ['p-latest:20300101T001000Z', 'p-none:20300101T001000Z']);
      for (const [id, catchUp] of [
        ['p-latest', 'latest'],
        ['p-none', 'none'],
      ] as const) {
        const paused = await q.putSchedule(topic, id, { cron: '*/10 * * * *', catchUp, paused: true });
        assert.equal(paused.schedule.pending, null);
        assert.deepEqual(paused.schedule.nextRuns, []);
      }
      assert.deepEqual(await liveJobs(q, topic), [], 'the pending occurrences were withdrawn');
      clock.advance(HOUR + 5 * MIN); // 01:15: 00:20 to 01:10 missed, 01:10 by 5 minutes
      assert.deepEqual(await sweepAndRun(q, topic), [], 'nothing runs while paused');
      for (const [id, catchUp] of [
        ['p-latest', 'latest'],
        ['p-none', 'none'],
      ] as const) {
        const resumed = await q.putSchedule(topic, id, { cron: '*/10 * * * *', catchUp, paused: false });
        assert.equal(resumed.schedule.pending?.id, `${id}:20300101T012000Z`);
      }
      assert.deepEqual(
        await sweepAndRun(q, topic),
        ['p-latest:20300101T011000Z'],
        'latest: the latest missed (01:10) once; none: nothing',
      );
      assert.deepEqual(await sweepAndRun(q, topic), []);
    });

    it('a pause read just before the run time and committed after the occurrence was claimed does not make it run again on resume (retention 0; issue 30 item 3)', async () => {
      const { q, topic, clock, ctx } = setup({}, { retention: 0 });
      const start = clock.now;
      const t = ctx.config.topics.get(topic)!;
      const p = partitionOf(topic, 'twice', target.partitions);
      const sk = scheduleKeys(p, topic, target.partitions);
      const k = topicKeys(p, topic, target.partitions);
      await q.putSchedule(topic, 'twice', { every: 60 });
      clock.advance(MIN);
      assert.deepEqual(
        await sweepAndRun(q, topic),
        [occurrenceId('twice', start + MIN)],
        'a first run, so a resume has a last run to catch up from',
      );
      const second = occurrenceId('twice', start + 2 * MIN);
      // the pause reads the schedule a second before the second occurrence's run time, and plans
      clock.advance(MIN - SEC);
      const pause = validateSchedule(topic, 'twice', { every: 60, paused: true }, ctx.config, clock.now);
      const plan = engine.planPut(pause, await engine.readSchedule(ctx, t, p, 'twice'), clock.now);
      assert.equal(plan.pending, 'replace', 'read before its run time, the plan withdraws the pending occurrence');
      // the run time comes; the sweeper moves the job to ready (its schedule not moved on yet), a handler claims and
      // acks it
      clock.advance(SEC);
      await moveDue(ctx, t, p, 100);
      const [job] = await q.engine.claim(topic, 10);
      assert.equal(job?.id, second);
      assert.equal(await q.engine.ack(topic, job!.id, job!), 'done');
      // now the pause commits the plan it made from its read (the engine's call), and reads again when refused
      const stale = await run(
        ctx.redis,
        script.putSchedule(
          [
            sk.schedules,
            sk.ids,
            sk.next,
            k.jobs,
            k.bodies,
            k.delayed,
            k.running,
            k.done,
            groupKey(p, topic, '', target.partitions),
          ],
          {
            clock: ctx.clock(),
            id: 'twice',
            seen: plan.seen,
            pending: plan.pending,
            last: plan.last,
            run: null,
            next: null,
            record: { spec: JSON.stringify(pause.spec), body: pause.body },
          },
        ),
      );
      if (stale[0] === REFUSAL.VERSION_MISMATCH) await q.putSchedule(topic, 'twice', { every: 60, paused: true });
      assert.equal((await q.getSchedule(topic, 'twice'))?.paused, true);
      // resumed 30 s later, before the next run time: nothing was missed
      clock.advance(30 * SEC);
      const resumed = await q.putSchedule(topic, 'twice', { every: 60 });
      const ran = [...(await sweepAndRun(q, topic)), ...(await sweepAndRun(q, topic))];
      assert.deepEqual(ran, [], `${second} ran once, before the pause; the resume ran ${JSON.stringify(ran)}`);
      assert.equal(resumed.schedule.lastRunAt, iso(start + 2 * MIN), 'the claimed occurrence counts as run');
      assert.equal(resumed.schedule.pending?.id, occurrenceId('twice', start + 3 * MIN));
      assert.equal(stale[0], REFUSAL.VERSION_MISMATCH, 'the stale plan was refused');
    });

    it("a put whose clock (TIME of another node) lags the partition's: refused as stale, it keeps the due occurrence in the next round, not after 5 refusals (issue 30 item 3)", async () => {
      const { q, topic, clock, ctx } = setup();
      const start = clock.now;
      const t = ctx.config.topics.get(topic)!;
      await q.putSchedule(topic, 'skew', { every: 60 });
      clock.advance(MIN); // the run time, by the partition's clock
      // each round reads the engine's time (serverTime) and then builds the script's clock: the first a second behind
      let calls = 0;
      const lagging = { ...ctx, clock: () => (calls++ % 2 === 0 ? clock.now - SEC : clock.now) };
      const pause = validateSchedule(topic, 'skew', { every: 60, paused: true }, ctx.config, clock.now);
      const put = await engine.putSchedule(lagging, t, pause);
      assert.equal(calls, 4, 'two rounds');
      assert.equal(put.schedule.lastRunAt, iso(start + MIN), 'the due occurrence is kept, handed over');
      assert.deepEqual(await sweepAndRun(q, topic), [occurrenceId('skew', start + MIN)]);
      clock.advance(30 * SEC);
      await q.putSchedule(topic, 'skew', { every: 60 });
      assert.deepEqual(await sweepAndRun(q, topic), [], 'the resume runs nothing again');
    });

    it('delete removes the schedule and withdraws its pending occurrence; a second delete is 404', async () => {
      const { q, topic, clock } = setup();
      await q.putSchedule(topic, 'gone', { every: 3600, group: 'g' });
      await q.putSchedule(topic, 'kept', { every: 3600 });
      await q.deleteSchedule(topic, 'gone');
      assert.equal(await q.getSchedule(topic, 'gone'), null);
      assert.deepEqual(await liveJobs(q, topic), [occurrenceId('kept', clock.now + HOUR)]);
      await rejects(q.deleteSchedule(topic, 'gone'), 404, 'NOT_FOUND');
      clock.advance(HOUR);
      assert.deepEqual(await sweepAndRun(q, topic), [occurrenceId('kept', clock.now)]);
      assert.deepEqual(
        (await q.listSchedules(topic)).schedules.map((s) => s.id),
        ['kept'],
      );
      assert.deepEqual(
        (await q.listGroup(topic, 'g')).jobs.filter((j) => j.state !== 'cancelled'),
        [],
        'the withdrawn occurrence left its group',
      );
    });

    it('a put that moves the schedule to another group takes its pending occurrence out of the old group: nothing of the old group is left', async () => {
      // the put withdraws the pending occurrence and creates it anew under the same id, now in the
      // new group: the old group's slot (or zset member) must go too, or it stays for good
      const { q, topic, clock } = setup();
      const redis = target.redis();
      const p = partitionOf(topic, 'moved', target.partitions);
      const pending = occurrenceId('moved', clock.now + HOUR);
      await q.putSchedule(topic, 'moved', { every: 3600, group: 'old-g' });
      assert.deepEqual(await firstChunk(redis, p, topic, 'old-g', target.partitions), {
        form: 'bucket',
        ids: [pending],
      });
      const put = await q.putSchedule(topic, 'moved', { every: 3600, group: 'new-g' });
      assert.equal(put.schedule.pending?.id, pending, 'the same occurrence, made anew');
      assert.equal((await q.get(topic, pending))?.group, 'new-g');
      assert.deepEqual(
        (await q.listGroup(topic, 'new-g')).jobs.map((j) => j.id),
        [pending],
      );
      assert.deepEqual(
        await firstChunk(redis, p, topic, 'old-g', target.partitions),
        { form: 'none', ids: [] },
        'no slot of the old group is left',
      );
      assert.equal(
        (await bucketState(redis, p, topic, target.partitions)).count,
        1,
        'one small group in the buckets: the new one',
      );
      clock.advance(HOUR);
      assert.deepEqual(await sweepAndRun(q, topic), [pending]);
    });

    it('lists every schedule once, by id, paged across partitions', async () => {
      const { q, topic } = setup();
      const ids = Array.from({ length: 23 }, (_, i) => `s-${String(i).padStart(2, '0')}`);
      for (const id of [...ids].reverse()) await q.putSchedule(topic, id, { every: 60 + ids.indexOf(id) });
      const seen: string[] = [];
      let page = await q.listSchedules(topic, { limit: 4 });
      seen.push(...page.schedules.map((s) => s.id));
      for (let n = 0; page.next !== null; n++) {
        assert.ok(n < 20, 'paging ends');
        page = await q.listSchedules(topic, { limit: 4, cursor: page.next });
        seen.push(...page.schedules.map((s) => s.id));
      }
      assert.deepEqual(seen, ids);
      if (target.partitions > 1)
        assert.ok(
          new Set(ids.map((id) => partitionOf(topic, id, target.partitions))).size > 1,
          'spread over partitions',
        );
      await rejects(q.listSchedules(topic, { cursor: 'bogus!' }), 400, 'VALIDATION_FAILED');
      assert.throws(
        () => validateSchedulesQuery({ topic, limit: '0' }),
        (e: unknown) => e instanceof HttpError && e.status === 400 && e.code === 'VALIDATION_FAILED',
      );
    });

    it('through both Berlin transitions of 2026, following the sweeper: the gap runs once at the jump, the repeated hour once', async () => {
      const { q, topic, clock } = setup();
      clock.now = Date.parse('2026-03-28T23:40:00Z');
      await q.putSchedule(topic, 'spring', { cron: '30 * * * *', timezone: 'Europe/Berlin' });
      const ran: string[] = [];
      for (let i = 0; i < 3; i++) {
        clock.now = Date.parse((await q.getSchedule(topic, 'spring'))!.pending!.runAt);
        ran.push(...(await sweepAndRun(q, topic)));
      }
      // 01:30 CET, then 02:30 (missing) at the jump to 03:00 CEST, then 03:30 CEST
      assert.deepEqual(ran, ['spring:20260329T003000Z', 'spring:20260329T010000Z', 'spring:20260329T013000Z']);
      await q.deleteSchedule(topic, 'spring');
      clock.now = Date.parse('2026-10-24T23:30:00Z');
      await q.putSchedule(topic, 'fall', { cron: '0 * * * *', timezone: 'Europe/Berlin' });
      ran.length = 0;
      for (let i = 0; i < 3; i++) {
        clock.now = Date.parse((await q.getSchedule(topic, 'fall'))!.pending!.runAt);
        ran.push(...(await sweepAndRun(q, topic)));
      }
      // 02:00 CEST, (02:00 CET skipped: its second occurrence), 03:00 CET, 04:00 CET
      assert.deepEqual(ran, ['fall:20261025T000000Z', 'fall:20261025T020000Z', 'fall:20261025T030000Z']);
    });

    it('bad input gets a 400 naming the field, and writes nothing', async () => {
      const { q, topic } = setup();
      const error = await rejects(
        q.putSchedule(topic, 'bad', { cron: '61 * * * *', timezone: 'Nowhere/City' }),
        400,
        'VALIDATION_FAILED',
      );
      assert.deepEqual((error.details as { path: string }[]).map((d) => d.path).sort(), ['cron', 'timezone']);
      await rejects(q.putSchedule('not-configured', 'bad', { every: 5 }), 400, 'UNKNOWN_TOPIC');
      await rejects(q.putSchedule(topic, 'x'.repeat(112), { every: 5 }), 400, 'VALIDATION_FAILED');
      for (const call of [q.getSchedule(topic, 'bad id'), q.deleteSchedule(topic, 'bad id')]) {
        const refused = await rejects(call, 400, 'VALIDATION_FAILED');
        assert.equal(
          refused.message,
          'the schedule has 1 invalid field',
          'the message speaks of a schedule, not a job',
        );
        assert.deepEqual(
          (refused.details as { path: string }[]).map((d) => d.path),
          ['id'],
        );
      }
      assert.deepEqual((await q.listSchedules(topic)).schedules, []);
    });

    it('an advance killed between computing and committing neither loses nor doubles an occurrence; a second advance changes nothing', async () => {
      const { q, topic, clock, ctx } = setup();
      await q.putSchedule(topic, 'crash', { every: 60, body: 'c' });
      const partition = partitionOf(topic, 'crash', target.partitions);
      clock.advance(MIN);
      // a sweeper reads the due schedule and computes its advance, then dies before committing
      const [now, , , ...due] = await run(ctx.redis, engine.dueCall(ctx, topic, partition, 10));
      assert.equal(due.length, 1);
      const plan = engine.planAdvance(topic, partition, due[0]!, now);
      assert.deepEqual(
        [plan.run?.id, plan.next?.id],
        [occurrenceId('crash', clock.now), occurrenceId('crash', clock.now + MIN)],
      );
      // the next sweeper (lease expired) advances it
      const swept = await q.engine.sweep();
      assert.equal(swept.schedulesAdvanced, 1);
      // the dead sweeper's plan, committed late (a zombie), or a retried commit, changes nothing
      const stale = await engine.commitAdvance(ctx, plan);
      assert.equal(stale[0], REFUSAL.VERSION_MISMATCH);
      // a plan from a fresh read, committed twice: the second is refused
      clock.advance(MIN);
      const [now2, , , ...due2] = await run(ctx.redis, engine.dueCall(ctx, topic, partition, 10));
      const plan2 = engine.planAdvance(topic, partition, due2[0]!, now2);
      const first = await engine.commitAdvance(ctx, plan2);
      assert.deepEqual([first[0], first[0] === OUTCOME.ADVANCED && first[2]], [OUTCOME.ADVANCED, 1]);
      const again = await engine.commitAdvance(ctx, plan2);
      assert.equal(again[0], REFUSAL.VERSION_MISMATCH);
      assert.equal((await q.engine.sweep()).schedulesAdvanced, 0, 'nothing left to advance');
      const claimed = await q.engine.claim(topic, 100);
      assert.deepEqual(
        claimed.map((j) => j.id).sort(),
        [occurrenceId('crash', clock.now - MIN), occurrenceId('crash', clock.now)],
        'each occurrence once',
      );
      assert.deepEqual(
        await liveJobs(q, topic),
        [...claimed.map((j) => j.id), occurrenceId('crash', clock.now + MIN)].sort(),
      );
    });

    it('a catch-up read before the late pending occurrence was claimed, run and deleted (retention 0) and committed after runs no second occurrence (issue 30: no occurrence runs twice)', async () => {
      const { q, topic, clock, ctx } = setup({}, { retention: 0 });
      const start = clock.now;
      const t = ctx.config.topics.get(topic)!;
      const p = partitionOf(topic, 'c', target.partitions);
      await q.putSchedule(topic, 'c', { every: 60 });
      const pending = occurrenceId('c', start + MIN);
      // 00:03:30: the pending 00:01 is 2.5 min late, past the grace; 00:02 and 00:03 missed
      clock.advance(3 * MIN + 30 * SEC);
      // the sweep reads the due schedule and plans the catch-up: the latest missed (00:03) in place of the pending one
      const [now, , , ...due] = await run(ctx.redis, engine.dueCall(ctx, topic, p, 10));
      const plan = engine.planAdvance(topic, p, due[0]!, now);
      assert.deepEqual(
        [plan.pendingId, plan.run?.id, plan.next?.id],
        [pending, occurrenceId('c', start + 3 * MIN), occurrenceId('c', start + 4 * MIN)],
      );
      // beside it the sweep moves the pending occurrence to ready and invokes the fan-out: a handler claims and acks
      // it, and it is deleted
      await moveDue(ctx, t, p, 100);
      const [job] = await q.engine.claim(topic, 10);
      assert.equal(job?.id, pending);
      assert.equal(await q.engine.ack(topic, job!.id, job!), 'done');
      assert.equal(await q.get(topic, pending), null, 'retention 0: deleted');
      // now the advance commits the plan it made from its read
      assert.equal((await engine.commitAdvance(ctx, plan))[0], OUTCOME.ADVANCED);
      const ran = [...(await sweepAndRun(q, topic)), ...(await sweepAndRun(q, topic))];
      assert.deepEqual(ran, [], `${pending} ran for the missed times; the catch-up ran ${JSON.stringify(ran)} as well`);
      const s = await q.getSchedule(topic, 'c');
      assert.equal(s?.pending?.id, occurrenceId('c', start + 4 * MIN));
      assert.deepEqual(await liveJobs(q, topic), [s!.pending!.id]);
    });

    it('a late pending occurrence cancelled before the catch-up commits stands for the missed times: the catch-up runs nothing (retention 0 and 24 h alike); one still pending is withdrawn and the latest missed runs', async () => {
      for (const retention of [0, 86_400]) {
        const { q, topic, clock } = setup({}, { retention });
        const start = clock.now;
        for (const id of ['cancelled', 'waiting']) await q.putSchedule(topic, id, { every: 60 });
        clock.advance(3 * MIN + 30 * SEC);
        await q.cancel(topic, occurrenceId('cancelled', start + MIN));
        const ran = [...(await sweepAndRun(q, topic)), ...(await sweepAndRun(q, topic))];
        assert.deepEqual(
          ran,
          [occurrenceId('waiting', start + 3 * MIN)],
          `retention ${retention}: the cancel of the pending occurrence is a cancel of the catch-up`,
        );
        for (const id of ['cancelled', 'waiting']) {
          const s = await q.getSchedule(topic, id);
          assert.deepEqual(
            [s?.lastRunAt, s?.pending?.id],
            [iso(start + 3 * MIN), occurrenceId(id, start + 4 * MIN)],
            `retention ${retention}: ${id} moved on`,
          );
        }
        assert.equal(
          await q.get(topic, occurrenceId('waiting', start + MIN)),
          null,
          'the one still pending was withdrawn',
        );
      }
    });

    it('a late pending occurrence that ran and waits for its retry when the catch-up commits keeps its retry, and the catch-up runs nothing else', async () => {
      const { q, topic, clock, ctx } = setup();
      const start = clock.now;
      const t = ctx.config.topics.get(topic)!;
      const p = partitionOf(topic, 'r', target.partitions);
      await q.putSchedule(topic, 'r', { every: 60 });
      const pending = occurrenceId('r', start + MIN);
      clock.advance(3 * MIN + 30 * SEC);
      const [now, , , ...due] = await run(ctx.redis, engine.dueCall(ctx, topic, p, 10));
      const plan = engine.planAdvance(topic, p, due[0]!, now);
      await moveDue(ctx, t, p, 100);
      const [job] = await q.engine.claim(topic, 10);
      assert.equal(job?.id, pending);
      assert.equal((await q.engine.fail(topic, job!.id, job!, 'boom')).outcome, 'retry');
      assert.equal((await engine.commitAdvance(ctx, plan))[0], OUTCOME.ADVANCED);
      assert.equal((await q.get(topic, pending))?.state, 'delayed', 'its retry stays');
      assert.deepEqual(await sweepAndRun(q, topic), [], 'no catch-up beside it');
      clock.advance(10 * SEC);
      assert.deepEqual(await sweepAndRun(q, topic), [pending], 'the retry runs on its backoff');
    });

    it('a schedule whose definition cannot be computed does not stop the sweep of the others', async () => {
      const { q, topic, clock, ctx } = setup();
      await q.putSchedule(topic, 'good', { every: 60 });
      const p = partitionOf(topic, 'broken', target.partitions);
      const sk = scheduleKeys(p, topic, target.partitions);
      const k = topicKeys(p, topic, target.partitions);
      const record: script.ScheduleRecordArg = {
        spec: JSON.stringify({ cron: '61 * * * *', timezone: 'UTC', catchUp: 'latest', paused: false }),
        body: '1',
      };
      await run(
        ctx.redis,
        script.putSchedule(
          [
            sk.schedules,
            sk.ids,
            sk.next,
            k.jobs,
            k.bodies,
            k.delayed,
            k.running,
            k.done,
            groupKey(p, topic, '', target.partitions),
          ],
          {
            clock: clock.now,
            id: 'broken',
            seen: 0,
            pending: 'replace',
            last: null,
            run: null,
            next: { id: occurrenceId('broken', clock.now + MIN), ms: clock.now + MIN, due: clock.now + MIN },
            record,
          },
        ),
      );
      clock.advance(MIN);
      const swept = await q.engine.sweep();
      assert.equal(swept.schedulesAdvanced, 1);
      assert.equal((await q.getSchedule(topic, 'good'))?.pending?.runAt, iso(clock.now + MIN));
      assert.deepEqual(
        (await q.listSchedules(topic)).schedules.map((x) => [x.id, x.nextRuns.length]),
        [
          ['broken', 1],
          ['good', 5],
        ],
        'listed, with the runs that can be computed',
      );
    });

    it('every reply code of the schedule scripts', async () => {
      const { q, topic, clock, ctx } = setup();
      const p = partitionOf(topic, 'codes', target.partitions);
      const sk = scheduleKeys(p, topic, target.partitions);
      const k = topicKeys(p, topic, target.partitions);
      const g = groupKey(p, topic, '', target.partitions);
      const record: script.ScheduleRecordArg = {
        spec: JSON.stringify({ every: 60, catchUp: 'latest', paused: false }),
        body: '1',
      };
      const put = (seen: number) =>
        run(
          ctx.redis,
          script.putSchedule([sk.schedules, sk.ids, sk.next, k.jobs, k.bodies, k.delayed, k.running, k.done, g], {
            clock: clock.now,
            id: 'codes',
            seen,
            pending: 'replace',
            last: null,
            run: null,
            next: { id: occurrenceId('codes', clock.now + MIN), ms: clock.now + MIN, due: clock.now + MIN },
            record,
          }),
        );
      const created = await put(0);
      assert.equal(created[0], OUTCOME.CREATED);
      assert.deepEqual(await put(0), [REFUSAL.VERSION_MISMATCH, created[1]], 'a put computed from a stale read');
      const replaced = await put(created[1]);
      assert.equal(replaced[0], OUTCOME.REPLACED);
      assert.deepEqual(
        await liveJobs(q, topic),
        [occurrenceId('codes', clock.now + MIN)],
        'the same occurrence id is not doubled',
      );
      // the pending occurrence's run time has come: a plan that withdraws it was made from an earlier read
      clock.advance(MIN);
      assert.deepEqual(
        await put(replaced[1]),
        [REFUSAL.VERSION_MISMATCH, replaced[1]],
        'a put replacing a pending occurrence whose run time has come',
      );
      const advance = (seen: number, id = 'codes') =>
        run(
          ctx.redis,
          script.advanceSchedule([sk.schedules, sk.next, k.jobs, k.bodies, k.delayed, k.running, k.done, g], {
            clock: clock.now,
            id,
            seen,
            run: null,
            next: null,
            last: clock.now,
          }),
        );
      assert.deepEqual(await advance(1, 'missing'), [REFUSAL.NOT_FOUND]);
      const del = (id: string) =>
        run(
          ctx.redis,
          script.deleteSchedule([sk.schedules, sk.ids, sk.next, k.jobs, k.bodies, k.delayed, k.running, k.done], {
            clock: clock.now,
            id,
          }),
        );
      assert.deepEqual(await del('codes'), [OUTCOME.DELETED, 1]);
      assert.deepEqual(await del('codes'), [REFUSAL.NOT_FOUND]);
      assert.equal(await run(ctx.redis, script.getSchedule([sk.schedules], { id: 'codes' })), null);
    });
  });
}
