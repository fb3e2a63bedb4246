/**
 * Scenario 7: an ElastiCache-style failover under a steady stream of adds and deletes.
 *
 * A primary (nothing persisted) and a replica, the replica syncing through a link the test can
 * cut; the stack (sweeper, fan-out and webhook handler hosts, and the HTTP API's add and delete
 * routes run in this process with the same runtime code as on Lambda) reaches "the endpoint", a
 * TCP proxy the test can repoint. Steps: adds and deletes flow; the replication link is cut (the
 * replica falls behind while the primary keeps answering); then the failover:
 *  - `kill`: the primary is SIGKILLed, the replica promoted, the endpoint repointed to it;
 *  - `demote`: the replica is promoted, the endpoint repointed, and the old primary, alive, is
 *    made a replica of the new one: clients still connected to it get READONLY.
 * Nothing of the stack is restarted. The ledger: every add answered 201 and not deleted must be
 * delivered, and no job whose delete answered 200 may be delivered.
 * With durability `replica` both must hold, and adds during the cut must be refused (503); with
 * `none` the test reports how many acknowledged changes the failover undid: the size of the window.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { Redis } from 'ioredis';
import { addJob, deleteJob } from '../../lib/api/routes';
import { httpRoute } from '../../lib/api/http';
import { createRuntime, type Runtime } from '../../lib/platform/runtime';
import { linkUp, startLinkedPair, SYNC_NOW } from '../support/failover';
import { startRedis, type RedisProcess } from '../support/redis';
import { report, until } from './support/harness';
import { Stack } from './support/stack';

type Mode = 'replica' | 'none';
type Variant = 'kill' | 'demote';

// each phase lasts this long, and then until it has seen what the checks need: counts, not time,
// so that a busy machine (few requests a second) makes the run longer, not red
const PHASE_MS = { before: 2000, cut: 2500, after: 4000 };
const PHASE_LIMIT_MS = 60_000;
// the stream the checks need: more acknowledged adds and deletes than these
const MIN_ADDS = 20;
const MIN_DELETES = 5;
// (SYNC_NOW: a new replica syncs at once; ElastiCache takes minutes to bring a replacement, the figure here is
// the stack's part only)
const WAIT_MS = '300'; // DQ_DURABILITY_TIMEOUT_MS: a cut-off replica costs each change 300 ms, then 503

interface Outcome {
  scenario: string;
  mode: Mode;
  variant: Variant;
  addsAcknowledged: number;
  addsLost: number;
  deletesAcknowledged: number;
  deletesUndone: number;
  /** Answers to adds sent while the link was cut, by status. */
  addsDuringCut: Record<string, number>;
  /** Answers to adds sent after the failover, by status. */
  addsAfter: Record<string, number>;
  /** Deletes answered neither 200 nor 404: made or not, their jobs may run or not (not counted). */
  deletesUnsettled: number;
  /** From the failover (kill or demotion) to the first 201. */
  recoveryMs: number | null;
  duplicates: number;
  lostIds: string[];
  undoneIds: string[];
}

