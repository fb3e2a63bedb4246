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
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { resolveQueueConfig } from '../lib/core/queue-config';
import { MAX_BODY_BYTES } from '../lib/core/limits';
import { queueOf } from '../test/support/queue';
import { Engine, type Caller } from '../lib/engine';
import { type ClaimedJob } from '../lib/engine';
import { startRedis, type RedisProcess } from '../test/support/redis';
import { describeMachine, envInt, fmt, info, pool, printTable, scriptNamer } from './env';
import { topicKeys } from '../lib/testing';

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
  const pad = BODY_BYTES - Buffer.byteLength(JSON.stringify(base));
  if (pad < 0) throw new Error('body base is longer than BODY_BYTES');
  const body = { ...base, note: 'x'.repeat(pad) };
  const bytes = Buffer.byteLength(JSON.stringify(body));
  if (bytes !== BODY_BYTES) throw new Error(`body is ${bytes} bytes, not ${BODY_BYTES}`);
  return body;
}

const pad6 = (n: number) => String(n).padStart(6, '0');
const seconds = (ms: number) => ms / 1000;

/** Runs a child process to completion; kills it by PID if this process is interrupted meanwhile. */
function run(cmd: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const onSignal = () => child.pid && process.kill(child.pid, 'SIGTERM');
    process.once('SIGINT', onSignal);
    child.once('error', reject);
    child.once('close', (code) => {
      process.off('SIGINT', onSignal);
      resolve({ code, stdout, stderr });
    });
  });
}

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
      return { durationUs, command: `FCALL ${script.replace(/^dq_[0-9a-f]+_/, '')} ${keys.slice(0, 2).join(' ')} …` };
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

async function redisCpuSeconds(redis: Redis): Promise<number> {
  const text = await redis.info('cpu');
  return Number(info(text, 'used_cpu_user') ?? 0) + Number(info(text, 'used_cpu_sys') ?? 0);
}

/** Busy CPU seconds of the whole machine so far (Linux /proc/stat), or undefined elsewhere. */
function machineBusySeconds(): number | undefined {
  try {
    const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
    const [user, nice, system, , , irq, softirq, steal] = fields.map(Number) as number[];
    return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) / 100; // USER_HZ
  } catch {
    return undefined;
  }
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
  const redisCpu = await redisCpuSeconds(redis);
  return { redisCpu, nodeCpu: process.cpuUsage(), machineBusy: machineBusySeconds(), t0: performance.now() };
}

/**
 * Ends timing a step and says where its wall time went: redis-server's CPU (INFO cpu), the part
 * of it inside scripts (commandstats usec of FCALL, EVALSHA and EVAL), and this Node process's CPU.
 */
