/**
 * `npm run ci:soak`: proves that CI holds on a busy machine. While CPU hogs keep every core busy,
 * runs `bash .ci/run` on fresh clones of HEAD, one after another, then the e2e and fault suites
 * alone, again and again, in one more fresh clone; reports pass/fail, wall time and the slowest
 * suites of each run, and writes the report and every run's log to a folder outside the repo.
 *
 *   npm run ci:soak -- [--runs 5] [--suite-runs 20] [--suites e2e,fault] [--hogs <cores>]
 *                      [--timeout-min 30] [--out <dir>] [--commit <rev>]
 *
 * Every clone is checked out at the same commit (HEAD when the soak started, or --commit), so
 * commits made meanwhile do not change what is soaked.
 * Exit status 0 only when every run passed. Each run is stopped (its process group) at
 * --timeout-min: a hang counts as a failure, it does not stall the soak.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { killOnExit, stopChild } from './support/process';

const { values: opts } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    'suite-runs': { type: 'string', default: '20' },
    suites: { type: 'string', default: 'e2e,fault' },
    hogs: { type: 'string', default: String(availableParallelism()) },
    'timeout-min': { type: 'string', default: '30' },
    out: { type: 'string' },
    commit: { type: 'string', default: 'HEAD' },
  },
});
const runs = Number(opts.runs);
const suiteRuns = Number(opts['suite-runs']);
const suites = opts.suites!.split(',').filter(Boolean);
const hogCount = Number(opts.hogs);
const timeoutMs = Number(opts['timeout-min']) * 60_000;
const root = resolve(__dirname, '..');
const out = opts.out ? resolve(opts.out) : mkdtempSync(join(tmpdir(), 'dq-soak-'));
mkdirSync(out, { recursive: true });

interface RunResult {
  name: string;
  ok: boolean;
  exit: string;
  seconds: number;
  /** "tests N pass N fail N" per test command the run printed */
  counts: string[];
  slowest: { name: string; seconds: number }[];
  log: string;
}

// Stopped by a signal: exit through process.exit, so killOnExit's handler stops the current run's
// process group and the hogs (a signal's default action would skip it and leave them running).
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, () => process.exit(130));

const results: RunResult[] = [];
const commit = spawnSync('git', ['rev-parse', '--short', opts.commit!], { cwd: root, encoding: 'utf8' }).stdout.trim();
if (!commit) throw new Error(`unknown commit ${opts.commit}`);

