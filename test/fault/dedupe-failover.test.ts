/**
 * Dedupe through a failover with durability `replica`: 8 producers race adds of the same dedupe keys while the primary
 * fails over to its replica, and no key ever has two jobs acknowledged, nor two jobs left.
 *
 * A primary and a replica syncing through a link the test can cut; the producers (each a runtime of its own, with the
 * Lambdas' client settings, so a connection of its own) reach "the endpoint", a TCP proxy the test can repoint, as in
 * failover.test.ts. Each producer walks the same KEYS keys in the same order, at most LOCKSTEP keys ahead of the
 * slowest (so the 8 race each key at about the same time), now and then adds a key it added before again, and sends
 * some adds as batches (addMany). A call that throws (503 NOT_REPLICATED, a lost connection, READONLY) is not
 * acknowledged: the producer sends it again after a backoff, as a client would, its new calls going on meanwhile.
 * Once the producers have sent CUT_AT of their calls the link is cut (the replica falls behind: the keys first added
 * during the cut have their job and entry on the old primary only, every add of them refused), CUT_MS later the
 * failover:
 *  - `kill`: the primary is SIGKILLed, the replica promoted, the endpoint repointed, a new replica started for it;
 *  - `demote`: the replica is promoted, the endpoint repointed, the old primary (alive, its clients connected) made a
 *    replica of the new one.
 *
 * Over acknowledged answers only ('created' or 'duplicate'), per key: at most one job id answered 'created', and every
 * acknowledged answer names that one id. In the final state on the new primary, per key: at most one job whose id
 * starts with `<key>::`, it is the one the answers named (an acknowledged job survives the failover), and the key's
 * entry names it. The run reports its figures (FAULT-RESULT), among them keysUndone: the keys whose job the failover
 * undid, raced again after it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { jobService, type AddOutcome } from '../../lib/api/job-routes';
import { createRuntime, type Runtime } from '../../lib/platform/runtime';
import { keyedEntryKey, partitionOf, topicKeys } from '../../lib/testing';
import { replication, seeded, startLinkedPair, SYNC_NOW } from '../support/failover';
import { startRedis, type RedisProcess } from '../support/redis';
import { report, until } from './support/harness';

type Variant = 'kill' | 'demote';
type Phase = 'before' | 'cut' | 'after';

const TOPIC = 'dedupe';
const PARTITIONS = 4; // a batch's keys spread over partitions: one answer covers several
const PRODUCERS = 8;
const KEYS = 500;
const WINDOW_S = 3600; // longer than the run: every add of a key after its first is a duplicate
const DELAY_S = 3600; // nothing comes due: the jobs stay for the final count
const READD_SHARE = 0.3; // after each key, the chance of adding again a key up to READD_BACK keys before
const READD_BACK = 150;
const LOCKSTEP = 10; // a producer sends a new key at most this many keys ahead of the slowest: all 8 race each key
const BATCH_SHARE = 0.3; // the share of calls that are batches of 2 to 5 adds
const CUT_AT = 0.4; // the link is cut once the producers have sent this share of their planned calls
// then the failover, once the cut refused 4 adds a producer (503) and at least this long: the writes of the adds
// during the cut are on the old primary only, and the failover undoes them
const CUT_MS = 3000;
// a refused call is sent again after a backoff (as a client would: 100 ms, doubled each time up to 1.6 s, less up
// to half of it at random), the producer's other calls going on meanwhile
const RETRY_MS = { first: 100, max: 1600 };
// DQ_DURABILITY_TIMEOUT_MS: a cut-off replica costs each change 100 ms, then 503 (a busy machine may turn some adds
// into 503s, retried: not acknowledged, so not counted)
const WAIT_MS = '100';
// the producers stop retrying after this long: a bound for a broken run, not a timing (a busy machine takes longer)
const RUN_LIMIT_MS = 40_000;
const keyName = (i: number) => `k${i}`;

/** The dedupe entry of key `key`: '<until ms> <id>' (lua/includes/keyed.lua). */
const entryKey = (key: string) =>
  keyedEntryKey(topicKeys(partitionOf(TOPIC, key, PARTITIONS), TOPIC, PARTITIONS).jobs, 'dedupe', key);

