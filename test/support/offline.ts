/**
 * Runs `serverless offline start --stage local` for end-to-end tests, on free ports, with a
 * random API token, and stops it by process group.
 *
 * Each instance runs in its own service folder. serverless-esbuild writes its bundles to
 * `<service dir>/.esbuild/.build` (`custom.esbuild.outputWorkFolder` would move it, but only in
 * serverless.yml, and nothing on the command line sets it). Two instances started from the
 * project folder share that folder: the second one's build rewrites the first one's bundles in
 * place (same inode, measured) while the first may be loading them, both watchers rebuild into it
 * on every source change, and `npm run dev` in the project would be hit too. So startOffline
 * makes a temporary folder under os.tmpdir() holding a copy of serverless.yml (osls refuses a
 * symlinked config: it checks with lstat) and a symlink to every other top-level entry of the
 * project (functions, lib, lua, scripts, node_modules, ...), and starts serverless there: bundles
 * and watcher are per instance, starts run in parallel, no lock is needed, and the project's own
 * `.esbuild/` is never touched. Source edits still reach every instance through the symlinks;
 * serverless.yml is read once, at start.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  unlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  forget,
  freePort,
  killOnExit,
  OFFLINE_READY_LIMIT_MS,
  OFFLINE_STALL_MS,
  stopChild,
  waitWhileProgressing,
} from '../../scripts/support/process';

/** The project root (this file is test/support/offline.ts). */
export const PROJECT_ROOT = resolve(__dirname, '..', '..');

/** Function names offline exposes: `${service}-${stage}-${key}`. */
export const FUNCTION_PREFIX = 'delay-queue-local-';

const CONFIG_FILES = [
  'serverless.yml',
  'serverless.yaml',
  'serverless.json',
  'serverless.js',
  'serverless.cjs',
  'serverless.mjs',
  'serverless.ts',
];
/** Top-level entries not linked into an instance folder: build output, state, data, VCS. */
const NOT_LINKED = new Set(['.esbuild', '.serverless', '.build', '.data', '.git', ...CONFIG_FILES]);
const MAX_LOG_BYTES = 5 * 1024 * 1024;

export interface OfflineOptions {
  redisUrl: string;
  /** Extra environment for serverless offline (and so for the functions); wins over the defaults. */
  env?: Record<string, string>;
  /**
   * Give up when offline, still not answering, has printed nothing and used no CPU this long
   * (default 120 s, as `npm run dev`). A slow machine makes the start slower, not a failure.
   */
  stallMs?: number;
  /** Give up when it does not answer after this long in all, even while it keeps working (default 600 s). */
  limitMs?: number;
  /** Also copy offline's output to this process's stderr as it comes (default: env DQ_OFFLINE_ECHO=1). */
  echo?: boolean;
  /** Output kept in memory, oldest dropped first (default 5 MB). */
  maxLogBytes?: number;
}

export interface OfflineProcess {
  /** http://127.0.0.1:<httpPort> */
  baseUrl: string;
  /** http://127.0.0.1:<lambdaPort>, for invokeFunction() */
  lambdaUrl: string;
  httpPort: number;
  lambdaPort: number;
  /** The API token (API_TOKEN) of this instance: send `Authorization: Bearer <token>`. */
  token: string;
  pid: number;
  /** Milliseconds from spawn until the HTTP API answered. */
  startupMs: number;
  /** Captured stdout and stderr so far (the last 5 MB). */
  logs(): string;
  /** Stops the process group (SIGTERM, SIGKILL after 5 s), waits for it, removes the instance folder. */
  stop(): Promise<void>;
}

/** Output kept in memory, the oldest chunks dropped beyond `max` bytes. */
class LogBuffer {
  private chunks: Buffer[] = [];
  private bytes = 0;
  constructor(private readonly max: number) {}
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    while (this.bytes > this.max && this.chunks.length > 1) this.bytes -= this.chunks.shift()!.length;
  }
  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

/** A temporary service folder: a copy of the config, symlinks to everything else. */
function makeServiceDir(root: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'dq-offline-'));
  for (const name of readdirSync(root)) {
    if (NOT_LINKED.has(name)) continue;
    symlinkSync(join(root, name), join(dir, name));
  }
  for (const name of CONFIG_FILES) {
    if (existsSync(join(root, name))) copyFileSync(join(root, name), join(dir, name));
  }
  return dir;
}

/** Removes a service folder: unlinks the symlinks first, so nothing behind them can be touched. */
function removeServiceDir(dir: string): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (lstatSync(path).isSymbolicLink()) unlinkSync(path);
  }
  rmSync(dir, { recursive: true, force: true });
}

async function answers(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    await res.arrayBuffer();
    return true; // any HTTP answer (404 included) means the server listens
  } catch {
    return false;
  }
}

/**
 * Starts serverless offline (stage local) against `redisUrl` and resolves once its HTTP API and
 * Lambda API answer. Rejects, with the captured output, if it exits or does not answer in time.
 */
