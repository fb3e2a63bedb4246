/**
 * Slots moving between primaries (issue 30 item 7). While a reshard moves a partition's slot,
 * Redis answers MOVED, ASK and TRYAGAIN, and ioredis refuses an auto-pipeline whose slots no
 * longer share a node ("All keys in the pipeline should belong to the same slots allocation
 * group"). A script call refused so did not run: the runner sends it again, and what still fails
 * is "Redis unavailable" (503 with Retry-After), never a 500. Real redis-servers: a 3-master
 * cluster, slots moved with the steps of `redis-cli --cluster reshard` (test/support/redis.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis, type Cluster } from 'ioredis';
import { httpRoute } from '../../lib/api/http';
import { addJob } from '../../lib/api/routes';
import type { ClaimedJob } from '../../lib/engine';
import { createLogger } from '../../lib/platform/log';
import { createRedis, isUnavailable } from '../../lib/platform/redis';
import { createRuntime, type Runtime } from '../../lib/platform/runtime';
import { until } from '../../scripts/support/process';
import type { Queue } from '../support/queue';
import { postJob } from '../support/failover';
import { makeQueue, uniqueTopic } from '../support/queue';
import { moveSlot, slotOwner, startRedisCluster, type RedisClusterProcess } from '../support/redis';
import { slotOf, syncKey, type SyncKey, runPipelined, scripts as script } from '../../lib/testing';

const PARTITIONS = 6;

/** Script calls a node has answered so far, run or refused (INFO commandstats of FCALL, EVAL and EVALSHA). */
async function scriptCalls(node: Redis): Promise<{ answered: number; refused: number }> {
  const stats = await node.info('commandstats');
  let answered = 0;
  let refused = 0;
  for (const [, calls, rejected, failed] of stats.matchAll(
    /^cmdstat_(?:fcall|eval|evalsha):calls=(\d+),.*rejected_calls=(\d+),failed_calls=(\d+)/gm,
  )) {
    answered += Number(calls) + Number(rejected) + Number(failed);
    refused += Number(rejected);
  }
  return { answered, refused };
}

/** Waits until `node` has answered `n` more script calls (or refused them): load met the slot's current state. */
async function loadReaches(node: Redis, n: number, what: string): Promise<void> {
  const start = (await scriptCalls(node)).answered;
  assert.ok(
    await until(async () => (await scriptCalls(node)).answered >= start + n, 20_000, 5),
    `no load reached ${what} within 20 s`,
  );
}

/** A job id of `topic` that falls in partition `p`. */
function idIn(
  q: { engine: { partitionOf(topic: string, id: string): number } },
  topic: string,
  p: number,
  label: string,
): string {
  for (let i = 0; ; i++) if (q.engine.partitionOf(topic, `${label}-${i}`) === p) return `${label}-${i}`;
}

/**
 * Two partitions of 16 served by one primary (16 over 3 primaries: one serves at least 6), and an id of `topic` in
 * each.
 */
async function twoOnOneNode(
  cluster: RedisClusterProcess,
  q: Queue,
  topic: string,
): Promise<{ node: number; p2: number; a: string; b: string }> {
  const owners = await Promise.all([...Array(16).keys()].map((p) => slotOwner(cluster, slotOf(syncKey(p, 16)))));
  const node = owners.find((o) => owners.filter((x) => x === o).length >= 2)!;
  const [p1, p2] = [...owners.keys()].filter((p) => owners[p] === node) as [number, number];
  return { node, p2, a: idIn(q, topic, p1, 'a'), b: idIn(q, topic, p2, 'b') };
}

