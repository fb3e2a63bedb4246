/**
 * The fault-injection harness: killable Lambda hosts (host.ts, bundled once with esbuild so a
 * restart takes ~100 ms), a router that plays the Lambda invoke API (accepts Event invokes with
 * 202 and delivers them to the host of the function, as AWS's async queue does; can be closed to
 * make the invoke API unreachable), a webhook receiver that records every delivery, and a
 * ledger of accepted jobs checked against the deliveries.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildSync } from 'esbuild';
import { exited, killOnExit, stopChild } from '../../../scripts/support/process';

export const FAULT_PREFIX = 'dq-fault-';
export const FAULT_SECRET = 'fault-webhook-secret';
const ROOT = resolve(__dirname, '..', '..', '..');

let bundle: string | undefined;
let bundleDir: string | undefined;
/** host.ts bundled into one CommonJS file (the Lua scripts inlined as text, as on Lambda). */
export function hostBundle(): string {
  if (bundle) return bundle;
  bundleDir = mkdtempSync(join(tmpdir(), 'dq-fault-host-'));
  bundle = join(bundleDir, 'host.cjs');
  buildSync({
    entryPoints: [join(ROOT, 'test', 'fault', 'support', 'host.ts')],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    outfile: bundle,
    loader: { '.lua': 'text' },
    logLevel: 'error',
  });
  return bundle;
}

process.once('exit', () => {
  if (bundleDir) rmSync(bundleDir, { recursive: true, force: true });
});

export interface Host {
  pid: number;
  port: number;
  alive(): boolean;
  /**
   * Sends `signal` (SIGKILL by default; SIGKILL after a grace period for another) and waits for the process to exit.
   */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Everything it wrote, for diagnostics. */
  output(): string;
}

const HOST_START_MS = 60_000; // a bundle loads in ~100 ms; with both cores busy, seconds

/** Starts a host serving `functions`, with `env` on top of the Lambdas' environment. */
export async function startHost(
  functions: string[],
  env: Record<string, string>,
  options: { skewMs?: number } = {},
): Promise<Host> {
  const args = [
    ...(options.skewMs ? ['--import', join(ROOT, 'test', 'fault', 'support', 'skew.mjs')] : []),
    hostBundle(),
  ];
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    ...env,
    HOST_FUNCTIONS: functions.join(','),
    FAULT_SKEW_MS: String(options.skewMs ?? 0),
  };
  delete childEnv.NODE_TEST_CONTEXT;
  delete childEnv.NODE_OPTIONS;
  const child = spawn(process.execPath, args, { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  killOnExit(child);
  const exit = exited(child);
  const alive = () => child.exitCode === null && child.signalCode === null;
  const kill = async (signal: NodeJS.Signals = 'SIGKILL') => {
    if (alive()) await stopChild(child, { signal });
    await exit;
  };
  let out = '';
  try {
    const port = await new Promise<number>((resolvePort, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`host did not start within ${HOST_START_MS / 1000} s: ${out}`)),
        HOST_START_MS,
      );
      child.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        const m = /READY (\d+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolvePort(Number(m[1]));
        }
      });
      child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
      void exit.then(() => {
        clearTimeout(timer);
        reject(new Error(`host exited at start: ${out}`));
      });
    });
    return { pid: child.pid!, port, alive, kill, output: () => out.slice(-20_000) };
  } catch (error) {
    await kill(); // a host that failed to start is not left behind
    throw error;
  }
}

/**
 * A function's current host; replaced by `restart()` after a kill, as Lambda starts a new
 * instance. Starts, restarts and stop are serialized (a restart asked for while another is under
 * way waits for it, then kills the host that one started), and every host the slot ever started
 * is remembered, so `stop()` leaves none alive, whatever overlapped.
 */
export class HostSlot {
  host: Host | undefined;
  restarts = 0;
  private readonly started = new Set<Host>();
  private last: Promise<unknown> = Promise.resolve();
  constructor(
    readonly functions: string[],
    private readonly env: Record<string, string>,
    private readonly options: { skewMs?: number } = {},
  ) {}

  /** Runs `step` once every earlier start, restart or stop of this slot has settled. */
  private serial<T>(step: () => Promise<T>): Promise<T> {
    const run = this.last.then(step, step);
    this.last = run.catch(() => undefined);
    return run;
  }

  private async launch(): Promise<Host> {
    const host = await startHost(this.functions, this.env, this.options);
    this.started.add(host);
    this.host = host;
    return host;
  }

  start(): Promise<Host> {
    return this.serial(() => this.launch());
  }

