// `npm run dev`: the whole stack on this machine.
//
//   1. Unless REDIS_URL is set, starts redis-server on 127.0.0.1:DEV_REDIS_PORT (default 6389),
//      data kept in .data/redis (append-only file, fsync every second).
//   2. Starts `serverless offline start --stage local` (HTTP API on PORT, default 3000; Lambda
//      invoke API on LAMBDA_PORT, default 3002), in its own process group, its output shown as it
//      comes.
//   3. Says what it is waiting for (building the functions, starting offline, the first answer)
//      and keeps waiting while offline makes progress (prints or uses CPU). It gives up when
//      offline has done neither for DEV_STALL_SECONDS (default 120) or is not ready after
//      DEV_READY_SECONDS (default 600), and then prints offline's last lines and what to try.
//   4. Prints the base URL, token and curl examples.
//
// Ctrl-C (SIGINT), SIGTERM or SIGHUP stops serverless offline (SIGTERM to its process group,
// SIGKILL after 5 s), then the redis-server this script started (by PID), and exits. If either
// child dies on its own, the other is stopped and the script exits non-zero.
//
// Environment: REDIS_URL (use this Redis, start none), DEV_REDIS_PORT, API_TOKEN (default
// dev-token), WEBHOOK_SECRET, PORT, LAMBDA_PORT, DEV_STALL_SECONDS, DEV_READY_SECONDS.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import { join, resolve } from 'node:path';
import {
  groupCpuTicks,
  groupGone,
  OFFLINE_READY_LIMIT_MS,
  OFFLINE_STALL_MS,
  signalGroup,
  stopChild,
  until,
  waitWhileProgressing,
} from './support/process';

const root = resolve(__dirname, '..');
const env = process.env;
const token = env.API_TOKEN || 'dev-token';
const httpPort = intEnv('PORT', 3000, 65535);
const lambdaPort = intEnv('LAMBDA_PORT', 3002, 65535);
const redisPort = intEnv('DEV_REDIS_PORT', 6389, 65535);
const stallMs = intEnv('DEV_STALL_SECONDS', OFFLINE_STALL_MS / 1000, 86_400) * 1000;
const readyMs = intEnv('DEV_READY_SECONDS', OFFLINE_READY_LIMIT_MS / 1000, 86_400) * 1000;
const baseUrl = `http://127.0.0.1:${httpPort}`;
const TAIL_LINES = 40;
const REPORT_EVERY_MS = 15_000;

let redis: ChildProcess | undefined;
let offline: ChildProcess | undefined;
let stopping = false;
const alive = (child: ChildProcess | undefined) =>
  child !== undefined && child.exitCode === null && child.signalCode === null;

function intEnv(name: string, fallback: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max) fail(`${name}=${raw} must be a whole number from 1 to ${max}`);
  return n;
}

function say(line: string): void {
  process.stderr.write(`[dev] ${line}\n`);
}

function fail(message: string, code = 1): never {
  process.stderr.write(`\n[dev] ${message}\n\n`);
  process.exit(code);
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** True when something already listens on 127.0.0.1:port (or the port cannot be bound). */
async function portBusy(port: number): Promise<boolean> {
  const answers = await new Promise<boolean>((done) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.setTimeout(1000);
    socket.once('connect', () => (socket.destroy(), done(true)));
    socket.once('timeout', () => (socket.destroy(), done(false)));
    socket.once('error', () => done(false));
  });
  if (answers) return true;
  return new Promise((done) => {
    const server = net.createServer();
    server.once('error', () => done(true));
    server.listen(port, '127.0.0.1', () => server.close(() => done(false)));
  });
}

/** Sends PING over plain RESP and resolves true on +PONG. */
function redisPing(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let reply = '';
    const finish = (ok: boolean) => (socket.destroy(), done(ok));
    socket.setTimeout(1000, () => finish(false));
    socket.once('error', () => finish(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString('latin1');
      if (reply.includes('\r\n')) finish(reply.startsWith('+PONG'));
    });
  });
}

