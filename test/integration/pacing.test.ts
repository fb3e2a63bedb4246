/**
 * Issue 15, item 4: a topic's rateLimit holds across every claimer (two Queue instances,
 * two fan-outs), jobs over the budget stay ready and start later, none lost; jitter is
 * deterministic; a topic without rateLimit touches no rate key.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runFanout, type HandlerEvent } from '../../lib/workers/fanout';
import type { Invoker } from '../../lib/platform/lambda';
import { createLogger } from '../../lib/platform/log';
import { jitterOffsetMs } from '../../lib/core/pacing';
import type { ClaimedJob } from '../../lib/engine';
import { makeQueue, TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';
import { rateKey, run, returnTokens } from '../../lib/testing';

const log = createLogger('test', {}, 'error', () => undefined);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

class RecordingInvoker implements Invoker {
  calls: { name: string; payload: unknown; at: number }[] = [];
  async invokeAsync(name: string, payload: unknown): Promise<void> {
    this.calls.push({ name, payload, at: Date.now() });
  }
  jobs(): HandlerEvent['jobs'] {
    return this.calls.filter((c) => c.name !== 'fanout').flatMap((c) => (c.payload as HandlerEvent).jobs);
  }
}

/** The most claim times (ms) within any span of `spanMs` (a half-open window starting at each claim). */
function busiestSpan(times: number[], spanMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[j]! < sorted[i]! - spanMs + 1) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

