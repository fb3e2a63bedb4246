/**
 * Issue 12, finding 7: a script call's work grew with the bodies it touched. Every state change
 * re-encoded the job's body (one redrive of 1,000 dead jobs with 65 KB bodies rewrote 65 MB), one
 * claim replied every body it claimed (800 × 65 KB), one add batch wrote 100 bodies, one dead page
 * replied 100.
 *
 * The measures are bytes, not time. What a script call writes is read off the append-only file of
 * the test's own redis-server (`--appendonly yes`): Redis logs the effects of every script there,
 * so a state change that rewrites a 65 KB body adds 65 KB to it. `aof_current_size` (INFO
 * persistence) is exact to the byte and needs no clock; automatic AOF rewrites are off, so the file
 * only grows. What a call replies is measured on the reply.
 */
import assert from 'node:assert/strict';
import { closeSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { EVENT_PAYLOAD_BYTES } from '../../lib/core/limits';
import type { Queue } from '../support/queue';
import type { ClaimedJob } from '../../lib/engine';
import { makeQueue, TestClock, uniqueTopic } from '../support/queue';
import { startRedis, type RedisProcess } from '../support/redis';

const JOBS = 1000;
const BODY = { pad: 'x'.repeat(65_000) }; // under the default maxBodyBytes (64 KiB)
const BODY_BYTES = Buffer.byteLength(JSON.stringify(BODY));
const ALL_BODIES = JOBS * BODY_BYTES; // 65 MB
// A state change of 1,000 jobs writes their headers, ids and index entries: a few hundred bytes
// each. A twentieth of the bodies (3.25 MB, 3.25 KB a job) is far above that and far below one
// rewritten body per job.
const FAR_BELOW = ALL_BODIES / 20;

const bytesOf = (jobs: readonly { body: unknown }[]) =>
  jobs.reduce((n, j) => n + Buffer.byteLength(JSON.stringify(j.body)), 0);
const mb = (n: number) => `${(n / 1e6).toFixed(2)} MB`;

/** Sizes of the top-level write blocks (a MULTI … EXEC, or one command) in RESP text. */
function writeBlocks(text: Buffer): number[] {
  const blocks: number[] = [];
  let at = 0;
  let open: number | null = null;
  const line = () => {
    const end = text.indexOf('\r\n', at);
    const s = text.toString('latin1', at, end);
    at = end + 2;
    return s;
  };
  while (at < text.length) {
    const start = at;
    const head = line();
    assert.match(head, /^\*\d+$/, `RESP array expected at byte ${start}`);
    let name = '';
    for (let i = 0, n = Number(head.slice(1)); i < n; i++) {
      const len = Number(line().slice(1));
      if (i === 0) name = text.toString('latin1', at, at + len).toUpperCase();
      at += len + 2;
    }
    if (name === 'MULTI') open = start;
    else if (name === 'EXEC' && open !== null) {
      blocks.push(at - open);
      open = null;
    } else if (open === null && name !== 'SELECT') blocks.push(at - start);
  }
  return blocks;
}

describe('script calls do work bounded in bytes, not in bodies (real redis-server with an AOF)', () => {
  let server: RedisProcess;
  let redis: Redis;
  before(async () => {
    server = await startRedis({
      args: ['--appendonly', 'yes', '--appendfsync', 'no', '--auto-aof-rewrite-percentage', '0'],
    });
    redis = new Redis(server.url);
  });
  after(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  const aofSize = async () => Number(/^aof_current_size:(\d+)/m.exec(await redis.info('persistence'))![1]);

  /** Bytes appended to the AOF while `fn` runs. */
  async function aofGrowth<T>(fn: () => Promise<T>): Promise<{ bytes: number; result: T }> {
    const before = await aofSize();
    const result = await fn();
    return { bytes: (await aofSize()) - before, result };
  }

  /** The write blocks `fn` appended to the AOF (the append-only file of the current incarnation). */
  async function blocksWritten(fn: () => Promise<unknown>): Promise<number[]> {
    const dir = join(server.dir, 'appendonlydir');
    const file = join(
      dir,
      readdirSync(dir).find((f) => f.endsWith('.incr.aof'))!,
    );
    const from = statSync(file).size;
    await fn();
    await aofSize(); // a round trip: the writes of fn are in the file once Redis answered this
    const to = statSync(file).size;
    const text = Buffer.alloc(to - from);
    const fd = openSync(file, 'r');
    try {
      readSync(fd, text, 0, text.length, from);
    } finally {
      closeSync(fd);
    }
    return writeBlocks(text);
  }

  async function claimAll(q: Queue, topic: string, expected: number): Promise<ClaimedJob[]> {
    const claimed: ClaimedJob[] = [];
    for (let calls = 0; claimed.length < expected && calls < expected + 1; calls++) {
      const batch = await q.engine.claim(topic, expected, 10_000); // running attempts are no limit here
      if (batch.length === 0) break;
      claimed.push(...batch);
    }
    assert.equal(new Set(claimed.map((j) => j.id)).size, expected, 'every job claimed once');
    return claimed;
  }

  async function sweepAll(q: Queue) {
    const total = { moved: 0, deadLettered: 0 };
    for (let i = 0; i < 100; i++) {
      const r = await q.engine.sweep();
      total.moved += r.moved;
      total.deadLettered += r.deadLettered;
      if (!r.more) break;
    }
    return total;
  }

  describe('a state change writes the job, not its body: 1,000 jobs with 65 KB bodies', () => {
    const topic = uniqueTopic('bodies');
    const clock = new TestClock();
    let q: Queue;
    let claimed: ClaimedJob[] = [];

    before(async () => {
      q = makeQueue(
        redis,
        { [topic]: { maxAttempts: 1, ttr: 30, concurrency: JOBS } },
        { clock, config: { retention: 3600 } },
      );
      for (let i = 0; i < JOBS; i += 500) {
        const { outcomes } = await q.addMany(
          Array.from({ length: 500 }, (_, j) => ({
            topic,
            id: `job-${String(i + j).padStart(4, '0')}`,
            delay: 0,
            body: BODY,
          })),
        );
        assert.ok(outcomes.every((o) => o.status === 'created'));
      }
      assert.equal((await sweepAll(q)).moved, JOBS);
    });

    it('claiming them', async (t) => {
      const { bytes, result } = await aofGrowth(() => claimAll(q, topic, JOBS));
      claimed = result;
      assert.ok(
        claimed.every((j) => bytesOf([j]) === BODY_BYTES),
        'each claim carries its body',
      );
      t.diagnostic(`AOF +${mb(bytes)}`);
      assert.ok(
        bytes < FAR_BELOW,
        `claims of ${JOBS} jobs wrote ${mb(bytes)} to the AOF; their bodies are ${mb(ALL_BODIES)}`,
      );
    });

    it('failing them (dead-lettered: maxAttempts 1)', async (t) => {
      const { bytes } = await aofGrowth(async () => {
        for (const job of claimed) assert.equal((await q.engine.fail(topic, job.id, job, 'boom')).outcome, 'dead');
      });
      t.diagnostic(`AOF +${mb(bytes)}`);
      assert.ok(bytes < FAR_BELOW, `${JOBS} fails wrote ${mb(bytes)} to the AOF; their bodies are ${mb(ALL_BODIES)}`);
    });

    it('redriving them (one redrive of 1,000 dead jobs)', async (t) => {
      const { bytes, result } = await aofGrowth(() => q.redrive(topic, { count: JOBS }));
      assert.equal(result.redriven, JOBS);
      t.diagnostic(`AOF +${mb(bytes)}`);
      assert.ok(
        bytes < FAR_BELOW,
        `a redrive of ${JOBS} dead jobs wrote ${mb(bytes)} to the AOF; their bodies are ${mb(ALL_BODIES)}`,
      );
      assert.deepEqual((await q.get(topic, 'job-0007'))?.body, BODY, 'the body is intact');
    });

    it('starting their next attempts', async (t) => {
      assert.equal((await sweepAll(q)).moved, JOBS);
      claimed = await claimAll(q, topic, JOBS);
      const { bytes, result } = await aofGrowth(() => q.engine.start(topic, claimed));
      assert.ok(result.every(Boolean));
      t.diagnostic(`AOF +${mb(bytes)}`);
      assert.ok(
        bytes < FAR_BELOW,
        `starting ${JOBS} attempts wrote ${mb(bytes)} to the AOF; their bodies are ${mb(ALL_BODIES)}`,
      );
    });

    it('acking half of them (kept readable: retention 3600 s)', async (t) => {
      const half = claimed.slice(0, JOBS / 2);
      const { bytes } = await aofGrowth(async () => {
        for (const job of half) assert.equal(await q.engine.ack(topic, job.id, job), 'done');
      });
      t.diagnostic(`AOF +${mb(bytes)}`);
      assert.ok(
        bytes < FAR_BELOW / 2,
        `${half.length} acks wrote ${mb(bytes)} to the AOF; their bodies are ${mb(ALL_BODIES / 2)}`,
      );
      assert.deepEqual((await q.get(topic, half[0]!.id))?.body, BODY, 'the done job still has its body');
    });

    it('timing out the other half (one moveDue wave)', async (t) => {
      clock.advance(31_000);
      const { bytes, result } = await aofGrowth(() => sweepAll(q));
      assert.equal(result.deadLettered, JOBS / 2);
      t.diagnostic(`AOF +${mb(bytes)}`);
      assert.ok(
        bytes < FAR_BELOW / 2,
        `timing out ${JOBS / 2} attempts wrote ${mb(bytes)} to the AOF; their bodies are ${mb(ALL_BODIES / 2)}`,
      );
      assert.deepEqual((await q.get(topic, claimed.at(-1)!.id))?.body, BODY, 'the dead job still has its body');
    });
  });

  describe('a call replies, or writes, at most about one Lambda event of bodies (1 MiB)', () => {
    const big = { pad: 'y'.repeat(60_000) };

    async function deadJobs(q: Queue, topic: string, n: number) {
      await q.addMany(
        Array.from({ length: n }, (_, i) => ({ topic, id: `d-${String(i).padStart(3, '0')}`, delay: 0, body: big })),
      );
      await sweepAll(q);
      for (const job of await claimAll(q, topic, n)) await q.engine.fail(topic, job.id, job, 'boom');
    }

    it('one claim of 100 ready jobs with 60 KB bodies replies at most 1 MiB of them; the rest stay ready', async () => {
      const topic = uniqueTopic('claim');
      const q = makeQueue(redis, { [topic]: { concurrency: 100 } });
      await q.addMany(Array.from({ length: 100 }, (_, i) => ({ topic, id: `c-${i}`, delay: 0, body: big })));
      await sweepAll(q);
      const first = await q.engine.claim(topic, 100, 100);
      assert.ok(first.length >= 1, 'at least one job always fits');
      assert.ok(
        bytesOf(first) <= EVENT_PAYLOAD_BYTES,
        `one claim replied ${first.length} jobs with ${mb(bytesOf(first))} of bodies, over ${mb(EVENT_PAYLOAD_BYTES)}`,
      );
      assert.equal((await q.stats(topic)).ready, 100 - first.length, 'what was not claimed is still ready');
      const rest = await claimAll(q, topic, 100 - first.length);
      assert.equal(new Set([...first, ...rest].map((j) => j.id)).size, 100);
    });

    it('one page of 100 dead jobs with 60 KB bodies holds at most 1 MiB of them; the pages list every job once, in order', async () => {
      const topic = uniqueTopic('dead');
      const q = makeQueue(redis, { [topic]: { concurrency: 100, maxAttempts: 1 } });
      await deadJobs(q, topic, 100);
      const page = await q.listDead(topic, { limit: 100 });
      assert.ok(page.jobs.length >= 1);
      assert.ok(
        bytesOf(page.jobs) <= EVENT_PAYLOAD_BYTES,
        `one page held ${page.jobs.length} jobs with ${mb(bytesOf(page.jobs))} of bodies, over ${mb(EVENT_PAYLOAD_BYTES)}`,
      );
      const ids = page.jobs.map((j) => j.id);
      for (let next = page.next, pages = 0; next !== null && pages < 100; pages++) {
        const more = await q.listDead(topic, { limit: 100, after: next });
        ids.push(...more.jobs.map((j) => j.id));
        next = more.next;
      }
      assert.deepEqual(
        ids,
        Array.from({ length: 100 }, (_, i) => `d-${String(i).padStart(3, '0')}`),
      );
    });

    it('an add of 500 jobs with 60 KB bodies writes at most about 1 MiB of them per script call', async () => {
      const topic = uniqueTopic('add');
      const q = makeQueue(redis, { [topic]: {} });
      let created = 0;
      const blocks = await blocksWritten(async () => {
        const { outcomes } = await q.addMany(
          Array.from({ length: 500 }, (_, i) => ({ topic, id: `a-${i}`, delay: 60, body: big })),
        );
        created = outcomes.filter((o) => o.status === 'created').length;
      });
      assert.equal(created, 500);
      const largest = Math.max(...blocks);
      // the bodies of one call, plus each job's header, id and index entry in RESP
      assert.ok(
        largest <= EVENT_PAYLOAD_BYTES + 64 * 1024,
        `one add call wrote ${mb(largest)} (${blocks.length} calls), over ${mb(EVENT_PAYLOAD_BYTES)} of bodies`,
      );
      assert.ok(blocks.reduce((a, b) => a + b, 0) >= 500 * 60_000, 'the bodies were written');
    });
  });
});
