/**
 * Engine benchmark (not a test): starts its own redis-server (nothing persisted), measures the
 * engine against a raw-Redis ceiling, prints a table and one JSON line, and stops redis by PID.
 * Each step also says where its wall time went: redis-server CPU, time inside scripts, this Node
 * process's CPU, and the CPU of other processes on the machine (Linux), which skews the figures
 * on a small shared machine.
 *
 *   npm run bench:engine
 *
 * Job counts can be overridden for a quick run: BENCH_JOBS sets every job count at once;
 * BENCH_ADD_JOBS, BENCH_SINGLE_JOBS, BENCH_MEMORY_JOBS, BENCH_DUE_JOBS set one each;
 * BENCH_CEILING_REQUESTS sets redis-benchmark's -n. BENCH_BATCHES_IN_FLIGHT (4),
 * BENCH_SINGLE_IN_FLIGHT (64) and BENCH_CLAIM_LOOPS (4) set the concurrency.
 *
 * Step 7 measures the Redis time of every call of each script with bodies of the largest size a
 * configuration may allow (MAX_BODY_BYTES), from Redis's own accounting (SLOWLOG with
 * slowlog-log-slower-than 0: every call with its duration), and prints the median, 99th percentile
 * and slowest call per script against the 10 ms goal, with plain HGETs of one such body (no
 * script) as the machine's reference. BENCH_BIG_JOBS (100) sets its job count,
 * BENCH_BIG_BODY_BYTES (MAX_BODY_BYTES) its body size; BENCH_ONLY=bodies runs step 7 alone.
 * Results are in BENCHMARKS.md.
 */
import type { Redis } from 'ioredis';
import { MAX_BODY_BYTES } from '../lib/core/limits';
import type { Caller, ClaimedJob } from '../lib/engine';
import { topicKeys } from '../lib/testing';
import { makeQueue, TestClock, type Queue } from '../test/support/queue';
import { envInt } from './harness/env';
import { runBench, runChild } from './harness/lifecycle';
import { commandStats, loadText, machineCpu, quantile, redisCpu, SCRIPT_COMMANDS, total } from './harness/measure';
import { addInBatches, paddedBody, pool, queueOn, sweepAll } from './harness/queue';
import { functionName, logCommands, scriptNamer, usedMemory, withRedis } from './harness/redis';
import { fmt, machineLine, machineOf, printJson, printTable, verdict, type Machine, type Row } from './harness/report';

/** The key jobs are added with, as the API adds every job: its name is stored on each (updatedBy). */
const PRODUCER: Caller = { name: 'orders-service', scope: 'write', topics: null };

const TOPIC = 'bench';
const BODY_BYTES = 200;
const BATCH = 500;

const ALL_JOBS = process.env.BENCH_JOBS ? envInt('BENCH_JOBS', 0) : undefined;
const N = {
  ceilingRequests: envInt('BENCH_CEILING_REQUESTS', 1_000_000),
  addJobs: envInt('BENCH_ADD_JOBS', ALL_JOBS ?? 200_000),
  singleJobs: envInt('BENCH_SINGLE_JOBS', ALL_JOBS ?? 50_000),
  memoryJobs: envInt('BENCH_MEMORY_JOBS', ALL_JOBS ?? 100_000),
  dueJobs: envInt('BENCH_DUE_JOBS', ALL_JOBS ?? 100_000),
  batchesInFlight: envInt('BENCH_BATCHES_IN_FLIGHT', 4),
  singleInFlight: envInt('BENCH_SINGLE_IN_FLIGHT', 64),
  claimLoops: envInt('BENCH_CLAIM_LOOPS', 4),
  bigJobs: envInt('BENCH_BIG_JOBS', 100),
  bigBodyBytes: envInt('BENCH_BIG_BODY_BYTES', MAX_BODY_BYTES),
};
const ONLY_BODIES = process.env.BENCH_ONLY === 'bodies';

const TARGETS = {
  addRatioToCeiling: 0.5,
  moveJobsPerSec: 100_000,
  maxScriptCallMs: 10,
  bytesPerJob: 450,
};

/** A JSON body whose JSON text is exactly BODY_BYTES bytes. */
function makeBody(n: number): { orderId: string; customer: string; items: number; note: string } {
  const base = {
    orderId: `order-${String(n).padStart(6, '0')}`,
    customer: `customer-${n % 9973}`,
    items: (n % 7) + 1,
    note: '',
  };
  return paddedBody(base, BODY_BYTES);
}

const pad6 = (n: number) => String(n).padStart(6, '0');
const seconds = (ms: number) => ms / 1000;

interface SlowEntry {
  durationUs: number;
  command: string;
}

