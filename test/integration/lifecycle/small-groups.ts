/**
 * Small groups: at most 3 jobs in a partition are slots in a bucket shared with other groups;
 * the move to the group's zset, gaps, cancels, bucket splits, hash collisions, late leaves.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { bucketField, bucketSlots, bucketState, firstChunk } from '../../support/group-layout';
import { SEC, moveDueOnce, type SuiteHelpers, type SuiteTarget } from './shared';
import { groupBucketKey, groupKey, topicKeys, partitionOf, run, scripts as script } from '../../../lib/testing';

/**
 * Declares the small-group tests of the describe 'groups, listings and versions' (its caller declares the describe).
 */
export function smallGroups(target: SuiteTarget, h: SuiteHelpers): void {
  const { setup, claimOne, sweep } = h;

  /** `n` ids starting with `prefix` that fall in partition 0 of the suite's partitions. */
  const inPartition0 = (topic: string, prefix: string, n: number) => {
    const ids: string[] = [];
    for (let i = 0; ids.length < n; i++)
      if (partitionOf(topic, `${prefix}-${i}`, target.partitions) === 0) ids.push(`${prefix}-${i}`);
    return ids;
  };

  /** Every bucket of small groups of `topic` in partition 0, with its fields and encoding. */
  const bucketsOf = async (topic: string) => {
    const { level, split, count } = await bucketState(target.redis(), 0, topic, target.partitions);
    const found: { key: string; fields: number; encoding: string }[] = [];
    for (let b = 0; b < 2 ** level + split; b++) {
      const key = groupBucketKey(topicKeys(0, topic, target.partitions).jobs, b);
      const fields = await target.redis().hlen(key);
      if (fields > 0) found.push({ key, fields, encoding: String(await target.redis().object('ENCODING', key)) });
    }
    return { level, split, count, found };
  };

  it('a group of at most 3 jobs in a partition has no key of its own: its jobs are slots in a bucket shared with other small groups; a 4th job moves them to the group zset at their places, and a listing under way carries on', async () => {
    const { q, topic } = setup();
    const redis = target.redis();
    const ids = inPartition0(topic, 'sm', 4);
    for (const id of ids.slice(0, 3)) await q.add({ topic, id, delay: 600, group: 'small' });
    assert.deepEqual(await firstChunk(redis, 0, topic, 'small', target.partitions), {
      form: 'bucket',
      ids: ids.slice(0, 3),
    });
    assert.equal(await redis.exists(groupKey(0, topic, 'small', target.partitions)), 0, 'no key of its own');
    assert.deepEqual(
      (await q.listGroup(topic, 'small')).jobs.map((j) => j.id),
      ids.slice(0, 3),
    );

    // a listing reads the first job; then a 4th job joins, and the group moves to its zset
    const first = await q.listGroup(topic, 'small', { limit: 1 });
    assert.deepEqual(
      first.jobs.map((j) => j.id),
      [ids[0]],
    );
    await q.add({ topic, id: ids[3]!, delay: 600, group: 'small' });
    assert.deepEqual(await redis.zrange(groupKey(0, topic, 'small', target.partitions), 0, -1, 'WITHSCORES'), [
      ids[0],
      '1',
      ids[1],
      '2',
      ids[2],
      '3',
      ids[3],
      '4',
    ]);
    assert.deepEqual(await bucketSlots(redis, 0, topic, 'small', target.partitions), [], 'its bucket field is gone');
    assert.equal((await bucketState(redis, 0, topic, target.partitions)).count, 0, 'and counted out');
    const rest: string[] = [];
    for (let cursor = first.next; cursor !== null;) {
      const page = await q.listGroup(topic, 'small', { limit: 1, cursor });
      rest.push(...page.jobs.map((j) => j.id));
      cursor = page.next;
    }
    assert.deepEqual(rest, ids.slice(1), 'the listing goes on after its first job: each job once, in order');
  });

  it('a small group keeps the places of its jobs when one leaves: the slot stays empty, later jobs come after it, and the move to the zset keeps the gap', async () => {
    const { q, topic } = setup();
    const redis = target.redis();
    const [a, b, c, d] = inPartition0(topic, 'gap', 4) as [string, string, string, string];
    await q.add({ topic, id: a, delay: 600, group: 'g' });
    await q.add({ topic, id: b, delay: 600, group: 'g' });
    await q.put(topic, a, { delay: 600, group: 'elsewhere' });
    assert.deepEqual(
      await bucketSlots(redis, 0, topic, 'g', target.partitions),
      ['', b],
      'the moved job left its slot empty',
    );
    await q.add({ topic, id: c, delay: 600, group: 'g' });
    assert.deepEqual(await bucketSlots(redis, 0, topic, 'g', target.partitions), ['', b, c]);
    assert.deepEqual(
      (await q.listGroup(topic, 'g')).jobs.map((j) => j.id),
      [b, c],
    );
    await q.add({ topic, id: d, delay: 600, group: 'g' });
    assert.deepEqual(await redis.zrange(groupKey(0, topic, 'g', target.partitions), 0, -1, 'WITHSCORES'), [
      b,
      '2',
      c,
      '3',
      d,
      '4',
    ]);
    assert.deepEqual(
      (await q.listGroup(topic, 'g')).jobs.map((j) => j.id),
      [b, c, d],
    );
    assert.deepEqual(
      (await q.listGroup(topic, 'elsewhere')).jobs.map((j) => j.id),
      [a],
    );
  });

  it('a cancel of a small group cancels the jobs in its bucket, due or not, and none starts; jobs that join after it run; purged, the group leaves no bucket and no count behind', async () => {
    const { q, topic, clock } = setup({}, { retention: 60 });
    const redis = target.redis();
    const [due1, due2, later, other, after] = inPartition0(topic, 'sc', 5) as [string, string, string, string, string];
    await q.add({ topic, id: due1, delay: 0, group: 'sg' });
    await q.add({ topic, id: due2, delay: 0, group: 'sg' });
    await q.add({ topic, id: later, delay: 600, group: 'sg' });
    await q.add({ topic, id: other, delay: 600, group: 'og' });
    await sweep(q);
    assert.equal((await firstChunk(redis, 0, topic, 'sg', target.partitions)).form, 'bucket');
    assert.deepEqual(await q.cancelGroup(topic, 'sg'), { cancelled: 3, running: 0 });
    assert.deepEqual(await q.engine.claim(topic, 10), [], 'no job of the cancelled group starts');
    assert.equal((await q.get(topic, other))?.state, 'delayed', 'another small group is left alone');
    await q.add({ topic, id: after, delay: 0, group: 'sg' });
    await sweep(q);
    const job = await claimOne(q, topic);
    assert.equal(job.id, after, 'a job that joined after the cancel runs');
    assert.equal(await q.engine.ack(topic, job.id, job), 'done');
    assert.deepEqual(
      (await q.listGroup(topic, 'sg')).jobs.map((j) => [j.id, j.state]),
      [
        [due1, 'cancelled'],
        [due2, 'cancelled'],
        [later, 'cancelled'],
        [after, 'done'],
      ],
    );
    assert.deepEqual(await q.cancelGroup(topic, 'og'), { cancelled: 1, running: 0 });
    clock.advance(61 * SEC);
    let purged = 0;
    for (let i = 0; i < 10; i++) {
      const swept = await sweep(q);
      purged += swept.purged;
      if (!swept.more) break;
    }
    assert.equal(purged, 5);
    for (const group of ['sg', 'og']) assert.deepEqual((await q.listGroup(topic, group)).jobs, [], group);
    assert.deepEqual(await bucketsOf(topic), { level: 0, split: 0, count: 0, found: [] }, 'no bucket, no count');
    assert.equal(await redis.exists(groupKey(0, topic, 'sg', target.partitions)), 0, 'no zset');
  });

  it('buckets split as small groups come, and stay listpacks; every group lists its own jobs; purged, nothing is left', async () => {
    const { q, topic, clock } = setup({}, { retention: 60 });
    const ids = inPartition0(topic, 'sp', 600);
    const groupOf = (i: number) => `m-${Math.floor(i / 2)}`;
    for (let i = 0; i < ids.length; i += 2) {
      const { outcomes } = await q.addMany(
        [0, 1].map((j) => ({ topic, id: ids[i + j]!, delay: 600, group: groupOf(i) })),
      );
      assert.ok(outcomes.every((o) => o.status === 'created'));
    }
    const buckets = await bucketsOf(topic);
    assert.equal(buckets.count, 300);
    assert.ok(2 ** buckets.level + buckets.split >= 4, `300 groups in ${2 ** buckets.level + buckets.split} bucket(s)`);
    assert.equal(
      buckets.found.reduce((sum, b) => sum + b.fields, 0),
      300,
      'every group in one bucket, once',
    );
    for (const b of buckets.found) {
      assert.ok(b.fields < 256, `${b.key} holds ${b.fields} groups`);
      assert.equal(b.encoding, 'listpack', b.key);
    }
    for (let i = 0; i < ids.length; i += 2) {
      assert.deepEqual(
        (await q.listGroup(topic, groupOf(i))).jobs.map((j) => j.id),
        [ids[i], ids[i + 1]],
        groupOf(i),
      );
    }
    for (const id of ids) await q.cancel(topic, id);
    clock.advance(61 * SEC);
    for (let i = 0; i < 100; i++) if (!(await sweep(q)).more) break;
    assert.deepEqual(await bucketsOf(topic), { level: 0, split: 0, count: 0, found: [] }, 'no bucket, no count');
  });

  it('buckets stay listpacks at every fill, not only when a round of splits ends: after every 50 groups no bucket holds 256 groups, half of hash-max-listpack-entries, and a bucket whose turn to split has not come is no exception', async () => {
    // linear hashing: a bucket not yet split this round holds twice the groups of one that was
    // (about 2 * 96), so the split rule must keep that under Redis's hash-max-listpack-entries
    // (512 by default), or the fullest buckets turn into hashtables (several times the bytes), for good
    const { q, topic } = setup();
    const ids = inPartition0(topic, 'lf', 1200);
    let most = 0;
    for (let i = 0; i < ids.length; i += 50) {
      const { outcomes } = await q.addMany(
        ids.slice(i, i + 50).map((id, j) => ({ topic, id, delay: 600, group: `f-${i + j}` })),
      );
      assert.ok(outcomes.every((o) => o.status === 'created'));
      const buckets = await bucketsOf(topic);
      assert.equal(buckets.count, i + 50);
      for (const b of buckets.found) {
        most = Math.max(most, b.fields);
        assert.ok(b.fields < 256, `${i + 50} groups in ${buckets.found.length} buckets: ${b.key} holds ${b.fields}`);
        assert.equal(b.encoding, 'listpack', `${i + 50} groups: ${b.key} (${b.fields} groups)`);
      }
    }
    assert.ok(most > 128, `the buckets fill past the 96 a bucket holds on average (the fullest held ${most} groups)`);
  });

  it('a bucket that went past the listpack limit anyway is a listpack again once it splits', async () => {
    const { q, topic } = setup();
    const redis = target.redis();
    const ids = inPartition0(topic, 'lh', 300);
    await q.add({ topic, id: ids[0]!, delay: 600, group: 'h-0' });
    const bucket = groupBucketKey(topicKeys(0, topic, target.partitions).jobs, 0);
    // a value longer than hash-max-listpack-value turns the hash into a hashtable, for good
    await redis.hset(bucket, 'x', 'x'.repeat(100));
    await redis.hdel(bucket, 'x');
    assert.equal(await redis.object('ENCODING', bucket), 'hashtable');
    let added = 1;
    while ((await bucketsOf(topic)).found.length < 2) {
      assert.ok(added < ids.length, `${added} groups and still one bucket`);
      await q.add({ topic, id: ids[added]!, delay: 600, group: `h-${added}` });
      added++;
    }
    const buckets = await bucketsOf(topic);
    assert.deepEqual(
      buckets.found.map((b) => b.encoding),
      ['listpack', 'listpack'],
      `split at ${added} groups`,
    );
    assert.equal(buckets.count, added);
    for (let i = 0; i < added; i++)
      assert.deepEqual(
        (await q.listGroup(topic, `h-${i}`)).jobs.map((j) => j.id),
        [ids[i]],
      );
  });

  it('two small groups whose names hash alike share a bucket field: the second to come goes to its zset; each lists, moves and cancels only its own jobs', async () => {
    // 'gwuw' and 'g2whj': the same first 4 bytes of SHA-1 (9356a5fc)
    const { q, topic } = setup();
    const redis = target.redis();
    assert.deepEqual(bucketField('gwuw').field, bucketField('g2whj').field);
    const [a1, a2, b1, b2] = inPartition0(topic, 'hc', 4) as [string, string, string, string];
    await q.add({ topic, id: a1, delay: 600, group: 'gwuw' });
    await q.add({ topic, id: a2, delay: 600, group: 'gwuw' });
    await q.add({ topic, id: b1, delay: 600, group: 'g2whj' });
    assert.deepEqual(await firstChunk(redis, 0, topic, 'gwuw', target.partitions), { form: 'bucket', ids: [a1, a2] });
    assert.deepEqual(await firstChunk(redis, 0, topic, 'g2whj', target.partitions), { form: 'zset', ids: [b1] });
    assert.deepEqual(
      (await q.listGroup(topic, 'gwuw')).jobs.map((j) => j.id),
      [a1, a2],
    );
    assert.deepEqual(
      (await q.listGroup(topic, 'g2whj')).jobs.map((j) => j.id),
      [b1],
    );
    // a job of the bucket group moves to the zset group: its slot empties
    await q.put(topic, a2, { delay: 600, group: 'g2whj' });
    assert.deepEqual(await bucketSlots(redis, 0, topic, 'gwuw', target.partitions), [a1, '']);
    assert.deepEqual(
      (await q.listGroup(topic, 'gwuw')).jobs.map((j) => j.id),
      [a1],
    );
    assert.deepEqual(
      (await q.listGroup(topic, 'g2whj')).jobs.map((j) => j.id),
      [b1, a2],
    );
    // a job of the zset group moves to the bucket group: it takes a slot, which the leave from
    // the zset group leaves alone
    await q.put(topic, b1, { delay: 600, group: 'gwuw' });
    assert.deepEqual(await bucketSlots(redis, 0, topic, 'gwuw', target.partitions), [a1, '', b1]);
    assert.deepEqual(
      (await q.listGroup(topic, 'gwuw')).jobs.map((j) => j.id),
      [a1, b1],
    );
    await q.add({ topic, id: b2, delay: 600, group: 'g2whj' });
    assert.deepEqual(
      (await q.listGroup(topic, 'g2whj')).jobs.map((j) => j.id),
      [a2, b2],
    );
    assert.deepEqual(await q.cancelGroup(topic, 'gwuw'), { cancelled: 2, running: 0 });
    assert.equal((await q.get(topic, a2))?.state, 'delayed');
    assert.equal((await q.get(topic, b2))?.state, 'delayed');
    assert.deepEqual(await q.cancelGroup(topic, 'g2whj'), { cancelled: 2, running: 0 });
    assert.deepEqual(
      (await q.listGroup(topic, 'gwuw')).jobs.map((j) => [j.id, j.state]),
      [
        [a1, 'cancelled'],
        [b1, 'cancelled'],
      ],
    );
  });

  it('two small groups whose names hash alike, both kept in one bucket field: the next job of either moves its group whole to its zset, so the group lists and cancels every job', async () => {
    // a job of the bucket group 'gwuw' moves to 'g2whj', which has no zset: it keeps its slot,
    // now 'g2whj''s, beside a job of 'gwuw'. The next join of 'gwuw' cannot append to a field
    // holding another group's slots; it goes to the group's zset and must take the group's
    // slots along, or the job left in the bucket is seen by no list and no cancel.
    const { q, topic, clock } = setup();
    const redis = target.redis();
    const [a1, a2, a3, b2] = inPartition0(topic, 'hm', 4) as [string, string, string, string];
    await q.add({ topic, id: a1, delay: 600, group: 'gwuw' });
    await q.add({ topic, id: a2, delay: 1, group: 'gwuw' });
    await q.put(topic, a1, { delay: 600, group: 'g2whj' });
    assert.deepEqual(
      await bucketSlots(redis, 0, topic, 'gwuw', target.partitions),
      [a1, a2],
      "the moved job's slot is now the other group's",
    );
    assert.deepEqual(
      (await q.listGroup(topic, 'gwuw')).jobs.map((j) => j.id),
      [a2],
    );
    assert.deepEqual(
      (await q.listGroup(topic, 'g2whj')).jobs.map((j) => j.id),
      [a1],
    );
    await q.add({ topic, id: a3, delay: 600, group: 'gwuw' });
    await q.add({ topic, id: b2, delay: 600, group: 'g2whj' });
    assert.deepEqual(
      (await q.listGroup(topic, 'gwuw')).jobs.map((j) => j.id),
      [a2, a3],
    );
    assert.deepEqual(
      (await q.listGroup(topic, 'g2whj')).jobs.map((j) => j.id),
      [a1, b2],
    );
    assert.deepEqual(await firstChunk(redis, 0, topic, 'gwuw', target.partitions), { form: 'zset', ids: [a2, a3] });
    assert.deepEqual(
      await firstChunk(redis, 0, topic, 'g2whj', target.partitions),
      { form: 'bucket', ids: [a1, b2] },
      "the field is the other group's alone again: its job joins it there",
    );
    assert.deepEqual(await q.cancelGroup(topic, 'gwuw'), { cancelled: 2, running: 0 });
    clock.advance(2 * SEC);
    await sweep(q);
    assert.deepEqual(await q.engine.claim(topic, 10), [], 'no job of the cancelled group starts');
    assert.equal((await q.get(topic, a2))?.state, 'cancelled');
    assert.deepEqual(await q.cancelGroup(topic, 'g2whj'), { cancelled: 2, running: 0 });
  });

  it('a job of a small group purged and added to it again before its leave ran keeps one slot; a slot whose job is gone is emptied by the next join', async () => {
    const { q, topic, clock } = setup({}, { retention: 60 });
    const redis = target.redis();
    const [x, y, z] = inPartition0(topic, 'st', 3) as [string, string, string];
    await q.add({ topic, id: x, delay: 600, group: 'st' });
    await q.add({ topic, id: y, delay: 600, group: 'st' });
    const k = topicKeys(0, topic, target.partitions);
    const purgeWithoutLeave = async (id: string) => {
      await q.cancel(topic, id);
      clock.advance(61 * SEC);
      const reply = await moveDueOnce(target, topic, clock.now);
      assert.deepEqual(reply[9], ['st', id, 0], 'the purge names the group and the chunk');
    };
    await purgeWithoutLeave(x);
    assert.deepEqual(await bucketSlots(redis, 0, topic, 'st', target.partitions), [x, y], 'its slot is still there');
    await q.add({ topic, id: x, delay: 600, group: 'st' });
    assert.deepEqual(await bucketSlots(redis, 0, topic, 'st', target.partitions), [x, y], 'added again: the same slot');
    assert.deepEqual(
      (await q.listGroup(topic, 'st')).jobs.map((j) => j.id),
      [x, y],
    );
    const base = groupKey(0, topic, 'st', target.partitions);
    assert.equal(
      await run(redis, script.leaveGroup([k.jobs, base], { group: 'st', members: [{ id: x, chunk: 0 }] })),
      0,
      'the late leave leaves it in the group',
    );
    await purgeWithoutLeave(y);
    await q.add({ topic, id: z, delay: 600, group: 'st' });
    assert.deepEqual(
      await bucketSlots(redis, 0, topic, 'st', target.partitions),
      [x, '', z],
      "the join emptied the gone job's slot",
    );
    assert.deepEqual(
      (await q.listGroup(topic, 'st')).jobs.map((j) => j.id),
      [x, z],
    );
    assert.equal(
      await run(redis, script.leaveGroup([k.jobs, base], { group: 'st', members: [{ id: y, chunk: 0 }] })),
      0,
    );
    assert.deepEqual(await q.cancelGroup(topic, 'st'), { cancelled: 2, running: 0 });
  });
}
