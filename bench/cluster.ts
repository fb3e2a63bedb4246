/**
 * Cluster benchmark (issue 31, "Redis Cluster that really scales"; not a test): what the engine's
 * hot path costs Redis on one node and on local Redis Clusters, and whether jobs survive slots
 * moving under load. Every redis-server and redis-cli it starts is stopped by PID, also on error,
 * Ctrl-C and SIGTERM; nothing is persisted (`--save '' --appendonly no`).
 *
 * 1. Scaling. The same workload through the engine (lib/api/queue.ts addMany, engine.sweep, claim,
 *    start, ack) on a single redis-server with 1 partition, on the same with 4 × the smallest
 *    cluster's masters partitions, and on clusters of 3, 6 and 9 masters (no replicas) with
 *    4 × masters partitions (the deploy default, DEPLOY.md), each started anew: N jobs with 200-byte
 *    bodies, all due at once, are added (addMany of 500, 8 in flight; with the bench's ids, or with
 *    `--ids generated` without, the ids the API gives: runs of 100 placed in one partition each),
 *    swept to ready (sweep until nothing moves), then claimed (100 a call), started and acked by 8
 *    workers in parallel, each with a client of its own as each Lambda instance has its own
 *    connection. With `--claims
 *    fanout` (the default) a worker claims, then starts what it claimed in a call of its own, as
 *    the fan-out claims and its handler starts; with `--claims handler` it claims them started in
 *    one call, as a warm handler of a topic with batch size 100 claims its next batch while a herd
 *    drains (claimJobs-7 with start), then acks; with `--claims drain` each claims one started, then
 *    acks it and claims the next in one call (engine.ackAndClaimStarted), as the warm handlers of a
 *    topic with batch size 1 drain a herd. What
 *    counts is Redis's own CPU, not wall time: per node, INFO cpu (used_cpu_user + used_cpu_sys,
 *    and the main thread's) before and after each phase, and INFO commandstats for the commands
 *    Redis ran (those scripts ran included). Per shard: its partitions and share of the jobs (each
 *    job's partition, each partition's slot by slotOf, the slot's owner by CLUSTER SLOTS), and its
 *    Redis CPU per job of the workload (its CPU ÷ N, so the shards' figures add up to the total).
 *    Per topology: total Redis CPU per job ÷ the single node's, and the projected speed-up: the
 *    single node's total Redis CPU ÷ the busiest shard's, i.e. how much more throughput the cluster
 *    allows if Redis CPU is the limit and every shard has a core of its own. Each node's idle CPU
 *    (cron, cluster bus) is measured for 2 s before and shown as a share of what was counted. Wall
 *    time is printed, but every shard and the client share the machine's cores: it says little.
 * 2. Resharding under load. On a 3-master cluster (12 partitions) two adders (addMany of 50, due
 *    within a second, --rate jobs/s in all, pausing while more than 5,000 added jobs are not acked
 *    yet), 4 workers (claim 50, start, ack) and a sweeper run while `redis-cli --cluster reshard`
 *    moves 2,500 slots (those of partitions 0 and 1) from the first master to the second, then a 4th
 *    master is started, joined with `redis-cli --cluster add-node` and given its share with
 *    `redis-cli --cluster rebalance --cluster-use-empty-masters`. The adders stop --load-seconds
 *    after the start, or 5 s after the rebalance if that ends later; then the rest drains. A ledger
 *    checks that every job whose add was acknowledged (created, or "exists" on a retry of an add
 *    that threw) was acked: lost (gone from Redis), stuck (still there, not done after the drain),
 *    run twice (started live more than once), acks and starts refused, and every error the engine
 *    threw, by kind (Redis unavailable, the API's 503, is allowed: an add that threw is sent again
 *    with the same ids until it is acknowledged). The topic's ttr is 5 s and its backoff 1 s fixed
 *    (in step 1 too), so an attempt whose ack was lost would come back within the drain.
 * 3. The partition count changing under load (DEPLOY.md, "Changing the partition count"). On a
 *    3-master cluster, the same adders, workers and sweeper run on an engine of 12 partitions; at
 *    8 s the deploy rolls over: one adder, two workers and the sweeper run on an engine of 18
 *    partitions with `formerPartitions: 12`, the others still on the old one; 6 s later all run on
 *    the new one. The adders stop at --change-seconds (30), the rest drains, the ledger is checked as
 *    in step 2, and the bench waits until GET /topics' `former` shows the former partitions empty
 *    (finished jobs are kept 20 s).
 *
 *   npm run bench:cluster
 *   npm run bench:cluster -- --jobs 100000 --masters 3,6,9
 *   npm run bench:cluster -- --skip-reshard --skip-change     # step 1 only
 * npm run bench:cluster -- --jobs 50000 --masters 3 --skip-reshard --skip-change --claims handler # a herd as warm
 * handlers drain it
 *   npm run bench:cluster -- --reshard-only     # step 2 only
 *   npm run bench:cluster -- --change-only      # step 3 only
 *
 * Options: --jobs (200,000), --workers (8), --claims (fanout, handler or drain) and --ids of step 1, --masters (3,6,9),
 * --skip-reshard, --reshard-only, --skip-change, --change-only, step 2's --load-seconds (45), step 3's --change-seconds
 * (30), and steps 2 and 3's --rate (1,000) and --drain-seconds (90). Prints tables and one JSON line; exits 1 when step
 * 2's or step 3's ledger shows a lost or stuck job. On a machine shared with other work, Redis's CPU per job moves by a
 * tenth or more between runs. Results are in BENCHMARKS.md.
 */
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Cluster, Redis } from 'ioredis';
import type { Engine, ClaimedJob } from '../lib/engine';
import { createRedis, isUnavailable } from '../lib/platform/redis';
import { slotOf, topicKeys } from '../lib/testing';
import { freePort, startRedisCluster } from '../test/support/redis';
import { runBench, runChild, track } from './harness/lifecycle';
import { commandStats, loadText, redisCpu, stopwatch } from './harness/measure';
import { pool, queueOn, type Queue } from './harness/queue';
import { connect, startServer, type RedisProcess } from './harness/redis';
import { fmt, machineLine, machineOf, printJson, printTable, round } from './harness/report';

const TOPIC = 'bench';
const BODY = { orderId: 'order-000001', customer: 'customer-1', items: 3, note: 'x'.repeat(130) }; // 200 bytes of JSON
const ADD_BATCH = 500;
const ADDS_IN_FLIGHT = 8;
const CLAIM = 100;
const PARTITIONS_PER_MASTER = 4; // the deploy default (DEPLOY.md)
const BACKLOG = 5000; // step 2: adders wait while more jobs than this are added and not acked
const RESHARD_SLOTS = 2500; // from the first master: slots 0..2499, the slots of partitions 0 and 1 of 12
const CLUSTER_NODE_ARGS = (port: number) => [
  '--cluster-enabled',
  'yes',
  '--cluster-config-file',
  `nodes-${port}.conf`,
  '--cluster-node-timeout',
  '5000',
];
// commands of the bench's own measuring and of the cluster client's upkeep, not of the workload
const ADMIN_COMMANDS = new Set([
  'info',
  'config',
  'cluster',
  'ping',
  'command',
  'client',
  'hello',
  'readonly',
  'select',
  'role',
  'slowlog',
  'latency',
  'memory',
]);

// ---------------------------------------------------------------------------------------------
// options

/** `raw`, option `name`'s value, when it is one of `allowed`; else throws. */
function oneOf<T extends string>(name: string, raw: string | undefined, allowed: readonly T[]): T {
  if (!allowed.includes(raw as T)) throw new Error(`${name} must be ${allowed.join(', ')}, got ${JSON.stringify(raw)}`);
  return raw as T;
}

