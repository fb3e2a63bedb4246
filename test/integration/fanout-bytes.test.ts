/**
 * Issue 12, finding 4: batches for a handler's Event invoke are cut by bytes as well as by count.
 * Lambda refuses an Event payload over 1 MB; batches of batchSize × 64 KiB bodies broke it, the
 * invoke failed, the jobs went back to the ready list uncounted, and every fan-out rebuilt the same
 * failing batch. The invoker here stands in for the Lambda API (not for Redis): it refuses a
 * payload over Lambda's limit as Lambda does.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runFanout } from '../../lib/workers/fanout';
import type { Invoker } from '../../lib/platform/lambda';
import { createLogger } from '../../lib/platform/log';
import { makeQueue, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';

const LAMBDA_EVENT_LIMIT = 1_048_576; // bytes: Lambda's limit for an asynchronous (Event) invoke payload

class SizeCheckingInvoker implements Invoker {
  sizes: number[] = [];
  jobs = 0;
  refused = 0;
  async invokeAsync(_name: string, payload: unknown): Promise<void> {
    const bytes = Buffer.byteLength(JSON.stringify(payload));
    if (bytes > LAMBDA_EVENT_LIMIT) {
      this.refused += 1;
      throw Object.assign(
        new Error(`Request must be smaller than ${LAMBDA_EVENT_LIMIT} bytes for the InvokeAsync operation`),
        { name: 'RequestTooLargeException' },
      );
    }
    this.sizes.push(bytes);
    this.jobs += (payload as { jobs: unknown[] }).jobs.length;
  }
}

const log = createLogger('test', {}, 'error', () => undefined);

describe('fan-out batches by bytes (real redis-server)', () => {
  const server = useRedisServer();

  it('20 jobs of 60 KB with batchSize 20 go out in events under 1 MB; none is released', async () => {
    const topic = uniqueTopic();
    const queue = makeQueue(server.client(), { [topic]: { handler: 'h', batchSize: 20, concurrency: 20 } });
    const body = { pad: 'x'.repeat(60_000) };
    for (let i = 0; i < 20; i++) await queue.add({ topic, id: `big${i}`, delay: 0, body });
    await queue.engine.sweep();
    const invoker = new SizeCheckingInvoker();
    const reports = await runFanout({ engine: queue.engine, invoker, log }, { topics: [topic] });
    assert.equal(invoker.refused, 0, `refused payloads: ${invoker.refused}`);
    assert.equal(invoker.jobs, 20, 'every job was delivered');
    assert.equal(reports[topic]!.released, 0);
    assert.ok(invoker.sizes.length >= 2, `cut into ${invoker.sizes.length} events: ${invoker.sizes.join(', ')} bytes`);
    assert.ok(invoker.sizes.every((b) => b <= LAMBDA_EVENT_LIMIT));
    assert.equal((await queue.stats(topic)).running, 20);
  });
});