export async function startOffline(options: OfflineOptions): Promise<OfflineProcess> {
  const httpPort = Number(options.env?.PORT ?? (await freePort()));
  let lambdaPort = Number(options.env?.LAMBDA_PORT ?? (await freePort()));
  while (lambdaPort === httpPort) lambdaPort = await freePort();
  const token = options.env?.API_TOKEN ?? randomBytes(16).toString('hex');
  const echo = options.echo ?? process.env.DQ_OFFLINE_ECHO === '1';
  const stallMs = options.stallMs ?? OFFLINE_STALL_MS;
  const limitMs = options.limitMs ?? OFFLINE_READY_LIMIT_MS;

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    REDIS_URL: options.redisUrl,
    API_TOKEN: token,
    PORT: String(httpPort),
    LAMBDA_PORT: String(lambdaPort),
    ...options.env,
  };
  delete env.NODE_TEST_CONTEXT; // set by node --test for its subprocesses; not for this one

  const serviceDir = makeServiceDir(PROJECT_ROOT);
  const logs = new LogBuffer(options.maxLogBytes ?? MAX_LOG_BYTES);
  const started = Date.now();
  let lastOutputAt = started;
  let child: ChildProcess;
  try {
    child = spawn(
      process.execPath,
      [join(PROJECT_ROOT, 'node_modules', '.bin', 'serverless'), 'offline', 'start', '--stage', 'local'],
      {
        cwd: serviceDir,
        env,
        detached: true, // its own process group, stopped as a whole (offline, esbuild service)
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
  } catch (error) {
    removeServiceDir(serviceDir);
    throw error;
  }
  const pgid = child.pid!;
  killOnExit(child, true);
  for (const stream of [child.stdout!, child.stderr!]) {
    stream.on('data', (chunk: Buffer) => {
      lastOutputAt = Date.now();
      logs.push(chunk);
      if (echo) process.stderr.write(chunk);
    });
  }
  let alive = true;
  let exitStatus = '';
  child.once('exit', (code, signal) => {
    alive = false;
    exitStatus = signal ?? `code ${code}`;
  });
  // 'exit' can come before the pipes are drained; 'close' after: wait for it when stopping.
  const closed = new Promise<void>((done) => child.once('close', () => done()));

  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      await stopChild(child, { group: true }); // the whole group: offline and its esbuild service
      await Promise.race([closed, sleep(1_000, undefined, { ref: false })]);
      forget(child);
      removeServiceDir(serviceDir);
    })());

  const baseUrl = `http://127.0.0.1:${httpPort}`;
  const lambdaUrl = `http://127.0.0.1:${lambdaPort}`;
  // Waits as `npm run dev` does: while offline prints or uses CPU, however long that takes on a
  // busy machine; it fails when offline exits, cannot bind, or stalls (a hang).
  const outcome = await waitWhileProgressing({
    pgid,
    stallMs,
    limitMs,
    lastOutputAt: () => lastOutputAt,
    abort: () => {
      if (!alive) return `serverless offline exited before it was ready (${exitStatus})`;
      if (/EADDRINUSE/.test(logs.text()))
        return `serverless offline could not bind its ports (${httpPort}, ${lambdaPort})`;
      return undefined;
    },
    // the Lambda API starts first, the HTTP API after it: check both anyway. Offline's own lines
    // say it bound both ports: an answer alone could come from another server on a port taken
    // between freePort() and offline's listen (seen in a soak: a test's receiver answered 200).
    ready: async () => {
      const text = logs.text();
      const bound =
        text.includes(`listening on http://127.0.0.1:${lambdaPort}`) &&
        text.includes(`Server ready: http://127.0.0.1:${httpPort}`);
      return bound && (await answers(`${baseUrl}/`)) && (await answers(`${lambdaUrl}/`));
    },
  });
  if (outcome.result !== 'ready') {
    await stop();
    const why =
      outcome.result === 'aborted'
        ? outcome.reason
        : outcome.result === 'stalled'
          ? `serverless offline did not answer on ${baseUrl}: it printed nothing and used no CPU for ${(outcome.idleMs / 1000).toFixed(1)} s (a hang; ${(outcome.elapsedMs / 1000).toFixed(1)} s after its start)`
          : `serverless offline did not answer on ${baseUrl} within ${limitMs / 1000} s, although it kept working`;
    throw new Error(`${why}. Its output:\n${logs.text()}`);
  }

  return {
    baseUrl,
    lambdaUrl,
    httpPort,
    lambdaPort,
    token,
    pid: pgid,
    startupMs: Date.now() - started,
    logs: () => logs.text(),
    stop,
  };
}

export interface InvokeResult {
  /**
   * HTTP status of the invoke API: 200 (RequestResponse, even when the function threw), 202 (Event), 404 (no such
   * function).
   */
  status: number;
  /** The function's result, parsed as JSON when it is JSON; undefined when empty (Event). */
  body: unknown;
  /** 'Unhandled' when the function threw (header X-Amz-Function-Error), else undefined. */
  functionError?: string;
  /** x-amzn-ErrorType, e.g. 'ResourceNotFoundException' for an unknown function. */
  errorType?: string;
}

/**
 * Invokes a function through serverless-offline's Lambda API, as the AWS SDK would:
 * POST {lambdaUrl}/2015-03-31/functions/delay-queue-local-{name}/invocations with
 * X-Amz-Invocation-Type. `name` is the key under `functions:` in serverless.yml ('sweeper'), or
 * the full name. With 'Event' offline answers 202 at once and runs the function in the
 * background; a function that throws then kills the whole offline process (a serverless-offline
 * bug, see ../shared/TOOLCHAIN.md).
 */
export async function invokeFunction(
  lambdaUrl: string,
  name: string,
  payload: unknown = {},
  invocationType: 'RequestResponse' | 'Event' = 'RequestResponse',
): Promise<InvokeResult> {
  const functionName = name.startsWith(FUNCTION_PREFIX) ? name : `${FUNCTION_PREFIX}${name}`;
  const res = await fetch(`${lambdaUrl}/2015-03-31/functions/${encodeURIComponent(functionName)}/invocations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-amz-invocation-type': invocationType },
    body: JSON.stringify(payload ?? {}),
  });
  const text = await res.text();
  let body: unknown;
  if (text !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  return {
    status: res.status,
    body,
    ...(res.headers.get('x-amz-function-error') ? { functionError: res.headers.get('x-amz-function-error')! } : {}),
    ...(res.headers.get('x-amzn-errortype') ? { errorType: res.headers.get('x-amzn-errortype')! } : {}),
  };
}
