/**
 * Issue 12, finding 5: an attempt is bounded by the invocation's remaining time as well as by its
 * ttr. A ttr of 30 s in a handler Lambda with 0.6 s left used to run on until Lambda killed it,
 * leaving the job "running" until its ttr ended; now the attempt fails in time and is retried.
 *
 * Issue 12, finding 12: the smallest ttr the API accepts must leave a quick job time to run. The
 * handler ends an attempt 250 ms before its deadline (so its ack is not late); with ttr 0.1 s
 * accepted, every attempt of a 20 ms job timed out at once and the job went dead.
 */
import { apiOf } from '../support/queue';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { toWire } from '../../lib/workers/fanout';
import { TTR_SECONDS } from '../../lib/core/limits';
import type { Runtime } from '../../lib/platform/runtime';
import { topicHandler } from '../../lib/workers/handler';
import { startRedis, type RedisProcess } from '../support/redis';
import { testRuntime } from '../support/runtime';

describe('the smallest ttr (real redis-server)', () => {
  let server: RedisProcess;
  let rt: Runtime;
  before(async () => {
    server = await startRedis();
    rt = testRuntime(server.url, {
      quick: { handler: 'h', ttr: TTR_SECONDS.min, maxAttempts: 1 },
      long: { handler: 'h', ttr: 30, maxAttempts: 3 },
    });
  });
  after(async () => {
    rt?.redis.disconnect();
    await server?.stop();
  });

  it('is enough for a job that takes 20 ms: done on its only attempt', async () => {
    const queue = apiOf(rt);
    await queue.add({ topic: 'quick', id: 'q1', delay: 0, ttr: TTR_SECONDS.min });
    await queue.engine.sweep();
    const claimed = await queue.engine.claim('quick', 1);
    assert.equal(claimed.length, 1);
    const handler = topicHandler(
      async () => new Promise((resolve) => setTimeout(resolve, 20)),
      () => rt,
    );
    const report = await handler(
      { topic: 'quick', jobs: claimed.map(toWire) },
      { awsRequestId: 'r', getRemainingTimeInMillis: () => 1000 },
    );
    assert.deepEqual(report, { done: 1, retried: 0, dead: 0, stale: 0, expired: 0 });
    assert.equal((await queue.get('quick', 'q1'))?.state, 'done');
  });

  it(
    'fails an attempt when the invocation runs out before the ttr, and schedules the retry',
    { timeout: 20_000 },
    async () => {
      const queue = apiOf(rt);
      await queue.add({ topic: 'long', id: 'l1', delay: 0 });
      await queue.engine.sweep();
      const claimed = await queue.engine.claim('long', 1);
      assert.equal(claimed.length, 1);
      let aborted = false;
      // runs until told to stop, as a well-behaved function does
      const handler = topicHandler(
        (_job, ctx) =>
          new Promise((resolve) => ctx.signal.addEventListener('abort', () => ((aborted = true), resolve(undefined)))),
        () => rt,
      );
      const report = await handler(
        { topic: 'long', jobs: claimed.map(toWire) },
        { awsRequestId: 'r', getRemainingTimeInMillis: () => 600 },
      );
      assert.deepEqual(report, { done: 0, retried: 1, dead: 0, stale: 0, expired: 0 });
      assert.ok(aborted, 'the function was told to stop');
      const job = await queue.get('long', 'l1');
      assert.equal(job?.state, 'delayed', 'the retry is scheduled, not left running until the ttr');
      assert.equal(job?.attempts, 1);
      assert.match(String(job?.lastError), /ran out of invocation time/);
    },
  );
});
