/**
 * Starts real redis-servers for tests: one node, or a 3-master cluster, on free loopback ports,
 * with data in a temporary folder. Each is stopped by its PID.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { Cluster, Redis } from 'ioredis';

/** A free TCP port on 127.0.0.1 (and, with `bus`, port + 10000 free too, for the cluster bus). */
export async function freePort(bus = false): Promise<number> {
  for (let tries = 0; tries < 50; tries++) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
    if (!bus) return port;
    if (port + 10000 > 65535) continue;
    const busFree = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port + 10000, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (busFree) return port;
  }
  throw new Error('no free port pair found');
}

export interface RedisProcess {
  port: number;
  pid: number;
  url: string;
  dir: string;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s) and waits for it to exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check().catch(() => false)) return;
    await sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function ping(port: number): Promise<boolean> {
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
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
export async function startRedis(options: { args?: string[]; dir?: string; port?: number } = {}): Promise<RedisProcess> {
  const port = options.port ?? (await freePort());
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'dq-redis-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', ...(options.args ?? [])];
  const child: ChildProcess = spawn('redis-server', args, { stdio: ['ignore', 'ignore', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let alive = true;
  void exited.then(() => (alive = false));
  await waitFor(async () => {
    if (!alive) throw new Error(`redis-server exited at start (args: ${args.join(' ')})`);
    return ping(port);
  }, `redis-server on port ${port}`);
  return {
    port,
    pid: child.pid!,
    url: `redis://127.0.0.1:${port}`,
    dir,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (!alive) return;
      process.kill(child.pid!, signal);
      const timer = setTimeout(() => alive && process.kill(child.pid!, 'SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
      if (!options.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface RedisClusterProcess {
  nodes: RedisProcess[];
  /** A new ioredis Cluster client for this cluster. */
  client(): Cluster;
  stop(): Promise<void>;
}

/** Starts a cluster of `masters` nodes (no replicas) on loopback and waits until it is ok. */
export async function startRedisCluster(masters = 3): Promise<RedisClusterProcess> {
  const nodes: RedisProcess[] = [];
  try {
    for (let i = 0; i < masters; i++) {
      const port = await freePort(true);
      nodes.push(
        await startRedis({
          port,
          args: ['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '5000'],
        }),
      );
    }
    const create = spawnSync('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes'], { encoding: 'utf8' });
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
    await waitFor(async () => {
      for (const node of nodes) {
        const info = spawnSync('redis-cli', ['-p', String(node.port), 'cluster', 'info'], { encoding: 'utf8' }).stdout;
        if (!info.includes('cluster_state:ok')) return false;
      }
      return true;
    }, 'cluster_state:ok on every node', 30_000);
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

/**
 * Gives the enclosing suite a redis-server of its own: started in a `before` hook, stopped in an
 * `after` hook, with one client on it. Call at the top of a describe().
 */
export function useRedisServer(options: Parameters<typeof startRedis>[0] = {}): { server(): RedisProcess; client(): Redis } {
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
