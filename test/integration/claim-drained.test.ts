/**
 * A claim says whether it left the topic with no job ready (`drained`) and whether the topic's
 * running attempts are at its concurrency after it (`capped`), so that the fan-out does not claim
 * again only to find nothing, and a handler claims a further batch itself only when the fan-out
 * leaves the rest to the handlers (its claim stopped at the concurrency): each empty claim cost a
 * script call, in a steady flow about one a job. A herd behind the concurrency is still drained by
 * the handlers, each taking the next batch as it finishes, and a herd (jobs still ready after
 * HERD_ROUNDS rounds) by every handler invoked from then on as well as by the fan-out.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Engine } from '../../lib/engine';
import type { Invoker } from '../../lib/platform/lambda';
import { createLogger } from '../../lib/platform/log';
import { runFanout, toWire, type HandlerEvent } from '../../lib/workers/fanout';
import { topicHandler } from '../../lib/workers/handler';
import { apiOf, makeQueue, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';
import { useTestRuntime } from '../support/runtime';

const log = createLogger('test', {}, 'error', () => undefined);

/** Counts the engine's claims (each one or more claim script calls). */
function countClaims(engine: Engine): { claims: number } {
  const counter = { claims: 0 };
  const claimPaced = engine.claimPaced;
  engine.claimPaced = function (...args) {
    counter.claims += 1;
    return claimPaced.apply(this, args);
  };
  return counter;
}

describe('a claim that drains the ready list says so (real redis-server)', () => {
  const server = useRedisServer();

  for (const partitions of [1, 8]) {
    it(`${partitions} partition${partitions === 1 ? '' : 's'}: drained when it took every ready job, not when it stopped at its count or the concurrency`, async () => {
      const topic = uniqueTopic('drained');
      const q = makeQueue(server.client(), { [topic]: { handler: 'h', concurrency: 5 } }, { config: { partitions } });
      const ready = async (prefix: string, n: number) => {
        await q.addMany(Array.from({ length: n }, (_, i) => ({ topic, id: `${prefix}${i}`, delay: 0 })));
        await q.engine.sweep();
      };
      // [jobs claimed, drained, capped] of a claim of 3
      const claim = async () => {
        const c = await q.engine.claimPaced(topic, 3);
        return [c.jobs.length, c.drained, c.capped];
      };
      await ready('a', 4);
      assert.deepEqual(await claim(), [3, false, false], 'one job is left ready, 3 running of 5');
      assert.deepEqual(await claim(), [1, true, false], 'it took the last one');
      assert.deepEqual(await claim(), [0, true, false]);
      // 4 running of 5: the next claim stops at the concurrency, with jobs left ready
      await ready('b', 3);
      assert.deepEqual(await claim(), [1, false, true], 'two are left ready behind the concurrency');
      assert.deepEqual(await claim(), [0, false, true], 'at the concurrency: it cannot tell');
    });
  }

  /** `jobs` ready jobs of a new topic with `concurrency`, fanned out once: the events, the claims and the report. */
  async function fanOut(jobs: number, concurrency: number) {
    const topic = uniqueTopic('fanout');
    const q = makeQueue(server.client(), { [topic]: { handler: 'h', concurrency } });
    await q.addMany(Array.from({ length: jobs }, (_, i) => ({ topic, id: `j${i}`, delay: 0 })));
    await q.engine.sweep();
    const events: HandlerEvent[] = [];
    const invoker: Invoker = { invokeAsync: async (_name, payload) => void events.push(payload as HandlerEvent) };
    const counted = countClaims(q.engine);
    const reports = await runFanout({ engine: q.engine, invoker, log }, { topics: [topic] });
    return {
      events: events.map((e) => [e.jobs.length, e.more]),
      claims: counted.claims,
      claimed: reports[topic]!.claimed,
    };
  }

  it('the fan-out claims once when its claim drained the topic, and tells the handlers so', async () => {
    const { events, claims, claimed } = await fanOut(3, 100);
    assert.equal(claimed, 3);
    assert.equal(claims, 1, 'no second claim to find nothing');
    assert.deepEqual(events, [
      [1, false],
      [1, false],
      [1, false],
    ]);
  });

  it('a fan-out that claims again at once leaves its handlers nothing to claim: 10 jobs, rounds of 8 then 2', async () => {
    const { events, claims } = await fanOut(10, 100);
    assert.equal(claims, 2, 'two rounds, the second drained it');
    assert.deepEqual(
      events,
      Array.from({ length: 10 }, () => [1, false]),
      'no handler claims on',
    );
  });

  it('a herd: from the third round on, a round that leaves jobs ready tells its handlers to claim on beside the fan-out', async () => {
    // 30 ready: rounds of 8, 8, 8 (jobs left ready after each), then 6 (drained)
    const { events, claims } = await fanOut(30, 100);
    assert.equal(claims, 4);
    assert.deepEqual(events, [
      ...Array.from({ length: 16 }, () => [1, false]),
      ...Array.from({ length: 8 }, () => [1, true]),
      ...Array.from({ length: 6 }, () => [1, false]),
    ]);
  });

  it('the fan-out tells the handlers to go on claiming when its claim stopped at the concurrency', async () => {
    // 4 ready of concurrency 2: the claim stops at it, with 2 left ready
    const { events, claims } = await fanOut(4, 2);
    assert.equal(claims, 2, 'the second round finds the topic at its concurrency');
    assert.deepEqual(events, [
      [1, true],
      [1, true],
    ]);
  });
});

describe('a handler whose event came from a claim that drained the topic claims no further batch (real redis-server)', () => {
  const runtime = useTestRuntime({ orders: { handler: 'h', batchSize: 1 } });

  for (const more of [false, undefined]) {
    it(`more: ${String(more)}`, async () => {
      const rt = runtime();
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
      const event: HandlerEvent = {
        topic: 'orders',
        jobs: claimed.map(toWire),
        ...(more === undefined ? {} : { more }),
      };
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
