/**
 * Starts real redis-servers for tests: one node, or a 3-master cluster, on free loopback ports,
 * with data in a temporary folder. Each is stopped by its PID.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import { freePort, killOnExit, stopChild, until } from '../../scripts/support/process';

export { freePort } from '../../scripts/support/process';

export interface RedisProcess {
  port: number;
  pid: number;
  url: string;
  dir: string;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s) and waits for it to exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

class RedisStartError extends Error {}

async function ping(port: number): Promise<boolean> {
  const client = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined); // refused until the server listens: expected while polling
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } finally {
    client.disconnect();
  }
}

/**
 * Starts one redis-server. `args` are extra server options; by default nothing is persisted
 * (`--save '' --appendonly no`). `dir` reuses a data folder (for restart tests).
 */
export async function startRedis(
  options: { args?: string[]; dir?: string; port?: number } = {},
): Promise<RedisProcess> {
  // A port found free can be taken before redis-server binds it: then try another (3 times)
  for (let attempt = 1; ; attempt++) {
    try {
      return await startRedisOnce(options, options.port ?? (await freePort()));
    } catch (error) {
      if (options.port !== undefined || attempt >= 3 || !(error instanceof RedisStartError)) throw error;
    }
  }
}

async function startRedisOnce(options: { args?: string[]; dir?: string }, port: number): Promise<RedisProcess> {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'dq-redis-'));
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    'no',
    ...(options.args ?? []),
  ];
  const child: ChildProcess = spawn('redis-server', args, { stdio: ['ignore', 'ignore', 'inherit'] });
  const spawnError = new Promise<never>((_, reject) => child.once('error', (error) => reject(missingRedis(error))));
  spawnError.catch(() => undefined); // raced below; unhandled otherwise once the server is up
  killOnExit(child); // last resort; tests stop their servers themselves
  let alive = true;
  child.once('exit', () => (alive = false));
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (alive && child.pid !== undefined) await stopChild(child, { signal });
    if (!options.dir) rmSync(dir, { recursive: true, force: true });
  };
  try {
    const up = await Promise.race([spawnError, until(async () => !alive || (await ping(port)), 30_000, 50)]);
    if (!alive) throw new RedisStartError(`redis-server exited at start (args: ${args.join(' ')})`);
    if (!up) throw new Error(`timed out waiting for redis-server on port ${port}`);
  } catch (error) {
    await stop('SIGKILL');
    throw error;
  }
  return { port, pid: child.pid!, url: `redis://127.0.0.1:${port}`, dir, stop };
}

/** The error for a missing redis-server: what to install, not a stack trace. */
function missingRedis(error: Error): Error {
  if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return error;
  return new Error(
    'redis-server is not installed (the integration, e2e and fault tests start their own). Install it:\n' +
      '    Debian/Ubuntu: sudo apt-get install -y redis-server\n' +
      '    macOS:         brew install redis',
  );
}

export interface RedisClusterProcess {
  nodes: RedisProcess[];
  /** A new ioredis Cluster client for this cluster. */
  client(): Cluster;
  stop(): Promise<void>;
}

/**
 * Starts a cluster of `masters` primaries, each with `replicas` replicas (redis-cli assigns them),
 * on loopback and waits until it is ok and every replica's link is up.
 */
