/**
 * Issue 14, item 5: lateness you can see. Each start records how late the attempt started
 * (lua/includes/lateness.lua, from startAttempts-5, claimJobs-7 and claimFlow-6; the tests start jobs added due
 * that long before the clock's now); GET /topics
 * shows the last 5 minutes' p50 / p99 / max, the age of the oldest ready job, and a per-minute series over the last
 * hour, kept in bounded space. With several partitions, the records go to the partitions in turn (no shard of a cluster
 * takes them all) and are read back merged.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { toWire } from '../../lib/workers/fanout';
import type { Runtime } from '../../lib/platform/runtime';
import { topicHandler } from '../../lib/workers/handler';
import { makeQueue, TestClock, uniqueTopic, apiOf, type Queue } from '../support/queue';
import { startRedis, type RedisProcess } from '../support/redis';
import { testRuntime } from '../support/runtime';
import { Redis } from 'ioredis';
import { latenessKey, parseMinutes } from '../../lib/testing';

let seq = 0;

/**
 * Starts one job per value at the clock's now, each that many ms late: all added at once due that
 * long before now, swept, claimed and started in the same calls (the starts record their
 * lateness), then acked. Returns the ids, in the order of the values.
 */
async function startLate(q: Queue, clock: TestClock, topic: string, latenessMs: readonly number[]): Promise<string[]> {
  const now = clock.now;
  const jobs = latenessMs.map((ms) => ({ topic, id: `late-${++seq}`, runAt: now - ms }));
  const added = await q.addMany(jobs);
  assert.ok(
    added.outcomes.every((o) => o.status === 'created'),
    'every job created',
  );
  for (let more = true; more;) more = (await q.engine.sweep()).more;
  for (let started = 0; started < jobs.length;) {
    const claimed = await q.engine.claimStarted(topic, 100);
    assert.ok(claimed.length > 0, `${jobs.length - started} jobs added are not ready`);
    started += claimed.length;
    await Promise.all(claimed.map((j) => q.engine.ack(topic, j.id, j)));
  }
  return jobs.map((j) => j.id);
}

