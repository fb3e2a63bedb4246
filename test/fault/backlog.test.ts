/**
 * Scenario 5: a backlog of 200,000 jobs all due at the same instant while the API keeps taking
 * new jobs. The backlog is loaded with the engine (addMany, 500 per call); the API is measured
 * through serverless offline: sequential POST /jobs, idle first, then from the due instant on,
 * while the sweeper moves the backlog and the fan-out and handlers start draining it.
 *
 * The targets (no Redis command ≥ 10 ms; API p99 ≤ 2x its idle p99) are timing figures:
 * they are measured and printed (FAULT-RESULT, RELIABILITY.md says met or missed per run), never
 * asserted: on a 2-core machine Redis, serverless offline and this test share the CPU with
 * whatever else runs, and the OS pre-empts a command mid-way (one CI run: a 12.9 ms claimJobs,
 * whose work is bounded at 80 jobs, ~0.5 ms; with a CPU hog beside it, more). The test fails on
 * what no scheduling explains: a job of the backlog not moved, or an API request refused.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { loadConfig } from '../../lib/core/queue-config';
import { queueOf } from '../support/queue';
import { Engine } from '../../lib/engine';
import { invokeFunction, startOffline, type OfflineProcess } from '../support/offline';
import { startRedis, type RedisProcess } from '../support/redis';
import { topicKeys } from '../../lib/testing';

const BACKLOG = Number(process.env.FAULT_BACKLOG ?? 200_000);
const IDLE_REQUESTS = 400;
const WINDOW_MS = 10_000; // measured from the due instant: the sweep, then the first of the drain
const TARGET_P99_FACTOR = 2; // the target, reported
const TARGET_COMMAND_MS = 10; // the target, reported (SLOWLOG threshold)
// Loading takes ~6 s on a quiet machine and several times that with both cores busy; the backlog
// must be in place before it falls due, so a load that ends too late is redone with a longer lead.
const LEADS_MS = [20_000, 60_000, 180_000];
const MOVE_BOUND_MS = 120_000; // a backlog not moved by then is lost, not late (it moves in ~1 s)

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

describe('scenario 5: 200,000 jobs due at the same instant', () => {
  let server: RedisProcess;
  let redis: Redis;
  let offline: OfflineProcess;
  before(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
    offline = await startOffline({ redisUrl: server.url });
  });
  after(async () => {
    await offline?.stop();
    redis?.disconnect();
    await server?.stop();
  });

  async function post(seq: number): Promise<number> {
    const started = performance.now();
    const res = await fetch(`${offline.baseUrl}/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${offline.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ topic: 'example', id: `api-${seq}`, delay: 3600, body: { seq } }),
    });
    await res.arrayBuffer();
    assert.equal(res.status, 201);
    return performance.now() - started;
  }

  it('moves the backlog while the API keeps answering; reports command times and API p99 against the targets', async (t) => {
    let seq = 0;
    for (let i = 0; i < 50; i++) await post(++seq); // warm the addJob worker
    const idle: number[] = [];
    for (let i = 0; i < IDLE_REQUESTS; i++) idle.push(await post(++seq));
    idle.sort((a, b) => a - b);

    const config = loadConfig({
      DQ_CONFIG: JSON.stringify({
        topics: {
          example: { handler: 'exampleHandler', batchSize: 10, concurrency: 10 },
          webhook: { kind: 'webhook', handler: 'webhookHandler' },
        },
      }),
      REDIS_URL: server.url,
      API_TOKEN: 'x',
      WEBHOOK_SECRET: 'x',
      DQ_FUNCTION_PREFIX: 'x',
    });
    const queue = queueOf(new Engine(redis, config.queue));
    const k = topicKeys(0, 'example', 1);
    const body = { order: 'x'.repeat(180) };
    let dueAt = 0;
    let loadMs = 0;
    for (const leadMs of LEADS_MS) {
      await redis.unlink(k.delayed, k.jobs, k.bodies); // a late load's jobs (and the idle phase's), if any
      dueAt = Date.now() + leadMs;
      const loadStarted = Date.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          while (next < BACKLOG) {
            const from = next;
            next += 500;
            const jobs = Array.from({ length: Math.min(500, BACKLOG - from) }, (_, i) => ({
              topic: 'example',
              id: `b-${from + i}`,
              runAt: dueAt,
              body,
            }));
            const { outcomes } = await queue.addMany(jobs);
            assert.ok(outcomes.every((o) => o.status === 'created'));
          }
        }),
      );
      loadMs = Date.now() - loadStarted;
      if (Date.now() < dueAt - 2000) break;
      t.diagnostic(`loading took ${loadMs} ms, past the lead of ${leadMs} ms: loading again with a longer lead`);
      assert.notEqual(leadMs, LEADS_MS.at(-1), `loading ${BACKLOG} jobs took ${loadMs} ms, longer than every lead`);
    }
    const delayed = k.delayed;
    assert.equal(await redis.zcount(delayed, dueAt, dueAt), BACKLOG);

    await redis.config('SET', 'slowlog-log-slower-than', String(TARGET_COMMAND_MS * 1000));
    await redis.config('SET', 'latency-monitor-threshold', '10');
    await redis.slowlog('RESET');
    await redis.call('LATENCY', 'RESET');
    while (Date.now() < dueAt - 1000) await sleep(50);
    // an add that made an earlier job the head would wake the sweeper; the engine does not, so do
    // it, shortly before the due instant (whatever the lead, the sweeper is then waiting for it)
    await invokeFunction(offline.lambdaUrl, 'sweeper', { source: 'wake' }, 'Event');
    while (Date.now() < dueAt - 500) await sleep(50);
    const during: { at: number; ms: number }[] = [];
    let movedAt = 0;
    const watcher = (async () => {
      while (!movedAt && Date.now() < dueAt + MOVE_BOUND_MS) {
        if ((await redis.zcount(delayed, dueAt, dueAt)) === 0) movedAt = Date.now();
        else await sleep(20);
      }
    })();
    while (Date.now() < dueAt + WINDOW_MS) {
      const at = Date.now();
      const ms = await post(++seq);
      if (at >= dueAt) during.push({ at, ms });
    }
    await watcher;

    const slow = (await redis.slowlog('GET', 128)) as [number, number, number, string[]][];
    const latency = (await redis.call('LATENCY', 'LATEST')) as unknown[];
    const info = await redis.info('commandstats');
    const moveCalls = /cmdstat_fcall:calls=(\d+)/.exec(info)?.[1];
    const all = during.map((d) => d.ms).sort((a, b) => a - b);
    const sweep = during
      .filter((d) => movedAt && d.at <= movedAt)
      .map((d) => d.ms)
      .sort((a, b) => a - b);
    const done = Number(await redis.zcard(topicKeys(0, 'example', 1).done));
    const figures = {
      backlog: BACKLOG,
      loadMs,
      idle: {
        n: idle.length,
        p50: +pct(idle, 50).toFixed(1),
        p99: +pct(idle, 99).toFixed(1),
        max: +idle.at(-1)!.toFixed(1),
      },
      sweepMs: movedAt ? movedAt - dueAt : null,
      duringSweep: sweep.length
        ? {
            n: sweep.length,
            p50: +pct(sweep, 50).toFixed(1),
            p99: +pct(sweep, 99).toFixed(1),
            max: +sweep.at(-1)!.toFixed(1),
          }
        : null,
      window: {
        ms: WINDOW_MS,
        n: all.length,
        p50: +pct(all, 50).toFixed(1),
        p99: +pct(all, 99).toFixed(1),
        max: +all.at(-1)!.toFixed(1),
      },
      jobsDoneInWindow: done,
      slowlog: slow.map(([, , micros, args]) => ({ micros, command: args.slice(0, 2).join(' ') })),
      latencyLatest: latency,
      scriptCalls: moveCalls,
    };
    const ratio = pct(all, 99) / pct(idle, 99);
    const targets = {
      commandsUnder10ms: figures.slowlog.length === 0,
      p99Within2x: ratio <= TARGET_P99_FACTOR,
      p99Ratio: +ratio.toFixed(2),
    };
    process.stdout.write(`FAULT-RESULT ${JSON.stringify({ scenario: '5 backlog', ...figures, targets })}\n`);
    t.diagnostic(JSON.stringify({ ...figures, targets }));
    assert.ok(movedAt > 0, `the backlog was not moved within ${MOVE_BOUND_MS / 1000} s of falling due`);
  });
});
