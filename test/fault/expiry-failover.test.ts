/**
 * Expiry through retries, a pause and a failover with durability `replica`: no attempt starts at or after its job's
 * expiry (judged on the Redis clock), and every job ends done or expired, none lost.
 *
 * A primary and a replica syncing through a link the test can cut; the stack (sweeper and fan-out hosts, as in
 * failover.test.ts) reaches "the endpoint", a TCP proxy the test can repoint. The topic's handler runs in this process,
 * the real topic handler wrapper (lib/workers/handler.ts) served the way host.ts serves the Lambdas, around a function
 * that keeps the handlers' ledger: each attempt it runs, with its claim time (Redis clock; for a batch the handler
 * claimed itself, its start) and the handler's Redis-clock time when it ran. JOBS jobs are added up front, due over
 * DUE_SPREAD_MS, each with an expiresAt from 50 ms to EXPIRE_SPREAD_MS after its due time, so the expiries spread over
 * the pause and the failover; a quarter fail their first attempt and retry RETRY_S later. The topic is paused and
 * resumed; the replication link is cut, the primary SIGKILLed, the replica promoted and the endpoint repointed to it
 * (whatever the workers wrote during the cut is lost: those attempts run again, judged again). Then everything drains.
 *
 * Checks: every job is done or expired (none delayed, ready, running, dead or missing); its expiresAt survived the
 * failover; no attempt the job views keep (attemptHistory: each start on the Redis clock, as the start script
 * recorded it) started at or after the expiry; no attempt in the ledger was even claimed at or after it; and no start
 * came while the topic was paused.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Context } from 'aws-lambda';
import type { Job } from '../../lib/engine';
import { createRuntime, type Runtime } from '../../lib/platform/runtime';
import { HttpError } from '../../lib/testing';
import type { HandlerEvent } from '../../lib/workers/fanout';
import { topicHandler } from '../../lib/workers/handler';
import { linkUp, promote, startLinkedPair } from '../support/failover';
import { report, until, type HostSlot } from './support/harness';
import { Stack } from './support/stack';

const TOPIC = 'expiring';
const JOBS = 2000;
const START_MS = 1500; // the first job is due this long after the adds begin: the stack is warm by then
const DUE_SPREAD_MS = 8000; // due times spread over this long
const EXPIRE_SPREAD_MS = 3000; // each job's expiresAt: 50 ms to this long after its due time
const RETRY_S = 1; // the backoff of a failed attempt: a job expiring sooner after its first start expires on retry
const FAIL_ONCE_EVERY = 4; // every 4th job fails its first attempt
const PAUSE_AT_MS = 3000; // the topic is paused then, for PAUSE_MS
const PAUSE_MS = 1500;
const CUT_AT_MS = 5200; // the link is cut then; the failover comes CUT_MS later
const CUT_MS = 300;
const DRAIN_LIMIT_MS = 40_000;
const HOST_TIMEOUT_MS = 20_000; // each handler invocation's time limit (host.ts's HOST_TIMEOUT_MS)
/** The queue: one topic, its handler the function the fan-out invokes (served in this process, below). */
function queueConfig(): string {
  return JSON.stringify({
    partitions: 1,
    retention: 3600,
    topics: {
      [TOPIC]: {
        handler: 'webhookHandler',
        ttr: 2,
        backoff: { type: 'fixed', delay: RETRY_S },
        maxAttempts: 20,
        batchSize: 25,
        concurrency: 200,
      },
    },
  });
}

/** One attempt the handler ran: its claim time and the handler's Redis-clock time as it ran (epoch ms). */
interface Run {
  id: string;
  attempt: number;
  claimedAt: number;
  ranAt: number;
  ok: boolean;
}

/**
 * Serves the invokes of `fn` (a topic handler) on a port of this process as host.ts serves a Lambda (Event: 202,
 * then it runs); `slot` is what the router delivers to. `idle()` waits for the invocations under way.
 */
