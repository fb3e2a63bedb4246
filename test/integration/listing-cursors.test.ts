/**
 * A jobs listing's cursor belongs to its listing: the `next` of one topic's page is refused by
 * another topic's listing, and a cursor no page gave (forged, or edited) is refused, with 400
 * VALIDATION_FAILED naming `cursor`, as the README says. A ready listing paged while claims take
 * jobs off the list's head, or a give-back puts one back there, passes over no job that stayed ready.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { makeQueue, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';
import { HttpError } from '../../lib/testing';

const isBadCursor = (error: unknown) =>
  error instanceof HttpError &&
  error.status === 400 &&
  error.code === 'VALIDATION_FAILED' &&
  JSON.stringify(error.details).includes('cursor');

describe('jobs listing cursors (real redis-server)', () => {
  const redis = useRedisServer();

  it("refuses another topic's cursor, and cursors no page gave", async () => {
    const [a, b] = [uniqueTopic('list-a'), uniqueTopic('list-b')];
    const q = makeQueue(redis.client(), { [a]: {}, [b]: {} });
    for (const topic of [a, b]) for (let i = 0; i < 3; i++) await q.add({ topic, id: `j${i}`, delay: 60 + i });
    const page = await q.listJobs(a, { state: 'delayed', limit: 1 });
    assert.equal(page.jobs[0]?.id, 'j0');
    assert.ok(page.next);
    assert.deepEqual(
      (await q.listJobs(a, { state: 'delayed', limit: 1, cursor: page.next })).jobs.map((j) => j.id),
      ['j1'],
      'its own listing takes it',
    );
    await assert.rejects(
      q.listJobs(b, { state: 'delayed', limit: 1, cursor: page.next }),
      isBadCursor,
      "topic B refuses topic A's cursor",
    );
    const job = await q.get(a, 'j1');
    const forged = Buffer.from(`delayed:${Date.parse(job!.runAt)}:j1`).toString('base64url');
    await assert.rejects(
      q.listJobs(a, { state: 'delayed', limit: 1, cursor: forged }),
      isBadCursor,
      'a cursor no page gave is refused',
    );
    const ready = Buffer.from('ready:0').toString('base64url');
    await assert.rejects(
      q.listJobs(a, { state: 'ready', limit: 1, cursor: ready }),
      isBadCursor,
      'a forged ready cursor is refused',
    );
  });

  it('a ready listing paged across claims passes over no job that stayed ready', async () => {
    const topic = uniqueTopic('list-ready');
    const q = makeQueue(redis.client(), { [topic]: {} });
    for (const id of ['a', 'b', 'c', 'd', 'e']) await q.add({ topic, id, delay: 0 });
    await q.engine.sweep();
    const first = await q.listJobs(topic, { state: 'ready', limit: 2 });
    assert.deepEqual(
      first.jobs.map((j) => j.id),
      ['a', 'b'],
    );
    const claimed = await q.engine.claim(topic, 2);
    assert.deepEqual(
      claimed.map((c) => c.id),
      ['a', 'b'],
    );
    const second = await q.listJobs(topic, { state: 'ready', limit: 2, cursor: first.next! });
    assert.deepEqual(
      second.jobs.map((j) => j.id),
      ['c', 'd'],
      'the jobs after the first page, though claims took the jobs before them',
    );
    // a give-back puts a job back at the head: the next page goes on after d all the same
    assert.equal(await q.engine.release([claimed[0]!]), 1);
    const third = await q.listJobs(topic, { state: 'ready', limit: 2, cursor: second.next! });
    assert.deepEqual(
      third.jobs.map((j) => j.id),
      ['e'],
    );
    assert.equal(third.next, null);
  });
  it("pages a flow topic's delayed jobs of one due time, keys in their members, each once and in id order", async () => {
    const topic = uniqueTopic('list-flow');
    const q = makeQueue(redis.client(), { [topic]: { flow: { concurrency: 1 } } });
    const runAt = Date.now() + 3_600_000;
    // ids that prefix one another, under keys that would order their members otherwise
    const jobs = [
      ['a', 'zz'],
      ['a-b', ''],
      ['a.c', 'a'],
      ['ab', 'k'],
      ['b', ''],
      ['b-1', 'z'],
      ['c', 'a'],
    ] as const;
    for (const [id, key] of jobs)
      await q.add({ topic, id, runAt: new Date(runAt).toISOString(), ...(key ? { key } : {}) });
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < jobs.length + 1; page++) {
      const got = await q.listJobs(topic, { state: 'delayed', limit: 2, ...(cursor ? { cursor } : {}) });
      seen.push(...got.jobs.map((j) => `${j.id}/${j.key ?? ''}`));
      if (!got.next) break;
      cursor = got.next;
    }
    assert.deepEqual(
      seen,
      jobs.map(([id, key]) => `${id}/${key}`),
    );
  });
});