async function measured(redis: Redis, m: Mark) {
  const wallMs = performance.now() - m.t0;
  const machineEnd = machineBusySeconds();
  const nodeCpu = process.cpuUsage(m.nodeCpu);
  const redisCpuS = (await redisCpuSeconds(redis)) - m.redisCpu;
  const stats = await redis.info('commandstats');
  let scriptUs = 0;
  let calls = 0;
  for (const name of ['fcall', 'evalsha', 'eval']) {
    const line = info(stats, `cmdstat_${name}`) ?? '';
    scriptUs += Number(/usec=(\d+)/.exec(line)?.[1] ?? 0);
    calls += Number(/calls=(\d+)/.exec(line)?.[1] ?? 0);
  }
  const share = (ms: number) => Number((ms / wallMs).toFixed(2));
  const busy = {
    redisCpu: share(redisCpuS * 1000),
    redisInScripts: share(scriptUs / 1000),
    nodeCpu: share((nodeCpu.user + nodeCpu.system) / 1000),
    // CPU of every other process on the machine (other work, and redis-benchmark in the ceiling)
    otherCpu:
      m.machineBusy === undefined || machineEnd === undefined
        ? null
        : Math.max(
            0,
            share((machineEnd - m.machineBusy) * 1000 - redisCpuS * 1000 - (nodeCpu.user + nodeCpu.system) / 1000),
          ),
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

/** One row of step 7: every call of one script in one phase, with its Redis time (ms). */
interface ScriptCalls {
  phase: string;
  script: string;
  ms: number[];
}

/** True for step 7's reference row, a plain command rather than a script. */
const isReference = (script: string) => script.endsWith('(no script: reference)');

/** The `q` quantile (0..1) of sorted `values`, nearest rank. */
const quantile = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? 0;

/**
 * Step 7: every state change and read with bodies of `bodyBytes` (the largest a configuration may
 * allow, by default), `jobs` of them. Each phase's script calls are read back from SLOWLOG
 * (slowlog-log-slower-than 0 logs every command with its duration in µs, as Redis measured it);
 * an EVALSHA is named by the SHA1 of each script's text, an EVAL by its length. ioredis sends a
 * script's first call on a connection as EVAL, which compiles it: those calls count too.
 */
async function bigBodies(redis: Redis, jobs: number, bodyBytes: number): Promise<ScriptCalls[]> {
  const topic = 'bench-big';
  let now = Date.UTC(2030, 0, 1);
  const config = resolveQueueConfig({
    topics: { [topic]: { concurrency: 10_000, maxAttempts: 1, ttr: 30 } },
    maxBodyBytes: bodyBytes,
    retention: 3600,
  });
  const queue = queueOf(new Engine(redis, config, { clock: () => now, random: () => 0 }));
  const body = { pad: 'x'.repeat(bodyBytes - Buffer.byteLength(JSON.stringify({ pad: '' }))) };
  if (Buffer.byteLength(JSON.stringify(body)) !== bodyBytes) throw new Error('big body has the wrong size');
  // EVALSHA names its script by digest; an EVAL (ioredis sends one for a script's first call on a
  // connection) carries the text, which SLOWLOG cuts to 128 bytes and "... (N more bytes)": every
  // script starts with the same helpers, so the text's length names it
  const names = scriptNamer();
  const scriptOf = ([command, first]: string[]): string | undefined => {
    if (/^fcall$/i.test(command ?? '')) return String(first).replace(/^dq_[0-9a-f]+_/, '');
    if (/^evalsha$/i.test(command ?? '')) return names.bySha(String(first)) ?? `unknown ${String(first).slice(0, 8)}`;
    if (!/^eval$/i.test(command ?? '')) return undefined;
    return names.byEvalText(String(first)) ?? 'unknown EVAL';
  };
  await redis.config('SET', 'slowlog-log-slower-than', '0');
  await redis.config('SET', 'slowlog-max-len', '100000');
  const rows: ScriptCalls[] = [];
  /** Runs `fn` and keeps its script calls (and, given `plain`, its calls of that command from no script). */
  const phase = async (name: string, fn: () => Promise<void>, plain?: string) => {
    await redis.call('SLOWLOG', 'RESET');
    await fn();
    const entries = (await redis.call('SLOWLOG', 'GET', '-1')) as [number, number, number, string[], string][];
    const per = new Map<string, ScriptCalls>();
    for (const [, , us, args, client] of entries) {
      // a command a script ran is logged too, from the scripts' own client (no address)
      const fromClient = /^\d[\d.]*:\d+$/.test(client ?? '');
      const script =
        plain && fromClient && args[0]?.toUpperCase() === plain ? `${plain} (no script: reference)` : scriptOf(args);
      if (script === undefined) continue;
      const row = per.get(script) ?? { phase: name, script, ms: [] };
      row.ms.push(us / 1000);
      per.set(script, row);
    }
    rows.push(...per.values());
  };
  const ids = Array.from({ length: jobs }, (_, i) => `big-${String(i).padStart(5, '0')}`);
  const claimAll = async () => {
    const claimed: ClaimedJob[] = [];
    for (let i = 0; i <= jobs && claimed.length < jobs; i++) {
      const got = await queue.engine.claim(topic, jobs - claimed.length, 1e9);
      if (got.length === 0) break;
      claimed.push(...got);
    }
    if (claimed.length !== jobs) throw new Error(`claimed ${claimed.length} of ${jobs}`);
    return claimed;
  };
  const sweepAll = async () => {
    for (let i = 0; i < 1000; i++) if (!(await queue.engine.sweep()).more) return;
  };
  let claimed: ClaimedJob[] = [];
  const third = Math.floor(jobs / 3);

  await phase('add (addMany of up to 500)', async () => {
    for (let i = 0; i < jobs; i += 500) {
      const { outcomes } = await queue.addMany(
        ids.slice(i, i + 500).map((id) => ({ topic, id, delay: 0, body })),
        PRODUCER,
      );
      if (!outcomes.every((o) => o.status === 'created')) throw new Error('an add was not created');
    }
  });
  await phase('moveDue: due jobs to ready', sweepAll);
  await phase('get', async () => {
    for (const id of ids.slice(0, 10)) if (!(await queue.get(topic, id))) throw new Error(`${id} missing`);
  });
  // the same body read with no script: what moving one such body costs Redis on this machine
  const reference = `dq:bench-reference:${topic}`;
  await redis.hset(reference, 'body', JSON.stringify(body));
  await phase(
    'reference: plain HGET of one body, 100 times',
    async () => {
      for (let i = 0; i < 100; i++) await redis.hget(reference, 'body');
    },
    'HGET',
  );
  await redis.del(reference);
  await phase('claim every job', async () => void (claimed = await claimAll()));
  await phase('start every attempt', async () => {
    if (!(await queue.engine.start(topic, claimed)).every(Boolean)) throw new Error('an attempt was not live');
  });
  await phase('ack a third', async () => {
    for (const j of claimed.slice(0, third))
      if ((await queue.engine.ack(topic, j.id, j)) !== 'done') throw new Error('ack refused');
  });
  await phase('fail a third (dead: maxAttempts 1)', async () => {
    for (const j of claimed.slice(third, 2 * third))
      if ((await queue.engine.fail(topic, j.id, j, 'bench')).outcome !== 'dead') throw new Error('fail refused');
  });
  now += 31_000; // past the ttr of the last third
  await phase('moveDue: the last third times out', sweepAll);
  await phase('listDead (pages of 100)', async () => {
    let listed = 0;
    for (
      let page = await queue.listDead(topic, { limit: 100 });
      ;
      page = await queue.listDead(topic, { limit: 100, after: page.next! })
    ) {
      listed += page.jobs.length;
      if (page.next === null) break;
    }
    if (listed !== jobs - third) throw new Error(`listed ${listed} dead jobs of ${jobs - third}`);
  });
  await phase('redrive every dead job', async () => {
    if ((await queue.redrive(topic, { count: jobs })).redriven !== jobs - third) throw new Error('redrive missed jobs');
  });
  await phase('moveDue: redriven jobs to ready', sweepAll);
  await phase('claim, then release after a failed invoke', async () => {
    const again = [];
    for (
      let got = await queue.engine.claim(topic, jobs, 1e9);
      got.length > 0;
      got = await queue.engine.claim(topic, jobs, 1e9)
    )
      again.push(...got);
    if ((await queue.engine.release(again, 'bench')) !== again.length) throw new Error('release missed jobs');
  });
  await phase('reschedule with a new body, then cancel', async () => {
    await queue.reschedule(topic, ids.at(-1)!, { delay: 60, body });
    await queue.cancel(topic, ids.at(-1)!);
  });
  await redis.config('SET', 'slowlog-log-slower-than', '1000');
  return rows;
}

/**
 * Per script, over every phase of step 7: calls, median, 99th percentile and slowest call (ms), and the phase of the
 * slowest.
 */
function bigSummary(
  rows: ScriptCalls[],
): Record<string, { calls: number; p50Ms: number; p99Ms: number; maxMs: number; phase: string }> {
  const out: Record<string, { calls: number; p50Ms: number; p99Ms: number; maxMs: number; phase: string }> = {};
  const round = (ms: number) => Number(ms.toFixed(3));
  for (const script of new Set(rows.map((r) => r.script))) {
    const mine = rows.filter((r) => r.script === script);
    const all = mine.flatMap((r) => r.ms).sort((a, b) => a - b);
    const slowest = mine.reduce((a, b) => (Math.max(...b.ms) > Math.max(...a.ms) ? b : a));
    out[script] = {
      calls: all.length,
      p50Ms: round(quantile(all, 0.5)),
      p99Ms: round(quantile(all, 0.99)),
      maxMs: round(all.at(-1) ?? 0),
      phase: slowest.phase,
    };
  }
  return out;
}

function printBigBodies(rows: ScriptCalls[]): void {
  console.log(
    `7. script calls with ${fmt(N.bigBodyBytes)}-byte bodies, ${fmt(N.bigJobs)} jobs (SLOWLOG, every call); load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}:`,
  );
  for (const r of rows) {
    const sorted = [...r.ms].sort((a, b) => a - b);
    console.log(
      `   ${r.phase}: ${r.script} ${sorted.length} calls, median ${fmt(quantile(sorted, 0.5), 2)} ms, slowest ${fmt(sorted.at(-1) ?? 0, 2)} ms, all ${fmt(
        sorted.reduce((a, b) => a + b, 0),
        1,
      )} ms`,
    );
  }
  const summary = bigSummary(rows);
  const table: string[][] = Object.entries(summary)
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
  const head = ['script', 'calls', 'median', 'p99', 'slowest call', 'slowest in phase', 'target (slowest)'];
  printTable(table, head);
}

async function main(): Promise<void> {
  const body = makeBody(1);
  const bodyText = JSON.stringify(body);
  const config = resolveQueueConfig({ topics: { [TOPIC]: { concurrency: 10_000 } } });
  const started = Date.now();

  let server: RedisProcess | undefined;
  let redis: Redis | undefined;
  try {
    server = await startRedis({ args: ['--save', '', '--appendonly', 'no'] });
    redis = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: null });
    const queue = queueOf(new Engine(redis, config));
    const serverInfo = await redis.info('server');
    const machine = describeMachine(serverInfo, server.pid);
    console.log(
      `machine: ${machine.cpus} CPUs (${machine.cpuModel}), ${machine.memoryGiB} GiB, ${machine.os}, node ${machine.node}, redis ${machine.redis}`,
    );
    console.log(`counts: ${JSON.stringify(N)}; body ${Buffer.byteLength(bodyText)} bytes of JSON`);
    if (ONLY_BODIES) {
      const big = await bigBodies(redis, N.bigJobs, N.bigBodyBytes);
      printBigBodies(big);
      console.log(
        JSON.stringify({
          bench: 'engine',
          step: 'bodies',
          at: new Date(started).toISOString(),
          machine,
          counts: { bigJobs: N.bigJobs, bigBodyBytes: N.bigBodyBytes },
          bigBodies: bigSummary(big),
          targets: { maxScriptCallMs: TARGETS.maxScriptCallMs },
        }),
      );
      return;
    }

    // 1. Ceiling: raw HSET + ZADD in one EVALSHA, pipelined by redis-benchmark (-n 1,000,000).
    // The hash and zset grow to about a million members, which slows Redis down; a second run
    // with as many requests as the batched add writes jobs is printed as a same-size reference.
    const sha = (await redis.script(
      'LOAD',
      "redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])",
    )) as string;
    const ceilingRun = async (requests: number) => {
      const ceilingMark = await mark(redis!);
      const rb = await run('redis-benchmark', [
        '-p',
        String(server!.port),
        '-P',
        '64',
        '-c',
        '50',
        '-n',
        String(requests),
        '-r',
        '100000000',
        '-q',
        'evalsha',
        sha,
        '2',
        'h',
        'z',
        'm:__rand_int__',
        bodyText,
        '__rand_int__',
      ]);
      const rates = [...rb.stdout.matchAll(/([\d.]+) requests per second/g)].map((m) => Number(m[1]));
      const opsPerSec = rates.at(-1);
      const split = await measured(redis!, ceilingMark);
      if (rb.code !== 0 || opsPerSec === undefined)
        throw new Error(`redis-benchmark failed (exit ${rb.code}): ${rb.stdout}${rb.stderr}`);
      const members = { hlen: await redis!.hlen('h'), zcard: await redis!.zcard('z') };
      if (members.hlen === 0 || members.zcard === 0)
        throw new Error(`redis-benchmark wrote nothing: ${JSON.stringify(members)}`);
      await redis!.flushall();
      // give the freed pages back to the OS now, not while the next step runs
      await redis!.call('MEMORY', 'PURGE');
      const text = `${fmt(opsPerSec)} ops/s (-n ${fmt(requests)}: hash ${fmt(members.hlen)} members, zset ${fmt(members.zcard)}); ${split.text.replace(/; Node CPU [^;]*/, '').replace('other processes', 'redis-benchmark and other processes')}`;
      return { opsPerSec, split, text };
    };
    const ceilingResult = await ceilingRun(N.ceilingRequests);
    const ceiling = ceilingResult.opsPerSec;
    const ceilingSplit = ceilingResult.split;
    console.log(`1. ceiling: ${ceilingResult.text}`);
    const sameSize = await ceilingRun(N.addJobs);
    console.log(`1b. same-size reference: ${sameSize.text}`);

    // 2. Batched add: addMany(500 jobs), several batches in flight.
    const batches = Math.ceil(N.addJobs / BATCH);
    let created = 0;
    let m = await mark(redis);
    await pool(batches, N.batchesInFlight, async (b) => {
      const jobs = [];
      for (let i = b * BATCH; i < Math.min(N.addJobs, (b + 1) * BATCH); i++) {
        jobs.push({ topic: TOPIC, id: `add-${i}`, delay: Math.random() * 3600, body });
      }
      const { outcomes } = await queue.addMany(jobs, PRODUCER);
      for (const o of outcomes) if (o.status === 'created') created++;
    });
    const addSplit = await measured(redis, m);
    const addMs = addSplit.wallMs;
    if (created !== N.addJobs) throw new Error(`batched add created ${created} of ${N.addJobs}`);
    const addRate = N.addJobs / seconds(addMs);
    console.log(
      `2. batched add: ${fmt(addRate)} jobs/s (${fmt(N.addJobs)} jobs in ${fmt(addMs)} ms), ${fmt(addRate / ceiling, 2)}× ceiling (${fmt(addRate / sameSize.opsPerSec, 2)}× the same-size reference); ${addSplit.text}`,
    );
    await redis.flushall();

    // 3. Single add, many in flight.
    created = 0;
    m = await mark(redis);
    await pool(N.singleJobs, N.singleInFlight, async (i) => {
      const o = await queue.add({ topic: TOPIC, id: `one-${i}`, delay: Math.random() * 3600, body }, PRODUCER);
      if (o.status === 'created') created++;
    });
    const singleSplit = await measured(redis, m);
    const singleMs = singleSplit.wallMs;
    if (created !== N.singleJobs) throw new Error(`single add created ${created} of ${N.singleJobs}`);
    const singleRate = N.singleJobs / seconds(singleMs);
    console.log(
      `3. single add (${N.singleInFlight} in flight): ${fmt(singleRate)} jobs/s (${fmt(N.singleJobs)} jobs in ${fmt(singleMs)} ms); ${singleSplit.text}`,
    );

    // 4. Memory per delayed job.
    await redis.flushall();
    const usedBefore = Number(info(await redis.info('memory'), 'used_memory'));
    created = 0;
    await pool(Math.ceil(N.memoryJobs / BATCH), N.batchesInFlight, async (b) => {
      const jobs = [];
      for (let i = b * BATCH + 1; i <= Math.min(N.memoryJobs, (b + 1) * BATCH); i++) {
        jobs.push({ topic: TOPIC, id: `order-${pad6(i)}`, delay: 60 + Math.random() * 3600, body: makeBody(i) });
      }
      const { outcomes } = await queue.addMany(jobs, PRODUCER);
      for (const o of outcomes) if (o.status === 'created') created++;
    });
    if (created !== N.memoryJobs) throw new Error(`memory step created ${created} of ${N.memoryJobs}`);
    const usedAfter = Number(info(await redis.info('memory'), 'used_memory'));
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

    // 5. moveDue: every job due at the same instant, swept until nothing more moves.
    await redis.flushall();
    const runAt = Date.now() - 1000;
    created = 0;
    await pool(Math.ceil(N.dueJobs / BATCH), N.batchesInFlight, async (b) => {
      const jobs = [];
      for (let i = b * BATCH + 1; i <= Math.min(N.dueJobs, (b + 1) * BATCH); i++) {
        jobs.push({ topic: TOPIC, id: `order-${pad6(i)}`, runAt, body: makeBody(i) });
      }
      const { outcomes } = await queue.addMany(jobs, PRODUCER);
      for (const o of outcomes) if (o.status === 'created') created++;
    });
    if (created !== N.dueJobs) throw new Error(`moveDue step created ${created} of ${N.dueJobs}`);
    await redis.config('SET', 'slowlog-log-slower-than', '1000');
    await redis.config('SET', 'slowlog-max-len', '1024');
    await redis.config('SET', 'latency-monitor-threshold', '1');
    await redis.call('SLOWLOG', 'RESET');
    await redis.call('LATENCY', 'RESET');
    let moved = 0;
    let sweeps = 0;
    m = await mark(redis); // also resets commandstats and LATENCY HISTOGRAM

    for (;;) {
      const r = await queue.engine.sweep();
      sweeps++;
      moved += r.moved;
      if (!r.more && r.moved === 0) break;
    }
    const moveSplit = await measured(redis, m);
    const moveMs = moveSplit.wallMs;
    const slowlog = describeSlowlog((await redis.call('SLOWLOG', 'GET', '128')) as unknown[]).sort(
      (a, b) => b.durationUs - a.durationUs,
    );
    const latencyLatest = (await redis.call('LATENCY', 'LATEST')) as [string, number, number, number][];
    const scriptStats = info(await redis.info('commandstats'), 'cmdstat_fcall') ?? '';
    const moveUsPerCall = Number(/usec_per_call=([\d.]+)/.exec(scriptStats)?.[1] ?? NaN);
    const moveHistogram = await maxLatencyBucketUs(redis, 'fcall');
    if (moved !== N.dueJobs) throw new Error(`sweeps moved ${moved} of ${N.dueJobs}`);
    const moveRate = moved / seconds(moveMs);
    const slowest = slowlog[0];
    console.log(
      `5. moveDue: ${fmt(moveRate)} jobs/s (${fmt(moved)} jobs in ${fmt(moveMs)} ms, ${sweeps} sweep calls, moveLimit ${config.moveLimit}); ` +
        `FCALL ${fmt(moveUsPerCall, 1)} µs/call; slowlog (≥1 ms): ${slowlog.length} entries` +
        (slowest ? `, slowest ${fmt(slowest.durationUs)} µs: ${slowest.command}` : '') +
        `; LATENCY LATEST: ${latencyLatest.length ? latencyLatest.map(([e, , last, max]) => `${e} latest ${last} ms max ${max} ms`).join(', ') : 'none'}` +
        `; FCALL histogram: ${moveHistogram.calls} calls, highest bucket ≤ ${moveHistogram.maxBucketUs} µs; ${moveSplit.text}`,
    );

    // 6. claim + ack of the ready jobs, several loops.
    let acked = 0;
    let claims = 0;
    let notDone = 0;
    m = await mark(redis);
    await Promise.all(
      Array.from({ length: N.claimLoops }, async () => {
        for (;;) {
          const claimed: ClaimedJob[] = await queue.engine.claim(TOPIC, 100, 1e9);
          claims++;
          if (claimed.length === 0) break;
          const outcomes = await Promise.all(claimed.map((j) => queue.engine.ack(j.topic, j.id, j)));
          for (const o of outcomes)
            if (o === 'done') acked++;
            else notDone++;
        }
      }),
    );
    const claimSplit = await measured(redis, m);
    const claimMs = claimSplit.wallMs;
    if (acked !== N.dueJobs || notDone !== 0)
      throw new Error(`claim+ack acked ${acked} of ${N.dueJobs} (${notDone} not done)`);
    const claimRate = acked / seconds(claimMs);
    console.log(
      `6. claim+ack (${N.claimLoops} loops of claim 100 + acks): ${fmt(claimRate)} jobs/s (${fmt(acked)} jobs in ${fmt(claimMs)} ms, ${claims} claim calls); ${claimSplit.text}`,
    );

    // 7. Every script with maximum-size bodies: the slowest single call of each.
    await redis.flushall();
    await redis.call('MEMORY', 'PURGE');
    const big = await bigBodies(redis, N.bigJobs, N.bigBodyBytes);
    printBigBodies(big);
    const bigMax = Math.max(...big.filter((r) => !isReference(r.script)).flatMap((r) => r.ms));

    const results = {
      ceilingOpsPerSec: Math.round(ceiling),
      batchedAddJobsPerSec: Math.round(addRate),
      batchedAddRatioToCeiling: Number((addRate / ceiling).toFixed(3)),
      sameSizeCeilingOpsPerSec: Math.round(sameSize.opsPerSec),
      batchedAddRatioToSameSizeCeiling: Number((addRate / sameSize.opsPerSec).toFixed(3)),
      singleAddJobsPerSec: Math.round(singleRate),
      bytesPerDelayedJob: Number(bytesPerJob.toFixed(1)),
      memoryUsagePerJob: {
        jobsHash: Number(perKey.jobsHash.toFixed(1)),
        delayedZset: Number(perKey.delayedZset.toFixed(1)),
      },
      moveDueJobsPerSec: Math.round(moveRate),
      moveDueSweeps: sweeps,
      moveDueUsPerCall: moveUsPerCall,
      slowestCommandUs: slowest?.durationUs ?? null,
      slowestCommand: slowest?.command ?? null,
      slowlogEntriesOver1ms: slowlog.length,
      slowlogTop: slowlog.slice(0, 5),
      moveDueEvalshaMaxBucketUs: moveHistogram.maxBucketUs,
      latencyLatest: latencyLatest.map(([event, , latestMs, maxMs]) => ({ event, latestMs, maxMs })),
      claimAckJobsPerSec: Math.round(claimRate),
      bigBodies: bigSummary(big),
      // share of the wall time spent in Redis scripts (commandstats) and in this Node process's CPU
      busy: {
        ceiling: ceilingSplit.busy,
        sameSizeCeiling: sameSize.split.busy,
        batchedAdd: addSplit.busy,
        singleAdd: singleSplit.busy,
        moveDue: moveSplit.busy,
        claimAck: claimSplit.busy,
      },
    };
    const pass = {
      batchedAdd: results.batchedAddRatioToCeiling >= TARGETS.addRatioToCeiling,
      moveDueRate: moveRate >= TARGETS.moveJobsPerSec,
      moveDueMaxCall: (slowest?.durationUs ?? 0) <= TARGETS.maxScriptCallMs * 1000,
      memory: bytesPerJob <= TARGETS.bytesPerJob,
      bigBodiesMaxCall: bigMax <= TARGETS.maxScriptCallMs,
    };
    const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');

    const rows: [string, string, string][] = [
      [
        `ceiling: EVALSHA HSET+ZADD (redis-benchmark -P 64 -c 50 -n ${fmt(N.ceilingRequests)})`,
        `${fmt(ceiling)} ops/s`,
        '',
      ],
      [`  same-size reference (-n ${fmt(N.addJobs)})`, `${fmt(sameSize.opsPerSec)} ops/s`, ''],
      [
        `batched add: addMany(${BATCH}), ${N.batchesInFlight} in flight, ${fmt(N.addJobs)} jobs`,
        `${fmt(addRate)} jobs/s = ${fmt(addRate / ceiling, 2)}× ceiling (${fmt(addRate / sameSize.opsPerSec, 2)}× same-size)`,
        `≥ ${TARGETS.addRatioToCeiling}× ceiling: ${verdict(pass.batchedAdd)}`,
      ],
      [`single add: add(), ${N.singleInFlight} in flight, ${fmt(N.singleJobs)} jobs`, `${fmt(singleRate)} jobs/s`, ''],
      [
        `memory per delayed job (${fmt(N.memoryJobs)} jobs)`,
        `${fmt(bytesPerJob, 1)} bytes`,
        `≤ ${TARGETS.bytesPerJob} bytes: ${verdict(pass.memory)}`,
      ],
      [
        `moveDue: ${fmt(N.dueJobs)} jobs due at once, sweep() loop`,
        `${fmt(moveRate)} jobs/s, ${sweeps} calls`,
        `≥ ${fmt(TARGETS.moveJobsPerSec)} jobs/s: ${verdict(pass.moveDueRate)}`,
      ],
      [
        '  slowest single command (SLOWLOG ≥ 1 ms)',
        slowest ? `${fmt(slowest.durationUs)} µs (${slowest.command})` : 'none ≥ 1 ms',
        `≤ ${TARGETS.maxScriptCallMs} ms: ${verdict(pass.moveDueMaxCall)}`,
      ],
      [
        '  FCALL mean / histogram max bucket',
        `${fmt(moveUsPerCall, 1)} µs / ≤ ${moveHistogram.maxBucketUs ?? '?'} µs`,
        '',
      ],
      [`claim(100) + ack, ${N.claimLoops} loops`, `${fmt(claimRate)} jobs/s`, ''],
      [
        `slowest script call with ${fmt(N.bigBodyBytes)}-byte bodies (step 7)`,
        `${fmt(bigMax, 2)} ms`,
        `≤ ${TARGETS.maxScriptCallMs} ms: ${verdict(pass.bigBodiesMaxCall)}`,
      ],
    ];
    printTable(rows);
    console.log(
      JSON.stringify({
        bench: 'engine',
        at: new Date(started).toISOString(),
        machine,
        counts: N,
        bodyBytes: BODY_BYTES,
        results,
        targets: TARGETS,
        pass,
      }),
    );
  } finally {
    redis?.disconnect();
    await server?.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