function describeSlowlog(entries: unknown[]): SlowEntry[] {
  return (entries as [number, number, number, string[]][]).map(([, , durationUs, args]) => {
    const [name = '?', script = '', , ...keys] = args;
    // FCALL <function> <numkeys> <keys...>: the function names the script; EVALSHA <sha> <numkeys>
    // <keys...> | EVAL <source> <numkeys> <keys...> (a server that refused functions): the keys say which
    if (/^fcall$/i.test(name))
      return { durationUs, command: `FCALL ${functionName(script)} ${keys.slice(0, 2).join(' ')} …` };
    if (/^evalsha$/i.test(name))
      return { durationUs, command: `EVALSHA ${script.slice(0, 10)}… ${keys.slice(0, 2).join(' ')} …` };
    if (/^eval$/i.test(name))
      return {
        durationUs,
        command: `EVAL <source> (NOSCRIPT fallback: compiles the script) ${keys.slice(0, 2).join(' ')} …`,
      };
    return { durationUs, command: args.slice(0, 4).join(' ') };
  });
}

/** Upper edge (µs) of the highest non-empty bucket of LATENCY HISTOGRAM for a command. */
async function maxLatencyBucketUs(
  redis: Redis,
  command: string,
): Promise<{ calls: number; maxBucketUs: number | null }> {
  const reply = (await redis.call('LATENCY', 'HISTOGRAM', command)) as unknown[];
  // [name, ['calls', n, 'histogram_usec', [bucket, count, bucket, count, ...]]]
  const body = reply[1] as unknown[] | undefined;
  if (!body) return { calls: 0, maxBucketUs: null };
  const calls = Number(body[1]);
  const buckets = (body[3] as number[]) ?? [];
  let max: number | null = null;
  for (let i = 0; i < buckets.length; i += 2) if (Number(buckets[i + 1]) > 0) max = Number(buckets[i]);
  return { calls, maxBucketUs: max };
}

interface Mark {
  machineBusy: number | undefined;
  t0: number;
  nodeCpu: NodeJS.CpuUsage;
  redisCpu: number;
}

/** Starts timing a step: resets Redis's commandstats (CONFIG RESETSTAT) and notes both CPUs. */
async function mark(redis: Redis): Promise<Mark> {
  await redis.config('RESETSTAT');
  const cpu = (await redisCpu(redis)).seconds;
  return { redisCpu: cpu, nodeCpu: process.cpuUsage(), machineBusy: machineCpu()?.busy, t0: performance.now() };
}

type Split = Awaited<ReturnType<typeof measured>>;

/**
 * Ends timing a step and says where its wall time went: redis-server's CPU (INFO cpu), the part
 * of it inside scripts (commandstats usec of FCALL, EVALSHA and EVAL), and this Node process's CPU.
 */
async function measured(redis: Redis, m: Mark) {
  const wallMs = performance.now() - m.t0;
  const machineEnd = machineCpu()?.busy;
  const nodeCpu = process.cpuUsage(m.nodeCpu);
  const redisCpuS = (await redisCpu(redis)).seconds - m.redisCpu;
  const stats = await commandStats(redis);
  const scriptUs = total(stats, (name) => SCRIPT_COMMANDS.includes(name), 'usec');
  const calls = total(stats, (name) => SCRIPT_COMMANDS.includes(name));
  const share = (ms: number) => Number((ms / wallMs).toFixed(2));
  const nodeMs = (nodeCpu.user + nodeCpu.system) / 1000;
  const busy = {
    redisCpu: share(redisCpuS * 1000),
    redisInScripts: share(scriptUs / 1000),
    nodeCpu: share(nodeMs),
    // CPU of every other process on the machine (other work, and redis-benchmark in the ceiling)
    otherCpu:
      m.machineBusy === undefined || machineEnd === undefined
        ? null
        : Math.max(0, share((machineEnd - m.machineBusy) * 1000 - redisCpuS * 1000 - nodeMs)),
    scriptCalls: calls,
    usPerScriptCall: Number((scriptUs / Math.max(1, calls)).toFixed(1)),
  };
  const pct = (x: number) => `${fmt(x * 100)}%`;
  return {
    wallMs,
    busy,
    scriptUs,
    text: `redis-server CPU ${pct(busy.redisCpu)} of wall, in scripts ${pct(busy.redisInScripts)} (${fmt(calls)} calls, ${fmt(busy.usPerScriptCall, 1)} µs each); Node CPU ${pct(busy.nodeCpu)}; other processes ${busy.otherCpu === null ? '?' : pct(busy.otherCpu)}`,
  };
}

/** Runs `fn` between mark and measured: its wall time and where it went. */
async function timed(redis: Redis, fn: () => Promise<void>): Promise<Split> {
  const m = await mark(redis);
  await fn();
  return measured(redis, m);
}

// ---------------------------------------------------------------------------------------------
// 1. Ceiling: raw HSET + ZADD in one EVALSHA, pipelined by redis-benchmark (-n 1,000,000).
// The hash and zset grow to about a million members, which slows Redis down; a second run
// with as many requests as the batched add writes jobs is printed as a same-size reference.

