/**
 * Pausing a schedule (Engine.pauseSchedule) against a real redis-server: once the pause answered,
 * no occurrence of it starts (one ready, one claimed but not started, one held back by its jitter
 * are all held back); one that started runs on; the definition stays; a resume catches up by its
 * catchUp, and never runs again an occurrence that ran before the pause.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
// a sweep's steps apart: the occurrence runs before its schedule moves on
import { makeQueue, TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';
import { moveDue, engineContext } from '../../lib/testing';

const MIN = 60_000;

describe('pausing a schedule', () => {
  const redis = useRedisServer();

  function setup() {
    const topic = uniqueTopic('sched-pause');
    const clock = new TestClock(); // on the hour
    const q = makeQueue(
      redis.client(),
      { [topic]: { ttr: 30, maxAttempts: 3, concurrency: 100 } },
      { clock, config: { retention: 0 } },
    );
    return { topic, clock, q };
  }

  const sweepAll = async (q: ReturnType<typeof setup>['q']) => {
    for (let i = 0; i < 10 && (await q.engine.sweep()).more; i++);
  };

  it('holds back a claimed occurrence that has not started, and every later one; the definition stays; resume catches up once', async () => {
    const { topic, clock, q } = setup();
    await q.putSchedule(topic, 'minutely', { every: 60, catchUp: 'latest', body: { kind: 'tick' }, maxAttempts: 7 });
    clock.advance(MIN);
    await sweepAll(q);
    const [claimed] = await q.engine.claim(topic, 10);
    assert.ok(claimed, 'the first occurrence is claimed');
    const paused = await q.engine.pauseSchedule(topic, 'minutely', true, 'ops');
    assert.equal(paused?.paused, true);
    assert.equal(paused?.pending, null);
    assert.deepEqual(await q.engine.start(topic, [claimed]), [false], 'claimed before the pause: its start refuses it');
    for (let i = 0; i < 5; i++) {
      clock.advance(MIN);
      await sweepAll(q);
      assert.deepEqual(await q.engine.claim(topic, 10), [], 'nothing runs while paused');
    }
    const kept = await q.getSchedule(topic, 'minutely');
    assert.deepEqual(
      [kept?.every, kept?.body, kept?.maxAttempts, kept?.updatedBy],
      [60, { kind: 'tick' }, 7, 'ops'],
      'the definition stays',
    );
    const resumed = await q.engine.pauseSchedule(topic, 'minutely', false, 'ops');
    assert.equal(resumed?.paused, false);
    await sweepAll(q);
    const after = await q.engine.claim(topic, 10);
    assert.equal(
      after.length,
      1,
      `catchUp latest: one run for what the pause missed, got ${after.map((j) => j.id).join(', ')}`,
    );
    assert.equal(await q.engine.pauseSchedule(topic, 'none', true), null, 'no such schedule');
  });

  it('a ready occurrence is withdrawn; a started one runs on', async () => {
    const { topic, clock, q } = setup();
    await q.putSchedule(topic, 'a', { every: 60 });
    await q.putSchedule(topic, 'b', { every: 60 });
    clock.advance(MIN);
    await sweepAll(q);
    const claimed = await q.engine.claim(topic, 10);
    const b = claimed.find((j) => j.id.startsWith('b:'))!;
    assert.ok(b);
    assert.deepEqual(await q.engine.start(topic, [b]), [true]);
    await q.engine.release(claimed.filter((j) => j !== b)); // a's occurrence back to ready, unclaimed
    await q.engine.pauseSchedule(topic, 'a', true);
    await q.engine.pauseSchedule(topic, 'b', true);
    assert.deepEqual(await q.engine.claim(topic, 10), [], "a's ready occurrence was withdrawn");
    assert.equal(await q.engine.ack(topic, b.id, b), 'done', "b's started occurrence ran on");
  });

  it('an occurrence that ran before the pause (its schedule not moved on yet, retention 0) does not run again on resume', async () => {
    const { topic, clock, q } = setup();
    await q.putSchedule(topic, 'once', { every: 3600, catchUp: 'latest' });
    clock.advance(60 * MIN);
    const t = q.engine.topic(topic);
    await moveDue(engineContext(q.engine), t, 0, 100); // the occurrence ready, its schedule not advanced
    const [job] = await q.engine.claimStarted(topic, 10);
    assert.ok(job);
    assert.equal(await q.engine.ack(topic, job.id, job), 'done'); // deleted at once (retention 0)
    await q.engine.pauseSchedule(topic, 'once', true);
    const resumed = await q.engine.pauseSchedule(topic, 'once', false);
    assert.equal(resumed?.lastRunAt, new Date(clock.now).toISOString(), 'the run that happened counts as handed over');
    await sweepAll(q);
    assert.deepEqual(await q.engine.claim(topic, 10), [], 'it does not run again');
  });
});