  /** SIGKILL, then a fresh process. */
  restart(): Promise<Host> {
    return this.serial(async () => {
      await this.host?.kill('SIGKILL');
      this.restarts += 1;
      return this.launch();
    });
  }

  /** SIGKILLs every host this slot started and waits until each has exited. */
  stop(): Promise<void> {
    return this.serial(async () => {
      await Promise.all([...this.started].map((h) => h.kill('SIGKILL')));
      this.started.clear();
    });
  }

  /** How many hosts of this slot are alive (none after stop()). */
  alive(): number {
    return [...this.started].filter((h) => h.alive()).length;
  }
}

/** What the router does with one invoke: deliver it, or drop it after running `then` (a fault). */
export type InvokeDecision = { action: 'deliver' } | { action: 'fault'; run: () => Promise<void> };

/**
 * The Lambda invoke API as the functions see it (DQ_LAMBDA_ENDPOINT). An Event invoke is
 * answered 202 and then delivered to the function's host, retried while that host is being
 * restarted; a RequestResponse invoke (the test's ticks) is answered when delivered.
 */
export class Router {
  private server: Server | undefined;
  port = 0;
  readonly slots = new Map<string, HostSlot>();
  invokes: Record<string, number> = {};
  onInvoke: (name: string, payload: string) => InvokeDecision = () => ({ action: 'deliver' });

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  route(slot: HostSlot): void {
    for (const name of slot.functions) this.slots.set(name, slot);
  }

  async open(port = 0): Promise<void> {
    const server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((done, fail) => {
      server.once('error', fail);
      server.listen(port, '127.0.0.1', () => done());
    });
    this.server = server;
    this.port = (server.address() as { port: number }).port;
  }

  /** Stops listening: invokes get ECONNREFUSED, as when the invoke API is unreachable. */
  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((done) => server.close(() => done()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const match = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/.exec(req.url ?? '');
      const name = match ? decodeURIComponent(match[1]!).slice(FAULT_PREFIX.length) : '';
      const slot = this.slots.get(name);
      if (!slot) {
        res.writeHead(404, { 'x-amzn-errortype': 'ResourceNotFoundException' }).end('{}');
        return;
      }
      const payload = Buffer.concat(chunks).toString('utf8');
      this.invokes[name] = (this.invokes[name] ?? 0) + 1;
      const decision = this.onInvoke(name, payload);
      if (decision.action === 'fault') {
        // the caller is killed before the invoke is accepted: it never learns the outcome
        void decision.run().finally(() => res.destroy());
        return;
      }
      const type = String(req.headers['x-amz-invocation-type'] ?? 'RequestResponse');
      if (type === 'Event') {
        res.writeHead(202).end();
        void this.deliver(slot, req.url!, payload, type).catch(() => undefined);
      } else {
        this.deliver(slot, req.url!, payload, type).then(
          (body) => res.writeHead(200, { 'content-type': 'application/json' }).end(body),
          (error) => res.writeHead(502).end(String(error)),
        );
      }
    });
  }

  private async deliver(slot: HostSlot, path: string, payload: string, type: string): Promise<string> {
    const end = Date.now() + 20_000;
    for (;;) {
      const host = slot.host;
      if (host?.alive()) {
        try {
          return await post(host.port, path, payload, type);
        } catch (error) {
          if (Date.now() > end) throw error;
        }
      } else if (Date.now() > end) throw new Error('no host');
      await sleep(50);
    }
  }
}

function post(port: number, path: string, payload: string, type: string): Promise<string> {
  return new Promise((done, fail) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        headers: { 'x-amz-invocation-type': type, 'content-type': 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          res.statusCode === 202 || res.statusCode === 200
            ? done(Buffer.concat(chunks).toString('utf8'))
            : fail(new Error(`host answered ${res.statusCode}`)),
        );
        res.on('error', fail);
      },
    );
    req.on('error', fail);
    req.end(payload);
  });
}

export interface Delivery {
  id: string;
  attempt: number;
  at: number;
  /** The request's path (with its query), and its body as sent. */
  path: string;
  body: string;
}

/**
 * The webhook target: records each delivery (job id from x-dq-job-id, attempt, arrival time)
 * and answers 200 (or what `status` says; after `delayMs`, a handler's work), unless `hold` says to
 * leave this one unanswered (a handler killed mid-job). `onAnswered` runs once a delivery ends: as
 * it is answered, or when its caller goes away first (its handler killed).
 */