function parseArgs(argv: string[]) {
  const opts = {
    jobs: 200_000,
    masters: [3, 6, 9],
    workers: 8,
    skipReshard: false,
    reshardOnly: false,
    skipChange: false,
    changeOnly: false,
    loadSeconds: 45,
    changeSeconds: 30,
    rate: 1000,
    drainSeconds: 90,
    claims: 'fanout' as 'fanout' | 'handler' | 'drain',
    ids: 'given' as 'given' | 'generated',
  };
  const positive = (name: string, raw: string | undefined) => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n <= 0)
      throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [name, inline] = arg.includes('=')
      ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)]
      : [arg, undefined];
    const value = () => inline ?? argv[++i];
    if (name === '--jobs') opts.jobs = positive(name, value());
    else if (name === '--masters')
      opts.masters = String(value() ?? '')
        .split(',')
        .map((m) => positive(name, m.trim()));
    else if (name === '--workers') opts.workers = positive(name, value());
    else if (name === '--load-seconds') opts.loadSeconds = positive(name, value());
    else if (name === '--rate') opts.rate = positive(name, value());
    else if (name === '--drain-seconds') opts.drainSeconds = positive(name, value());
    else if (name === '--skip-reshard') opts.skipReshard = true;
    else if (name === '--reshard-only') opts.reshardOnly = true;
    else if (name === '--skip-change') opts.skipChange = true;
    else if (name === '--change-only') opts.changeOnly = true;
    else if (name === '--change-seconds') opts.changeSeconds = positive(name, value());
    else if (name === '--claims') opts.claims = oneOf(name, value(), ['fanout', 'handler', 'drain'] as const);
    else if (name === '--ids') opts.ids = oneOf(name, value(), ['given', 'generated'] as const);
    else
      throw new Error(
        `unknown option ${arg} (options: --jobs N, --masters 3,6,9, --workers N, --skip-reshard, --reshard-only, --skip-change, --change-only, --claims fanout|handler|drain, --ids given|generated, --load-seconds N, --change-seconds N, --rate N, --drain-seconds N)`,
      );
  }
  if (opts.skipReshard && opts.reshardOnly) throw new Error('--skip-reshard and --reshard-only exclude each other');
  if (opts.reshardOnly && opts.changeOnly) throw new Error('--reshard-only and --change-only exclude each other');
  if (opts.masters.some((m) => m < 3)) throw new Error('--masters: a Redis Cluster needs at least 3 masters');
  return opts;
}

const OPTS = parseArgs(process.argv.slice(2));

/** `redis-cli` with `args`; throws with its output when it fails. */
async function redisCli(args: string[]): Promise<{ stdout: string; ms: number }> {
  const r = await runChild('redis-cli', args);
  if (r.code !== 0)
    throw new Error(
      `redis-cli ${args.join(' ')} failed (exit ${r.code}):\n${r.stdout.slice(-3000)}${r.stderr.slice(-2000)}`,
    );
  return r;
}

const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
const load = () => loadText(1, ' ');

// ---------------------------------------------------------------------------------------------
// topologies

interface Topology {
  label: string;
  masters: number; // 0: a single redis-server, not a cluster
  partitions: number;
  /** Every master, in the order started. */
  nodes: RedisProcess[];
  /** A direct client per node (INFO, CLUSTER), same order. */
  direct: Redis[];
  /** The engine's client: createRedis, with `cluster: true` on a cluster. */
  client: Redis | Cluster;
  stop(): Promise<void>;
}

/** A single redis-server (`masters` 0) or a cluster of `masters` masters, no replicas; stopped by PID at the end. */
async function startTopology(masters: number, partitions: number): Promise<Topology> {
  const label =
    masters === 0
      ? `single node, ${partitions} partition${partitions === 1 ? '' : 's'}`
      : `${masters} masters, ${partitions} partitions`;
  let stopServers: () => Promise<void>;
  let nodes: RedisProcess[];
  if (masters === 0) {
    const server = await startServer();
    nodes = [server];
    stopServers = server.stop;
  } else {
    const cluster = await startRedisCluster(masters, 0);
    nodes = [...cluster.nodes];
    stopServers = track(() => Promise.all(nodes.map((n) => n.stop())).then(() => undefined));
  }
  const direct = nodes.map((n) => connect(n));
  const client = createRedis({ url: nodes[0]!.url, cluster: masters > 0 });
  return {
    label,
    masters,
    partitions,
    nodes,
    direct,
    client,
    async stop() {
      client.disconnect();
      for (const d of direct) d.disconnect();
      await stopServers();
    },
  };
}

/**
 * The engine (and the API's operations) over `client`, the bench topic's settings; `change`: a partition count change
 * under way from `formerPartitions`, finished jobs kept `retention` s.
 */
function makeQueue(
  client: Redis | Cluster,
  partitions: number,
  change: { formerPartitions?: number; retention?: number } = {},
): Queue {
  const topic = { concurrency: 10_000, ttr: 5, backoff: { type: 'fixed' as const, delay: 1 }, maxAttempts: 50 };
  return queueOn(client, { [TOPIC]: topic }, { partitions, ...change });
}

/** Owner (index in `ports`) of each hash slot, from CLUSTER SLOTS; all 0 on a single node. */
async function slotOwners(t: Pick<Topology, 'masters' | 'direct'>, ports: number[]): Promise<Int16Array> {
  const owners = new Int16Array(16384);
  if (t.masters === 0) return owners;
  owners.fill(-1);
  const ranges = (await t.direct[0]!.call('CLUSTER', 'SLOTS')) as [
    number,
    number,
    [string, number, ...unknown[]],
    ...unknown[],
  ][];
  for (const [first, last, [, port]] of ranges) owners.fill(ports.indexOf(Number(port)), first, last + 1);
  return owners;
}

/** Shard (index in `ports`) of each of `partitions` partitions: the owner of its keys' slot. */
async function partitionShards(t: Topology, ports = t.nodes.map((n) => n.port)): Promise<number[]> {
  const owners = await slotOwners(t, ports);
  return Array.from({ length: t.partitions }, (_, p) => owners[slotOf(topicKeys(p, TOPIC, t.partitions).jobs)]!);
}

// ---------------------------------------------------------------------------------------------
// measuring: Redis CPU and commands per node

interface NodeSample {
  cpu: number; // s, used_cpu_user + used_cpu_sys
  cpuMain: number | null; // s, the main thread's, when INFO has it
  cpuSys: number; // s, used_cpu_sys alone (system calls: reading and writing the clients' sockets, mostly)
  commands: number; // calls of workload commands (commandstats, admin commands left out)
  scripts: number; // calls of EVALSHA and EVAL
  refused: number; // rejected_calls of EVALSHA and EVAL (MOVED, ASK, TRYAGAIN, ...)
  reads: number; // socket reads of requests (INFO stats total_reads_processed): one a request or pipeline
}

async function sampleNode(r: Redis): Promise<NodeSample> {
  const [cpu, stats, info] = await Promise.all([redisCpu(r), commandStats(r), r.info('stats')]);
  let commands = 0;
  let scripts = 0;
  let refused = 0;
  for (const [name, stat] of stats) {
    if (ADMIN_COMMANDS.has(name.split('|')[0]!)) continue;
    commands += stat.calls;
    if (name === 'fcall' || name === 'evalsha' || name === 'eval') {
      scripts += stat.calls;
      refused += stat.rejected;
    }
  }
  const reads = Number(/^total_reads_processed:(\d+)/m.exec(info)?.[1] ?? 0);
  return { cpu: cpu.seconds, cpuMain: cpu.main, cpuSys: cpu.sys, commands, scripts, refused, reads };
}

const sampleAll = (direct: Redis[]) => Promise.all(direct.map(sampleNode));

function diff(a: NodeSample[], b: NodeSample[]): NodeSample[] {
  return a.map((x, i) => {
    const y = b[i]!;
    return {
      cpu: y.cpu - x.cpu,
      cpuMain: x.cpuMain === null || y.cpuMain === null ? null : y.cpuMain - x.cpuMain,
      cpuSys: y.cpuSys - x.cpuSys,
      commands: y.commands - x.commands,
      scripts: y.scripts - x.scripts,
      refused: y.refused - x.refused,
      reads: y.reads - x.reads,
    };
  });
}

/** One phase of step 1 on one topology: per node, what Redis spent; and the wall time. */
interface Phase {
  name: string;
  wallMs: number;
  perNode: NodeSample[];
}

async function measure(t: Topology, name: string, fn: () => Promise<void>): Promise<Phase> {
  const before = await sampleAll(t.direct);
  const clock = stopwatch();
  await fn();
  const wallMs = clock.wallMs();
  return { name, wallMs, perNode: diff(before, await sampleAll(t.direct)) };
}

// ---------------------------------------------------------------------------------------------
// the ledger: every job's add, starts and acks, and every error, by kind

class Ledger {
  readonly acknowledged = new Set<string>(); // adds answered created, or exists on a retry
  readonly attempted = new Set<string>(); // ids whose add was sent
  readonly starts = new Map<string, number>(); // starts answered live
  readonly acked = new Map<string, number>(); // acks answered done
  readonly ackUnknown = new Set<string>(); // acks that threw: done or not, Redis knows
  readonly refusedAcks = new Map<string, number>(); // ack outcome other than done, by outcome
  readonly errors = new Map<string, number>();
  readonly stacks = new Map<string, string>(); // the first error of each kind: where in the engine it came from
  existsFirstTry = 0; // an add's first try answered exists: a bug (ids are unique)
  notLive = 0; // claimed attempts start refused
  addRetries = 0;

