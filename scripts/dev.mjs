#!/usr/bin/env node
// `npm run dev`: the whole stack on this machine.
//
//   1. Unless REDIS_URL is set, starts redis-server on 127.0.0.1:DEV_REDIS_PORT (default 6389),
//      data kept in .data/redis (append-only file, fsync every second).
//   2. Starts `serverless offline start --stage local` (HTTP API on PORT, default 3000; Lambda
//      invoke API on LAMBDA_PORT, default 3002), in its own process group.
//   3. Waits until the HTTP API answers, then prints the base URL, token and curl examples.
//
// Ctrl-C (SIGINT), SIGTERM or SIGHUP stops serverless offline (SIGTERM to its process group,
// SIGKILL after 5 s), then the redis-server this script started (by PID), and exits. If either
// child dies on its own, the other is stopped and the script exits non-zero.
//
// Environment: REDIS_URL (use this Redis, start none), DEV_REDIS_PORT, API_TOKEN (default
// dev-token), WEBHOOK_SECRET, PORT, LAMBDA_PORT. Plain Node, no dependencies.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import net from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const STOP_GRACE_MS = 5_000;
const READY_TIMEOUT_MS = 120_000;

const env = process.env;
const token = env.API_TOKEN || 'dev-token';
const httpPort = intEnv('PORT', 3000);
const lambdaPort = intEnv('LAMBDA_PORT', 3002);
const redisPort = intEnv('DEV_REDIS_PORT', 6389);
const baseUrl = `http://127.0.0.1:${httpPort}`;

/** @type {import('node:child_process').ChildProcess | undefined} */ let redis;
/** @type {import('node:child_process').ChildProcess | undefined} */ let offline;
let redisAlive = false;
let offlineAlive = false;
let stopping = false;

function intEnv(name, fallback) {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 65535) fail(`${name}=${raw} is not a TCP port number`);
  return n;
}

function say(line) {
  process.stderr.write(`[dev] ${line}\n`);
}

function fail(message, code = 1) {
  process.stderr.write(`\n[dev] ${message}\n\n`);
  process.exit(code);
}

