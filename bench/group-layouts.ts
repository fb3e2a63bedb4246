/**
 * What a group's index costs per job in Redis, by layout, measured on raw structures (no engine,
 * no records): the lower bound a storage form for groups can reach, beside what the engine uses.
 * It backs the "Memory per job" section of BENCHMARKS.md (why small groups miss ≤ 40 bytes).
 *
 *   npm run bench:group-layouts
 *
 * BENCH_LAYOUT_JOBS (100,000) jobs per row, ids `order-00000000123` (17 bytes) and group names
 * `meeting-000123` (14 bytes), as bench/groups.ts. Each row starts from an empty Redis
 * (FLUSHALL), adds every job's group membership, waits BENCH_SETTLE_MS (1000 ms) and reports the
 * `used_memory` delta per job and the encodings of the keys it made. Layouts:
 * - `zsets`: the engine's (lua/includes/groups.lua): per group and partition, zsets of at
 *   most 128 members (the key, then `<key>#1`, ...), the id as member, its place (1-128) as score.
 * - `buckets`: a form for small groups: hashes of BENCH_BUCKET_GROUPS (128) groups each (a hash
 * stays a listpack up to `hash-max-listpack-entries`, 512 by default), the group's name as field and its ids,
 * space-separated, as
 *   value; at most 3 ids, since a value longer than 64 bytes (`hash-max-listpack-value`) turns the
 *   hash into a hashtable. Every bucket is full: the best case, which no real bucket scheme
 *   (buckets that split as groups come) keeps.
 * - `buckets, hashed names`: the same with 4 bytes of a hash of the name as field instead of the
 *   name (the records name the group, so a listing could drop the ids of another group whose
 *   name hashes alike): the least text an index by name can hold.
 * A job's group also costs its record the group's name (about 13-16 bytes a job; `bench:groups`
 * measures it with the engine), which neither layout here includes.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { envInt } from './harness/env';
import { runBench } from './harness/lifecycle';
import { encodings, info, scanKeys, usedMemory, withRedis } from './harness/redis';
import { fmt, printTable } from './harness/report';

const JOBS = envInt('BENCH_LAYOUT_JOBS', 100_000);
const SETTLE_MS = envInt('BENCH_SETTLE_MS', 1_000);
const CHUNK = 128; // zset-max-listpack-entries, by default
// groups a shared bucket holds: 128 by default, as the engine's zsets; a hash stays a listpack up to
// hash-max-listpack-entries, 512 by default, so BENCH_BUCKET_GROUPS=512 gives the fullest buckets possible
const BUCKET_GROUPS = envInt('BENCH_BUCKET_GROUPS', 128);
const BUCKET_IDS = 3; // 3 ids of 17 bytes and 2 spaces: 53 bytes, within hash-max-listpack-value (64)

const id = (i: number) => `order-${String(i).padStart(11, '0')}`;
const group = (g: number) => `meeting-${String(g).padStart(6, '0')}`;
const groupKey = (name: string) => `dq:{p0}:group:example:${name}`;
const bucketKey = (b: number) => `dq:{p0}:groups:example:${b}`;

/** Sends `commands` pipelined, 1,000 a round trip. */
async function send(redis: Redis, commands: Iterable<(string | Buffer | number)[]>): Promise<void> {
  let batch: (string | Buffer | number)[][] = [];
  const flush = async () => {
    const pipeline = redis.pipeline();
    for (const [name, ...args] of batch) pipeline.call(String(name), ...args);
    for (const [error] of (await pipeline.exec()) ?? []) if (error) throw error;
    batch = [];
  };
  for (const command of commands) {
    batch.push(command);
    if (batch.length === 1000) await flush();
  }
  if (batch.length > 0) await flush();
}

/** The engine's layout: groups of `size` jobs, each in zsets of at most CHUNK members. */
function* zsets(size: number): Generator<(string | number)[]> {
  for (let i = 0; i < JOBS; i++) {
    const inGroup = i % size;
    const chunk = Math.floor(inGroup / CHUNK);
    const base = groupKey(group(Math.floor(i / size)));
    yield ['ZADD', chunk === 0 ? base : `${base}#${chunk}`, (inGroup % CHUNK) + 1, id(i)];
  }
}

/** 4 bytes of a hash of `name`, as a binary string. */
const nameHash = (name: string) => createHash('sha1').update(name).digest().subarray(0, 4).toString('latin1');

/** Shared buckets: groups of `size` (≤ BUCKET_IDS) jobs, BUCKET_GROUPS groups a hash, name (or its hash) → ids. */
function* buckets(size: number, hashed = false): Generator<(string | Buffer | number)[]> {
  if (size > BUCKET_IDS) throw new Error(`a bucket value holds at most ${BUCKET_IDS} ids`);
  const groups = Math.ceil(JOBS / size);
  for (let g = 0; g < groups; g++) {
    const ids = [];
    for (let i = g * size; i < Math.min(JOBS, (g + 1) * size); i++) ids.push(id(i));
    yield [
      'HSET',
      bucketKey(Math.floor(g / BUCKET_GROUPS)),
      hashed ? Buffer.from(nameHash(group(g)), 'latin1') : group(g),
      ids.join(' '),
    ];
  }
}

/** One row: from an empty Redis, `commands` sent; used_memory's growth per job and the encodings of the keys made. */
async function row(redis: Redis, layout: string, size: number, commands: Iterable<(string | Buffer | number)[]>) {
  await redis.flushall();
  await sleep(SETTLE_MS);
  const before = await usedMemory(redis);
  await send(redis, commands);
  await sleep(SETTLE_MS);
  const perJob = ((await usedMemory(redis)) - before) / JOBS;
  const keys = (await encodings(redis, await scanKeys(redis), fmt)) ?? '';
  return [layout, size === JOBS ? `one of ${fmt(JOBS)}` : String(size), fmt(perJob, 1), keys];
}

async function main() {
  await withRedis(async (_server, redis) => {
    const serverInfo = await redis.info('server');
    console.log(
      `redis ${info(serverInfo, 'redis_version')}, ${fmt(JOBS)} jobs a row, ids of ${id(0).length} bytes, group names of ${group(0).length}, ${BUCKET_GROUPS} groups a shared bucket`,
    );
    const rows: string[][] = [];
    for (const size of [1, 3, 100, JOBS]) rows.push(await row(redis, 'zsets (the engine)', size, zsets(size)));
    for (const size of [1, 3]) rows.push(await row(redis, 'buckets, full', size, buckets(size)));
    for (const size of [1, 3]) rows.push(await row(redis, 'buckets, full, hashed names', size, buckets(size, true)));
    printTable(rows, ['layout', 'group size', 'bytes a job', 'keys']);
  });
}

runBench(main);
