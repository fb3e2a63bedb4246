/**
 * The ready listing (GET /topics/{topic}/jobs?state=ready, lua/listReady-4.lua) of a topic whose
 * ready jobs have priorities, against a real redis-server: every ready job once, in claim order
 * (priorities above 0, highest first, then the ready list, then those below 0), paged with a cursor
 * that stays put while claims take jobs between pages; the ready list's mark is never listed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { makeQueue, TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';

describe('ready listing with priorities', () => {
  const redis = useRedisServer();

  // ids in the order they are added, with priorities; CLAIM_ORDER is the order claims take them
  const JOBS: [string, number][] = [
    ['a', 0],
    ['n1', -1],
    ['p5', 5],
    ['b', 0],
    ['p9', 9],
    ['c', 0],
    ['n2', -3],
    ['p5b', 5],
    ['d', 0],
    ['n3', -1],
    ['p1', 1],
  ];
  const CLAIM_ORDER = ['p9', 'p5', 'p5b', 'p1', 'a', 'b', 'c', 'd', 'n1', 'n3', 'n2'];

  function setup(partitions = 1) {
    const topic = uniqueTopic('prio-list');
    const q = makeQueue(
      redis.client(),
      { [topic]: { maxAttempts: 3, ttr: 60, concurrency: 1000 } },
      { clock: new TestClock(), config: { retention: 60, partitions } },
    );
    return { topic, q };
  }

  async function addReady(q: ReturnType<typeof makeQueue>, topic: string) {
    for (const [id, priority] of JOBS) await q.add({ topic, id, delay: 0, ...(priority ? { priority } : {}) });
    for (let more = true; more;) more = (await q.engine.sweep()).more;
  }

  /** Lists `topic`'s ready jobs in pages of `limit`, calling `between` after each page; the ids in listing order. */
  async function listAll(q: ReturnType<typeof makeQueue>, topic: string, limit: number, between: () => Promise<void>) {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 50; page++) {
      const got = await q.listJobs(topic, { state: 'ready', limit, ...(cursor ? { cursor } : {}) });
      seen.push(...got.jobs.map((j) => j.id));
      if (!got.next) return seen;
      cursor = got.next;
      await between();
    }
    throw new Error('the listing did not end');
  }

  it('lists every ready job once, in claim order', async () => {
    const { topic, q } = setup();
    await addReady(q, topic);
    assert.deepEqual(await listAll(q, topic, 100, async () => {}), CLAIM_ORDER);
    const page = await q.listJobs(topic, { state: 'ready', limit: 100 });
    assert.deepEqual(
      page.jobs.map((j) => j.priority),
      [9, 5, 5, 1, 0, 0, 0, 0, -1, -1, -3],
    );
  });

  for (const limit of [2, 3]) {
    it(`pages of ${limit} while a claim takes a job between pages: each once, in claim order`, async () => {
      const { topic, q } = setup();
      await addReady(q, topic);
      const claimed: string[] = [];
      const listed = await listAll(q, topic, limit, async () => {
        claimed.push(...(await q.engine.claim(topic, 1)).map((c) => c.id));
      });
      assert.deepEqual(listed, CLAIM_ORDER, 'the claims took jobs already listed: every job once, in order');
      assert.deepEqual(claimed, CLAIM_ORDER.slice(0, claimed.length), 'claims take them in the listed order');
    });

    it(`pages of ${limit} while claims overtake the listing: none twice, none that stayed ready skipped`, async () => {
      const { topic, q } = setup();
      await addReady(q, topic);
      const claimed = new Set<string>();
      let pages = 0;
      const listed = await listAll(q, topic, limit, async () => {
        pages += 1;
        // three claims a page of two or three, and a give-back of the first claimed on the second
        const got = await q.engine.claim(topic, 3);
        for (const c of got) claimed.add(c.id);
        if (pages === 2) {
          assert.equal(await q.engine.release([{ ...got[0]!, topic }]), 1);
          claimed.delete(got[0]!.id);
        }
      });
      assert.equal(new Set(listed).size, listed.length, `no job listed twice: ${listed.join(' ')}`);
      const order = CLAIM_ORDER.filter((id) => listed.includes(id));
      assert.deepEqual(listed, order, 'in claim order');
      for (const id of CLAIM_ORDER) {
        if (!claimed.has(id)) assert.ok(listed.includes(id), `${id} stayed ready and was listed`);
      }
    });
  }

  it("never lists the ready list's mark, nor a cancelled prioritized job", async () => {
    const { topic, q } = setup();
    await addReady(q, topic);
    await q.cancel(topic, 'p5');
    const seen = await listAll(q, topic, 1, async () => {});
    assert.deepEqual(
      seen,
      CLAIM_ORDER.filter((id) => id !== 'p5'),
    );
  });

  it('several partitions: each job once, the prioritized above 0 first and those below 0 last', async () => {
    const { topic, q } = setup(3);
    await addReady(q, topic);
    const claimed = new Set<string>();
    const listed = await listAll(q, topic, 2, async () => {
      for (const c of await q.engine.claim(topic, 1)) claimed.add(c.id);
    });
    assert.equal(new Set(listed).size, listed.length, `no job listed twice: ${listed.join(' ')}`);
    for (const id of CLAIM_ORDER) if (!claimed.has(id)) assert.ok(listed.includes(id), `${id} listed`);
    const rank = (id: string) => (id.startsWith('p') ? 0 : id.startsWith('n') ? 2 : 1);
    const full = await listAll(q, topic, 100, async () => {});
    assert.deepEqual(
      full.map(rank),
      [...full.map(rank)].sort((x, y) => x - y),
    );
  });
});