/** The job ids the entries of every key name on the server `client` reaches (null: none). */
async function entries(client: Redis): Promise<(string | null)[]> {
  const values = await client.mget(Array.from({ length: KEYS }, (_, i) => entryKey(keyName(i))));
  return values.map((v) => (v === null ? null : (/^\d+ (.*)$/.exec(v)?.[1] ?? v)));
}

/**
 * One call a producer sends: one add (jobService.add) or a batch (addMany), each add a key; retried until answered.
 * `newest`: the highest key number it adds.
 */
interface Call {
  keys: string[];
  newest: number;
  tries: number;
  retryAt: number;
}

/** A producer's calls: every key in order, some added again later, some calls batches. */
function planCalls(rnd: () => number): Call[] {
  const adds: number[] = [];
  for (let i = 0; i < KEYS; i++) {
    adds.push(i);
    if (i > 0 && rnd() < READD_SHARE) adds.push(Math.max(0, i - 1 - Math.floor(rnd() * READD_BACK)));
  }
  const calls: Call[] = [];
  for (let i = 0; i < adds.length;) {
    const n = rnd() < BATCH_SHARE ? 2 + Math.floor(rnd() * 4) : 1;
    const batch = adds.slice(i, i + n);
    calls.push({ keys: batch.map(keyName), newest: Math.max(...batch), tries: 0, retryAt: 0 });
    i += n;
  }
  return calls;
}

/** An acknowledged answer to one add. */
interface Answer {
  producer: number;
  status: 'created' | 'duplicate';
  id: string;
  /** ms since the producers started. */
  at: number;
  phase: Phase;
}

interface Outcome {
  scenario: string;
  variant: Variant;
  seed: number;
  keys: number;
  producers: number;
  /** Adds planned (each producer's), calls sent (retries included) and adds sent. */
  addsPlanned: number;
  calls: number;
  addsSent: number;
  acknowledgedCreated: number;
  acknowledgedDuplicate: number;
  /** Adds of calls that threw, by error code or message. */
  unacknowledged: number;
  errors: Record<string, number>;
  /** Calls sent again after a throw. */
  retries: number;
  /** Adds answered anything but created or duplicate (none expected: ids are generated). */
  unexpected: number;
  /** Acknowledged answers by the phase they came in. */
  acknowledgedByPhase: Record<Phase, number>;
  /** Adds of calls still unanswered when the producers stopped (RUN_LIMIT_MS). */
  unsettled: number;
  /** Keys whose job on the old primary at the failover was not their job after it: undone, then raced anew. */
  keysUndone: number;
  /** Keys with two jobs acknowledged (keysWithTwoCreated) or left (keysWithTwoJobs): must be 0. */
  duplicates: number;
  /** Keys with 2 or more distinct ids answered 'created' (acknowledged). */
  keysWithTwoCreated: number;
  /** Keys whose acknowledged answers (created or duplicate) name 2 or more ids. */
  keysWithSplitAnswers: number;
  /** Keys with 2 or more jobs in the final state. */
  keysWithTwoJobs: number;
  /** Keys whose acknowledged job is missing from the final state. */
  keysLostJob: number;
  /** Keys whose entry does not name the one job left. */
  keysEntryMismatch: number;
  /** Keys with no acknowledged answer. */
  keysUnanswered: number;
  jobsFinal: number;
  failoverAtMs: number;
  /** From the producers' start to their last answer; from the first server's start to the final count. */
  producingMs: number;
  durationMs: number;
  violations: string[];
}

