/**
 * Regression: the topic handler counts an attempt its start found due after its job's expiry once, as expired. It
 * used to count it as stale too (BatchReport.stale) and log it as "no longer live" beside the expired line, so every
 * expired job showed up twice in the handler's report and logs. Against a real redis-server, through the handler's
 * seam: the batch a fan-out claimed (startAttempts-5 judges the expiry) and a batch the handler claims itself
 * (claimJobs-7 with start judges it).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { apiOf } from '../support/queue';
import { toWire } from '../../lib/workers/fanout';
import { createLogger } from '../../lib/platform/log';
import type { Runtime } from '../../lib/platform/runtime';
import { topicHandler, type BatchReport } from '../../lib/workers/handler';
import { startRedis, type RedisProcess } from '../support/redis';
import { testRuntime } from '../support/runtime';

const TOPIC = 'exp-handler';
const NOT_LIVE = /no longer live/;
const EXPIRED = /expired/;

describe('topic handler: an expired attempt is counted once, as expired (real redis-server)', () => {
  let server: RedisProcess;
  let rt: Runtime;
  before(async () => {
    server = await startRedis();
    rt = testRuntime(server.url, { [TOPIC]: { handler: 'h', ttr: 30, maxAttempts: 3, batchSize: 10 } });
  });
  after(async () => {
    rt?.redis.disconnect();
    await server?.stop();
  });

  /** The handler on `rt` with its log lines kept (parsed), running `ran` for each job it runs. */
  function handlerWithLog(ran: string[] = []) {
    const lines: Record<string, unknown>[] = [];
    const log = createLogger('test', {}, 'debug', (l) => lines.push(JSON.parse(l) as Record<string, unknown>));
    const handler = topicHandler(
      async (job) => {
        ran.push(job.id);
      },
      () => ({ ...rt, log }),
    );
    const messages = (level: string, pattern: RegExp) =>
      lines.filter((l) => l.level === level && pattern.test(String(l.message)));
    return { handler, lines, messages };
  }

  /** Adds `ids` due now (those in `expiring` expire 300 ms from now), sweeps, and claims them: a fan-out's batch. */
  async function claimBatch(prefix: string, ids: string[], expiring: string[]) {
    const queue = apiOf(rt);
    const expiresAt = Date.now() + 300;
    for (const id of ids)
      await queue.add({
        topic: TOPIC,
        id: `${prefix}-${id}`,
        delay: 0,
        ...(expiring.includes(id) ? { expiresAt } : {}),
      });
    await queue.engine.sweep();
    const claimed = await queue.engine.claim(TOPIC, ids.length);
    assert.equal(claimed.length, ids.length, 'a claim alone does not judge the expiry');
    await sleep(Math.max(0, expiresAt - Date.now()) + 50); // past the expiry when the handler starts them
    return { queue, claimed };
  }

  it('a batch whose start finds one attempt expired: report expired 1, stale 0; no "no longer live" line', async () => {
    const { queue, claimed } = await claimBatch('a', ['late', 'ok'], ['late']);
    const ran: string[] = [];
    const { handler, messages } = handlerWithLog(ran);
    const report = await handler(
      { topic: TOPIC, jobs: claimed.map(toWire), more: false },
      { awsRequestId: 'r1', getRemainingTimeInMillis: () => 60_000 },
    );
    assert.deepEqual(report, { done: 1, retried: 0, dead: 0, stale: 0, expired: 1 } satisfies BatchReport);
    assert.deepEqual(ran, ['a-ok']);
    assert.equal(messages('WARN', NOT_LIVE).length, 0, 'the expired attempt is not logged as no longer live');
    const expiredLines = messages('INFO', EXPIRED);
    assert.deepEqual(
      expiredLines.map((l) => l.expired),
      [1],
      'one line says it expired',
    );
    assert.equal((await queue.get(TOPIC, 'a-late'))?.state, 'expired');
  });

  it('an expired and a cancelled attempt in one batch: expired 1, stale 1', async () => {
    const { queue, claimed } = await claimBatch('b', ['late', 'gone', 'ok'], ['late']);
    await queue.cancel(TOPIC, 'b-gone');
    const ran: string[] = [];
    const { handler, messages } = handlerWithLog(ran);
    const report = await handler(
      { topic: TOPIC, jobs: claimed.map(toWire), more: false },
      { awsRequestId: 'r2', getRemainingTimeInMillis: () => 60_000 },
    );
    assert.deepEqual(report, { done: 1, retried: 0, dead: 0, stale: 1, expired: 1 } satisfies BatchReport);
    assert.deepEqual(ran, ['b-ok']);
    const notLive = messages('WARN', NOT_LIVE);
    assert.equal(
      notLive.reduce((n, l) => n + (typeof l.stale === 'number' ? l.stale : 1), 0),
      1,
      'one attempt told no longer live',
    );
    assert.deepEqual(
      messages('INFO', EXPIRED).map((l) => l.expired),
      [1],
    );
  });

  it("a batch the handler claims itself counts the expired job once (the claim's count), none stale", async () => {
    const { claimed } = await claimBatch('c', ['first'], []);
    const queue = apiOf(rt);
    await queue.add({ topic: TOPIC, id: 'c-late', delay: 0, expiresAt: Date.now() + 100 });
    await queue.add({ topic: TOPIC, id: 'c-next', delay: 0 });
    await sleep(150);
    await queue.engine.sweep();
    const ran: string[] = [];
    const { handler, messages } = handlerWithLog(ran);
    const report = await handler(
      { topic: TOPIC, jobs: claimed.map(toWire), more: true },
      { awsRequestId: 'r3', getRemainingTimeInMillis: () => 60_000 },
    );
    assert.deepEqual(report, { done: 2, retried: 0, dead: 0, stale: 0, expired: 1 } satisfies BatchReport);
    assert.deepEqual(ran.sort(), ['c-first', 'c-next']);
    assert.equal(messages('WARN', NOT_LIVE).length, 0);
    assert.equal((await queue.get(TOPIC, 'c-late'))?.state, 'expired');
  });
});
