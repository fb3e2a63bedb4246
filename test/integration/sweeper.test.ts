import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { requestFanout, runFanout } from '../../lib/workers/fanout';
import type { Invoker } from '../../lib/platform/lambda';
import { createLogger } from '../../lib/platform/log';
import { runSweeper } from '../../lib/workers/sweeper';
import { Engine } from '../../lib/engine';
import { DEFAULT_TIMINGS, resolveQueueConfig } from '../../lib/core/queue-config';
import { TTR_SECONDS } from '../../lib/core/limits';
import { makeQueue, uniqueTopic } from '../support/queue';
import { createRedis } from '../../lib/platform/redis';
import { freePort, startRedis, useRedisServer } from '../support/redis';
import { OUTCOME, outboxKey, sweeperKeys, run, topicKeys, wakeSweeperFor, scripts as script } from '../../lib/testing';

/** Records invokes instead of calling the Lambda API; fails them while `failing` is set. */
class RecordingInvoker implements Invoker {
  calls: { name: string; payload: unknown }[] = [];
  failing = false;
  async invokeAsync(name: string, payload: unknown): Promise<void> {
    if (this.failing) throw new Error('invoke API unavailable');
    this.calls.push({ name, payload });
  }
  named(name: string) {
    return this.calls.filter((c) => c.name === name);
  }
}

const lines: string[] = [];
const log = createLogger('test', {}, 'debug', (line) => lines.push(line));

/** An engine on `r` that wakes the sweeper as the runtime's does, starting one through `invoker`. */
function waking(r: Redis, invoker: Invoker): Engine {
  const startSweeper = () => invoker.invokeAsync('sweeper', { source: 'wake' });
  return new Engine(r, resolveQueueConfig({ topics: { wake: {} } }), {
    wake: {
      horizonMs: DEFAULT_TIMINGS.sweeperHorizonMs,
      startSweeper,
      onError: (error) => log.warn('wake failed', { error }),
    },
  });
}

/** As waking, on a deployment whose wake-ups may not invoke (wakeInvokes off): it only wakes a running sweeper. */
function wakeOnly(r: Redis): Engine {
  return new Engine(r, resolveQueueConfig({ topics: { wake: {} } }), {
    wake: { horizonMs: DEFAULT_TIMINGS.sweeperHorizonMs, onError: (error) => log.warn('wake failed', { error }) },
  });
}

