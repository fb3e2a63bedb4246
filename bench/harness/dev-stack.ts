/**
 * `npm run dev` as a bench runs it: on free ports, in its own process group, its JSON log lines
 * handed to the bench one by one; stopped with SIGTERM to that group, and its children by PID or
 * group if they outlive it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { exited, freePort, groupGone, signalGroup } from '../../scripts/support/process';

const ROOT = resolve(__dirname, '../..');

/** PIDs and process groups of every descendant of `root` (Linux /proc). */
function descendants(root: number): { pid: number; pgid: number }[] {
  const procs: { pid: number; ppid: number; pgid: number }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      procs.push({ pid: Number(entry), ppid: Number(fields[1]), pgid: Number(fields[2]) });
    } catch {} // ended meanwhile
  }
  const out: { pid: number; pgid: number }[] = [];
  const queue = [root];
  while (queue.length) {
    const parent = queue.shift()!;
    for (const p of procs) {
      if (p.ppid === parent) {
        out.push({ pid: p.pid, pgid: p.pgid });
        queue.push(p.pid);
      }
    }
  }
  return out;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Three distinct free ports: HTTP, Lambda, redis-server. */
async function threePorts(): Promise<{ http: number; lambda: number; redis: number }> {
  const http = await freePort();
  let lambda = await freePort();
  while (lambda === http) lambda = await freePort();
  let redis = await freePort();
  while (redis === http || redis === lambda) redis = await freePort();
  return { http, lambda, redis };
}

export type StackKind = 'offline' | 'redis' | 'other';

/** `npm run dev` on free ports, in its own process group. */
export class DevStack {
  readonly child: ChildProcess;
  readonly baseUrl: string;
  readonly token = randomBytes(16).toString('hex');
  /** The PID of the stack's redis-server, from its "[dev] redis-server ... (pid N)" line. */
  redisPid: number | undefined;
  private known: { pid: number; pgid: number }[] = [];
  private stopped: Promise<void> | undefined;
  private tail: string[] = [];
  private partial = new Map<string, string>();

  /** Starts `npm run dev` on three free ports; `onJson` gets each JSON log line, parsed, with its text. */
  static async start(onJson: (entry: Record<string, unknown>, line: string) => void): Promise<DevStack> {
    return new DevStack(await threePorts(), onJson);
  }

  private constructor(
    readonly ports: { http: number; lambda: number; redis: number },
    private readonly onJson: (entry: Record<string, unknown>, line: string) => void,
  ) {
    this.baseUrl = `http://127.0.0.1:${ports.http}`;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(ports.http),
      LAMBDA_PORT: String(ports.lambda),
      DEV_REDIS_PORT: String(ports.redis),
      API_TOKEN: this.token,
      LOG_LEVEL: 'info',
    };
    delete env.REDIS_URL; // npm run dev starts its own redis-server
    this.child = spawn('npm', ['run', 'dev'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (chunk: Buffer) => this.push('out', chunk));
    this.child.stderr!.on('data', (chunk: Buffer) => this.push('err', chunk));
  }

  private push(stream: string, chunk: Buffer): void {
    const parts = ((this.partial.get(stream) ?? '') + chunk.toString('utf8')).split('\n');
    this.partial.set(stream, parts.pop() ?? '');
    for (const line of parts) this.line(line);
  }

  private line(line: string): void {
    const pid = /\[dev\] redis-server .* \(pid (\d+)/.exec(line);
    if (pid) this.redisPid = Number(pid[1]);
    if (line.startsWith('{')) {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      return this.onJson(entry, line);
    }
    if (line.trim() === '') return;
    this.tail.push(line);
    if (this.tail.length > 60) this.tail.shift();
  }

  /** The stack's last 60 lines that are not JSON log lines. */
  lastLines(): string {
    return this.tail.join('\n');
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the JSON answer of any endpoint; the benchmark reads the fields it needs
  async api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
    const res = await fetch(this.baseUrl + path, {
      method,
      headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' },
      signal: AbortSignal.timeout(30_000),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }

  /** Resolves once GET /topics answers 200; throws when the stack exits or is not ready in time. */
  async ready(timeoutMs: number): Promise<number> {
    const started = Date.now();
    for (;;) {
      if (this.child.exitCode !== null || this.child.signalCode !== null)
        throw new Error(`npm run dev exited before it was ready. Its last lines:\n${this.lastLines()}`);
      try {
        if ((await this.api('GET', '/topics')).status === 200) break;
      } catch {}
      if (Date.now() - started > timeoutMs)
        throw new Error(`npm run dev was not ready within ${timeoutMs / 1000} s. Its last lines:\n${this.lastLines()}`);
      await sleep(500);
    }
    this.known = descendants(this.child.pid!);
    return Date.now() - started;
  }

  /**
   * Seconds the stack's threads have run on a CPU and waited on a run queue for one so far
   * (/proc/<pid>/task/<tid>/schedstat), by process kind. Threads that ended are not counted.
   */
  cpu(): Record<StackKind, { run: number; wait: number }> {
    const out: Record<StackKind, { run: number; wait: number }> = {
      offline: { run: 0, wait: 0 },
      redis: { run: 0, wait: 0 },
      other: { run: 0, wait: 0 },
    };
    for (const { pid } of descendants(this.child.pid!)) {
      try {
        const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        const kind: StackKind = cmd.includes('redis-server')
          ? 'redis'
          : cmd.includes('serverless')
            ? 'offline'
            : 'other';
        for (const tid of readdirSync(`/proc/${pid}/task`)) {
          const [run = '0', wait = '0'] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').trim().split(' ');
          out[kind].run += Number(run) / 1e9;
          out[kind].wait += Number(wait) / 1e9;
        }
      } catch {} // ended meanwhile
    }
    return out;
  }

  /**
   * SIGTERM to npm's process group (scripts/dev.ts then stops serverless offline and its
   * redis-server); whatever of its children is left after 30 s gets SIGKILL by PID or group.
   */
  stop(): Promise<void> {
    return (this.stopped ??= (async () => {
      const pgid = this.child.pid!;
      const known = [...this.known, ...descendants(pgid)];
      signalGroup(pgid, 'SIGTERM');
      await Promise.race([exited(this.child), sleep(30_000)]);
      if (!groupGone(pgid)) signalGroup(pgid, 'SIGKILL');
      for (const p of known) {
        if (p.pgid !== pgid && !groupGone(p.pgid)) signalGroup(p.pgid, 'SIGKILL');
        if (alive(p.pid)) process.kill(p.pid, 'SIGKILL');
      }
      if (this.redisPid && alive(this.redisPid)) process.kill(this.redisPid, 'SIGKILL');
    })());
  }
}
