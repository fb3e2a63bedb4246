/**
 * Callbacks, against a real redis-server: a job that names a callback notifies each end it names (done, dead,
 * cancelled, expired) with a job added to the callback's topic, whose id is made of the end (the same each time the
 * outbox hands the entry out). The end and its outbox entry are written by one script: an end whose notifier never
 * drained (a process that died after the end) is drained by the sweeper's look (drainCallbacks), and an entry drained
 * twice adds one job.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TopicInput } from '../../lib/core/queue-config';
import { makeQueue, rejects, TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';
import { callbackId, outboxKey, run, scripts, topicKeys } from '../../lib/testing';

const W = { name: 'producer', scope: 'write', topics: null } as const;
const ALL = ['done', 'dead', 'cancelled', 'expired'];

describe('callbacks', () => {
  const redis = useRedisServer();

  function setup(source: TopicInput = {}) {
    const topic = uniqueTopic('cbsrc');
    const after = uniqueTopic('cbafter');
    const hook = uniqueTopic('cbhook');
    const clock = new TestClock();
    const q = makeQueue(
      redis.client(),
      {
        [topic]: { maxAttempts: 1, ttr: 60, ...source },
        [after]: { maxAttempts: 3, ttr: 60 },
        [hook]: { kind: 'webhook', maxAttempts: 3, ttr: 60 },
      },
      { clock, config: { retention: 600 } },
    );
    const outbox = outboxKey(topicKeys(0, topic, 1).jobs);
    return { topic, after, hook, clock, q, outbox };
  }

  /** The jobs of `topic` once due jobs moved to ready (a callback's job is added due now). */
  async function notices(q: ReturnType<typeof makeQueue>, topic: string) {
    await q.engine.sweep();
    return (await q.listJobs(topic, { state: 'ready' })).jobs;
  }

  /** Claims, starts and acks (or fails, with `error`) the one due job of `topic`. */
  async function runOnce(q: ReturnType<typeof makeQueue>, topic: string, error?: string) {
    await q.engine.sweep();
    const claimed = await q.engine.claim(topic, 1);
    assert.equal(claimed.length, 1);
    assert.deepEqual(await q.engine.start(topic, claimed), [true]);
    if (error === undefined) return q.engine.ack(topic, claimed[0]!.id, claimed[0]!);
    return (await q.engine.fail(topic, claimed[0]!.id, claimed[0]!, error)).outcome;
  }

  it('done: the ack adds the callback job before it answers; its body says the outcome', async () => {
    const { topic, after, q, outbox } = setup();
    const added = await q.add({ topic, id: 'a', delay: 0, callback: { topic: after, on: ALL } }, W);
    assert.deepEqual(added.job.callback, { topic: after, on: ALL });
    assert.equal(await runOnce(q, topic), 'done');
    const id = `${topic}.a.done.${Date.parse((await q.get(topic, 'a'))!.createdAt)}`;
    const notice = await q.get(after, id);
    assert.ok(notice, 'the callback job is there when the ack answered');
    assert.deepEqual(
      { ...(notice.body as object), endedAt: undefined },
      { callbackId: id, topic, id: 'a', outcome: 'done', attempts: 1, endedAt: undefined, lastError: null },
    );
    assert.equal(notice.callback, undefined, 'a callback job notifies nothing itself');
    assert.equal(await redis.client().zcard(outbox), 0, 'the outbox is empty again');
  });

  it('dead: the last failed attempt notifies with its error; a retry does not', async () => {
    const { topic, after, q, clock } = setup({ maxAttempts: 2, backoff: '1s' });
    await q.add({ topic, id: 'd', delay: 0, callback: { topic: after } }, W);
    assert.equal(await runOnce(q, topic, 'first'), 'retry');
    assert.equal((await notices(q, after)).length, 0, 'a retry is not an end');
    clock.advance(1000);
    assert.equal(await runOnce(q, topic, 'second'), 'dead');
    const [notice] = await notices(q, after);
    assert.deepEqual(
      [notice?.id, (notice?.body as { outcome: string; attempts: number; lastError: string }) ?? null],
      [
        `${topic}.d.dead.${(await q.get(topic, 'd'))!.version}`,
        {
          callbackId: notice?.id,
          topic,
          id: 'd',
          outcome: 'dead',
          attempts: 2,
          endedAt: new Date(clock.now).toISOString(),
          lastError: 'second',
        },
      ],
    );
  });

  it('cancelled and expired notify when named, and not when the callback leaves them out', async () => {
    const { topic, after, q, clock } = setup({ ttr: 60 });
    await q.add({ topic, id: 'c', delay: 60, callback: { topic: after, on: ['cancelled'] } }, W);
    await q.add({ topic, id: 'n', delay: 60, callback: { topic: after } }, W);
    await q.add({ topic, id: 'e', delay: 0, expireAfter: 1, callback: { topic: after, on: ['expired'] } }, W);
    await q.cancel(topic, 'c', { by: 'producer' });
    await q.cancel(topic, 'n', { by: 'producer' });
    clock.advance(1000);
    await q.engine.sweep();
    const claimed = await q.engine.claim(topic, 10);
    assert.deepEqual(
      claimed.map((j) => j.id),
      ['e'],
    );
    assert.deepEqual(await q.engine.start(topic, claimed), [false], 'expired at its start');
    // the expiry was found by a script no caller drains after: the sweeper's look does
    const report = await q.engine.drainCallbacks();
    assert.equal(report.notified, 1);
    const ids = (await notices(q, after)).map((j) => (j.body as { id: string }).id);
    assert.deepEqual(ids.sort(), ['c', 'e']);
  });

  it('an end whose notifier died is drained by the sweeper look; an entry drained twice adds one job', async () => {
    const { topic, after, q, outbox } = setup();
    await q.add({ topic, id: 'x', delay: 0, callback: { topic: after } }, W);
    await q.engine.sweep();
    const [claimed] = await q.engine.claim(topic, 1);
    // the ack script alone, as a process that died right after it ran would leave things
    const k = topicKeys(0, topic, 1);
    const codes = await run(
      redis.client(),
      scripts.ackJobs([k.jobs, k.bodies, k.running, k.done], {
        clock: q.engine.fixedNow()!,
        retentionMs: 600_000,
        attempts: [{ id: 'x', attempt: claimed!.attempt, claim: claimed!.claim }],
      }),
    );
    assert.deepEqual(codes, [2], 'ACKED_NOTIFY');
    const [entry] = await redis.client().zrange(outbox, 0, -1);
    assert.ok(entry, 'the end and its entry were written together');
    assert.equal((await q.engine.drainCallbacks()).notified, 1);
    // as if a failover lost the entry's removal: the same entry again
    await redis.client().zadd(outbox, 0, entry);
    assert.equal((await q.engine.drainCallbacks()).notified, 1, 'handed out again, found added');
    const found = await notices(q, after);
    assert.equal(found.length, 1, 'one job for one end');
    const created = Date.parse((await q.get(topic, 'x'))!.createdAt);
    assert.equal(found[0]!.id, callbackId(topic, { id: 'x', end: 'done', mark: String(created) }));
    assert.equal(await redis.client().zcard(outbox), 0);
  });

  it("a URL goes to the webhook topic; a topic's default applies unless the job says null", async () => {
    const { topic, hook, q } = setup();
    const added = await q.add({ topic, id: 'u', delay: 0, callback: { url: 'https://example.com/cb?a=1|2' } }, W);
    assert.deepEqual(added.job.callback, { topic: hook, url: 'https://example.com/cb?a=1%7C2', on: ['done', 'dead'] });
    assert.equal(await runOnce(q, topic), 'done');
    const [notice] = await notices(q, hook);
    assert.equal(notice?.url, 'https://example.com/cb?a=1%7C2');

    const other = uniqueTopic('cbdef');
    const q2 = makeQueue(redis.client(), {
      [other]: { callback: { topic: 'sink', on: ['cancelled'] } },
      sink: {},
    });
    assert.deepEqual((await q2.add({ topic: other, id: 'd1', delay: 60 }, W)).job.callback, {
      topic: 'sink',
      on: ['cancelled'],
    });
    assert.equal((await q2.add({ topic: other, id: 'd2', delay: 60, callback: null }, W)).job.callback, undefined);
  });

  it('400s name the field', async () => {
    const { topic, after, hook, q } = setup();
    const bad = async (callback: unknown, path: string) => {
      const error = await rejects(q.add({ topic, delay: 0, callback }, W), 400, 'VALIDATION_FAILED');
      assert.ok(
        (error.details as { path: string }[] | undefined)?.some((d) => d.path === path),
        `${JSON.stringify(callback)}: ${JSON.stringify(error.details)}`,
      );
    };
    await bad('x', 'callback');
    await bad({ topic: 'nope' }, 'callback.topic');
    await bad({}, 'callback.topic');
    await bad({ topic: after, on: ['done', 'done'] }, 'callback.on');
    await bad({ topic: after, on: ['finished'] }, 'callback.on');
    await bad({ topic: after, url: 'https://example.com' }, 'callback.url');
    await bad({ topic: hook }, 'callback.url');
    await bad({ url: 'ftp://example.com' }, 'callback.url');
    await bad({ topic: after, extra: 1 }, 'callback.extra');
  });
});