function say(line: string): void {
  process.stderr.write(`[soak ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}

/** CPU hogs: one busy Node process per core, stopped by PID at the end. */
function startHogs(n: number): ChildProcess[] {
  return Array.from({ length: n }, () => {
    const hog = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
    killOnExit(hog);
    return hog;
  });
}

function freshClone(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dq-soak-clone-'));
  const clone = spawnSync('git', ['clone', '-q', root, dir], { encoding: 'utf8' });
  if (clone.status !== 0) throw new Error(`git clone failed: ${clone.stderr}`);
  const checkout = spawnSync('git', ['checkout', '-q', commit], { cwd: dir, encoding: 'utf8' });
  if (checkout.status !== 0) throw new Error(`git checkout ${commit} failed: ${checkout.stderr}`);
  return dir;
}

/** Top-level suites of node's spec reporter (`✔ name (12.3ms)` at column 0), slowest first. */
function slowestSuites(log: string, n = 5): { name: string; seconds: number }[] {
  const found: { name: string; seconds: number }[] = [];
  for (const line of log.split('\n')) {
    const m = /^[✔✖] (.+) \((\d+(?:\.\d+)?)ms\)$/.exec(line);
    if (m) found.push({ name: m[1]!, seconds: Number(m[2]) / 1000 });
  }
  return found.sort((a, b) => b.seconds - a.seconds).slice(0, n);
}

function testCounts(log: string): string[] {
  const counts: string[] = [];
  const re = /^ℹ tests (\d+)\nℹ suites \d+\nℹ pass (\d+)\nℹ fail (\d+)/gm;
  for (const m of log.matchAll(re)) counts.push(`${m[2]}/${m[1]} passed, ${m[3]} failed`);
  return counts;
}

/** Runs `command` in `cwd` in its own process group, output to `logFile`; stopped at the timeout. */
async function run(
  name: string,
  command: string,
  cwd: string,
  logFile: string,
  env: NodeJS.ProcessEnv = {},
): Promise<RunResult> {
  const started = Date.now();
  const log = createWriteStream(logFile);
  const child = spawn('bash', ['-c', command], {
    cwd,
    env: { ...process.env, CI: 'true', ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  killOnExit(child, true);
  child.stdout!.pipe(log, { end: false });
  child.stderr!.pipe(log, { end: false });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    void stopChild(child, { group: true });
  }, timeoutMs);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((done) =>
    child.once('close', (c, s) => done([c, s])),
  );
  clearTimeout(timer);
  await stopChild(child, { group: true }); // whatever the run left in its group
  await new Promise<void>((done) => log.end(() => done()));
  const text = readFileSync(logFile, 'utf8');
  const result: RunResult = {
    name,
    ok: code === 0 && !timedOut,
    exit: timedOut ? `timed out after ${timeoutMs / 60_000} min` : signal ? `signal ${signal}` : `exit ${code}`,
    seconds: Math.round((Date.now() - started) / 1000),
    counts: testCounts(text),
    slowest: slowestSuites(text),
    log: logFile,
  };
  results.push(result);
  say(
    `${name}: ${result.ok ? 'PASS' : 'FAIL'} (${result.exit}) in ${result.seconds} s, load ${loadavg()[0]!.toFixed(1)}; ${result.counts.join('; ')}`,
  );
  writeReport();
  return result;
}

function writeReport(): void {
  const lines = [
    `# CI soak of ${commit}`,
    '',
    `${hogCount} CPU hog(s) on ${availableParallelism()} cores; logs in ${out}`,
    '',
    '| run | result | wall | tests | slowest suites |',
    '|---|---|---|---|---|',
    ...results.map(
      (r) =>
        `| ${r.name} | ${r.ok ? 'pass' : `**FAIL** (${r.exit})`} | ${r.seconds} s | ${r.counts.join('; ')} | ${r.slowest.map((s) => `${s.name} ${s.seconds.toFixed(0)} s`).join('; ')} |`,
    ),
    '',
  ];
  const full = results.filter((r) => r.name.startsWith('ci'));
  const suite = results.filter((r) => !r.name.startsWith('ci'));
  lines.push(
    `full .ci/run: ${full.filter((r) => r.ok).length} of ${full.length} passed, slowest ${Math.max(0, ...full.map((r) => r.seconds))} s`,
  );
  for (const s of suites) {
    const these = suite.filter((r) => r.name.startsWith(`${s} `));
    if (these.length) lines.push(`${s} suite alone: ${these.filter((r) => r.ok).length} of ${these.length} passed`);
  }
  writeFileSync(join(out, 'report.md'), lines.join('\n') + '\n');
}

async function main(): Promise<void> {
  say(
    `soak of ${commit}: ${runs} full run(s), ${suiteRuns} run(s) of ${suites.join(' + ')}, ${hogCount} hog(s); output in ${out}`,
  );
  const hogs = startHogs(hogCount);
  let clone: string | undefined;
  try {
    for (let i = 1; i <= runs; i++) {
      const dir = freshClone();
      await run(`ci ${i}`, 'bash .ci/run', dir, join(out, `ci-${i}.log`));
      rmSync(dir, { recursive: true, force: true });
    }
    if (suiteRuns > 0) {
      clone = freshClone();
      const install = await run('npm ci', 'npm ci --no-audit --no-fund', clone, join(out, 'npm-ci.log'));
      results.pop(); // setup, not a soak run
      if (!install.ok) throw new Error(`npm ci failed in ${clone}: see ${install.log}`);
      for (let i = 1; i <= suiteRuns; i++) {
        for (const s of suites) {
          // as CI runs it: two files at a time (npm test and npm run test:fault alike)
          await run(`${s} ${i}`, `node scripts/test.mjs ${s}`, clone, join(out, `${s}-${i}.log`));
        }
      }
    }
  } finally {
    await Promise.all(hogs.map((hog) => stopChild(hog, { graceMs: 1000 })));
    if (clone) rmSync(clone, { recursive: true, force: true });
  }
  writeReport();
  process.stdout.write(readFileSync(join(out, 'report.md'), 'utf8'));
  process.exitCode = results.every((r) => r.ok) ? 0 : 1;
}

main().catch((error) => {
  say(`soak failed: ${(error as Error).stack ?? error}`);
  process.exitCode = 2;
});
