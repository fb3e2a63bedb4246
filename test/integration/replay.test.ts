/**
 * Issue 12, finding 10: when a connection drops after a script ran but before its reply arrived,
 * ioredis re-sent the script by default (autoResendUnfulfilledCommands), and the replay answered
 * something else: a claim returned no jobs (leaving the first claim's jobs running unhandled), an
 * add without an id answered "exists" for the job it had just created, a fan-out's mark request saw
 * its own mark and invoked nothing. A lost reply must surface as an error (the API answers 503),
 * and a fan-out mark must be retried safely. The proxy loses a reply as a network fault would.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { requestFanout } from '../../lib/workers/fanout';
import type { Invoker } from '../../lib/platform/lambda';
import { createRedis } from '../../lib/platform/redis';
import { startReplyDroppingProxy, type ReplyDroppingProxy } from '../support/proxy';
import { makeQueue, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';
import { sweeperKeys } from '../../lib/testing';

const settle = <T>(p: Promise<T>) =>
  p.then(
    (value) => ({ value }),
    (error: Error) => ({ error }),
  );

describe('a lost script reply (real redis-server behind a reply-dropping proxy)', () => {
  const server = useRedisServer();
  let proxy: ReplyDroppingProxy;
  let proxied: Redis;
  before(async () => {
    proxy = await startReplyDroppingProxy({ port: server.server().port });
    proxied = createRedis({ url: proxy.url, cluster: false }) as Redis;
    proxied.on('error', () => undefined);
  });
  after(async () => {
    proxied.disconnect();
    await proxy.close();
  });

  it('a claim whose reply is lost fails; it is not replayed into a second claim', async () => {
    const topic = uniqueTopic('replay');
    const queue = makeQueue(proxied, { [topic]: { handler: 'h' } });
    await queue.add({ topic, id: 'a', delay: 0 });
    await queue.add({ topic, id: 'b', delay: 0 });
    await queue.engine.sweep();
    const before = proxy.dropped;
    proxy.dropReplyTo(`${topic}`);
    const outcome = await settle(queue.engine.claim(topic, 2));
    assert.equal(proxy.dropped, before + 1, 'the reply was dropped');
    assert.ok(
      'error' in outcome,
      `a lost reply surfaces as an error, not as another answer: got ${JSON.stringify(outcome)}`,
    );
    const direct = makeQueue(server.client(), { [topic]: { handler: 'h' } });
    const stats = await direct.stats(topic);
    assert.deepEqual([stats.running, stats.ready], [2, 0], 'the claim ran once');
  });

  it('an add without an id whose reply is lost fails (503), never "exists" for its own job', async () => {
    const topic = uniqueTopic('replay');
    const queue = makeQueue(proxied, { [topic]: {} });
    await queue.add({ topic, id: 'warm', delay: 60 }); // the scripts are loaded
    proxy.dropReplyTo(`${topic}`);
    const outcome = await settle(queue.add({ topic, delay: 60 }));
    assert.ok('error' in outcome, `got ${JSON.stringify(outcome)}`);
    const direct = makeQueue(server.client(), { [topic]: {} });
    assert.equal((await direct.stats(topic)).delayed, 2, 'it was stored once');
  });

  it('a fan-out request whose mark reply is lost still invokes the fan-out, once', async () => {
    const calls: unknown[] = [];
    const invoker: Invoker = { invokeAsync: async (_name, payload) => void calls.push(payload) };
    await server.client().del(sweeperKeys().fanout);
    // warm the script
    await requestFanout({ engine: makeQueue(proxied, { fanout: {} }).engine, invoker }).catch(() => false);
    await server.client().del(sweeperKeys().fanout);
    calls.length = 0;
    proxy.dropReplyTo('fanout');
    const outcome = await settle(requestFanout({ engine: makeQueue(proxied, { fanout: {} }).engine, invoker }));
    assert.deepEqual(outcome, { value: true }, 'it marked and invoked');
    assert.equal(calls.length, 1);
    const mark = await server.client().get(sweeperKeys().fanout);
    assert.equal(mark, (calls[0] as { token: string }).token, "the mark is the invoked fan-out's own");
  });
});