async function inProcessHost(
  name: string,
  fn: (event: HandlerEvent, context: Context) => Promise<unknown>,
): Promise<{ slot: HostSlot; idle(): Promise<void>; close(): Promise<void> }> {
  const running = new Set<Promise<unknown>>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(202).end();
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as HandlerEvent;
      const started = Date.now();
      const context = {
        awsRequestId: randomUUID(),
        getRemainingTimeInMillis: () => HOST_TIMEOUT_MS - (Date.now() - started),
      } as Context;
      const call = fn(event, context).catch(() => undefined);
      running.add(call);
      void call.finally(() => running.delete(call));
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', () => done()));
  const port = (server.address() as { port: number }).port;
  const host = { pid: process.pid, port, alive: () => true, kill: async () => undefined, output: () => '' };
  // the router needs only the slot's functions and its live host
  const slot = { functions: [name], host } as unknown as HostSlot;
  return {
    slot,
    idle: async () => {
      while (running.size > 0) await Promise.all([...running]);
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}

interface Outcome {
  jobs: number;
  done: number;
  expired: number;
  /** Jobs in any other state, or gone. */
  lost: number;
  /** Jobs whose expiresAt differs from the one their add was answered with. */
  expiryChanged: number;
  /** Attempt starts the job views keep (each on the Redis clock), and those at or after their job's expiry. */
  startsChecked: number;
  violations: number;
  /** Ledger runs claimed at or after their job's expiry (a start comes after its claim). */
  claimedAfterExpiry: number;
  /** Ledger runs, those of a retry, and the extra successful runs of a job (at least once, through the failover). */
  runs: number;
  retries: number;
  duplicates: number;
  /** Ledger runs whose handler time was at or after the expiry, and of them those whose exact start the views keep. */
  lateRuns: number;
  lateRunsResolved: number;
  /**
   * Expired and stale attempts as the handlers' reports counted them: each expiry once (more only when the failover
   * lost the write of one, judged again); stale, attempts whose claim ended under them (the failover).
   */
  handlerExpired: number;
  handlerStale: number;
  /** Starts (exact) after the pause answered and before the resume was sent. */
  startsWhilePaused: number;
  failedOverAtMs: number;
  durationMs: number;
  lostIds: string[];
  violationIds: string[];
}

/**
 * Runs `body` with the EMF metric lines this process writes (the in-process handler's, one an invocation) kept off
 * stdout: thousands of them would bury the test's report.
 */
async function withoutMetricLines<T>(body: () => Promise<T>): Promise<T> {
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: never[]) =>
    typeof chunk === 'string' && chunk.startsWith('{"_aws"') ? true : write(chunk, ...rest)) as typeof write;
  try {
    return await body();
  } finally {
    process.stdout.write = write;
  }
}