  error(where: string, error: unknown): void {
    const cls = isUnavailable(error) ? 'unavailable (503)' : 'OTHER';
    const message = (error instanceof Error ? error.message : String(error))
      .replace(/\d+/g, 'N')
      .replace(/\s+/g, ' ')
      .slice(0, 100);
    const kind = `${where}: ${cls}: ${message}`;
    this.errors.set(kind, (this.errors.get(kind) ?? 0) + 1);
    if (!this.stacks.has(kind) && error instanceof Error && error.stack)
      this.stacks.set(kind, error.stack.split('\n').slice(0, 8).join('\n'));
  }

  errorsOfClass(cls: 'unavailable (503)' | 'OTHER'): number {
    let n = 0;
    for (const [kind, count] of this.errors) if (kind.includes(`: ${cls}: `)) n += count;
    return n;
  }

  runTwice(): number {
    let n = 0;
    for (const count of this.starts.values()) if (count > 1) n++;
    return n;
  }

  ackedTwice(): number {
    let n = 0;
    for (const count of this.acked.values()) if (count > 1) n++;
    return n;
  }

  /** What the ledger says of the attempts and errors, as steps 2 and 3 report it. */
  outcomes() {
    return {
      runTwice: this.runTwice(),
      ackedTwice: this.ackedTwice(),
      startsRefused: this.notLive,
      acksRefused: Object.fromEntries(this.refusedAcks),
      errorsUnavailable: this.errorsOfClass('unavailable (503)'),
      errorsOther: this.errorsOfClass('OTHER'),
      errors: Object.fromEntries(this.errors),
    };
  }

  /** The ids whose add was acknowledged and whose ack was not seen. */
  open(): string[] {
    return [...this.acknowledged].filter((id) => !this.acked.has(id));
  }

  /**
   * The ledger against Redis: of the jobs whose add was acknowledged and whose ack was not seen, those
   * gone (lost), done all the same (their ack's reply was lost), and the rest (stuck), with their states.
   */
  async check(engine: Engine) {
    const open = this.open();
    const states: (string | null)[] = new Array(open.length).fill(null);
    await pool(open.length, 64, async (i) => void (states[i] = await stateOf(engine, open[i]!)));
    const stuckStates: Record<string, number> = {};
    for (const s of states) if (s !== null && s !== 'done') stuckStates[s] = (stuckStates[s] ?? 0) + 1;
    return {
      open,
      lost: open.filter((_, i) => states[i] === null),
      doneUnseen: open.filter((_, i) => states[i] === 'done'),
      stuck: open.filter((_, i) => states[i] !== null && states[i] !== 'done'),
      stuckStates,
    };
  }

  /** Prints every error by kind, the first of each kind's stack, and the first lost and stuck jobs. */
  printErrors(lost: readonly string[] = [], stuck: readonly string[] = []): void {
    if (this.errors.size > 0)
      console.log(`errors by kind: ${JSON.stringify(Object.fromEntries(this.errors), null, 1)}`);
    for (const [kind, stack] of this.stacks) console.log(`first "${kind}":\n${stack.replace(/^/gm, '    ')}`);
    if (lost.length > 0) console.log(`lost (first 10): ${lost.slice(0, 10).join(', ')}`);
    if (stuck.length > 0) console.log(`stuck (first 10): ${stuck.slice(0, 10).join(', ')}`);
  }
}

const bump = <K>(map: Map<K, number>, key: K) => map.set(key, (map.get(key) ?? 0) + 1);

/** The state of job `id` in Redis (null: gone), asked again while Redis is unavailable. */
async function stateOf(engine: Engine, id: string): Promise<string | null> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await engine.get(TOPIC, id))?.state ?? null;
    } catch (error) {
      if (attempt >= 20) throw error;
      await sleep(100);
    }
  }
}

/**
 * Adds `ids` in one addMany (due `delay` s from now); an add that throws was not acknowledged and is
 * sent again with the same ids (after `pauseMs`) until it answers. Counts created and exists-on-retry
 * as acknowledged.
 */
async function addAcknowledged(
  q: Queue,
  ledger: Ledger,
  ids: string[],
  delay: () => number,
  pauseMs = 50,
): Promise<void> {
  for (const id of ids) ledger.attempted.add(id);
  const giveUpAt = Date.now() + 120_000;
  for (let attempt = 0; ; attempt++) {
    let outcomes;
    try {
      outcomes = (await q.addMany(ids.map((id) => ({ topic: TOPIC, id, delay: delay(), body: BODY })))).outcomes;
    } catch (error) {
      ledger.error('add', error);
      if (Date.now() > giveUpAt)
        throw new Error(`an add of ${ids.length} jobs kept failing for 120 s`, { cause: error });
      ledger.addRetries++;
      await sleep(pauseMs);
      continue;
    }
    outcomes.forEach((o, i) => {
      if (o.status === 'created' || (o.status === 'exists' && attempt > 0)) ledger.acknowledged.add(ids[i]!);
      else if (o.status === 'exists') ledger.existsFirstTry++;
      else throw new Error(`the add of ${ids[i]} answered ${o.status}`);
    });
    return;
  }
}

/** One round of a worker: claim up to `count`, start them, ack the live ones. Returns how many were claimed. */
async function workOnce(engine: Engine, ledger: Ledger, count: number): Promise<number> {
  if (OPTS.claims === 'drain') return drainOnce(engine, ledger);
  let jobs: ClaimedJob[];
  try {
    jobs = OPTS.claims === 'handler' ? await engine.claimStarted(TOPIC, count) : await engine.claim(TOPIC, count);
  } catch (error) {
    ledger.error('claim', error); // a claim whose reply was lost: its jobs come back after their ttr
    return -1;
  }
  if (jobs.length === 0) return 0;
  let live: boolean[];
  try {
    live = OPTS.claims === 'handler' ? jobs.map(() => true) : await engine.start(TOPIC, jobs);
  } catch (error) {
    ledger.error('start', error); // as the topic handler does: the attempts come back after their ttr
    return jobs.length;
  }
  await Promise.all(
    jobs.map(async (job, i) => {
      if (!live[i]) return void ledger.notLive++;
      bump(ledger.starts, job.id);
      try {
        noteAck(ledger, job.id, await engine.ack(TOPIC, job.id, job));
      } catch (error) {
        ledger.error('ack', error); // the attempt comes back after its ttr unless the ack ran
        if (!ledger.acked.has(job.id)) ledger.ackUnknown.add(job.id);
      }
    }),
  );
  return jobs.length;
}

/** Notes in `ledger` the outcome of an ack of job `id`. */
function noteAck(ledger: Ledger, id: string, outcome: string): void {
  if (outcome === 'done') {
    bump(ledger.acked, id);
    ledger.ackUnknown.delete(id);
  } else bump(ledger.refusedAcks, outcome);
}

/**
 * A worker as a warm handler of batch size 1 drains: claims one job started, then acks each and claims the next in one
 * call until none is left. Returns how many it claimed (-1: a claim failed).
 */
async function drainOnce(engine: Engine, ledger: Ledger): Promise<number> {
  let job: ClaimedJob | undefined;
  let claimed = 0;
  try {
    [job] = await engine.claimStarted(TOPIC, 1);
    while (job) {
      claimed++;
      bump(ledger.starts, job.id);
      const { ack, jobs } = await engine.ackAndClaimStarted(TOPIC, job.id, job, 1);
      noteAck(ledger, job.id, ack);
      job = jobs[0];
    }
  } catch (error) {
    ledger.error('claim', error); // the attempt in hand comes back after its ttr unless its ack ran
    if (job && !ledger.acked.has(job.id)) ledger.ackUnknown.add(job.id);
    return claimed > 0 ? claimed : -1;
  }
  return claimed;
}

// ---------------------------------------------------------------------------------------------
// step 1: the same workload on each topology

interface TopologyResult {
  label: string;
  masters: number;
  partitions: number;
  ports: number[];
  partitionsPerShard: number[];
  jobsPerShard: number[];
  idleCpuUsPerSec: number[];
  phases: Phase[];
  errors: Record<string, number>;
  sweeps: number;
  claimCalls: number;
}