export async function startRedisCluster(masters = 3, replicas = 0): Promise<RedisClusterProcess> {
  const nodes: RedisProcess[] = [];
  try {
    for (let i = 0; i < masters * (1 + replicas); i++) {
      const port = await freePort(true);
      nodes.push(
        await startRedis({
          port,
          args: [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            `nodes-${port}.conf`,
            '--cluster-node-timeout',
            '5000',
          ],
        }),
      );
    }
    const create = spawnSync(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...nodes.map((n) => `127.0.0.1:${n.port}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ],
      { encoding: 'utf8' },
    );
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
    const ok = await until(
      () =>
        nodes.every((node) =>
          spawnSync('redis-cli', ['-p', String(node.port), 'cluster', 'info'], { encoding: 'utf8' }).stdout.includes(
            'cluster_state:ok',
          ),
        ),
      30_000,
      50,
    );
    if (!ok) throw new Error('timed out waiting for cluster_state:ok on every node');
    const linked = await until(
      () => nodes.every((node) => !/role:slave/.test(info(node.port)) || /master_link_status:up/.test(info(node.port))),
      30_000,
      50,
    );
    if (!linked) throw new Error('timed out waiting for every replica to sync with its primary');
  } catch (error) {
    await Promise.all(nodes.map((n) => n.stop()));
    throw error;
  }
  return {
    nodes,
    client: () => new Cluster(nodes.map((n) => ({ host: '127.0.0.1', port: n.port }))),
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
}

function info(port: number): string {
  return spawnSync('redis-cli', ['-p', String(port), 'info', 'replication'], { encoding: 'utf8' }).stdout;
}

export interface PrimaryWithReplica {
  primary: RedisProcess;
  replica: RedisProcess;
  /** Freezes the replica (SIGSTOP): it stays connected but acknowledges nothing, as a lagging replica does. */
  pauseReplica(): void;
  resumeReplica(): void;
  stop(): Promise<void>;
}

/** A primary and one replica (`--replicaof`), nothing persisted, started and synced. */
export async function startPrimaryWithReplica(): Promise<PrimaryWithReplica> {
  const primary = await startRedis();
  let replica: RedisProcess;
  try {
    replica = await startRedis({ args: ['--replicaof', '127.0.0.1', String(primary.port)] });
  } catch (error) {
    await primary.stop();
    throw error;
  }
  let paused = false;
  const pair: PrimaryWithReplica = {
    primary,
    replica,
    pauseReplica: () => void (process.kill(replica.pid, 'SIGSTOP'), (paused = true)),
    resumeReplica: () => void (paused && process.kill(replica.pid, 'SIGCONT'), (paused = false)),
    async stop() {
      pair.resumeReplica();
      await Promise.all([replica.stop(), primary.stop()]);
    },
  };
  const synced = await until(
    () => /master_link_status:up/.test(info(replica.port)) && /connected_slaves:1/.test(info(primary.port)),
    30_000,
    50,
  );
  if (!synced) {
    await pair.stop();
    throw new Error('timed out waiting for the replica to sync with its primary');
  }
  return pair;
}

/**
 * Gives the enclosing suite a redis-server of its own: started in a `before` hook, stopped in an
 * `after` hook, with one client on it. Call at the top of a describe().
 */
export function useRedisServer(options: Parameters<typeof startRedis>[0] = {}): {
  server(): RedisProcess;
  client(): Redis;
} {
  let server: RedisProcess | undefined;
  let client: Redis | undefined;
  before(async () => {
    server = await startRedis(options);
    client = new Redis(server.url);
  });
  after(async () => {
    client?.disconnect();
    await server?.stop();
  });
  return {
    server: () => server ?? assert.fail('the redis-server is not started yet'),
    client: () => client ?? assert.fail('the redis-server is not started yet'),
  };
}

/**
 * Gives the enclosing suite a Redis Cluster of its own (`masters` masters): started in a `before`
 * hook, stopped in an `after` hook, with one cluster client. Call at the top of a describe().
 */
export function useRedisCluster(masters = 3): { cluster(): RedisClusterProcess; client(): Cluster } {
  let cluster: RedisClusterProcess | undefined;
  let client: Cluster | undefined;
  before(async () => {
    cluster = await startRedisCluster(masters);
    client = cluster.client();
  });
  after(async () => {
    client?.disconnect();
    await cluster?.stop();
  });
  return {
    cluster: () => cluster ?? assert.fail('the cluster is not started yet'),
    client: () => client ?? assert.fail('the cluster is not started yet'),
  };
}

/** The index in `cluster.nodes` of the primary that serves hash slot `slot` (CLUSTER SLOTS on the first node). */
export async function slotOwner(cluster: RedisClusterProcess, slot: number): Promise<number> {
  const client = new Redis(cluster.nodes[0]!.port, '127.0.0.1');
  try {
    const ranges = (await client.call('CLUSTER', 'SLOTS')) as [
      number,
      number,
      [string, number, ...unknown[]],
      ...unknown[],
    ][];
    const range = ranges.find(([first, last]) => slot >= first && slot <= last);
    const index = cluster.nodes.findIndex((node) => node.port === range?.[2][1]);
    if (index < 0) throw new Error(`no primary serves slot ${slot}`);
    return index;
  } finally {
    client.disconnect();
  }
}

/**
 * Moves hash slot `slot` to primary `to` (an index in `cluster.nodes`) as `redis-cli --cluster
 * reshard` does: the target IMPORTING and the source MIGRATING it, its keys MIGRATEd `batch` at a
 * time (redis-cli's --cluster-pipeline, 10 by default), then every node told the new owner
 * (CLUSTER SETSLOT … NODE, the target first). `between` is awaited after each step, while the
 * slot is split between the two nodes: a test waits there for its load to meet the split.
 * Resolves how long the slot was split (ms from IMPORTING to the last SETSLOT … NODE).
 */
export async function moveSlot(
  cluster: RedisClusterProcess,
  slot: number,
  to: number,
  options: { batch?: number; between?: (from: number) => Promise<void> } = {},
): Promise<number> {
  const from = await slotOwner(cluster, slot);
  if (from === to) return 0;
  const nodes = cluster.nodes.map((node) => new Redis(node.port, '127.0.0.1'));
  const between = options.between ?? (async () => undefined);
  try {
    const ids = await Promise.all(nodes.map(async (node) => String(await node.call('CLUSTER', 'MYID'))));
    const split = Date.now();
    await nodes[to]!.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', ids[from]!);
    await nodes[from]!.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', ids[to]!);
    await between(from);
    for (;;) {
      const keys = (await nodes[from]!.call('CLUSTER', 'GETKEYSINSLOT', slot, options.batch ?? 10)) as string[];
      if (keys.length === 0) break;
      await nodes[from]!.call('MIGRATE', '127.0.0.1', cluster.nodes[to]!.port, '', 0, 10_000, 'KEYS', ...keys);
      await between(from);
    }
    const others = nodes.map((_, i) => i).filter((i) => i !== to && i !== from);
    for (const i of [to, from, ...others]) await nodes[i]!.call('CLUSTER', 'SETSLOT', slot, 'NODE', ids[to]!);
    return Date.now() - split;
  } finally {
    for (const node of nodes) node.disconnect();
  }
}
