import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { makeQueue, uniqueTopic } from '../support/queue';
import { startRedis, type RedisProcess } from '../support/redis';
import { topicKeys, moveDue, engineContext } from '../../lib/testing';

describe('engine under concurrency (real redis-server)', () => {
  let server: RedisProcess;
  const clients: Redis[] = [];
  const connect = () => {
    const client = new Redis(server.url);
    clients.push(client);
    return client;
  };
  before(async () => {
    server = await startRedis();
  });
  after(async () => {
    for (const c of clients) c.disconnect();
    await server?.stop();
  });

  async function addReady(topic: string, count: number, redis: Redis) {
    const q = makeQueue(redis, { [topic]: {} });
    for (let i = 0; i < count; i += 500) {
      const jobs = Array.from({ length: Math.min(500, count - i) }, (_, j) => ({
        topic,
        id: `job-${i + j}`,
        delay: 0,
        body: { n: i + j },
      }));
      const { outcomes } = await q.addMany(jobs);
      assert.ok(outcomes.every((o) => o.status === 'created'));
    }
  }

  it('8 concurrent claimers draining 20,000 ready jobs claim each exactly once', async () => {
    const topic = uniqueTopic('claim');
    const total = 20_000;
    await addReady(topic, total, connect());
    const mover = makeQueue(connect(), { [topic]: {} });
    let moved = 0;
    for (;;) {
      const r = await mover.engine.sweep(5000);
      moved += r.moved;
      if (!r.more) break;
    }
    assert.equal(moved, total);

    const seen = new Map<string, number>();
    const claimers = Array.from({ length: 8 }, async () => {
      const q = makeQueue(connect(), { [topic]: { concurrency: 10_000 } });
      let mine = 0;
      for (;;) {
        const batch = await q.engine.claim(topic, 37, Number.MAX_SAFE_INTEGER);
        if (batch.length === 0) return mine;
        mine += batch.length;
        for (const job of batch) seen.set(job.id, (seen.get(job.id) ?? 0) + 1);
      }
    });
    const perClaimer = await Promise.all(claimers);
    const duplicates = [...seen.values()].filter((n) => n > 1).length;
    assert.equal(duplicates, 0);
    assert.equal(seen.size, total);
    assert.equal(
      perClaimer.reduce((a, b) => a + b, 0),
      total,
    );
    assert.ok(perClaimer.filter((n) => n > 0).length > 1, `work was shared: ${perClaimer.join(',')}`);
    assert.equal(await clients[0]!.zcard(topicKeys(0, topic, 1).running), total);
  });

  it('moveDue run concurrently from 4 connections moves each due job exactly once', async () => {
    const topic = uniqueTopic('move');
    const total = 20_000;
    await addReady(topic, total, connect());
    const moves = Array.from({ length: 4 }, async () => {
      const q = makeQueue(connect(), { [topic]: {} });
      let mine = 0;
      for (;;) {
        const r = await moveDue(engineContext(q.engine), q.engine.topic(topic), 0, 100);
        mine += r.moved;
        if (!r.more) return mine;
      }
    });
    const perMover = await Promise.all(moves);
    assert.equal(
      perMover.reduce((a, b) => a + b, 0),
      total,
    );
    assert.ok(perMover.filter((n) => n > 0).length > 1, `work was shared: ${perMover.join(',')}`);
    const ready = await clients[0]!.lrange(topicKeys(0, topic, 1).ready, 0, -1);
    assert.equal(ready.length, total);
    assert.equal(new Set(ready).size, total);
    assert.equal(await clients[0]!.zcard(topicKeys(0, topic, 1).delayed), 0);
  });
});