/** Connections up, scripts loaded on every node (a few jobs in every partition, run to the end), then nothing left. */
async function warmUp(t: Topology, q: Queue, workers: Engine[]): Promise<void> {
  const warmLedger = new Ledger();
  const ids = Array.from({ length: 20 * t.partitions }, (_, i) => `warm-${i}`);
  await addAcknowledged(q, warmLedger, ids, () => 0);
  for (let more = true; more;) more = (await q.engine.sweep()).moved > 0;
  await Promise.all(
    workers.map(async (w) => {
      while ((await workOnce(w, warmLedger, CLAIM)) !== 0) continue;
    }),
  );
  for (const r of t.direct) await r.flushall();
}

/** Each node's CPU idle (serverCron, the cluster bus) over 2 s, µs a second: to set beside what the phases count. */
async function idleCpu(t: Topology): Promise<number[]> {
  const idleBefore = await sampleAll(t.direct);
  const clock = stopwatch();
  await sleep(2000);
  const idle = diff(idleBefore, await sampleAll(t.direct));
  const idleSec = clock.wallMs() / 1000;
  return idle.map((s) => (s.cpu * 1e6) / idleSec);
}

/**
 * Phase 'add': every job, addMany of ADD_BATCH, ADDS_IN_FLIGHT at once: with `ids` (--ids given), or as many without
 * ids (--ids generated: the ids the adds answer go into the ledger).
 */
async function addPhase(t: Topology, q: Queue, ledger: Ledger, ids: string[]): Promise<Phase> {
  let added = 0;
  const phase = await measure(t, 'add', async () => {
    await pool(Math.ceil(ids.length / ADD_BATCH), ADDS_IN_FLIGHT, async (b) => {
      const batch = ids.slice(b * ADD_BATCH, (b + 1) * ADD_BATCH);
      if (OPTS.ids === 'given') await addAcknowledged(q, ledger, batch, () => 0);
      else await addGenerated(q, ledger, batch.length);
      added = ledger.acknowledged.size;
    });
  });
  if (ledger.acknowledged.size !== ids.length)
    throw new Error(`${t.label}: ${ledger.acknowledged.size} of ${ids.length} adds acknowledged`);
  console.log(`   add: ${fmt(added)} jobs, ${fmt(phase.wallMs)} ms wall`);
  return phase;
}

/** Adds `count` jobs without ids in one addMany, due now; the ids they were given go into the ledger. */
async function addGenerated(q: Queue, ledger: Ledger, count: number): Promise<void> {
  const { outcomes } = await q.addMany(Array.from({ length: count }, () => ({ topic: TOPIC, delay: 0, body: BODY })));
  for (const o of outcomes) {
    if (o.status !== 'created') throw new Error(`an add without an id answered ${o.status}`);
    ledger.attempted.add(o.job.id);
    ledger.acknowledged.add(o.job.id);
  }
}

/** Phase 'sweep': sweeps until nothing more moves. */
async function sweepPhase(t: Topology, engine: Engine, jobs: number): Promise<{ phase: Phase; sweeps: number }> {
  let sweeps = 0;
  let moved = 0;
  const phase = await measure(t, 'sweep', async () => {
    for (let more = true; more; sweeps++) {
      const r = await engine.sweep();
      moved += r.moved;
      more = r.more || r.moved !== 0;
    }
  });
  if (moved !== jobs) throw new Error(`${t.label}: the sweeps moved ${moved} of ${jobs} jobs`);
  console.log(`   sweep: ${fmt(moved)} jobs moved in ${sweeps} sweep calls, ${fmt(phase.wallMs)} ms wall`);
  return { phase, sweeps };
}

/** Phase 'claim + start + ack': the workers, each on its own connection, until every job is acked. */
async function deliverPhase(t: Topology, engine: Engine, workers: Engine[], ledger: Ledger, jobs: number) {
  let claimCalls = 0;
  let working = 0; // workers with claimed jobs in hand
  const worker = async (w: Engine, end: number) => {
    for (;;) {
      claimCalls++;
      working++;
      const got = await workOnce(w, ledger, CLAIM);
      working--;
      if (got > 0) continue;
      if (ledger.acked.size >= jobs || Date.now() > end) return;
      if (working > 0) {
        await sleep(20); // the others' acks are in flight
        continue;
      }
      // nobody holds a job and some are not acked: a reply was lost; its attempt comes back after its ttr
      await engine.sweep().catch((error: unknown) => ledger.error('sweep', error));
      await sleep(500);
    }
  };
  const phase = await measure(t, 'claim + start + ack', async () => {
    const end = Date.now() + 600_000;
    await Promise.all(workers.map((w) => worker(w, end)));
  });
  const acked = ledger.acked.size;
  if (acked !== jobs) throw new Error(`${t.label}: ${acked} of ${jobs} jobs acked`);
  console.log(
    `   claim + start + ack: ${fmt(acked)} jobs, ${fmt(claimCalls)} claim calls (${OPTS.workers} workers), ${fmt(phase.wallMs)} ms wall; run twice ${ledger.runTwice()}, acks refused ${sum([...ledger.refusedAcks.values()])}`,
  );
  return { phase, claimCalls };
}

/** Step 1 on one topology, started anew: the jobs added, swept, claimed, started and acked, each phase measured. */
async function runWorkload(masters: number, partitions: number, ids: string[]): Promise<TopologyResult> {
  const t = await startTopology(masters, partitions);
  // the workers' clients, one each (createRedis as the engine's): each Lambda instance has its own connection
  const workerClients = Array.from({ length: OPTS.workers }, () =>
    createRedis({ url: t.nodes[0]!.url, cluster: masters > 0 }),
  );
  try {
    const q = makeQueue(t.client, partitions);
    const shardOf = await partitionShards(t);
    const partitionsPerShard = t.nodes.map((_, s) => shardOf.filter((x) => x === s).length);
    console.log(
      `\n== ${t.label}: ${t.nodes.length} redis-server${t.nodes.length > 1 ? 's' : ''} (PIDs ${t.nodes.map((n) => n.pid).join(', ')}); partitions per shard ${partitionsPerShard.join('/')}; load average ${load()}`,
    );
    const workers = workerClients.map((c) => makeQueue(c, partitions).engine);
    await warmUp(t, q, workers);
    const ledger = new Ledger();
    const idleCpuUsPerSec = await idleCpu(t);
    const add = await addPhase(t, q, ledger, ids);
    const jobsPerShard = t.nodes.map(() => 0); // of the ids added: given, or generated by the adds
    for (const id of ledger.acknowledged) jobsPerShard[shardOf[q.engine.partitionOf(TOPIC, id)]!]!++;
    const sweep = await sweepPhase(t, q.engine, ids.length);
    const deliver = await deliverPhase(t, q.engine, workers, ledger, ids.length);
    if (ledger.errors.size > 0) console.log(`   errors: ${JSON.stringify(Object.fromEntries(ledger.errors))}`);
    return {
      label: t.label,
      masters,
      partitions,
      ports: t.nodes.map((n) => n.port),
      partitionsPerShard,
      jobsPerShard,
      idleCpuUsPerSec,
      phases: [add, sweep.phase, deliver.phase],
      errors: Object.fromEntries(ledger.errors),
      sweeps: sweep.sweeps,
      claimCalls: deliver.claimCalls,
    };
  } finally {
    for (const w of workerClients) w.disconnect();
    await t.stop();
  }
}

/** `of` summed over the nodes, for each phase of `r`, rounded to `digits`. */
const byPhase = (r: { phases: readonly Phase[] }, of: (x: NodeSample) => number, digits: number) =>
  Object.fromEntries(r.phases.map((p) => [p.name, round(sum(p.perNode.map(of)), digits)]));