async function failover(mode: Mode, variant: Variant): Promise<Outcome> {
  const { primary, link, replica, endpoint } = await startLinkedPair();
  const env = { DQ_DURABILITY: mode, DQ_DURABILITY_TIMEOUT_MS: WAIT_MS };
  const stack = new Stack({ redisUrl: endpoint.url, env });
  let rt: Runtime | undefined;
  let replacement: RedisProcess | undefined;
  try {
    assert.ok(await linkUp(replica.port), 'the replica synced');
    await stack.start();
    // the API as Lambda runs it, with the stack's invoke endpoint (adds wake the sweeper)
    const api = createRuntime({ ...stack.env, LOG_LEVEL: 'error' });
    rt = api;
    const post = httpRoute(addJob, () => api);
    const del = httpRoute(deleteJob, () => api);
    const request = async (handler: typeof post, method: string, path: string, body?: unknown): Promise<number> => {
      const res = (await handler({
        rawPath: path,
        routeKey: `${method} ${path}`,
        headers: { authorization: `Bearer ${stack.env.API_TOKEN}` },
        requestContext: { http: { method } },
        pathParameters: method === 'DELETE' ? { topic: 'webhook', id: path.split('/').at(-1) } : {},
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      } as unknown as APIGatewayProxyEventV2)) as APIGatewayProxyStructuredResultV2;
      return res.statusCode ?? 0;
    };

    const added = new Set<string>();
    const deleted = new Set<string>();
    const addsDuringCut: Record<string, number> = {};
    const addsAfter: Record<string, number> = {};
    const unsettled = new Set<string>();
    const dueAt = new Map<string, number>();
    let phase: 'before' | 'cut' | 'after' = 'before';
    let failedOverAt = 0;
    let firstCreatedAfter = 0;
    let producing = true;
    let seq = 0;
    const producer = async (n: number) => {
      while (producing) {
        const mySeq = ++seq;
        const id = `f-${n}-${mySeq}`;
        const sentIn = phase;
        const sentAfterFailover = failedOverAt > 0;
        // due after the failover and the settling of the stack: deletes land before the job is due
        const delayS = 4 + Math.random() * 3;
        const sentAt = Date.now();
        const status = await request(post, 'POST', '/jobs', {
          topic: 'webhook',
          id,
          delay: delayS,
          url: `${stack.recorder.url}/hook/${id}`,
          body: { id },
        });
        if (sentIn === 'cut' && phase === 'cut') addsDuringCut[status] = (addsDuringCut[status] ?? 0) + 1;
        if (sentAfterFailover) addsAfter[status] = (addsAfter[status] ?? 0) + 1;
        if (status === 201) {
          added.add(id);
          if (sentAfterFailover && !firstCreatedAfter) firstCreatedAfter = Date.now();
          dueAt.set(id, sentAt + delayS * 1000);
        }
        // every third round deletes a job acknowledged about a second ago (still 3 s or more
        // before it is due), so deletes during the cut undo jobs the replica has
        const victim =
          mySeq % 3 === 0
            ? [...added].find(
                (v) =>
                  !deleted.has(v) &&
                  !unsettled.has(v) &&
                  dueAt.get(v)! - Date.now() > 3000 &&
                  dueAt.get(v)! - Date.now() < 5500,
              )
            : undefined;
        if (victim) {
          const deletedStatus = await request(del, 'DELETE', `/jobs/webhook/${victim}`);
          if (deletedStatus === 200) deleted.add(victim);
          else unsettled.add(victim);
        }
        await sleep(10);
      }
    };
    const producers = Promise.all([producer(1), producer(2)]);
    await sleep(PHASE_MS.before);
    await until(() => added.size > 10, PHASE_LIMIT_MS, 50);
    phase = 'cut';
    link.cut(); // the replica stops hearing from the primary; both stay up
    await sleep(PHASE_MS.cut);
    // an add sent and answered during the cut: 503 with durability replica (the checks fail on a
    // 201), 201 without it (the writes the replica lacks)
    await until(() => (addsDuringCut[mode === 'replica' ? 503 : 201] ?? 0) > 0, PHASE_LIMIT_MS, 50);
    const promote = new Redis(replica.port);
    try {
      if (variant === 'kill') await primary.stop('SIGKILL');
      failedOverAt = Date.now();
      await promote.replicaof('NO', 'ONE');
      endpoint.repoint({ port: replica.port });
      // ElastiCache replaces the failed node with a new replica of the new primary; until it has
      // synced, durability replica refuses changes (503) rather than acknowledge them unreplicated
      if (variant === 'kill')
        replacement = await startRedis({ args: [...SYNC_NOW, '--replicaof', '127.0.0.1', String(replica.port)] });
      if (variant === 'demote') {
        const old = new Redis(primary.port);
        await old.replicaof('127.0.0.1', replica.port); // the old primary follows the new one: READONLY to its clients
        old.disconnect();
      }
    } finally {
      promote.disconnect();
    }
    phase = 'after';
    await sleep(PHASE_MS.after);
    await until(() => firstCreatedAfter > 0 && added.size > MIN_ADDS && deleted.size > MIN_DELETES, PHASE_LIMIT_MS, 50);
    producing = false;
    await producers;

    const due = [...added].filter((id) => !deleted.has(id) && !unsettled.has(id));
    const counts = () => stack.recorder.counts();
    // Wait for every due job; with durability none some never come (the failover lost them), so
    // stop 10 s after the last due time: several TTRs (2 s), leases (2 s) and ticks (2 s) later.
    const lastDue = Math.max(...dueAt.values());
    await until(
      () => due.every((id) => counts().has(id)),
      mode === 'replica' ? 60_000 : Math.max(0, lastDue + 10_000 - Date.now()),
      200,
    );
    await until(() => Date.now() > lastDue + 1500, 30_000, 100); // a deleted job that ran anyway has run by now
    const c = counts();
    const lostIds = due.filter((id) => !c.has(id));
    const undoneIds = [...deleted].filter((id) => c.has(id));
    let duplicates = 0;
    for (const id of due) duplicates += Math.max(0, (c.get(id) ?? 0) - 1);
    return {
      scenario: `7 failover (${variant}), durability ${mode}`,
      mode,
      variant,
      addsAcknowledged: added.size,
      addsLost: lostIds.length,
      deletesAcknowledged: deleted.size,
      deletesUndone: undoneIds.length,
      addsDuringCut,
      addsAfter,
      deletesUnsettled: unsettled.size,
      recoveryMs: firstCreatedAfter ? firstCreatedAfter - failedOverAt : null,
      duplicates,
      lostIds: lostIds.slice(0, 10),
      undoneIds: undoneIds.slice(0, 10),
    };
  } finally {
    rt?.redis.disconnect();
    await stack.stop().catch(() => undefined);
    await Promise.all([endpoint.close(), link.close()]);
    await Promise.all([primary.stop(), replica.stop(), replacement?.stop()]);
  }
}

