/** Listings by state across partitions: order, paging, from/to windows and cursor refusals. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Queue } from '../../support/queue';
import type { Job } from '../../../lib/engine';
import { rejects } from '../../support/queue';
import { SEC, type SuiteHelpers, type SuiteTarget } from './shared';
import { type JobsQuery } from '../../../lib/testing';

/** Declares the listings test of the describe 'groups, listings and versions' (its caller declares the describe). */
export function listings(_target: SuiteTarget, h: SuiteHelpers): void {
  const { setup, sweep } = h;

  /** Every job of a listing, following `next`. */
  async function listAll(q: Queue, topic: string, query: JobsQuery) {
    const jobs: Job[] = [];
    let page = await q.listJobs(topic, query);
    jobs.push(...page.jobs);
    for (let pages = 1; page.next !== null; pages++) {
      assert.ok(pages <= 100, 'paging ends');
      page = await q.listJobs(topic, { ...query, cursor: page.next });
      jobs.push(...page.jobs);
    }
    return jobs;
  }

  it('lists upcoming jobs across partitions by due time, paged, within from and to', async () => {
    const { q, topic, clock } = setup();
    const dues = Array.from({ length: 40 }, (_, i) => ({
      id: `up-${String(i).padStart(2, '0')}`,
      delay: 10 + (i % 7) * 60,
    }));
    for (const d of dues)
      await q.add({ topic, id: d.id, delay: d.delay, group: d.id.endsWith('3') ? 'g3' : undefined });
    const expected = [...dues].sort((a, b) => a.delay - b.delay || (a.id < b.id ? -1 : 1)).map((d) => d.id);
    const all = await listAll(q, topic, { state: 'delayed', limit: 6 });
    assert.deepEqual(
      all.map((j) => j.id),
      expected,
      'every delayed job once, by (due time, id)',
    );
    assert.equal(all.find((j) => j.id === 'up-13')?.group, 'g3');
    const from = clock.now + 70 * SEC;
    const to = clock.now + 190 * SEC;
    const window = await listAll(q, topic, { state: 'delayed', limit: 5, from, to });
    assert.deepEqual(
      window.map((j) => j.id),
      expected.filter((id) => {
        const d = dues.find((x) => x.id === id)!.delay * SEC + clock.now;
        return d >= from && d <= to;
      }),
    );
    assert.ok(window.length > 0);
    // ready, running and dead listings
    clock.advance(75 * SEC);
    await sweep(q);
    const ready = await listAll(q, topic, { state: 'ready', limit: 4 });
    assert.deepEqual(
      ready.map((j) => j.id).sort(),
      dues
        .filter((d) => d.delay <= 75)
        .map((d) => d.id)
        .sort(),
      'the ready jobs, each once',
    );
    assert.ok(ready.every((j) => j.state === 'ready'));
    const claimed = await q.engine.claim(topic, 3);
    assert.deepEqual(
      (await listAll(q, topic, { state: 'running', limit: 2 })).map((j) => j.id).sort(),
      claimed.map((j) => j.id).sort(),
    );
    assert.equal((await listAll(q, topic, { state: 'ready', limit: 100 })).length, ready.length - 3);
    await rejects(q.listJobs(topic, { state: 'delayed', cursor: 'not-a-cursor!' }), 400, 'VALIDATION_FAILED');
    const deadPage = await q.listJobs(topic, { state: 'delayed', limit: 1 });
    await rejects(q.listJobs(topic, { state: 'dead', cursor: deadPage.next! }), 400, 'VALIDATION_FAILED');
    await rejects(q.listGroup(topic, 'g3', { cursor: deadPage.next! }), 400, 'VALIDATION_FAILED');
    await rejects(q.listJobs('no-such-topic', { state: 'delayed' }), 400, 'UNKNOWN_TOPIC');
  });
}
