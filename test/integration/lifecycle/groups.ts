/**
 * Groups kept in zsets: cancelling a whole group (also step by step, racing the sweeper and new
 * joins), leaving it by put or purge, and groups of more than 128 jobs in a partition.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { bucketState, firstChunk } from '../../support/group-layout';
import { listWholeGroup } from '../../support/queue';
import { HOUR, SEC, moveDueOnce, type SuiteHelpers, type SuiteTarget } from './shared';
import { groupChunkKey, groupKey, topicKeys, partitionOf, run, scripts as script } from '../../../lib/testing';

/** Declares the first tests of the describe 'groups, listings and versions' (its caller declares the describe). */
export function groups(target: SuiteTarget, h: SuiteHelpers): void {
  const { setup, claimOne, sweep } = h;

  it('cancels a whole group: delayed, ready and running jobs, not other groups; a job added afterwards runs', async () => {
    const { q, topic, clock } = setup({ concurrency: 100 });
    const ids = Array.from({ length: 30 }, (_, i) => `m-${String(i).padStart(2, '0')}`);
    for (const [i, id] of ids.entries())
      await q.add({ topic, id, delay: i < 10 ? 0 : 60 + i, group: 'meeting-1', body: { i } });
    await q.add({ topic, id: 'other', delay: 0, group: 'meeting-2' });
    await q.add({ topic, id: 'loose', delay: 0 });
    await sweep(q);
    // the ten due jobs of the group start, and the two others
    const claimed = await q.engine.claim(topic, 20);
    const running = claimed.filter((j) => ids.includes(j.id));
    assert.equal(running.length, 10, 'ten jobs of the group run');
    const listed = await listWholeGroup(q, topic, 'meeting-1', 7);
    assert.deepEqual(listed.map((j) => j.id).sort(), ids, 'the listing pages through the whole group, each job once');
    assert.ok(listed.every((j) => j.group === 'meeting-1'));

    const result = await q.cancelGroup(topic, 'meeting-1');
    const cancelled = (await listWholeGroup(q, topic, 'meeting-1', 100)).filter((j) => j.state === 'cancelled').length;
    assert.equal(cancelled, 30, 'every job of the group is cancelled');
    assert.equal(result.cancelled + result.running, 30);
    assert.equal(result.running, 10, 'the ten claimed jobs were running');
    for (const job of running)
      assert.equal(
        await q.engine.ack(topic, job.id, job),
        'cancelled',
        'a running attempt finishes, but its ack is dropped',
      );
    assert.equal((await q.get(topic, 'other'))?.state, 'running', 'another group is untouched');
    assert.equal((await q.get(topic, 'loose'))?.state, 'running', 'a job without a group is untouched');
    for (const job of claimed.filter((j) => !ids.includes(j.id)))
      assert.equal(await q.engine.ack(topic, job.id, job), 'done');

    clock.advance(HOUR);
    assert.equal((await sweep(q)).moved, 0, 'no job of the group falls due any more');
    await q.add({ topic, id: 'after', delay: 0, group: 'meeting-1' });
    await sweep(q);
    assert.deepEqual(
      (await q.engine.claim(topic, 10)).map((j) => j.id),
      ['after'],
      'a job added after the cancel runs',
    );
    assert.deepEqual(
      await q.cancelGroup(topic, 'meeting-1'),
      { cancelled: 0, running: 1 },
      'cancelling again finds only the new one',
    );
    assert.deepEqual(await q.listGroup(topic, 'nobody'), { jobs: [], next: null }, 'a group without jobs lists empty');
  });

  it('a job of the group that falls due while the cancel is under way does not start', async () => {
    const { q, topic, clock } = setup({ concurrency: 100 });
    const ids = Array.from({ length: 12 }, (_, i) => `due-${i}`);
    for (const id of ids) await q.add({ topic, id, delay: 5, group: 'g' });
    // the cancel's first step in every partition marks the group and cancels one job; the rest
    // wait for the next steps, as with a large group while the sweeper and fan-out are busy
    const steps = [];
    for (let p = 0; p < target.partitions; p++) {
      const k = topicKeys(p, topic, target.partitions);
      const keys = [
        k.jobs,
        k.bodies,
        k.delayed,
        k.running,
        k.done,
        groupKey(p, topic, 'g', target.partitions),
      ] as const;
      const [cancelled, running, done, chunk, cursor, mark, last] = await run(
        target.redis(),
        script.cancelGroup(keys, {
          clock: clock.now,
          group: 'g',
          mark: '',
          chunk: '',
          cursor: '-inf',
          last: '',
          limit: 1,
          maxBytes: 1 << 20,
          retentionMs: HOUR,
        }),
      );
      steps.push({ keys, cancelled, running, done, chunk, cursor, mark, last });
    }
    clock.advance(10 * SEC);
    assert.equal(
      (await sweep(q)).moved,
      ids.length - steps.reduce((n, s) => n + s.cancelled, 0),
      'the jobs not yet reached fall due',
    );
    assert.deepEqual(await q.engine.claim(topic, 100), [], 'none of them starts');
    const cancelledByClaim = (await Promise.all(ids.map((id) => q.get(topic, id)))).filter((j) =>
      j?.lastError?.startsWith('cancelled with its group'),
    );
    assert.equal(
      cancelledByClaim.length,
      ids.length - steps.reduce((n, s) => n + s.cancelled, 0),
      'the claim cancelled them, and says why',
    );
    // the cancel goes on to the end and counts them
    let total = 0;
    for (const step of steps) {
      total += step.cancelled;
      let { chunk, cursor, done } = step;
      while (done !== 1) {
        const reply = await run(
          target.redis(),
          script.cancelGroup(step.keys, {
            clock: clock.now,
            group: 'g',
            mark: step.mark,
            chunk,
            cursor,
            last: step.last,
            limit: 1,
            maxBytes: 1 << 20,
            retentionMs: HOUR,
          }),
        );
        total += reply[0];
        [, , done, chunk, cursor] = reply;
      }
    }
    assert.equal(total, ids.length, 'every job is counted once as cancelled');
    await q.add({ topic, id: 'later', delay: 0, group: 'g' });
    await sweep(q);
    assert.deepEqual(
      (await q.engine.claim(topic, 10)).map((j) => j.id),
      ['later'],
      'the mark is gone: new jobs of the group run',
    );
  });

  it('a put that moves a job to another group, and the purge of a finished job, take it out of the group', async () => {
    const { q, topic, clock } = setup({}, { retention: 60 });
    await q.add({ topic, id: 'mover', delay: 100, group: 'a' });
    await q.add({ topic, id: 'stayer', delay: 0, group: 'a' });
    await q.put(topic, 'mover', { delay: 100, group: 'b' });
    assert.deepEqual(
      (await q.listGroup(topic, 'a')).jobs.map((j) => j.id),
      ['stayer'],
    );
    assert.deepEqual(
      (await q.listGroup(topic, 'b')).jobs.map((j) => j.id),
      ['mover'],
    );
    const groupSize = async (group: string) => {
      let n = 0;
      for (let p = 0; p < target.partitions; p++)
        n += (await firstChunk(target.redis(), p, topic, group, target.partitions)).ids.length;
      return n;
    };
    assert.equal(await groupSize('a'), 1, 'the moved job left the old group (its bucket slot)');
    await sweep(q);
    const job = await claimOne(q, topic);
    await q.engine.ack(topic, job.id, job);
    clock.advance(61 * SEC);
    assert.equal((await sweep(q)).purged, 1);
    assert.equal(await groupSize('a'), 0, 'the purged job left its group: no key is left behind');
    assert.deepEqual((await q.listGroup(topic, 'a')).jobs, []);
  });

  it('a group of more than 128 jobs per partition is kept in zsets of at most 128 (listpacks, never a skiplist); list, put, cancel and purge go through all of them and leave no key behind', async () => {
    const { q, topic, clock } = setup({ concurrency: 10_000 }, { retention: 60 });
    const n = 300 * target.partitions;
    const ids = Array.from({ length: n }, (_, i) => `big-${String(i).padStart(5, '0')}`);
    for (let i = 0; i < n; i += 100) {
      const { outcomes } = await q.addMany(
        ids.slice(i, i + 100).map((id, j) => ({ topic, id, delay: 5 + i + j, group: 'big' })),
      );
      assert.ok(outcomes.every((o) => o.status === 'created'));
    }
    const redis = target.redis();
    /** The group's zsets in partition `p`: its key, then `<key>#1`, `<key>#2`, ... while they exist. */
    const zsets = async (p: number) => {
      const found: { key: string; size: number; encoding: string }[] = [];
      for (let c = 0; c < 64; c++) {
        const key = groupChunkKey(groupKey(p, topic, 'big', target.partitions), c);
        const size = await redis.zcard(key);
        if (size === 0) continue;
        found.push({ key, size, encoding: String(await redis.object('ENCODING', key)) });
      }
      return found;
    };
    let stored = 0;
    for (let p = 0; p < target.partitions; p++) {
      const found = await zsets(p);
      for (const z of found) {
        assert.ok(z.size <= 128, `${z.key} holds ${z.size} members, more than 128`);
        assert.equal(z.encoding, 'listpack', `${z.key} is a ${z.encoding}`);
      }
      assert.ok(
        found.length >= 2,
        `partition ${p}: ${found.length} zset(s) for ${ids.filter((id) => partitionOf(topic, id, target.partitions) === p).length} jobs`,
      );
      stored += found.reduce((sum, z) => sum + z.size, 0);
    }
    assert.equal(stored, n, 'every job of the group is a member of one of its zsets, once');

    const listed = await listWholeGroup(q, topic, 'big', 70);
    assert.equal(listed.length, n);
    assert.deepEqual(
      [...listed.map((j) => j.id)].sort(),
      ids,
      'the listing goes through every zset of the group, each job once',
    );
    for (let p = 0; p < target.partitions; p++) {
      const inP = listed.filter((j) => partitionOf(topic, j.id, target.partitions) === p).map((j) => j.id);
      assert.deepEqual(inP, [...inP].sort(), `partition ${p}: in the order the jobs joined`);
    }

    // a put moves the last job (in the newest zset) to another group; the first five start
    const moved = ids[n - 1]!;
    await q.put(topic, moved, { delay: 60, group: 'elsewhere' });
    assert.deepEqual(
      (await q.listGroup(topic, 'elsewhere')).jobs.map((j) => j.id),
      [moved],
    );
    clock.advance(9 * SEC);
    await sweep(q);
    const running = await q.engine.claim(topic, 100);
    assert.deepEqual(running.map((j) => j.id).sort(), ids.slice(0, 5));

    const result = await q.cancelGroup(topic, 'big');
    assert.deepEqual(
      result,
      { cancelled: n - 6, running: 5 },
      'every job of the group, in every zset, once; not the one that moved',
    );
    const after = await listWholeGroup(q, topic, 'big', 500);
    assert.equal(after.length, n - 1);
    assert.ok(after.every((j) => j.state === 'cancelled'));
    for (const job of running) assert.equal(await q.engine.ack(topic, job.id, job), 'cancelled');

    clock.advance(61 * SEC);
    let purged = 0;
    for (let i = 0; i < 100; i++) {
      const swept = await sweep(q);
      purged += swept.purged;
      if (swept.purged === 0 && !swept.more) break;
    }
    assert.equal(purged, n - 1, 'every cancelled job of the group is purged');
    for (let p = 0; p < target.partitions; p++) {
      assert.deepEqual(await zsets(p), [], `partition ${p}: no zset of the group is left behind`);
      const home = p === partitionOf(topic, moved, target.partitions);
      const jobsKey = topicKeys(p, topic, target.partitions).jobs;
      assert.equal(
        (await redis.hlen(jobsKey)) -
          (await redis.hexists(jobsKey, '#seq')) -
          (await redis.hexists(jobsKey, '#gbuckets')) -
          (await redis.hexists(jobsKey, '#tail')),
        home ? 1 : 0,
        `partition ${p}: nothing but the moved job, the version counter, the ready list's count and the small groups' bucket count in the jobs hash`,
      );
      assert.equal(
        (await bucketState(redis, p, topic, target.partitions)).count,
        home ? 1 : 0,
        `partition ${p}: one small group in a bucket, the moved job's`,
      );
    }
    await q.add({ topic, id: 'again', delay: 0, group: 'big' });
    assert.deepEqual(
      (await q.listGroup(topic, 'big')).jobs.map((j) => j.id),
      ['again'],
      'the group starts over',
    );
  });

  it('a job purged and added to its group again before it left the old zset is listed once; the leave takes out only the old member', async () => {
    const { q, topic, clock } = setup({}, { retention: 60 });
    // 130 jobs of one partition: 128 in the group's first zset, 2 in the second
    const ids: string[] = [];
    for (let i = 0; ids.length < 130; i++)
      if (partitionOf(topic, `re-${i}`, target.partitions) === 0) ids.push(`re-${i}`);
    await q.addMany(ids.slice(0, 100).map((id) => ({ topic, id, delay: 600, group: 'g' })));
    await q.addMany(ids.slice(100).map((id) => ({ topic, id, delay: 600, group: 'g' })));
    const base = groupKey(0, topic, 'g', target.partitions);
    const first = ids[0]!;
    assert.equal(await target.redis().zcard(base), 128);
    assert.equal(await target.redis().zcard(groupChunkKey(base, 1)), 2);
    // the first job is cancelled, and purged by a moveDue whose leave has not run yet
    await q.cancel(topic, first);
    clock.advance(61 * SEC);
    const k = topicKeys(0, topic, target.partitions);
    const reply = await moveDueOnce(target, topic, clock.now);
    assert.deepEqual(reply[9], ['g', first, 0], 'the purge names the group and the zset the job was in');
    // added again: it joins the newest zset, while its old member is still in the first
    await q.add({ topic, id: first, delay: 600, group: 'g' });
    assert.notEqual(await target.redis().zscore(base, first), null);
    assert.notEqual(await target.redis().zscore(groupChunkKey(base, 1), first), null);
    const listed = (await q.listGroup(topic, 'g', { limit: 500 })).jobs.map((j) => j.id);
    assert.equal(listed.filter((id) => id === first).length, 1, 'listed once, where it joined last');
    assert.equal(listed.at(-1), first);
    // the leave the sweeper would have run takes out the old member only
    assert.equal(
      await run(target.redis(), script.leaveGroup([k.jobs, base], { group: 'g', members: [{ id: first, chunk: 0 }] })),
      1,
    );
    assert.equal(await target.redis().zscore(base, first), null);
    assert.notEqual(await target.redis().zscore(groupChunkKey(base, 1), first), null, 'the job stays in the group');
    assert.deepEqual(await q.cancelGroup(topic, 'g'), { cancelled: 130, running: 0 });
  });

  it('a cancel under way leaves alone the jobs that join after its mark, even when the group emptied in between and starts over', async () => {
    const { q, topic, clock } = setup();
    const inP0 = (prefix: string, n: number) => {
      const ids: string[] = [];
      for (let i = 0; ids.length < n; i++)
        if (partitionOf(topic, `${prefix}-${i}`, target.partitions) === 0) ids.push(`${prefix}-${i}`);
      return ids;
    };
    const before = inP0('before', 3);
    for (const id of before) await q.add({ topic, id, delay: 60, group: 'r' });
    const k = topicKeys(0, topic, target.partitions);
    const keys = [k.jobs, k.bodies, k.delayed, k.running, k.done, groupKey(0, topic, 'r', target.partitions)] as const;
    // the cancel marks the group in partition 0 (a step of 0 members), then waits
    let [, , done, chunk, cursor, mark, last] = await run(
      target.redis(),
      script.cancelGroup(keys, {
        clock: clock.now,
        group: 'r',
        mark: '',
        chunk: '',
        cursor: '-inf',
        last: '',
        limit: 0,
        maxBytes: 1 << 20,
        retentionMs: HOUR,
      }),
    );
    // every job of the group leaves it (a put moves it), and new ones join the emptied group
    for (const id of before) await q.put(topic, id, { delay: 60, group: 'elsewhere' });
    assert.deepEqual((await q.listGroup(topic, 'r')).jobs, []);
    const after = inP0('after', 3);
    for (const id of after) await q.add({ topic, id, delay: 60, group: 'r' });
    let cancelled = 0;
    while (done !== 1) {
      const reply = await run(
        target.redis(),
        script.cancelGroup(keys, {
          clock: clock.now,
          group: 'r',
          mark,
          chunk,
          cursor,
          last,
          limit: 1,
          maxBytes: 1 << 20,
          retentionMs: HOUR,
        }),
      );
      cancelled += reply[0];
      [, , done, chunk, cursor, mark, last] = reply;
    }
    assert.equal(cancelled, 0, 'the cancel found none of the jobs that were in the group at its mark');
    for (const id of after)
      assert.equal((await q.get(topic, id))?.state, 'delayed', `${id} joined after the mark: it runs`);
  });
}
