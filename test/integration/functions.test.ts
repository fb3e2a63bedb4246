/**
 * The scripts as a Redis Functions library (lib/engine/script-runner.ts scriptLibrary): loaded where it is
 * missing, each call starting from a clean per-call state, and EVALSHA when the server refuses
 * functions. Real redis-servers; counts come from INFO commandstats.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { makeQueue, TestClock, uniqueTopic } from '../support/queue';
import { startRedis, useRedisServer, type RedisProcess } from '../support/redis';
import { SCRIPTS, scriptLibrary } from '../../lib/testing';

/** Calls per command since the last RESETSTAT (INFO and CONFIG left out). */
async function calls(redis: Redis): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const [, name, n] of (await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (name !== 'info' && !name!.startsWith('config')) counts[name!] = Number(n);
  }
  return counts;
}

/** Adds, sweeps, claims, starts and acks one job of a fresh topic on `redis`; fails the test if any step does not. */
async function lifecycle(redis: Redis): Promise<void> {
  const clock = new TestClock();
  const topic = uniqueTopic('fn');
  const q = makeQueue(redis, { [topic]: {} }, { clock });
  assert.equal((await q.add({ topic, id: 'a', delay: 1, body: { n: 1 } })).status, 'created');
  clock.advance(1000);
  assert.equal((await q.engine.sweep()).moved, 1);
  const claimed = await q.engine.claim(topic, 10);
  assert.deepEqual(
    claimed.map((job) => job.id),
    ['a'],
  );
  assert.deepEqual(await q.engine.start(topic, claimed), [true]);
  assert.equal(await q.engine.ack(topic, 'a', claimed[0]!), 'done');
  assert.equal((await q.get(topic, 'a'))?.state, 'done');
}

describe('the scripts as a function library', () => {
  const server = useRedisServer();

  it('is loaded by the first call on a server that lacks it, once, and every call is an FCALL', async () => {
    const admin = server.client();
    await admin.function('FLUSH');
    await admin.config('RESETSTAT');
    const redis = new Redis(server.server().url);
    try {
      await lifecycle(redis);
      const libraries = (await admin.function('LIST')) as unknown[][];
      const ours = libraries.map((entry) => entry[1]).filter((name) => String(name).startsWith('dq_'));
      assert.deepEqual(ours, [scriptLibrary().name]);
      const functions = libraries.find((entry) => entry[1] === scriptLibrary().name)![5] as unknown[][];
      assert.equal(functions.length, Object.keys(SCRIPTS).length, 'a function per script');
      const counts = await calls(admin);
      assert.equal(counts['function|load'], 1);
      assert.ok((counts.fcall ?? 0) >= 5, `fcall: ${counts.fcall}`);
      assert.equal(counts.evalsha ?? 0, 0);
      assert.equal(counts.eval ?? 0, 0);
    } finally {
      redis.disconnect();
    }
  });

  it('a GET (the script and a read in one transaction) is the first call after FUNCTION FLUSH: it loads the library and answers', async () => {
    const redis = server.client();
    const topic = uniqueTopic('fn-get');
    const q = makeQueue(redis, { [topic]: {} }, { clock: new TestClock() });
    // a body kept apart: the transaction reads it
    await q.add({ topic, id: 'big', delay: 60, body: { pad: 'x'.repeat(2000) } });
    await redis.function('FLUSH');
    const job = await q.get(topic, 'big');
    assert.equal(job?.state, 'delayed');
    assert.deepEqual(job?.body, { pad: 'x'.repeat(2000) });
  });

  it("starts every call from a clean state: a fixed clock given to one call is not the next call's clock", async () => {
    const redis = server.client();
    const topic = uniqueTopic('fn-clock');
    const fixed = new TestClock(Date.UTC(2040, 0, 1)); // far ahead of the Redis clock
    const onFixed = makeQueue(redis, { [topic]: {} }, { clock: fixed });
    const onRedis = makeQueue(redis, { [topic]: {} });
    const first = await onFixed.add({ topic, id: 'fixed', delay: 60 });
    const second = await onRedis.add({ topic, id: 'redis', delay: 60 });
    const ticksOf = (ms: number) => (ms - Date.UTC(2025, 0, 1)) * 50; // lua/includes/clock.lua clockTicks
    assert.equal(first.job.version, ticksOf(fixed.now));
    const seconds = Number((await redis.time())[0]);
    assert.ok(
      second.job.version <= ticksOf((seconds + 1) * 1000),
      `the second add's version ${second.job.version} is on the Redis clock, not the first call's 2040`,
    );
    assert.ok(Date.parse(second.job.runAt) < Date.UTC(2039, 0, 1), `runAt ${second.job.runAt} is on the Redis clock`);
  });
});

describe('the library on a Redis out of memory (maxmemory, noeviction)', () => {
  const server = useRedisServer({ args: ['--maxmemory-policy', 'noeviction'] });

  it('answers a listing (a no-writes function) and refuses a write whole, changing nothing', async () => {
    const redis = server.client();
    const topic = uniqueTopic('fn-oom');
    const q = makeQueue(redis, { [topic]: {} }, { clock: new TestClock() });
    await q.add({ topic, id: 'kept', delay: 60, body: { n: 1 } });
    const before = await redis.dbsize();
    await redis.config('SET', 'maxmemory', '1'); // below what is used: every write is refused
    try {
      assert.equal((await q.listJobs(topic, { state: 'delayed' })).jobs.length, 1);
      await assert.rejects(q.add({ topic, id: 'refused', delay: 60 }), /^ReplyError: OOM|OOM command not allowed/);
    } finally {
      await redis.config('SET', 'maxmemory', '0');
    }
    assert.equal(await redis.dbsize(), before, 'no key written');
    assert.equal(await q.get(topic, 'refused'), null);
  });
});

describe('a server that refuses functions: every call runs as EVALSHA', () => {
  let renamed: RedisProcess;
  let limited: RedisProcess;
  before(async () => {
    [renamed, limited] = await Promise.all([startRedis({ args: ['--rename-command', 'FUNCTION', ''] }), startRedis()]);
  });
  after(async () => {
    await Promise.all([renamed?.stop(), limited?.stop()]);
  });

  for (const [label, connect] of [
    ['FUNCTION renamed away (rename-command)', async () => new Redis(renamed.url)],
    [
      'an ACL user that may not FUNCTION LOAD',
      async () => {
        const admin = new Redis(limited.url);
        await admin.acl('SETUSER', 'queue', 'on', '>secret', '~*', '+@all', '-function');
        admin.disconnect();
        return new Redis({ port: limited.port, host: '127.0.0.1', username: 'queue', password: 'secret' });
      },
    ],
  ] as const) {
    it(`${label}: the lifecycle runs, on EVALSHA after one refused FCALL`, async () => {
      const admin = new Redis(label.startsWith('FUNCTION') ? renamed.url : limited.url);
      const redis = await connect();
      try {
        await admin.config('RESETSTAT');
        await lifecycle(redis);
        const counts = await calls(admin);
        assert.equal(counts.fcall, 1, 'one FCALL, refused (no library), then none');
        assert.ok((counts.evalsha ?? 0) + (counts.eval ?? 0) >= 5, JSON.stringify(counts));
      } finally {
        redis.disconnect();
        admin.disconnect();
      }
    });
  }
});
