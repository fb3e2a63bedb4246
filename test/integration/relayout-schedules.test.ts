/**
 * Schedules while a stack's partition count changes (lib/engine/relayout-schedules.ts), against a
 * real redis-server: an engine of 2 partitions (the stack before the deploy) puts schedules, an
 * engine of `partitions: 3, formerPartitions: 2` (after it) moves them to their partitions of the
 * current layout, a few per sweep, and each keeps its definition, pending occurrence, last run and
 * pause; no occurrence runs twice or is lost, whether a mover dies between its steps, two move at
 * once, or the schedule is deleted right after its move; every change by id works wherever the
 * schedule is; the engine of 2 partitions, meeting a closed partition, writes in the current
 * layout.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Schedule } from '../../lib/engine';
import { occurrenceId } from '../../lib/core/schedule';
import type { Queue } from '../support/queue';
import { makeQueue, TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';
import {
  REFUSAL,
  RELAYOUT,
  groupKey,
  partitionOf,
  scheduleKeys,
  topicKeys,
  run,
  moveSchedules,
  engineContext,
  scripts as script,
} from '../../lib/testing';

const BEFORE = 2;
const AFTER = 3;
const MIN = 60_000;

describe('moving schedules while the partition count changes', () => {
  const server = useRedisServer();

  const setup = (topicInput: Record<string, unknown> = {}) => {
    const redis = server.client();
    const clock = new TestClock(); // on the hour
    const topic = uniqueTopic('relayout-sched');
    const topics = { [topic]: { ttr: 30, maxAttempts: 3, concurrency: 1000, ...topicInput } };
    const before = makeQueue(redis, topics, { clock, config: { partitions: BEFORE, retention: 0 } });
    const after = makeQueue(redis, topics, {
      clock,
      config: { partitions: AFTER, formerPartitions: BEFORE, retention: 0 },
    });
    const former = (id: string) => partitionOf(topic, id, BEFORE);
    const current = (id: string) => partitionOf(topic, id, AFTER);
    /** Where schedule `id` is stored: 'former', 'current', 'both' or 'none'. */
    const where = async (id: string) => {
      const inFormer = await redis.hexists(scheduleKeys(former(id), topic, BEFORE).schedules, id);
      const inCurrent = await redis.hexists(scheduleKeys(current(id), topic, AFTER).schedules, id);
      return inFormer && inCurrent ? 'both' : inFormer ? 'former' : inCurrent ? 'current' : 'none';
    };
    /** The keys of the steps of a move of schedule `id`, as lib/engine/relayout-schedules.ts passes them. */
    const steps = (id: string, group = '') => {
      const fsk = scheduleKeys(former(id), topic, BEFORE);
      const fk = topicKeys(former(id), topic, BEFORE);
      const csk = scheduleKeys(current(id), topic, AFTER);
      const ck = topicKeys(current(id), topic, AFTER);
      const inFormer = [fsk.schedules, fsk.ids, fsk.next, fk.jobs, fk.bodies, fk.delayed, fk.running, fk.done] as const;
      const inCurrent = [
        csk.schedules,
        csk.ids,
        csk.next,
        ck.jobs,
        ck.bodies,
        ck.delayed,
        ck.running,
        ck.done,
        groupKey(current(id), topic, group, AFTER),
      ] as const;
      return {
        freeze: () => run(redis, script.freezeSchedule(inFormer, { clock: clock.now, id, count: AFTER })),
        adopt: (record: string) => run(redis, script.adoptSchedule(inCurrent, { clock: clock.now, id, record })),
        drop: (version: number) => run(redis, script.dropSchedule(inFormer, { clock: clock.now, id, version })),
      };
    };
    /**
     * Sweeps through `q` as the sweeper does (again at once while it has more, or something due now), then claims,
     * starts and acks what is ready; the ids run, sorted.
     */
    const sweepAndRun = async (q: Queue = after) => {
      for (let i = 0; i < 20; i++) {
        const swept = await q.engine.sweep();
        if (!swept.more && (swept.nextAt === null || swept.nextAt > swept.now)) break;
      }
      const claimed = await q.engine.claim(topic, 1000);
      const live = await q.engine.start(topic, claimed);
      for (const [i, job] of claimed.entries())
        if (live[i]) assert.equal(await q.engine.ack(topic, job.id, job), 'done', `ack of ${job.id}`);
      return claimed
        .filter((_, i) => live[i])
        .map((j) => j.id)
        .sort();
    };
    /** Moves every schedule that can move (moveSchedules until none is left or only busy ones). */
    const moveAll = async () => {
      for (let i = 0; i < 50; i++) {
        const step = await moveSchedules(engineContext(after.engine), 7);
        if (!step.more && step.busy === 0) return;
      }
      assert.fail('the moves never ended');
    };
    return { redis, clock, topic, before, after, former, current, where, steps, sweepAndRun, moveAll };
  };

  /** Ids of schedules, `n` of them, all with a partition in the former layout (any id has one). */
  const ids = (n: number, label = 's') => Array.from({ length: n }, (_, i) => `${label}${i}`);

  /** A schedule as GET shows it but for what a move may change: its version. */
  const same = (s: Schedule | null) => {
    assert.ok(s, 'the schedule exists');
    const { version: _version, ...rest } = s;
    return rest;
  };

  it('the sweep moves every schedule to its current partition: definition, pending occurrence, last run and pause carry over, the version grows, and each occurrence runs once, on time', async () => {
    const { clock, topic, before, after, where, sweepAndRun } = setup();
    const all = ids(24);
    for (const id of all)
      await before.putSchedule(
        topic,
        id,
        { every: 60, body: { id }, maxAttempts: 2, ...(id === 's3' ? { paused: true } : {}) },
        'ops',
      );
    clock.advance(MIN);
    const first = await sweepAndRun(before);
    assert.equal(first.length, 23, 'each running schedule ran once (s3 is paused)');
    const seen = new Map<string, Schedule>();
    for (const id of all) {
      const s = await before.getSchedule(topic, id);
      seen.set(id, s!);
      assert.equal(await where(id), 'former', id);
    }
    // the deploy: the engine that knows of the change moves them, a few a call, then its sweeps move the rest
    const step = await moveSchedules(engineContext(after.engine), 5);
    assert.deepEqual([step.moved, step.more, step.left], [5, true, true]);
    assert.equal((await Promise.all(all.map(where))).filter((w) => w === 'current').length, 5);
    for (let i = 0; i < 20 && (await Promise.all(all.map(where))).some((w) => w !== 'current'); i++)
      await after.engine.sweep();
    for (const id of all) {
      assert.equal(await where(id), 'current', id);
      const moved = await after.getSchedule(topic, id);
      assert.deepEqual(same(moved), same(seen.get(id)!), `${id}: the same schedule`);
      assert.ok(moved!.version > seen.get(id)!.version, `${id}: its version grew`);
    }
    assert.equal(seen.get('s3')!.paused, true);
    // the next minute's occurrences (made in the former layout, moved with their schedules) run once, on time
    clock.advance(MIN);
    const second = await sweepAndRun();
    assert.deepEqual(
      second,
      all
        .filter((id) => id !== 's3')
        .map((id) => occurrenceId(id, clock.now))
        .sort(),
    );
    for (let m = 0; m < 3; m++) {
      clock.advance(MIN);
      assert.equal((await sweepAndRun()).length, 23, 'one occurrence a minute each, none twice');
    }
    assert.deepEqual(await sweepAndRun(), [], 'nothing more');
    const listed = await after.listSchedules(topic, { limit: 100 });
    assert.deepEqual(
      listed.schedules.map((s) => s.id),
      [...all].sort(),
      'listed once each',
    );
  });

  it('a mover killed after the freeze or after the adopt: the next move finishes it, and an occurrence that fell due meanwhile runs once, a sweep late at most', async () => {
    const { clock, topic, before, after, where, steps, sweepAndRun, moveAll } = setup();
    await before.putSchedule(topic, 'a', { every: 60, body: { n: 1 } });
    await before.putSchedule(topic, 'b', { every: 60, body: { n: 2 } });
    const a0 = await before.getSchedule(topic, 'a');
    const b0 = await before.getSchedule(topic, 'b');
    // killed after step 1 (a) and after step 2 (b)
    const fa = await steps('a').freeze();
    assert.equal(fa[0], RELAYOUT.FROZEN);
    const fb = await steps('b').freeze();
    assert.equal(fb[0], RELAYOUT.FROZEN);
    assert.equal((await steps('b').adopt(fb[2] as string))[0], RELAYOUT.ADOPTED);
    assert.equal(await where('a'), 'former');
    assert.equal(await where('b'), 'both');
    assert.deepEqual(same(await after.getSchedule(topic, 'a')), same(a0), 'frozen, it is still read');
    assert.deepEqual(
      (await after.listSchedules(topic)).schedules.map((s) => s.id),
      ['a', 'b'],
      'b, in both partitions for now, listed once',
    );
    // the occurrences fall due while nobody moves: frozen, a's waits nowhere; neither runs twice
    clock.advance(MIN);
    const ran = await sweepAndRun(before); // the engine of 2 partitions sweeps its layout: nothing of a there runs
    assert.deepEqual(ran, []);
    await moveAll();
    assert.equal(await where('a'), 'current');
    assert.equal(await where('b'), 'current');
    assert.deepEqual(
      await sweepAndRun(),
      [occurrenceId('a', clock.now), occurrenceId('b', clock.now)],
      'each ran once, a sweep late',
    );
    const b1 = await after.getSchedule(topic, 'b');
    assert.deepEqual(
      [b1?.lastRunAt, b1?.pending?.id, b1?.body, b1?.createdAt],
      [new Date(clock.now).toISOString(), occurrenceId('b', clock.now + MIN), b0?.body, b0?.createdAt],
      'moved on from where it was',
    );
    clock.advance(MIN);
    assert.deepEqual(await sweepAndRun(), [occurrenceId('a', clock.now), occurrenceId('b', clock.now)]);
  });

  it('two movers at once make one copy; a stale mover never brings back a schedule deleted right after its move', async () => {
    const { clock, topic, before, after, where, steps, sweepAndRun, moveAll } = setup();
    const all = ids(12);
    for (const id of [...all, 'gone']) await before.putSchedule(topic, id, { every: 60 });
    // a stale mover: it froze (and read) the record of 'gone', then stalled
    const stale = await steps('gone').freeze();
    assert.equal(stale[0], RELAYOUT.FROZEN);
    const twin = makeQueue(engineContext(after.engine).redis, Object.fromEntries([[topic, { ttr: 30 }]]), {
      clock,
      config: { partitions: AFTER, formerPartitions: BEFORE, retention: 0 },
    });
    await Promise.all([
      moveSchedules(engineContext(after.engine), 100),
      moveSchedules(engineContext(twin.engine), 100),
      moveSchedules(engineContext(after.engine), 100),
    ]);
    for (const id of [...all, 'gone']) assert.equal(await where(id), 'current', id);
    await moveAll();
    // the move finished by others, the schedule is deleted; then the stale mover goes on
    await after.deleteSchedule(topic, 'gone');
    assert.deepEqual(
      await steps('gone').adopt(stale[2] as string),
      [REFUSAL.JOB_EXISTS],
      'the current partition remembers it moved in and was deleted',
    );
    assert.deepEqual(await steps('gone').drop(stale[1] as number), [REFUSAL.NOT_FOUND]);
    assert.equal(await where('gone'), 'none');
    assert.equal(await after.getSchedule(topic, 'gone'), null);
    clock.advance(MIN);
    const ran = await sweepAndRun();
    assert.deepEqual(
      ran,
      all.map((id) => occurrenceId(id, clock.now)).sort(),
      'one occurrence each, none of the deleted one',
    );
  });

  it('put, pause, resume, delete and GET work during the change wherever the schedule is: a change by id moves it first', async () => {
    const { clock, topic, before, after, where, sweepAndRun } = setup();
    for (const id of ['p', 'q', 'r', 'd']) await before.putSchedule(topic, id, { every: 60, body: { id } });
    assert.equal((await after.getSchedule(topic, 'p'))?.id, 'p', 'read in the former partition, not moved');
    assert.equal(await where('p'), 'former');
    const put = await after.putSchedule(topic, 'p', { every: 120, body: { id: 'p', v: 2 } });
    assert.equal(put.status, 'replaced');
    assert.equal(await where('p'), 'current');
    assert.deepEqual((await after.getSchedule(topic, 'p'))?.body, { id: 'p', v: 2 });
    const paused = await after.pauseSchedule(topic, 'q', true);
    assert.equal(paused.paused, true);
    assert.equal(await where('q'), 'current');
    await after.deleteSchedule(topic, 'd');
    assert.equal(await where('d'), 'none');
    assert.equal(await after.getSchedule(topic, 'd'), null);
    const created = await after.putSchedule(topic, 'n', { every: 60 });
    assert.equal(created.status, 'created');
    assert.equal(await where('n'), 'current', 'a new id: in the current layout');
    clock.advance(MIN);
    assert.deepEqual(
      await sweepAndRun(),
      [occurrenceId('n', clock.now), occurrenceId('r', clock.now)],
      'r, moved by the sweep as its occurrence fell due, runs on time; q paused; p every 2 minutes; d deleted',
    );
    const resumed = await after.pauseSchedule(topic, 'q', false);
    assert.equal(resumed.paused, false);
    assert.deepEqual(
      (await after.listSchedules(topic)).schedules.map((s) => s.id),
      ['n', 'p', 'q', 'r'],
    );
  });

  it('a schedule whose occurrence runs in the former partition is not moved until it ends; a pause meanwhile holds back what has not started, there', async () => {
    const { clock, topic, before, after, where, moveAll } = setup();
    await before.putSchedule(topic, 'busy', { every: 60 });
    clock.advance(MIN);
    for (let i = 0; i < 5 && (await before.engine.sweep()).more; i++);
    const [job] = await before.engine.claim(topic, 10);
    assert.ok(job);
    assert.deepEqual(await before.engine.start(topic, [job]), [true]);
    assert.deepEqual(
      await moveSchedules(engineContext(after.engine), 10).then((s) => [s.moved, s.busy, s.left]),
      [0, 1, true],
      'busy: not moved',
    );
    assert.equal(await where('busy'), 'former');
    assert.equal((await after.pauseSchedule(topic, 'busy', true)).paused, true, 'the pause acts where it lives');
    assert.equal(await after.engine.ack(topic, job.id, job), 'done', 'the started occurrence ran on');
    await moveAll();
    assert.equal(await where('busy'), 'current');
    assert.equal((await after.getSchedule(topic, 'busy'))?.paused, true);
  });

  it('an engine that does not know of the change, putting a new id in a closed partition of the former layout, is refused there and writes it in the current one; it reaches a moved schedule too', async () => {
    const { topic, before, after, former, where } = setup();
    // a schedule put through the engine that knows closes its former partition (and, moved, the schedule is in the
    // current one)
    await after.putSchedule(topic, 'first', { every: 60 });
    const closed = former('first');
    const fresh = ids(40, 'x').find((id) => former(id) === closed)!;
    const created = await before.putSchedule(topic, fresh, { every: 60, body: { fresh: true } });
    assert.equal(created.status, 'created');
    assert.equal(
      await where(fresh),
      'current',
      'refused in the closed former partition, written in the current layout',
    );
    assert.deepEqual((await after.getSchedule(topic, fresh))?.body, { fresh: true });
    assert.deepEqual(
      (await before.getSchedule(topic, fresh))?.body,
      { fresh: true },
      'read in the layout the closed partition names',
    );
    // a schedule the old engine put before the partition closed, moved since, is changed through it where it lives
    const old = ids(40, 'y').find((id) => former(id) !== closed) ?? 'y0';
    await before.putSchedule(topic, old, { every: 60 });
    await moveSchedules(engineContext(after.engine), 100);
    assert.equal(await where(old), 'current');
    assert.equal((await before.pauseSchedule(topic, old, true)).paused, true);
    await before.deleteSchedule(topic, old);
    assert.equal(await where(old), 'none');
  });

  it('a schedule with a group and a jitter: its pending occurrence is made again in the current partition, in its group, once', async () => {
    const { clock, topic, before, after, where, sweepAndRun } = setup();
    await before.putSchedule(topic, 'g', { every: 60, group: 'tenant-1', jitter: 20 });
    await after.engine.sweep();
    assert.equal(await where('g'), 'current');
    // the withdrawn occurrence's leftovers in the former partition purged
    for (let i = 0; i < 3; i++) await after.engine.sweep();
    const grouped = await after.listGroup(topic, 'tenant-1', { limit: 10 });
    assert.deepEqual(
      grouped.jobs.map((j) => [j.id, j.state]),
      [[occurrenceId('g', clock.now + MIN), 'delayed']],
    );
    clock.advance(MIN + 20_000);
    assert.deepEqual(await sweepAndRun(), [occurrenceId('g', clock.now - 20_000)]);
  });

  it('a stack not changing: a schedule costs the script calls it did before (no move, no look in another layout)', async () => {
    const { redis, topic, before } = setup();
    // the script calls and other requests the engine sent (the commands the scripts ran are counted apart, as
    // cmdstat_hget and such: left out)
    const calls = async () => {
      const stats = await redis.info('commandstats');
      return [...stats.matchAll(/cmdstat_(fcall|fcall_ro|evalsha|eval|time):calls=(\d+)/g)].reduce(
        (sum, m) => sum + Number(m[2]),
        0,
      );
    };
    await before.putSchedule(topic, 'warm', { every: 60 });
    let at = await calls();
    const cost = async (f: () => Promise<unknown>) => {
      await f();
      const now = await calls();
      const used = now - at;
      at = now;
      return used;
    };
    assert.deepEqual(
      [
        await cost(() => before.putSchedule(topic, 'c', { every: 60 })),
        await cost(() => before.getSchedule(topic, 'c')),
        await cost(() => before.getSchedule(topic, 'none')),
        await cost(() => before.pauseSchedule(topic, 'c', true)),
        await cost(() => before.deleteSchedule(topic, 'c')),
      ],
      [3, 1, 1, 4, 1],
      'put: read, commit, read; get: one read; pause: read, then a put; delete: one call',
    );
  });
});
