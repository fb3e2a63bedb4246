/**
 * Scenario 9: flow control under faults. The webhook topic is a flow topic (2 attempts at once per
 * key, 20 for the topic); jobs of 10 keys fall due together while handlers are SIGKILLed mid-job
 * and Redis is SIGKILLed and restarted from its append-only file. The receiver counts each key's
 * deliveries in flight (arrived, not answered, the handler alive): never more than 2. A sampler
 * reads every key's running count from Redis every 10 ms: never more than 2. Every accepted job is
 * delivered, and once all are done every key's count is back to 0 with no state left (no ghost
 * slots), though killed attempts held their slots until their ttr (2 s).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startRedis, type RedisProcess } from '../support/redis';
import { faultQueueConfig, report, until } from './support/harness';
import { Stack } from './support/stack';

const AOF = ['--appendonly', 'yes', '--appendfsync', 'always'];
const KEYS = Array.from({ length: 10 }, (_, i) => `tenant-${i}`);
const PER_KEY = 2;
const KILLS = 6;
const JOBS = 400;

describe('scenario 9: flow control with handlers SIGKILLed mid-job and a Redis restart', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dq-fault-flow-'));
  let redis: RedisProcess;
  let stack: Stack;
  before(async () => {
    redis = await startRedis({ dir, args: AOF });
    stack = new Stack({
      redisUrl: redis.url,
      env: { DQ_CONFIG: faultQueueConfig({ concurrency: 20, flow: { concurrency: PER_KEY } }) },
    });
    await stack.start();
  });
  after(async () => {
    await stack?.stop();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('no key ever runs more than its concurrency; every job is delivered; the counts come back true', async (t) => {
    const keyOf = new Map<string, string>();
    // per key: delivered, neither answered nor abandoned by a killed handler
    const inFlight = new Map<string, number>();
    let maxInFlight = 0;
    let kills = 0;
    let busy = false;
    stack.recorder.onDelivery = (d) => {
      const key = keyOf.get(d.id)!;
      const n = (inFlight.get(key) ?? 0) + 1;
      inFlight.set(key, n);
      maxInFlight = Math.max(maxInFlight, n);
    };
    stack.recorder.onAnswered = (d) => inFlight.set(keyOf.get(d.id)!, inFlight.get(keyOf.get(d.id)!)! - 1);
    stack.recorder.delayMs = () => 20 + Math.random() * 80;
    // mid-job: the request reached the receiver and is never answered; the handler is killed
    stack.recorder.hold = (d) => {
      if (kills >= KILLS || busy || d.attempt !== 1 || Number(d.id.split('-')[1]) % 25 !== 0) return false;
      kills += 1;
      busy = true;
      void stack.handler.restart().finally(() => (busy = false));
      return true;
    };

    let maxRunning = 0;
    let sampling = true;
    let samples = 0;
    const sampler = (async () => {
      while (sampling) {
        try {
          const states = await Promise.all(KEYS.map((key) => stack.queue.engine.flowKey('webhook', key)));
          for (const s of states) maxRunning = Math.max(maxRunning, s.running);
          samples += 1;
        } catch {
          // Redis is down: nothing to sample
        }
        await sleep(10);
      }
    })();

    let seq = 0;
    const add = async () => {
      const id = `s8-${++seq}`;
      const key = KEYS[seq % KEYS.length]!;
      keyOf.set(id, key);
      try {
        const outcome = await stack.queue.add({
          topic: 'webhook',
          id,
          key,
          delay: Math.random() * 2,
          url: `${stack.recorder.url}/hook/${id}`,
          body: { id },
        });
        if (outcome.status === 'created') stack.ledger.set(id, Date.parse(outcome.job.runAt));
      } catch {
        stack.addErrors += 1; // Redis down: not accepted, not in the ledger
      }
    };
    for (let i = 0; i < JOBS / 2; i++) await add();
    await until(() => stack.recorder.deliveries.length > 50, 60_000, 50);
    await redis.stop('SIGKILL');
    await sleep(500);
    redis = await startRedis({ dir, port: redis.port, args: AOF });
    for (let i = 0; i < JOBS / 2 || (kills < KILLS && i < 5 * JOBS); i++) {
      await add();
      if (i % 20 === 0) await sleep(50);
    }
    const result = await stack.settle('9 flow control: handler SIGKILLs + Redis restart', 120_000);
    // every attempt has ended: each key's count comes back to 0 by itself (killed ones by their ttr)
    await until(
      async () =>
        (await Promise.all(KEYS.map((key) => stack.queue.engine.flowKey('webhook', key)))).every(
          (s) => s.running === 0,
        ),
      30_000,
      100,
    );
    sampling = false;
    await sampler;
    const left = (await stack.redis.hkeys('dq:{f:webhook}:jobs:webhook#flow')).filter((f) => !f.startsWith('#'));
    Object.assign(result, {
      kills,
      maxInFlightPerKey: maxInFlight,
      maxRunningSampled: maxRunning,
      samples,
      keyStateLeft: left.length,
      addErrors: stack.addErrors,
    });
    report(result);
    t.diagnostic(JSON.stringify(result));
    assert.equal(result.missing, 0, `missing: ${result.missingIds.join(', ')}\n${stack.output()}`);
    assert.ok(kills >= 1, 'handlers were killed mid-job');
    assert.ok(maxInFlight <= PER_KEY, `a key had ${maxInFlight} deliveries in flight at once`);
    assert.ok(maxRunning <= PER_KEY, `the sampler saw a key at ${maxRunning} running`);
    assert.ok(samples > 100, `${samples} samples`);
    assert.deepEqual(left, [], 'no key state left once every job is done');
  });
});
