/**
 * A claim says whether it left the topic with no job ready (`drained`) and whether the topic's
 * running attempts are at its concurrency after it (`capped`), so that the fan-out does not claim
 * again only to find nothing, and a handler claims a further batch itself only when the fan-out
 * leaves the rest to the handlers (its claim stopped at the concurrency): each empty claim cost a
 * script call, in a steady flow about one a job. A herd behind the concurrency is still drained by
 * the handlers, each taking the next batch as it finishes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Engine } from '../../lib/engine';
import type { Invoker } from '../../lib/platform/lambda';
import { createLogger } from '../../lib/platform/log';
import type { Runtime } from '../../lib/platform/runtime';
import { runFanout, toWire, type HandlerEvent } from '../../lib/roles/fanout';
import { topicHandler } from '../../lib/roles/handler';
import { apiOf, makeQueue, uniqueTopic } from '../support/queue';
import { startRedis, useRedisServer, type RedisProcess } from '../support/redis';
import { testRuntime } from '../support/runtime';

const log = createLogger('test', {}, 'error', () => undefined);

/** Counts the engine's claims (each one or more claim script calls). */
function countClaims(engine: Engine): { claims: number } {
  const counter = { claims: 0 };
  const claimPaced = engine.claimPaced.bind(engine);
  engine.claimPaced = (...args) => {
    counter.claims += 1;
    return claimPaced(...args);
  };
  return counter;
}

describe('a claim that drains the ready list says so (real redis-server)', () => {
  const server = useRedisServer();

  for (const partitions of [1, 8]) {
    it(`${partitions} partition${partitions === 1 ? '' : 's'}: drained when it took every ready job, not when it stopped at its count or the concurrency`, async () => {
      const topic = uniqueTopic('drained');
      const q = makeQueue(server.client(), { [topic]: { handler: 'h', concurrency: 5 } }, { config: { partitions } });
      await q.addMany(Array.from({ length: 4 }, (_, i) => ({ topic, id: `a${i}`, delay: 0 })));
      await q.engine.sweep();
      const some = await q.engine.claimPaced(topic, 3);
      assert.equal(some.jobs.length, 3);
      assert.deepEqual([some.drained, some.capped], [false, false], 'one job is left ready, 3 running of 5');
      const rest = await q.engine.claimPaced(topic, 3);
      assert.equal(rest.jobs.length, 1);
      assert.equal(rest.drained, true, 'it took the last one');
      const none = await q.engine.claimPaced(topic, 3);
      assert.deepEqual([none.jobs.length, none.drained], [0, true]);

      // 4 running of 5: the next claim stops at the concurrency, with jobs left ready
      await q.addMany(Array.from({ length: 3 }, (_, i) => ({ topic, id: `b${i}`, delay: 0 })));
      await q.engine.sweep();
      const capped = await q.engine.claimPaced(topic, 3);
      assert.equal(capped.jobs.length, 1);
      assert.deepEqual([capped.drained, capped.capped], [false, true], 'two are left ready behind the concurrency');
      const full = await q.engine.claimPaced(topic, 3);
      assert.deepEqual([full.jobs.length, full.drained, full.capped], [0, false, true], 'at the concurrency: it cannot tell');
    });
  }

  it('the fan-out claims once when its claim drained the topic, and tells the handlers so', async () => {
    const topic = uniqueTopic('fanout');
    const q = makeQueue(server.client(), { [topic]: { handler: 'h' } });
    await q.addMany(Array.from({ length: 3 }, (_, i) => ({ topic, id: `j${i}`, delay: 0 })));
    await q.engine.sweep();
    const events: HandlerEvent[] = [];
    const invoker: Invoker = { invokeAsync: async (_name, payload) => void events.push(payload as HandlerEvent) };
    const counted = countClaims(q.engine);
    const reports = await runFanout({ engine: q.engine, invoker, log }, { topics: [topic] });
    assert.equal(reports[topic]!.claimed, 3);
    assert.equal(counted.claims, 1, 'no second claim to find nothing');
    assert.deepEqual(
      events.map((e) => [e.jobs.length, e.more]),
      [
        [1, false],
        [1, false],
        [1, false],
      ],
    );
  });

  it('a fan-out that claims again at once leaves its handlers nothing to claim: 10 jobs, rounds of 8 then 2', async () => {
    const topic = uniqueTopic('rounds');
    const q = makeQueue(server.client(), { [topic]: { handler: 'h', concurrency: 100 } });
    await q.addMany(Array.from({ length: 10 }, (_, i) => ({ topic, id: `j${i}`, delay: 0 })));
    await q.engine.sweep();
    const events: HandlerEvent[] = [];
    const invoker: Invoker = { invokeAsync: async (_name, payload) => void events.push(payload as HandlerEvent) };
    const counted = countClaims(q.engine);
    await runFanout({ engine: q.engine, invoker, log }, { topics: [topic] });
    assert.equal(counted.claims, 2, 'two rounds, the second drained it');
    assert.equal(events.length, 10);
    assert.ok(
      events.every((e) => e.more === false),
      'no handler claims on',
    );
  });

  it('the fan-out tells the handlers to go on claiming when its claim stopped at the concurrency', async () => {
    const topic = uniqueTopic('capped');
    const q = makeQueue(server.client(), { [topic]: { handler: 'h', concurrency: 2 } });
    await q.addMany(Array.from({ length: 4 }, (_, i) => ({ topic, id: `j${i}`, delay: 0 })));
    // and at it exactly: 2 ready of concurrency 2 would drain; 4 stop at it
    await q.engine.sweep();
    const events: HandlerEvent[] = [];
    const invoker: Invoker = { invokeAsync: async (_name, payload) => void events.push(payload as HandlerEvent) };
    await runFanout({ engine: q.engine, invoker, log }, { topics: [topic] });
    assert.deepEqual(
      events.map((e) => [e.jobs.length, e.more]),
      [
        [1, true],
        [1, true],
      ],
    );
  });
});

describe('a handler whose event came from a claim that drained the topic claims no further batch (real redis-server)', () => {
  let server: RedisProcess;
  let rt: Runtime;
  before(async () => {
    server = await startRedis();
    rt = testRuntime(server.url, { orders: { handler: 'h', batchSize: 1 } });
  });
  after(async () => {
    rt?.redis.disconnect();
    await server?.stop();
  });

  for (const more of [false, undefined]) {
    it(`more: ${String(more)}`, async () => {
      const queue = apiOf(rt);
      const ids = [`first-${String(more)}`, `later-${String(more)}`];
      await queue.add({ topic: 'orders', id: ids[0]!, delay: 0 });
      await queue.engine.sweep();
      const claimed = await queue.engine.claim('orders', 1);
      // a job made ready after the fan-out's claim: the sweeper asks a fan-out for it
      await queue.add({ topic: 'orders', id: ids[1]!, delay: 0 });
      await queue.engine.sweep();
      const ran: string[] = [];
      const handler = topicHandler(
        async (job) => void ran.push(job.id),
        () => rt,
      );
      const event: HandlerEvent = { topic: 'orders', jobs: claimed.map(toWire), ...(more === undefined ? {} : { more }) };
      await handler(event, { awsRequestId: 'r', getRemainingTimeInMillis: () => 60_000 });
      if (more === false) {
        assert.deepEqual(ran, [ids[0]], 'it ran its own job and claimed nothing');
        assert.equal((await queue.get('orders', ids[1]!))?.state, 'ready');
        assert.equal((await queue.engine.claim('orders', 1)).length, 1, 'left for the fan-out');
      } else {
        assert.deepEqual(ran, ids, 'without the word it claims on, as before');
      }
    });
  }
});
