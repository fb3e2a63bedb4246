/**
 * Issue 12, findings 1, 3, 11 and 4 (repeated release), against a real redis-server. Each test
 * drives the engine and the topic handler the way the fan-out and Lambda do.
 *
 * 1. A stale attempt completed a re-created job: ack/fail matched an attempt by its number, and a
 *    job cancelled while running and created anew starts again at attempt 1.
 * 3. The handler ran attempts that had already ended (a late Event invoke; a job cancelled after
 *    its claim).
 * 11. A claim that never reached a handler cost an attempt: a job with maxAttempts 1 whose claim
 *    was never delivered went dead as "timed out" without ever running.
 * 4. A job whose invoke always failed was released forever without counting anything.
 *
 * The handler's runtime is the process's (built from process.env), as in a Lambda.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { toWire } from '../../lib/workers/fanout';
import type { Queue } from '../support/queue';
import { runtime, type Runtime } from '../../lib/platform/runtime';
import { topicHandler } from '../../lib/workers/handler';
import { makeQueue, TestClock, apiOf } from '../support/queue';
import { startRedis, type RedisProcess } from '../support/redis';

const TOPICS = {
  keep: { handler: 'h', ttr: 30, maxAttempts: 3, backoff: { type: 'fixed', delay: 10 } },
  once: { handler: 'h', ttr: 30, maxAttempts: 1 },
};
// under ttr + 2 × 250 ms: no draining of other tests' jobs
const lambda = { awsRequestId: 'r', getRemainingTimeInMillis: () => 30_400 };

describe('attempt identity and delivery (real redis-server)', () => {
  let server: RedisProcess;
  let rt: Runtime;
  before(async () => {
    server = await startRedis();
    Object.assign(process.env, {
      DQ_CONFIG: JSON.stringify({ topics: TOPICS, retention: 3600 }),
      REDIS_URL: server.url,
      API_TOKEN: 't',
      WEBHOOK_SECRET: 's',
      DQ_FUNCTION_PREFIX: 'x-',
      DQ_WAKE_INVOKES: 'false',
      LOG_LEVEL: 'error',
    });
    rt = runtime();
  });
  after(async () => {
    rt?.redis.disconnect();
    await server?.stop();
  });

  /** An engine on the same Redis whose clock the test moves (for ttr expiry and backoff). */
  function clocked(): { q: Queue; clock: TestClock } {
    const clock = new TestClock(Date.now());
    return { q: makeQueue(rt.redis, TOPICS, { clock, config: { retention: 3600 } }), clock };
  }

  async function claimOne(q: Queue, topic: string) {
    await q.engine.sweep();
    const claimed = await q.engine.claim(topic, 1);
    assert.equal(claimed.length, 1, 'expected one job to claim');
    return claimed[0]!;
  }

  /** Starts the handler on `job` with a function that waits for the returned `finish`. */
  function runHeld(job: Parameters<typeof toWire>[0], outcome: 'resolve' | 'throw') {
    let finish!: () => void;
    const gate = new Promise<void>((resolve) => (finish = resolve));
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const handler = topicHandler(async () => {
      started();
      await gate;
      if (outcome === 'throw') throw new Error('the old body failed');
    });
    const report = handler({ topic: job.topic, jobs: [toWire(job)] }, lambda);
    return { running, finish, report };
  }

  describe('finding 1: a claim has an identity a re-created job never reuses', () => {
    it("the old incarnation's ack does not complete the job made anew with the same id", async () => {
      await apiOf(rt).add({ topic: 'keep', id: 'f1-ack', delay: 0, body: { v: 1 } });
      const old = await claimOne(apiOf(rt), 'keep');
      const held = runHeld(old, 'resolve');
      await held.running;
      await apiOf(rt).cancel('keep', 'f1-ack');
      await apiOf(rt).put('keep', 'f1-ack', { delay: 0, body: { v: 2 } });
      const fresh = await claimOne(apiOf(rt), 'keep');
      assert.equal(fresh.attempt, 1, 'the new incarnation starts at attempt 1 again');
      held.finish();
      assert.equal((await held.report).stale, 1, "the old handler's ack is refused");
      const job = await apiOf(rt).get('keep', 'f1-ack');
      assert.equal(job?.state, 'running', 'the new incarnation is still running, not done by the old handler');
      assert.deepEqual(job?.body, { v: 2 });
      // and the new incarnation's own handler finishes it
      const report = await topicHandler(async () => undefined)({ topic: 'keep', jobs: [toWire(fresh)] }, lambda);
      assert.equal(report.done, 1);
      assert.equal((await apiOf(rt).get('keep', 'f1-ack'))?.state, 'done');
    });

    it("the old incarnation's failure does not put the job made anew into a retry", async () => {
      await apiOf(rt).add({ topic: 'keep', id: 'f1-fail', delay: 0, body: { v: 1 } });
      const old = await claimOne(apiOf(rt), 'keep');
      const held = runHeld(old, 'throw');
      await held.running;
      await apiOf(rt).cancel('keep', 'f1-fail');
      await apiOf(rt).put('keep', 'f1-fail', { delay: 0, body: { v: 2 } });
      const fresh = await claimOne(apiOf(rt), 'keep');
      held.finish();
      assert.equal((await held.report).stale, 1, "the old handler's fail is refused");
      const job = await apiOf(rt).get('keep', 'f1-fail');
      assert.equal(job?.state, 'running');
      assert.equal(job?.lastError, null, 'no error of the old body is recorded on the new job');
      const report = await topicHandler(async () => undefined)({ topic: 'keep', jobs: [toWire(fresh)] }, lambda);
      assert.equal(report.done, 1, "the new attempt's own ack is accepted");
    });
  });

  describe('finding 3: the handler runs only attempts that are still live', () => {
    it('does not run a late event for an attempt that timed out and was claimed again', async () => {
      const { q, clock } = clocked();
      await q.add({ topic: 'keep', id: 'f3-late', delay: 0 });
      const first = await claimOne(q, 'keep');
      clock.advance(31_000); // past the ttr: the sweep ends attempt 1
      await q.engine.sweep();
      clock.advance(60_000); // past any backoff
      await claimOne(q, 'keep'); // the live attempt, running elsewhere
      let ran = 0;
      const report = await topicHandler(async () => void (ran += 1))({ topic: 'keep', jobs: [toWire(first)] }, lambda);
      assert.equal(ran, 0, 'the late event of the ended attempt did not run the function');
      assert.equal(report.stale, 1);
      assert.equal((await q.get('keep', 'f3-late'))?.state, 'running', 'the live attempt is untouched');
    });

    it('does not run an event for a job that was cancelled after its claim', async () => {
      await apiOf(rt).add({ topic: 'keep', id: 'f3-cancelled', delay: 0 });
      const claimed = await claimOne(apiOf(rt), 'keep');
      await apiOf(rt).cancel('keep', 'f3-cancelled');
      let ran = 0;
      const report = await topicHandler(async () => void (ran += 1))(
        { topic: 'keep', jobs: [toWire(claimed)] },
        lambda,
      );
      assert.equal(ran, 0, 'a job DELETE answered "cancelled" for is not run');
      assert.equal(report.stale, 1);
    });
  });

  describe('finding 11: an attempt that never started is given back without counting, a bounded number of times', () => {
    it('gives a job with maxAttempts 1 back when its claim never reached a handler', async () => {
      const { q, clock } = clocked();
      await q.add({ topic: 'once', id: 'f11-lost', delay: 0 });
      await claimOne(q, 'once'); // the fan-out dies here: no invoke
      clock.advance(31_000);
      await q.engine.sweep();
      const job = await q.get('once', 'f11-lost');
      assert.equal(job?.state, 'ready', 'given back, not dead-lettered as timed out');
      assert.equal(job?.attempts, 0, 'the undelivered claim did not count');
      // delivered this time: it runs and is done on its only attempt
      const again = await claimOne(q, 'once');
      const report = await topicHandler(async () => undefined)({ topic: 'once', jobs: [toWire(again)] }, lambda);
      assert.equal(report.done, 1);
    });

    it('counts a failed attempt after 5 give-backs, so a job never delivered cannot loop forever', async () => {
      const { q, clock } = clocked();
      await q.add({ topic: 'once', id: 'f11-loop', delay: 0 });
      for (let i = 0; i < 5; i++) {
        await claimOne(q, 'once');
        clock.advance(31_000);
        await q.engine.sweep();
        assert.equal((await q.get('once', 'f11-loop'))?.state, 'ready', `give-back ${i + 1}`);
      }
      await claimOne(q, 'once');
      clock.advance(31_000);
      await q.engine.sweep();
      const job = await q.get('once', 'f11-loop');
      assert.equal(job?.state, 'dead');
      assert.equal(job?.attempts, 1);
      assert.match(String(job?.lastError), /never started/);
    });

    it('still counts an attempt that started and then timed out', async () => {
      const { q, clock } = clocked();
      await q.add({ topic: 'once', id: 'f11-started', delay: 0 });
      const claimed = await claimOne(q, 'once');
      let finish!: () => void;
      const gate = new Promise<void>((resolve) => (finish = resolve));
      let started!: () => void;
      const running = new Promise<void>((resolve) => (started = resolve));
      const report = topicHandler(async () => {
        started();
        await gate;
      })({ topic: 'once', jobs: [toWire(claimed)] }, lambda);
      await running; // the handler started it; its ack will come too late
      clock.advance(31_000);
      await q.engine.sweep();
      const job = await q.get('once', 'f11-started');
      assert.equal(job?.state, 'dead', 'a started attempt that timed out counts');
      assert.match(String(job?.lastError), /timed out/);
      finish();
      assert.equal((await report).stale, 1);
    });
  });

  describe('finding 4: repeated release of the same job is counted', () => {
    it('fails (here: dead-letters) a job whose invoke fails every time, with a clear lastError', async () => {
      const { q } = clocked();
      await q.add({ topic: 'once', id: 'f4-release', delay: 0 });
      for (let i = 0; i < 5; i++) {
        const claimed = await claimOne(q, 'once');
        assert.equal(await q.engine.release([claimed]), 1);
        const job = await q.get('once', 'f4-release');
        assert.equal(job?.state, 'ready', `release ${i + 1} gives it back`);
        assert.equal(job?.attempts, 0);
      }
      const claimed = await claimOne(q, 'once');
      await q.engine.release([claimed]);
      const job = await q.get('once', 'f4-release');
      assert.equal(job?.state, 'dead', 'the sixth release in a row counts as its only attempt');
      assert.match(String(job?.lastError), /could not be invoked/);
    });
  });
});
