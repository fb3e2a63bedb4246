/**
 * Floor benchmark (not a test): what a request and the Lua primitives the scripts are made of cost
 * Redis on this machine, so a per-job figure of the other benchmarks can be read against the least
 * it could be. Starts its own redis-server (nothing persisted), prints two Markdown tables and one
 * JSON line, and stops redis by PID.
 *
 *   npm run bench:floor
 *
 * 1. Requests: BENCH_REQUESTS (5,000) sent one at a time (each waits for the answer before the next,
 *    as a Lambda's one request does), and the same in pipelines of 10: Redis CPU (INFO cpu, user +
 *    sys) per request, and the command's own time (INFO commandstats). PING, GET of a missing key,
 *    and FCALL of an empty function.
 * 2. Lua primitives: each done 100 times in one FCALL, BENCH_CALLS (300) calls; the time per
 *    primitive is the call's Redis time (commandstats) less an empty loop's, ÷ 100, the least of
 *    three rounds. The data are a job's: a 16-slot header as the scripts keep it (msgpack) and a
 *    200-byte body; ids `j<i>`. Each call also builds that header and record once (the empty
 *    loop's call pays it too).
 */
import type { Redis } from 'ioredis';
import { envInt } from './harness/env';
import { runBench } from './harness/lifecycle';
import { commandStats, redisCpu } from './harness/measure';
import { withRedis } from './harness/redis';
import { fmt, machineOf, printJson, printTable, round } from './harness/report';

const N = { requests: envInt('BENCH_REQUESTS', 5_000), calls: envInt('BENCH_CALLS', 300) };
const ROUNDS = 3;

const SETUP = `local h0 = { 1, 1795663828693, 1795663827693, 0, false, false, false, false, false, 1795663827693, false, false, false, 0, 2998711384684, false }
local body = string.rep('x', 200)
local rec = cmsgpack.pack(h0) .. body`;

/** Lua primitives, each looped 100 times; `empty` is the loop alone. */
const PRIMITIVES: Record<string, { what: string; loop: string }> = {
  empty: { what: 'the loop alone (subtracted from the others)', loop: `for i = 1, 100 do end` },
  concat: {
    what: "a short string made ('nonce' .. '.' .. i)",
    loop: `for i = 1, 100 do local c = 'abcdef0123456789' .. '.' .. i end`,
  },
  unpack: {
    what: 'cmsgpack.unpack_one of a record, and the body cut off it',
    loop: `for i = 1, 100 do local o, h = cmsgpack.unpack_one(rec) local b = string.sub(rec, o + 1) end`,
  },
  pack: {
    what: 'cmsgpack.pack of a header, the body appended',
    loop: `for i = 1, 100 do local s = cmsgpack.pack(h0) .. body end`,
  },
  hset: {
    what: "redis.call('HSET') of a new record",
    loop: `for i = 1, 100 do redis.call('HSET', KEYS[1], 'j' .. i, rec) end`,
  },
  hget: { what: "redis.call('HGET') of a record", loop: `for i = 1, 100 do redis.call('HGET', KEYS[1], 'j' .. i) end` },
  zadd: {
    what: "redis.call('ZADD') of a new id with an epoch-ms score",
    loop: `for i = 1, 100 do redis.call('ZADD', KEYS[2], 1795663828693 + i, 'j' .. i) end`,
  },
  zscore: {
    what: "redis.call('ZSCORE') of a member (of 100)",
    loop: `for i = 1, 100 do redis.call('ZSCORE', KEYS[2], 'j' .. i) end`,
  },
  time: { what: "redis.call('TIME')", loop: `for i = 1, 100 do redis.call('TIME') end` },
  row: {
    what: "a claim's reply row (8 values, the body among them), returned",
    loop: `local r = {} for i = 1, 100 do r[i] = { 'j' .. i, 1, 1795663828693, 1795663828693, false, body, false, 'n.' .. i } end do return r end`,
  },
};

interface RequestRow {
  name: string;
  alone: number;
  pipelined: number;
  commandUs: number;
}

/** Redis CPU µs `fn` cost (INFO cpu, user + sys). */
async function cpuUsOf(redis: Redis, fn: () => Promise<void>): Promise<number> {
  const before = (await redisCpu(redis)).seconds;
  await fn();
  return ((await redisCpu(redis)).seconds - before) * 1e6;
}

/** The mean Redis time of a call of `command`, µs (commandstats since the last RESETSTAT). */
async function commandUs(redis: Redis, command: string): Promise<number> {
  const stat = (await commandStats(redis)).get(command);
  return stat ? stat.usec / stat.calls : NaN;
}