// Two scenarios at a time (each has its own servers, hosts and proxies): half the wall time in CI.
describe('scenario 7: failover to a replica that lacks the last writes', { concurrency: 2 }, () => {
  for (const variant of ['kill', 'demote'] as const) {
    it(`durability replica, ${variant}: no acknowledged add lost, no acknowledged delete undone, adds during the cut refused`, async (t) => {
      const o = await failover('replica', variant);
      report({
        accepted: o.addsAcknowledged,
        delivered: o.addsAcknowledged - o.addsLost,
        missing: o.addsLost,
        missingIds: o.lostIds,
        ...o,
      });
      t.diagnostic(JSON.stringify(o));
      assert.equal(o.addsLost, 0, `acknowledged adds lost: ${o.lostIds.join(', ')}`);
      assert.equal(o.deletesUndone, 0, `acknowledged deletes that ran anyway: ${o.undoneIds.join(', ')}`);
      assert.ok((o.addsDuringCut['503'] ?? 0) > 0, `adds during the cut: ${JSON.stringify(o.addsDuringCut)}`);
      assert.equal(
        o.addsDuringCut['201'] ?? 0,
        0,
        `no add sent during the cut may be acknowledged: ${JSON.stringify(o.addsDuringCut)}`,
      );
      assert.ok(
        o.addsAcknowledged > MIN_ADDS && o.deletesAcknowledged > MIN_DELETES,
        `the stream ran: ${o.addsAcknowledged} adds, ${o.deletesAcknowledged} deletes acknowledged`,
      );
      assert.notEqual(o.recoveryMs, null, 'the API acknowledged adds again after the failover, with nothing restarted');
    });
  }

  for (const variant of ['kill', 'demote'] as const) {
    it(`durability none, ${variant}: reports what the failover undid (the loss window)`, async (t) => {
      const o = await failover('none', variant);
      report({
        accepted: o.addsAcknowledged,
        delivered: o.addsAcknowledged - o.addsLost,
        missing: o.addsLost,
        missingIds: o.lostIds,
        ...o,
      });
      t.diagnostic(JSON.stringify(o));
      // the control: without durability the same failover does undo acknowledged changes, so the
      // replica runs above would catch a wait that does not wait
      assert.ok(
        o.addsLost + o.deletesUndone > 0,
        `a failover after a ${PHASE_MS.cut} ms cut undid nothing: ${JSON.stringify(o)}`,
      );
      assert.ok(
        (o.addsDuringCut['201'] ?? 0) > 0,
        `without durability the primary acknowledges adds during the cut: ${JSON.stringify(o.addsDuringCut)}`,
      );
      assert.notEqual(o.recoveryMs, null, 'the API acknowledged adds again after the failover, with nothing restarted');
    });
  }
});
