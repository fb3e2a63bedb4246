/**
 * The per-job cost budget of the hot path (DESIGN.md, "Per-job cost budget"), held without timing
 * anything: a fixed workload on a redis-server of its own, counted by Redis itself (INFO
 * commandstats, reset before each path): script calls a job costs on each path, and every command
 * Redis runs for it (those the scripts run included). The counts are deterministic (a fixed clock,
 * fixed jitter, fixed ids), so this fails exactly when a change makes a path cost more than its
 * written budget; the timings stay in the benchmarks.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import type { Queue } from '../support/queue';
import type { ClaimedJob } from '../../lib/engine';
import { makeQueue, TestClock, uniqueTopic } from '../support/queue';
import { useRedisServer } from '../support/redis';
import { partitionOf } from '../../lib/testing';

const JOBS = 1000;

/** The budget per job, per path: script calls, and every command Redis runs (inside scripts too). At most. */
export const BUDGET = {
  /**
   * POST /jobs: one job per request (addJobs-5: TIME, the record's HGET and HSET, HMGET of the versions' #seq with the
   * closing mark and the key's number, ZADD, one read of the head).
   */
  addOne: { scriptCalls: 1, commands: 6 },
  /** POST /jobs/batch: 500 jobs per request, in calls of 100 (ADD_BATCH). */
  addBatch: { scriptCalls: 0.01, commands: 3.04 },
  /**
   * The sweep that moves due jobs to ready (moveDue-8, up to moveLimit jobs a call; the record is
   * not touched). A call that leaves jobs ready reads the topic's pause mark (one HEXISTS), so a
   * paused topic's ready jobs do not make the sweeper ask for fan-outs; it reads the head of the
   * topic's schedules (one ZRANGE), so a sweep makes no dueSchedules call while none is due: 0.0163
   * commands a job here.
   */
  sweep: { scriptCalls: 0.0014, commands: 0.017 },
  /** Claims of 10 jobs (claimJobs-7). */
  claim: { scriptCalls: 0.1, commands: 4.4 },
  /**
   * Start marks of 10 attempts, their lateness recorded (startAttempts-5: the minute's HGET, a bin's HINCRBY; the
   * minute's HSET only for a new minute or a new largest value, PEXPIRE once a minute).
   */
  start: { scriptCalls: 0.1, commands: 2.31 },
  /** A handler's own claims of 10 jobs, started in the same call (claimJobs-7 with start: claim and start in one). */
  claimStarted: { scriptCalls: 0.1, commands: 4.61 },
  /** Acks, one at a time (ackJobs-4 with one attempt: TIME, the record's HGET and HSET, ZREM, ZADD to done). */
  ack: { scriptCalls: 1, commands: 5 },
  /**
   * Acks of 10 attempts made in one turn of the event loop (a handler whose batch ends at once): one ackJobs-4 call.
   */
  ackTogether: { scriptCalls: 0.1, commands: 4.1 },
  /**
   * A handler draining one job at a time: each call acks its last job and claims and starts the next
   * (engine.ackAndClaimStarted: claimJobs-7 with start, carrying the ack).
   */
  ackClaimNext: { scriptCalls: 1, commands: 14 },
} as const;

/** The budget per job of a flow topic's paths (100 keys, 10 jobs each; DESIGN.md, "Per-job cost budget"). At most. */
export const FLOW_BUDGET = {
  /**
   * moveDue-8 with the flow flag: the due jobs' keys read off their delayed members (no record read), the keys' states
   * in one HMGET; each key's due ids pushed behind its head in one RPUSH, or, for a key with none, the first made its
   * head (the rest in one RPUSH) and the key put in the ring; the states it changed written at the end in one HSET.
   */
  flowSweep: { scriptCalls: 0.002, commands: 0.13 },
  /**
   * claimFlow-6 with start, 10 a call: per job a lane pop (the key's next head) and the claim as
   * claimJobs-7's; keys come off the ring as many at a time as the call still wants (LPOP with a
   * count), their states read in one HMGET, and at the end the states written in one HSET and the
   * keys put back in one RPUSH; once a call the ring's length (LLEN: the share of each key), the
   * lanes' count (HINCRBY), and whether any key has pinned limits, read with the pause mark
   * (HMGET). A key's turn is up to 4 jobs: here (100 keys of 10 jobs, calls of 10) a key's last turn
   * gives 2, and a call that meets one takes keys off the ring a second time (LPOP, HMGET) and puts
   * back at its head those it did not visit (LPUSH): 6.20 measured.
   */
  flowClaimStarted: { scriptCalls: 0.1, commands: 6.21 },
  /** The same with two keys: a visit claims each key's share of the call (5 of 10). */
  flowClaimStartedTwoKeys: { scriptCalls: 0.1, commands: 6.11 },
  /**
   * ackJobs-4 of 10 attempts together: the ack as ackJobs-4's, the keys' slots back: their states read in one HMGET and
   * written in one HSET.
   */
  flowAckTogether: { scriptCalls: 0.1, commands: 4.3 },
} as const;

