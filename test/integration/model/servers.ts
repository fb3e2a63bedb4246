/**
 * The redis-servers of a model run and the faults done to them, each server started and stopped
 * by its PID (test/support/redis.ts):
 *
 *   client ──> reply-dropping proxy ──> endpoint (a switch proxy) ──> primary
 *                                                                      └──> link ──> replica
 *
 * - replies dropped: the reply-dropping proxy (test/support/proxy.ts) lets the next command that
 *   holds a pattern run on Redis and loses its reply, cutting the connection;
 * - a lagging replica and a failover: the link between primary and replica can hold every byte
 *   both ways (the replica neither hears nor acknowledges: WAIT times out), let them through again
 *   (the replica catches up), or, for a failover, drop what it held; then the primary is killed,
 *   the replica promoted, the endpoint repointed to it and a new replica started behind a new link;
 * - a restart: the primary is killed (SIGKILL) and started again on its port from its append-only
 *   file (`appendfsync always`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { until } from '../../../scripts/support/process';
import {
  startReplyDroppingProxy,
  startSwitchProxy,
  type ReplyDroppingProxy,
  type SwitchProxy,
} from '../../support/proxy';
import { startRedis, type RedisProcess } from '../../support/redis';

/** A TCP link between a replica and its primary that can hold, release or drop everything. */
export interface Link {
  readonly port: number;
  /** True between hold and release. */
  readonly held: boolean;
  /** From now on nothing passes either way; what arrives is kept. */
  hold(): void;
  /** What was kept passes, and so does everything after it. */
  release(): void;
  /** What was kept is dropped, every connection closed, and no new one reaches the primary. */
  sever(): void;
  close(): Promise<void>;
}

export async function startLink(target: number): Promise<Link> {
  let held = false;
  let severed = false;
  const pipes: { flush(): void; destroy(): void }[] = [];
  const server = net.createServer((replica) => {
    if (severed) return void replica.destroy();
    const primary = net.connect({ host: '127.0.0.1', port: target, noDelay: true });
    replica.setNoDelay(true);
    const toPrimary: Buffer[] = [];
    const toReplica: Buffer[] = [];
    const destroy = () => {
      replica.destroy();
      primary.destroy();
      const i = pipes.indexOf(pipe);
      if (i >= 0) pipes.splice(i, 1);
    };
    replica.on('data', (chunk: Buffer) => void (held ? toPrimary.push(chunk) : primary.write(chunk)));
    primary.on('data', (chunk: Buffer) => void (held ? toReplica.push(chunk) : replica.write(chunk)));
    for (const s of [replica, primary]) {
      s.on('error', destroy);
      s.on('close', destroy);
    }
    const pipe = {
      flush: () => {
        for (const c of toPrimary.splice(0)) primary.write(c);
        for (const c of toReplica.splice(0)) replica.write(c);
      },
      destroy,
    };
    pipes.push(pipe);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    get held() {
      return held;
    },
    hold: () => void (held = true),
    release: () => {
      held = false;
      for (const p of pipes) p.flush();
    },
    sever: () => {
      severed = true;
      for (const p of pipes.splice(0)) p.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        severed = true;
        for (const p of pipes.splice(0)) p.destroy();
        server.close(() => resolve());
      }),
  };
}

export interface TopologyOptions {
  /** The reply-dropping proxy in front (else clients connect to the endpoint, or the primary). */
  drops: boolean;
  /** A replica behind a link (for durability `replica` and failovers), and the endpoint in front of the primary. */
  replica: boolean;
  /** Append-only file with `appendfsync always` (for restarts). */
  appendOnly: boolean;
}

function replication(port: number): string {
  return spawnSync('redis-cli', ['-p', String(port), 'info', 'replication'], { encoding: 'utf8' }).stdout;
}

/** The servers, proxies and links of one run; see the file's comment. */
export class Topology {
  primary!: RedisProcess;
  replica: RedisProcess | undefined;
  link: Link | undefined;
  endpoint: SwitchProxy | undefined;
  dropper: ReplyDroppingProxy | undefined;
  private readonly dirs: string[] = [];
  private readonly args: string[];
  private readonly retired: (RedisProcess | Link)[] = [];

  constructor(readonly options: TopologyOptions) {
    // a new replica syncs at once (Redis waits 5 s for more replicas by default)
    this.args = [
      '--repl-diskless-sync-delay',
      '0',
      ...(options.appendOnly ? ['--appendonly', 'yes', '--appendfsync', 'always'] : []),
    ];
  }

