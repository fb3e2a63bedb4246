/**
 * Issue 12 (also looked at): a handler that stops draining its topic for lack of time hands the
 * rest to a fan-out. It used to ask for one only when its last batch was full (batchSize jobs),
 * but batches are also cut by bytes (finding 4): a short batch does not mean the topic is empty,
 * and the jobs left ready then waited for the next sweep or tick.
 */
import { apiOf } from '../support/queue';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { toWire } from '../../lib/workers/fanout';
import type { Invoker } from '../../lib/platform/lambda';
import type { Runtime } from '../../lib/platform/runtime';
import { topicHandler } from '../../lib/workers/handler';
import { startRedis, type RedisProcess } from '../support/redis';
import { testRuntime } from '../support/runtime';

class RecordingInvoker implements Invoker {
  calls: string[] = [];
  async invokeAsync(name: string): Promise<void> {
    this.calls.push(name);
  }
}

describe('a handler out of time hands the rest of its topic to a fan-out (real redis-server)', () => {
  let server: RedisProcess;
  let rt: Runtime;
  const invoker = new RecordingInvoker();
  before(async () => {
    server = await startRedis();
    rt = { ...testRuntime(server.url, { orders: { handler: 'h', ttr: 1, batchSize: 5 } }), invoker };
  });
  after(async () => {
    rt?.redis.disconnect();
    await server?.stop();
  });

  it('asks for a fan-out after a short batch (cut by bytes) when jobs are left ready', async () => {
    const queue = apiOf(rt);
    for (let i = 0; i < 6; i++) await queue.add({ topic: 'orders', id: `o${i}`, delay: 0 });
    await queue.engine.sweep();
    const claimed = await queue.engine.claim('orders', 2); // a batch of 2 of batchSize 5, as a byte cut leaves it
    const handler = topicHandler(
      async () => undefined,
      () => rt,
    );
    // 1.2 s left: under ttr + 2 x 250 ms after the batch, so it stops instead of claiming more
    const report = await handler(
      { topic: 'orders', jobs: claimed.map(toWire) },
      { awsRequestId: 'r', getRemainingTimeInMillis: () => 1200 },
    );
    assert.deepEqual(report, { done: 2, retried: 0, dead: 0, stale: 0, expired: 0 });
    assert.equal((await queue.stats('orders')).ready, 4, 'four jobs are left ready');
    assert.deepEqual(invoker.calls, ['fanout'], 'the rest goes to a fan-out now, not to the next tick');
  });
});
