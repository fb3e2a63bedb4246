/**
 * A job's attempt history (H_HISTORY in lua/includes/job.lua, `attemptHistory` of GET /jobs/{topic}/{id}), against a
 * real redis-server, on a test clock: each failed or timed-out attempt appends an entry (at most 10 kept), a done job's
 * last attempt is told by its header, and a claim given back uncounted is no attempt.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ClaimedJob, Job } from '../../lib/engine';
import { topicKeys } from '../../lib/testing';
import { makeQueue, TestClock, uniqueTopic, type Queue } from '../support/queue';
import { useRedisServer } from '../support/redis';

const TTR_MS = 30_000;
const RETRY_MS = 10_000;

describe('attempt history (real redis-server)', () => {
  const redis = useRedisServer();

  function setup(): { q: Queue; clock: TestClock; topic: string } {
    const topic = uniqueTopic('hist');
    const clock = new TestClock();
    const topics = {
      [topic]: { ttr: TTR_MS / 1000, maxAttempts: 20, backoff: { type: 'fixed', delay: RETRY_MS / 1000 } },
    };
    return { q: makeQueue(redis.client(), topics, { clock, config: { retention: 3600 } }), clock, topic };
  }

  /** Job `id` as GET /jobs/{topic}/{id} answers it. */
  async function got(q: Queue, topic: string, id: string): Promise<Job> {
    return (await q.get(topic, id)) ?? assert.fail(`no job ${id}`);
  }

  /** Sweeps, claims the one job and starts its attempt at the clock's time. */
  async function claimAndStart(q: Queue, topic: string): Promise<ClaimedJob> {
    await q.engine.sweep();
    const [job] = await q.engine.claim(topic, 1);
    assert.ok(job, 'a job to claim');
    assert.deepEqual(await q.engine.start(topic, [job]), [true]);
    return job;
  }

  it('a handler failure, a time-out past the ttr, then an ack: three attempts with outcomes, errors, times and lateness', async () => {
    const { q, clock, topic } = setup();
    const t0 = clock.now;
    await q.add({ topic, id: 'j', delay: 0, body: { n: 1 } });

    // a claim released after a failed invoke is given back uncounted: no attempt
    clock.advance(10);
    await q.engine.sweep();
    const [released] = await q.engine.claim(topic, 1);
    assert.equal(await q.engine.release([released!], 'invoke failed'), 1);
    assert.deepEqual((await got(q, topic, 'j')).attemptHistory, []);

    clock.advance(90); // claimed and started 100 ms after due
    const first = await claimAndStart(q, topic);
    clock.advance(200);
    assert.equal((await q.engine.fail(topic, 'j', first, 'boom: the partner said 500')).outcome, 'retry');
    const retryDue = clock.now + RETRY_MS;

    clock.now = retryDue + 50; // 50 ms late
    const second = await claimAndStart(q, topic);
    const deadline = clock.now + TTR_MS;
    clock.now = deadline + 5_000; // the sweep finds it 5 s past its deadline
    await q.engine.sweep();
    const timedOutAt = clock.now;

    clock.now = timedOutAt + RETRY_MS + 20; // 20 ms late
    const third = await claimAndStart(q, topic);
    clock.advance(500);
    assert.equal(await q.engine.ack(topic, 'j', third), 'done');

    const job = await got(q, topic, 'j');
    assert.equal(job.state, 'done');
    const iso = (ms: number) => new Date(ms).toISOString();
    assert.deepEqual(job.attemptHistory, [
      {
        attempt: 1,
        startedAt: iso(t0 + 100),
        endedAt: iso(t0 + 300),
        outcome: 'failed',
        error: 'boom: the partner said 500',
        durationMs: 200,
        latenessMs: 100,
      },
      {
        attempt: 2,
        startedAt: iso(retryDue + 50),
        endedAt: iso(deadline),
        outcome: 'timedOut',
        error: `attempt 2 timed out: no ack within its ttr`,
        durationMs: TTR_MS,
        latenessMs: 50,
      },
      {
        attempt: 3,
        startedAt: iso(timedOutAt + RETRY_MS + 20),
        endedAt: iso(clock.now),
        outcome: 'done',
        error: null,
        durationMs: 500,
        latenessMs: 20,
      },
    ]);
    assert.equal(second.attempt, 2);
  });

  it('a job done on its first attempt shows that one attempt, from its header alone', async () => {
    const { q, clock, topic } = setup();
    await q.add({ topic, id: 'once', delay: 0, body: {} });
    clock.advance(40);
    const job = await claimAndStart(q, topic);
    clock.advance(7);
    await q.engine.ack(topic, 'once', job);
    const [only, ...rest] = (await got(q, topic, 'once')).attemptHistory;
    assert.deepEqual(rest, []);
    assert.deepEqual(
      { ...only, startedAt: undefined, endedAt: undefined },
      {
        attempt: 1,
        startedAt: undefined,
        endedAt: undefined,
        outcome: 'done',
        error: null,
        durationMs: 7,
        latenessMs: 40,
      },
    );
  });

  it('a job failed 12 times keeps its last 10 attempts, oldest first', async () => {
    const { q, clock, topic } = setup();
    await q.add({ topic, id: 'many', delay: 0, body: {} });
    for (let i = 1; i <= 12; i++) {
      const job = await claimAndStart(q, topic);
      assert.equal(job.attempt, i);
      clock.advance(i);
      await q.engine.fail(topic, 'many', job, `failure ${i}`);
      clock.advance(RETRY_MS);
    }
    const job = await got(q, topic, 'many');
    assert.equal(job.attempts, 12);
    assert.equal(job.state, 'delayed');
    const history = job.attemptHistory;
    assert.equal(history.length, 10);
    assert.deepEqual(
      history.map((a) => [a.attempt, a.outcome, a.error, a.durationMs]),
      Array.from({ length: 10 }, (_, k) => [k + 3, 'failed', `failure ${k + 3}`, k + 3]),
    );
  });

  /**
   * Bytes of the jobs hash a job (MEMORY USAGE <jobs> SAMPLES 0 over N jobs, bodies spread over 150-250 bytes so the
   * allocator's size classes average out), for jobs done after `failures` failed attempts each (error 'boom').
   */
  async function bytesAJob(failures: number, n = 1000): Promise<{ memory: number; record: number }> {
    const { q, clock, topic } = setup();
    for (let i = 0; i < n; i++)
      await q.add({ topic, id: `m${i}`, delay: 0, body: { pad: 'x'.repeat(150 + (i % 100)) } });
    for (let round = 0; round <= failures; round++) {
      await q.engine.sweep();
      for (let jobs = await q.engine.claim(topic, 100); jobs.length > 0; jobs = await q.engine.claim(topic, 100)) {
        await q.engine.start(topic, jobs);
        for (const job of jobs) {
          if (round < failures) await q.engine.fail(topic, job.id, job, 'boom');
          else await q.engine.ack(topic, job.id, job);
        }
      }
      clock.advance(RETRY_MS);
    }
    const key = topicKeys(0, topic, 1).jobs;
    const lengths = await Promise.all(Array.from({ length: n }, (_, i) => redis.client().hstrlen(key, `m${i}`)));
    const usage = Number(await redis.client().call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
    return { memory: usage / n, record: lengths.reduce((a, b) => a + b, 0) / n };
  }

  it('memory: a failed attempt costs its entry; a job done first time none (figures in BENCHMARKS.md)', async (t) => {
    const runs = [await bytesAJob(0), await bytesAJob(1), await bytesAJob(2), await bytesAJob(3)];
    for (const k of ['memory', 'record'] as const) {
      const [done, once, , thrice] = runs.map((r) => r[k]);
      t.diagnostic(`${k} bytes a job, done after 0/1/2/3 failures: ${runs.map((r) => r[k].toFixed(1)).join(' / ')}`);
      t.diagnostic(
        `${k}: the first failed attempt ${(once! - done!).toFixed(1)} bytes, each further one ${((thrice! - once!) / 2).toFixed(1)}`,
      );
    }
    const [, once, , thrice] = runs.map((r) => r.record);
    const perExtra = (thrice! - once!) / 2;
    assert.ok(perExtra > 0 && perExtra < 40, `an entry with a 4-byte error costs under 40 bytes (${perExtra})`);
  });
});
