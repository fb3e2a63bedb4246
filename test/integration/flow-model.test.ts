/**
 * Flow control under random operations, against a real redis-server: adds with random keys,
 * sweeps, claims, starts, acks, failures, ttr expiries, cancels, replacements under another key,
 * reschedules, redrives, releases, key pauses and pinned limits in a random order (a seeded
 * generator: a failure prints its seed). After every step the keys' state must be true: each key's
 * running count equals its jobs in the running zset, no claim takes a key past its concurrency or
 * the topic past its cap, the ring holds each key at most once, the lanes' count matches their
 * ids, and every member of the delayed zset is a delayed job's, carrying that job's key. At the end, with every pause
 * lifted, every job finishes and no key's state is left behind (no ghost slots, nothing stuck).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import type { ClaimedJob } from '../../lib/engine';
import { makeQueue, TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';

const W = { name: 'model', scope: 'write', topics: null } as const;
const KEYS = ['a', 'b', 'c', 'd', ''];
const PER_KEY = 2;
const CAP = 5;

/** A small seeded generator (mulberry32), so a failing run can be replayed from its seed. */
function generator(seed: number): () => number {
  let t = seed >>> 0;
  return () => {
    t = (t + 0x6d2b79f5) >>> 0;
    let r = Math.imul(t ^ (t >>> 15), 1 | t);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

describe('flow control: random operations keep every key true', () => {
  const redis = useRedisServer();

  // seeds 7-12 also pace each key (2 a second, a burst of 2) and claim with start, as a handler does
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]) {
    const paced = seed > 6;
    it(`seed ${seed}${paced ? ', paced' : ''}`, async () => {
      const rand = generator(seed);
      const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
      const topic = uniqueTopic('flow-model');
      const clock = new TestClock();
      const r: Redis = redis.client();
      const flow = paced ? { concurrency: PER_KEY, rate: { count: 2, per: 1, burst: 2 } } : { concurrency: PER_KEY };
      const q = makeQueue(r, { [topic]: { concurrency: CAP, maxAttempts: 3, ttr: 5, backoff: '1s', flow } }, { clock });
      const jobs = `dq:{f:${topic}}:jobs:${topic}`;
      const limits = new Map<string, number>(); // pinned concurrency per key (only raised, so a claim's bound holds)
      const paused = new Set<string>();
      let claimed: ClaimedJob[] = [];
      const started: ClaimedJob[] = [];
      let added = 0;

      const check = async (step: string) => {
        const running = await r.zrange(`dq:{f:${topic}}:running:${topic}`, 0, -1);
        assert.ok(running.length <= CAP, `${step}: ${running.length} running over the cap ${CAP}`);
        const byKey = new Map<string, number>();
        for (const id of running) {
          const key = (await q.get(topic, id))!.key!;
          byKey.set(key, (byKey.get(key) ?? 0) + 1);
        }
        let lanes = 0;
        for (const key of KEYS) {
          const state = await q.engine.flowKey(topic, key);
          assert.equal(
            state.running,
            byKey.get(key) ?? 0,
            `${step}: key '${key}' counts ${state.running}, the running zset holds ${byKey.get(key) ?? 0}`,
          );
          lanes += state.ready;
        }
        assert.equal(Number((await r.hget(`${jobs}#flow`, '#ready')) ?? 0), lanes, `${step}: the lanes' count`);
        const ring = await r.lrange(`${jobs}#lanes`, 0, -1);
        assert.equal(new Set(ring).size, ring.length, `${step}: a key twice in the ring: ${ring.join(',')}`);
        // the sweep routes a due job by the key its member carries: none stale, none mislabelled
        const members = await r.zrange(`dq:{f:${topic}}:delayed:${topic}`, 0, -1);
        const delayed = members.map((m) => m.split(' ')[0]!);
        assert.equal(
          new Set(delayed).size,
          delayed.length,
          `${step}: a job twice in the delayed zset: ${members.join(',')}`,
        );
        for (const [i, member] of members.entries()) {
          const job = await q.get(topic, delayed[i]!);
          assert.equal(job?.state, 'delayed', `${step}: member '${member}' of a job ${job?.state ?? 'gone'}`);
          assert.equal(
            member,
            job.key ? `${job.id} ${job.key}` : job.id,
            `${step}: the member of ${job.id}, key '${job.key}'`,
          );
        }
        return byKey;
      };

      for (let step = 0; step < 300; step++) {
        const op = rand();
        let name: string;
        if (op < 0.25) {
          name = 'add';
          const n = 1 + Math.floor(rand() * 4);
          const batch = Array.from({ length: n }, () => ({
            topic,
            id: `j${added++}`,
            delay: pick([0, 0, 1]),
            key: pick(KEYS),
          }));
          await q.addMany(batch, W);
        } else if (op < 0.35) {
          name = 'sweep';
          await q.engine.sweep();
        } else if (op < 0.5) {
          name = 'claim';
          const before = await check('before claim');
          const withStart = paced && rand() < 0.5;
          const got = withStart
            ? await q.engine.claimStarted(topic, 1 + Math.floor(rand() * 6))
            : await q.engine.claim(topic, 1 + Math.floor(rand() * 6));
          const after = await check('claim');
          for (const [key, n] of after) {
            const limit = Math.max(limits.get(key) ?? PER_KEY, before.get(key) ?? 0);
            assert.ok(n <= limit, `claim took key '${key}' to ${n}, over ${limit}`);
          }
          for (const j of got)
            assert.ok(!paused.has((await q.get(topic, j.id))!.key!), `claimed ${j.id} of a paused key`);
          if (withStart) started.push(...got);
          else claimed.push(...got);
        } else if (op < 0.6 && claimed.length > 0) {
          name = 'start';
          const live = await q.engine.start(topic, claimed);
          started.push(...claimed.filter((_, i) => live[i]));
          claimed = [];
        } else if (op < 0.72 && started.length > 0) {
          name = 'ack or fail';
          const j = started.splice(Math.floor(rand() * started.length), 1)[0]!;
          if (rand() < 0.7) await q.engine.ack(topic, j.id, j);
          else await q.engine.fail(topic, j.id, j, 'boom');
        } else if (op < 0.77 && claimed.length > 0) {
          name = 'release';
          const j = claimed.splice(Math.floor(rand() * claimed.length), 1)[0]!;
          await q.engine.release([j], 'model');
        } else if (op < 0.82 && added > 0) {
          const change = rand();
          const id = `j${Math.floor(rand() * added)}`;
          if (change < 0.4) {
            name = 'cancel';
            await q.cancel(topic, id, { by: 'model' }).catch(() => undefined); // 404, 409: fine
          } else if (change < 0.7) {
            name = 'replace under a key';
            const key = pick(KEYS);
            await q.put(
              topic,
              id,
              { delay: pick([0, 1]), body: { n: step }, ...(key ? { key } : {}) },
              { by: 'model' },
            ); // refused when finished: fine
          } else if (change < 0.85) {
            name = 'reschedule';
            await q.reschedule(topic, id, { delay: pick([0, 1]) }).catch(() => undefined); // 404, 409: fine
          } else {
            name = 'redrive';
            await q.redrive(topic, { count: 5 }, 'model');
          }
        } else if (op < 0.87) {
          name = 'clock';
          clock.advance(pick([100, 1000, 6000]));
        } else if (op < 0.93) {
          name = 'pause or resume a key';
          const key = pick(KEYS);
          const pause = !paused.has(key);
          await q.engine.setFlowKey(topic, key, { paused: pause });
          if (pause) paused.add(key);
          else paused.delete(key);
        } else {
          name = "raise a key's limit";
          const key = pick(KEYS);
          const limit = (limits.get(key) ?? PER_KEY) + 1;
          limits.set(key, limit);
          await q.engine.setFlowKey(topic, key, { concurrency: limit });
        }
        await check(`step ${step} (${name})`);
      }

      // every pause lifted, every job finishes: none is stuck, no key's state is left
      for (const key of paused) await q.engine.setFlowKey(topic, key, { paused: false });
      for (let round = 0; round < 200; round++) {
        clock.advance(6000);
        await q.engine.sweep();
        const got = await q.engine.claimStarted(topic, 50);
        for (const j of got) await q.engine.ack(topic, j.id, j);
        const counts = await q.engine.counts(topic);
        if (counts.delayed + counts.ready + counts.running === 0) break;
      }
      const counts = await q.engine.counts(topic);
      assert.deepEqual([counts.delayed, counts.ready, counts.running], [0, 0, 0], 'every job finished');
      for (let i = 0; i < added; i++) {
        const job = await q.get(topic, `j${i}`);
        assert.ok(!job || ['done', 'dead', 'cancelled'].includes(job.state), `j${i} ended: ${job?.state}`);
      }
      clock.advance(10_000);
      await q.engine.sweep();
      assert.deepEqual((await r.hkeys(`${jobs}#flow`)).sort(), ['#dict', '#ready'], 'no key state left');
      assert.equal(await r.llen(`${jobs}#lanes`), 0);
      assert.equal(await r.zcard(`${jobs}#fwait`), 0);
    });
  }
});
