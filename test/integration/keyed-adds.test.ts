/**
 * Dedupe windows and debounce (an add's `dedupe` and `debounce`) against a real redis-server with a
 * fixed clock that the scripts take as Redis's: a dedupe key admits one job per window, even after
 * the job ran; a debounce key folds adds into the job that waits (last body wins, due a period after
 * the last add, never past its first add + maxWait) and starts a new job once the one before is due.
 * With several partitions, the key's entry and its job share the key's partition.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TopicInput } from '../../lib/core/queue-config';
import { jobService } from '../../lib/api/job-routes';
import { makeQueue, rejects, TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';
import { partitionOf } from '../../lib/engine';

/** The fields an HttpError's details name. */
const paths = (details: unknown) => (details as { path: string }[]).map((d) => d.path);

const SEC = 1000;

describe('keyed adds: dedupe and debounce', () => {
  const redis = useRedisServer();

  function setup(extra: TopicInput = {}, partitions = 1) {
    const topic = uniqueTopic('key');
    const clock = new TestClock();
    const q = makeQueue(
      redis.client(),
      { [topic]: { maxAttempts: 3, ttr: 3600, backoff: '10s', ...extra } },
      { clock, config: { retention: 60, partitions } },
    );
    return { topic, clock, q };
  }

  /** Runs every job of `topic` that is due now to done; returns the bodies run, in order. */
  async function runDue(q: ReturnType<typeof makeQueue>, topic: string): Promise<unknown[]> {
    await q.engine.sweep();
    const claimed = await q.engine.claimStarted(topic, 100);
    for (const c of claimed) assert.equal(await q.engine.ack(topic, c.id, c), 'done');
    return claimed.map((c) => c.body);
  }

  it('dedupe: a second add of the key within the window changes nothing and names the job that stands', async () => {
    const { topic, clock, q } = setup();
    const first = await jobService.add(q.engine, { topic, delay: 0, body: 1, dedupe: { key: 'order-7', window: 60 } });
    assert.equal(first.status, 'created');
    assert.match(first.job!.id, /^order-7::[A-Za-z0-9_-]{16}$/, 'its id starts with the key');
    clock.advance(10 * SEC);
    const again = await jobService.add(q.engine, { topic, delay: 0, body: 2, dedupe: { key: 'order-7', window: 60 } });
    assert.equal(again.status, 'duplicate');
    assert.equal(again.status === 'duplicate' && again.id, first.job!.id);
    assert.deepEqual(again.job!.body, 1, 'the job that stands, unchanged');
    assert.deepEqual(await runDue(q, topic), [1], 'one job runs');
    clock.advance(10 * SEC);
    const afterRun = await jobService.add(q.engine, { topic, delay: 0, body: 3, dedupe: { key: 'order-7' } });
    assert.equal(afterRun.status, 'duplicate', 'even after the first job ran (the topic default window: 1 h)');
    assert.equal(afterRun.job!.state, 'done');
  });

  it('dedupe: once the window ends, the next add creates a job; another key is independent', async () => {
    const { topic, clock, q } = setup({ dedupeWindow: 30 });
    const a = await jobService.add(q.engine, { topic, delay: 60, dedupe: { key: 'k' } });
    const other = await jobService.add(q.engine, { topic, delay: 60, dedupe: { key: 'k2' } });
    assert.deepEqual([a.status, other.status], ['created', 'created']);
    clock.advance(30 * SEC - 1);
    assert.equal((await jobService.add(q.engine, { topic, delay: 60, dedupe: { key: 'k' } })).status, 'duplicate');
    clock.advance(1); // the window (the topic's 30 s) ends
    const b = await jobService.add(q.engine, { topic, delay: 60, dedupe: { key: 'k' } });
    assert.equal(b.status, 'created');
    assert.notEqual(b.job!.id, a.job!.id);
  });

  it('dedupe: a duplicate whose job was purged after its retention still counts, with no job', async () => {
    const { topic, clock, q } = setup();
    const first = await jobService.add(q.engine, { topic, delay: 0, body: 1, dedupe: { key: 'p', window: 3600 } });
    await runDue(q, topic);
    clock.advance(120 * SEC); // past the retention (60 s)
    await q.engine.sweep();
    assert.equal(await q.get(topic, first.job!.id), null, 'purged');
    const again = await jobService.add(q.engine, { topic, delay: 0, body: 2, dedupe: { key: 'p' } });
    assert.deepEqual(again, { status: 'duplicate', job: null, id: first.job!.id, wake: false });
  });

  it('dedupe: a batch with one key twice creates one job; a caller id must start with the key', async () => {
    const { topic, q } = setup();
    const { outcomes } = await jobService.addMany(q.engine, [
      { topic, delay: 5, body: 'a', dedupe: { key: 'b' } },
      { topic, delay: 5, body: 'b', dedupe: { key: 'b' } },
      { topic, id: 'b::mine', delay: 5, body: 'c', dedupe: { key: 'c' } },
      { topic, id: 'c::mine', delay: 5, body: 'd', dedupe: { key: 'c' } },
    ]);
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['created', 'duplicate', 'invalid', 'created'],
    );
    const invalid = outcomes[2]!;
    assert.ok(invalid.status === 'invalid');
    assert.equal(paths(invalid.error.details)[0], 'id');
    assert.equal(outcomes[3]!.status === 'created' && outcomes[3]!.job.id, 'c::mine');
  });

  it('refuses bad keyed input with 400s naming the field', async () => {
    const { topic, q } = setup();
    const bad = async (input: object, path: string) => {
      const error = await rejects(jobService.add(q.engine, { topic, ...input }), 400, 'VALIDATION_FAILED');
      assert.ok(paths(error.details).includes(path), `${JSON.stringify(input)}: ${JSON.stringify(error.details)}`);
    };
    await bad({ delay: 1, dedupe: { key: 'a::b' } }, 'dedupe.key');
    await bad({ delay: 1, dedupe: { key: 'a', window: 0 } }, 'dedupe.window');
    await bad({ delay: 1, dedupe: { key: 'a', windw: 5 } }, 'dedupe.windw');
    await bad({ delay: 1, dedupe: 'a' }, 'dedupe');
    await bad({ dedupe: { key: 'a' }, debounce: { key: 'a', period: 1 } }, 'debounce');
    await bad({ debounce: { key: 'a', period: 1 }, delay: 5 }, 'delay');
    await bad({ debounce: { key: 'a' } }, 'debounce.period');
    await bad({ debounce: { key: 'a', period: 2, maxWait: 1 } }, 'debounce.maxWait');
    await bad({ delay: 1, priority: 1.5 }, 'priority');
    await bad({ delay: 1, priority: 1001 }, 'priority');
    const put = await rejects(
      jobService.put(q.engine, { topic, id: 'x' }, { delay: 1, dedupe: { key: 'a' } }),
      400,
      'VALIDATION_FAILED',
    );
    assert.equal(paths(put.details)[0], 'dedupe');
  });

  it('debounce: adds fold into the job that waits, last body wins, due a period after the last add', async () => {
    const { topic, clock, q } = setup();
    const start = clock.now;
    const d = { key: 'user-9', period: 1, maxWait: 5 };
    const first = await jobService.add(q.engine, { topic, body: 'a', debounce: d });
    assert.equal(first.status, 'created');
    assert.equal(first.job!.runAt, new Date(start + SEC).toISOString());
    clock.advance(500);
    const second = await jobService.add(q.engine, { topic, body: 'b', debounce: d });
    assert.equal(second.status, 'debounced');
    assert.equal(second.job!.id, first.job!.id);
    assert.equal(second.job!.runAt, new Date(start + 1500).toISOString());
    assert.equal((await q.get(topic, first.job!.id))!.state, 'delayed');
    assert.deepEqual((await q.get(topic, first.job!.id))!.body, 'b');
    clock.advance(999);
    assert.deepEqual(await runDue(q, topic), [], 'not due before its quiet period ends');
    clock.advance(1);
    assert.deepEqual(await runDue(q, topic), ['b'], 'the last body runs once the period is quiet');
    const next = await jobService.add(q.engine, { topic, body: 'c', debounce: d });
    assert.equal(next.status, 'created', 'once its job started, the next add starts a new one');
    assert.notEqual(next.job!.id, first.job!.id);
  });

  it('debounce: a steady stream of adds runs at the max wait, then starts again', async () => {
    const { topic, clock, q } = setup();
    const start = clock.now;
    const d = { key: 's', period: 1, maxWait: 5 };
    const ids = new Set<string>();
    const ran: unknown[] = [];
    for (let i = 0; i < 120; i += 1) {
      const o = await jobService.add(q.engine, { topic, body: i, debounce: d });
      ids.add(o.job!.id);
      ran.push(...(await runDue(q, topic)));
      clock.advance(100); // an add every 100 ms: never quiet for a period
    }
    // jobs created at 0, 5.0 s (5.0 is due exactly then: a new one), ... : each runs at its first add + 5 s
    assert.equal(ids.size, 3, `12 s of adds make 3 jobs: ${[...ids].join(' ')}`);
    assert.deepEqual(ran, [49, 99], 'each ran with the last body added before it was due');
    assert.ok(clock.now - start >= 11_900);
  });

  it('debounce: a job that started and waits for its retry is not folded into; the next add starts a new one', async () => {
    const { topic, clock, q } = setup({ backoff: '30s' });
    const d = { key: 'r', period: 1, maxWait: 60 };
    const first = await jobService.add(q.engine, { topic, body: 1, debounce: d });
    clock.advance(SEC);
    await q.engine.sweep();
    const [claimed] = await q.engine.claimStarted(topic, 1);
    assert.equal(claimed?.id, first.job!.id);
    const failed = await q.engine.fail(topic, claimed!.id, claimed!, 'boom');
    assert.equal(failed.outcome, 'retry');
    const job = (await q.get(topic, first.job!.id))!;
    assert.ok(Date.parse(job.runAt) > clock.now, 'waits for its retry, pending and not yet due');
    const next = await jobService.add(q.engine, { topic, body: 2, debounce: d });
    assert.equal(next.status, 'created', 'it started: the add starts a new job');
    assert.deepEqual((await q.get(topic, first.job!.id))!.body, 1, 'the retry keeps its body');
  });

  it('debounce: a cancelled job is not folded into; the next add starts a new one', async () => {
    const { topic, q } = setup();
    const d = { key: 'c', period: 10 };
    const first = await jobService.add(q.engine, { topic, body: 1, debounce: d });
    await q.cancel(topic, first.job!.id);
    const second = await jobService.add(q.engine, { topic, body: 2, debounce: d });
    assert.equal(second.status, 'created');
    assert.notEqual(second.job!.id, first.job!.id);
  });

  it('with several partitions a keyed job lives in its key partition, and dedupe holds across ids', async () => {
    const { topic, clock, q } = setup({}, 8);
    const keys = Array.from({ length: 20 }, (_, i) => `tenant-${i}`);
    for (const key of keys) {
      const o = await jobService.add(q.engine, { topic, delay: 0, body: key, dedupe: { key } });
      assert.equal(o.status, 'created');
      assert.equal(partitionOf(topic, o.job!.id, 8), partitionOf(topic, key, 8));
    }
    clock.advance(SEC);
    for (const key of keys)
      assert.equal((await jobService.add(q.engine, { topic, delay: 0, dedupe: { key } })).status, 'duplicate');
    const bodies = [];
    for (let i = 0; i < 3; i += 1) bodies.push(...(await runDue(q, topic)));
    assert.deepEqual(bodies.sort(), [...keys].sort());
  });
});