describe('sweeper and fan-out (real redis-server)', () => {
  const server = useRedisServer();

  // The sweeper's lease is one per deployment: tests that run a sweeper use their own Redis db.
  async function isolated<T>(fn: (r: Redis) => Promise<T>): Promise<T> {
    const db = new Redis(server.server().url, { db: 1 + Math.floor(Math.random() * 14) });
    try {
      await db.flushdb();
      return await fn(db);
    } finally {
      db.disconnect();
    }
  }

  it('exits at once and releases its lease when nothing is due within the horizon', () =>
    isolated(async (r) => {
      const topic = uniqueTopic();
      const queue = makeQueue(r, { [topic]: { handler: 'h' } });
      await queue.add({ topic, id: 'far', delay: 3600 });
      const invoker = new RecordingInvoker();
      const report = await runSweeper({ engine: queue.engine, invoker, log, remainingMs: () => 60_000 });
      assert.equal(report.outcome, 'idle');
      assert.equal(report.sweeps, 1);
      assert.equal(invoker.calls.length, 0);
      assert.equal(await r.exists(sweeperKeys().lease), 0);
    }));

  it('stays awake for a job due after the next tick (issue 12): a tick that comes late cannot make it late', () =>
    isolated(async (r) => {
      // Due in 90 s: beyond one tick period (60 s). Were the sweeper to exit now, the job would
      // wait for the tick after next to start one, and inherit that tick's lateness.
      const topic = uniqueTopic();
      const queue = makeQueue(r, { [topic]: { handler: 'h' } });
      await queue.add({ topic, id: 'after-next-tick', delay: 90 });
      const invoker = new RecordingInvoker();
      let remaining = 7_000; // each look at the clock spends 500 ms: it waits a little, then hands over
      const report = await runSweeper({ engine: queue.engine, invoker, log, remainingMs: () => (remaining -= 500) });
      assert.equal(
        report.outcome,
        'handed_over',
        'with the default horizon it waits for the job, handing over to a fresh invocation',
      );
      assert.equal(invoker.named('sweeper').length, 1);
      assert.ok(DEFAULT_TIMINGS.sweeperHorizonMs >= 2 * 60_000, 'the horizon covers a tick up to a whole period late');
    }));

  it('sleeps until the next due job, moves it, and invokes the fan-out', () =>
    isolated(async (r) => {
      const topic = uniqueTopic();
      const queue = makeQueue(r, { [topic]: { handler: 'h' } });
      await queue.add({ topic, id: 'soon', delay: 0.3 });
      const invoker = new RecordingInvoker();
      const timings = { ...DEFAULT_TIMINGS, sweeperMaxWaitMs: 300 }; // its look again before it exits
      const report = await runSweeper({ engine: queue.engine, invoker, log, remainingMs: () => 60_000, timings });
      assert.equal(report.outcome, 'idle');
      assert.equal(report.moved, 1);
      assert.ok(report.sweeps >= 3, 'it looked again after sleeping, and once more after the jobs it left ready');
      assert.equal(invoker.named('fanout').length, 1);
      assert.equal(await r.exists(sweeperKeys().fanout), 1, 'the fan-out it invoked is marked running');
      assert.equal((await queue.get(topic, 'soon'))?.state, 'ready');
    }));

  it('a look after a wait that no wake-up ended does not hold the lease again: one hold a look, not two', () =>
    isolated(async (r) => {
      const topic = uniqueTopic();
      const queue = makeQueue(r, { [topic]: { handler: 'h' } });
      for (let i = 1; i <= 4; i++) await queue.add({ topic, id: `j${i}`, delay: 0.25 * i });
      const engine = queue.engine;
      const holdLease = engine.holdSweeperLease.bind(engine);
      let holds = 0;
      engine.holdSweeperLease = (a) => {
        holds += 1;
        return holdLease(a);
      };
      const invoker = new RecordingInvoker();
      const timings = { ...DEFAULT_TIMINGS, sweeperMaxWaitMs: 300 };
      const report = await runSweeper({ engine, invoker, log, remainingMs: () => 60_000, timings });
      assert.equal(report.outcome, 'idle');
      assert.equal(report.moved, 4);
      assert.ok(report.sweeps >= 5, `it slept before each job and looked again after: ${report.sweeps} sweeps`);
      // the lease taken, then one hold a look (the look it plans before each wait); a hold before a
      // sweep only after the first look: 2 more at most
      assert.ok(holds <= report.sweeps + 2, `${holds} holds for ${report.sweeps} sweeps`);
    }));

  it('after a sweep that left jobs ready it looks once more before it exits: an attempt claimed right after, whose handler dies, is timed out at its deadline', () =>
    isolated(async (r) => {
      const topic = uniqueTopic();
      const queue = makeQueue(r, { [topic]: { handler: 'h', ttr: 1 } });
      await queue.add({ topic, id: 'claimed-late', delay: 0 });
      const invoker = new RecordingInvoker(); // the fan-out it invokes does nothing: this test claims
      const timings = { ...DEFAULT_TIMINGS, sweeperMaxWaitMs: 300 };
      const sweeper = runSweeper({ engine: queue.engine, invoker, log, remainingMs: () => 60_000, timings });
      while ((await queue.get(topic, 'claimed-late'))?.state !== 'ready')
        await new Promise((done) => setTimeout(done, 5));
      // the fan-out's claim, after the sweep; its handler never starts
      const [claimed] = await queue.engine.claim(topic, 1);
      assert.ok(claimed);
      const report = await sweeper;
      assert.equal(report.outcome, 'idle');
      const job = await queue.get(topic, 'claimed-late');
      assert.equal(
        job?.state,
        'ready',
        `the sweeper saw the claim's deadline and gave the attempt back; it is ${job?.state}`,
      );
      assert.match(job?.lastError ?? '', /given back/);
    }));

  it('after a sweep that left jobs ready it plans its next look within the shortest ttr, not its longest wait: an attempt claimed then, whose handler dies, is timed out at its deadline', () =>
    isolated(async (r) => {
      const topic = uniqueTopic();
      const queue = makeQueue(r, { [topic]: { handler: 'h', ttr: 1 } });
      await queue.add({ topic, id: 'claimed-quiet', delay: 0 });
      const invoker = new RecordingInvoker(); // the fan-out it invokes does nothing: this test claims
      let stop = false; // then the sweeper hands over (to the recording invoker) at its next look
      // the default timings: 10 s waits at most
      const sweeper = runSweeper({ engine: queue.engine, invoker, log, remainingMs: () => (stop ? 0 : 60_000) });
      // the sweep left the job ready and the sweeper planned its next look: when?
      let planned: string | null = null;
      while (
        (await queue.get(topic, 'claimed-quiet'))?.state !== 'ready' ||
        (planned = await r.get(sweeperKeys().next)) === null
      )
        await new Promise((done) => setTimeout(done, 5));
      const [seconds, micros] = await r.time();
      const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      assert.ok(
        Number(planned) - now <= TTR_SECONDS.min * 1000,
        `its next look is ${Number(planned) - now} ms away: a job claimed now with the shortest ttr would be timed out that late`,
      );
      // the fan-out's claim, after the sweep; its handler never starts
      const [claimed] = await queue.engine.claim(topic, 1);
      assert.ok(claimed);
      // the sweeper gives the attempt back once its deadline has passed (waited for, not timed)
      while (!/given back/.test((await queue.get(topic, 'claimed-quiet'))?.lastError ?? ''))
        await new Promise((done) => setTimeout(done, 20));
      stop = true;
      assert.equal((await sweeper).outcome, 'handed_over');
    }));

  it('holds a lease: a second sweeper started meanwhile returns busy', () =>
    isolated(async (r) => {
      const topic = uniqueTopic();
      const queue = makeQueue(r, { [topic]: { handler: 'h' } });
      await queue.add({ topic, id: 'x', delay: 0.5 });
      const timings = { ...DEFAULT_TIMINGS, sweeperMaxWaitMs: 300 }; // its look again before it exits
      const first = runSweeper({
        engine: queue.engine,
        invoker: new RecordingInvoker(),
        log,
        remainingMs: () => 60_000,
        timings,
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const second = await runSweeper({
        engine: queue.engine,
        invoker: new RecordingInvoker(),
        log,
        remainingMs: () => 60_000,
        timings,
      });
      assert.equal(second.outcome, 'busy');
      assert.equal((await first).moved, 1);
    }));

  it('is woken early by an add that makes an earlier job the head', () =>
    isolated(async (r) => {
      const topic = uniqueTopic();
      const queue = makeQueue(r, { [topic]: { handler: 'h' } });
      await queue.add({ topic, id: 'later', delay: 30 });
      const invoker = new RecordingInvoker();
      let remaining = 60_000;
      const running = runSweeper({ engine: queue.engine, invoker, log, remainingMs: () => remaining });
      await new Promise((resolve) => setTimeout(resolve, 200));
      const added = await queue.add({ topic, id: 'now', delay: 0 });
      assert.equal(added.wake, true);
      await wakeSweeperFor(waking(r, invoker), Date.parse(added.job.runAt));
      // the sweeper moves the new job long before the 30 s one is due; then we let it go
      for (let i = 0; i < 100 && invoker.named('fanout').length === 0; i++)
        await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(invoker.named('fanout').length, 1);
      assert.equal(invoker.named('sweeper').length, 0, 'the running sweeper was woken, no new one started');
      remaining = 0;
      await r.rpush(sweeperKeys().wake, 'stop'); // wakes it to see its time is up
      const report = await running;
      assert.equal(report.outcome, 'handed_over');
      assert.equal(invoker.named('sweeper').length, 1, 'it handed over to a fresh invocation');
      assert.equal(await r.exists(sweeperKeys().lease), 0, 'and released its lease first');
    }));

  it('nudge starts a sweeper only when none runs and the job is due within the horizon', () =>
    isolated(async (r) => {
      const invoker = new RecordingInvoker();
      const [s, us] = await r.time();
      const now = Number(s) * 1000 + Math.floor(Number(us) / 1000);
      await wakeSweeperFor(waking(r, invoker), now + DEFAULT_TIMINGS.sweeperHorizonMs + 10_000);
      assert.equal(invoker.named('sweeper').length, 0, 'the tick covers a far job');
      await wakeSweeperFor(waking(r, invoker), now + 1000);
      assert.equal(invoker.named('sweeper').length, 1);
      await wakeSweeperFor(waking(r, invoker), 'now');
      assert.equal(invoker.named('sweeper').length, 2);
      await wakeSweeperFor(wakeOnly(r), 'now');
      assert.equal(invoker.named('sweeper').length, 2, 'without invoke rights it leaves the start to the tick');
    }));

  it('fan-out invokes the topic handler in batches, up to the concurrency', async () => {
    const topic = uniqueTopic();
    const queue = makeQueue(server.client(), { [topic]: { handler: 'myHandler', batchSize: 3, concurrency: 7 } });
    for (let i = 0; i < 10; i++) await queue.add({ topic, id: `j${i}`, delay: 0, body: { i } });
    await queue.engine.sweep();
    const invoker = new RecordingInvoker();
    const reports = await runFanout({ engine: queue.engine, invoker, log }, { topics: [topic] });
    assert.deepEqual(reports[topic], { claimed: 7, invoked: 3, released: 0 });
    const batches = invoker
      .named('myHandler')
      .map(
        (c) =>
          c.payload as { topic: string; jobs: { id: string; attempt: number; claimedAt: number; deadline: number }[] },
      );
    assert.deepEqual(batches.map((b) => b.jobs.length).sort(), [1, 3, 3]);
    for (const b of batches) {
      assert.equal(b.topic, topic);
      for (const j of b.jobs) {
        assert.equal(j.attempt, 1);
        assert.equal(j.deadline - j.claimedAt, 30_000);
      }
    }
    assert.equal((await queue.stats(topic)).ready, 3);
  });

  it('fan-out releases the jobs of a failed invoke, without counting an attempt', async () => {
    const topic = uniqueTopic();
    const queue = makeQueue(server.client(), { [topic]: { handler: 'h', batchSize: 2 } });
    for (let i = 0; i < 4; i++) await queue.add({ topic, id: `k${i}`, delay: 0 });
    await queue.engine.sweep();
    const invoker = new RecordingInvoker();
    invoker.failing = true;
    const reports = await runFanout({ engine: queue.engine, invoker, log }, { topics: [topic] });
    assert.equal(reports[topic]!.released, 4);
    const stats = await queue.stats(topic);
    assert.equal(stats.running, 0);
    assert.equal(stats.ready, 4);
    assert.equal((await queue.get(topic, 'k0'))?.attempts, 0);
  });

  it("topics named like Object.prototype's members: the sweep counts their ready jobs, the fan-out reports them", async () => {
    const names = ['__proto__', 'constructor', 'toString'];
    const queue = makeQueue(server.client(), Object.fromEntries(names.map((t) => [t, { handler: 'h' }])));
    for (const topic of names) await queue.add({ topic, id: 'j', delay: 0 });
    const swept = await queue.engine.sweep();
    const sorted = <T extends [string, unknown]>(entries: T[]) => entries.sort((a, b) => (a[0] < b[0] ? -1 : 1));
    assert.deepEqual(
      sorted(Object.entries(swept.readyByTopic)),
      sorted(names.map((t) => [t, 1])),
      'each topic its own count',
    );
    const reports = await runFanout({ engine: queue.engine, invoker: new RecordingInvoker(), log }, { topics: names });
    assert.deepEqual(
      sorted(Object.entries(reports)),
      sorted(names.map((t) => [t, { claimed: 1, invoked: 1, released: 0 }])),
    );
    assert.equal((Object.prototype as { claimed?: unknown }).claimed, undefined, 'Object.prototype left alone');
  });

  it('runs one fan-out at a time: it drains, clears its mark, and the next request invokes again', () =>
    isolated(async (r) => {
      const topic = uniqueTopic();
      const queue = makeQueue(r, { [topic]: { handler: 'h', batchSize: 2, concurrency: 100 } });
      for (let i = 0; i < 5; i++) await queue.add({ topic, id: `f${i}`, delay: 0 });
      await queue.engine.sweep();
      const invoker = new RecordingInvoker();
      assert.equal(await requestFanout({ engine: queue.engine, invoker }), true);
      assert.equal(await requestFanout({ engine: queue.engine, invoker }), false, 'one is marked running already');
      const { token } = invoker.named('fanout')[0]!.payload as { token: string };
      const reports = await runFanout({ engine: queue.engine, invoker, log }, { token });
      assert.deepEqual(reports[topic], { claimed: 5, invoked: 3, released: 0 });
      assert.equal(await r.exists(sweeperKeys().fanout), 0, 'the mark is cleared when it stops');
      assert.equal(await requestFanout({ engine: queue.engine, invoker }), true);
      assert.equal(invoker.named('fanout').length, 2);
    }));

  it('does not release its lease over a wake-up, even one its pending BLPOP already consumed', () =>
    isolated(async (r) => {
      const k = sweeperKeys();
      const lease = [k.lease, k.next, k.wake, k.wakes] as const;
      const seen = await run(
        r,
        script.holdLease(lease, { owner: 'me', leaseMs: 30_000, nextAt: null, clearWake: true }),
      );
      assert.equal(
        await run(
          r,
          script.holdLease(lease, { owner: 'someone-else', leaseMs: 30_000, nextAt: null, clearWake: true }),
        ),
        -1,
      );
      const [s, us] = await r.time();
      const due = Number(s) * 1000 + Math.floor(Number(us) / 1000) + 5000;
      assert.equal(
        await run(r, script.wakeSweeper(lease, { clock: '', dueAt: due, horizonMs: DEFAULT_TIMINGS.sweeperHorizonMs })),
        1,
        'the running sweeper is woken',
      );
      assert.equal(await r.lpop(k.wake), String(due), 'its pending BLPOP takes the wake-up...');
      assert.equal(
        await run(r, script.releaseLease(lease, { owner: 'me', wakesSeen: seen, force: false })),
        0,
        '...and it still may not leave',
      );
      const now = await run(
        r,
        script.holdLease(lease, { owner: 'me', leaseMs: 30_000, nextAt: null, clearWake: true }),
      );
      assert.equal(now, seen + 1);
      assert.equal(
        await run(r, script.releaseLease(lease, { owner: 'me', wakesSeen: now, force: false })),
        1,
        'after sweeping again it may',
      );
      assert.equal(await r.exists(k.lease), 0);
      assert.equal(
        await run(r, script.releaseLease(lease, { owner: 'me', wakesSeen: now, force: false })),
        -1,
        'not the owner any more',
      );
    }));

  // Issue 12, finding 2: a wait that ended by its timer left its BLPOP pending; a wake-up sent while
  // the sweeper swept was taken by that BLPOP and lost, and the next wait slept on the old plan.
  it('a wake-up sent while it sweeps is not lost: a job due sooner is moved before the planned one', () =>
    isolated(async (r) => {
      const topic = uniqueTopic();
      const real = makeQueue(r, { [topic]: { handler: 'h' } });
      await real.add({ topic, id: 'a', delay: 1 });
      await real.add({ topic, id: 'b', delay: 9 });
      const invoker = new RecordingInvoker();
      let sweeps = 0;
      const engine = Object.create(real.engine) as typeof real.engine;
      engine.sweep = async (limit?: number) => {
        const result = await real.engine.sweep(limit);
        sweeps += 1;
        if (sweeps === 2) {
          // the second sweep (it moved a) has read its plan: b, 8 s ahead. Now c, due in 0.2 s.
          const added = await real.add({ topic, id: 'c', delay: 0.2 });
          if (added.wake) await wakeSweeperFor(waking(r, invoker), Date.parse(added.job.runAt));
        }
        return result;
      };
      let stop = false; // then it hands over at its next look, instead of looking on at the jobs left ready
      const running = runSweeper({ engine, invoker, log, remainingMs: () => (stop ? 0 : 60_000) });
      try {
        let c = await real.get(topic, 'c');
        while (c === null || c.state === 'delayed') {
          await new Promise((resolve) => setTimeout(resolve, 20));
          c = await real.get(topic, 'c');
        }
        const b = await real.get(topic, 'b');
        assert.equal(b?.state, 'delayed', 'c was moved by a sweep before b fell due, not with b 8 s later');
        assert.equal(c.state, 'ready');
      } finally {
        stop = true;
        await running;
      }
    }));

  it("drains an end its notifier left in the outbox, and moves the callback's job to ready", () =>
    isolated(async (r) => {
      const topic = uniqueTopic('cbs');
      const after = uniqueTopic('cba');
      const queue = makeQueue(r, { [topic]: { handler: 'h' }, [after]: { handler: 'h' } });
      await queue.add({ topic, id: 'j', delay: 0, callback: { topic: after, on: ['done'] } });
      await queue.engine.sweep();
      const [claimed] = await queue.engine.claim(topic, 1);
      // the ack script alone: a handler that died right after its ack wrote the end and its entry
      const k = topicKeys(0, topic, 1);
      const acked = await run(
        r,
        script.ackJobs([k.jobs, k.bodies, k.running, k.done], {
          clock: '',
          retentionMs: 60_000,
          attempts: [{ id: 'j', attempt: claimed!.attempt, claim: claimed!.claim }],
        }),
      );
      assert.deepEqual(acked, [OUTCOME.ACKED_NOTIFY]);
      assert.equal(await r.zcard(outboxKey(k.jobs)), 1);
      const invoker = new RecordingInvoker();
      const report = await runSweeper({ engine: queue.engine, invoker, log, remainingMs: () => 60_000 });
      assert.equal(report.notified, 1);
      assert.equal(await r.zcard(outboxKey(k.jobs)), 0);
      const ready = (await queue.listJobs(after, { state: 'ready' })).jobs;
      assert.deepEqual(
        ready.map((j) => (j.body as { id: string; outcome: string }).outcome),
        ['done'],
        'added and moved by the same invocation',
      );
      assert.ok(invoker.named('fanout').length >= 1, 'the fan-out was asked for it');
    }));

  it('a sweeper started while Redis is down keeps trying, and takes its lease once Redis is back', async () => {
    const port = await freePort();
    const r = createRedis({ url: `redis://127.0.0.1:${port}`, cluster: false });
    r.on('error', () => undefined);
    const topic = uniqueTopic();
    const queue = makeQueue(r, { [topic]: { handler: 'h' } });
    const before = lines.length;
    const running = runSweeper({
      engine: queue.engine,
      invoker: new RecordingInvoker(),
      log,
      remainingMs: () => 60_000,
    });
    await new Promise((resolve) => setTimeout(resolve, 800));
    const redisLater = await startRedis({ port });
    try {
      const report = await running;
      assert.equal(report.outcome, 'idle');
      assert.equal(report.sweeps, 1);
      assert.ok(
        lines.slice(before).some((l) => l.includes('could not take the lease; retrying')),
        'it retried while Redis was down',
      );
    } finally {
      r.disconnect();
      await redisLater.stop();
    }
  });
});