interface Ceiling {
  opsPerSec: number;
  split: Split;
  text: string;
}

/** One redis-benchmark run of `requests` EVALSHAs of the script `sha` (HSET + ZADD of a `bodyText`). */
async function ceilingRun(
  redis: Redis,
  port: number,
  sha: string,
  bodyText: string,
  requests: number,
): Promise<Ceiling> {
  const ceilingMark = await mark(redis);
  const rb = await runChild('redis-benchmark', [
    ...['-p', String(port), '-P', '64', '-c', '50', '-n', String(requests), '-r', '100000000', '-q'],
    ...['evalsha', sha, '2', 'h', 'z', 'm:__rand_int__', bodyText, '__rand_int__'],
  ]);
  const rates = [...rb.stdout.matchAll(/([\d.]+) requests per second/g)].map((m) => Number(m[1]));
  const opsPerSec = rates.at(-1);
  const split = await measured(redis, ceilingMark);
  if (rb.code !== 0 || opsPerSec === undefined)
    throw new Error(`redis-benchmark failed (exit ${rb.code}): ${rb.stdout}${rb.stderr}`);
  const members = { hlen: await redis.hlen('h'), zcard: await redis.zcard('z') };
  if (members.hlen === 0 || members.zcard === 0)
    throw new Error(`redis-benchmark wrote nothing: ${JSON.stringify(members)}`);
  await redis.flushall();
  // give the freed pages back to the OS now, not while the next step runs
  await redis.call('MEMORY', 'PURGE');
  const text = `${fmt(opsPerSec)} ops/s (-n ${fmt(requests)}: hash ${fmt(members.hlen)} members, zset ${fmt(members.zcard)}); ${split.text.replace(/; Node CPU [^;]*/, '').replace('other processes', 'redis-benchmark and other processes')}`;
  return { opsPerSec, split, text };
}

/** Step 1: the ceiling with N.ceilingRequests, and the same-size reference with N.addJobs. */
async function ceilings(redis: Redis, port: number, bodyText: string): Promise<{ full: Ceiling; sameSize: Ceiling }> {
  const sha = (await redis.script(
    'LOAD',
    "redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])",
  )) as string;
  const full = await ceilingRun(redis, port, sha, bodyText, N.ceilingRequests);
  console.log(`1. ceiling: ${full.text}`);
  const sameSize = await ceilingRun(redis, port, sha, bodyText, N.addJobs);
  console.log(`1b. same-size reference: ${sameSize.text}`);
  return { full, sameSize };
}

// ---------------------------------------------------------------------------------------------
// 2.-6. The engine's steps

/** Step 2. Batched add: addMany(500 jobs), several batches in flight. */
async function batchedAdd(redis: Redis, queue: Queue, body: object, ceiling: { full: Ceiling; sameSize: Ceiling }) {
  const split = await timed(redis, async () => {
    const job = (i: number) => ({ topic: TOPIC, id: `add-${i}`, delay: Math.random() * 3600, body });
    await addInBatches(queue, N.addJobs, job, { batch: BATCH, inFlight: N.batchesInFlight, caller: PRODUCER });
  });
  const rate = N.addJobs / seconds(split.wallMs);
  console.log(
    `2. batched add: ${fmt(rate)} jobs/s (${fmt(N.addJobs)} jobs in ${fmt(split.wallMs)} ms), ${fmt(rate / ceiling.full.opsPerSec, 2)}× ceiling (${fmt(rate / ceiling.sameSize.opsPerSec, 2)}× the same-size reference); ${split.text}`,
  );
  await redis.flushall();
  return { rate, split };
}

/** Step 3. Single add, many in flight. */
async function singleAdd(redis: Redis, queue: Queue, body: object) {
  let created = 0;
  const split = await timed(redis, () =>
    pool(N.singleJobs, N.singleInFlight, async (i) => {
      const o = await queue.add({ topic: TOPIC, id: `one-${i}`, delay: Math.random() * 3600, body }, PRODUCER);
      if (o.status === 'created') created++;
    }),
  );
  if (created !== N.singleJobs) throw new Error(`single add created ${created} of ${N.singleJobs}`);
  const rate = N.singleJobs / seconds(split.wallMs);
  console.log(
    `3. single add (${N.singleInFlight} in flight): ${fmt(rate)} jobs/s (${fmt(N.singleJobs)} jobs in ${fmt(split.wallMs)} ms); ${split.text}`,
  );
  return { rate, split };
}

/** Adds `count` jobs `order-000001` … of 200-byte bodies, due when `when(i)` says (i from 1). */
const addOrders = (queue: Queue, count: number, when: () => object) =>
  addInBatches(queue, count, (i) => ({ topic: TOPIC, id: `order-${pad6(i + 1)}`, ...when(), body: makeBody(i + 1) }), {
    batch: BATCH,
    inFlight: N.batchesInFlight,
    caller: PRODUCER,
  });