describe('slots moving between primaries (3-master cluster, real redis-servers)', () => {
  let cluster: RedisClusterProcess;
  before(async () => {
    cluster = await startRedisCluster(3);
  });
  after(async () => {
    await cluster?.stop();
  });

  it('a call that meets a stale slot map in a shared auto-pipeline is sent again (MOVED)', async () => {
    const client = createRedis({ url: cluster.nodes[0]!.url, cluster: true }) as Cluster;
    try {
      const topic = uniqueTopic('moved');
      const q = makeQueue(client, { [topic]: { handler: 'h' } }, { config: { partitions: 16 } });
      const { node, p2, a, b } = await twoOnOneNode(cluster, q, topic);
      await q.addMany([
        { topic, id: a, delay: 0 },
        { topic, id: b, delay: 0 },
      ]);
      await q.engine.sweep();
      const claimed = await q.engine.claim(topic, 10);
      assert.equal(claimed.length, 2);
      // the slot of b's partition moves; the client's slot map still names the old primary
      await moveSlot(cluster, slotOf(syncKey(p2, 16)), (node + 1) % 3);
      // both acks go in one auto-pipeline to the old primary: a's is run, b's answered MOVED
      const outcomes = await Promise.all(claimed.map((job) => q.engine.ack(topic, job.id, job)));
      assert.deepEqual(outcomes, ['done', 'done']);
      assert.equal((await q.get(topic, b))?.state, 'done');
    } finally {
      client.disconnect();
    }
  });

  it('a claim that meets a stale slot map is answered: its plain reads (running counts, bodies kept apart) are sent again too', async () => {
    const client = createRedis({ url: cluster.nodes[0]!.url, cluster: true }) as Cluster;
    try {
      const topic = uniqueTopic('moved-read');
      const q = makeQueue(client, { [topic]: { handler: 'h' } }, { config: { partitions: 16 } });
      const { node, p2, a, b } = await twoOnOneNode(cluster, q, topic);
      const body = { text: 'x'.repeat(2000) }; // over 1 KiB: kept apart, read with a plain HMGET after the claim
      await q.addMany([
        { topic, id: a, delay: 0, body },
        { topic, id: b, delay: 0, body },
      ]);
      await q.engine.sweep();
      // the slot of b's partition moves; the client's slot map still names the old primary
      await moveSlot(cluster, slotOf(syncKey(p2, 16)), (node + 1) % 3);
      const claimed = await q.engine.claim(topic, 10);
      assert.deepEqual(claimed.map((job) => job.id).sort(), [a, b].sort());
      for (const job of claimed) assert.deepEqual(job.body, body);
      assert.equal((await q.stats(topic)).running, 2);
    } finally {
      client.disconnect();
    }
  });

  it('a pipelined batch keeps the replies of the calls that ran and sends again the ones refused (ASK)', async () => {
    const client = createRedis({ url: cluster.nodes[0]!.url, cluster: true }) as Cluster;
    try {
      const p = 2;
      const counter = syncKey(p, 4);
      const fresh = `${counter}-fresh-${Date.now()}` as SyncKey; // same slot, no such key yet
      await runPipelined(client, [script.syncPoint([counter])]);
      const before = Number(await client.get(counter));
      const from = await slotOwner(cluster, slotOf(counter));
      let replies: number[] | undefined;
      await moveSlot(cluster, slotOf(counter), (from + 1) % 3, {
        between: async () => {
          // first step only: the slot is MIGRATING and no key has moved; the old primary runs the
          // call on the counter it has and answers ASK for the key it lacks
          replies ??= await runPipelined(client, [script.syncPoint([counter]), script.syncPoint([fresh])]);
        },
      });
      assert.deepEqual(replies, [before + 1, 1], 'the counter bumped once, the fresh key created on the new primary');
      assert.equal(Number(await client.get(counter)), before + 1, 'the call that ran was not sent again');
      assert.equal(Number(await client.get(fresh)), 1);
    } finally {
      client.disconnect();
    }
  });

  it('while every partition slot moves under load: adds answer 201 or 503, every ack succeeds, every job added is there', async (t) => {
    const topics = [uniqueTopic('rs'), uniqueTopic('rs'), uniqueTopic('rs')];
    const rt: Runtime = createRuntime({
      DQ_CONFIG: JSON.stringify({
        partitions: PARTITIONS,
        topics: Object.fromEntries(topics.map((name) => [name, { handler: 'h' }])),
      }),
      REDIS_URL: cluster.nodes[0]!.url,
      REDIS_CLUSTER: 'true',
      API_TOKEN: 't',
      WEBHOOK_SECRET: 's',
      DQ_FUNCTION_PREFIX: 'x-',
      DQ_WAKE_INVOKES: 'false',
      LOG_LEVEL: 'error',
    });
    const errors500: string[] = []; // the error a 500 logged (a 503 logs an error line too: not printed here)
    const log = (line: string) =>
      void (
        line.includes('"status":500') &&
        errors500.push(String((JSON.parse(line) as { error?: { message?: unknown } }).error?.message))
      );
    const quiet = { ...rt, log: createLogger('test', {}, 'error', log) };
    const route = httpRoute(addJob, () => quiet);
    const post = (topic: string, id: string) => postJob(route, { topic, id, delay: 0 });

    const statuses = new Map<number, number>();
    const added: [string, string][] = [];
    const acks = new Map<string, number>();
    const failures = new Map<string, number>(); // anything but success or "Redis unavailable", by kind
    const unavailable = new Map<string, number>();
    const count = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
    const kind = (where: string, error: unknown) => `${where}: ${String(error).replace(/\d+/g, 'N').slice(0, 90)}`;
    const onError = (where: string) => (error: unknown) =>
      count(isUnavailable(error) ? unavailable : failures, kind(where, error));
    let stop = false;
    const adder = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const topic = topics[i % topics.length]!;
        const id = `w${w}-${i}`;
        const answer = await post(topic, id);
        statuses.set(answer.statusCode!, (statuses.get(answer.statusCode!) ?? 0) + 1);
        if (answer.statusCode === 201) added.push([topic, id]);
        else if (answer.statusCode !== 503) count(failures, kind(`POST /jobs ${answer.statusCode}`, errors500.at(-1)));
      }
    };
    const ack = (topic: string, job: ClaimedJob) =>
      rt.engine.ack(topic, job.id, job).then(
        (outcome) => count(acks, outcome),
        (error: unknown) => count(failures, kind('ack failed', error)),
      );
    const worker = async (topic: string) => {
      while (!stop) {
        await rt.engine.sweep().catch(onError('sweep'));
        const jobs = await rt.engine
          .claim(topic, 10)
          .catch((error: unknown) => (onError('claim')(error), [] as ClaimedJob[]));
        await Promise.all(jobs.map((job) => ack(topic, job)));
      }
    };
    const reader = async () => {
      for (let i = 0; !stop; i++) {
        const [topic, id] = added[(i * 7919) % Math.max(1, added.length)] ?? [topics[0]!, 'none'];
        await rt.engine.get(topic, id).catch(onError('get'));
      }
    };

    const direct = cluster.nodes.map((node) => new Redis(node.port, '127.0.0.1'));
    const refusedNow = async () => (await Promise.all(direct.map(scriptCalls))).reduce((sum, s) => sum + s.refused, 0);
    try {
      const refusedBefore = await refusedNow();
      const load = [...[...Array(4).keys()].map(adder), ...topics.map(worker), reader()];
      const started = Date.now();
      const splitMs: number[] = [];
      try {
        assert.ok(await until(() => added.length >= 100, 20_000, 5), 'the load runs');
        for (let p = 0; p < PARTITIONS; p++) {
          const slot = slotOf(syncKey(p, PARTITIONS));
          const to = ((await slotOwner(cluster, slot)) + 1) % 3;
          // keys MIGRATEd 10 at a time (redis-cli's default); load meets the slot after each step, while it is split
          splitMs.push(
            await moveSlot(cluster, slot, to, { between: (from) => loadReaches(direct[from]!, 5, `slot ${slot}`) }),
          );
        }
        const settled = added.length;
        assert.ok(await until(() => added.length >= settled + 100, 20_000, 5), 'adds go on after the move');
      } finally {
        stop = true;
        await Promise.all(load);
      }
      const refused = (await refusedNow()) - refusedBefore;
      t.diagnostic(
        `move and load: ${Date.now() - started} ms; each slot split for (ms): ${splitMs.join(', ')}; script calls refused by the moving slots (MOVED/ASK/TRYAGAIN): ${refused}`,
      );
      t.diagnostic(
        `POST /jobs: ${JSON.stringify(Object.fromEntries(statuses))}; acks: ${JSON.stringify(Object.fromEntries(acks))}`,
      );
      t.diagnostic(`unavailable (503) by kind: ${JSON.stringify(Object.fromEntries(unavailable))}`);
      assert.ok(refused > 0, 'the load met the slots while they moved');
      assert.deepEqual(Object.fromEntries(failures), {}, 'answers that were neither success nor unavailable, by kind');
      const missing: string[] = [];
      for (const [topic, id] of added) if ((await rt.engine.get(topic, id)) === null) missing.push(`${topic}/${id}`);
      assert.deepEqual(missing, [], 'every job answered 201 is there');
      assert.deepEqual([...acks.keys()], ['done'], 'every ack ended its attempt');
    } finally {
      for (const node of direct) node.disconnect();
      rt.redis.disconnect();
    }
  });
});
