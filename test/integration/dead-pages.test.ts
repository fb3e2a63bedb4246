/**
 * Paging through dead jobs (issue 12, finding 6): one sweep dead-letters many jobs in the same
 * millisecond, so the page cursor must break ties between jobs that died at the same time.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Queue } from '../support/queue';
import { makeQueue, TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';
import { HttpError } from '../../lib/testing';

describe('dead-job pages', () => {
  const redis = useRedisServer();

  /**
   * A queue whose topic dead-letters on the first timeout, with `n` jobs (or the given ids) that all died in one sweep
   * (same ms).
   */
  async function deadInOneSweep(
    n: number | string[],
    partitions: number,
  ): Promise<{ q: Queue; topic: string; clock: TestClock; diedAt: number }> {
    const topic = uniqueTopic('dead');
    const clock = new TestClock();
    const q = makeQueue(
      redis.client(),
      { [topic]: { ttr: 1, maxAttempts: 1, concurrency: 1000 } },
      { clock, config: { partitions } },
    );
    return { q, topic, clock, diedAt: await killAll(q, topic, clock, n) };
  }

  /** Adds the jobs, runs them, and lets one sweep dead-letter them all at once; returns when they died. */
  async function killAll(q: Queue, topic: string, clock: TestClock, jobs: number | string[]): Promise<number> {
    const ids =
      typeof jobs === 'number' ? Array.from({ length: jobs }, (_, i) => `job-${String(i).padStart(3, '0')}`) : jobs;
    const n = ids.length;
    for (const id of ids) await q.add({ topic, id, delay: 0 });
    await q.engine.sweep();
    let running = 0;
    while (running < n) {
      const claimed = await q.engine.claim(topic, n - running, 1000);
      assert.ok(claimed.length > 0, 'every added job can be claimed');
      await q.engine.start(topic, claimed); // handlers started them: their timeouts count
      running += claimed.length;
    }
    clock.advance(2_000);
    let dead = 0;
    for (let more = true; more;) {
      const swept = await q.engine.sweep();
      dead += swept.deadLettered;
      more = swept.more;
    }
    assert.equal(dead, n, 'the sweep dead-letters every timed-out job');
    return clock.now;
  }

  /** Every id listed by following `next` from the first page, in order. */
  async function listAll(q: Queue, topic: string, limit: number): Promise<string[]> {
    const ids: string[] = [];
    let page = await q.listDead(topic, { limit });
    ids.push(...page.jobs.map((j) => j.id));
    for (let pages = 1; page.next !== null; pages++) {
      assert.ok(pages <= 200, 'paging ends');
      page = await q.listDead(topic, { limit, after: page.next });
      ids.push(...page.jobs.map((j) => j.id));
    }
    return ids;
  }

  for (const partitions of [1, 3]) {
    it(`lists all 80 jobs that died in the same millisecond, 50 a page (${partitions} partition${partitions > 1 ? 's' : ''})`, async () => {
      const { q, topic } = await deadInOneSweep(80, partitions);
      assert.equal((await q.stats(topic)).dead, 80);
      const ids = await listAll(q, topic, 50);
      assert.equal(ids.length, 80, `listed ${ids.length} of 80 dead jobs`);
      assert.equal(new Set(ids).size, 80, 'no job is listed twice');
    });

    it(`pages of 1 list every tied job once, in order (${partitions} partition${partitions > 1 ? 's' : ''})`, async () => {
      const { q, topic } = await deadInOneSweep(7, partitions);
      const ids = await listAll(q, topic, 1);
      assert.deepEqual(ids, [...ids].sort());
      assert.equal(new Set(ids).size, 7, `listed ${ids.length} pages: ${ids.join(' ')}`);
    });
  }

  for (const partitions of [1, 3]) {
    it(`resumes in Redis's bytewise id order when each page's last job has left (${partitions} partition${partitions > 1 ? 's' : ''})`, async () => {
      // a locale collation would sort these a A b B …; a zset sorts them - . 0 A B Z:z _ a b
      const ids = ['a', 'B', 'b', 'A', '_', '-', '.', '0', 'Z:z'];
      const { q, topic } = await deadInOneSweep(ids, partitions);
      const listed: string[] = [];
      let page = await q.listDead(topic, { limit: 1 });
      while (page.jobs.length) {
        listed.push(page.jobs[0]!.id);
        assert.equal((await q.redrive(topic, { ids: [page.jobs[0]!.id] })).redriven, 1);
        if (page.next === null) break;
        page = await q.listDead(topic, { limit: 1, after: page.next });
      }
      assert.deepEqual(listed, [...ids].sort());
    });
  }

  it('a cursor that no page gave is refused with 400 VALIDATION_FAILED', async () => {
    const { q, topic } = await deadInOneSweep(1, 1);
    for (const after of ['x', 'MTIz', '-1', '1.5', Buffer.from('12:bad id').toString('base64url'), '1'.repeat(17)]) {
      await assert.rejects(
        q.listDead(topic, { after }),
        (error: unknown) => error instanceof HttpError && error.status === 400 && error.code === 'VALIDATION_FAILED',
        after,
      );
    }
  });

  it('a page cursor stays valid when the job it names is redriven before the next page', async () => {
    const { q, topic } = await deadInOneSweep(10, 1);
    const first = await q.listDead(topic, { limit: 4 });
    assert.deepEqual(
      first.jobs.map((j) => j.id),
      ['job-000', 'job-001', 'job-002', 'job-003'],
    );
    assert.equal((await q.redrive(topic, { ids: ['job-003', 'job-002'] })).redriven, 2);
    const rest = await q.listDead(topic, { limit: 50, after: first.next! });
    assert.deepEqual(
      rest.jobs.map((j) => j.id),
      ['job-004', 'job-005', 'job-006', 'job-007', 'job-008', 'job-009'],
    );
    assert.equal(rest.next, null);
  });
});