/** Step 4. Memory per delayed job. */
async function memory(redis: Redis, queue: Queue) {
  await redis.flushall();
  const usedBefore = await usedMemory(redis);
  await addOrders(queue, N.memoryJobs, () => ({ delay: 60 + Math.random() * 3600 }));
  const usedAfter = await usedMemory(redis);
  const bytesPerJob = (usedAfter - usedBefore) / N.memoryJobs;
  const k = topicKeys(0, TOPIC, 1);
  const perKey = {
    jobsHash: Number(await redis.call('MEMORY', 'USAGE', k.jobs, 'SAMPLES', '0')) / N.memoryJobs,
    delayedZset: Number(await redis.call('MEMORY', 'USAGE', k.delayed, 'SAMPLES', '0')) / N.memoryJobs,
  };
  const record = (await redis.hget(k.jobs, 'order-000001')) ?? '';
  const recordBytes = Buffer.byteLength(record, 'latin1');
  console.log(
    `4. memory: ${fmt(bytesPerJob, 1)} bytes/job (used_memory ${fmt(usedBefore)} -> ${fmt(usedAfter)}; ` +
      `MEMORY USAGE: jobs hash ${fmt(perKey.jobsHash, 1)} + delayed zset ${fmt(perKey.delayedZset, 1)} per job; record ${recordBytes} bytes)`,
  );
  return { bytesPerJob, perKey };
}

/** Step 5. moveDue: every job due at the same instant, swept until nothing more moves. */
async function moveDue(redis: Redis, queue: Queue) {
  await redis.flushall();
  const runAt = Date.now() - 1000;
  await addOrders(queue, N.dueJobs, () => ({ runAt }));
  await logCommands(redis, 1000, 1024);
  await redis.config('SET', 'latency-monitor-threshold', '1');
  await redis.call('SLOWLOG', 'RESET');
  await redis.call('LATENCY', 'RESET');
  let moved = 0;
  let sweeps = 0;
  // mark also resets commandstats and LATENCY HISTOGRAM
  const split = await timed(redis, async () => {
    for (let more = true; more; sweeps++) {
      const r = await queue.engine.sweep();
      moved += r.moved;
      more = r.more || r.moved !== 0;
    }
  });
  const slowlog = describeSlowlog((await redis.call('SLOWLOG', 'GET', '128')) as unknown[]).sort(
    (a, b) => b.durationUs - a.durationUs,
  );
  const latencyLatest = (await redis.call('LATENCY', 'LATEST')) as [string, number, number, number][];
  const usPerCall = (await commandStats(redis)).get('fcall')?.usecPerCall ?? NaN;
  const histogram = await maxLatencyBucketUs(redis, 'fcall');
  if (moved !== N.dueJobs) throw new Error(`sweeps moved ${moved} of ${N.dueJobs}`);
  return { rate: moved / seconds(split.wallMs), moved, sweeps, split, slowlog, latencyLatest, usPerCall, histogram };
}

type MoveDue = Awaited<ReturnType<typeof moveDue>>;

function printMoveDue(m: MoveDue, moveLimit: number): void {
  const slowest = m.slowlog[0];
  console.log(
    `5. moveDue: ${fmt(m.rate)} jobs/s (${fmt(m.moved)} jobs in ${fmt(m.split.wallMs)} ms, ${m.sweeps} sweep calls, moveLimit ${moveLimit}); ` +
      `FCALL ${fmt(m.usPerCall, 1)} µs/call; slowlog (≥1 ms): ${m.slowlog.length} entries` +
      (slowest ? `, slowest ${fmt(slowest.durationUs)} µs: ${slowest.command}` : '') +
      `; LATENCY LATEST: ${m.latencyLatest.length ? m.latencyLatest.map(([e, , last, max]) => `${e} latest ${last} ms max ${max} ms`).join(', ') : 'none'}` +
      `; FCALL histogram: ${m.histogram.calls} calls, highest bucket ≤ ${m.histogram.maxBucketUs} µs; ${m.split.text}`,
  );
}

/** Step 6. claim + ack of the ready jobs, several loops. */
async function claimAck(redis: Redis, queue: Queue) {
  let acked = 0;
  let claims = 0;
  let notDone = 0;
  const loop = async () => {
    for (;;) {
      const claimed: ClaimedJob[] = await queue.engine.claim(TOPIC, 100, 1e9);
      claims++;
      if (claimed.length === 0) break;
      const outcomes = await Promise.all(claimed.map((j) => queue.engine.ack(j.topic, j.id, j)));
      for (const o of outcomes)
        if (o === 'done') acked++;
        else notDone++;
    }
  };
  const split = await timed(redis, async () => void (await Promise.all(Array.from({ length: N.claimLoops }, loop))));
  if (acked !== N.dueJobs || notDone !== 0)
    throw new Error(`claim+ack acked ${acked} of ${N.dueJobs} (${notDone} not done)`);
  const rate = acked / seconds(split.wallMs);
  console.log(
    `6. claim+ack (${N.claimLoops} loops of claim 100 + acks): ${fmt(rate)} jobs/s (${fmt(acked)} jobs in ${fmt(split.wallMs)} ms, ${claims} claim calls); ${split.text}`,
  );
  return { rate, split };
}

