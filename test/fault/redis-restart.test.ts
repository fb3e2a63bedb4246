/**
 * Scenario 4, through serverless offline (the real Lambdas, the real invoke path): Redis is
 * SIGKILLed during a stream of POST /jobs and started again on the same port with the same
 * append-only file (`--appendonly yes --appendfsync always`). Every job answered 201 before the
 * kill (or after the restart) must reach the webhook receiver; while Redis is down the API
 * answers 503; nothing is restarted but Redis, and the sweeper resumes by itself.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startOffline, type OfflineProcess } from '../support/offline';
import { startReceiver, type Receiver } from '../support/receiver';
import { startRedis, type RedisProcess } from '../support/redis';
import { report, tally, until } from './support/harness';

const SECRET = 'fault-redis-secret';
const AOF = ['--appendonly', 'yes', '--appendfsync', 'always'];

describe('scenario 4: Redis SIGKILLed and restarted with its AOF during load', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dq-fault-aof-'));
  let redis: RedisProcess;
  let receiver: Receiver;
  let offline: OfflineProcess;
  before(async () => {
    redis = await startRedis({ dir, args: AOF });
    receiver = await startReceiver(SECRET);
    offline = await startOffline({ redisUrl: redis.url, env: { WEBHOOK_SECRET: SECRET, LOG_LEVEL: 'warn' } });
  });
  after(async () => {
    await offline?.stop();
    await receiver?.close();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('delivers every job acknowledged with 201; answers 503 while down; recovers by itself', async (t) => {
    const ledger = new Set<string>();
    const acceptedBeforeKill = new Set<string>();
    const statusesWhileDown: Record<number, number> = {};
    // 'killing' spans the kill itself: a request sent then may still reach Redis and be answered
    // 201 (it is in the ledger and must be delivered) but it says nothing about the outage;
    // 'down' starts only once the Redis process has exited, and ends when the new one is spawned:
    // 'restarting' spans its start, during which a request sent while it was down may reach it
    // (the Lambda's client reconnects before startRedis sees it answer) and be answered 201
    // (soak17 fault 1: {"201":1,"503":4}, the job delivered)
    let phase: 'before' | 'killing' | 'down' | 'restarting' | 'after' = 'before';
    let seq = 0;
    let producing = true;
    const producer = async () => {
      while (producing) {
        const id = `s4-${++seq}`;
        const sentIn = phase;
        let status = 0;
        try {
          const res = await fetch(`${offline.baseUrl}/jobs`, {
            method: 'POST',
            headers: { authorization: `Bearer ${offline.token}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              topic: 'webhook',
              id,
              delay: 0.5 + Math.random() * 2.5,
              url: `${receiver.url}/ok/${id}`,
              body: { id },
            }),
            signal: AbortSignal.timeout(15_000),
          });
          status = res.status;
          await res.arrayBuffer();
        } catch {
          status = -1; // no HTTP answer at all
        }
        if (status === 201) {
          ledger.add(id);
          if (sentIn === 'before') acceptedBeforeKill.add(id);
        }
        if (sentIn === 'down' && phase === 'down') statusesWhileDown[status] = (statusesWhileDown[status] ?? 0) + 1;
        await sleep(20);
      }
    };
    const producers = Promise.all([producer(), producer()]);
    // each phase lasts 5 s, and longer until it has seen what the checks below need: counts, not
    // time, so that a busy machine (few requests in 5 s) makes the run longer, not red
    await sleep(5000);
    await until(() => acceptedBeforeKill.size > 50, 120_000, 50);
    phase = 'killing';
    await redis.stop('SIGKILL');
    phase = 'down';
    await sleep(5000);
    await until(() => (statusesWhileDown[503] ?? 0) > 0, 60_000, 50);
    phase = 'restarting';
    redis = await startRedis({ dir, port: redis.port, args: AOF });
    phase = 'after';
    const acceptedBeforeRestart = ledger.size;
    await sleep(5000);
    await until(() => ledger.size > acceptedBeforeRestart, 120_000, 50);
    producing = false;
    await producers;

    const counts = () => {
      const c = new Map<string, number>();
      for (const d of receiver.deliveries) {
        const id = d.path.split('/').at(-1)!;
        c.set(id, (c.get(id) ?? 0) + 1);
      }
      return c;
    };
    // worst case by design: a sweeper chain broken by the outage is restarted by the per-minute
    // tick once its lease (30 s) expired, and an attempt lost with Redis returns after its TTR (30 s)
    const settleStarted = Date.now();
    await until(() => [...ledger].every((id) => counts().has(id)), 150_000, 250);
    const settleMs = Date.now() - settleStarted;
    await sleep(1000);
    const result = tally('4 Redis SIGKILL + AOF restart (offline)', ledger, counts(), {
      acceptedBeforeKill: acceptedBeforeKill.size,
      settleMs,
      statusesWhileDown,
    });
    report(result);
    const logFile = join(process.env.FAULT_LOG_DIR ?? tmpdir(), `dq-fault-redis-restart-${Date.now()}.log`);
    if (process.env.FAULT_LOG_DIR || result.missing > 0) writeFileSync(logFile, offline.logs());
    t.diagnostic(JSON.stringify(result));
    assert.equal(result.missing, 0, `missing: ${result.missingIds.join(', ')}; offline's output is in ${logFile}`);
    assert.ok(acceptedBeforeKill.size > 50, `only ${acceptedBeforeKill.size} jobs were accepted before the kill`);
    assert.ok(
      (statusesWhileDown[503] ?? 0) > 0,
      `the API answered ${JSON.stringify(statusesWhileDown)} while Redis was down`,
    );
    assert.deepEqual(
      Object.keys(statusesWhileDown),
      ['503'],
      `only 503 while Redis is down: ${JSON.stringify(statusesWhileDown)}`,
    );
    assert.ok(
      result.accepted > acceptedBeforeKill.size,
      'jobs were accepted again after the restart, with nothing else restarted',
    );
  });
});
