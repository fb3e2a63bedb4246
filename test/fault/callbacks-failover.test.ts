/**
 * Callbacks through killed handlers and a failover with durability `replica`: every acknowledged job that ends done or
 * dead notifies that end, none lost; the duplicates are counted and reported.
 *
 * A primary and a replica syncing through a link the test can cut; the stack (sweeper, fan-out and webhook handler
 * hosts, as in failover.test.ts) reaches "the endpoint", a TCP proxy the test can repoint. JOBS webhook jobs (topic
 * `webhook`, delivered to the recorder at /hook/<id>) each name a callback { topic: callbacks, url: the recorder at
 * /cb, on: [done, dead] }: its notification is a job of the webhook topic `callbacks`, POSTed to /cb with the body
 * { callbackId, topic, id, outcome, ... }. The recorder answers 500 to every delivery of every FAIL_EVERY-th job, which
 * goes dead after MAX_ATTEMPTS (a handler's kill costs the attempts it had running, so some others go dead too). The
 * jobs are added in batches at RATE a second; an add that throws (503 NOT_REPLICATED, a lost connection) is not
 * acknowledged and is sent again, and an id an earlier try created then answers `exists`, which is acknowledged. The
 * webhook handler host is SIGKILLed KILLS times, at random points of the deliveries (wherever it is: mid-delivery,
 * between an end and its drain, mid-drain); once half the jobs are acknowledged the link is cut, CUT_MS later the
 * primary is SIGKILLed, the replica promoted, the endpoint repointed and a new replica started for it.
 *
 * Checks, once the queue has drained (both topics empty of delayed, ready and running jobs, the outbox empty, every
 * acknowledged job ended and notified, or the time limit): every acknowledged job is done or dead on the new primary,
 * and for each one the recorder received at least one notification with body.id = the job and body.outcome = its
 * state (lost: none). Reported: notifications beyond one per end, deliveries of one callback job beyond its first,
 * callback ids beyond one per job, and notifications of an end the failover undid (outcome other than the final).
 *
 * FAULT_CALLBACK_JOBS sets the job count (2,000; the figure is 10,000), FAULT_CALLBACK_KILLS the kills (6),
 * FAULT_SEED the kill points.
 */
import assert from 'node:assert/strict';
import { loadavg } from 'node:os';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Job } from '../../lib/engine';
import { createRuntime, type Runtime } from '../../lib/platform/runtime';
import { outboxKey, topicKeys } from '../../lib/testing';
import { queueOf } from '../support/queue';
import { linkUp, promote, replication, seeded, startLinkedPair, SYNC_NOW } from '../support/failover';
import { startRedis, type RedisProcess } from '../support/redis';
import { report, until, type Delivery } from './support/harness';
import { Stack } from './support/stack';

const JOBS = Number(process.env.FAULT_CALLBACK_JOBS ?? 2000);
const KILLS = Number(process.env.FAULT_CALLBACK_KILLS ?? 6);
const FAIL_EVERY = 10; // every 10th job's deliveries are answered 500: it ends dead
const MAX_ATTEMPTS = 3;
const BATCH = 50; // jobs an add call carries
const RATE = 250; // jobs added a second
const CUT_MS = 300; // the replica falls behind this long before the failover
const WAIT_MS = '300'; // DQ_DURABILITY_TIMEOUT_MS
// the outbox lease (30 s, lib/engine/outbox.ts) and the sweeper's look (10 s) bound a dead notifier's entry; the
// backlog at the end grows with the job count
const DRAIN_LIMIT_MS = 120_000 + JOBS * 20;
const STRANDED_MS = 5000; // an outbox entry this old was left by its notifier (a live one removes it within ms)
const ADD_LIMIT_MS = 60_000; // an add call is given up (the test fails) when not acknowledged within this
/** The queue: the jobs' webhook topic, and the webhook topic their notifications go to. */
function queueConfig(): string {
  const webhook = { kind: 'webhook', handler: 'webhookHandler', ttr: 2, backoff: { type: 'fixed', delay: 0.2 } };
  return JSON.stringify({
    partitions: 1,
    retention: 3600,
    topics: {
      webhook: { ...webhook, maxAttempts: MAX_ATTEMPTS, batchSize: 10, concurrency: 50 },
      callbacks: { ...webhook, maxAttempts: 1000, batchSize: 10, concurrency: 50 },
    },
  });
}

