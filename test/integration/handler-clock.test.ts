/**
 * Regression: a topic handler whose host clock is minutes off must run each attempt for its TTR
 * as Redis counts it. It used to compare its own clock with the claim time (Redis clock), so a
 * host 5 minutes fast saw every attempt as already expired and failed it at once.
 */
import { apiOf } from '../support/queue';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { toWire } from '../../lib/workers/fanout';
import type { Runtime } from '../../lib/platform/runtime';
import { topicHandler } from '../../lib/workers/handler';
import { startRedis, type RedisProcess } from '../support/redis';
import { testRuntime } from '../support/runtime';

describe('topic handler on a host with a skewed clock (real redis-server)', () => {
  let server: RedisProcess;
  let rt: Runtime;
  const realNow = Date.now;
  before(async () => {
    server = await startRedis();
    rt = testRuntime(server.url, { skewed: { handler: 'h', ttr: 5, maxAttempts: 3 } });
  });
  after(async () => {
    Date.now = realNow;
    rt?.redis.disconnect();
    await server?.stop();
  });

  for (const skewMs of [5 * 60_000, -5 * 60_000]) {
    it(`acks a job that takes 200 ms with the host clock ${skewMs > 0 ? '5 min fast' : '5 min slow'}`, async () => {
      const queue = apiOf(rt);
      const id = `job-${skewMs}`;
      await queue.add({ topic: 'skewed', id, delay: 0 });
      await queue.engine.sweep();
      const claimed = await queue.engine.claim('skewed', 1);
      assert.equal(claimed.length, 1);
      const handler = topicHandler(
        async () => new Promise((resolve) => setTimeout(resolve, 200)),
        () => rt,
      );
      Date.now = () => realNow() + skewMs;
      try {
        const report = await handler(
          { topic: 'skewed', jobs: claimed.map(toWire) },
          { awsRequestId: 'r', getRemainingTimeInMillis: () => 1000 },
        );
        assert.deepEqual(report, { done: 1, retried: 0, dead: 0, stale: 0, expired: 0 });
      } finally {
        Date.now = realNow;
      }
      const job = await queue.get('skewed', id);
      assert.equal(job?.state, 'done');
      assert.equal(job?.attempts, 1);
    });
  }

  it('takes its offset to the Redis clock from the start of a batch the fan-out claimed: no TIME request of its own', async () => {
    const queue = apiOf(rt);
    await queue.add({ topic: 'skewed', id: 'no-time', delay: 0 });
    await queue.engine.sweep();
    const claimed = await queue.engine.claim('skewed', 1);
    assert.equal(claimed.length, 1);
    let timeRequests = 0;
    const serverTime = rt.engine.serverTime.bind(rt.engine);
    rt.engine.serverTime = () => {
      timeRequests += 1;
      return serverTime();
    };
    try {
      const handler = topicHandler(
        async () => undefined,
        () => rt,
      );
      const report = await handler(
        { topic: 'skewed', jobs: claimed.map(toWire) },
        { awsRequestId: 'r', getRemainingTimeInMillis: () => 1000 },
      );
      assert.deepEqual(report, { done: 1, retried: 0, dead: 0, stale: 0, expired: 0 });
    } finally {
      rt.engine.serverTime = serverTime;
    }
    assert.equal(timeRequests, 0);
    assert.equal((await queue.get('skewed', 'no-time'))?.state, 'done');
  });
});