// ---------------------------------------------------------------------------------------------
// 7. Every script with maximum-size bodies: the slowest single call of each

/** One row of step 7: every call of one script in one phase, with its Redis time (ms). */
interface ScriptCalls {
  phase: string;
  script: string;
  ms: number[];
}

/** True for step 7's reference row, a plain command rather than a script. */
const isReference = (script: string) => script.endsWith('(no script: reference)');

/**
 * Step 7: every state change and read with bodies of `bodyBytes` (the largest a configuration may
 * allow, by default), `jobs` of them. Each phase's script calls are read back from SLOWLOG
 * (slowlog-log-slower-than 0 logs every command with its duration in µs, as Redis measured it);
 * an EVALSHA is named by the SHA1 of each script's text, an EVAL by its length. ioredis sends a
 * script's first call on a connection as EVAL, which compiles it: those calls count too.
 */
class BigBodies {
  readonly rows: ScriptCalls[] = [];
  private readonly topic = 'bench-big';
  private readonly clock = new TestClock();
  private readonly queue: Queue;
  private readonly body: { pad: string };
  private readonly ids: string[];
  private readonly names = scriptNamer();
  private claimed: ClaimedJob[] = [];

  constructor(
    private readonly redis: Redis,
    private readonly jobs: number,
    bodyBytes: number,
  ) {
    this.queue = makeQueue(
      redis,
      { [this.topic]: { concurrency: 10_000, maxAttempts: 1, ttr: 30 } },
      { clock: this.clock, random: 0, config: { maxBodyBytes: bodyBytes, retention: 3600 } },
    );
    this.body = { pad: 'x'.repeat(bodyBytes - Buffer.byteLength(JSON.stringify({ pad: '' }))) };
    if (Buffer.byteLength(JSON.stringify(this.body)) !== bodyBytes) throw new Error('big body has the wrong size');
    this.ids = Array.from({ length: jobs }, (_, i) => `big-${String(i).padStart(5, '0')}`);
  }

  /** Every phase in turn, SLOWLOG logging every command meanwhile. */
  async run(): Promise<ScriptCalls[]> {
    await logCommands(this.redis, 0, 100000);
    await this.addAndRead();
    await this.attempts();
    await this.deadAndBack();
    await logCommands(this.redis, 1000);
    return this.rows;
  }

  /**
   * The script a logged command ran: an FCALL by its function; an EVALSHA by its script's digest; an
   * EVAL (ioredis sends one for a script's first call on a connection) by its text, which SLOWLOG cuts
   * to 128 bytes and "... (N more bytes)": every script starts with the same helpers, so the text's
   * length names it. Undefined for a command that is no script.
   */
  private scriptOf([command, first]: string[]): string | undefined {
    if (/^fcall$/i.test(command ?? '')) return functionName(String(first));
    if (/^evalsha$/i.test(command ?? ''))
      return this.names.bySha(String(first)) ?? `unknown ${String(first).slice(0, 8)}`;
    if (!/^eval$/i.test(command ?? '')) return undefined;
    return this.names.byEvalText(String(first)) ?? 'unknown EVAL';
  }

  /** Runs `fn` and keeps its script calls (and, given `plain`, its calls of that command from no script). */
  private async phase(name: string, fn: () => Promise<void>, plain?: string): Promise<void> {
    await this.redis.call('SLOWLOG', 'RESET');
    await fn();
    const entries = (await this.redis.call('SLOWLOG', 'GET', '-1')) as [number, number, number, string[], string][];
    const per = new Map<string, ScriptCalls>();
    for (const [, , us, args, client] of entries) {
      // a command a script ran is logged too, from the scripts' own client (no address)
      const fromClient = /^\d[\d.]*:\d+$/.test(client ?? '');
      const script =
        plain && fromClient && args[0]?.toUpperCase() === plain
          ? `${plain} (no script: reference)`
          : this.scriptOf(args);
      if (script === undefined) continue;
      const row = per.get(script) ?? { phase: name, script, ms: [] };
      row.ms.push(us / 1000);
      per.set(script, row);
    }
    this.rows.push(...per.values());
  }