type Counts = { scriptCalls: number; commands: number; byCommand: Record<string, number> };

/** Calls per command since the last reset, from INFO commandstats (FCALL, EVAL and EVALSHA are the script calls). */
async function counted(redis: Redis): Promise<Counts> {
  const byCommand: Record<string, number> = {};
  for (const line of (await redis.info('commandstats')).split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (m) byCommand[m[1]!] = Number(m[2]);
  }
  // this read, and the reset
  for (const name of Object.keys(byCommand)) if (name === 'info' || name.startsWith('config')) delete byCommand[name];
  const scriptCalls = (byCommand.fcall ?? 0) + (byCommand.evalsha ?? 0) + (byCommand.eval ?? 0);
  const commands = Object.values(byCommand).reduce((a, b) => a + b, 0);
  return { scriptCalls, commands, byCommand };
}

/** A handler's drain: claims with start, 10 a call, until JOBS are in `into`. */
async function claimAllStarted(q: Queue, topic: string, into: ClaimedJob[]): Promise<void> {
  while (into.length < JOBS) {
    const batch = await q.engine.claimStarted(topic, 10);
    assert.ok(batch.length > 0, 'ready jobs are left to claim');
    into.push(...batch);
  }
}

async function measure(redis: Redis, work: () => Promise<unknown>): Promise<Counts> {
  await redis.config('RESETSTAT');
  await work();
  return counted(redis);
}

const perJob = (c: Counts, jobs: number) => ({ scriptCalls: c.scriptCalls / jobs, commands: c.commands / jobs });