describe('lateness stats (real redis-server)', () => {
  let server: RedisProcess;
  let redis: Redis;
  before(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
  });
  after(async () => {
    redis.disconnect();
    await server.stop();
  });

  it('the last 5 minutes give p50 / p99 / max; older minutes only the hourly series', async () => {
    const topic = uniqueTopic('late');
    const clock = new TestClock(Date.UTC(2030, 0, 1, 12, 0, 0));
    const q = makeQueue(redis, { [topic]: {} }, { clock });
    await startLate(q, clock, topic, [10_000]); // 12:00, leaves the 5-minute window by 12:10
    clock.advance(10 * 60_000);
    await startLate(
      q,
      clock,
      topic,
      Array.from({ length: 100 }, (_, i) => i + 1),
    ); // 12:10: 1..100 ms
    clock.advance(60_000);
    await startLate(q, clock, topic, [5]); // 12:11
    const s = await q.stats(topic);
    assert.equal(s.lateness.started, 101);
    assert.equal(s.lateness.maxMs, 100, 'exact max; the 10 s start is outside the window');
    assert.ok(s.lateness.p50Ms! >= 50 && s.lateness.p50Ms! <= 60, `p50 ${s.lateness.p50Ms}`);
    assert.ok(s.lateness.p99Ms! >= 99 && s.lateness.p99Ms! <= 119, `p99 ${s.lateness.p99Ms}`);
    assert.equal(s.lastHour.length, 60);
    assert.deepEqual(
      s.lastHour.slice(-2).map((m) => m.started),
      [100, 1],
    );
    assert.equal(s.lastHour.find((m) => m.minute === '2030-01-01T12:00:00.000Z')?.started, 1);
    assert.equal(s.lastHour.at(-1)!.p99Ms, 5, 'a percentile is never above the exact max (the bin bound of 5 ms is 6)');
    assert.ok(s.lateness.p99Ms! <= s.lateness.maxMs!);
  });

  it("with 4 partitions, each start is recorded in its job's partition, and read back merged", async () => {
    const topic = uniqueTopic('late');
    const clock = new TestClock(Date.UTC(2030, 0, 4, 12, 0, 0));
    const q = makeQueue(redis, { [topic]: {} }, { clock, config: { partitions: 4 } });
    const ids: string[] = [];
    for (let i = 1; i <= 8; i++) ids.push(...(await startLate(q, clock, topic, [i, 100 * i])));
    const perPartition = await Promise.all(
      [0, 1, 2, 3].map(async (p) => parseMinutes(await redis.hgetall(latenessKey(p, topic, 4)))[0]?.n ?? 0),
    );
    const expected = [0, 1, 2, 3].map((p) => ids.filter((id) => q.engine.partitionOf(topic, id) === p).length);
    assert.ok(expected.filter((n) => n > 0).length > 1, `the 16 jobs spread over partitions: ${expected}`);
    assert.deepEqual(perPartition, expected, "each partition's minute counts the starts of its own jobs");
    const s = await q.stats(topic);
    assert.equal(s.lateness.started, 16);
    assert.equal(s.lateness.maxMs, 800, 'the largest of all partitions');
    assert.equal(s.lastHour.at(-1)!.started, 16);
    assert.ok(
      s.lateness.p50Ms! >= 8 && s.lateness.p50Ms! <= 119,
      `p50 ${s.lateness.p50Ms}: between the 8 small and the 8 large values`,
    );
  });

  it('stays bounded: a day of starts every minute keeps 60 minutes, each with its bins only', async (t) => {
    const topic = uniqueTopic('late');
    const clock = new TestClock(Date.UTC(2030, 0, 2));
    const q = makeQueue(redis, { [topic]: {} }, { clock });
    for (let minute = 0; minute < 24 * 60; minute += 7) {
      clock.now = Date.UTC(2030, 0, 2) + minute * 60_000;
      await startLate(
        q,
        clock,
        topic,
        Array.from({ length: 100 }, (_, i) => (i * 7919) % 100_000),
      );
    }
    for (let minute = 0; minute < 60; minute++) {
      clock.now = Date.UTC(2030, 0, 3) + minute * 60_000;
      await startLate(
        q,
        clock,
        topic,
        Array.from({ length: 100 }, (_, i) => (i * 7919) % 100_000),
      );
    }
    const fields = await redis.hkeys(latenessKey(0, topic, 1));
    const minutes = fields.filter((f) => /^m\d+$/.test(f));
    assert.equal(minutes.length, 60, 'a field per minute of the last hour');
    // the bins of 100 values spread over 0-100 s: the same set every minute, so a minute's slot
    // holds exactly them (a slot reused by a later minute lost the earlier minute's bins)
    const binsOfOneMinute = new Set(
      Array.from({ length: 100 }, (_, i) => Math.floor(4 * Math.log2(((i * 7919) % 100_000) + 1))),
    ).size;
    assert.equal(fields.length, 60 * (1 + binsOfOneMinute));
    const bytes = Number(await redis.call('MEMORY', 'USAGE', latenessKey(0, topic, 1)));
    assert.ok(bytes < 60 * (1 + 67) * 100, `${bytes} bytes`); // at most ~100 bytes a field, 67 bins below 100 s
    t.diagnostic(
      `lateness hash after an hour of 100 starts a minute spread over 0-100 s: ${fields.length} fields, ${bytes} bytes`,
    );
    const ttl = await redis.pttl(latenessKey(0, topic, 1));
    assert.ok(ttl > 3_600_000 && ttl <= 3_780_000, `expires 62 to 63 minutes after the last start: pttl ${ttl}`);
  });

  it("a handler records its starts; the oldest ready job's age is how long it has been due", async () => {
    const topic = uniqueTopic('late');
    const rt: Runtime = testRuntime(server.url, { [topic]: { handler: 'h', batchSize: 5 } });
    try {
      const queue = apiOf(rt);
      for (let i = 0; i < 3; i++) await queue.add({ topic, id: `r${i}`, delay: 0 });
      await queue.engine.sweep();
      await new Promise((resolve) => setTimeout(resolve, 50));
      const before = await queue.stats(topic);
      assert.ok(
        before.oldestReadyAgeMs !== null && before.oldestReadyAgeMs >= 50,
        `oldest ready ${before.oldestReadyAgeMs}`,
      );
      const claimed = await queue.engine.claim(topic, 5);
      await topicHandler(
        async () => undefined,
        () => rt,
      )({ topic, jobs: claimed.map(toWire) }, { awsRequestId: 'r', getRemainingTimeInMillis: () => 1000 });
      const after = await queue.stats(topic);
      assert.equal(after.lateness.started, 3);
      assert.ok(after.lateness.maxMs! >= 50, `max ${after.lateness.maxMs}`);
      assert.equal(after.oldestReadyAgeMs, null, 'nothing ready any more');
    } finally {
      rt.redis.disconnect();
    }
  });

  it('a handler that claims more itself (claimed and started in one call) records those starts too', async () => {
    const topic = uniqueTopic('late');
    const rt: Runtime = testRuntime(server.url, { [topic]: { handler: 'h', batchSize: 5, ttr: 1 } });
    try {
      const queue = apiOf(rt);
      for (let i = 0; i < 8; i++) await queue.add({ topic, id: `d${i}`, delay: 0 });
      await queue.engine.sweep();
      const claimed = await queue.engine.claim(topic, 5);
      const ran: string[] = [];
      const report = await topicHandler(
        async (job) => void ran.push(job.id),
        () => rt,
      )({ topic, jobs: claimed.map(toWire) }, { awsRequestId: 'r', getRemainingTimeInMillis: () => 60_000 });
      assert.deepEqual(report, { done: 8, retried: 0, dead: 0, stale: 0, expired: 0 });
      assert.deepEqual(ran.sort(), Array.from({ length: 8 }, (_, i) => `d${i}`).sort());
      const after = await queue.stats(topic);
      assert.equal(
        after.lateness.started,
        8,
        'the 5 of the event (startAttempts) and the 3 it claimed (claimJobs with start)',
      );
      assert.equal(after.running + after.ready, 0);
    } finally {
      rt.redis.disconnect();
    }
  });
});
