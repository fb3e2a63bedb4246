/**
 * Groups against a model: thousands of random adds, puts that move jobs between groups, cancels,
 * claims, acks, sweeps that purge, and group cancels, on a real redis-server with 2 partitions
 * and a fixed clock. After every step that can change a group, the listing of each group must be
 * exactly the model's members of it (each once, in its state); a group cancel must count what the
 * model says; and at the end, once every job of a group is purged, no zset of any group and no
 * group field or bucket is left. One group grows past 128 jobs per partition, so its jobs span
 * several zsets (see lua/includes/groups.lua) while they come and go; 60 small groups
 * keep a few jobs a partition, so their first chunk moves between a shared bucket and a zset
 * ("Small groups").
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { firstChunk } from '../support/group-layout';
import type { Queue } from '../support/queue';
import { listWholeGroup, makeQueue, TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';
import { topicKeys } from '../../lib/testing';

const SEC = 1000;
const RETENTION_S = 60;
// small groups (a few jobs a partition: their first chunk in a shared bucket, moved to a zset
// when a 4th joins); 'gwuw' and 'g2whj' share a bucket field (the first 4 bytes of their SHA-1)
const SMALL = ['gwuw', 'g2whj', ...Array.from({ length: 58 }, (_, i) => `s${i}`)];
const GROUPS = ['a', 'b', 'c', ...SMALL];

/** A small seeded PRNG (mulberry32): the same seed, the same run. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type ModelState = 'pending' | 'running' | 'done' | 'cancelled';
interface ModelJob {
  group: string | undefined;
  state: ModelState;
  /** When a done or cancelled job may be purged (ms on the test clock). */
  purgeAt?: number;
}

