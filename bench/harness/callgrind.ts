/**
 * A redis-server under valgrind's callgrind (nothing persisted), for the instructions a workload
 * costs Redis: its counts zeroed and dumped on demand (`callgrind_control`), each dump's total read
 * back. Stopped by its PID when the bench ends if not before. Needs valgrind (`apt-get install -y
 * valgrind`); about 50 times slower than without.
 */
import { spawn, spawnSync, type ChildProcess, type StdioOptions } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freePort, killOnExit, stopChild } from '../../scripts/support/process';
import { track } from './lifecycle';

export interface CallgrindServer {
  port: number;
  pid: number;
  url: string;
  /** Zeroes callgrind's counts. */
  zero(): void;
  /** Dumps the counts since the last zero or dump as `name`; resolves their total of instructions. */
  dump(name: string): Promise<number>;
  stop(): Promise<void>;
}

/** True when valgrind runs. */
export const hasValgrind = () => spawnSync('valgrind', ['--version']).status === 0;

/** Resolves once a redis-server answers PING on `port` (under valgrind it starts slowly): 300 tries, 200 ms apart. */
async function waitUp(port: number): Promise<void> {
  for (let tries = 0; ; tries++) {
    const redis = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null });
    redis.on('error', () => {}); // refused while valgrind starts redis-server: retried
    try {
      await redis.connect();
      await redis.ping();
      return;
    } catch (error) {
      if (tries > 300) throw error;
      await sleep(200);
    } finally {
      redis.disconnect();
    }
  }
}

/** The total of the dump named `name` in `dir`, once callgrind has written it (30 s at most). */
async function totalOf(dir: string, name: string): Promise<number> {
  for (let tries = 0; tries < 300; tries++) {
    for (const file of readdirSync(dir).filter((f) => f.startsWith('callgrind.out'))) {
      const text = readFileSync(join(dir, file), 'utf8');
      const total = /^(?:summary|totals): (\d+)/m.exec(text)?.[1];
      if (/^desc: Trigger: dump (.+)$/m.exec(text)?.[1] === name && total) return Number(total);
    }
    await sleep(100);
  }
  throw new Error(`callgrind wrote no dump named ${name}`);
}

/** A process under callgrind: its counts zeroed and dumped on demand; stopped by its PID. */
export interface CallgrindProcess {
  child: ChildProcess;
  zero(): void;
  dump(name: string): Promise<number>;
  stop(): Promise<void>;
}

/** Runs `command args` under callgrind (its dumps in a directory of its own), stopped by PID when the bench ends. */
export function spawnUnderCallgrind(
  command: string,
  args: readonly string[],
  options: { stdio?: StdioOptions; env?: NodeJS.ProcessEnv } = {},
): CallgrindProcess {
  const dir = mkdtempSync(join(tmpdir(), 'dq-callgrind-'));
  const out = `--callgrind-out-file=${join(dir, 'callgrind.out')}`;
  const child = spawn('valgrind', ['--tool=callgrind', out, command, ...args], {
    stdio: options.stdio ?? 'ignore',
    ...(options.env ? { env: options.env } : {}),
  });
  killOnExit(child);
  const stop = track(async () => {
    await stopChild(child, { graceMs: 30_000 });
    rmSync(dir, { recursive: true, force: true });
  });
  const control = (...more: string[]) => {
    const r = spawnSync('callgrind_control', [...more, String(child.pid)], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`callgrind_control ${more.join(' ')}: ${r.stderr || r.stdout}`);
  };
  return { child, zero: () => control('-z'), dump: (name) => (control('-d', name), totalOf(dir, name)), stop };
}

/** A redis-server under callgrind (`--save '' --appendonly no`) on a free port, answering once it is up. */
export async function startUnderCallgrind(): Promise<CallgrindServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'dq-redis-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'];
  const server = spawnUnderCallgrind('redis-server', args);
  await waitUp(port);
  return {
    port,
    pid: server.child.pid!,
    url: `redis://127.0.0.1:${port}`,
    zero: server.zero,
    dump: server.dump,
    stop: async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