/** What step 1 reports of one topology, against the single node with one partition (`base`). */
function summarize(r: TopologyResult, n: number, base: TopologyResult | undefined) {
  const shards = r.ports.length;
  const cpuOf = (s: number, phase?: string) =>
    sum(r.phases.filter((p) => !phase || p.name === phase).map((p) => p.perNode[s]!.cpu));
  const mainOf = (s: number) => {
    const parts = r.phases.map((p) => p.perNode[s]!.cpuMain);
    return parts.some((x) => x === null) ? null : sum(parts as number[]);
  };
  const wallS = sum(r.phases.map((p) => p.wallMs)) / 1000;
  const perShard = Array.from({ length: shards }, (_, s) => {
    const cpu = cpuOf(s);
    const main = mainOf(s);
    return {
      port: r.ports[s]!,
      partitions: r.partitionsPerShard[s]!,
      jobShare: r.jobsPerShard[s]! / n,
      usPerJob: (cpu * 1e6) / n,
      mainUsPerJob: main === null ? null : (main * 1e6) / n,
      addUsPerJob: (cpuOf(s, 'add') * 1e6) / n,
      sweepUsPerJob: (cpuOf(s, 'sweep') * 1e6) / n,
      deliverUsPerJob: (cpuOf(s, 'claim + start + ack') * 1e6) / n,
      sysUsPerJob: (sum(r.phases.map((p) => p.perNode[s]!.cpuSys)) * 1e6) / n,
      usPerOwnJob: r.jobsPerShard[s]! > 0 ? (cpu * 1e6) / r.jobsPerShard[s]! : null,
      idleShare: cpu > 0 ? (r.idleCpuUsPerSec[s]! * wallS) / (cpu * 1e6) : 0,
    };
  });
  const totalCpu = sum(perShard.map((s) => s.usPerJob)); // µs per job
  const busiest = Math.max(...perShard.map((s) => s.usPerJob));
  const baseTotal = base
    ? (sum(base.ports.map((_, s) => sum(base.phases.map((p) => p.perNode[s]!.cpu)))) * 1e6) / n
    : null;
  const commands = sum(r.phases.flatMap((p) => p.perNode.map((x) => x.commands))) / n;
  const scripts = sum(r.phases.flatMap((p) => p.perNode.map((x) => x.scripts))) / n;
  const reads = sum(r.phases.flatMap((p) => p.perNode.map((x) => x.reads))) / n;
  return {
    label: r.label,
    masters: r.masters,
    partitions: r.partitions,
    perShard,
    totalUsPerJob: totalCpu,
    busiestUsPerJob: busiest,
    sysUsPerJob: sum(perShard.map((s) => s.sysUsPerJob)),
    projectedSpeedUp: baseTotal === null ? null : baseTotal / busiest,
    totalVsSingle: baseTotal === null ? null : totalCpu / baseTotal,
    commandsPerJob: commands,
    commandsByPhase: byPhase(r, (x) => x.commands / n, 2),
    scriptCallsPerJob: scripts,
    readsPerJob: reads,
    readsByPhase: byPhase(r, (x) => x.reads / n, 4),
    wallS,
    wallByPhaseS: Object.fromEntries(r.phases.map((p) => [p.name, round(p.wallMs / 1000, 1)])),
    idleShare: sum(perShard.map((s) => s.idleShare * s.usPerJob)) / Math.max(1e-9, totalCpu),
    sweeps: r.sweeps,
    claimCalls: r.claimCalls,
    errors: r.errors,
  };
}

type Summary = ReturnType<typeof summarize>;

/** Per shard of each topology: its partitions, share of the jobs, and Redis CPU per job by phase. */
function printShards(summaries: readonly Summary[]): void {
  const shardRows: string[][] = [];
  for (const s of summaries) {
    s.perShard.forEach((x, i) =>
      shardRows.push([
        i === 0 ? s.label : '',
        `${i + 1} (:${x.port})`,
        String(x.partitions),
        `${fmt(x.jobShare * 100, 1)}%`,
        fmt(x.addUsPerJob, 1),
        fmt(x.sweepUsPerJob, 2),
        fmt(x.deliverUsPerJob, 1),
        fmt(x.usPerJob, 1),
        x.mainUsPerJob === null ? '?' : fmt(x.mainUsPerJob, 1),
        x.usPerOwnJob === null ? '-' : fmt(x.usPerOwnJob, 1),
        `${fmt(x.idleShare * 100, 1)}%`,
      ]),
    );
  }
  printTable(shardRows, [
    'topology',
    'shard',
    'partitions',
    'share of jobs',
    'add µs/job',
    'sweep µs/job',
    'claim+start+ack µs/job',
    'total µs/job',
    'main thread µs/job',
    'µs per own job',
    'idle CPU in it',
  ]);
}

/** Per topology: Redis CPU per job, against the single node, and the projected speed-up. */
function printTopologies(summaries: readonly Summary[]): void {
  const rows = summaries.map((s) => [
    s.label,
    fmt(s.totalUsPerJob, 1),
    fmt(s.sysUsPerJob, 1),
    fmt(s.busiestUsPerJob, 1),
    s.totalVsSingle === null ? '-' : `${fmt(s.totalVsSingle, 2)}×`,
    s.projectedSpeedUp === null ? '-' : `${fmt(s.projectedSpeedUp, 2)}×`,
    fmt(s.commandsPerJob, 2),
    fmt(s.scriptCallsPerJob, 3),
    fmt(s.readsPerJob, 3),
    `${fmt(s.wallS, 1)} s`,
  ]);
  printTable(rows, [
    'topology',
    'Redis CPU µs/job, all shards',
    'of it sys',
    'busiest shard µs/job',
    'total ÷ single node (1 partition)',
    'projected speed-up',
    'commands/job',
    'script calls/job',
    'socket reads/job',
    'wall (not meaningful: 2 cores shared)',
  ]);
}

/** Step 1: a single node with 1 and with 4 × the smallest cluster's masters partitions, then each cluster. */
async function scaling(): Promise<Summary[]> {
  const n = OPTS.jobs;
  const ids = Array.from({ length: n }, (_, i) => `job-${String(i).padStart(7, '0')}`);
  const smallest = Math.min(...OPTS.masters);
  const runs: [number, number][] = [
    [0, 1],
    [0, PARTITIONS_PER_MASTER * smallest],
    ...OPTS.masters.map((m): [number, number] => [m, PARTITIONS_PER_MASTER * m]),
  ];
  const results: TopologyResult[] = [];
  for (const [masters, partitions] of runs) results.push(await runWorkload(masters, partitions, ids));
  const summaries = results.map((r) => summarize(r, n, results[0]));
  console.log(
    `\nstep 1: ${fmt(n)} jobs through add, sweep, claim + start + ack. Redis CPU per job = a shard's INFO cpu (user + sys) ÷ ${fmt(n)}`,
  );
  printShards(summaries);
  printTopologies(summaries);
  return summaries;
}

// ---------------------------------------------------------------------------------------------
// step 2: resharding under load

type LoadRole = 'adder' | 'worker' | 'sweeper';

/**
 * The load of steps 2 and 3: two adders (addMany of 50 ids `<prefix>-<adder>-<n>`, due within a
 * second, --rate jobs/s in all, waiting while more than BACKLOG added jobs are not acked), 4 workers
 * (claim 50, start, ack) and a sweeper, each asking `queueOf(role, n)` for its engine before every
 * call. Every answer and error goes to `ledger`.
 */
function startLoad(ledger: Ledger, prefix: string, queueOf: (role: LoadRole, n: number) => Queue) {
  let adding = true;
  let working = true;
  let next = 0;
  let sweepCalls = 0;
  const adder = async (a: number) => {
    const batch = 50;
    const intervalMs = (batch * 1000) / (OPTS.rate / 2); // this adder's share of --rate
    for (let nextAt = Date.now(); adding;) {
      // the workers set the pace when they fall behind: at most BACKLOG jobs wait
      if (ledger.acknowledged.size - ledger.acked.size > BACKLOG) {
        await sleep(50);
        nextAt = Date.now();
        continue;
      }
      const idsNow = Array.from({ length: batch }, () => `${prefix}-${a}-${String(next++).padStart(7, '0')}`);
      await addAcknowledged(queueOf('adder', a), ledger, idsNow, () => Math.random());
      nextAt = Math.max(nextAt + intervalMs, Date.now() - intervalMs);
      if (nextAt > Date.now()) await sleep(nextAt - Date.now());
    }
  };
  const worker = async (w: number) => {
    while (working) {
      const got = await workOnce(queueOf('worker', w).engine, ledger, 50);
      if (got <= 0) await sleep(20);
    }
  };
  const sweeper = async () => {
    while (working) {
      try {
        const r = await queueOf('sweeper', 0).engine.sweep();
        sweepCalls++;
        if (r.moved === 0 && !r.more) await sleep(50);
      } catch (error) {
        ledger.error('sweep', error);
        await sleep(50);
      }
    }
  };
  const adders = [adder(0), adder(1)];
  const workers = [...Array.from({ length: 4 }, (_, w) => worker(w)), sweeper()];
  return {
    /** Stops the adders once their calls in flight are answered. */
    async stopAdding(): Promise<void> {
      adding = false;
      await Promise.all(adders);
    },
    /** Stops the workers and the sweeper once their calls in flight are answered. */
    async stopWorking(): Promise<void> {
      working = false;
      await Promise.all(workers);
    },
    sweepCalls: () => sweepCalls,
  };
}

