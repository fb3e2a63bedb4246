/**
 * Where bodies live (issue 12, finding 7), against a real redis-server: a body of up to 1 KiB
 * inline in its job's record, a larger one in the topic's bodies hash; no path that deletes a job
 * leaves its body behind; and every script that loops over jobs stops at its byte budget and says
 * so.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import type * as engine from '../../lib/engine';
import type { Queue } from '../support/queue';
import { makeQueue, TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';
import {
  OUTCOME,
  groupKey,
  latenessKey,
  partitionOf,
  scheduleKeys,
  topicKeys,
  type TopicKeys,
  run,
  scripts as script,
} from '../../lib/testing';

const BIG = { pad: 'b'.repeat(65_000) };
const SMALL = { n: 1 };
const INLINE_BODY_BYTES = 1024; // lua/includes/job.lua

/**
 * How job `id` is stored: its record's length and inline bytes (what follows the header), and
 * the length of its entry in the bodies hash (0 when none).
 */
async function stored(
  redis: Redis,
  k: TopicKeys,
  id: string,
): Promise<{ record: number; inline: number; apart: number }> {
  const [record, inline] = (await redis.eval(
    "local r = redis.call('HGET', KEYS[1], ARGV[1]) if not r then return { 0, 0 } end local offset = cmsgpack.unpack_one(r) if offset < 0 then return { #r, 0 } end return { #r, #r - offset }",
    1,
    k.jobs,
    id,
  )) as [number, number];
  return { record, inline, apart: await redis.hstrlen(k.bodies, id) };
}

/** Ids in the bodies hash whose job is gone, or whose record holds its body inline. */
async function orphans(redis: Redis, k: TopicKeys): Promise<string[]> {
  return (await redis.eval(
    "local out = {} for _, id in ipairs(redis.call('HKEYS', KEYS[2])) do local r = redis.call('HGET', KEYS[1], id) if not r or cmsgpack.unpack_one(r) >= 0 then out[#out + 1] = id end end return out",
    2,
    k.jobs,
    k.bodies,
  )) as string[];
}

/** Kills every job of `topic` (maxAttempts 1) and lists the dead pages; each holds at most 1 MiB of bodies. */
async function pages(q: Queue, topic: string): Promise<string[]> {
  await q.engine.sweep();
  const claimed = [];
  for (let got = await q.engine.claim(topic, 100); got.length > 0; got = await q.engine.claim(topic, 100))
    claimed.push(...got);
  for (const job of claimed) await q.engine.fail(topic, job.id, job, 'x');
  const listed: string[] = [];
  let next: string | null = null;
  for (let page = 0; page < 100; page++) {
    const got: { jobs: { id: string; body: unknown }[]; next: string | null } = await q.listDead(topic, {
      limit: 100,
      ...(next ? { after: next } : {}),
    });
    const bytes = got.jobs.reduce((n, j) => n + Buffer.byteLength(JSON.stringify(j.body)), 0);
    assert.ok(
      got.jobs.length >= 1 && bytes <= 1_048_576,
      `page ${page}: ${got.jobs.length} jobs, ${bytes} bytes of bodies`,
    );
    listed.push(...got.jobs.map((j) => j.id));
    next = got.next;
    if (next === null) break;
  }
  return listed;
}