async function dedupeFailover(variant: Variant, seed: number): Promise<Outcome> {
  const began = Date.now();
  const { primary, link, replica, endpoint } = await startLinkedPair();
  const runtimes: Runtime[] = [];
  let replacement: RedisProcess | undefined;
  let reader: Redis | undefined;
  try {
    assert.ok(
      await until(() => /^slave0:.*state=online/m.test(replication(primary.port)), 30_000, 50),
      'the replica synced',
    );
    const env = {
      REDIS_URL: endpoint.url,
      DQ_CONFIG: JSON.stringify({ partitions: PARTITIONS, retention: 3600, topics: { [TOPIC]: {} } }),
      DQ_DURABILITY: 'replica',
      DQ_DURABILITY_TIMEOUT_MS: WAIT_MS,
      DQ_FUNCTION_PREFIX: 'dq-dedupe-',
      DQ_WAKE_INVOKES: 'false',
      API_TOKEN: 't',
      WEBHOOK_SECRET: 's',
      LOG_LEVEL: 'error',
    };
    for (let p = 0; p < PRODUCERS; p++) runtimes.push(createRuntime(env));

    const rnd = seeded(seed);
    const plans = runtimes.map(() => planCalls(rnd));
    const plannedCalls = plans.reduce((n, calls) => n + calls.length, 0);
    const answers = new Map<string, Answer[]>();
    const errors: Record<string, number> = {};
    const counts = { calls: 0, addsSent: 0, unacknowledged: 0, retries: 0, unexpected: 0, firstSent: 0, unsettled: 0 };
    let phase: Phase = 'before';
    let undone: (after: (string | null)[]) => number = () => 0;
    const start = Date.now();
    const deadline = start + RUN_LIMIT_MS;

    const record = (producer: number, key: string, outcome: AddOutcome) => {
      if (outcome.status !== 'created' && outcome.status !== 'duplicate') {
        counts.unexpected += 1;
        return;
      }
      const id = outcome.status === 'created' ? outcome.job.id : outcome.id;
      const list = answers.get(key) ?? [];
      list.push({ producer, status: outcome.status, id, at: Date.now() - start, phase });
      answers.set(key, list);
    };

    const send = async (producer: number, call: Call) => {
      const engine = runtimes[producer]!.engine;
      const inputs = call.keys.map((key) => ({
        topic: TOPIC,
        delay: DELAY_S,
        body: { producer, key },
        dedupe: { key, window: WINDOW_S },
      }));
      counts.calls += 1;
      counts.addsSent += inputs.length;
      if (call.tries === 0) counts.firstSent += 1;
      else counts.retries += 1;
      call.tries += 1;
      try {
        if (inputs.length === 1) record(producer, call.keys[0]!, await jobService.add(engine, inputs[0]));
        else {
          const { outcomes } = await jobService.addMany(engine, inputs);
          outcomes.forEach((o, i) => record(producer, call.keys[i]!, o));
        }
        return true;
      } catch (error) {
        const e = error as { code?: unknown; message?: unknown };
        const code = typeof e.code === 'string' ? e.code : String(e.message).slice(0, 60);
        errors[code] = (errors[code] ?? 0) + 1;
        counts.unacknowledged += inputs.length;
        return false;
      }
    };

    const sent = runtimes.map(() => -1); // the newest key each producer sent; Infinity once it sent all its calls
    const produce = async (producer: number) => {
      const plan = plans[producer]!;
      const pending: Call[] = []; // refused calls, each sent again at its retryAt
      let next = 0;
      while (Date.now() < deadline) {
        const now = Date.now();
        const due = pending.findIndex((c) => c.retryAt <= now);
        const slowest = Math.min(...sent);
        let call: Call;
        if (next < plan.length && (plan[next]!.newest <= slowest + LOCKSTEP || sent[producer] === slowest)) {
          call = plan[next++]!;
          sent[producer] = next < plan.length ? Math.max(sent[producer]!, call.newest) : Infinity;
        } else if (due >= 0) call = pending.splice(due, 1)[0]!;
        else if (next < plan.length || pending.length > 0) {
          await sleep(1);
          continue;
        } else return;
        if (!(await send(producer, call))) {
          const backoff = Math.min(RETRY_MS.first * 2 ** (call.tries - 1), RETRY_MS.max);
          call.retryAt = Date.now() + backoff * (1 - Math.random() / 2);
          pending.push(call);
        }
      }
      counts.unsettled += [...pending, ...plan.slice(next)].reduce((n, c) => n + c.keys.length, 0);
    };

    const producers = Promise.all(runtimes.map((_, p) => produce(p)));
    await until(() => counts.firstSent >= CUT_AT * plannedCalls, RUN_LIMIT_MS, 5);
    phase = 'cut';
    link.cut(); // the replica stops hearing from the primary; both stay up
    await sleep(CUT_MS);
    await until(() => (errors.NOT_REPLICATED ?? 0) >= 4 * PRODUCERS, RUN_LIMIT_MS, 5);
    const failoverAt = Date.now();
    const promote = new Redis(replica.port);
    const old = new Redis(primary.port);
    old.on('error', () => undefined); // the kill variant kills its server under it
    try {
      const before = await entries(old); // what the failover undoes: the keys the old primary has, the replica not
      undone = (after) => before.filter((id, i) => id !== null && id !== after[i]).length;
      if (variant === 'kill') await primary.stop('SIGKILL');
      await promote.replicaof('NO', 'ONE');
      endpoint.repoint({ port: replica.port });
      phase = 'after';
      // ElastiCache replaces the failed node with a replica of the new primary; until it has synced, durability
      // replica refuses changes (503)
      if (variant === 'kill')
        replacement = await startRedis({ args: [...SYNC_NOW, '--replicaof', '127.0.0.1', String(replica.port)] });
      else await old.replicaof('127.0.0.1', replica.port); // the old primary follows the new one: READONLY to its clients
    } finally {
      promote.disconnect();
      old.disconnect();
    }
    await producers;
    const producingMs = Date.now() - start;

    // the final state, on the new primary: every job of the topic, by key
    reader = new Redis(replica.port);
    const jobsByKey = new Map<string, string[]>();
    let jobsFinal = 0;
    for (let p = 0; p < PARTITIONS; p++) {
      const jobs = topicKeys(p, TOPIC, PARTITIONS).jobs;
      let cursor = '0';
      do {
        const [nextCursor, flat] = await reader.hscan(jobs, cursor, 'COUNT', 1000);
        cursor = nextCursor;
        for (let f = 0; f < flat.length; f += 2) {
          const field = flat[f]!;
          const cut = field.indexOf('::');
          if (cut <= 0) continue; // the hash's own fields ('#...'), not jobs
          const key = field.slice(0, cut);
          jobsByKey.set(key, [...(jobsByKey.get(key) ?? []), field]);
          jobsFinal += 1;
        }
      } while (cursor !== '0');
    }

    const finalEntries = await entries(reader);
    const violations: string[] = [];
    const duplicateKeys = new Set<string>();
    const tally = {
      created: 0,
      duplicate: 0,
      keysWithTwoCreated: 0,
      keysWithSplitAnswers: 0,
      keysWithTwoJobs: 0,
      keysLostJob: 0,
      keysEntryMismatch: 0,
      keysUnanswered: 0,
    };
    const byPhase: Record<Phase, number> = { before: 0, cut: 0, after: 0 };
    const show = (list: Answer[]) =>
      list.map((a) => `p${a.producer} ${a.status} ${a.id} at ${a.at} ms (${a.phase})`).join('; ');
    for (let i = 0; i < KEYS; i++) {
      const key = keyName(i);
      const list = answers.get(key) ?? [];
      for (const a of list) {
        tally[a.status] += 1;
        byPhase[a.phase] += 1;
      }
      const created = new Set(list.filter((a) => a.status === 'created').map((a) => a.id));
      const named = new Set(list.map((a) => a.id));
      const jobs = jobsByKey.get(key) ?? [];
      const entry = finalEntries[i];
      if (list.length === 0) tally.keysUnanswered += 1;
      if (created.size > 1) {
        tally.keysWithTwoCreated += 1;
        duplicateKeys.add(key);
        violations.push(`${key}: ${created.size} jobs answered created: ${show(list)}`);
      }
      if (named.size > 1) {
        tally.keysWithSplitAnswers += 1;
        violations.push(`${key}: acknowledged answers name ${[...named].join(', ')}: ${show(list)}`);
      }
      if (jobs.length > 1) {
        tally.keysWithTwoJobs += 1;
        duplicateKeys.add(key);
        violations.push(`${key}: ${jobs.length} jobs in the final state (${jobs.join(', ')}); answers: ${show(list)}`);
      }
      const lost = [...named].filter((id) => !jobs.includes(id));
      if (lost.length > 0) {
        tally.keysLostJob += 1;
        violations.push(
          `${key}: acknowledged ${lost.join(', ')} missing; final jobs ${jobs.join(', ')}: ${show(list)}`,
        );
      }
      if (jobs.length === 1 && entry !== jobs[0]) {
        tally.keysEntryMismatch += 1;
        violations.push(`${key}: its entry names ${entry}, its job is ${jobs[0]}`);
      }
    }
    return {
      scenario: `dedupe failover (${variant}), durability replica`,
      variant,
      seed,
      keys: KEYS,
      producers: PRODUCERS,
      addsPlanned: plans.reduce((n, calls) => n + calls.reduce((m, c) => m + c.keys.length, 0), 0),
      calls: counts.calls,
      addsSent: counts.addsSent,
      acknowledgedCreated: tally.created,
      acknowledgedDuplicate: tally.duplicate,
      unacknowledged: counts.unacknowledged,
      errors,
      retries: counts.retries,
      unexpected: counts.unexpected,
      acknowledgedByPhase: byPhase,
      unsettled: counts.unsettled,
      keysUndone: undone(finalEntries),
      duplicates: duplicateKeys.size,
      keysWithTwoCreated: tally.keysWithTwoCreated,
      keysWithSplitAnswers: tally.keysWithSplitAnswers,
      keysWithTwoJobs: tally.keysWithTwoJobs,
      keysLostJob: tally.keysLostJob,
      keysEntryMismatch: tally.keysEntryMismatch,
      keysUnanswered: tally.keysUnanswered,
      jobsFinal,
      failoverAtMs: failoverAt - start,
      producingMs,
      durationMs: Date.now() - began,
      violations: violations.slice(0, 20),
    };
  } finally {
    reader?.disconnect();
    for (const rt of runtimes) rt.redis.disconnect();
    await Promise.all([endpoint.close(), link.close()]);
    await Promise.all([primary.stop(), replica.stop(), replacement?.stop()]);
  }
}

