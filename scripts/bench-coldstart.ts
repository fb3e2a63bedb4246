/**
 * Cold-start benchmark (not a test): builds every function of serverless.yml twice with esbuild,
 * once with the `custom.esbuild` settings of a baseline commit and once with the working tree's,
 * both from the working tree's sources (so only the build settings differ; with `--sources base`,
 * the baseline is built from the base commit's own sources, checked out in a temporary worktree,
 * so the code's change is measured too), then loads each
 * bundle in fresh Node processes, before and after interleaved, and prints a Markdown table.
 *
 *   npm run bench:coldstart                      # baseline: BASELINE below
 *   npm run bench:coldstart -- --base <git ref> --runs 15
 *   npm run bench:coldstart -- --base <git ref> --sources base   # the base's sources too
 *
 * Bundles are built the way serverless-esbuild 1.57 builds them (one esbuild build per handler
 * file, `outdir` = the handler's folder, plugin-only keys dropped, `exclude` added to `external`),
 * into a temporary folder outside the project. A bundle is loaded the way the Lambda runtime loads
 * it: from an ES module harness (the runtime's own entry is `index.mjs`, so its ESM loader is
 * already up), with require() for a CommonJS `.js` file and import() for an `.mjs` one.
 * "Load ms" is the time of that require()/import() alone, median over the runs; "bytes at load"
 * are the bundle plus the chunks it imports statically (what Node reads and parses at cold start);
 * chunks behind a dynamic import (the Lambda SDK) are listed apart. What the first invoke costs is
 * measured once, on a probe built like a function from lib/platform/lambda.ts: load, then one
 * `invokeAsync` against a local endpoint answering 202, before and after.
 * Results are in BENCHMARKS.md.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, readFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { build, type BuildOptions, type Metafile } from 'esbuild';
import { parse } from 'yaml';

/** The last commit before ESM output with code splitting (its serverless.yml bundles the SDK into every function). */
const BASELINE = '619f17234eec4c0b4fa2a83acac3c532e4d37893';
const ROOT = join(__dirname, '..');
/** Issue 11's goal for the API functions (httpApi routes), as ratios of the baseline's figures. */
const GOAL = { bytes: 0.3, ms: 0.6 };

interface Args {
  base: string;
  runs: number;
  only: string[] | undefined;
  /** Which sources the baseline is built from: the working tree's (only the settings differ) or the base commit's. */
  sources: 'tree' | 'base';
}

function parseArgs(argv: string[]): Args {
  const args: Args = { base: BASELINE, runs: 11, only: undefined, sources: 'tree' };
  for (let i = 0; i < argv.length; i++) {
    const value = argv[i + 1];
    if (argv[i] === '--base' && value) args.base = value;
    else if (argv[i] === '--runs' && value && Number(value) >= 1) args.runs = Number(value);
    else if (argv[i] === '--only' && value) args.only = value.split(',');
    else if (argv[i] === '--sources' && (value === 'tree' || value === 'base')) args.sources = value;
    else
      throw new Error(
        `usage: bench-coldstart [--base <git ref>] [--runs <n>] [--only fn1,fn2] [--sources tree|base]; got ${argv[i]}`,
      );
    i++; // every flag takes a value
  }
  return args;
}

type Yaml = {
  custom?: { esbuild?: Record<string, unknown> };
  functions?: Record<string, { handler: string; events?: unknown[] }>;
};

/** Plugin options serverless-esbuild removes before calling esbuild (dist/bundle.js). */
const PLUGIN_ONLY = [
  'concurrency',
  'zipConcurrency',
  'exclude',
  'nativeZip',
  'packager',
  'packagePath',
  'watch',
  'keepOutputDirectory',
  'packagerOptions',
  'installExtraArgs',
  'outputFileExtension',
  'outputBuildFolder',
  'outputWorkFolder',
  'nodeExternals',
  'skipBuild',
  'skipRebuild',
  'skipBuildExcludeFns',
  'stripEntryResolveExtensions',
  'disposeContext',
];

/** The esbuild options serverless-esbuild derives from `custom.esbuild` (its defaults merged under them). */
function esbuildOptions(custom: Record<string, unknown>): { options: BuildOptions; ext: string } {
  const merged: Record<string, unknown> = {
    bundle: true,
    exclude: ['aws-sdk'],
    platform: 'node',
    outputFileExtension: '.js',
    ...custom,
  };
  const exclude = ([] as string[]).concat((merged.exclude as string[] | string | undefined) ?? []);
  const ext = String(merged.outputFileExtension);
  const options: Record<string, unknown> = Object.fromEntries(
    Object.entries(merged).filter(([k]) => !PLUGIN_ONLY.includes(k)),
  );
  options.external = [...((merged.external as string[] | undefined) ?? []), ...(exclude.includes('*') ? [] : exclude)];
  if (ext !== '.js') options.outExtension = { '.js': ext };
  return { options: options as BuildOptions, ext };
}