/** 1. Requests: each sent N.requests times one at a time, then in pipelines of 10; the least of ROUNDS rounds. */
async function requests(r: Redis): Promise<RequestRow[]> {
  const requests: { name: string; send: () => Promise<unknown>; command: string }[] = [
    { name: 'PING', send: () => r.ping(), command: 'ping' },
    { name: 'GET of a missing key', send: () => r.get('missing'), command: 'get' },
    { name: 'FCALL of an empty function', send: () => r.call('FCALL', 'noop', 0), command: 'fcall' },
  ];
  const rows: RequestRow[] = [];
  for (const q of requests) {
    const cpu = { alone: Infinity, pipelined: Infinity, command: Infinity };
    for (let round = 0; round < ROUNDS; round++) {
      await r.config('RESETSTAT');
      const alone = await cpuUsOf(r, async () => {
        for (let i = 0; i < N.requests; i++) await q.send();
      });
      cpu.alone = Math.min(cpu.alone, alone);
      cpu.command = Math.min(cpu.command, await commandUs(r, q.command));
      const pipelined = await cpuUsOf(r, async () => {
        for (let i = 0; i < N.requests; i += 10) await Promise.all(Array.from({ length: 10 }, () => q.send()));
      });
      cpu.pipelined = Math.min(cpu.pipelined, pipelined);
    }
    rows.push({
      name: q.name,
      alone: cpu.alone / N.requests,
      pipelined: cpu.pipelined / N.requests,
      commandUs: cpu.command,
    });
  }
  return rows;
}

/** A library of an empty function (`noop`) and one function per primitive. */
async function loadLibrary(r: Redis): Promise<void> {
  let library = "#!lua name=floor\nredis.register_function('noop', function() return 1 end)\n";
  for (const [name, p] of Object.entries(PRIMITIVES))
    library += `redis.register_function('${name}', function(KEYS, ARGV)\n${SETUP}\n${p.loop}\nreturn 1 end)\n`;
  await r.call('FUNCTION', 'LOAD', library);
}

/** 2. Lua primitives: the least FCALL time of each, over ROUNDS rounds of N.calls calls (µs a call). */
async function primitiveCalls(r: Redis): Promise<Record<string, number>> {
  const callUs: Record<string, number> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of Object.keys(PRIMITIVES)) {
      if (name === 'hset') await r.del('{f}h'); // then hget reads what hset wrote
      if (name === 'zadd') await r.del('{f}z'); // then zscore reads what zadd wrote
      await r.config('RESETSTAT');
      for (let i = 0; i < N.calls; i++) await r.call('FCALL', name, 2, '{f}h', '{f}z');
      callUs[name] = Math.min(callUs[name] ?? Infinity, await commandUs(r, 'fcall'));
    }
  }
  return callUs;
}

function printTables(requestRows: readonly RequestRow[], primitiveUs: Record<string, number>): void {
  printTable(
    requestRows.map((q) => [q.name, `${fmt(q.alone, 1)} µs`, `${fmt(q.pipelined, 1)} µs`, `${fmt(q.commandUs, 1)} µs`]),
    ['request', 'Redis CPU a request, one at a time', 'in pipelines of 10', 'the command itself (commandstats)'],
  );
  console.log('');
  printTable(
    Object.entries(PRIMITIVES)
      .filter(([name]) => name !== 'empty')
      .map(([name, p]) => [name, p.what, `${fmt(primitiveUs[name]!, 2)} µs`]),
    ['Lua primitive', 'what', 'Redis time each (warm, in a loop)'],
  );
}

async function main(): Promise<void> {
  await withRedis(async (server, redis) => {
    await loadLibrary(redis);
    const requestRows = await requests(redis);
    const callUs = await primitiveCalls(redis);
    const primitiveUs = Object.fromEntries(
      Object.keys(PRIMITIVES).map((name) => [name, (callUs[name]! - callUs.empty!) / 100]),
    );
    printTables(requestRows, primitiveUs);
    printJson({
      bench: 'floor',
      ...N,
      requests: requestRows.map((q) => ({
        ...q,
        alone: round(q.alone, 1),
        pipelined: round(q.pipelined, 1),
        commandUs: round(q.commandUs, 1),
      })),
      primitivesUs: Object.fromEntries(Object.entries(primitiveUs).map(([k, v]) => [k, round(v, 2)])),
      emptyLoopCallUs: round(callUs.empty!, 1),
      machine: await machineOf(redis, server.pid),
    });
  });
}

runBench(main);
