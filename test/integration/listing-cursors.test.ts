/**
 * A jobs listing's cursor belongs to its listing: the `next` of one topic's page is refused by
 * another topic's listing, and a cursor no page gave (forged, or edited) is refused, with 400
 * VALIDATION_FAILED naming `cursor`, as the README says.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HttpError } from '../../lib/edge/errors';
import { makeQueue, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';

const isBadCursor = (error: unknown) => error instanceof HttpError && error.status === 400 && error.code === 'VALIDATION_FAILED' && JSON.stringify(error.details).includes('cursor');

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
    await assert.rejects(q.listJobs(b, { state: 'delayed', limit: 1, cursor: page.next }), isBadCursor, "topic B refuses topic A's cursor");
    const job = await q.get(a, 'j1');
    const forged = Buffer.from(`delayed:${Date.parse(job!.runAt)}:j1`).toString('base64url');
    await assert.rejects(q.listJobs(a, { state: 'delayed', limit: 1, cursor: forged }), isBadCursor, 'a cursor no page gave is refused');
    const ready = Buffer.from('ready:0').toString('base64url');
    await assert.rejects(q.listJobs(a, { state: 'ready', limit: 1, cursor: ready }), isBadCursor, 'a forged ready cursor is refused');
  });
});
