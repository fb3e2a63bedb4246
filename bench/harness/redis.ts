/**
 * The redis-servers a bench starts (each stopped by its PID at the end, also on error and Ctrl-C),
 * its clients, and what it reads back from Redis: INFO fields, memory, keys, encodings, SLOWLOG.
 */
import { createHash } from 'node:crypto';
import { Redis, type Cluster, type RedisOptions } from 'ioredis';
import { startRedis, type RedisProcess } from '../../test/support/redis';
import { SCRIPTS, scriptText, type ScriptName } from '../../lib/testing';
import { track } from './lifecycle';

export type { RedisProcess };

/** A redis-server of the bench's own (nothing persisted), stopped by PID at the end if not before. */
export async function startServer(options: Parameters<typeof startRedis>[0] = {}): Promise<RedisProcess> {
  const server = await startRedis(options);
  return { ...server, stop: track(() => server.stop()) };
}

/** A client of the redis-server on `port` of this host, whose commands wait for a connection rather than fail. */
export function connect(server: { port: number }, options: RedisOptions = {}): Redis {
  return new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: null, ...options });
}

/** Runs `fn` on a redis-server of its own and a client, both stopped after (also on error). */
export async function withRedis<T>(
  fn: (server: RedisProcess, redis: Redis) => Promise<T>,
  options: Parameters<typeof startRedis>[0] = {},
): Promise<T> {
  const server = await startServer(options);
  const redis = connect(server);
  try {
    return await fn(server, redis);
  } finally {
    redis.disconnect();
    await server.stop();
  }
}

/** A field of an INFO reply, or undefined. */
export function info(text: string, field: string): string | undefined {
  return new RegExp(`^${field}:(.*)$`, 'm').exec(text)?.[1]?.trim();
}

/** INFO memory's used_memory, bytes. */
export async function usedMemory(redis: Redis): Promise<number> {
  return Number(info(await redis.info('memory'), 'used_memory'));
}

/** Redis TIME in epoch ms, with its microseconds. */
export async function redisNow(redis: Redis | Cluster): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Number(us) / 1000;
}

/** Every key matching `pattern` (SCAN). */
export async function scanKeys(redis: Redis, pattern = '*'): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return keys;
}

/** Runs `command(key)` for every key, pipelined 1,000 a round trip; the replies in order. */
async function perKey(
  redis: Redis,
  keys: readonly string[],
  command: (p: ReturnType<Redis['pipeline']>, key: string) => void,
) {
  const replies: unknown[] = [];
  for (let i = 0; i < keys.length; i += 1000) {
    const pipeline = redis.pipeline();
    for (const key of keys.slice(i, i + 1000)) command(pipeline, key);
    for (const [error, reply] of (await pipeline.exec()) ?? []) {
      if (error) throw error;
      replies.push(reply);
    }
  }
  return replies;
}

/** MEMORY USAGE (every element counted) of the keys, summed. */
export async function memoryUsage(redis: Redis, keys: readonly string[]): Promise<number> {
  const bytes = await perKey(redis, keys, (p, key) => p.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
  return bytes.reduce<number>((total, b) => total + Number(b ?? 0), 0);
}

/** The keys' encodings, counted ("100 listpack, 3 skiplist", thousands separated by `fmt`); null for no keys. */
export async function encodings(
  redis: Redis,
  keys: readonly string[],
  fmt: (n: number) => string,
): Promise<string | null> {
  const counts = new Map<string, number>();
  for (const e of await perKey(redis, keys, (p, key) => p.object('ENCODING', key)))
    counts.set(String(e), (counts.get(String(e)) ?? 0) + 1);
  return counts.size === 0 ? null : [...counts].map(([e, n]) => `${fmt(n)} ${e}`).join(', ');
}

/** SLOWLOG from now on: every command of `slowerThanUs` µs or more (0: every one; -1: none), at most `maxLen` kept. */
export async function logCommands(redis: Redis, slowerThanUs: number, maxLen?: number): Promise<void> {
  if (maxLen !== undefined) await redis.config('SET', 'slowlog-max-len', String(maxLen));
  await redis.config('SET', 'slowlog-log-slower-than', String(slowerThanUs));
}

/**
 * Names the script of a SLOWLOG entry: an EVALSHA by its digest, an EVAL (ioredis sends one for a
 * script's first call on a connection) by its text's length, since SLOWLOG cuts the text to 128
 * bytes and "... (N more bytes)" (every script starts with the same helpers). Undefined when unknown.
 */
export function scriptNamer(): {
  bySha(sha: string): ScriptName | undefined;
  byEvalText(text: string): ScriptName | undefined;
} {
  const byDigest = new Map<string, ScriptName>();
  const byLength = new Map<number, ScriptName | 'ambiguous'>();
  for (const name of Object.keys(SCRIPTS) as ScriptName[]) {
    const text = scriptText(name);
    byDigest.set(createHash('sha1').update(text).digest('hex'), name);
    const length = Buffer.byteLength(text);
    byLength.set(length, byLength.has(length) ? 'ambiguous' : name);
  }
  return {
    bySha: (sha) => byDigest.get(sha.toLowerCase()),
    byEvalText: (text) => {
      const name = byLength.get(128 + Number(/\.\.\. \((\d+) more bytes\)$/.exec(text)?.[1] ?? NaN));
      return name && name !== 'ambiguous' ? name : undefined;
    },
  };
}

/** The library function an FCALL names, less its `dq_<version>_` prefix. */
export const functionName = (name: string) => name.replace(/^dq_[0-9a-f]+_/, '');

/**
 * One SLOWLOG entry: its duration, its name (a script's, by scriptNamer), and whether a client sent it (not a script).
 */
export interface Logged {
  us: number;
  name: string;
  fromClient: boolean;
}

/**
 * Reads SLOWLOG back, every entry named: an FCALL by its script (the library function's name less
 * its `dq_<version>_` prefix), an EVALSHA by its script's digest, an EVAL (ioredis sends
 * one for a script's first call on a connection, which compiles it) as "<script> (EVAL: compiles
 * it)". Commands a script ran are logged from a client with no address (fromClient false).
 */
export function slowlogReader(): (redis: Redis) => Promise<Logged[]> {
  const names = scriptNamer();
  return async (redis) => {
    const entries = (await redis.call('SLOWLOG', 'GET', '-1')) as [number, number, number, string[], string][];
    return entries.map(([, , us, [command = '?', first = ''], client]) => {
      let name = command.toUpperCase();
      if (name === 'FCALL' || name === 'FCALL_RO') name = functionName(first);
      if (name === 'EVALSHA') name = names.bySha(first) ?? `EVALSHA ${first.slice(0, 8)}`;
      if (name === 'EVAL') {
        const script = names.byEvalText(first);
        name = script ? `${script} (EVAL: compiles it)` : 'EVAL';
      }
      return { us, name, fromClient: /^\d[\d.]*:\d+$/.test(client ?? '') };
    });
  };
}