  private async addAndRead(): Promise<void> {
    const { queue, topic, ids, body, redis } = this;
    await this.phase('add (addMany of up to 500)', async () => {
      await addInBatches(queue, this.jobs, (i) => ({ topic, id: ids[i], delay: 0, body }), { caller: PRODUCER });
    });
    await this.phase('moveDue: due jobs to ready', () => sweepAll(queue.engine, 1000));
    await this.phase('get', async () => {
      for (const id of ids.slice(0, 10)) if (!(await queue.get(topic, id))) throw new Error(`${id} missing`);
    });
    // the same body read with no script: what moving one such body costs Redis on this machine
    const reference = `dq:bench-reference:${topic}`;
    await redis.hset(reference, 'body', JSON.stringify(body));
    const hgets = async () => {
      for (let i = 0; i < 100; i++) await redis.hget(reference, 'body');
    };
    await this.phase('reference: plain HGET of one body, 100 times', hgets, 'HGET');
    await redis.del(reference);
  }

  /** Claims every job (each claim call takes what is left). */
  private async claimAll(): Promise<ClaimedJob[]> {
    const claimed: ClaimedJob[] = [];
    for (let i = 0; i <= this.jobs && claimed.length < this.jobs; i++) {
      const got = await this.queue.engine.claim(this.topic, this.jobs - claimed.length, 1e9);
      if (got.length === 0) break;
      claimed.push(...got);
    }
    if (claimed.length !== this.jobs) throw new Error(`claimed ${claimed.length} of ${this.jobs}`);
    return claimed;
  }

  private async attempts(): Promise<void> {
    const { engine } = this.queue;
    const topic = this.topic;
    const third = Math.floor(this.jobs / 3);
    await this.phase('claim every job', async () => void (this.claimed = await this.claimAll()));
    await this.phase('start every attempt', async () => {
      if (!(await engine.start(topic, this.claimed)).every(Boolean)) throw new Error('an attempt was not live');
    });
    await this.phase('ack a third', async () => {
      for (const j of this.claimed.slice(0, third))
        if ((await engine.ack(topic, j.id, j)) !== 'done') throw new Error('ack refused');
    });
    await this.phase('fail a third (dead: maxAttempts 1)', async () => {
      for (const j of this.claimed.slice(third, 2 * third))
        if ((await engine.fail(topic, j.id, j, 'bench')).outcome !== 'dead') throw new Error('fail refused');
    });
    this.clock.advance(31_000); // past the ttr of the last third
    await this.phase('moveDue: the last third times out', () => sweepAll(engine, 1000));
  }

  private async deadAndBack(): Promise<void> {
    const { queue, topic, jobs, body } = this;
    const dead = jobs - Math.floor(jobs / 3);
    await this.phase('listDead (pages of 100)', async () => {
      let listed = 0;
      for (let page = await queue.listDead(topic, { limit: 100 }); ;) {
        listed += page.jobs.length;
        if (page.next === null) break;
        page = await queue.listDead(topic, { limit: 100, after: page.next });
      }
      if (listed !== dead) throw new Error(`listed ${listed} dead jobs of ${dead}`);
    });
    await this.phase('redrive every dead job', async () => {
      if ((await queue.redrive(topic, { count: jobs })).redriven !== dead) throw new Error('redrive missed jobs');
    });
    await this.phase('moveDue: redriven jobs to ready', () => sweepAll(queue.engine, 1000));
    await this.phase('claim, then release after a failed invoke', async () => {
      const again = [];
      for (let got = await queue.engine.claim(topic, jobs, 1e9); got.length > 0;) {
        again.push(...got);
        got = await queue.engine.claim(topic, jobs, 1e9);
      }
      if ((await queue.engine.release(again, 'bench')) !== again.length) throw new Error('release missed jobs');
    });
    await this.phase('reschedule with a new body, then cancel', async () => {
      await queue.reschedule(topic, this.ids.at(-1)!, { delay: 60, body });
      await queue.cancel(topic, this.ids.at(-1)!);
    });
  }
}

type BigSummary = Record<string, { calls: number; p50Ms: number; p99Ms: number; maxMs: number; phase: string }>;

/**
 * Per script, over every phase of step 7: calls, median, 99th percentile and slowest call (ms), and the phase of the
 * slowest.
 */
function bigSummary(rows: ScriptCalls[]): BigSummary {
  const out: BigSummary = {};
  const round = (ms: number) => Number(ms.toFixed(3));
  for (const script of new Set(rows.map((r) => r.script))) {
    const mine = rows.filter((r) => r.script === script);
    const all = mine.flatMap((r) => r.ms).sort((a, b) => a - b);
    const slowest = mine.reduce((a, b) => (Math.max(...b.ms) > Math.max(...a.ms) ? b : a));
    out[script] = {
      calls: all.length,
      p50Ms: round(quantile(all, 0.5, 0)),
      p99Ms: round(quantile(all, 0.99, 0)),
      maxMs: round(all.at(-1) ?? 0),
      phase: slowest.phase,
    };
  }
  return out;
}