describe('bodies apart from their jobs (real redis-server)', () => {
  const server = useRedisServer();

  describe('layout', () => {
    it('a body of up to 1 KiB stays inline in its record; a larger one is kept apart, and state changes leave it there', async () => {
      const topic = uniqueTopic('layout');
      const k = topicKeys(0, topic, 1);
      const redis = server.client();
      const q = makeQueue(
        redis,
        { [topic]: { maxAttempts: 2, backoff: { type: 'fixed', delay: 1 } } },
        { clock: new TestClock() },
      );
      const edge = { p: 'e'.repeat(INLINE_BODY_BYTES - 8) }; // {"p":"…"}: exactly 1024 bytes
      assert.equal(Buffer.byteLength(JSON.stringify(edge)), INLINE_BODY_BYTES);
      const over = { p: 'o'.repeat(INLINE_BODY_BYTES - 7) };
      await q.addMany([
        { topic, id: 'small', delay: 0, body: SMALL },
        { topic, id: 'edge', delay: 0, body: edge },
        { topic, id: 'over', delay: 0, body: over },
        { topic, id: 'big', delay: 0, body: BIG },
      ]);
      const where = async (id: string) => {
        const s = await stored(redis, k, id);
        return [s.inline, s.apart];
      };
      assert.deepEqual(await where('small'), [7, 0]);
      assert.deepEqual(await where('edge'), [INLINE_BODY_BYTES, 0]);
      assert.deepEqual(await where('over'), [0, INLINE_BODY_BYTES + 1]);
      const big = await stored(redis, k, 'big');
      assert.deepEqual([big.inline, big.apart], [0, Buffer.byteLength(JSON.stringify(BIG))]);
      assert.ok(big.record < 100, `the record is the header alone: ${big.record} bytes`);

      await q.engine.sweep();
      const claimed = await q.engine.claim(topic, 10);
      assert.deepEqual(Object.fromEntries(claimed.map((j) => [j.id, j.body])), { small: SMALL, edge, over, big: BIG });
      for (const job of claimed) assert.equal((await q.engine.fail(topic, job.id, job, 'x')).outcome, 'retry');
      assert.deepEqual((await q.get(topic, 'big'))?.body, BIG);
      assert.equal((await stored(redis, k, 'big')).inline, 0, 'still apart');
      assert.equal((await stored(redis, k, 'small')).inline, 7, 'still inline');
      assert.deepEqual(await orphans(redis, k), []);
    });
  });

  describe('a call that stops at its budget leaves the rest to the next', () => {
    it('an add of 30 ids that exist already answers "exists" with each job, body and all, over several calls', async () => {
      const topic = uniqueTopic('exists');
      const redis = server.client();
      const q = makeQueue(redis, { [topic]: {} });
      const k = topicKeys(0, topic, 1);
      const ids = Array.from({ length: 30 }, (_, i) => `e-${String(i).padStart(2, '0')}`);
      await q.addMany(ids.map((id) => ({ topic, id, delay: 60, body: BIG })));
      const again = await q.addMany(ids.map((id) => ({ topic, id, delay: 60, body: SMALL })));
      assert.deepEqual(
        again.outcomes.map((o) => o.status),
        ids.map(() => 'exists'),
      );
      assert.ok(
        again.outcomes.every((o) => 'job' in o && JSON.stringify(o.job?.body) === JSON.stringify(BIG)),
        'each with its stored body',
      );
      assert.equal(await redis.hlen(k.bodies), 30);
    });
  });

  describe('a claim with a byte cap over several calls and partitions', () => {
    it('stops before the job whose body would pass the cap, and at most count', async () => {
      const topic = uniqueTopic('cap');
      const q = makeQueue(server.client(), { [topic]: { concurrency: 1000 } }, { config: { partitions: 4 } });
      const body = { pad: 'c'.repeat(60_000) };
      await q.addMany(Array.from({ length: 100 }, (_, i) => ({ topic, id: `c-${i}`, delay: 0, body })));
      await q.engine.sweep();
      const bytes = (jobs: { body: unknown }[]) =>
        jobs.reduce((n, j) => n + Buffer.byteLength(JSON.stringify(j.body)), 0);
      const capped = await q.engine.claim(topic, 100, 1000, 3_000_000);
      assert.ok(bytes(capped) <= 3_000_000, `${capped.length} jobs, ${bytes(capped)} bytes of bodies`);
      assert.ok(bytes(capped) > 3_000_000 - 60_010, `filled to within one body: ${bytes(capped)} bytes`);
      const counted = await q.engine.claim(topic, 10, 1000, 100_000_000);
      assert.equal(counted.length, 10);
      const one = await q.engine.claim(topic, 10, 1000, 1);
      assert.equal(one.length, 1, 'the first job gets through whatever the cap');
    });

    it('on one partition, a second call gets what is left of the cap, and no job past it', async () => {
      const topic = uniqueTopic('cap');
      const q = makeQueue(server.client(), { [topic]: { concurrency: 1000 } });
      await q.addMany(
        Array.from({ length: 40 }, (_, i) => ({ topic, id: `c-${i}`, delay: 0, body: { pad: 'c'.repeat(60_000) } })),
      );
      await q.engine.sweep();
      const cap = 1_048_576 + 30_000; // one call's budget holds 17 bodies; what is left, 58 KB, holds none
      const claimed = await q.engine.claim(topic, 40, 1000, cap);
      assert.equal(claimed.length, 17, `${claimed.length} claimed`);
    });
  });

  describe('no body outlives its job', () => {
    it('ack and cancel without retention, retention of done, cancelled and dead jobs, put and reschedule to a small body', async () => {
      const topic = uniqueTopic('orphans');
      const clock = new TestClock();
      const redis = server.client();
      const k = topicKeys(0, topic, 1);
      const topics = { [topic]: { maxAttempts: 1, ttr: 30, concurrency: 100 } };
      const keep = makeQueue(redis, topics, { clock, config: { retention: 10, deadRetention: 20 } });
      const drop = makeQueue(redis, topics, { clock, config: { retention: 0 } });
      const ids = [
        'acked-now',
        'cancelled-now',
        'acked-kept',
        'cancelled-kept',
        'dead-kept',
        'put-small',
        'put-over-cancelled',
        'rescheduled-small',
        'rescheduled-big',
        'live',
      ];
      await keep.addMany(
        ids.map((id) => ({
          topic,
          id,
          delay:
            id.startsWith('rescheduled') || id === 'put-small' || id === 'live' || id.includes('cancelled') ? 60 : 0,
          body: id === 'rescheduled-big' ? SMALL : BIG,
        })),
      );
      assert.equal(await redis.hlen(k.bodies), ids.length - 1);

      await keep.engine.sweep();
      const claimed = new Map((await keep.engine.claim(topic, 10)).map((j) => [j.id, j]));
      assert.deepEqual([...claimed.keys()].sort(), ['acked-kept', 'acked-now', 'dead-kept']);
      assert.equal(await drop.engine.ack(topic, 'acked-now', claimed.get('acked-now')!), 'done');
      assert.equal(await keep.engine.ack(topic, 'acked-kept', claimed.get('acked-kept')!), 'done');
      assert.equal((await keep.engine.fail(topic, 'dead-kept', claimed.get('dead-kept')!, 'x')).outcome, 'dead');
      await drop.cancel(topic, 'cancelled-now');
      await keep.cancel(topic, 'cancelled-kept');
      await keep.cancel(topic, 'put-over-cancelled');
      assert.equal((await keep.put(topic, 'put-small', { delay: 60, body: SMALL })).status, 'replaced');
      assert.equal((await keep.put(topic, 'put-over-cancelled', { delay: 60, body: SMALL })).status, 'created');
      await keep.reschedule(topic, 'rescheduled-small', { body: SMALL });
      await keep.reschedule(topic, 'rescheduled-big', { body: BIG });
      assert.deepEqual(await orphans(redis, k), []);
      assert.deepEqual((await redis.hkeys(k.bodies)).sort(), [
        'acked-kept',
        'cancelled-kept',
        'dead-kept',
        'live',
        'rescheduled-big',
      ]);

      clock.advance(11_000); // past the retention of done and cancelled jobs
      assert.equal((await keep.engine.sweep()).purged, 2);
      clock.advance(10_000); // past the dead retention
      assert.equal((await keep.engine.sweep()).purged, 1);
      assert.deepEqual(await orphans(redis, k), []);
      assert.deepEqual((await redis.hkeys(k.bodies)).sort(), ['live', 'rescheduled-big']);
      assert.deepEqual((await keep.get(topic, 'rescheduled-big'))?.body, BIG);
      assert.deepEqual((await keep.get(topic, 'put-small'))?.body, SMALL);
    });
  });

  describe('every script that loops over jobs stops at its byte budget (1 byte here: the first job only) and says so', () => {
    function setup(topicInput = {}) {
      const topic = uniqueTopic('budget');
      const clock = new TestClock();
      const redis = server.client();
      const q = makeQueue(
        redis,
        { [topic]: { maxAttempts: 1, ttr: 30, concurrency: 100, ...topicInput } },
        { clock, config: { retention: 3600 } },
      );
      return { topic, clock, redis, q, k: topicKeys(0, topic, 1) };
    }
    const newJob = (topic: string, id: string): engine.NewJob => ({
      topic,
      id,
      partition: 0,
      when: { kind: 'd', ms: 0 },
      body: JSON.stringify(SMALL),
    });

    it('addJobs: one result for three jobs; the others are not written', async () => {
      const { topic, clock, redis, k } = setup();
      const reply = await run(
        redis,
        script.addJobs([k.jobs, k.bodies, k.delayed, k.done, groupKey(0, topic, '', 1)], {
          clock: clock.now,
          mode: 'add',
          jobs: ['a', 'b', 'c'].map((id) => newJob(topic, id)),
          maxBytes: 1,
        }),
      );
      assert.equal(script.addResults(reply).length, 1, 'one result');
      assert.equal(reply.length, 6, 'headChanged, the time, and one result of four slots');
      assert.deepEqual(
        (await redis.hkeys(k.jobs)).filter((f) => !f.startsWith('#')),
        ['a'],
        'one job (and the version counter)',
      );
    });

    it('claimJobs: one job and more = 1, the other ids stay at the head; strict: none', async () => {
      const { topic, clock, redis, q, k } = setup();
      await q.addMany(['a', 'b', 'c'].map((id) => ({ topic, id, delay: 0, body: SMALL })));
      await q.engine.sweep();
      const claim = (strict: boolean) =>
        run(
          redis,
          script.claimJobs([k.ready, k.running, k.jobs, k.bodies, k.delayed, k.done, latenessKey(0, topic, 1)], {
            clock: clock.now,
            count: 3,
            maxRunning: 10,
            ttrMs: 30_000,
            nonce: 'n',
            maxBytes: 1,
            strict,
            retentionMs: 0,
          }),
        );
      const strict = await claim(true);
      assert.deepEqual(strict.slice(1), [0, 0, 1, 0, 0, 0, 0], 'taken 0, skipped 0, more, not drained, not capped');
      const [, taken, skipped, more, drained, capped, , , ...items] = await claim(false);
      assert.deepEqual([taken, skipped, more, drained, capped, items.map((i) => i[0])], [1, 0, 1, 0, 0, ['a']]);
      assert.deepEqual(await redis.lrange(k.ready, 0, -1), ['b', 'c']);
    });

    it('startAttempts, releaseJobs: one of three looked at', async () => {
      const { topic, clock, redis, q, k } = setup();
      await q.addMany(['a', 'b', 'c'].map((id) => ({ topic, id, delay: 0, body: SMALL })));
      await q.engine.sweep();
      const claimed = await q.engine.claim(topic, 3);
      const attempts = claimed.map((j) => ({ id: j.id, attempt: j.attempt, claim: j.claim }));
      assert.deepEqual(
        await run(
          redis,
          script.startAttempts([k.jobs, latenessKey(0, topic, 1), k.running, k.ready, k.done], {
            clock: clock.now,
            retentionMs: 0,
            attempts,
            maxBytes: 1,
          }),
        ),
        [clock.now, OUTCOME.STARTED],
        'the clock, then one code',
      );
      const release = await run(
        redis,
        script.releaseJobs([k.jobs, k.running, k.ready, k.delayed, k.dead], {
          clock: clock.now,
          maxAttempts: 1,
          backoff: 'f:0',
          random: 0,
          reason: 'r',
          jobs: attempts.slice(1),
          maxBytes: 1,
        }),
      );
      assert.deepEqual(release, [1, 0, 0, 1], 'released 1, looked at 1');
      assert.deepEqual((await q.stats(topic)).running, 2);
      // the engine sends the rest itself
      assert.deepEqual(await q.engine.start(topic, claimed.slice(2)), [true]);
    });

    it('moveDue: one timeout of three, more = 1', async () => {
      const { topic, clock, redis, q, k } = setup();
      await q.addMany(['a', 'b', 'c'].map((id) => ({ topic, id, delay: 0, body: SMALL })));
      await q.engine.sweep();
      await q.engine.start(topic, await q.engine.claim(topic, 3));
      clock.advance(31_000);
      const reply = await run(
        redis,
        script.moveDue(
          [k.delayed, k.ready, k.running, k.jobs, k.bodies, k.dead, k.done, scheduleKeys(0, topic, 1).next],
          {
            clock: clock.now,
            limit: 100,
            maxAttempts: 1,
            backoff: 'f:0',
            random: 0,
            deadRetentionMs: 1000,
            maxBytes: 1,
          },
        ),
      );
      const [, , deadLettered, , more] = reply;
      assert.deepEqual([deadLettered, more], [1, 1]);
      assert.equal(await redis.zcard(k.running), 2, 'the others are still to time out');
    });

    it('redriveJobs and listJobs (dead): one dead job of three, more = 1', async () => {
      const { topic, clock, redis, q, k } = setup();
      await q.addMany(['a', 'b', 'c'].map((id) => ({ topic, id, delay: 0, body: SMALL })));
      await q.engine.sweep();
      for (const job of await q.engine.claim(topic, 3)) await q.engine.fail(topic, job.id, job, 'x');
      const [more, ...entries] = await run(
        redis,
        script.listJobs([k.dead, k.jobs, k.bodies, k.delayed], { limit: 10, maxBytes: 1 }),
      );
      assert.deepEqual([more, entries.map((e) => e[1][0])], [1, ['a']]);
      assert.deepEqual(
        await run(redis, script.redriveJobs([k.dead, k.delayed, k.jobs], { clock: clock.now, count: 3, maxBytes: 1 })),
        [1, 1, 1, 1],
      );
      assert.deepEqual(
        await run(
          redis,
          script.redriveJobs([k.dead, k.delayed, k.jobs], { clock: clock.now, ids: ['b', 'c'], maxBytes: 1 }),
        ),
        [1, 0, 1, 1],
      );
      assert.equal(await redis.zcard(k.dead), 1);
    });
  });

  describe('dead pages over several partitions stay within the budget and list every job once, in order', () => {
    it('4 partitions, 60 jobs with 60 KB bodies that died in the same millisecond', async () => {
      const topic = uniqueTopic('pages');
      const clock = new TestClock();
      const q = makeQueue(
        server.client(),
        { [topic]: { maxAttempts: 1, concurrency: 100 } },
        { clock, config: { partitions: 4 } },
      );
      const ids = Array.from({ length: 60 }, (_, i) => `job-${String(i).padStart(2, '0')}`);
      await q.addMany(ids.map((id) => ({ topic, id, delay: 0, body: { pad: 'y'.repeat(60_000) } })));
      assert.deepEqual(await pages(q, topic), ids);
    });

    it('4 partitions, 60 jobs that died in the same millisecond, those of partition 0 with 400 KB bodies, the others 2 KB', async () => {
      const topic = uniqueTopic('pages');
      const clock = new TestClock();
      const q = makeQueue(
        server.client(),
        { [topic]: { maxAttempts: 1, concurrency: 100 } },
        { clock, config: { partitions: 4, maxBodyBytes: 500_000 } },
      );
      const ids = Array.from({ length: 60 }, (_, i) => `job-${String(i).padStart(2, '0')}`);
      // partition 0's page stops at its third body while the others list on: the merge must not
      // list past that stop, or partition 0's next jobs would be skipped
      const big = (id: string) => partitionOf(topic, id, 4) === 0;
      assert.ok(ids.filter(big).length >= 5, 'partition 0 holds enough jobs to stop');
      await q.addMany(ids.map((id) => ({ topic, id, delay: 0, body: { pad: 'y'.repeat(big(id) ? 400_000 : 2000) } })));
      assert.deepEqual(await pages(q, topic), ids);
    });
  });
});