describe('dedupe through a failover, durability replica: no key admits two jobs', () => {
  for (const variant of ['kill', 'demote'] as const) {
    it(`${variant}: ${PRODUCERS} producers racing ${KEYS} keys, no duplicate acknowledged or left`, async (t) => {
      const seed = Date.now() % 2 ** 31;
      const o = await dedupeFailover(variant, seed);
      const kept = o.keys - o.keysUnanswered - o.keysLostJob;
      report({ accepted: o.keys - o.keysUnanswered, delivered: kept, missing: o.keysLostJob, missingIds: [], ...o });
      t.diagnostic(JSON.stringify(o));
      assert.equal(o.keysWithTwoCreated, 0, `keys with two acknowledged created jobs:\n${o.violations.join('\n')}`);
      assert.equal(
        o.keysWithSplitAnswers,
        0,
        `keys whose acknowledged answers name two jobs:\n${o.violations.join('\n')}`,
      );
      assert.equal(o.keysWithTwoJobs, 0, `keys with two jobs after the failover:\n${o.violations.join('\n')}`);
      assert.equal(o.keysLostJob, 0, `keys whose acknowledged job the failover lost:\n${o.violations.join('\n')}`);
      assert.equal(o.keysEntryMismatch, 0, `keys whose entry names another job:\n${o.violations.join('\n')}`);
      assert.equal(o.unexpected, 0, 'every acknowledged add answered created or duplicate');
      assert.equal(o.unsettled, 0, `every call was acknowledged before ${RUN_LIMIT_MS} ms: ${JSON.stringify(o)}`);
      assert.equal(o.keysUnanswered, 0, 'every key was acknowledged');
      assert.ok(o.acknowledgedByPhase.after > 0, 'adds were acknowledged after the failover, with nothing restarted');
      assert.ok(o.keysUndone > 0, `the failover undid keys' jobs, raced again after it: ${JSON.stringify(o)}`);
    });
  }
});