/** The last lines of a child's output, kept for the report when it does not come up. */
class Tail {
  private lines: string[] = [];
  private partial = '';
  lastAt = Date.now();
  lastLine = '';
  push(chunk: Buffer): void {
    this.lastAt = Date.now();
    const text = this.partial + chunk.toString('utf8');
    const parts = text.split('\n');
    this.partial = parts.pop() ?? '';
    for (const line of parts) {
      // eslint-disable-next-line no-control-regex -- \x1b starts the ANSI colour codes this strips
      const plain = line.replace(/\x1b\[[0-9;]*m/g, '').trimEnd();
      if (plain.trim() === '') continue;
      this.lines.push(plain);
      this.lastLine = plain.trim();
    }
    if (this.lines.length > TAIL_LINES) this.lines.splice(0, this.lines.length - TAIL_LINES);
  }
  text(): string {
    return [...this.lines, this.partial].filter(Boolean).join('\n');
  }
}

/** Stops both children (offline first: its functions use Redis), then exits with `code`. */
async function shutdown(code: number, reason?: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  if (reason) say(reason);
  if (offline && (alive(offline) || !groupGone(offline.pid!))) {
    say('stopping serverless offline');
    await stopChild(offline, { group: true }).catch((error: Error) =>
      say(`could not stop serverless offline: ${error.message}`),
    );
  }
  if (alive(redis)) {
    say(`stopping redis-server (pid ${redis!.pid})`);
    await stopChild(redis!).catch((error: Error) => say(`could not stop redis-server: ${error.message}`));
  }
  say(code === 0 ? 'stopped' : 'stopped after an error');
  process.exit(code);
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  // A second signal (npm forwards Ctrl-C to us besides the terminal) changes nothing: the
  // SIGKILL after 5 s already covers a child that does not stop.
  process.on(signal, () => void shutdown(0, `got ${signal}`));
}

// Last resort, if this script dies on an exception: never leave children behind.
process.on('exit', () => {
  if (offline?.pid && !groupGone(offline.pid)) signalGroup(offline.pid, 'SIGKILL');
  if (alive(redis)) redis!.kill('SIGTERM');
});
process.on('uncaughtException', (error) => {
  say(`internal error: ${error.stack ?? error}`);
  void shutdown(1);
});

async function startRedis(): Promise<void> {
  const check = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (check.error) {
    fail(
      'redis-server was not found on PATH. Install it, then run `npm run dev` again:\n' +
        '    Debian/Ubuntu:  sudo apt-get install -y redis-server\n' +
        '    macOS:          brew install redis\n' +
        'or point the dev server at a Redis you already run: REDIS_URL=redis://host:port npm run dev',
    );
  }
  if (await portBusy(redisPort)) {
    fail(
      `port ${redisPort} on 127.0.0.1 is already in use, so redis-server cannot start there.\n` +
        '    If it is a Redis left over from an earlier `npm run dev`, stop it: ' +
        `redis-cli -p ${redisPort} shutdown\n` +
        `    or use another port: DEV_REDIS_PORT=6390 npm run dev\n` +
        `    or use that Redis as it is: REDIS_URL=redis://127.0.0.1:${redisPort} npm run dev`,
    );
  }
  say(`starting redis-server on 127.0.0.1:${redisPort}`);
  const dataDir = join(root, '.data', 'redis');
  mkdirSync(dataDir, { recursive: true });
  const args = [
    '--port',
    String(redisPort),
    '--bind',
    '127.0.0.1',
    '--dir',
    dataDir,
    '--appendonly',
    'yes',
    '--appendfsync',
    'everysec',
    '--save',
    '',
    '--loglevel',
    'warning',
  ];
  // Its own process group: Ctrl-C reaches only this script, which stops offline before Redis.
  const child = spawn('redis-server', args, { cwd: root, detached: true, stdio: ['ignore', 'inherit', 'inherit'] });
  redis = child;
  child.once('exit', (code, signal) => {
    if (!stopping) void shutdown(1, `redis-server exited unexpectedly (${signal ?? `code ${code}`})`);
  });
  const up = await until(async () => !alive(child) || (await redisPing(redisPort)), 30_000, 50);
  if (!alive(child)) await new Promise(() => undefined); // the exit handler reports and shuts down
  if (!up) await shutdown(1, `redis-server did not answer PING on port ${redisPort} within 30 s`);
  say(
    `redis-server ${check.stdout.match(/v=(\S+)/)?.[1] ?? ''} up on 127.0.0.1:${redisPort} (pid ${child.pid}, data in .data/redis)`,
  );
}

/** Phases of offline's start, recognised in its output, with what to say when one is reached. */
const PHASES: { pattern: RegExp; say: string; waiting: string }[] = [
  {
    pattern: /compiling with esbuild/i,
    say: 'building the functions with esbuild',
    waiting: 'building the functions with esbuild',
  },
  {
    pattern: /compiling completed|compiled successfully/i,
    say: 'functions built; serverless offline is starting its servers',
    waiting: 'waiting for serverless offline to start its servers',
  },
  {
    pattern: /listening on|server ready/i,
    say: 'serverless offline is listening; waiting for the first answer of the HTTP API',
    waiting: 'waiting for the first answer of the HTTP API',
  },
];

/** Resolves when the HTTP API answers; gives up (and shuts down) when offline stalls or takes too long. */
async function waitUntilReady(child: ChildProcess, tail: Tail, started: number): Promise<void> {
  let phase = -1;
  let lastReport = Date.now();
  let reportCpu = groupCpuTicks(child.pid!) ?? 0;
  const outcome = await waitWhileProgressing({
    pgid: child.pid!,
    stallMs,
    limitMs: readyMs - (Date.now() - started),
    lastOutputAt: () => tail.lastAt,
    abort: () => (stopping ? 'stopping' : undefined),
    ready: async () => {
      await fetch(`${baseUrl}/topics`, {
        headers: { authorization: `Bearer ${token}` },
        signal: AbortSignal.timeout(5_000),
      });
      return true; // any HTTP answer: the server is up (the route itself may still fail)
    },
    onWait: ({ cpu }) => {
      const now = Date.now();
      for (let p = phase + 1; p < PHASES.length; p++) {
        if (PHASES[p]!.pattern.test(tail.text())) {
          phase = p;
          say(`${PHASES[p]!.say} (${seconds(now - started)})`);
        }
      }
      if (now - lastReport < REPORT_EVERY_MS) return;
      lastReport = now;
      const busy = cpu === null ? '' : cpu > reportCpu ? ', busy' : ', idle';
      reportCpu = cpu ?? 0;
      const doing =
        phase < 0
          ? 'still loading serverless and building the functions (offline prints when done)'
          : `still ${PHASES[phase]!.waiting}`;
      say(
        `${doing}: ${seconds(now - started)} so far${busy}; offline last printed ${tail.lastLine ? `${seconds(now - tail.lastAt)} ago: "${tail.lastLine.slice(0, 100)}"` : 'nothing yet'}`,
      );
    },
  });
  if (outcome.result === 'ready' || outcome.result === 'aborted') return;
  const why =
    outcome.result === 'stalled'
      ? `serverless offline printed nothing and used no CPU for ${seconds(stallMs)}`
      : `the HTTP API did not answer on ${baseUrl} within ${seconds(readyMs)}, although offline kept working`;
  process.stderr.write(
    `\n[dev] ${why}. Its last lines:\n${tail.text().replace(/^/gm, '    | ')}\n\n` +
      '[dev] What to try:\n' +
      '    - look above for a build error (esbuild) or a port already in use, and fix it;\n' +
      `    - on a busy machine, wait longer: DEV_STALL_SECONDS=${(stallMs / 1000) * 2} DEV_READY_SECONDS=${(readyMs / 1000) * 2} npm run dev;\n` +
      '    - run it by hand to see everything: npx serverless offline start --stage local\n',
  );
  await shutdown(1, 'giving up');
}

async function main(): Promise<void> {
  const serverlessBin = join(root, 'node_modules', '.bin', 'serverless');
  if (!existsSync(serverlessBin)) fail('node_modules/.bin/serverless is missing: run `npm ci` first.');
  for (const [name, port] of [
    ['PORT', httpPort],
    ['LAMBDA_PORT', lambdaPort],
  ] as const) {
    if (await portBusy(port)) {
      fail(
        `port ${port} on 127.0.0.1 (${name}) is already in use: stop what runs there, or pick another, e.g. ${name}=${port + 100} npm run dev`,
      );
    }
  }
  if (httpPort === lambdaPort) fail('PORT and LAMBDA_PORT must differ');

  let redisUrl = env.REDIS_URL;
  if (redisUrl) {
    say(`using REDIS_URL=${redisUrl} (no redis-server started)`);
  } else {
    await startRedis();
    redisUrl = `redis://127.0.0.1:${redisPort}`;
  }
  if (stopping) return;

  // Bundles left in .esbuild by an earlier run survive a killed offline. One left by an older
  // version (CommonJS `addJob.js`) is what offline loads for `functions/addJob.handler` even when
  // today's build wrote `addJob.mjs` beside it: the old code would answer (seen here). Build afresh.
  rmSync(join(root, '.esbuild'), { recursive: true, force: true });
  const started = Date.now();
  say(
    'starting serverless offline (stage local): it builds the functions first, which takes a while on a busy machine',
  );
  const child = spawn(process.execPath, [serverlessBin, 'offline', 'start', '--stage', 'local'], {
    cwd: root,
    detached: true, // own process group: stopped as a whole, and Ctrl-C does not reach it directly
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...env,
      REDIS_URL: redisUrl,
      API_TOKEN: token,
      PORT: String(httpPort),
      LAMBDA_PORT: String(lambdaPort),
      ...(process.stdout.isTTY ? { FORCE_COLOR: '1' } : {}),
    },
  });
  offline = child;
  const tail = new Tail();
  child.stdout!.on('data', (chunk: Buffer) => (tail.push(chunk), process.stdout.write(chunk)));
  child.stderr!.on('data', (chunk: Buffer) => (tail.push(chunk), process.stderr.write(chunk)));
  child.once('exit', (code, signal) => {
    if (!stopping)
      void shutdown(
        1,
        `serverless offline exited unexpectedly (${signal ?? `code ${code}`}). Its last lines:\n${tail.text().replace(/^/gm, '    | ')}`,
      );
  });

  await waitUntilReady(child, tail, started);
  if (stopping) return;
  const auth = `-H 'Authorization: Bearer ${token}'`;
  process.stdout.write(
    [
      '',
      `  Delay queue running (ready in ${seconds(Date.now() - started)})`,
      `    API:        ${baseUrl}`,
      `    Token:      ${token}`,
      `    Redis:      ${redisUrl}`,
      `    Lambda API: http://127.0.0.1:${lambdaPort}`,
      '',
      '  Add a job to topic "example", due in 5 seconds:',
      `    curl -sS -X POST ${baseUrl}/jobs ${auth} -H 'Content-Type: application/json' \\`,
      `      -d '{"topic":"example","delay":5,"body":{"hello":"world"}}'`,
      '',
      '  Read it back (<id> is job.id in the answer above):',
      `    curl -sS ${auth} ${baseUrl}/jobs/example/<id>`,
      '',
      '  Ctrl-C stops everything.',
      '',
      '',
    ].join('\n'),
  );
}

main().catch((error: Error) => shutdown(1, `failed: ${error.stack ?? error}`));