describe('pacing (real redis-server)', () => {
  const server = useRedisServer();

  it('two queues claiming at once on a fixed clock share count per per, paced one start per per/count, then none until a slot leaves', async () => {
    const topic = uniqueTopic('pace');
    const clock = new TestClock();
    const topics = { [topic]: { concurrency: 1000, rateLimit: { count: 10, per: 1 } } };
    const [a, b] = [makeQueue(server.client(), topics, { clock }), makeQueue(server.client(), topics, { clock })];
    for (let i = 0; i < 35; i++) await a.add({ topic, id: `j${i}`, delay: 0, body: i });
    await a.engine.sweep();
    const t0 = clock.now; // a multiple of the 10-ms slot
    const claimed: ClaimedJob[] = [];
    const claimAll = async () => {
      for (let got = 0; ;) {
        const round = await Promise.all([
          a.engine.claimPaced(topic, 4),
          b.engine.claimPaced(topic, 4),
          a.engine.claimPaced(topic, 4),
          b.engine.claimPaced(topic, 4),
        ]);
        const jobs = round.flatMap((r) => r.jobs);
        claimed.push(...jobs);
        got += jobs.length;
        if (jobs.length === 0) return { got, waits: round.map((r) => r.waitMs) };
      }
    };
    assert.deepEqual(
      await claimAll(),
      { got: 1, waits: [100, 100, 100, 100] },
      'one start per 100 ms: no herd at the start',
    );
    for (let k = 1; k < 10; k++) {
      clock.now = t0 + 100 * k;
      assert.equal((await claimAll()).got, 1);
    }
    clock.now = t0 + 950;
    assert.deepEqual(
      await claimAll(),
      { got: 0, waits: [60, 60, 60, 60] },
      'count reached: none until the first slot leaves the window at +1010',
    );
    clock.now = t0 + 1000;
    assert.deepEqual(await claimAll(), { got: 0, waits: [10, 10, 10, 10] }, 'the pace allows one, the window does not');
    clock.now = t0 + 1010;
    assert.equal((await claimAll()).got, 1, 'the first slot left the window');
    clock.now = t0 + 5000;
    assert.equal((await claimAll()).got, 1, 'after a long idle, still one at a time (no burst)');
    while (claimed.length < 35) {
      clock.advance(50);
      await claimAll();
    }
    assert.equal(new Set(claimed.map((j) => j.id)).size, 35, 'every job claimed once, none lost');
    assert.equal(
      busiestSpan(
        claimed.map((j) => j.runAt + j.latenessMs),
        1000,
      ),
      10,
      'never more than count in any second',
    );
    const stats = await a.stats(topic);
    assert.equal(stats.ready, 0);
    assert.equal(stats.running, 35);
  });

  it('two claim loops on the Redis clock never start more than count in any span of per; all jobs start, later ones late', async () => {
    const topic = uniqueTopic('pace');
    const topics = { [topic]: { concurrency: 1000, rateLimit: { count: 20, per: 1 } } };
    const [a, b] = [makeQueue(server.client(), topics), makeQueue(server.client(), topics)];
    for (let i = 0; i < 70; i++) await a.add({ topic, id: `j${i}`, delay: 0, body: i });
    await a.engine.sweep();
    const claimed: ClaimedJob[] = [];
    const loop = async (queue: typeof a) => {
      for (let idle = 0; idle < 3;) {
        const { jobs, waitMs } = await queue.engine.claimPaced(topic, 7);
        claimed.push(...jobs);
        if (jobs.length === 0 && waitMs === null) idle += 1;
        if (waitMs !== null) await sleep(waitMs);
      }
    };
    await Promise.all([loop(a), loop(b)]);
    assert.equal(claimed.length, 70);
    assert.equal(new Set(claimed.map((j) => j.id)).size, 70, 'each job once');
    const startedAt = claimed.map((j) => j.runAt + j.latenessMs);
    assert.ok(busiestSpan(startedAt, 1000) <= 20, `busiest second: ${busiestSpan(startedAt, 1000)}`);
    assert.ok(Math.max(...startedAt) - Math.min(...startedAt) >= 3000, '70 at 20/s take over 3 s');
    assert.ok(Math.max(...claimed.map((j) => j.latenessMs)) >= 3000, 'the last ones are late by the wait');
  });

  it('two fan-outs together keep to the limit and deliver every job, waiting for tokens instead of stopping', async () => {
    const topic = uniqueTopic('pace');
    const topics = { [topic]: { handler: 'h', batchSize: 2, concurrency: 1000, rateLimit: { count: 10, per: 1 } } };
    const [a, b] = [makeQueue(server.client(), topics), makeQueue(server.client(), topics)];
    for (let i = 0; i < 30; i++) await a.add({ topic, id: `j${i}`, delay: 0, body: i });
    await a.engine.sweep();
    const invoker = new RecordingInvoker();
    const deps = { invoker, log, remainingMs: () => 20_000 };
    const [ra, rb] = await Promise.all([
      runFanout({ ...deps, engine: a.engine }, { topics: [topic] }),
      runFanout({ ...deps, engine: b.engine }, { topics: [topic] }),
    ]);
    const jobs = invoker.jobs();
    assert.equal(ra[topic]!.claimed + rb[topic]!.claimed, 30);
    assert.equal(new Set(jobs.map((j) => j.id)).size, 30, 'every job delivered once');
    assert.ok(
      busiestSpan(
        jobs.map((j) => j.claimedAt),
        1000,
      ) <= 10,
      `busiest second: ${busiestSpan(
        jobs.map((j) => j.claimedAt),
        1000,
      )}`,
    );
    assert.ok(Math.max(...jobs.map((j) => j.claimedAt - j.runAt)) >= 2000, 'the last ten started two windows late');
    assert.equal(invoker.calls.filter((c) => c.name === 'fanout').length, 0, 'no hand-over was needed');
  });

  it('a fan-out out of time hands the waiting jobs to a new fan-out; they stay ready', async () => {
    const topic = uniqueTopic('pace');
    const queue = makeQueue(server.client(), {
      [topic]: { handler: 'h', concurrency: 1000, rateLimit: { count: 5, per: 60 } },
    }); // one start per 12 s
    for (let i = 0; i < 12; i++) await queue.add({ topic, id: `j${i}`, delay: 0, body: i });
    await queue.engine.sweep();
    const invoker = new RecordingInvoker();
    const r = server.client();
    const { sweeperKeys } = await import('../../lib/testing');
    await r.del(sweeperKeys().fanout);
    await r.set(sweeperKeys().fanout, 'mine', 'PX', 30_000);
    await runFanout(
      { engine: queue.engine, invoker, log, remainingMs: () => 10_000 },
      { token: 'mine', topics: [topic] },
    );
    assert.equal(invoker.jobs().length, 1, 'the first start; the next is 12 s away, beyond its time');
    assert.equal(invoker.calls.filter((c) => c.name === 'fanout').length, 1, 'a new fan-out was invoked');
    assert.notEqual(await r.get(sweeperKeys().fanout), 'mine', 'its own mark cleared, the new one set');
    const stats = await queue.stats(topic);
    assert.equal(stats.ready, 11, 'the rest wait, ready');
    await r.del(sweeperKeys().fanout);
  });

  it('tokens a claim did not use go back to the window and the pace (returnTokens), and a slot that left the window takes none', async () => {
    const topic = uniqueTopic('pace');
    const clock = new TestClock();
    const queue = makeQueue(
      server.client(),
      { [topic]: { concurrency: 1000, rateLimit: { count: 1000, per: 1 } } },
      { clock },
    );
    for (let i = 0; i < 2; i++) await queue.add({ topic, id: `j${i}`, delay: 0, body: i });
    await queue.engine.sweep();
    const r = server.client();
    const got = await queue.engine.claimPaced(topic, 50);
    assert.deepEqual([got.jobs.length, got.waitMs], [2, null], 'two ready: the other 48 tokens were not the limit');
    const slot = String(Math.floor((clock.now * 100) / 1000));
    assert.deepEqual(
      await r.hgetall(rateKey(topic)),
      { [slot]: '2', tat: String(clock.now + 2) },
      'the window holds 2, the pace moved by 2 ms',
    );
    assert.equal(await run(r, returnTokens([rateKey(topic)], { slot: Number(slot), n: 1, intervalMs: 1 })), 1);
    assert.equal(
      await run(r, returnTokens([rateKey(topic)], { slot: Number(slot), n: 5, intervalMs: 1 })),
      0,
      'never below 0; the emptied slot is deleted',
    );
    assert.equal(
      await run(r, returnTokens([rateKey(topic)], { slot: 12, n: 1, intervalMs: 1 })),
      0,
      'a slot no longer held',
    );
    assert.deepEqual(await r.hgetall(rateKey(topic)), { tat: String(clock.now + 2 - 7) }, 'the pace takes back all 7');
  });

  it('a topic without rateLimit claims as before and never touches a rate key', async () => {
    const topic = uniqueTopic('free');
    const queue = makeQueue(server.client(), { [topic]: { concurrency: 1000 } });
    for (let i = 0; i < 30; i++) await queue.add({ topic, id: `j${i}`, delay: 0, body: i });
    await queue.engine.sweep();
    const { jobs, waitMs } = await queue.engine.claimPaced(topic, 50);
    assert.equal(jobs.length, 30);
    assert.equal(waitMs, null);
    assert.equal(await server.client().exists(rateKey(topic)), 0);
  });

  it('jitter: a job runs at runAt plus its deterministic offset, and a retried add finds the same job', async () => {
    const topic = uniqueTopic('jit');
    const clock = new TestClock();
    const queue = makeQueue(server.client(), { [topic]: { jitter: 600 } }, { clock });
    const runAt = clock.now + 3_600_000;
    const first = await queue.add({ topic, id: 'report', runAt, body: null });
    const again = await queue.add({ topic, id: 'report', runAt, body: null });
    const expected = runAt + jitterOffsetMs(topic, 'report', 600_000);
    assert.equal(first.status, 'created');
    assert.equal(again.status, 'exists');
    assert.equal(first.job.runAt, new Date(expected).toISOString());
    assert.equal(again.job.runAt, first.job.runAt);
    const own = await queue.add({ topic, id: 'mine', runAt, jitter: 10, body: null });
    const offset = Date.parse(own.job.runAt) - runAt;
    assert.ok(offset >= 0 && offset < 10_000, `offset ${offset}`);
    assert.equal(offset, jitterOffsetMs(topic, 'mine', 10_000));
  });
});
