/**
 * Lua load benchmark (not a test): per script, the bytes of the full text Redis runs, the locals it
 * declares at its top level (Lua allows 200 in a function) and the time of SCRIPT LOAD, which
 * compiles it: a git ref's scripts ("before") against the working tree's ("after"). Starts its own
 * redis-server (nothing persisted), prints a Markdown table and one JSON line, and stops redis by PID.
 *
 *   npm run bench:lua-load -- [ref]        (ref: HEAD when not given)
 *
 * The ref's texts are rebuilt from `git show <ref>:lua/...`: by their `--- @include` lines when
 * its scripts have them (includeOrder over the ref's lua/includes/), else as lua/includes/job.lua
 * then the script (the rule before includes by concern). The working tree's are scriptText's.
 * Each load follows a SCRIPT FLUSH SYNC, so it compiles; a script's two texts take turns. Times
 * are medians of BENCH_LOADS (200) loads each: Redis's own (SLOWLOG, every command logged) and
 * the client's round trip on loopback.
 */
import { execFileSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { SCRIPTS, includeOrder, scriptText, type ScriptName } from '../lib/testing';
import { envInt } from './harness/env';
import { runBench } from './harness/lifecycle';
import { median } from './harness/measure';
import { logCommands, withRedis } from './harness/redis';
import { describeMachine, printJson, printTable } from './harness/report';

const REF = process.argv[2] ?? 'HEAD';
const LOADS = envInt('BENCH_LOADS', 200);
const WARMUP = 20; // loads per text before the measured ones: the first allocate the Lua state's memory

function git(...args: string[]): string {
  return execFileSync('git', args, { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
}

/** The full text of every script at `ref`, by name; null for a script the ref does not have. */
function textsAt(ref: string): Record<ScriptName, string | null> {
  const listed = (path: string) =>
    git('ls-tree', '--name-only', `${ref}:${path}`)
      .split('\n')
      .filter((f) => f.endsWith('.lua'));
  const scripts = new Set(listed('lua'));
  const includes = Object.fromEntries(
    listed('lua/includes').map((f) => [f.slice(0, -'.lua'.length), git('show', `${ref}:lua/includes/${f}`)]),
  );
  const sources = Object.fromEntries(
    (Object.keys(SCRIPTS) as ScriptName[]).map((name) => [
      name,
      scripts.has(SCRIPTS[name].file) ? git('show', `${ref}:lua/${SCRIPTS[name].file}`) : null,
    ]),
  ) as Record<ScriptName, string | null>;
  const byConcern = Object.values(sources).some((source) => source?.includes('\n--- @include "'));
  const full = (name: ScriptName, source: string) =>
    byConcern
      ? [...includeOrder(source, includes, SCRIPTS[name].file).map((include) => includes[include]), source].join('\n')
      : `${includes.job}\n${source}`;
  return Object.fromEntries(
    Object.entries(sources).map(([name, source]) => [name, source === null ? null : full(name as ScriptName, source)]),
  ) as Record<ScriptName, string | null>;
}

/** How many locals a Lua text declares at its top level (statements at the start of a line). */
function topLevelLocals(text: string): number {
  const code = text.replace(/--\[\[[\s\S]*?\]\]/g, '').replace(/--[^\n]*/g, '');
  return [...code.matchAll(/^local\s+(?:function\s+\w+|([\w\s,]+?)\s*(?:=|$))/gm)].reduce(
    (n, m) => n + (m[1] ? m[1].split(',').length : 1),
    0,
  );
}

interface Side {
  bytes: number;
  locals: number;
  redisUs: number;
  roundTripUs: number;
}

/** Loads `text` after a flush; Redis's time of the load (its SLOWLOG entry) and the round trip, in µs. */
async function loadOnce(redis: Redis, text: string): Promise<[number, number]> {
  await redis.call('SCRIPT', 'FLUSH', 'SYNC');
  const start = performance.now();
  await redis.call('SCRIPT', 'LOAD', text);
  const roundTrip = (performance.now() - start) * 1000;
  const [[, , us, args]] = (await redis.call('SLOWLOG', 'GET', '1')) as [[number, number, number, string[]]];
  if (args[0]?.toUpperCase() !== 'SCRIPT' || args[1]?.toUpperCase() !== 'LOAD')
    throw new Error(`SLOWLOG's last entry is ${args.slice(0, 2).join(' ')}, not SCRIPT LOAD`);
  return [us, roundTrip];
}

async function measure(redis: Redis, texts: readonly string[]): Promise<Side[]> {
  const redisUs = texts.map((): number[] => []);
  const roundTripUs = texts.map((): number[] => []);
  for (let i = 0; i < WARMUP + LOADS; i++) {
    // alternate which text goes first, so neither always follows the other's flush
    const order = i % 2 ? texts.map((_, j) => texts.length - 1 - j) : texts.map((_, j) => j);
    for (const j of order) {
      const [us, roundTrip] = await loadOnce(redis, texts[j]!);
      if (i >= WARMUP) {
        redisUs[j]!.push(us);
        roundTripUs[j]!.push(roundTrip);
      }
    }
  }
  return texts.map((text, j) => ({
    bytes: Buffer.byteLength(text),
    locals: topLevelLocals(text),
    redisUs: median(redisUs[j]!),
    roundTripUs: Math.round(median(roundTripUs[j]!)),
  }));
}

const fmtInt = (n: number) => Math.round(n).toLocaleString('en-US');
const change = (before: number, after: number) =>
  `${after >= before ? '+' : ''}${Math.round(((after - before) / before) * 100)} %`;

type Result = { script: ScriptName; before: Side | null; after: Side };

/** Every script's text at REF ("before", when the ref has it) and in the working tree ("after"), measured in turn. */
async function measureAll(redis: Redis, before: Record<ScriptName, string | null>): Promise<Result[]> {
  const results: Result[] = [];
  for (const name of Object.keys(SCRIPTS) as ScriptName[]) {
    const old = before[name];
    const sides = await measure(redis, old === null ? [scriptText(name)] : [old, scriptText(name)]);
    results.push({ script: name, before: old === null ? null : sides[0]!, after: sides.at(-1)! });
  }
  return results;
}

/** A row a script, and a total row over the scripts both sides have. */
function rowsOf(results: readonly Result[]): string[][] {
  const rows = results.map(({ script, before: b, after: a }) => [
    script,
    b ? fmtInt(b.bytes) : '—',
    fmtInt(a.bytes),
    b ? change(b.bytes, a.bytes) : '',
    b ? String(b.locals) : '—',
    String(a.locals),
    b ? fmtInt(b.redisUs) : '—',
    fmtInt(a.redisUs),
    b ? change(b.redisUs, a.redisUs) : '',
    b ? fmtInt(b.roundTripUs) : '—',
    fmtInt(a.roundTripUs),
  ]);
  const both = results.filter((r) => r.before !== null) as { script: ScriptName; before: Side; after: Side }[];
  const sum = (side: 'before' | 'after', field: keyof Side) => both.reduce((n, r) => n + r[side][field], 0);
  const max = (side: 'before' | 'after') => Math.max(...both.map((r) => r[side].locals));
  rows.push([
    `**total** (${both.length} scripts; locals: max)`,
    fmtInt(sum('before', 'bytes')),
    fmtInt(sum('after', 'bytes')),
    change(sum('before', 'bytes'), sum('after', 'bytes')),
    String(max('before')),
    String(max('after')),
    fmtInt(sum('before', 'redisUs')),
    fmtInt(sum('after', 'redisUs')),
    change(sum('before', 'redisUs'), sum('after', 'redisUs')),
    fmtInt(sum('before', 'roundTripUs')),
    fmtInt(sum('after', 'roundTripUs')),
  ]);
  return rows;
}

const HEAD = [
  'script',
  'bytes before',
  'bytes after',
  'Δ bytes',
  'locals before',
  'locals after',
  'LOAD µs before',
  'LOAD µs after',
  'Δ LOAD',
  'round trip µs before',
  'round trip µs after',
];

async function main(): Promise<void> {
  const base = git('rev-parse', '--short', REF).trim();
  const before = textsAt(REF);
  await withRedis(async (server, redis) => {
    await logCommands(redis, 0);
    const machine = describeMachine((await redis.call('INFO', 'server')) as string, server.pid);
    const results = await measureAll(redis, before);
    console.log(
      `SCRIPT LOAD after SCRIPT FLUSH, median of ${LOADS} loads per text; before: ${REF} (${base}), after: the working tree`,
    );
    console.log(
      `machine: ${machine.cpus} × ${machine.cpuModel}, ${machine.os}, node ${machine.node}, redis ${machine.redis}`,
    );
    printTable(rowsOf(results), HEAD);
    printJson({ bench: 'lua-load', at: new Date().toISOString(), machine, ref: REF, base, loads: LOADS, results });
  });
}

runBench(main);