interface Bundle {
  /** Whether the Lambda SDK is in the bundle or its chunks. */
  hasSdk: boolean;
  /** Path of the handler's bundle. */
  file: string;
  /** Bytes of the bundle and every chunk it imports statically. */
  loadBytes: number;
  /** Bytes of the chunks reachable only through a dynamic import. */
  lazyBytes: number;
  /** How the runtime loads it. */
  mode: 'require' | 'import';
}

/** What a bundle reads at load (static imports, transitively) and what it can read later. */
function closure(meta: Metafile, entryOut: string): { load: Set<string>; lazy: Set<string> } {
  const load = new Set<string>();
  const lazy = new Set<string>();
  const visit = (path: string, dynamic: boolean) => {
    if (load.has(path) || (dynamic && lazy.has(path))) return;
    (dynamic ? lazy : load).add(path);
    for (const imp of meta.outputs[path]?.imports ?? []) {
      if (imp.external || !meta.outputs[imp.path]) continue;
      visit(imp.path, dynamic || imp.kind === 'dynamic-import');
    }
  };
  visit(entryOut, false);
  for (const p of load) lazy.delete(p);
  return { load, lazy };
}

/** `entries`: handler files, relative to `root` (or absolute, for the probe); `root`: the sources' checkout. */
async function buildVariant(
  dir: string,
  custom: Record<string, unknown>,
  entries: string[],
  root = ROOT,
): Promise<Map<string, Bundle>> {
  const { options, ext } = esbuildOptions(custom);
  const bundles = new Map<string, Bundle>();
  // one build per handler file into the handler's folder, like the plugin (chunks land beside them)
  for (const entry of entries) {
    const rel = relative(root, resolve(root, entry));
    const outdir = join(dir, rel.startsWith('..') ? 'probe' : dirname(rel));
    mkdirSync(outdir, { recursive: true });
    const result = await build({
      ...options,
      entryPoints: [resolve(root, entry)],
      outdir,
      metafile: true,
      logLevel: 'warning',
      absWorkingDir: root,
    });
    const meta = result.metafile!;
    const entryOut = Object.entries(meta.outputs).find(([, o]) => o.entryPoint === rel)?.[0];
    if (!entryOut) throw new Error(`no output for ${entry}`);
    const { load, lazy } = closure(meta, entryOut);
    const size = (set: Set<string>) => [...set].reduce((sum, p) => sum + meta.outputs[p]!.bytes, 0);
    const format = options.format ?? 'cjs';
    bundles.set(entry, {
      hasSdk: Object.keys(meta.inputs).some((p) => p.includes('node_modules/@aws-sdk/client-lambda/')),
      file: join(root, entryOut),
      loadBytes: size(load),
      lazyBytes: size(lazy),
      mode: ext === '.mjs' || (format === 'esm' && ext !== '.cjs') ? 'import' : 'require',
    });
  }
  return bundles;
}

/**
 * Loads one bundle in a fresh process and prints the load time; with `invoke`, then times the
 * probe's first invoke against a local endpoint that answers 202 like the Lambda API.
 */
const HARNESS = `import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
const [file, mode, invoke] = process.argv.slice(2);
let t = performance.now();
const m = mode === 'require' ? createRequire(import.meta.url)(file) : await import(pathToFileURL(file).href);
const loadMs = performance.now() - t;
if (typeof m.handler !== 'function') throw new Error(file + ' exports no handler');
let invokeMs = 0;
if (invoke) {
  const server = createServer((req, res) => req.resume().on('end', () => res.writeHead(202).end()));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t = performance.now();
  await m.firstInvoke('http://127.0.0.1:' + server.address().port);
  invokeMs = performance.now() - t;
}
process.stdout.write(JSON.stringify({ loadMs, invokeMs }));
process.exit(0);
`;

/** The probe: the Lambda invoker (lib/platform/lambda.ts) as a function would bundle it, with a hook for one invoke. */
const lambdaModule = (root: string) =>
  existsSync(join(root, 'lib', 'platform', 'lambda.ts'))
    ? join(root, 'lib', 'platform', 'lambda')
    : join(root, 'lib', 'lambda');