  /** Where clients connect: through the reply-dropping proxy and the endpoint, when there are. */
  get url(): string {
    return this.dropper?.url ?? this.endpoint?.url ?? this.primary.url;
  }

  /** The next command holding `pattern` loses its reply (drops only). */
  dropReplyTo(pattern: string): void {
    this.dropper?.dropReplyTo(pattern);
  }

  /** Replies dropped so far. */
  get dropped(): number {
    return this.dropper?.dropped ?? 0;
  }

  private dir(): string {
    const dir = mkdtempSync(join(tmpdir(), 'dq-model-'));
    this.dirs.push(dir);
    return dir;
  }

  async start(): Promise<void> {
    this.primary = await startRedis({ dir: this.dir(), args: this.args });
    if (this.options.replica) {
      await this.addReplica();
      this.endpoint = await startSwitchProxy({ port: this.primary.port });
    }
    if (this.options.drops)
      this.dropper = await startReplyDroppingProxy({ port: this.endpoint?.port ?? this.primary.port });
  }

  /** A new replica of the primary, behind a new link, synced. */
  private async addReplica(): Promise<void> {
    this.link = await startLink(this.primary.port);
    this.replica = await startRedis({
      dir: this.dir(),
      args: [...this.args, '--replicaof', '127.0.0.1', String(this.link.port)],
    });
    const synced = await until(
      () =>
        /master_link_status:up/.test(replication(this.replica!.port)) &&
        /connected_slaves:1/.test(replication(this.primary.port)),
      30_000,
      20,
    );
    if (!synced) throw new Error('the replica did not sync with its primary');
  }

  /** A direct client of the primary, for what the harness does behind the queue's back. */
  private async admin<T>(port: number, fn: (r: Redis) => Promise<T>): Promise<T> {
    const r = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 2 });
    try {
      return await fn(r);
    } finally {
      r.disconnect();
    }
  }

  /** Returns once the replica has everything the primary has (a write of our own, then WAIT). */
  async syncReplica(): Promise<void> {
    const acked = await this.admin(this.primary.port, async (r) => {
      await r.incr('dq-model:sync');
      return Number(await r.call('WAIT', 1, 5000));
    });
    if (acked < 1) throw new Error('the replica did not confirm the sync point');
  }

  /** The replica stops hearing from the primary (after it has caught up): durable changes get 503. */
  async holdReplica(): Promise<void> {
    await this.syncReplica();
    this.link!.hold();
  }

  /** The replica hears again and catches up. */
  async releaseReplica(): Promise<void> {
    this.link!.release();
    await this.syncReplica();
  }

  /**
   * Failover to the replica, which lacks everything since holdReplica: the primary is killed,
   * the replica promoted, the endpoint repointed, and a new replica started and synced.
   */
  async failover(): Promise<void> {
    const old = this.primary;
    const link = this.link!;
    link.sever();
    await old.stop('SIGKILL');
    const promoted = this.replica!;
    await this.admin(promoted.port, (r) => r.replicaof('NO', 'ONE'));
    this.endpoint!.repoint({ port: promoted.port });
    this.primary = promoted;
    this.retired.push(link);
    await this.addReplica();
  }

  /** The primary is killed and started again on its port from its append-only file. */
  async restart(): Promise<void> {
    const { port, dir } = this.primary;
    await this.primary.stop('SIGKILL');
    this.primary = await startRedis({ port, dir, args: this.args });
    // a held-back replica syncs again once the link lets it
    if (this.replica && !this.link?.held) {
      const synced = await until(
        () =>
          /master_link_status:up/.test(replication(this.replica!.port)) &&
          /connected_slaves:1/.test(replication(this.primary.port)),
        30_000,
        20,
      );
      if (!synced) throw new Error('the replica did not sync again after the restart');
    }
  }

  /** Kills the primary now (SIGKILL), without waiting: for a restart in the middle of an operation. */
  killPrimaryNow(): void {
    try {
      process.kill(this.primary.pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }

  async stop(): Promise<void> {
    await Promise.allSettled([
      this.dropper?.close(),
      this.endpoint?.close(),
      this.link?.close(),
      ...this.retired.filter((r): r is Link => 'sever' in r).map((l) => l.close()),
    ]);
    await Promise.allSettled([this.primary?.stop('SIGKILL'), this.replica?.stop('SIGKILL')]);
    for (const dir of this.dirs) rmSync(dir, { recursive: true, force: true });
  }
}