function printBigBodies(rows: ScriptCalls[]): void {
  console.log(
    `7. script calls with ${fmt(N.bigBodyBytes)}-byte bodies, ${fmt(N.bigJobs)} jobs (SLOWLOG, every call); load average ${loadText(1, ' ')}:`,
  );
  for (const r of rows) {
    const sorted = [...r.ms].sort((a, b) => a - b);
    console.log(
      `   ${r.phase}: ${r.script} ${sorted.length} calls, median ${fmt(quantile(sorted, 0.5, 0), 2)} ms, slowest ${fmt(sorted.at(-1) ?? 0, 2)} ms, all ${fmt(
        sorted.reduce((a, b) => a + b, 0),
        1,
      )} ms`,
    );
  }
  const table: string[][] = Object.entries(bigSummary(rows))
    .sort((a, b) => b[1].maxMs - a[1].maxMs)
    .map(([script, s]) => [
      script,
      String(s.calls),
      `${fmt(s.p50Ms, 2)} ms`,
      `${fmt(s.p99Ms, 2)} ms`,
      `${fmt(s.maxMs, 2)} ms`,
      s.phase,
      isReference(script)
        ? '(not a script)'
        : `≤ ${TARGETS.maxScriptCallMs} ms: ${s.maxMs <= TARGETS.maxScriptCallMs ? 'met' : 'MISSED'}`,
    ]);
  printTable(table, ['script', 'calls', 'median', 'p99', 'slowest call', 'slowest in phase', 'target (slowest)']);
}

/** Step 7 from an empty Redis: its rows printed, and the slowest script call (ms). */
async function bigBodies(redis: Redis): Promise<{ big: ScriptCalls[]; bigMax: number }> {
  await redis.flushall();
  await redis.call('MEMORY', 'PURGE');
  const big = await new BigBodies(redis, N.bigJobs, N.bigBodyBytes).run();
  printBigBodies(big);
  return { big, bigMax: Math.max(...big.filter((r) => !isReference(r.script)).flatMap((r) => r.ms)) };
}

/** BENCH_ONLY=bodies: step 7 alone, and its JSON line. */
async function bodiesOnly(redis: Redis, machine: Machine, started: number): Promise<void> {
  const big = await new BigBodies(redis, N.bigJobs, N.bigBodyBytes).run();
  printBigBodies(big);
  printJson({
    bench: 'engine',
    step: 'bodies',
    at: new Date(started).toISOString(),
    machine,
    counts: { bigJobs: N.bigJobs, bigBodyBytes: N.bigBodyBytes },
    bigBodies: bigSummary(big),
    targets: { maxScriptCallMs: TARGETS.maxScriptCallMs },
  });
}

// ---------------------------------------------------------------------------------------------
// the table and the JSON line

interface Steps {
  ceiling: { full: Ceiling; sameSize: Ceiling };
  add: { rate: number; split: Split };
  single: { rate: number; split: Split };
  memory: Awaited<ReturnType<typeof memory>>;
  move: MoveDue;
  claim: { rate: number; split: Split };
  big: ScriptCalls[];
  bigMax: number;
}

function resultsOf(s: Steps) {
  const ceiling = s.ceiling.full.opsPerSec;
  const slowest = s.move.slowlog[0];
  return {
    ceilingOpsPerSec: Math.round(ceiling),
    batchedAddJobsPerSec: Math.round(s.add.rate),
    batchedAddRatioToCeiling: Number((s.add.rate / ceiling).toFixed(3)),
    sameSizeCeilingOpsPerSec: Math.round(s.ceiling.sameSize.opsPerSec),
    batchedAddRatioToSameSizeCeiling: Number((s.add.rate / s.ceiling.sameSize.opsPerSec).toFixed(3)),
    singleAddJobsPerSec: Math.round(s.single.rate),
    bytesPerDelayedJob: Number(s.memory.bytesPerJob.toFixed(1)),
    memoryUsagePerJob: {
      jobsHash: Number(s.memory.perKey.jobsHash.toFixed(1)),
      delayedZset: Number(s.memory.perKey.delayedZset.toFixed(1)),
    },
    moveDueJobsPerSec: Math.round(s.move.rate),
    moveDueSweeps: s.move.sweeps,
    moveDueUsPerCall: s.move.usPerCall,
    slowestCommandUs: slowest?.durationUs ?? null,
    slowestCommand: slowest?.command ?? null,
    slowlogEntriesOver1ms: s.move.slowlog.length,
    slowlogTop: s.move.slowlog.slice(0, 5),
    moveDueEvalshaMaxBucketUs: s.move.histogram.maxBucketUs,
    latencyLatest: s.move.latencyLatest.map(([event, , latestMs, maxMs]) => ({ event, latestMs, maxMs })),
    claimAckJobsPerSec: Math.round(s.claim.rate),
    bigBodies: bigSummary(s.big),
    // share of the wall time spent in Redis scripts (commandstats) and in this Node process's CPU
    busy: {
      ceiling: s.ceiling.full.split.busy,
      sameSizeCeiling: s.ceiling.sameSize.split.busy,
      batchedAdd: s.add.split.busy,
      singleAdd: s.single.split.busy,
      moveDue: s.move.split.busy,
      claimAck: s.claim.split.busy,
    },
  };
}