describe('groups against a model', () => {
  const redis = useRedisServer();

  it('3,000 random operations: listings, cancel counts and the keys left behind agree with the model', async () => {
    const seed = Number(process.env.GROUPS_MODEL_SEED ?? 20261123);
    const random = prng(seed);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const topic = uniqueTopic('gm');
    const partitions = 2;
    const clock = new TestClock();
    const q = makeQueue(
      redis.client(),
      { [topic]: { ttr: 86_400, maxAttempts: 3, concurrency: 10_000 } },
      { clock, config: { partitions, retention: RETENTION_S } },
    );
    // a running attempt never times out here (the clock moves about 2 h in all): the model has no retries
    const model = new Map<string, ModelJob>();
    const ids = Array.from({ length: 1200 }, (_, i) => `j-${i}`);
    // group a gets most jobs (several zsets per partition), b and c a few dozen, the small groups
    // a few each, some none
    const groupFor = () => {
      const r = random();
      return r < 0.7 ? 'a' : r < 0.76 ? 'b' : r < 0.82 ? 'c' : r < 0.96 ? pick(SMALL) : undefined;
    };
    const context = (step: number, what: string) => `seed ${seed}, step ${step} (${what})`;

    /** The highest zset number group a reached in each partition (the jobs hash's `#chunks:a`, 'low cur'). */
    const newestZset = Array.from({ length: partitions }, () => 0);
    /** How often a small group's first chunk was seen in its bucket, and in its zset, by the checks. */
    const smallForms = { bucket: 0, zset: 0 };
    /**
     * Checks the listings of groups a, b and c, of `also`, and of 8 small groups picked at random;
     * of every group when `all` (every 100th step, and at the end).
     */
    async function checkListings(
      step: number,
      what: string,
      also: readonly (string | undefined)[] = [],
      all = step % 100 === 0,
    ) {
      const checked = new Set<string>(all ? GROUPS : ['a', 'b', 'c', ...Array.from({ length: 8 }, () => pick(SMALL))]);
      for (const group of also) if (group) checked.add(group);
      for (let p = 0; p < partitions; p++) {
        const range = await redis.client().hget(topicKeys(p, topic, partitions).jobs, '#chunks:a');
        if (range) newestZset[p] = Math.max(newestZset[p]!, Number(range.split(' ')[1]));
        for (const group of SMALL) {
          if (!checked.has(group)) continue;
          const { form } = await firstChunk(redis.client(), p, topic, group, partitions);
          if (form !== 'none') smallForms[form] += 1;
        }
      }
      for (const group of checked) {
        const listed = await listWholeGroup(q, topic, group, 1 + Math.floor(random() * 150), 5000);
        const listedIds = listed.map((j) => j.id);
        assert.equal(
          new Set(listedIds).size,
          listedIds.length,
          `${context(step, what)}: group ${group} lists a job twice`,
        );
        const expected = [...model]
          .filter(([, m]) => m.group === group)
          .map(([id]) => id)
          .sort();
        assert.deepEqual([...listedIds].sort(), expected, `${context(step, what)}: group ${group}`);
        for (const job of listed) {
          const m = model.get(job.id)!;
          const state = m.state === 'pending' ? ['delayed', 'ready'] : [m.state];
          assert.ok(
            state.includes(job.state),
            `${context(step, what)}: ${job.id} is ${job.state}, the model says ${m.state}`,
          );
          assert.equal(job.group, group);
        }
      }
    }

    /** Sweeps until nothing is left to do now; the model drops the finished jobs past their retention. */
    async function sweepAll(q: Queue) {
      for (let i = 0; i < 1000; i++) if (!(await q.engine.sweep()).more) break;
      for (const [id, m] of model) if (m.purgeAt !== undefined && m.purgeAt <= clock.now) model.delete(id);
    }

    for (let step = 0; step < 3000; step++) {
      const r = random();
      if (r < 0.4) {
        const id = pick(ids);
        const group = groupFor();
        const outcome = await q.add({ topic, id, delay: 1 + Math.floor(random() * 100), ...(group ? { group } : {}) });
        if (model.has(id)) assert.equal(outcome.status, 'exists', context(step, `add ${id}`));
        else {
          assert.equal(outcome.status, 'created', context(step, `add ${id}`));
          model.set(id, { group, state: 'pending' });
        }
      } else if (r < 0.55) {
        const id = pick(ids);
        const group = groupFor();
        const before = model.get(id);
        const change = { delay: 1 + Math.floor(random() * 100), ...(group ? { group } : {}) };
        const outcome = await q.put(topic, id, change);
        if (before && (before.state === 'running' || before.state === 'done')) {
          assert.equal(outcome.status, 'finished', context(step, `put ${id} (${before.state})`));
        } else {
          assert.ok(
            outcome.status === 'created' || outcome.status === 'replaced',
            context(step, `put ${id}: ${outcome.status}`),
          );
          model.set(id, { group, state: 'pending' });
          if (group !== before?.group)
            await checkListings(step, `put ${id} from ${before?.group} to ${group}`, [before?.group, group]);
        }
      } else if (r < 0.65) {
        const id = pick(ids);
        const before = model.get(id);
        if (before && (before.state === 'pending' || before.state === 'running')) {
          await q.cancel(topic, id);
          model.set(id, { ...before, state: 'cancelled', purgeAt: clock.now + RETENTION_S * SEC });
        } else if (before?.state === 'cancelled') {
          await q.cancel(topic, id); // again is fine
        } else {
          await assert.rejects(q.cancel(topic, id), context(step, `cancel ${id}`));
        }
      } else if (r < 0.8) {
        clock.advance(Math.floor(random() * 30 * SEC));
        await sweepAll(q);
        await checkListings(step, 'sweep');
      } else if (r < 0.92) {
        for (const job of await q.engine.claim(topic, 20)) {
          const m = model.get(job.id);
          assert.equal(m?.state, 'pending', context(step, `claimed ${job.id}`));
          if (random() < 0.5) {
            assert.equal(await q.engine.ack(topic, job.id, job), 'done');
            model.set(job.id, { ...m!, state: 'done', purgeAt: clock.now + RETENTION_S * SEC });
          } else {
            model.set(job.id, { ...m!, state: 'running' });
          }
        }
      } else if (r < 0.96) {
        const group = random() < 0.5 ? pick(['a', 'b', 'c']) : pick(SMALL);
        const members = [...model].filter(([, m]) => m.group === group);
        const result = await q.cancelGroup(topic, group);
        const expected = {
          cancelled: members.filter(([, m]) => m.state === 'pending').length,
          running: members.filter(([, m]) => m.state === 'running').length,
        };
        assert.deepEqual(result, expected, context(step, `cancelGroup ${group}`));
        for (const [id, m] of members) {
          if (m.state === 'pending' || m.state === 'running')
            model.set(id, { ...m, state: 'cancelled', purgeAt: clock.now + RETENTION_S * SEC });
        }
        await checkListings(step, `cancelGroup ${group}`, [group]);
      } else {
        await checkListings(step, 'check');
      }
    }

    // the small groups were seen in both forms
    assert.ok(
      smallForms.bucket > 0 && smallForms.zset > 0,
      `small groups seen in a bucket ${smallForms.bucket} times, in a zset ${smallForms.zset} times`,
    );
    // the big group spans several zsets in each partition, each a listpack of at most 128
    const client = redis.client();
    const buckets = async () => {
      const keys: string[] = [];
      for (let p = 0; p < partitions; p++) {
        let cursor = '0';
        do {
          const [next, batch] = await client.scan(
            cursor,
            'MATCH',
            `${topicKeys(p, topic, partitions).jobs}#gb*`,
            'COUNT',
            1000,
          );
          keys.push(...batch);
          cursor = next;
        } while (cursor !== '0');
      }
      return keys;
    };
    for (const key of await buckets()) {
      assert.ok((await client.hlen(key)) <= 128, key);
      assert.equal(await client.object('ENCODING', key), 'listpack', key);
    }
    const groupZsets = async () => {
      const keys: string[] = [];
      let cursor = '0';
      do {
        const [next, batch] = await client.scan(cursor, 'MATCH', `dq:{p*}:group:${topic}:*`, 'COUNT', 1000);
        keys.push(...batch);
        cursor = next;
      } while (cursor !== '0');
      return keys;
    };
    const fieldsLeft = async () => {
      const fields: string[] = [];
      for (let p = 0; p < partitions; p++) {
        for (const field of await client.hkeys(topicKeys(p, topic, partitions).jobs))
          if (field.startsWith('#') && field !== '#seq' && field !== '#tail') fields.push(`${p}:${field}`);
      }
      return fields;
    };
    const zsets = await groupZsets();
    for (const key of zsets) {
      assert.ok((await client.zcard(key)) <= 128, key);
      assert.equal(await client.object('ENCODING', key), 'listpack', key);
    }
    for (let p = 0; p < partitions; p++)
      assert.ok(
        newestZset[p]! >= 2,
        `partition ${p}: group a went past its first zsets (newest seen: ${newestZset[p]})`,
      );

    // the end: every group cancelled, the running attempts acked (dropped), everything purged
    for (const group of GROUPS) await q.cancelGroup(topic, group);
    for (const [id, m] of model)
      if (m.group && (m.state === 'pending' || m.state === 'running'))
        model.set(id, { ...m, state: 'cancelled', purgeAt: clock.now + RETENTION_S * SEC });
    await checkListings(3000, 'the final cancels', [], true);
    clock.advance((RETENTION_S + 1) * SEC);
    await sweepAll(q);
    for (const group of GROUPS) assert.deepEqual((await q.listGroup(topic, group)).jobs, [], `group ${group} is empty`);
    assert.deepEqual(await groupZsets(), [], 'no zset of any group is left');
    assert.deepEqual(await buckets(), [], 'no bucket of small groups is left');
    assert.deepEqual(await fieldsLeft(), [], 'no #chunks:, #cancel: or #gbuckets field is left');
  });
});