async function expiryFailover(): Promise<Outcome> {
  const began = Date.now();
  const { primary, link, replica, endpoint } = await startLinkedPair();
  const stack = new Stack({
    redisUrl: endpoint.url,
    env: { DQ_DURABILITY: 'replica', DQ_DURABILITY_TIMEOUT_MS: '300', DQ_CONFIG: queueConfig() },
  });
  let rt: Runtime | undefined;
  let host: Awaited<ReturnType<typeof inProcessHost>> | undefined;
  try {
    assert.ok(await linkUp(replica.port), 'the replica synced');
    await stack.start();
    await stack.handler.stop(); // its topic's handler runs here instead
    const runtime = createRuntime({ ...stack.env, LOG_LEVEL: 'error' });
    rt = runtime;
    const ledger: Run[] = [];
    const handlerCounts = { expired: 0, stale: 0 };
    const failOnce = new Set<string>();
    const handler = topicHandler(
      async (job, context) => {
        const run: Run = { id: job.id, attempt: job.attempt, claimedAt: job.claimedAt, ranAt: context.now(), ok: true };
        ledger.push(run);
        if (failOnce.has(job.id) && job.attempt === 1) {
          run.ok = false;
          throw new Error('fails its first attempt');
        }
      },
      () => runtime,
    );
    // the handlers' own counts (BatchReport): an expired start is counted once, as expired
    host = await inProcessHost('webhookHandler', async (event, context) => {
      const counted = await handler(event, context);
      handlerCounts.expired += counted.expired;
      handlerCounts.stale += counted.stale;
      return counted;
    });
    stack.router.route(host.slot);

    // the jobs, added up front (durable: each batch is on the replica before it is answered)
    const t0 = Date.now();
    const asked = new Map<string, number>(); // id -> expiresAt asked for
    const inputs = Array.from({ length: JOBS }, (_, i) => {
      const id = `x-${i}`;
      const runAt = t0 + START_MS + Math.floor((i * DUE_SPREAD_MS) / JOBS);
      const expiresAt = runAt + 50 + Math.floor(Math.random() * (EXPIRE_SPREAD_MS - 50));
      if (i % FAIL_ONCE_EVERY === 0) failOnce.add(id);
      asked.set(id, expiresAt);
      return { topic: TOPIC, id, runAt, expiresAt, body: { i } };
    });
    for (let i = 0; i < JOBS; i += 500) await addDurably(stack, inputs.slice(i, i + 500));
    await stack.tick(); // a sweeper, now (the first job is due in about a second)

    await until(() => Date.now() >= t0 + PAUSE_AT_MS, 60_000, 10);
    await stack.queue.pauseTopic(TOPIC, 'ops');
    const pausedAt = Date.now(); // from here no start until the resume
    await until(() => Date.now() >= pausedAt + PAUSE_MS, 60_000, 10);
    const resumeSentAt = Date.now();
    await stack.queue.resumeTopic(TOPIC, 'ops');

    await until(() => Date.now() >= t0 + CUT_AT_MS, 60_000, 10);
    link.cut(); // the replica stops hearing from the primary: the workers' writes from here are lost
    await sleep(CUT_MS);
    await primary.stop('SIGKILL');
    const failedOverAt = Date.now();
    await promote(replica.port);
    endpoint.repoint({ port: replica.port });

    // drained: nothing delayed, ready or running once every job's expiry has passed
    const lastExpiry = Math.max(...asked.values());
    const drained = await until(
      async () => {
        if (Date.now() < lastExpiry) return false;
        const s = await stack.queue.stats(TOPIC).catch(() => undefined);
        return s !== undefined && s.delayed + s.ready + s.running === 0;
      },
      DRAIN_LIMIT_MS,
      250,
    );
    assert.ok(
      drained,
      `the topic drained within ${DRAIN_LIMIT_MS / 1000} s: ${JSON.stringify(await stack.queue.stats(TOPIC))}`,
    );
    await host.idle();

    const views = new Map<string, Job | null>();
    const ids = [...asked.keys()];
    for (let i = 0; i < ids.length; i += 100)
      await Promise.all(ids.slice(i, i + 100).map(async (id) => views.set(id, await stack.queue.get(TOPIC, id))));
    const outcome = tallyOf({ asked, views, ledger, pausedAt, resumeSentAt, failedOverAt: failedOverAt - t0, began });
    return { ...outcome, handlerExpired: handlerCounts.expired, handlerStale: handlerCounts.stale };
  } finally {
    rt?.redis.disconnect();
    await stack.stop().catch(() => undefined);
    await host?.close();
    await Promise.all([endpoint.close(), link.close()]);
    await Promise.all([primary.stop(), replica.stop()]);
  }
}