/** A notification's body, as lib/engine/callbacks.ts writes it. */
interface Notice {
  callbackId: string;
  topic: string;
  id: string;
  outcome: string;
}

interface Outcome {
  scenario: string;
  seed: number;
  jobs: number;
  /** Add calls that threw (each sent again), the jobs they carried, and the errors by code. */
  addsRefused: number;
  addErrors: Record<string, number>;
  /** Acknowledged jobs: answered created, or exists on a try after the first. */
  acknowledged: number;
  done: number;
  dead: number;
  /** Acknowledged jobs neither done nor dead (or gone) at the end: never ended. */
  neverEnded: number;
  /** Acknowledged jobs done or dead without a notification of that end. */
  lost: number;
  kills: number;
  /** Deliveries of jobs (to /hook) and of notifications (to /cb). */
  jobDeliveries: number;
  notifications: number;
  /** Of them, those that arrived from the cut to the primary's kill: work whose writes the failover undid. */
  jobDeliveriesDuringCut: number;
  notificationsDuringCut: number;
  /** The replication stream the primary had written and the replica lacked at the kill: what the failover undid. */
  undoneBytes: number;
  /** Notifications beyond one per job end (every kind of duplicate below together). */
  duplicates: number;
  /** Deliveries of one callback job beyond its first (the same callbackId: a handler killed mid-delivery). */
  redelivered: number;
  /** Callback ids beyond one per job (an end notified again as another callback job). */
  extraCallbackIds: number;
  /** Jobs notified of an outcome other than their final state (an end the failover undid, then another end). */
  jobsNotifiedOtherOutcome: number;
  /** Notifications whose body names no acknowledged job, or whose x-dq-job-id differs from body.callbackId. */
  strayNotifications: number;
  /** The outbox's largest size seen, and its entries that stayed STRANDED_MS or more (the recovery drains). */
  outboxMax: number;
  strandedEntries: number;
  outboxLeft: number;
  drained: boolean;
  failedOverAtMs: number;
  producingMs: number;
  durationMs: number;
  loadBefore: string;
  loadAfter: string;
  lostIds: string[];
  neverEndedIds: string[];
  /** The add calls sent again, each try's time (ms from the first add) and answer, and the failover's steps. */
  trace: string[];
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

/** The deliveries of jobs and of notifications that arrived from `from` to `to`. */
function duringCut(deliveries: readonly Delivery[], from: number, to: number) {
  const within = deliveries.filter((d) => d.at >= from && d.at <= to);
  return {
    jobDeliveriesDuringCut: within.filter((d) => d.path.startsWith('/hook/')).length,
    notificationsDuringCut: within.filter((d) => d.path === '/cb').length,
  };
}

async function callbacksFailover(seed: number): Promise<Outcome> {
  const began = Date.now();
  const loadBefore = load();
  const rnd = seeded(seed);
  const { primary, link, replica, endpoint } = await startLinkedPair();
  const stack = new Stack({
    redisUrl: endpoint.url,
    env: { DQ_DURABILITY: 'replica', DQ_DURABILITY_TIMEOUT_MS: WAIT_MS, DQ_CONFIG: queueConfig() },
  });
  let replacement: RedisProcess | undefined;
  let rt: Runtime | undefined;
  let running = true; // false once the run ends, however: the watcher, the killer and the failover stop
  const tasks: Promise<unknown>[] = [];
  try {
    assert.ok(await linkUp(replica.port), 'the replica synced');
    await stack.start();
    // the adds and reads as the API makes them, with the Lambdas' client settings: a command whose connection was lost
    // is not sent again on the next one (the stack's own client, ioredis's defaults, re-sends it: a WAIT sent to the
    // old primary, lost with it and answered by the new one, would acknowledge an add the failover undid)
    const api = createRuntime({ ...stack.env, LOG_LEVEL: 'error' });
    rt = api;
    const queue = queueOf(api.engine);
    const recorder = stack.recorder;
    // the outbox, watched: its largest size, and the entries that stayed STRANDED_MS or more (their notifier died or
    // failed; a later drain, the sweeper's or another end's, added their jobs)
    const outbox = outboxKey(topicKeys(0, 'webhook', 1).jobs);
    const firstSeen = new Map<string, number>();
    const stranded = new Set<string>();
    let outboxMax = 0;
    const watcher = (async () => {
      while (running) {
        const entries = await api.redis.zrange(outbox, 0, -1).catch(() => [] as string[]);
        outboxMax = Math.max(outboxMax, entries.length);
        for (const e of entries) {
          const first = firstSeen.get(e) ?? Date.now();
          firstSeen.set(e, first);
          if (Date.now() - first >= STRANDED_MS) stranded.add(e);
        }
        await sleep(100);
      }
    })();
    const failing = (id: string) => Number(id.slice(2)) % FAIL_EVERY === 0;
    recorder.status = (d) => (d.path.startsWith('/hook/') && failing(d.id) ? 500 : 200);
    const deliveredJobs = new Set<string>(); // jobs delivered at least once: the deliveries' progress
    recorder.onDelivery = (d) => {
      if (d.path.startsWith('/hook/')) deliveredJobs.add(d.id);
    };

    // the kills: at random points of the deliveries, spread over them
    const killAt = Array.from({ length: KILLS }, () => Math.floor(JOBS * (0.05 + 0.85 * rnd()))).sort((a, b) => a - b);
    const killJitterMs = killAt.map(() => Math.floor(rnd() * 300));
    let kills = 0;
    const killer = (async () => {
      for (const [i, at] of killAt.entries()) {
        await until(() => !running || deliveredJobs.size >= at, DRAIN_LIMIT_MS, 5);
        if (!running || deliveredJobs.size < at) return;
        await sleep(killJitterMs[i]!);
        await stack.handler.restart();
        kills += 1;
      }
    })();

    // the adds: batches at RATE a second; a batch that throws is sent again after a backoff
    const acknowledged = new Set<string>();
    const addErrors: Record<string, number> = {};
    let addsRefused = 0;
    let unexpected = '';
    const t0 = Date.now();
    let failedOverAt = 0;
    let cutAt = 0;
    let undoneBytes = 0;
    const trace: string[] = [];
    const failover = (async () => {
      await until(() => !running || acknowledged.size >= JOBS / 2, ADD_LIMIT_MS * 4, 5);
      if (!running) return;
      // while the handlers deliver: the cut's ends and notifications are the writes the failover undoes
      await until(() => Date.now() - (recorder.deliveries.at(-1)?.at ?? 0) < 50, 10_000, 5);
      link.cut(); // the replica stops hearing from the primary: what is written from here is lost
      cutAt = Date.now();
      trace.push(`cut at ${Date.now() - t0}`);
      await sleep(CUT_MS);
      const offset = (port: number, field: string) =>
        Number(new RegExp(`${field}:(\\d+)`).exec(replication(port))?.[1]);
      const written = offset(primary.port, 'master_repl_offset');
      await primary.stop('SIGKILL');
      failedOverAt = Date.now();
      undoneBytes = written - offset(replica.port, 'slave_repl_offset');
      await promote(replica.port);
      endpoint.repoint({ port: replica.port });
      trace.push(`repointed at ${Date.now() - t0}`);
      // ElastiCache replaces the lost node; until the new replica has synced, changes are refused (503)
      replacement = await startRedis({ args: [...SYNC_NOW, '--replicaof', '127.0.0.1', String(replica.port)] });
    })();
    tasks.push(watcher, killer, failover);
    for (let from = 0; from < JOBS; from += BATCH) {
      await until(() => Date.now() >= t0 + (from * 1000) / RATE, 60_000, 5);
      const inputs = Array.from({ length: Math.min(BATCH, JOBS - from) }, (_, k) => {
        const id = `j-${from + k}`;
        return {
          topic: 'webhook',
          id,
          delay: 0,
          url: `${recorder.url}/hook/${id}`,
          body: { id },
          callback: { topic: 'callbacks', url: `${recorder.url}/cb`, on: ['done', 'dead'] },
        };
      });
      const sentAt = Date.now();
      for (let tries = 1; ; tries++) {
        try {
          const { outcomes } = await queue.addMany(inputs);
          if (tries > 1)
            trace.push(
              `${inputs[0]!.id} sent ${sentAt - t0}, try ${tries} at ${Date.now() - t0}: ${outcomes[0]!.status}`,
            );
          outcomes.forEach((o, k) => {
            if (o.status === 'created' || (tries > 1 && o.status === 'exists')) acknowledged.add(inputs[k]!.id);
            else unexpected ||= `${inputs[k]!.id}: ${o.status}`;
          });
          break;
        } catch (error) {
          const e = error as { code?: unknown; message?: unknown };
          const code = typeof e.code === 'string' ? e.code : String(e.message).slice(0, 60);
          addErrors[code] = (addErrors[code] ?? 0) + 1;
          addsRefused += 1;
          trace.push(`${inputs[0]!.id} try ${tries} at ${Date.now() - t0}: ${code}`);
          assert.ok(Date.now() - sentAt < ADD_LIMIT_MS, `an add was acknowledged within ${ADD_LIMIT_MS} ms`);
          await sleep(Math.min(100 * tries, 1000));
        }
      }
    }
    const producingMs = Date.now() - t0;
    await failover;
    assert.equal(unexpected, '', 'every add answered created (or exists, sent again)');

    // drained: both topics empty, the outbox empty, and every acknowledged job ended and notified of that end
    const notices = new Map<string, { notice: Notice; delivery: Delivery }[]>(); // by job id
    let seen = 0; // recorder deliveries read into `notices`
    const readNotices = () => {
      for (; seen < recorder.deliveries.length; seen++) {
        const d = recorder.deliveries[seen]!;
        if (d.path !== '/cb') continue;
        const notice = JSON.parse(d.body) as Notice;
        notices.set(notice.id, [...(notices.get(notice.id) ?? []), { notice, delivery: d }]);
      }
    };
    const states = new Map<string, string>();
    const readStates = async (ids: string[]) => {
      for (let i = 0; i < ids.length; i += 100)
        await Promise.all(
          ids.slice(i, i + 100).map(async (id) => {
            const job: Job | null = await queue.get('webhook', id);
            states.set(id, job?.state ?? 'gone');
          }),
        );
    };
    const notified = (id: string) => (notices.get(id) ?? []).some(({ notice }) => notice.outcome === states.get(id));
    const ended = (id: string) => states.get(id) === 'done' || states.get(id) === 'dead';
    let pending = [...acknowledged];
    const drained = await until(
      async () => {
        try {
          readNotices();
          // the ids not yet seen ended and notified; read after the failover, a state read here is final
          await readStates(pending);
          pending = pending.filter((id) => !(ended(id) && notified(id)));
          if (pending.length > 0) return false;
          const [hooks, cbs] = await Promise.all([queue.stats('webhook'), queue.stats('callbacks')]);
          const busy = hooks.delayed + hooks.ready + hooks.running + cbs.delayed + cbs.ready + cbs.running;
          return busy === 0 && (await api.redis.zcard(outbox)) === 0;
        } catch {
          return false; // Redis unreachable for a moment: look again
        }
      },
      DRAIN_LIMIT_MS,
      1000,
    );
    await killer;
    running = false;
    await watcher;
    const loadAfter = load();

    // the final pass: every acknowledged job's state, read again, against the notifications received
    readNotices();
    await readStates([...acknowledged]);
    const o: Outcome = {
      scenario: 'callbacks through handler kills and a failover (kill), durability replica',
      seed,
      jobs: JOBS,
      addsRefused,
      addErrors,
      acknowledged: acknowledged.size,
      done: 0,
      dead: 0,
      neverEnded: 0,
      lost: 0,
      kills,
      jobDeliveries: recorder.deliveries.filter((d) => d.path.startsWith('/hook/')).length,
      notifications: recorder.deliveries.filter((d) => d.path === '/cb').length,
      ...duringCut(recorder.deliveries, cutAt, failedOverAt),
      undoneBytes,
      duplicates: 0,
      redelivered: 0,
      extraCallbackIds: 0,
      jobsNotifiedOtherOutcome: 0,
      strayNotifications: 0,
      outboxMax,
      strandedEntries: stranded.size,
      outboxLeft: await api.redis.zcard(outbox),
      drained,
      failedOverAtMs: failedOverAt - t0,
      producingMs,
      durationMs: 0,
      loadBefore,
      loadAfter,
      lostIds: [],
      neverEndedIds: [],
      trace,
    };
    for (const id of acknowledged) {
      const state = states.get(id)!;
      const list = notices.get(id) ?? [];
      if (state === 'done') o.done += 1;
      else if (state === 'dead') o.dead += 1;
      else {
        o.neverEnded += 1;
        o.neverEndedIds.push(`${id}:${state}`);
      }
      if (ended(id) && !notified(id)) {
        o.lost += 1;
        o.lostIds.push(`${id}:${state} notified ${JSON.stringify(list.map(({ notice }) => notice.outcome))}`);
      }
      const callbackIds = new Set(list.map(({ notice }) => notice.callbackId));
      o.redelivered += list.length - callbackIds.size;
      o.extraCallbackIds += Math.max(0, callbackIds.size - 1);
      if (list.some(({ notice }) => notice.outcome !== state)) o.jobsNotifiedOtherOutcome += 1;
      if (ended(id)) o.duplicates += Math.max(0, list.length - 1);
    }
    for (const [id, list] of notices)
      for (const { notice, delivery } of list)
        if (!acknowledged.has(id) || notice.topic !== 'webhook' || delivery.id !== notice.callbackId)
          o.strayNotifications += 1;
    o.lostIds = o.lostIds.slice(0, 20);
    o.neverEndedIds = o.neverEndedIds.slice(0, 20);
    o.durationMs = Date.now() - began;
    return o;
  } finally {
    running = false;
    await Promise.allSettled(tasks);
    rt?.redis.disconnect();
    await stack.stop().catch(() => undefined);
    await Promise.all([endpoint.close(), link.close()]);
    await Promise.all([primary.stop(), replica.stop(), replacement?.stop()]);
  }
}

describe('callbacks through handler kills and a failover (durability replica)', () => {
  it(`${JOBS} jobs: every acknowledged job that ended done or dead notified that end, 0 lost`, async (t) => {
    const seed = Number(process.env.FAULT_SEED ?? Date.now() % 1_000_000);
    t.diagnostic(`seed ${seed} (FAULT_SEED=${seed} repeats the kill points)`);
    const o = await callbacksFailover(seed);
    report({
      accepted: o.acknowledged,
      delivered: o.acknowledged - o.lost - o.neverEnded,
      missing: o.lost + o.neverEnded,
      missingIds: [...o.lostIds, ...o.neverEndedIds],
      ...o,
    });
    t.diagnostic(JSON.stringify(o));
    assert.equal(o.neverEnded, 0, `acknowledged jobs neither done nor dead: ${o.neverEndedIds.join(', ')}`);
    assert.equal(o.lost, 0, `ends without their notification: ${o.lostIds.join('; ')}`);
    assert.equal(o.acknowledged, o.jobs, 'every job was acknowledged (its add sent again until it was)');
    assert.equal(o.outboxLeft, 0, 'the outbox drained');
    assert.equal(o.strayNotifications, 0, 'every notification names an acknowledged job of the topic and its own id');
    assert.ok(o.drained, 'the queue drained within the limit');
    // the scenario ran: every kill made, both ends notified
    assert.equal(o.kills, KILLS, `the handler was killed ${KILLS} times`);
    assert.ok(o.done > 0 && o.dead >= o.jobs / FAIL_EVERY, `done ${o.done}, dead ${o.dead}`);
  });
});
