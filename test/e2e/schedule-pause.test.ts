/**
 * A schedule paused and resumed through the stack (redis-server + serverless offline), with the
 * client: a schedule running every second on topic `example` is paused (200, paused, no pending
 * occurrence; GET shows it so, and no occurrence is handed over while a job due seconds later
 * runs), then resumed (not paused, an occurrence pending, and one runs to done); 404 for a schedule
 * that does not exist, 403 for a read key on both routes. The client accepts only a 200 with the
 * schedule, and every answer is checked against openapi.yaml. Each test waits for a condition,
 * never for a fixed time.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { DelayQueueClient, DelayQueueError, type Job, type Schedule } from '../../lib/client';
import { startOffline, type OfflineProcess } from '../support/offline';
import { checkingFetch, Contract } from '../support/openapi';
import { startRedis, type RedisProcess } from '../support/redis';

/** An occurrence's id: the schedule's id and its run time as YYYYMMDDTHHMMSSZ. */
const occurrenceId = (id: string, runAt: string) => `${id}:${runAt.slice(0, 19).replace(/[-:]/g, '')}Z`;

describe('schedule pause and resume through the stack', () => {
  const contract = new Contract();
  let redisServer: RedisProcess;
  let offline: OfflineProcess;
  let queue: DelayQueueClient;
  let seq = 0;
  const uid = (label: string) => `${label}-${process.pid}-${++seq}`;

  /** Polls `read` until `ok` holds for what it returns (120 s at most). */
  async function until<T>(what: string, read: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
    // a ceiling, so a stuck job fails the test instead of hanging it: a slow machine only waits longer
    const end = Date.now() + 120_000;
    for (;;) {
      const value = await read();
      if (ok(value)) return value;
      if (Date.now() > end) assert.fail(`${what}: never (last seen ${JSON.stringify(value)})`);
      await sleep(100);
    }
  }

  const jobIn = (id: string, state: string) =>
    until<Job | null>(
      `job example/${id} ${state}`,
      () => queue.get('example', id),
      (job) => job?.state === state,
    );

  /** The error a call fails with: its status and code. */
  async function refusal(call: Promise<unknown>): Promise<[number, string]> {
    const error = await call.then(
      () => assert.fail('expected a refusal'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof DelayQueueError, String(error));
    return [error.status, error.code];
  }

  before(async () => {
    redisServer = await startRedis();
    offline = await startOffline({ redisUrl: redisServer.url });
    queue = new DelayQueueClient({
      baseUrl: offline.baseUrl,
      token: offline.token,
      fetch: checkingFetch(contract, offline.baseUrl),
    });
  });
  after(async () => {
    await offline?.stop();
    await redisServer?.stop();
  });

  it('pause: paused, nothing pending, nothing handed over while paused; resume: an occurrence pending, and one runs; the definition kept', async () => {
    const id = uid('every-second');
    await queue.putSchedule('example', id, { every: 1, body: { tick: true }, maxAttempts: 2 });
    const running = await until<Schedule | null>(
      'an occurrence handed over',
      () => queue.getSchedule('example', id),
      (s) => s?.lastRunAt !== null,
    );

    const paused = await queue.pauseSchedule('example', id);
    assert.deepEqual([paused.paused, paused.pending, paused.nextRuns], [true, null, []]);
    assert.deepEqual(
      [paused.every, paused.body, paused.maxAttempts, paused.catchUp],
      [1, { tick: true }, 2, 'latest'],
      'the definition is kept',
    );
    assert.ok(paused.lastRunAt! >= running!.lastRunAt!);
    assert.deepEqual(await queue.getSchedule('example', id), paused, 'GET shows it paused, as the pause answered');
    const again = await queue.pauseSchedule('example', id);
    assert.deepEqual(
      [again.paused, again.pending, again.lastRunAt],
      [true, null, paused.lastRunAt],
      'pausing a paused schedule is fine',
    );

    // a job due 3 s on runs: the sweeper has passed the schedule's run times meanwhile, and handed none over
    const control = await queue.add({ topic: 'example', id: uid('control'), delay: 3 });
    await jobIn(control.id, 'done');
    const still = (await queue.getSchedule('example', id))!;
    assert.deepEqual(
      [still.paused, still.pending, still.lastRunAt],
      [true, null, paused.lastRunAt],
      'no occurrence while paused',
    );

    const resumed = await queue.resumeSchedule('example', id);
    assert.equal(resumed.paused, false);
    assert.notEqual(resumed.pending, null, 'an occurrence is pending');
    assert.equal(resumed.nextRuns.length, 5);
    assert.deepEqual(
      [resumed.every, resumed.body, resumed.maxAttempts],
      [1, { tick: true }, 2],
      'the definition is kept',
    );
    assert.equal((await queue.getSchedule('example', id))!.paused, false, 'GET shows it running');
    const ran = await until<Schedule | null>(
      'an occurrence after the resume',
      () => queue.getSchedule('example', id),
      (s) => s !== null && s.lastRunAt! > paused.lastRunAt!,
    );
    const job = await jobIn(occurrenceId(id, ran!.lastRunAt!), 'done');
    assert.deepEqual(job!.body, { tick: true });

    await queue.deleteSchedule('example', id);
  });

  it('a schedule that does not exist: 404 NOT_FOUND for both; a read key: 403 FORBIDDEN for both, nothing changed', async () => {
    for (const action of ['pauseSchedule', 'resumeSchedule'] as const) {
      assert.deepEqual(await refusal(queue[action]('example', uid('none'))), [404, 'NOT_FOUND'], action);
    }

    const id = uid('read-only');
    await queue.putSchedule('example', id, { every: 3600 });
    const { secret } = await queue.createKey({ name: uid('reader'), scope: 'read' });
    const reader = new DelayQueueClient({
      baseUrl: offline.baseUrl,
      token: secret,
      fetch: checkingFetch(contract, offline.baseUrl),
    });
    assert.equal((await reader.getSchedule('example', id))?.id, id, 'a read key reads it');
    for (const action of ['pauseSchedule', 'resumeSchedule'] as const) {
      assert.deepEqual(await refusal(reader[action]('example', id)), [403, 'FORBIDDEN'], action);
    }
    assert.equal((await queue.getSchedule('example', id))?.paused, false, 'nothing changed');
    await queue.deleteSchedule('example', id);
  });
});
