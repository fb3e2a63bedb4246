/**
 * DelayQueueClient against the real stack (redis-server + serverless offline): every method,
 * typed errors from real refusals, and an add retried through a real Redis outage. Every answer
 * the client gets is also checked against openapi.yaml (its `fetch` option).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { DelayQueueClient, DelayQueueError, type Job, type ScheduleInput } from '../../lib/client';
import { startOffline, type OfflineProcess } from '../support/offline';
import { checkingFetch, Contract } from '../support/openapi';
import { startReceiver, type Receiver } from '../support/receiver';
import { startRedis, type RedisProcess } from '../support/redis';

const SECRET = 'client-webhook-secret';

describe('the client against the stack', () => {
  const contract = new Contract();
  let redisServer: RedisProcess;
  let offline: OfflineProcess;
  let receiver: Receiver;
  let queue: DelayQueueClient;
  let seq = 0;
  const uid = (label: string) => `${label}-${process.pid}-${++seq}`;

  async function until(what: string, check: () => Promise<Job | null>, state: string): Promise<Job> {
    // a ceiling, so a stuck job fails the test instead of hanging it: a slow machine only waits longer
    const end = Date.now() + 120_000;
    for (;;) {
      const job = await check();
      if (job?.state === state) return job;
      if (Date.now() > end) assert.fail(`timed out waiting for ${what} to be ${state}`);
      await sleep(100);
    }
  }

  before(async () => {
    [redisServer, receiver] = await Promise.all([startRedis(), startReceiver(SECRET)]);
    offline = await startOffline({ redisUrl: redisServer.url, env: { WEBHOOK_SECRET: SECRET } });
    queue = new DelayQueueClient({
      baseUrl: offline.baseUrl,
      token: offline.token,
      fetch: checkingFetch(contract, offline.baseUrl),
    });
  });
  after(async () => {
    await offline?.stop();
    await receiver?.close();
    await redisServer?.stop();
  });

  it('add, get, put, cancel; a job due now runs to done', async () => {
    const added = await queue.add({ topic: 'example', delay: 3600, body: { orderId: 42 } });
    assert.match(added.id, /^[0-9a-f-]{36}$/, 'an id made by the client');
    assert.deepEqual([added.state, added.body], ['delayed', { orderId: 42 }]);
    assert.deepEqual((await queue.get('example', added.id))?.body, { orderId: 42 });
    assert.equal(await queue.get('example', uid('missing')), null);

    const replaced = await queue.put('example', added.id, { delay: '2h', ttr: '1m', body: { orderId: 43 } });
    assert.deepEqual([replaced.created, replaced.job.body, replaced.job.ttr], [false, { orderId: 43 }, 60]);
    const inTwoHours = Date.parse(replaced.job.runAt) - Date.parse(replaced.job.updatedAt);
    assert.ok(Math.abs(inTwoHours - 7_200_000) < 1000, `a delay of "2h" is due 2 h after the put (${inTwoHours} ms)`);
    const created = await queue.put('example', uid('put'), { runAt: Date.now() + 60_000 });
    assert.equal(created.created, true);
    assert.equal((await queue.cancel('example', added.id)).state, 'cancelled');

    const now = await queue.add({ topic: 'example', id: uid('now'), delay: 0, body: 'hello' });
    const done = await until(now.id, () => queue.get('example', now.id), 'done');
    assert.equal(done.attempts, 1);
  });

  it('typed errors from real refusals: JOB_EXISTS with the job, VALIDATION_FAILED with details, UNKNOWN_TOPIC, UNAUTHORIZED, JOB_FINISHED', async () => {
    const id = uid('dup');
    await queue.add({ topic: 'example', id, delay: 3600, body: 1 });
    const exists = await queue.add({ topic: 'example', id, delay: 3600, body: 2 }).catch((e: unknown) => e);
    assert.ok(exists instanceof DelayQueueError);
    assert.deepEqual([exists.status, exists.code, exists.job?.body], [409, 'JOB_EXISTS', 1]);

    const invalid = await queue.add({ topic: 'example', delay: -1, maxAttempts: 0 }).catch((e: unknown) => e);
    assert.ok(invalid instanceof DelayQueueError);
    assert.equal(invalid.code, 'VALIDATION_FAILED');
    assert.deepEqual((invalid.details as { path: string }[]).map((d) => d.path).sort(), ['delay', 'maxAttempts']);
    assert.equal(
      ((await queue.add({ topic: 'nope', delay: 1 }).catch((e: unknown) => e)) as DelayQueueError).code,
      'UNKNOWN_TOPIC',
    );
    const stranger = new DelayQueueClient({ baseUrl: offline.baseUrl, token: 'wrong' });
    assert.deepEqual(await stranger.topics().catch((e: DelayQueueError) => [e.status, e.code]), [401, 'UNAUTHORIZED']);

    const done = uid('fin');
    await queue.add({ topic: 'example', id: done, delay: 0 });
    await until(done, () => queue.get('example', done), 'done');
    const finished = await queue.cancel('example', done).catch((e: unknown) => e);
    assert.ok(finished instanceof DelayQueueError);
    assert.deepEqual([finished.code, finished.job?.state], ['JOB_FINISHED', 'done']);
  });

  it('keyed adds: addKeyed says created, duplicate or debounced; add returns the job; addMany carries outcomes', async () => {
    const key = uid('dedupe');
    const created = await queue.addKeyed({ topic: 'example', delay: 3600, priority: -5, dedupe: { key, window: 60 } });
    assert.equal(created.outcome, 'created');
    assert.match(created.id, new RegExp(`^${key}::.{16}$`), 'the server made <key>::…, the client no UUID');
    assert.equal(created.job?.priority, -5);
    const duplicate = await queue.addKeyed({ topic: 'example', delay: 1, body: 'other', dedupe: { key } });
    assert.deepEqual([duplicate.outcome, duplicate.id, duplicate.job?.body], ['duplicate', created.id, null]);
    assert.equal((await queue.add({ topic: 'example', delay: 1, dedupe: { key } })).id, created.id);

    const bkey = uid('debounce');
    const first = await queue.add({ topic: 'example', body: { n: 1 }, debounce: { key: bkey, period: '1h' } });
    const folded = await queue.addKeyed({ topic: 'example', body: { n: 2 }, debounce: { key: bkey, period: '1h' } });
    assert.deepEqual([folded.outcome, folded.id, folded.job?.body], ['debounced', first.id, { n: 2 }]);
    assert.deepEqual((await queue.get('example', first.id))?.body, { n: 2 });

    const results = await queue.addMany([
      { topic: 'example', delay: 3600 },
      { topic: 'example', delay: 1, dedupe: { key } },
      { topic: 'example', body: { n: 3 }, debounce: { key: bkey, period: '1h' } },
    ]);
    assert.deepEqual(
      results.map((r) => (r.ok ? [r.status, r.outcome] : [r.status, r.error.code])),
      [
        [201, 'created'],
        [200, 'duplicate'],
        [200, 'debounced'],
      ],
    );
  });

  it('addMany, topics, dead and redrive: a webhook that fails once dies, is redriven, and is delivered', async () => {
    const ok = uid('batch');
    const results = await queue.addMany([
      { topic: 'example', id: ok, delay: 3600 },
      { topic: 'example', delay: -1 },
      { topic: 'example', id: ok, delay: 1 },
    ]);
    assert.deepEqual(
      results.map((r) => (r.ok ? r.status : `${r.status} ${r.error.code}`)),
      [201, '400 VALIDATION_FAILED', '409 JOB_EXISTS'],
    );

    const id = uid('healed');
    await queue.add({
      topic: 'webhook',
      id,
      delay: 0,
      url: `${receiver.url}/fail-1/${id}`,
      maxAttempts: 1,
      body: { orderId: 9 },
    });
    await until(id, () => queue.get('webhook', id), 'dead');
    const stats = (await queue.topics()).find((t) => t.topic === 'webhook');
    assert.equal(stats?.dead, 1);
    const page = await queue.dead('webhook', { limit: 10 });
    assert.deepEqual(
      page.jobs.map((j) => [j.id, j.state]),
      [[id, 'dead']],
    );
    assert.match(page.jobs[0]!.lastError ?? '', /HTTP 500/);
    assert.equal(await queue.redrive('webhook', { ids: [id] }), 1);
    const done = await until(id, () => queue.get('webhook', id), 'done');
    assert.equal(done.attempts, 1);
    assert.equal(receiver.of(id).length, 2);
  });

  it('groups and listings: listGroup pages with a cursor, listJobs in runAt order with Date, epoch ms and ISO bounds, cancelGroup', async () => {
    const group = uid('cgrp');
    const ids = Array.from({ length: 5 }, (_, i) => `${group}-${i}`);
    const base = Date.now() + 100 * 86_400_000; // after every other job of this file
    const added = await queue.addMany(
      ids.map((id, i) => ({ topic: 'example', id, runAt: base + (4 - i) * 1000, group })),
    );
    assert.ok(added.every((r) => r.ok));

    const first = await queue.listGroup('example', group, { limit: 2 });
    assert.equal(first.jobs.length, 2);
    assert.equal(typeof first.next, 'string');
    const rest = await queue.listGroup('example', group, { limit: 10, cursor: first.next! });
    assert.equal(rest.next, null);
    assert.deepEqual([...first.jobs, ...rest.jobs].map((j) => j.id).sort(), ids);
    assert.ok([...first.jobs, ...rest.jobs].every((j) => j.group === group && j.state === 'delayed'));

    const byTime = [...ids].reverse();
    assert.deepEqual(
      (await queue.listJobs('example', { state: 'delayed', from: new Date(base), to: base + 4000 })).jobs.map(
        (j) => j.id,
      ),
      byTime,
    );
    assert.deepEqual(
      (
        await queue.listJobs('example', { from: new Date(base + 1000).toISOString(), to: new Date(base + 3000) })
      ).jobs.map((j) => j.id),
      byTime.slice(1, 4),
    );
    const paged = await queue.listJobs('example', { from: base, limit: 3 });
    assert.deepEqual(
      paged.jobs.map((j) => j.id),
      byTime.slice(0, 3),
    );
    assert.deepEqual(
      (await queue.listJobs('example', { from: base, limit: 3, cursor: paged.next! })).jobs.map((j) => j.id),
      byTime.slice(3),
    );
    const invalid = await queue.listJobs('example', { from: base + 1, to: base }).catch((e: unknown) => e);
    assert.ok(invalid instanceof DelayQueueError);
    assert.deepEqual(
      [invalid.code, (invalid.details as { path: string }[]).map((d) => d.path)],
      ['VALIDATION_FAILED', ['from']],
    );

    assert.deepEqual(await queue.cancelGroup('example', group), { cancelled: 5, running: 0 });
    assert.ok((await queue.listGroup('example', group)).jobs.every((j) => j.state === 'cancelled'));
    assert.deepEqual(await queue.cancelGroup('example', group), { cancelled: 0, running: 0 });
  });

  it('ifMatch: a put or cancel of another version is VERSION_MISMATCH with the current job; of the current one it goes through', async () => {
    const added = await queue.add({ topic: 'example', delay: 3600, body: 1 });
    const stale = await queue
      .put('example', added.id, { delay: 60, body: 'stale' }, { ifMatch: added.version + 1 })
      .catch((e: unknown) => e);
    assert.ok(stale instanceof DelayQueueError);
    assert.deepEqual(
      [stale.status, stale.code, stale.job],
      [412, 'VERSION_MISMATCH', await queue.get('example', added.id)],
    );

    const { job: replaced } = await queue.put('example', added.id, { delay: 60, body: 2 }, { ifMatch: added.version });
    assert.ok(replaced.version > added.version);
    const notCancelled = await queue.cancel('example', added.id, { ifMatch: added.version }).catch((e: unknown) => e);
    assert.ok(notCancelled instanceof DelayQueueError);
    assert.deepEqual(
      [notCancelled.code, notCancelled.job?.version, notCancelled.job?.body],
      ['VERSION_MISMATCH', replaced.version, 2],
    );
    assert.equal((await queue.cancel('example', added.id, { ifMatch: replaced.version })).state, 'cancelled');

    const absent = await queue.put('example', uid('absent'), { delay: 60 }, { ifMatch: '*' }).catch((e: unknown) => e);
    assert.ok(absent instanceof DelayQueueError);
    assert.deepEqual([absent.code, absent.job], ['VERSION_MISMATCH', undefined]);
  });

  /** Every job of group `group` of the example topic, all pages. */
  async function groupJobs(group: string): Promise<Job[]> {
    const jobs: Job[] = [];
    let cursor: string | null = null;
    do {
      const page: { jobs: Job[]; next: string | null } = await queue.listGroup('example', group, {
        limit: 500,
        ...(cursor ? { cursor } : {}),
      });
      jobs.push(...page.jobs);
      cursor = page.next;
    } while (cursor !== null);
    return jobs;
  }

  /** The id of schedule `id`'s occurrence at ISO time `at`. */
  const occurrenceId = (id: string, at: string) => `${id}:${at.slice(0, 19).replace(/[-:]/g, '')}Z`;

  it('schedules: every second on the example topic, each occurrence delivered once as <id>:<YYYYMMDDTHHMMSSZ>; GET shows the next 5 runs; a delete stops it', async () => {
    const id = uid('tick');
    const group = `${id}-g`;
    const { schedule, created } = await queue.putSchedule('example', id, { every: 1, body: { tick: true }, group });
    assert.equal(created, true);
    assert.equal(schedule.nextRuns.length, 5);
    assert.equal(schedule.pending?.runAt, schedule.nextRuns[0]);
    assert.equal(schedule.pending?.id, occurrenceId(id, schedule.nextRuns[0]!));
    const gaps = schedule.nextRuns.slice(1).map((t, i) => Date.parse(t) - Date.parse(schedule.nextRuns[i]!));
    assert.deepEqual(gaps, [1000, 1000, 1000, 1000]);

    const deadline = Date.now() + 90_000; // generous: the machine may be busy
    let jobs = await groupJobs(group);
    while (jobs.filter((j) => j.state === 'done').length < 3) {
      if (Date.now() > deadline)
        assert.fail(`fewer than 3 occurrences done in 90 s: ${JSON.stringify(jobs.map((j) => [j.id, j.state]))}`);
      await sleep(250);
      jobs = await groupJobs(group);
    }
    for (const job of jobs) {
      assert.equal(job.id, occurrenceId(id, job.runAt), 'an occurrence is named by its run time');
      assert.deepEqual(job.body, { tick: true });
    }
    assert.equal(new Set(jobs.map((j) => j.runAt)).size, jobs.length, 'one job per run time');
    for (const job of jobs.filter((j) => j.state === 'done')) assert.equal(job.attempts, 1, `${job.id} ran once`);

    const got = await queue.getSchedule('example', id);
    assert.equal(got?.nextRuns.length, 5);
    assert.ok(got!.lastRunAt !== null && Date.parse(got!.lastRunAt) >= Date.parse(schedule.nextRuns[0]!), 'it ran');
    assert.equal(got!.pending?.runAt, got!.nextRuns[0]);
    assert.deepEqual(
      got!.nextRuns.slice(1).map((t, i) => Date.parse(t) - Date.parse(got!.nextRuns[i]!)),
      [1000, 1000, 1000, 1000],
    );
    assert.ok((await queue.listSchedules('example', { limit: 100 })).schedules.some((x) => x.id === id));

    await queue.deleteSchedule('example', id);
    const answeredAt = Date.now();
    assert.equal(await queue.getSchedule('example', id), null);
    const atDelete = new Set((await groupJobs(group)).map((j) => j.id));
    // let the pipeline run past the cadence: a job due 2 s after the delete is done first
    const control = await queue.add({ topic: 'example', id: uid('after-delete'), delay: 2 });
    await until(control.id, () => queue.get('example', control.id), 'done');
    await sleep(1500);
    const final = await groupJobs(group);
    assert.deepEqual(
      final.map((j) => j.id).filter((x) => !atDelete.has(x)),
      [],
      'no occurrence created after the delete answered',
    );
    for (const job of final) {
      assert.ok(
        Date.parse(job.runAt) <= answeredAt + 1000,
        `${job.id}: at most the pending occurrence was due after the delete`,
      );
      if (Date.parse(job.runAt) > answeredAt)
        assert.equal(
          job.state,
          'cancelled',
          `${job.id} was pending: withdrawn (kept cancelled for its group until purged)`,
        );
    }
    const again = await queue.deleteSchedule('example', id).catch((e: unknown) => e);
    assert.ok(again instanceof DelayQueueError);
    assert.deepEqual([again.status, again.code], [404, 'NOT_FOUND']);
  });

  it('schedules: a put replaces the pending occurrence (the old one withdrawn, the new one delayed)', async () => {
    const id = uid('edit');
    const first = await queue.putSchedule('example', id, { every: 3600, body: 1 });
    const before = first.schedule.pending!;
    assert.equal((await queue.get('example', before.id))?.state, 'delayed');
    const edited = await queue.putSchedule('example', id, { cron: '0 0 1 1 *', timezone: 'America/New_York', body: 2 });
    assert.equal(edited.created, false);
    const after = edited.schedule.pending!;
    assert.notEqual(after.id, before.id);
    assert.deepEqual(
      [edited.schedule.cron, edited.schedule.timezone, edited.schedule.every, edited.schedule.nextRuns.length],
      ['0 0 1 1 *', 'America/New_York', undefined, 5],
    );
    const withdrawn = await queue.get('example', before.id); // removed, or cancelled until the sweeper purges it
    assert.ok(
      withdrawn === null || withdrawn.state === 'cancelled',
      `the old pending occurrence is withdrawn: ${JSON.stringify(withdrawn)}`,
    );
    const pending = await queue.get('example', after.id);
    assert.deepEqual([pending?.state, pending?.runAt, pending?.body], ['delayed', after.runAt, 2]);
    await queue.deleteSchedule('example', id);
    const gone = await queue.get('example', after.id);
    assert.ok(
      gone === null || gone.state === 'cancelled',
      `the delete withdrew the pending occurrence: ${JSON.stringify(gone)}`,
    );
  });

  it('schedules: every bad input the issue lists is a 400 naming its field', async () => {
    const cases: [string, string, ScheduleInput, string][] = [
      ['example', uid('bad'), { cron: '61 * * * *' }, 'cron'],
      ['example', uid('bad'), { cron: '0 9 * * *', timezone: 'Mars/Olympus' }, 'timezone'],
      ['example', uid('bad'), { cron: '0 9 * * *', every: 60 }, 'cron'],
      ['example', uid('bad'), { body: 1 }, 'cron'],
      ['example', uid('bad'), { every: 0 }, 'every'],
      ['example', uid('bad'), { every: 0.5 }, 'every'],
      ['example', 'x'.repeat(112), { every: 5 }, 'id'],
      ['example', uid('bad'), { every: 5, jitter: -1 }, 'jitter'],
    ];
    for (const [topic, id, input, field] of cases) {
      const error = await queue.putSchedule(topic, id, input).catch((e: unknown) => e);
      assert.ok(error instanceof DelayQueueError, JSON.stringify(input));
      assert.deepEqual(
        [error.status, error.code, (error.details as { path: string }[]).map((d) => d.path)],
        [400, 'VALIDATION_FAILED', [field]],
        JSON.stringify(input),
      );
      assert.equal(await queue.getSchedule(topic, id), null, 'nothing was written');
    }
    const unknown = await queue.putSchedule('nope', uid('bad'), { every: 5 }).catch((e: unknown) => e);
    assert.ok(unknown instanceof DelayQueueError);
    assert.deepEqual([unknown.status, unknown.code], [400, 'UNKNOWN_TOPIC']);
    assert.match(unknown.message, /topic "nope" is not configured/);
  });

  it('an add during a Redis outage is retried (503, Retry-After) until Redis is back, and stored once', async () => {
    const port = redisServer.port;
    await redisServer.stop();
    const patient = new DelayQueueClient({
      baseUrl: offline.baseUrl,
      token: offline.token,
      retries: 20,
      retryDelayMs: 200,
      fetch: checkingFetch(contract, offline.baseUrl),
    });
    const id = uid('outage');
    const adding = patient.add({ topic: 'example', id, delay: 3600, body: { survived: true } });
    await sleep(1500);
    redisServer = await startRedis({ port });
    const added = await adding;
    assert.deepEqual([added.id, added.body], [id, { survived: true }]);
    assert.ok((contract.seen.get('POST /jobs') ?? new Set()).has(503), 'the first tries met the outage');
    assert.equal((await queue.topics()).find((t) => t.topic === 'example')?.delayed, 1, 'one job, in a fresh Redis');
  });
});