function passOf(s: Steps, results: ReturnType<typeof resultsOf>) {
  return {
    batchedAdd: results.batchedAddRatioToCeiling >= TARGETS.addRatioToCeiling,
    moveDueRate: s.move.rate >= TARGETS.moveJobsPerSec,
    moveDueMaxCall: (s.move.slowlog[0]?.durationUs ?? 0) <= TARGETS.maxScriptCallMs * 1000,
    memory: s.memory.bytesPerJob <= TARGETS.bytesPerJob,
    bigBodiesMaxCall: s.bigMax <= TARGETS.maxScriptCallMs,
  };
}

function rowsOf(s: Steps, pass: ReturnType<typeof passOf>): Row[] {
  const ceiling = s.ceiling.full.opsPerSec;
  const sameSize = s.ceiling.sameSize.opsPerSec;
  const slowest = s.move.slowlog[0];
  return [
    [
      `ceiling: EVALSHA HSET+ZADD (redis-benchmark -P 64 -c 50 -n ${fmt(N.ceilingRequests)})`,
      `${fmt(ceiling)} ops/s`,
      '',
    ],
    [`  same-size reference (-n ${fmt(N.addJobs)})`, `${fmt(sameSize)} ops/s`, ''],
    [
      `batched add: addMany(${BATCH}), ${N.batchesInFlight} in flight, ${fmt(N.addJobs)} jobs`,
      `${fmt(s.add.rate)} jobs/s = ${fmt(s.add.rate / ceiling, 2)}× ceiling (${fmt(s.add.rate / sameSize, 2)}× same-size)`,
      `≥ ${TARGETS.addRatioToCeiling}× ceiling: ${verdict(pass.batchedAdd)}`,
    ],
    [`single add: add(), ${N.singleInFlight} in flight, ${fmt(N.singleJobs)} jobs`, `${fmt(s.single.rate)} jobs/s`, ''],
    [
      `memory per delayed job (${fmt(N.memoryJobs)} jobs)`,
      `${fmt(s.memory.bytesPerJob, 1)} bytes`,
      `≤ ${TARGETS.bytesPerJob} bytes: ${verdict(pass.memory)}`,
    ],
    [
      `moveDue: ${fmt(N.dueJobs)} jobs due at once, sweep() loop`,
      `${fmt(s.move.rate)} jobs/s, ${s.move.sweeps} calls`,
      `≥ ${fmt(TARGETS.moveJobsPerSec)} jobs/s: ${verdict(pass.moveDueRate)}`,
    ],
    [
      '  slowest single command (SLOWLOG ≥ 1 ms)',
      slowest ? `${fmt(slowest.durationUs)} µs (${slowest.command})` : 'none ≥ 1 ms',
      `≤ ${TARGETS.maxScriptCallMs} ms: ${verdict(pass.moveDueMaxCall)}`,
    ],
    [
      '  FCALL mean / histogram max bucket',
      `${fmt(s.move.usPerCall, 1)} µs / ≤ ${s.move.histogram.maxBucketUs ?? '?'} µs`,
      '',
    ],
    [`claim(100) + ack, ${N.claimLoops} loops`, `${fmt(s.claim.rate)} jobs/s`, ''],
    [
      `slowest script call with ${fmt(N.bigBodyBytes)}-byte bodies (step 7)`,
      `${fmt(s.bigMax, 2)} ms`,
      `≤ ${TARGETS.maxScriptCallMs} ms: ${verdict(pass.bigBodiesMaxCall)}`,
    ],
  ];
}

async function main(): Promise<void> {
  const body = makeBody(1);
  const bodyText = JSON.stringify(body);
  const started = Date.now();
  await withRedis(async (server, redis) => {
    const queue = queueOn(redis, { [TOPIC]: { concurrency: 10_000 } });
    const machine = await machineOf(redis, server.pid);
    console.log(machineLine(machine));
    console.log(`counts: ${JSON.stringify(N)}; body ${Buffer.byteLength(bodyText)} bytes of JSON`);
    if (ONLY_BODIES) return bodiesOnly(redis, machine, started);
    const ceiling = await ceilings(redis, server.port, bodyText);
    const add = await batchedAdd(redis, queue, body, ceiling);
    const single = await singleAdd(redis, queue, body);
    const mem = await memory(redis, queue);
    const move = await moveDue(redis, queue);
    printMoveDue(move, queue.config.moveLimit);
    const claim = await claimAck(redis, queue);
    const steps: Steps = { ceiling, add, single, memory: mem, move, claim, ...(await bigBodies(redis)) };
    const results = resultsOf(steps);
    const pass = passOf(steps, results);
    printTable(rowsOf(steps, pass));
    const at = new Date(started).toISOString();
    printJson({ bench: 'engine', at, machine, counts: N, bodyBytes: BODY_BYTES, results, targets: TARGETS, pass });
  });
}

runBench(main);
