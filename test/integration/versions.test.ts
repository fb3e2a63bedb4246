/**
 * Versions within one tick of the Redis clock (lua/includes/job.lua nextVersion): a version is the
 * clock in 20 µs ticks, or the job's last version + 1 when that is larger, and the jobs hash's
 * `#seq` holds only what runs ahead of the clock. A fixed clock (ms × 50 ticks) keeps every call
 * below in one tick, where the clock alone would give every write the same version: the job's own
 * last version, `#seq` and the record a delete or a put takes away must keep each version unique
 * and growing per job.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { makeQueue, rejects, TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';
import {
  OUTCOME,
  groupKey,
  partitionOf,
  topicKeys,
  INCLUDES,
  includeOrder,
  run,
  scripts as script,
} from '../../lib/testing';

/** The ticks of fixed clock `ms`: 20 µs since 2025-01-01 (lua/includes/clock.lua clockTicks). */
const ticksOf = (ms: number) => (ms - Date.UTC(2025, 0, 1)) * 50;
/** Ticks a version may run ahead of the clock before `#seq` holds it (lua/includes/job.lua AHEAD_TICKS). */
const AHEAD_TICKS = 50;
const HOUR = 3_600_000;

describe('versions within one tick of the clock', () => {
  const server = useRedisServer();

  const setup = (retention = 86_400) => {
    const redis = server.client();
    const clock = new TestClock();
    const topic = uniqueTopic('ver');
    const q = makeQueue(redis, { [topic]: {} }, { clock, config: { retention } });
    return { redis, clock, topic, q, k: topicKeys(0, topic, 1) };
  };

  it("a version is the fixed clock's ticks, and a write at a later tick costs no #seq", async () => {
    const { redis, clock, topic, q, k } = setup();
    const added = await q.add({ topic, id: 'j', delay: 60, body: 'one' });
    assert.equal(added.job.version, ticksOf(clock.now));
    clock.advance(1);
    const put = await q.put(topic, 'j', { delay: 60, body: 'two' });
    assert.equal(put.job.version, ticksOf(clock.now));
    assert.equal(await redis.hexists(k.jobs, '#seq'), 0, 'no version ran ahead of the clock: nothing written down');
  });

  it('a job deleted (retention 0) and made again within one tick gets a version larger than any its old record had', async () => {
    const { redis, clock, topic, q, k } = setup(0);
    const seen: number[] = [];
    seen.push((await q.add({ topic, id: 'j', delay: 0, body: 'one' })).job.version);
    seen.push((await q.put(topic, 'j', { delay: 0, body: 'two' })).job.version);
    await q.engine.sweep();
    const [claimed] = await q.engine.claim(topic, 1);
    assert.equal(claimed?.id, 'j');
    seen.push((await q.get(topic, 'j'))!.version);
    assert.deepEqual(await q.engine.start(topic, [claimed!]), [true]);
    seen.push((await q.get(topic, 'j'))!.version);
    for (let i = 1; i < seen.length; i++)
      assert.ok(seen[i]! > seen[i - 1]!, `each write of the job in one tick grows its version: ${seen.join(', ')}`);
    assert.equal(seen[0], ticksOf(clock.now));

    assert.equal(await q.engine.ack(topic, 'j', claimed!), 'done');
    assert.equal(await q.get(topic, 'j'), null, 'retention 0: the ack deleted the record');
    assert.equal(
      Number(await redis.hget(k.jobs, '#seq')),
      Math.max(...seen),
      "the deleted record's version, not below the clock, is written down",
    );

    const again = await q.add({ topic, id: 'j', delay: 60, body: 'three' });
    assert.equal(again.status, 'created');
    assert.ok(
      again.job.version > Math.max(...seen),
      `made again in the same tick: ${again.job.version} is above ${Math.max(...seen)}`,
    );
    await rejects(
      q.put(topic, 'j', { delay: 60, body: 'four' }, { ifMatch: { version: seen[1]! } }),
      412,
      'VERSION_MISMATCH',
    );

    // a cancel that deletes (retention 0), then the id again, still in the same tick
    const cancelled = await q.cancel(topic, 'j');
    assert.equal(cancelled.version, again.job.version, 'a cancel that deletes writes no version');
    const third = await q.add({ topic, id: 'j', delay: 60, body: 'five' });
    assert.ok(third.job.version > again.job.version, `${third.job.version} is above ${again.job.version}`);
    await rejects(
      q.put(topic, 'j', { delay: 60, body: 'six' }, { ifMatch: { version: again.job.version } }),
      412,
      'VERSION_MISMATCH',
    );
  });

  it('a cancelled job put again within one tick gets a version above the cancelled one', async () => {
    const { topic, q } = setup();
    const added = await q.add({ topic, id: 'j', delay: 60, body: 'one' });
    const cancelled = await q.cancel(topic, 'j');
    assert.ok(cancelled.version > added.job.version);
    const made = await q.put(topic, 'j', { delay: 60, body: 'two' });
    assert.equal(made.status, 'created');
    assert.ok(made.job.version > cancelled.version, `${made.job.version} is above ${cancelled.version}`);
  });

  it('a record written twice in one call gets two versions, the second larger; the next call goes on from it', async () => {
    const { redis, clock, topic, q, k } = setup();
    const job = (body: string) => ({
      topic,
      partition: 0,
      id: 'twice',
      when: { kind: 'd' as const, ms: 60_000 },
      body,
    });
    const [first, second] = script.addResults(
      await run(
        redis,
        script.addJobs([k.jobs, k.bodies, k.delayed, k.done, groupKey(0, topic, '', 1)], {
          clock: clock.now,
          mode: 'put',
          jobs: [job('"one"'), job('"two"')],
          maxBytes: 1 << 20,
        }),
      ),
    );
    assert.ok(
      first?.[0] === OUTCOME.CREATED && second?.[0] === OUTCOME.REPLACED,
      'one put creates the job, the next in the same call replaces it',
    );
    const v1 = first[3];
    const v2 = second[1][13];
    assert.equal(v1, ticksOf(clock.now));
    assert.equal(v2, v1 + 1);
    const got = await q.get(topic, 'twice');
    assert.deepEqual([got?.body, got?.version], ['two', v2]);
    const next = await q.put(topic, 'twice', { delay: 60, body: 'three' });
    assert.equal(next.job.version, v2 + 1, 'a later call in the same tick goes on from the job, not from the clock');
  });

  it('a job written more times in one tick than AHEAD_TICKS has its versions written down, so a delete and a re-add still go above them', async () => {
    const { redis, clock, topic, q, k } = setup(0);
    let last = (await q.add({ topic, id: 'busy', delay: 60, body: 0 })).job.version;
    for (let i = 1; i <= AHEAD_TICKS + 10; i++) {
      const v = (await q.put(topic, 'busy', { delay: 60, body: i })).job.version;
      assert.equal(v, last + 1);
      last = v;
    }
    assert.ok(last > ticksOf(clock.now) + AHEAD_TICKS);
    assert.equal(
      Number(await redis.hget(k.jobs, '#seq')),
      last,
      'a version more than AHEAD_TICKS ahead of the clock is written down',
    );
    await q.cancel(topic, 'busy');
    const again = await q.add({ topic, id: 'busy', delay: 60, body: 'again' });
    assert.ok(again.job.version > last, `${again.job.version} is above ${last}`);
    const other = await q.add({ topic, id: 'other', delay: 60, body: 'x' });
    assert.ok(other.job.version > last, 'a new job goes above #seq too');
  });

  it('a record written and deleted in one call (includes/job.lua store, save, remove), then made again in the same tick, gets a larger version', async () => {
    const { redis, clock, k } = setup();
    // the helpers of includes/job.lua, as a script runs them: a call that writes a record twice and deletes it, and one
    // that makes it again
    const lua = (body: string) => [...includeOrder(body).map((name) => INCLUDES[name]), body].join('\n');
    const make = `local now = Clock.clock(ARGV[1])
local h = { Codes.PENDING, false, now, now, 0, false, false, false, false, false, now, false, false, false, 0, 0, false, false }
Job.store(KEYS[1], KEYS[2], ARGV[2], h, '"x"', false)`;
    const [v1, v2] = (await redis.eval(
      lua(
        `--- @include "job"\n${make}\nlocal v1 = h[Job.H_VERSION]\nJob.save(KEYS[1], ARGV[2], h, '"x"')\nlocal v2 = h[Job.H_VERSION]\nJob.remove(KEYS[1], KEYS[2], ARGV[2], h)\nreturn { v1, v2 }`,
      ),
      2,
      k.jobs,
      k.bodies,
      clock.now,
      'r',
    )) as number[];
    assert.deepEqual([v1, v2], [ticksOf(clock.now), ticksOf(clock.now) + 1]);
    assert.equal(await redis.hexists(k.jobs, 'r'), 0);
    const v3 = (await redis.eval(
      lua(`--- @include "job"\n${make}\nreturn h[Job.H_VERSION]`),
      2,
      k.jobs,
      k.bodies,
      clock.now,
      'r',
    )) as number;
    assert.ok(v3 > v2!, `made again in the same tick: ${v3} is above ${v2}`);
  });

  it("a group cancel's mark within one tick: a job that joined before it does not start, one that joins after it is left alone", async () => {
    const { redis, clock, topic, q } = setup();
    const p = partitionOf(topic, 'before', 1);
    const k = topicKeys(p, topic, 1);
    await q.add({ topic, id: 'before', delay: 0, group: 'g' });
    await q.add({ topic, id: 'moved', delay: 0, group: 'elsewhere' });
    const keys = [k.jobs, k.bodies, k.delayed, k.running, k.done, groupKey(p, topic, 'g', 1)] as const;
    const [, , , , , mark] = await run(
      redis,
      script.cancelGroup(keys, {
        clock: clock.now,
        group: 'g',
        mark: '',
        chunk: '',
        cursor: '-inf',
        last: '',
        limit: 0,
        maxBytes: 1 << 20,
        retentionMs: HOUR,
      }),
    );
    assert.match(mark, /^\d+$/, 'the mark is plain decimal digits');
    await q.add({ topic, id: 'after', delay: 0, group: 'g' });
    await q.put(topic, 'moved', { delay: 0, group: 'g' }); // an existing job joins the group after the mark
    const before = (await q.get(topic, 'before'))!.version;
    const after = (await q.get(topic, 'after'))!.version;
    const moved = (await q.get(topic, 'moved'))!.version;
    assert.ok(
      before < Number(mark) && Number(mark) <= Math.min(after, moved),
      `before ${before} < mark ${mark} <= after ${after} and moved ${moved}, all in one tick`,
    );

    await q.engine.sweep();
    const claimed = await q.engine.claim(topic, 10);
    assert.deepEqual(claimed.map((j) => j.id).sort(), ['after', 'moved']);
    assert.equal(
      (await q.get(topic, 'before'))?.state,
      'cancelled',
      'the claim cancelled the job that joined before the mark',
    );
  });
});