/** The figures of a run: the job views (exact starts) against the expiries asked for, and the handlers' ledger. */
function tallyOf(r: {
  asked: Map<string, number>;
  views: Map<string, Job | null>;
  ledger: Run[];
  pausedAt: number;
  resumeSentAt: number;
  failedOverAt: number;
  began: number;
}): Omit<Outcome, 'handlerExpired' | 'handlerStale'> {
  const o: Omit<Outcome, 'handlerExpired' | 'handlerStale'> = {
    jobs: r.asked.size,
    done: 0,
    expired: 0,
    lost: 0,
    expiryChanged: 0,
    startsChecked: 0,
    violations: 0,
    claimedAfterExpiry: 0,
    runs: r.ledger.length,
    retries: r.ledger.filter((run) => run.attempt > 1).length,
    duplicates: 0,
    lateRuns: 0,
    lateRunsResolved: 0,
    startsWhilePaused: 0,
    failedOverAtMs: r.failedOverAt,
    durationMs: Date.now() - r.began,
    lostIds: [],
    violationIds: [],
  };
  for (const [id, expiresAt] of r.asked) {
    const job = r.views.get(id);
    if (job?.state === 'done') o.done += 1;
    else if (job?.state === 'expired') o.expired += 1;
    else {
      o.lost += 1;
      o.lostIds.push(`${id}:${job?.state ?? 'gone'}`);
    }
    if (job && job.expiresAt !== new Date(expiresAt).toISOString()) o.expiryChanged += 1;
    for (const a of job?.attemptHistory ?? []) {
      const startedAt = Date.parse(a.startedAt);
      o.startsChecked += 1;
      if (startedAt >= expiresAt) {
        o.violations += 1;
        o.violationIds.push(`${id}#${a.attempt}`);
      }
      if (startedAt > r.pausedAt && startedAt < r.resumeSentAt) o.startsWhilePaused += 1;
    }
  }
  const succeeded = new Map<string, number>();
  for (const run of r.ledger) {
    const expiresAt = r.asked.get(run.id)!;
    if (run.ok) succeeded.set(run.id, (succeeded.get(run.id) ?? 0) + 1);
    if (run.claimedAt >= expiresAt) {
      o.claimedAfterExpiry += 1;
      o.violationIds.push(`${run.id}#${run.attempt} claimed`);
    }
    if (run.ranAt < expiresAt) continue; // it started before it ran
    o.lateRuns += 1;
    // the start lies between its claim and its run: the view's start of that attempt, if it kept it, settles it
    const kept = r.views
      .get(run.id)
      ?.attemptHistory.find(
        (a) =>
          a.attempt === run.attempt && Date.parse(a.startedAt) >= run.claimedAt && Date.parse(a.startedAt) <= run.ranAt,
      );
    if (kept) o.lateRunsResolved += 1;
  }
  for (const n of succeeded.values()) o.duplicates += Math.max(0, n - 1);
  o.lostIds = o.lostIds.slice(0, 10);
  o.violationIds = o.violationIds.slice(0, 10);
  return o;
}

/**
 * Adds `batch` as a client would: a 503 NOT_REPLICATED (no replica confirmed in time, on a loaded machine) is sent
 * again, and on a try after the first an id the earlier try created answers `exists`.
 */
async function addDurably(stack: Stack, batch: readonly unknown[]): Promise<void> {
  for (let tries = 1; ; tries++) {
    try {
      const { outcomes } = await stack.queue.addMany(batch);
      const bad = outcomes.find((o) => o.status !== 'created' && !(tries > 1 && o.status === 'exists'));
      assert.equal(bad, undefined, `every add created: ${JSON.stringify(bad)}`);
      return;
    } catch (error) {
      if (!(error instanceof HttpError && error.code === 'NOT_REPLICATED') || tries >= 10) throw error;
      await sleep(100 * tries);
    }
  }
}

describe('expiry through retries, a pause and a failover (durability replica)', () => {
  it(`${JOBS} jobs: 0 attempts started at or after their expiry, each done or expired, none lost`, async (t) => {
    const o = await withoutMetricLines(expiryFailover);
    report({
      scenario: 'expiry through retries, a pause and a failover (kill), durability replica',
      accepted: o.jobs,
      delivered: o.done + o.expired,
      missing: o.lost,
      missingIds: o.lostIds,
      ...o,
    });
    t.diagnostic(JSON.stringify(o));
    assert.equal(o.lost, 0, `jobs neither done nor expired: ${o.lostIds.join(', ')}`);
    assert.equal(o.done + o.expired, o.jobs);
    assert.equal(o.expiryChanged, 0, 'every expiresAt survived the failover');
    assert.equal(o.violations, 0, `attempts started at or after their expiry: ${o.violationIds.join(', ')}`);
    assert.equal(o.claimedAfterExpiry, 0, `attempts claimed at or after their expiry: ${o.violationIds.join(', ')}`);
    assert.equal(o.startsWhilePaused, 0, 'no start while the topic was paused');
    assert.ok(o.handlerExpired >= o.expired, `the handlers counted ${o.handlerExpired} expired of ${o.expired}`);
    // the scenario ran: some jobs expired, most ran, retries happened, and the views held the starts to check
    assert.ok(o.expired > 0 && o.done > o.jobs / 2, `done ${o.done}, expired ${o.expired}`);
    assert.ok(o.retries > 0, 'some attempts were retries');
    assert.ok(o.startsChecked >= o.done, `starts checked: ${o.startsChecked}`);
  });
});