export class Recorder {
  readonly deliveries: Delivery[] = [];
  hold: (delivery: Delivery) => boolean = () => false;
  onDelivery: (delivery: Delivery) => void = () => undefined;
  delayMs: (delivery: Delivery) => number = () => 0;
  onAnswered: (delivery: Delivery) => void = () => undefined;
  status: (delivery: Delivery) => number = () => 200;
  private server: Server | undefined;
  private readonly held = new Set<ServerResponse>();
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const delivery: Delivery = {
          id: String(req.headers['x-dq-job-id'] ?? ''),
          attempt: Number(req.headers['x-dq-attempt'] ?? 0),
          at: Date.now(),
          path: req.url ?? '',
          body: Buffer.concat(chunks).toString('utf8'),
        };
        this.deliveries.push(delivery);
        this.onDelivery(delivery);
        let ended = false;
        const end = () => {
          if (ended) return;
          ended = true;
          this.onAnswered(delivery);
        };
        res.on('close', end); // answered, or the caller went away (its handler killed)
        if (this.hold(delivery)) {
          this.held.add(res);
          return;
        }
        const answer = () => {
          if (res.destroyed) return;
          end();
          const status = this.status(delivery);
          res.writeHead(status, { 'content-type': 'application/json' }).end(status < 300 ? '{"ok":true}' : '{}');
        };
        const delay = this.delayMs(delivery);
        if (delay > 0) setTimeout(answer, delay);
        else answer();
      });
    });
    await new Promise<void>((done) => this.server!.listen(0, '127.0.0.1', () => done()));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  async close(): Promise<void> {
    for (const res of this.held) res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((done) => (this.server ? this.server.close(() => done()) : done()));
  }

  /** Deliveries per job id. */
  counts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const d of this.deliveries) counts.set(d.id, (counts.get(d.id) ?? 0) + 1);
    return counts;
  }
}

/** The outcome of one scenario, as RELIABILITY.md reports it. */
export interface Tally {
  scenario: string;
  accepted: number;
  delivered: number;
  missing: number;
  duplicates: number;
  missingIds: string[];
  [extra: string]: unknown;
}

/** Compares the ids accepted (201) with the deliveries: each must arrive at least once. */
export function tally(
  scenario: string,
  accepted: Iterable<string>,
  counts: Map<string, number>,
  extra: Record<string, unknown> = {},
): Tally {
  const ids = [...accepted];
  const missingIds = ids.filter((id) => !counts.has(id));
  let duplicates = 0;
  for (const id of ids) duplicates += Math.max(0, (counts.get(id) ?? 0) - 1);
  return {
    scenario,
    accepted: ids.length,
    delivered: ids.length - missingIds.length,
    missing: missingIds.length,
    duplicates,
    missingIds: missingIds.slice(0, 20),
    ...extra,
  };
}

/** Prints a tally as one line (FAULT-RESULT {...}) for RELIABILITY.md. */
export function report(t: Tally): void {
  process.stdout.write(`FAULT-RESULT ${JSON.stringify(t)}\n`);
}

export { until } from '../../../scripts/support/process';

/** The queue configuration of the fault tests: the webhook topic with a short TTR, many attempts. */
export function faultQueueConfig(overrides: Record<string, unknown> = {}): string {
  return JSON.stringify({
    partitions: 1,
    retention: 3600,
    topics: {
      webhook: {
        kind: 'webhook',
        handler: 'webhookHandler',
        ttr: 2,
        backoff: { type: 'fixed', delay: 0.2 },
        maxAttempts: 1000,
        batchSize: 1,
        concurrency: 50,
        ...overrides,
      },
    },
  });
}

/** The Lambdas' environment for the hosts. */
export function lambdaEnv(
  redisUrl: string,
  routerUrl: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    REDIS_URL: redisUrl,
    DQ_CONFIG: faultQueueConfig(),
    DQ_FUNCTION_PREFIX: FAULT_PREFIX,
    DQ_LAMBDA_ENDPOINT: routerUrl,
    API_TOKEN: 'fault-token',
    WEBHOOK_SECRET: FAULT_SECRET,
    DQ_WEBHOOK_ALLOW_PRIVATE: 'true',
    LOG_LEVEL: 'warn',
    AWS_REGION: 'us-east-1',
    // shortened timings, read by lib/core/queue-config.ts (the defaults: lease 30 s, waits 10 s, reserve 5 s, mark 30
    // s)
    DQ_SWEEPER_LEASE_MS: '2000',
    DQ_SWEEPER_MAX_WAIT_MS: '500',
    DQ_SWEEPER_RESERVE_MS: '1000',
    DQ_FANOUT_MARK_MS: '2000',
    HOST_TIMEOUT_MS: '20000',
    ...extra,
  };
}