/** A cluster under step 2's load, with the clock of its events. */
interface Resharding {
  t: Topology;
  ledger: Ledger;
  /** The masters' node ids, in the order started. */
  ids: string[];
  /** The first master's address, for redis-cli. */
  first: string;
  started: number;
  events: Record<string, number | string>;
  /** The 4th master and its direct client, once added. */
  extra?: { server: RedisProcess; direct: Redis };
}

const at = (r: { started: number }) => round((Date.now() - r.started) / 1000, 1);
const tally = (ledger: Ledger) => `${fmt(ledger.acknowledged.size)} adds acknowledged, ${fmt(ledger.acked.size)} acked`;

/** A 4th master, started and joined (`redis-cli --cluster add-node`); resolves once every node agrees. */
async function addMaster(r: Resharding): Promise<number> {
  const port = await freePort(true);
  const server = await startServer({ port, args: CLUSTER_NODE_ARGS(port) });
  r.extra = { server, direct: connect(server) };
  r.events.addNodeAt = at(r);
  const clock = stopwatch();
  await redisCli(['--cluster', 'add-node', `127.0.0.1:${port}`, r.first]);
  // rebalance fails while a node does not know the new one yet ("I don't know about node"),
  // and its first slot move fails with CLUSTERDOWN while the new node has not yet seen every
  // slot covered: wait until every node lists every other and says cluster_state:ok, and
  // redis-cli's check agrees
  const all = [...r.t.direct, r.extra.direct];
  const allIds = [...r.ids, String(await r.extra.direct.call('CLUSTER', 'MYID'))];
  const agreeBy = Date.now() + 60_000;
  for (;;) {
    const views = await Promise.all(all.map((c) => c.call('CLUSTER', 'NODES').then(String)));
    const states = await Promise.all(all.map((c) => c.call('CLUSTER', 'INFO').then(String)));
    const known =
      views.every((view) => allIds.every((id) => view.includes(id))) &&
      states.every((state) => state.includes('cluster_state:ok'));
    const check = known ? await runChild('redis-cli', ['--cluster', 'check', r.first]) : undefined;
    if (
      check &&
      check.code === 0 &&
      check.stdout.includes('[OK] All nodes agree about slots configuration') &&
      check.stdout.includes(`127.0.0.1:${port}`)
    )
      break;
    if (Date.now() > agreeBy)
      throw new Error(
        `the cluster did not agree on the new node within 60 s:\n${views.join('\n')}\n${states.join('\n')}`,
      );
    await sleep(250);
  }
  return clock.wallMs();
}

/**
 * While the load runs: RESHARD_SLOTS slots moved from the first master to the second, a 4th
 * master added and given its share (rebalance); the load goes on to --load-seconds, or 5 s more.
 */
async function reshardEvents(r: Resharding) {
  await sleep(5000);
  console.log(`   t=${at(r)} s: ${tally(r.ledger)}; reshard ${RESHARD_SLOTS} slots from master 1 to master 2`);
  r.events.reshardAt = at(r);
  const reshard = await redisCli([
    ...['--cluster', 'reshard', r.first, '--cluster-from', r.ids[0]!, '--cluster-to', r.ids[1]!],
    ...['--cluster-slots', String(RESHARD_SLOTS), '--cluster-yes'],
  ]);
  console.log(`   t=${at(r)} s: reshard done in ${fmt(reshard.ms)} ms; ${tally(r.ledger)}`);
  await sleep(3000);
  const addNodeMs = await addMaster(r);
  console.log(
    `   t=${at(r)} s: 4th master (PID ${r.extra!.server.pid}, :${r.extra!.server.port}) joined in ${fmt(addNodeMs)} ms; rebalance --cluster-use-empty-masters`,
  );
  r.events.rebalanceAt = at(r);
  const rebalance = await redisCli(['--cluster', 'rebalance', r.first, '--cluster-use-empty-masters']);
  console.log(`   t=${at(r)} s: rebalance done in ${fmt(rebalance.ms)} ms; ${tally(r.ledger)}`);
  await sleep(Math.max(5000, r.started + OPTS.loadSeconds * 1000 - Date.now()));
  return { reshardMs: reshard.ms, addNodeMs, rebalanceMs: rebalance.ms };
}

/**
 * Until every acknowledged job was acked, or --drain-seconds: a job whose ack threw may be done all
 * the same (the ack ran, its reply was lost), so with 1,000 or fewer open Redis is asked every 2 s.
 */
async function drainReshard(ledger: Ledger, engine: Engine): Promise<number> {
  const drainStart = Date.now();
  for (let checked = 0; Date.now() - drainStart < OPTS.drainSeconds * 1000;) {
    const open = ledger.open();
    if (open.length === 0) break;
    if (open.length <= 1000 && Date.now() - checked > 2000) {
      checked = Date.now();
      const states = await Promise.all(open.map((id) => stateOf(engine, id)));
      if (states.every((s) => s === 'done')) break;
    }
    await sleep(250);
  }
  return Date.now() - drainStart;
}

/** The ledger after step 2, against Redis; where the partitions went; what the moves cost. */
async function reshardResult(
  r: Resharding,
  engine: Engine,
  shardsBefore: number[],
  before: NodeSample[],
  run: { loadS: number; drainMs: number; sweepCalls: number } & Awaited<ReturnType<typeof reshardEvents>>,
) {
  const { t, ledger } = r;
  const { open, lost, doneUnseen, stuck, stuckStates } = await ledger.check(engine);
  const counts = await engine.counts(TOPIC);
  const after = await sampleAll([...t.direct, ...(r.extra ? [r.extra.direct] : [])]);
  const masters = [...t.nodes, ...(r.extra ? [r.extra.server] : [])];
  const shardsAfter = await partitionShards(
    t,
    masters.map((n) => n.port),
  );
  return {
    masters: `${t.masters} -> ${t.masters + 1}`,
    partitions: t.partitions,
    loadSeconds: round(run.loadS, 1),
    addRate: OPTS.rate,
    added: ledger.acknowledged.size,
    addsNeverAcknowledged: [...ledger.attempted].filter((id) => !ledger.acknowledged.has(id)).length,
    addRetries: ledger.addRetries,
    existsOnFirstTry: ledger.existsFirstTry,
    acked: ledger.acknowledged.size - open.length + doneUnseen.length,
    ackedInLedger: [...ledger.acknowledged].filter((id) => ledger.acked.has(id)).length,
    doneWithLostAckReply: doneUnseen.length,
    ackedWithoutAcknowledgedAdd: [...ledger.acked.keys()].filter((id) => !ledger.acknowledged.has(id)).length,
    lost: lost.length,
    stuck: stuck.length,
    stuckStates,
    ...ledger.outcomes(),
    scriptCallsRefusedByMovingSlots: sum(after.map((s) => s.refused)) - sum(before.map((s) => s.refused)),
    partitionsMoved: shardsAfter.filter((s, p) => s !== shardsBefore[p]).length,
    partitionsPerMasterAfter: masters.map((_, s) => shardsAfter.filter((x) => x === s).length),
    reshardMs: Math.round(run.reshardMs),
    addNodeMs: Math.round(run.addNodeMs),
    rebalanceMs: Math.round(run.rebalanceMs),
    drainMs: run.drainMs,
    sweepCalls: run.sweepCalls,
    countsAtEnd: { delayed: counts.delayed, ready: counts.ready, running: counts.running, dead: counts.dead },
    events: r.events,
    lostSample: lost.slice(0, 10),
    stuckSample: stuck.slice(0, 10),
  };
}

type ReshardResult = Awaited<ReturnType<typeof reshardResult>>;

/** The rows a ledger of steps 2 and 3 shares: adds, acks, lost, stuck, run twice, refusals, errors. */
function ledgerRows(
  result: ReshardResult | ChangeResult,
  addedNote: string,
  stuckNote: string,
  refusals: string[][],
): string[][] {
  return [
    ['jobs added (acknowledged)', fmt(result.added), addedNote],
    [
      'acked (done)',
      fmt(result.acked),
      `${fmt(result.doneWithLostAckReply)} of them done in Redis though their ack threw`,
    ],
    ['lost', String(result.lost), 'acknowledged, gone from Redis'],
    ['stuck', String(result.stuck), stuckNote],
    ['run twice', String(result.runTwice), `started live more than once; acked twice ${result.ackedTwice}`],
    ...refusals,
  ];
}