const probeSource = (root: string) => `import { createInvoker } from ${JSON.stringify(lambdaModule(root))};
export const handler = () => undefined;
export function firstInvoke(endpoint: string): Promise<void> {
  return createInvoker({ functionPrefix: 'bench-', lambdaEndpoint: endpoint, region: 'us-east-1' }).invokeAsync('probe', {});
}
`;

function measure(harness: string, bundle: Bundle, invoke = false): { loadMs: number; invokeMs: number } {
  const args = [harness, bundle.file, bundle.mode, ...(invoke ? ['invoke'] : [])];
  const env = { ...process.env, NODE_OPTIONS: '', AWS_SDK_JS_SUPPRESS_NODE_VERSION_WARNING: '1' };
  const child = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 120_000, env });
  if (child.status !== 0) throw new Error(`loading ${bundle.file} failed:\n${child.stderr}`);
  return JSON.parse(child.stdout) as { loadMs: number; invokeMs: number };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const kb = (bytes: number) => `${(bytes / 1024).toFixed(0)} KB`;
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const git = (...a: string[]) => execFileSync('git', a, { cwd: ROOT, encoding: 'utf8' });
  const current = parse(readFileSync(join(ROOT, 'serverless.yml'), 'utf8')) as Yaml;
  const baseline = parse(git('show', `${args.base}:serverless.yml`)) as Yaml;
  const baseCommit = git('rev-parse', '--short', args.base).trim();
  const headCommit = git('rev-parse', '--short', 'HEAD').trim();
  const dirty = git('status', '--porcelain', '--', 'serverless.yml', 'lib', 'functions', 'lua').trim() !== '';

  const functions = Object.entries(current.functions ?? {})
    .filter(([name]) => !args.only || args.only.includes(name))
    .map(([name, fn]) => ({
      name,
      entry: `${fn.handler.slice(0, fn.handler.lastIndexOf('.'))}.ts`,
      api: (fn.events ?? []).some((e) => typeof e === 'object' && e !== null && 'httpApi' in e),
    }));
  const entries = [...new Set(functions.map((f) => f.entry))];

  const dir = mkdtempSync(join(tmpdir(), 'dq-bench-coldstart-'));
  const baseRoot = join(dir, 'base-sources');
  try {
    if (args.sources === 'base') {
      git('worktree', 'add', '--detach', '--quiet', baseRoot, args.base);
      symlinkSync(join(ROOT, 'node_modules'), join(baseRoot, 'node_modules'));
    }
    const root = args.sources === 'base' ? baseRoot : ROOT;
    // one probe file per sources' checkout, outside both (esbuild resolves its import by absolute path)
    const probeBefore = join(dir, 'probe-before', 'lambdaProbe.ts');
    const probe = join(dir, 'probe-after', 'lambdaProbe.ts');
    mkdirSync(dirname(probeBefore), { recursive: true });
    mkdirSync(dirname(probe), { recursive: true });
    writeFileSync(probeBefore, probeSource(root));
    writeFileSync(probe, probeSource(ROOT));
    // the baseline's build settings with the file loaders today's sources need (a loader decides
    // how a file type is read, not how the bundle loads: a newer source may import a newer type)
    const baseSettings = baseline.custom?.esbuild ?? {};
    const loaders = {
      ...((current.custom?.esbuild?.loader as Record<string, string> | undefined) ?? {}),
      ...((baseSettings.loader as Record<string, string> | undefined) ?? {}),
    };
    const beforeBuilt = await buildVariant(
      join(dir, 'before'),
      { ...baseSettings, loader: loaders },
      [...entries, probeBefore],
      root,
    );
    const before = new Map([...beforeBuilt].map(([e, b]) => [e === probeBefore ? probe : e, b]));
    const after = await buildVariant(join(dir, 'after'), current.custom?.esbuild ?? {}, [...entries, probe]);
    const harness = join(dir, 'harness.mjs');
    writeFileSync(harness, HARNESS);

    const load0 = loadavg();
    const started = Date.now();
    const times = new Map([...entries, probe].map((e) => [e, { before: [] as number[], after: [] as number[] }]));
    const invokes = { before: [] as number[], after: [] as number[] };
    for (let run = 0; run < args.runs; run++) {
      for (const entry of [...entries, probe]) {
        // interleaved, alternating which variant goes first, so load swings hit both alike
        const order = run % 2 ? (['after', 'before'] as const) : (['before', 'after'] as const);
        for (const variant of order) {
          const { loadMs, invokeMs } = measure(
            harness,
            (variant === 'before' ? before : after).get(entry)!,
            entry === probe,
          );
          times.get(entry)![variant].push(loadMs);
          if (entry === probe) invokes[variant].push(invokeMs);
        }
      }
      process.stderr.write(`run ${run + 1}/${args.runs} done\n`);
    }
    const load1 = loadavg();
    const avg = (l: number[]) => l.map((x) => x.toFixed(1)).join(' / ');

    const lines: string[] = [];
    const sources =
      args.sources === 'base'
        ? `sources: ${baseCommit}'s before, the working tree's after`
        : 'sources: the working tree for both';
    lines.push(
      `Before: \`custom.esbuild\` of ${baseCommit}; after: the working tree's (HEAD ${headCommit}${dirty ? ', with uncommitted changes' : ''}); ${sources}.`,
    );
    lines.push(
      `${args.runs} runs, interleaved; Node ${process.version}; ${cpus().length} × ${cpus()[0]?.model.trim() ?? 'CPU'}; load average (1/5/15 min) ${avg(load0)} at start, ${avg(load1)} at end; ${((Date.now() - started) / 1000).toFixed(0)} s.`,
    );
    lines.push('');
    lines.push(
      '| function | KB at load before | after | ratio | load ms before | after | ratio | SDK chunks, read at first invoke | goal |',
    );
    lines.push('|---|---:|---:|---:|---:|---:|---:|---:|---|');
    const summary: Record<string, number | string | boolean>[] = [];
    for (const fn of functions) {
      const b = before.get(fn.entry)!;
      const a = after.get(fn.entry)!;
      const t = times.get(fn.entry)!;
      const [mb, ma] = [median(t.before), median(t.after)];
      const bytesRatio = a.loadBytes / b.loadBytes;
      const msRatio = ma / mb;
      const goal = !fn.api
        ? '—'
        : !b.hasSdk
          ? 'n/a (no SDK before)'
          : bytesRatio <= GOAL.bytes && msRatio <= GOAL.ms
            ? 'met'
            : 'MISSED';
      const kind = fn.api ? '' : fn.entry.includes('/handlers/') ? ' (topic handler)' : ' (invokes)';
      lines.push(
        `| ${fn.name}${kind} | ${kb(b.loadBytes)} | ${kb(a.loadBytes)} | ${ratio(a.loadBytes, b.loadBytes)} | ${mb.toFixed(1)} | ${ma.toFixed(1)} | ${ratio(ma, mb)} | ${a.lazyBytes ? kb(a.lazyBytes) : '—'} | ${goal} |`,
      );
      summary.push({
        function: fn.name,
        api: fn.api,
        sdkBefore: b.hasSdk,
        bytesBefore: b.loadBytes,
        bytesAfter: a.loadBytes,
        lazyBytes: a.lazyBytes,
        msBefore: +mb.toFixed(2),
        msAfter: +ma.toFixed(2),
        bytesRatio: +bytesRatio.toFixed(3),
        msRatio: +msRatio.toFixed(3),
      });
    }
    const goalRows = summary.filter((r) => r.api && r.sdkBefore);
    const range = (key: string) => {
      const xs = goalRows.map((r) => r[key] as number);
      return `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}×`;
    };
    const pt = times.get(probe)!;
    const [lb, la, ib, ia] = [median(pt.before), median(pt.after), median(invokes.before), median(invokes.after)];
    lines.push('');
    lines.push(
      `API functions that bundled the SDK: bytes at load ${range('bytesRatio')} (goal ≤ ${GOAL.bytes}×), load time ${range('msRatio')} (goal ≤ ${GOAL.ms}×).`,
    );
    lines.push(
      `First invoke (probe: lib/platform/lambda.ts alone, load then one invokeAsync against a local 202 endpoint): load ${lb.toFixed(1)} → ${la.toFixed(1)} ms, first invoke ${ib.toFixed(1)} → ${ia.toFixed(1)} ms, sum ${(lb + ib).toFixed(1)} → ${(la + ia).toFixed(1)} ms.`,
    );
    console.log(lines.join('\n'));
    console.log(
      `\nBENCH-COLDSTART ${JSON.stringify({ base: baseCommit, head: headCommit, dirty, runs: args.runs, node: process.version, loadavg: [load0, load1], functions: summary, probe: { loadMs: [lb, la], firstInvokeMs: [ib, ia] } })}`,
    );
  } finally {
    if (args.sources === 'base')
      execFileSync('git', ['worktree', 'remove', '--force', baseRoot], { cwd: ROOT, stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
