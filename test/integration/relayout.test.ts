/**
 * A change of the partition count on a stack that holds jobs (Layout in lib/engine/keys.ts): an
 * engine configured with `partitions: 3, formerPartitions: 2` serves the jobs an engine of 2
 * partitions left, where they are, and writes new ones in its 3 partitions; an id lives in one
 * layout only, whoever writes it. Both engines share one redis-server, as the Lambdas of a stack
 * before and after the deploy share its Redis.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { makeQueue, TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';
import { Layout, partitionOf, PAUSED_FIELD, topicKeys } from '../../lib/testing';

const BEFORE = 2;
const AFTER = 3;

describe('changing the partition count of a stack that holds jobs', () => {
  const server = useRedisServer();

  const setup = (topicInput: Record<string, unknown> = {}) => {
    const redis = server.client();
    const clock = new TestClock();
    const topic = uniqueTopic('relayout');
    const topics = { [topic]: { maxAttempts: 2, ...topicInput } };
    const before = makeQueue(redis, topics, { clock, config: { partitions: BEFORE } });
    const after = makeQueue(redis, topics, { clock, config: { partitions: AFTER, formerPartitions: BEFORE } });
    const layout = new Layout(AFTER, BEFORE);
    /** Where job `id` of the topic is stored: 'former', 'current', 'both' or 'none'. */
    const where = async (id: string) => {
      const inFormer = await redis.hexists(topicKeys(partitionOf(topic, id, BEFORE), topic, BEFORE).jobs, id);
      const inCurrent = await redis.hexists(topicKeys(partitionOf(topic, id, AFTER), topic, AFTER).jobs, id);
      return inFormer && inCurrent ? 'both' : inFormer ? 'former' : inCurrent ? 'current' : 'none';
    };
    /** Claims, starts and acks through `q` until nothing is ready; the ids run, in order. */
    const drain = async (q = after) => {
      const ran: string[] = [];
      for (;;) {
        await q.engine.sweep();
        const claimed = await q.engine.claim(topic, 50);
        if (claimed.length === 0) return ran;
        const live = await q.engine.start(topic, claimed);
        for (const [i, job] of claimed.entries()) {
          if (!live[i]) continue;
          assert.equal(await q.engine.ack(topic, job.id, job), 'done', `ack of ${job.id}`);
          ran.push(job.id);
        }
      }
    };
    return { redis, clock, topic, before, after, layout, where, drain };
  };

  it("runs the jobs the former layout holds, on time and once, beside new jobs added in the current layout's partitions", async () => {
    const { clock, topic, before, after, where, drain } = setup();
    const old = Array.from({ length: 30 }, (_, i) => `old-${i}`);
    const fresh = Array.from({ length: 30 }, (_, i) => `new-${i}`);
    for (const id of old) await before.add({ topic, id, delay: i(id) % 2 === 0 ? 0 : 60, body: { id } });
    for (const id of fresh) await after.add({ topic, id, delay: i(id) % 2 === 0 ? 0 : 60, body: { id } });
    for (const id of old) assert.equal(await where(id), 'former', id);
    assert.deepEqual((await after.stats(topic)).former, { jobs: 30, schedules: 0 });
    for (const id of fresh) assert.equal(await where(id), 'current', id);
    const dueNow = await drain();
    assert.deepEqual(
      dueNow.sort(),
      [...old, ...fresh].filter((id) => i(id) % 2 === 0).sort(),
      'the jobs due now, of both layouts, each once',
    );
    clock.advance(60_000);
    const dueLater = await drain();
    assert.deepEqual(
      dueLater.sort(),
      [...old, ...fresh].filter((id) => i(id) % 2 === 1).sort(),
      'the jobs due in a minute, of both layouts, each once',
    );
    for (const id of [...old, ...fresh]) assert.equal((await after.get(topic, id))?.state, 'done', id);
    const stats = await after.stats(topic);
    assert.deepEqual([stats.delayed, stats.ready, stats.running, stats.dead], [0, 0, 0, 0]);
    assert.deepEqual(
      stats.former,
      { jobs: 30, schedules: 0 },
      'the former partitions hold the 30 old jobs, done, until their retention ends',
    );
    assert.equal((await before.stats(topic)).former, undefined, 'no change under way: no former partitions');
  });

  it('an id the former layout holds stays there: an add answers exists, a put replaces it in place, never a second copy', async () => {
    const { topic, before, after, where } = setup();
    await before.add({ topic, id: 'a', delay: 60, body: 'one' });
    const again = await after.add({ topic, id: 'a', delay: 60, body: 'two' });
    assert.equal(again.status, 'exists');
    assert.equal(again.job.body, 'one');
    const put = await after.put(topic, 'a', { delay: 30, body: 'three' });
    assert.equal(put.status, 'replaced');
    assert.equal(await where('a'), 'former');
    assert.equal((await after.get(topic, 'a'))?.body, 'three');
    assert.equal((await before.get(topic, 'a'))?.body, 'three', 'the engine before the change reads it where it was');
  });

  it('a former partition that a writer of the new layout reached is closed: a writer that does not know of the change is turned away and writes in the current layout', async () => {
    const { redis, topic, before, after, where } = setup();
    // two ids of one former partition: the first write through the new layout closes it
    const p = partitionOf(topic, 'x', BEFORE);
    let y = 'y';
    for (let n = 0; partitionOf(topic, y, BEFORE) !== p; n++) y = `y${n}`;
    assert.equal((await after.add({ topic, id: 'x', delay: 60, body: 'x' })).status, 'created');
    assert.equal(await where('x'), 'current');
    assert.equal(
      await redis.hget(topicKeys(p, topic, BEFORE).jobs, '#moved'),
      String(AFTER),
      'the former partition is closed, with the count to go to',
    );
    // the engine of 2 partitions, knowing nothing of the change, adds y there: turned away, written in the current
    // layout
    assert.equal((await before.add({ topic, id: y, delay: 60, body: 'y' })).status, 'created');
    assert.equal(await where(y), 'current', 'y lives in the current layout: one place for every writer');
    // and its add of x, which the current layout holds, answers exists
    const x = await before.add({ topic, id: 'x', delay: 60, body: 'again' });
    assert.equal(x.status, 'exists');
    assert.equal(x.job.body, 'x');
    assert.equal((await after.add({ topic, id: y, delay: 60, body: 'y2' })).status, 'exists');
  });

  it('an add racing through both engines at once leaves one copy', async () => {
    const { topic, before, after, where } = setup();
    for (let n = 0; n < 40; n++) {
      const id = `race-${n}`;
      const outcomes = await Promise.all([
        before.add({ topic, id, delay: 60, body: 'b' }),
        after.add({ topic, id, delay: 60, body: 'a' }),
      ]);
      assert.deepEqual(outcomes.map((o) => o.status).sort(), ['created', 'exists'], id);
      assert.notEqual(await where(id), 'both', id);
    }
  });

  it('by-id calls find a job in either layout: get, cancel, reschedule, fail, release, redrive, start and ack', async () => {
    const { clock, topic, before, after } = setup();
    for (const id of ['c', 'r', 'f', 'l', 'k']) await before.add({ topic, id, delay: 0, body: id });
    assert.equal((await after.cancel(topic, 'c')).state, 'cancelled');
    const moved = await after.reschedule(topic, 'r', { delay: 120 });
    assert.equal(moved.job.runAt, new Date(clock.now + 120_000).toISOString());
    await after.engine.sweep();
    const claimed = await after.engine.claim(topic, 10);
    assert.deepEqual(claimed.map((j) => j.id).sort(), ['f', 'k', 'l']);
    const byId = new Map(claimed.map((j) => [j.id, j]));
    assert.equal(await after.engine.release([byId.get('l')!]), 1, 'given back in its former partition');
    assert.deepEqual(await after.engine.start(topic, [byId.get('f')!, byId.get('k')!]), [true, true]);
    assert.equal((await after.engine.fail(topic, 'f', byId.get('f')!, 'no')).outcome, 'retry');
    assert.equal(await after.engine.ack(topic, 'k', byId.get('k')!), 'done');
    assert.equal((await after.get(topic, 'k'))?.state, 'done');
    assert.equal((await after.get(topic, 'l'))?.state, 'ready', 'released: ready again');
    // f dies on its second attempt, and is redriven by id
    clock.advance(3_600_000);
    await after.engine.sweep();
    const retry = (await after.engine.claim(topic, 10)).find((j) => j.id === 'f')!;
    assert.ok(retry);
    assert.deepEqual(await after.engine.start(topic, [retry]), [true]);
    assert.equal((await after.engine.fail(topic, 'f', retry, 'no again')).outcome, 'dead');
    assert.equal((await after.redrive(topic, { ids: ['f'] })).redriven, 1);
    assert.equal((await after.get(topic, 'f'))?.state, 'delayed');
    assert.equal(await after.get(topic, 'missing'), null);
  });

  it('a topic paused before the change stays paused in the current layout: no job added since starts until it is resumed', async () => {
    const { redis, topic, before, after, layout } = setup();
    await before.pauseTopic(topic, 'ops');
    await after.add({ topic, id: 'p', delay: 0, body: 'p' });
    await after.engine.sweep();
    assert.deepEqual(await after.engine.claim(topic, 10), []);
    for (let p = 0; p < AFTER; p++)
      assert.equal(
        await redis.hget(topicKeys(p, topic, layout).jobs, PAUSED_FIELD),
        'ops',
        `current partition ${p} paused by ops`,
      );
    assert.equal((await after.stats(topic)).paused, true);
    await after.resumeTopic(topic);
    for (let p = 0; p < layout.size; p++)
      assert.equal(await redis.hexists(topicKeys(p, topic, layout).jobs, PAUSED_FIELD), 0, `partition ${p} resumed`);
    await after.engine.sweep();
    assert.deepEqual(
      (await after.engine.claim(topic, 10)).map((j) => j.id),
      ['p'],
    );
  });

  it("a group's jobs in both layouts: listed together and cancelled together", async () => {
    const { topic, before, after } = setup();
    for (let n = 0; n < 6; n++) await before.add({ topic, id: `g-old-${n}`, delay: 60, group: 'g', body: n });
    for (let n = 0; n < 6; n++) await after.add({ topic, id: `g-new-${n}`, delay: 60, group: 'g', body: n });
    const listed: string[] = [];
    for (
      let page = await after.listGroup(topic, 'g', { limit: 4 });
      ;
      page = await after.listGroup(topic, 'g', { limit: 4, cursor: page.next! })
    ) {
      listed.push(...page.jobs.map((j) => j.id));
      if (!page.next) break;
    }
    assert.equal(listed.length, 12);
    assert.equal(new Set(listed).size, 12);
    const delayed = await after.listJobs(topic, { state: 'delayed', limit: 100 });
    assert.equal(delayed.jobs.length, 12);
    assert.deepEqual(await after.cancelGroup(topic, 'g'), { cancelled: 12, running: 0 });
    for (const id of listed) assert.equal((await after.get(topic, id))?.state, 'cancelled', id);
  });

  it('a flow topic keeps its partition whatever the partition count: both engines see the same jobs and keys', async () => {
    const { topic, before, after, drain } = setup({ flow: { concurrency: 1 } });
    for (let n = 0; n < 4; n++) await before.add({ topic, id: `f-${n}`, delay: 0, key: 'k', body: n });
    assert.equal((await after.add({ topic, id: 'f-0', delay: 0, key: 'k', body: 'again' })).status, 'exists');
    assert.deepEqual((await drain()).sort(), ['f-0', 'f-1', 'f-2', 'f-3']);
    assert.equal((await after.engine.flowKey(topic, 'k')).running, 0);
  });
});

/** The number at the end of an id like `old-7`. */
function i(id: string): number {
  return Number(id.slice(id.lastIndexOf('-') + 1));
}