function printReshard(result: ReshardResult): void {
  const added = `${fmt(result.addRetries)} add calls sent again; ${result.addsNeverAcknowledged} never acknowledged; ${result.existsOnFirstTry} "exists" on a first try`;
  const stuck = `acknowledged, in Redis, not done after the drain ${JSON.stringify(result.stuckStates)}`;
  const refusals = [
    ['acks refused', String(sum(Object.values(result.acksRefused))), JSON.stringify(result.acksRefused)],
    ['starts refused', String(result.startsRefused), 'claimed attempt no longer live'],
    [
      'errors: unavailable (503)',
      fmt(result.errorsUnavailable),
      'allowed: an add that threw is sent again, a worker claims again',
    ],
    ['errors: other', fmt(result.errorsOther), ''],
  ];
  printTable(
    [
      ...ledgerRows(result, added, stuck, refusals),
      [
        'script calls refused by moving slots',
        fmt(result.scriptCallsRefusedByMovingSlots),
        'MOVED/ASK/TRYAGAIN answered by Redis (commandstats rejected_calls)',
      ],
      [
        'partitions moved',
        `${result.partitionsMoved} of ${result.partitions}`,
        `per master after: ${result.partitionsPerMasterAfter.join('/')}`,
      ],
      ['reshard wall time', `${fmt(result.reshardMs)} ms`, `${RESHARD_SLOTS} slots, master 1 -> master 2`],
      ['add-node wall time', `${fmt(result.addNodeMs)} ms`, 'until every node agrees'],
      ['rebalance wall time', `${fmt(result.rebalanceMs)} ms`, '--cluster-use-empty-masters'],
      ['drain', `${fmt(result.drainMs)} ms`, `load ran ${fmt(result.loadSeconds, 1)} s`],
      ['counts at the end', JSON.stringify(result.countsAtEnd), ''],
    ],
    ['ledger', 'value', 'note'],
  );
}