/** True when something already listens on 127.0.0.1:port (or the port cannot be bound). */
async function portBusy(port) {
  const answers = await new Promise((done) => {
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
function redisPing(port) {
  return new Promise((done) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let reply = '';
    const finish = (ok) => (socket.destroy(), done(ok));
    socket.setTimeout(1000, () => finish(false));
    socket.once('error', () => finish(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1');
      if (reply.includes('\r\n')) finish(reply.startsWith('+PONG'));
    });
  });
}

/** Resolves true when the process group `pgid` has no process left. */
function groupGone(pgid) {
  try {
    process.kill(-pgid, 0);
    return false;
  } catch (error) {
    return error.code === 'ESRCH';
  }
}

function waitExit(child, isAlive) {
  return isAlive() ? new Promise((done) => child.once('exit', () => done())) : Promise.resolve();
}

async function stopOffline() {
  if (!offline) return;
  const pgid = offline.pid;
  if (offlineAlive || !groupGone(pgid)) {
    say('stopping serverless offline');
    try {
      process.kill(-pgid, 'SIGTERM');
    } catch {}
    const timer = setTimeout(() => {
      say(`serverless offline still running after ${STOP_GRACE_MS / 1000} s: SIGKILL`);
      try {
        process.kill(-pgid, 'SIGKILL');
      } catch {}
    }, STOP_GRACE_MS);
    await waitExit(offline, () => offlineAlive);
    clearTimeout(timer);
    // The leader is gone: whatever is left of its group (the esbuild service) goes too. (Not
    // waiting for the group to vanish: exited helpers stay zombies until init reaps them.)
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {}
  }
}

async function stopRedis() {
  if (!redis || !redisAlive) return;
  say(`stopping redis-server (pid ${redis.pid})`);
  process.kill(redis.pid, 'SIGTERM');
  const timer = setTimeout(() => {
    if (!redisAlive) return;
    say(`redis-server still running after ${STOP_GRACE_MS / 1000} s: SIGKILL`);
    process.kill(redis.pid, 'SIGKILL');
  }, STOP_GRACE_MS);
  await waitExit(redis, () => redisAlive);
  clearTimeout(timer);
}

/** Stops both children (offline first: its functions use Redis), then exits with `code`. */
async function shutdown(code, reason) {
  if (stopping) return;
  stopping = true;
  if (reason) say(reason);
  await stopOffline().catch((error) => say(`could not stop serverless offline: ${error.message}`));
  await stopRedis().catch((error) => say(`could not stop redis-server: ${error.message}`));
  say(code === 0 ? 'stopped' : 'stopped after an error');
  process.exit(code);
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  // A second signal (npm forwards Ctrl-C to us besides the terminal) changes nothing: the
  // SIGKILL after 5 s already covers a child that does not stop.
  process.on(signal, () => void shutdown(0, `got ${signal}`));
}

// Last resort, if this script dies on an exception: never leave children behind.
process.on('exit', () => {
  if (offline && !groupGone(offline.pid)) {
    try {
      process.kill(-offline.pid, 'SIGKILL');
    } catch {}
  }
  if (redis && redisAlive) {
    try {
      process.kill(redis.pid, 'SIGTERM');
    } catch {}
  }
});
process.on('uncaughtException', (error) => {
  say(`internal error: ${error.stack ?? error}`);
  void shutdown(1);
});

async function startRedis() {
  const check = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (check.error) {
    fail(
      'redis-server was not found on PATH. Install it, then run `npm run dev` again:\n' +
        '    Debian/Ubuntu:  sudo apt-get install redis-server\n' +
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
  const dataDir = join(root, '.data', 'redis');
  mkdirSync(dataDir, { recursive: true });
  const args = [
    '--port', String(redisPort),
    '--bind', '127.0.0.1',
    '--dir', dataDir,
    '--appendonly', 'yes',
    '--appendfsync', 'everysec',
    '--save', '',
    '--loglevel', 'warning',
  ];
  // Its own process group: Ctrl-C reaches only this script, which stops offline before Redis.
  redis = spawn('redis-server', args, { cwd: root, detached: true, stdio: ['ignore', 'inherit', 'inherit'] });
  redisAlive = true;
  redis.once('exit', (code, signal) => {
    redisAlive = false;
    if (!stopping) void shutdown(1, `redis-server exited unexpectedly (${signal ?? `code ${code}`})`);
  });
  const end = Date.now() + 10_000;
  while (!(await redisPing(redisPort))) {
    if (!redisAlive) return; // the exit handler reports and shuts down
    if (Date.now() > end) await shutdown(1, `redis-server did not answer PING on port ${redisPort} within 10 s`);
    await sleep(50);
  }
  say(`redis-server ${check.stdout.match(/v=(\S+)/)?.[1] ?? ''} up on 127.0.0.1:${redisPort} (pid ${redis.pid}, data in .data/redis)`);
}

async function main() {
  const serverlessBin = join(root, 'node_modules', '.bin', 'serverless');
  if (!existsSync(serverlessBin)) fail('node_modules/.bin/serverless is missing: run `npm install` first.');

  for (const [name, port] of [['PORT', httpPort], ['LAMBDA_PORT', lambdaPort]]) {
    if (await portBusy(port)) {
      fail(`port ${port} on 127.0.0.1 (${name}) is already in use: stop what runs there, or pick another, e.g. ${name}=${port + 100} npm run dev`);
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

  const started = Date.now();
  say('starting serverless offline (stage local)');
  offline = spawn(process.execPath, [serverlessBin, 'offline', 'start', '--stage', 'local'], {
    cwd: root,
    detached: true, // own process group: stopped as a whole, and Ctrl-C does not reach it directly
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...env, REDIS_URL: redisUrl, API_TOKEN: token, PORT: String(httpPort), LAMBDA_PORT: String(lambdaPort) },
  });
  offlineAlive = true;
  offline.once('exit', (code, signal) => {
    offlineAlive = false;
    if (!stopping) void shutdown(1, `serverless offline exited unexpectedly (${signal ?? `code ${code}`})`);
  });

  const end = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (stopping) return;
    try {
      await fetch(`${baseUrl}/topics`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(5_000) });
      break; // any HTTP answer: the server is up (the route itself may still fail)
    } catch {}
    if (Date.now() > end) return shutdown(1, `the HTTP API did not answer on ${baseUrl} within ${READY_TIMEOUT_MS / 1000} s`);
    await sleep(200);
  }

  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const auth = `-H 'Authorization: Bearer ${token}'`;
  process.stdout.write(
    [
      '',
      `  Delay queue running (ready in ${seconds} s)`,
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

main().catch((error) => shutdown(1, `failed: ${error.stack ?? error}`));