describe('per-job cost budget of the hot path (real redis-server, INFO commandstats)', () => {
  const server = useRedisServer();
  let redis: Redis;
  let q: Queue;
  let topic: string;
  let clock: TestClock;

  before(async () => {
    redis = server.client();
    clock = new TestClock();
    topic = uniqueTopic('cost');
    q = makeQueue(redis, { [topic]: { concurrency: 10_000 } }, { clock });
    // warm up: the library loaded (the first call finds no function and loads it) and every path run once
    await q.add({ topic, id: 'warm', delay: 1, body: { warm: true } });
    await q.addMany([{ topic, id: 'warm-b', delay: 1 }]);
    clock.advance(1000);
    await q.engine.sweep();
    const claimed = await q.engine.claim(topic, 10);
    await q.engine.start(topic, claimed);
    for (const job of claimed) await q.engine.ack(topic, job.id, job);
  });

  const check = (path: keyof typeof BUDGET, c: Counts, jobs: number) => {
    const got = perJob(c, jobs);
    const budget = BUDGET[path];
    const detail = `${path}: ${got.scriptCalls} script calls and ${got.commands} commands a job (budget ${budget.scriptCalls} and ${budget.commands}); by command: ${JSON.stringify(c.byCommand)}`;
    console.log(detail);
    if (got.scriptCalls > budget.scriptCalls + 1e-9 || got.commands > budget.commands + 1e-9) over.push(detail);
  };
  const over: string[] = [];

  it('add, sweep, claim, start and ack: a job costs at most its budget on each path', async () => {
    const body = { order: 'x'.repeat(150) }; // a 150-200 byte body, as the benchmarks use
    const one = await measure(redis, async () => {
      for (let i = 0; i < JOBS; i++)
        assert.equal((await q.add({ topic, id: `one-${i}`, delay: 60, body })).status, 'created');
    });
    check('addOne', one, JOBS);
    const batch = await measure(redis, async () => {
      for (let i = 0; i < 2 * JOBS; i += 500) {
        const { outcomes } = await q.addMany(
          Array.from({ length: 500 }, (_, j) => ({ topic, id: `batch-${i + j}`, delay: 60, body })),
        );
        assert.ok(outcomes.every((o) => o.status === 'created'));
      }
    });
    check('addBatch', batch, 2 * JOBS);

    const due = 3 * JOBS;
    clock.advance(60_000);
    let moved = 0;
    const swept = await measure(redis, async () => {
      for (let more = true; more;) {
        const r = await q.engine.sweep();
        moved += r.moved;
        more = r.more;
      }
    });
    assert.equal(moved, due);
    check('sweep', swept, due);
    const claimed: Awaited<ReturnType<typeof q.engine.claim>> = [];
    const claims = await measure(redis, async () => {
      while (claimed.length < due) {
        const batch = await q.engine.claim(topic, 10);
        assert.ok(batch.length > 0, 'ready jobs are left to claim');
        claimed.push(...batch);
      }
    });
    assert.equal(claimed.length, due);
    check('claim', claims, due);
    const started = await measure(redis, async () => {
      for (let i = 0; i < claimed.length; i += 10)
        assert.ok((await q.engine.start(topic, claimed.slice(i, i + 10))).every(Boolean));
    });
    check('start', started, due);
    const acked = await measure(redis, async () => {
      for (const job of claimed) assert.equal(await q.engine.ack(topic, job.id, job), 'done');
    });
    check('ack', acked, due);

    // a handler's drain: claimed and started in one call, then acked
    for (let i = 0; i < JOBS; i += 500)
      await q.addMany(Array.from({ length: 500 }, (_, j) => ({ topic, id: `drain-${i + j}`, delay: 60, body })));
    clock.advance(60_000);
    for (let more = true; more;) more = (await q.engine.sweep()).more;
    const drained: typeof claimed = [];
    const claimedStarted = await measure(redis, () => claimAllStarted(q, topic, drained));
    check('claimStarted', claimedStarted, JOBS);
    assert.deepEqual(
      await q.engine.start(topic, drained.slice(0, 3)),
      [false, false, false],
      'started by their claim already',
    );
    const together = await measure(redis, async () => {
      for (let i = 0; i < drained.length; i += 10)
        assert.deepEqual(
          await Promise.all(drained.slice(i, i + 10).map((job) => q.engine.ack(topic, job.id, job))),
          Array(10).fill('done'),
        );
    });
    check('ackTogether', together, JOBS);

    // a handler draining one at a time: each call acks the last job and claims and starts the next
    for (let i = 0; i < JOBS; i += 500)
      await q.addMany(Array.from({ length: 500 }, (_, j) => ({ topic, id: `next-${i + j}`, delay: 60, body })));
    clock.advance(60_000);
    for (let more = true; more;) more = (await q.engine.sweep()).more;
    let [last] = await q.engine.claimStarted(topic, 1);
    let ran = 0;
    const next = await measure(redis, async () => {
      while (last) {
        const { ack, jobs } = await q.engine.ackAndClaimStarted(topic, last.id, last, 1);
        assert.equal(ack, 'done');
        ran += 1;
        last = jobs[0];
      }
    });
    assert.equal(ran, JOBS);
    check('ackClaimNext', next, JOBS);
    assert.deepEqual(over, [], 'paths over their budget');
  });

  it("a flow topic (100 keys): the sweep to the keys' lanes, a handler's own claims round the keys and the acks cost at most their budget", async () => {
    const flowTopic = uniqueTopic('costflow');
    const qf = makeQueue(redis, { [flowTopic]: { concurrency: 10_000, flow: { concurrency: 10 } } }, { clock });
    const body = { order: 'x'.repeat(150) };
    for (let i = 0; i < JOBS; i += 500) {
      const { outcomes } = await qf.addMany(
        Array.from({ length: 500 }, (_, j) => ({
          topic: flowTopic,
          id: `f-${i + j}`,
          key: `tenant-${(i + j) % 100}`,
          delay: 60,
          body,
        })),
      );
      assert.ok(outcomes.every((o) => o.status === 'created'));
    }
    clock.advance(60_000);
    const flowOver: string[] = [];
    const flowCheck = (path: keyof typeof FLOW_BUDGET, c: Counts) => {
      const got = { scriptCalls: c.scriptCalls / JOBS, commands: c.commands / JOBS };
      const budget = FLOW_BUDGET[path];
      const detail = `${path}: ${got.scriptCalls} script calls and ${got.commands} commands a job (budget ${budget.scriptCalls} and ${budget.commands}); by command: ${JSON.stringify(c.byCommand)}`;
      console.log(detail);
      if (got.scriptCalls > budget.scriptCalls + 1e-9 || got.commands > budget.commands + 1e-9) flowOver.push(detail);
    };
    flowCheck(
      'flowSweep',
      await measure(redis, async () => {
        for (let more = true; more;) more = (await qf.engine.sweep()).more;
      }),
    );
    const drained: ClaimedJob[] = [];
    flowCheck('flowClaimStarted', await measure(redis, () => claimAllStarted(qf, flowTopic, drained)));
    const turns = new Map<number, number>();
    for (const j of drained.slice(0, 100))
      turns.set(Number(j.id.split('-')[1]) % 100, (turns.get(Number(j.id.split('-')[1]) % 100) ?? 0) + 1);
    assert.deepEqual(
      [...turns.values()],
      Array(25).fill(4),
      'the first 100 claims went round the keys a turn (4 jobs) each',
    );
    flowCheck(
      'flowAckTogether',
      await measure(redis, async () => {
        for (let i = 0; i < drained.length; i += 10)
          assert.deepEqual(
            await Promise.all(drained.slice(i, i + 10).map((job) => qf.engine.ack(flowTopic, job.id, job))),
            Array(10).fill('done'),
          );
      }),
    );
    // two keys: a visit claims each key's share of the call (5 of 10), not one job
    const fewTopic = uniqueTopic('costflow2');
    const q2 = makeQueue(redis, { [fewTopic]: { concurrency: 10_000, flow: {} } }, { clock });
    for (let i = 0; i < JOBS; i += 500)
      await q2.addMany(
        Array.from({ length: 500 }, (_, j) => ({
          topic: fewTopic,
          id: `g-${i + j}`,
          key: `tenant-${(i + j) % 2}`,
          delay: 60,
          body,
        })),
      );
    clock.advance(60_000);
    for (let more = true; more;) more = (await q2.engine.sweep()).more;
    flowCheck('flowClaimStartedTwoKeys', await measure(redis, () => claimAllStarted(q2, fewTopic, [])));
    assert.deepEqual(flowOver, [], 'flow paths over their budget');
  });

  it('a claim over 8 partitions with jobs ready in one makes one claim script call, not one a partition', async () => {
    const topic8 = uniqueTopic('cost8');
    const q8 = makeQueue(redis, { [topic8]: { concurrency: 10_000 } }, { clock, config: { partitions: 8 } });
    const ids = Array.from({ length: 400 }, (_, i) => `p-${i}`)
      .filter((id) => partitionOf(topic8, id, 8) === 3)
      .slice(0, 20);
    await q8.addMany(ids.map((id) => ({ topic: topic8, id, delay: 1 })));
    clock.advance(1000);
    for (let more = true; more;) more = (await q8.engine.sweep()).more;
    let claimed: Awaited<ReturnType<typeof q8.engine.claim>> = [];
    const c = await measure(redis, async () => {
      claimed = await q8.engine.claim(topic8, 10);
    });
    assert.equal(claimed.length, 10);
    assert.equal(c.scriptCalls, 1, `script calls: ${JSON.stringify(c.byCommand)}`);
    assert.equal(
      c.byCommand.zcard,
      8 + 1,
      'each partition counted once (running), and the claim script counts its own',
    );
    assert.equal(c.byCommand.llen, 8, 'each partition counted once (ready)');
    for (const job of claimed) assert.equal(await q8.engine.ack(topic8, job.id, job), 'done');
  });
});