/** Step 2: slots moved and a master added under load; every acknowledged job must be acked. */
async function reshardUnderLoad(): Promise<ReshardResult> {
  const masters = 3;
  const t = await startTopology(masters, PARTITIONS_PER_MASTER * masters);
  const r: Resharding = {
    t,
    ledger: new Ledger(),
    ids: [],
    first: `127.0.0.1:${t.nodes[0]!.port}`,
    started: 0,
    events: {},
  };
  try {
    const q = makeQueue(t.client, t.partitions);
    r.ids = await Promise.all(t.direct.map(async (c) => String(await c.call('CLUSTER', 'MYID'))));
    const shardsBefore = await partitionShards(t);
    console.log(
      `\n== step 2: reshard under load: ${t.label} (PIDs ${t.nodes.map((n) => n.pid).join(', ')}); partitions per master ${t.nodes.map((_, s) => shardsBefore.filter((x) => x === s).length).join('/')}; load average ${load()}`,
    );
    const before = await sampleAll(t.direct);
    r.started = Date.now();
    const actors = startLoad(r.ledger, 'rs', () => q);
    let moves: Awaited<ReturnType<typeof reshardEvents>>;
    try {
      moves = await reshardEvents(r);
    } finally {
      await actors.stopAdding();
    }
    r.events.addsStoppedAt = at(r);
    const loadS = (Date.now() - r.started) / 1000;
    console.log(
      `   t=${at(r)} s: adders stopped (${fmt(r.ledger.acknowledged.size)} acknowledged); draining (at most ${OPTS.drainSeconds} s)`,
    );
    const drainMs = await drainReshard(r.ledger, q.engine);
    await actors.stopWorking();
    r.events.drainedAt = at(r);
    console.log(
      `   t=${at(r)} s: drain over after ${fmt(drainMs)} ms; ${fmt(r.ledger.acked.size)} acked; checking the ledger against Redis`,
    );
    const run = { loadS, drainMs, sweepCalls: actors.sweepCalls(), ...moves };
    const result = await reshardResult(r, q.engine, shardsBefore, before, run);
    printReshard(result);
    r.ledger.printErrors(result.lostSample, result.stuckSample);
    return result;
  } finally {
    r.extra?.direct.disconnect();
    await r.extra?.server.stop();
    await t.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// step 3: the partition count changes under load

const CHANGE_FROM = PARTITIONS_PER_MASTER * 3; // 12 partitions on 3 masters
const CHANGE_TO = 6 * 3; // 18
const CHANGE_RETENTION = 20; // s a finished job stays readable: the ledger is checked within it
const CHANGE_SCHEDULES = 20; // schedules `every: 1` made before the deploy: each must move, its occurrences run once

/** Which engine each role runs on while the deploy rolls over: the old, or the new with its former partitions. */
class Rollover {
  phase: 'before' | 'rollover' | 'after' = 'before';
  constructor(
    readonly before: Queue,
    readonly after: Queue,
  ) {}
  /** Nobody on the new engine, then (the rollover) adder 0, workers 0 and 1 and the sweeper, then everyone. */
  queueFor(role: LoadRole, n: number): Queue {
    const onNew =
      this.phase === 'after' ||
      (this.phase === 'rollover' && (role === 'sweeper' || n === 0 || (role === 'worker' && n === 1)));
    return onNew ? this.after : this.before;
  }
}

/** The deploy rolls over at 8 s, everyone is on the new engine 6 s later; the load goes on to --change-seconds. */
async function rollOver(ro: Rollover, ledger: Ledger, started: number, events: Record<string, number>) {
  const clock = { started };
  await sleep(8000);
  const atDeploy = { acknowledged: ledger.acknowledged.size, acked: ledger.acked.size };
  ro.phase = 'rollover';
  events.rolloverAt = at(clock);
  console.log(
    `   t=${at(clock)} s: ${tally(ledger)}; the deploy rolls over: adder 0, workers 0 and 1 and the sweeper on ${CHANGE_TO} partitions (former ${CHANGE_FROM})`,
  );
  await sleep(6000);
  ro.phase = 'after';
  events.allOnNewAt = at(clock);
  console.log(`   t=${at(clock)} s: every role on ${CHANGE_TO} partitions`);
  await sleep(Math.max(2000, started + OPTS.changeSeconds * 1000 - Date.now()));
  return atDeploy;
}

/** Waits (the finished jobs' retention, and 30 s more) until the former partitions hold nothing; when, or null. */
async function formerEmpty(after: Queue, started: number): Promise<number | null> {
  for (const until = Date.now() + (CHANGE_RETENTION + 30) * 1000; Date.now() < until; await sleep(500)) {
    const f = (await after.stats(TOPIC)).former;
    if (f && f.jobs === 0 && f.schedules === 0) return at({ started });
  }
  return null;
}

/** Seconds missing between the first and the last of a schedule's occurrence times (`YYYYMMDDTHHMMSSZ`). */
function secondsMissed(times: ReadonlySet<string>): number {
  const ms = [...times]
    .map((t) =>
      Date.parse(
        `${t.slice(0, 4)}-${t.slice(4, 6)}-${t.slice(6, 8)}T${t.slice(9, 11)}:${t.slice(11, 13)}:${t.slice(13, 15)}Z`,
      ),
    )
    .sort((a, b) => a - b);
  return ms.length === 0 ? 0 : (ms.at(-1)! - ms[0]!) / 1000 + 1 - ms.length;
}

/** Every second of every schedule ran once: occurrence ids are `<schedule>:<UTC second>`. */
function occurrencesOf(ledger: Ledger, scheduleIds: readonly string[]) {
  const occurrences = [...ledger.acked.keys()].filter((id) => id.startsWith('every-'));
  const perSchedule = scheduleIds.map((sid) => occurrences.filter((id) => id.startsWith(`${sid}:`)).length);
  const seconds = scheduleIds.map(
    (sid) => new Set(occurrences.filter((id) => id.startsWith(`${sid}:`)).map((id) => id.slice(sid.length + 1))),
  );
  return {
    occurrencesRun: occurrences.length,
    occurrencesPerSchedule: { min: Math.min(...perSchedule), max: Math.max(...perSchedule) },
    occurrencesRunTwice: occurrences.filter((id) => (ledger.starts.get(id) ?? 0) > 1).length,
    occurrenceSecondsMissed: seconds.reduce((missed, set) => missed + secondsMissed(set), 0),
  };
}

/** The ledger after step 3, against Redis within the finished jobs' retention; the schedules' occurrences. */
async function changeResult(
  after: Queue,
  ledger: Ledger,
  scheduleIds: readonly string[],
  { open, lost, doneUnseen, stuck }: Awaited<ReturnType<Ledger['check']>>,
  run: {
    loadS: number;
    drainMs: number;
    sweepCalls: number;
    atDeploy: { acknowledged: number };
    formerAtDrain: { jobs: number; schedules: number };
    formerEmptyAt: number | null;
    events: Record<string, number>;
  },
) {
  const counts = await after.engine.counts(TOPIC);
  return {
    masters: 3,
    partitions: `${CHANGE_FROM} -> ${CHANGE_TO}`,
    schedules: CHANGE_SCHEDULES,
    ...occurrencesOf(ledger, scheduleIds),
    loadSeconds: round(run.loadS, 1),
    addRate: OPTS.rate,
    added: ledger.acknowledged.size,
    addedBeforeDeploy: run.atDeploy.acknowledged,
    addRetries: ledger.addRetries,
    existsOnFirstTry: ledger.existsFirstTry,
    acked: ledger.acknowledged.size - open.length + doneUnseen.length,
    doneWithLostAckReply: doneUnseen.length,
    lost: lost.length,
    stuck: stuck.length,
    ...ledger.outcomes(),
    drainMs: run.drainMs,
    sweepCalls: run.sweepCalls,
    formerAtDrain: run.formerAtDrain,
    formerEmptyAt: run.formerEmptyAt,
    countsAtEnd: { delayed: counts.delayed, ready: counts.ready, running: counts.running, dead: counts.dead },
    events: run.events,
    lostSample: lost.slice(0, 10),
    stuckSample: stuck.slice(0, 10),
  };
}

type ChangeResult = Awaited<ReturnType<typeof changeResult>>;

function printChange(result: ChangeResult): void {
  const added = `${fmt(result.addedBeforeDeploy)} before the deploy; ${fmt(result.addRetries)} add calls sent again; ${result.existsOnFirstTry} "exists" on a first try`;
  const refusals = [
    [
      'acks refused / starts refused',
      `${sum(Object.values(result.acksRefused))} / ${result.startsRefused}`,
      JSON.stringify(result.acksRefused),
    ],
    ['errors: unavailable (503) / other', `${fmt(result.errorsUnavailable)} / ${fmt(result.errorsOther)}`, ''],
  ];
  const { formerAtDrain: former, formerEmptyAt, occurrencesPerSchedule: each } = result;
  printTable(
    [
      ...ledgerRows(result, added, 'acknowledged, in Redis, not done after the drain', refusals),
      [
        'schedules: occurrences run',
        `${fmt(result.occurrencesRun)}`,
        `${CHANGE_SCHEDULES} schedules every 1 s: ${each.min}-${each.max} each; run twice ${result.occurrencesRunTwice}; seconds missed between a schedule's first and last run ${result.occurrenceSecondsMissed}`,
      ],
      [
        'former partitions at the drain',
        `${fmt(former.jobs)} jobs, ${former.schedules} schedules`,
        `finished jobs within their ${CHANGE_RETENTION} s retention`,
      ],
      [
        'former partitions empty',
        formerEmptyAt === null ? 'not within the wait' : `t=${formerEmptyAt} s`,
        `the deploy rolled over at t=${result.events.rolloverAt} s`,
      ],
      ['drain', `${fmt(result.drainMs)} ms`, `load ran ${fmt(result.loadSeconds, 1)} s`],
      ['counts at the end', JSON.stringify(result.countsAtEnd), ''],
    ],
    ['ledger', 'value', 'note'],
  );
}

/**
 * A 3-master cluster whose stack changes from 12 to 18 partitions while jobs flow: two adders
 * (addMany of 50, --rate jobs/s in all), 4 workers (claim 50, start, ack) and a sweeper, all on an
 * engine of 12 partitions, until the deploy: from then on (at 8 s) one adder, two workers and the
 * sweeper run on an engine of 18 partitions with `formerPartitions: 12`, the others on the old one,
 * as Lambda instances of both versions do while a deploy rolls over; 6 s later all run on the new
 * one. The adders stop at --change-seconds, the rest drains, and the ledger is checked as in step 2;
 * then the bench waits until GET /topics' `former` says the former partitions hold nothing (the
 * finished jobs' retention is 20 s), when the change can end.
 */
async function changeUnderLoad(): Promise<ChangeResult> {
  const t = await startTopology(3, CHANGE_TO);
  try {
    const ro = new Rollover(
      makeQueue(t.client, CHANGE_FROM, { retention: CHANGE_RETENTION }),
      makeQueue(t.client, CHANGE_TO, { formerPartitions: CHANGE_FROM, retention: CHANGE_RETENTION }),
    );
    const ledger = new Ledger();
    console.log(
      `\n== step 3: partition count ${CHANGE_FROM} -> ${CHANGE_TO} under load: ${t.label} (PIDs ${t.nodes.map((n) => n.pid).join(', ')}); load average ${load()}`,
    );
    // schedules made before the deploy, each falling due every second: they move while the
    // deploy rolls over, and each second's occurrence must run once, whoever moved it
    const scheduleIds = Array.from({ length: CHANGE_SCHEDULES }, (_, s) => `every-${s}`);
    for (const id of scheduleIds)
      await ro.before.putSchedule(TOPIC, id, { every: 1, body: BODY, ttr: 5, maxAttempts: 50 });
    const started = Date.now();
    const clock = { started };
    const actors = startLoad(ledger, 'pc', (role, n) => ro.queueFor(role, n));
    const events: Record<string, number> = {};
    let atDeploy = { acknowledged: 0, acked: 0 };
    try {
      atDeploy = await rollOver(ro, ledger, started, events);
    } finally {
      await actors.stopAdding();
    }
    // the schedules end with the load: deleted, their pending occurrences withdrawn
    for (const id of scheduleIds) await ro.after.deleteSchedule(TOPIC, id);
    events.addsStoppedAt = at(clock);
    const loadS = (Date.now() - started) / 1000;
    console.log(
      `   t=${at(clock)} s: adders stopped (${fmt(ledger.acknowledged.size)} acknowledged), schedules deleted; draining (at most ${OPTS.drainSeconds} s)`,
    );
    const drainStart = Date.now();
    while (Date.now() - drainStart < OPTS.drainSeconds * 1000 && ledger.open().length > 0) await sleep(250);
    const drainMs = Date.now() - drainStart;
    events.drainedAt = at(clock);
    const checked = await ledger.check(ro.after.engine); // within the finished jobs' retention
    // the former partitions empty out: the jobs added before the deploy ran there, and leave with their retention
    const formerAtDrain = (await ro.after.stats(TOPIC)).former ?? { jobs: 0, schedules: 0 };
    const formerEmptyAt = await formerEmpty(ro.after, started);
    await actors.stopWorking();
    const run = { loadS, drainMs, sweepCalls: actors.sweepCalls(), atDeploy, formerAtDrain, formerEmptyAt, events };
    const result = await changeResult(ro.after, ledger, scheduleIds, checked, run);
    printChange(result);
    ledger.printErrors();
    return result;
  } finally {
    await t.stop();
  }
}

// ---------------------------------------------------------------------------------------------

/** The machine, from a redis-server started for a moment. */
async function probeMachine() {
  const probe = await startServer();
  const client = connect(probe);
  const machine = await machineOf(client, probe.pid);
  client.disconnect();
  await probe.stop();
  return machine;
}

async function main(): Promise<void> {
  const at = new Date().toISOString();
  const machine = await probeMachine();
  console.log(`${machineLine(machine)}; load average ${load()}`);
  console.log(`options: ${JSON.stringify(OPTS)}; body ${Buffer.byteLength(JSON.stringify(BODY))} bytes of JSON`);
  console.log(
    'Wall times below are NOT meaningful on this machine: every shard, the client and other work share its cores. Redis CPU figures come from INFO cpu.',
  );
  const only = OPTS.reshardOnly || OPTS.changeOnly;
  const scalingResults = only ? null : await scaling();
  const reshard = OPTS.skipReshard || OPTS.changeOnly ? null : await reshardUnderLoad();
  const change = OPTS.skipChange || OPTS.reshardOnly ? null : await changeUnderLoad();
  printJson({
    bench: 'cluster',
    at,
    machine,
    options: OPTS,
    loadAverageEnd: loadavg(),
    scaling: scalingResults,
    reshard,
    change,
  });
  for (const [step, r] of [
    ['reshard', reshard],
    ['partition change', change],
  ] as const) {
    if (r && (r.lost > 0 || r.stuck > 0)) {
      console.error(`FAILED (${step}): the ledger shows ${r.lost} lost and ${r.stuck} stuck jobs`);
      process.exitCode = 1;
    }
  }
}

runBench(main);
