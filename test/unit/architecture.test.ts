/**
 * The walls between the wings (DESIGN.md, "Wings and doors"), read from the imports of every file
 * under lib/, functions/, test/, bench/ and scripts/: which wing may import which, the engine and
 * the API entered only by their doors (lib/engine/index.ts; the API's routes and http.ts), tests
 * and benches reaching further only through the test-support door (lib/testing.ts), which nothing
 * in lib/ or functions/ imports; no Redis command or Lua run outside the engine, and no import
 * circle; and, for lib/ and functions/, the sizes that
 * keep each room readable: no class over 250 lines (the users' client aside), and no function over
 * 60 lines but the few below, each with its reason.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';

const ROOT = resolve(__dirname, '../..');

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => join(dir, f));
}

/** The project files a file imports (relative specifiers only), as paths from the root. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const specs = [
    ...text.matchAll(
      /(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s*['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g,
    ),
  ].map((m) => m[1] ?? m[2]!);
  return specs.map((spec) => {
    const base = resolve(ROOT, dirname(file), spec);
    const found = [base, `${base}.ts`, join(base, 'index.ts')].find((p) => existsSync(p) && statSync(p).isFile());
    assert.ok(found, `${file} imports ${spec}, which does not exist`);
    return relative(ROOT, found);
  });
}

type Wing =
  | 'testing'
  | 'tests'
  | 'functions'
  | 'api'
  | 'engine'
  | 'workers'
  | 'core'
  | 'platform'
  | 'client'
  | 'cli'
  | 'lua'
  | 'apiDescription'
  | 'other';

function wingOf(file: string): Wing {
  if (/^(test|bench|scripts)\//.test(file)) return 'tests';
  if (file === 'lib/testing.ts') return 'testing';
  if (file.startsWith('functions/')) return 'functions';
  if (file === 'lib/client.ts') return 'client';
  if (file.startsWith('lib/cli/')) return 'cli'; // the operators' CLI: the users' client, nothing else
  if (file.startsWith('lua/')) return 'lua';
  if (file === 'openapi.yaml') return 'apiDescription'; // served as text by GET /openapi.yaml
  const m = /^lib\/(api|engine|workers|core|platform)\//.exec(file);
  return m ? (m[1] as Wing) : 'other';
}

/** Which wings each wing may import (its own included where listed). */
const LIB_WINGS: readonly Wing[] = [
  'functions',
  'api',
  'engine',
  'workers',
  'core',
  'platform',
  'client',
  'cli',
  'lua',
];
const ALLOWED: Record<Wing, readonly Wing[]> = {
  tests: ['tests', 'testing', ...LIB_WINGS, 'apiDescription', 'other'],
  testing: LIB_WINGS,
  functions: ['api', 'workers', 'platform'],
  api: ['api', 'engine', 'core', 'platform', 'apiDescription'],
  workers: ['workers', 'engine', 'core', 'platform'],
  platform: ['platform', 'engine', 'core'],
  engine: ['engine', 'core', 'lua'],
  core: ['core'],
  client: [],
  cli: ['cli', 'client'],
  lua: [],
  apiDescription: [],
  other: [],
};

const DOORS: Partial<Record<Wing, (target: string) => boolean>> = {
  engine: (t) => t === 'lib/engine/index.ts',
  // what functions/, tests and benches may import: the routes (each resource's beside its service
  // functions), the request handling and the dashboard
  api: (t) =>
    ['lib/api/http.ts', 'lib/api/routes.ts', 'lib/api/dashboard.ts', 'lib/api/dashboard.html'].includes(t) ||
    /^lib\/api\/\w+-routes\.ts$/.test(t),
};

/** The production code: the walls, the sizes and the Redis rule apply. */
const files = [...sources('lib'), ...sources('functions')];
/** Everything whose imports the walls apply to: production code, tests, benches and scripts. */
const allFiles = [...files, ...sources('test'), ...sources('bench'), ...sources('scripts')];

/** Functions allowed over 60 lines, and why. At most 3. */
const LONG_FUNCTIONS: Record<string, string> = {
  'lib/workers/webhook/deliver.ts post':
    'one HTTP request and every way it can end (answer, redirect, timeout, abort, socket error), as one promise',
  'lib/api/schedule-validation.ts validateSchedule':
    'one field after another, each problem collected so a PUT reports them all at once',
};

/** Classes and functions of a file with their lengths in lines. */
function sizes(file: string): { kind: 'class' | 'function'; name: string; lines: number }[] {
  const src = ts.createSourceFile(file, readFileSync(join(ROOT, file), 'utf8'), ts.ScriptTarget.ES2022, true);
  const out: { kind: 'class' | 'function'; name: string; lines: number }[] = [];
  const visit = (node: ts.Node) => {
    const lines =
      src.getLineAndCharacterOfPosition(node.getEnd()).line -
      src.getLineAndCharacterOfPosition(node.getStart(src)).line +
      1;
    if (ts.isClassDeclaration(node)) out.push({ kind: 'class', name: node.name?.text ?? '(anonymous)', lines });
    else if (
      ts.isFunctionDeclaration(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isArrowFunction(node) ||
      ts.isFunctionExpression(node)
    ) {
      const named = (node as { name?: ts.Node }).name;
      const name = named
        ? named.getText(src)
        : ts.isVariableDeclaration(node.parent)
          ? node.parent.name.getText(src)
          : '(anonymous)';
      out.push({ kind: 'function', name, lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(src);
  return out;
}
const graph = new Map(allFiles.map((f) => [f, importsOf(f)]));

describe('architecture: the wings and their doors', () => {
  it('every file under lib/ is in a wing (lib/client.ts apart)', () => {
    assert.deepEqual(
      files.filter((f) => wingOf(f) === 'other'),
      [],
    );
  });

  it('each wing imports only the wings it may, and the engine and the api only through their doors', () => {
    const broken: string[] = [];
    for (const [file, targets] of graph) {
      const from = wingOf(file);
      for (const target of targets) {
        const to = wingOf(target);
        if (!ALLOWED[from].includes(to)) broken.push(`${file} -> ${target} (${from} may not import ${to})`);
        // the test-support door is the one file that may reach inside every wing
        else if (to !== from && from !== 'testing' && DOORS[to] && !DOORS[to]!(target))
          broken.push(`${file} -> ${target} (past the ${to}'s door)`);
      }
    }
    assert.deepEqual(broken, []);
  });

  it('no Redis client outside the engine but where lib/platform makes one (a type import aside)', () => {
    const makers = ['lib/platform/redis.ts', 'lib/platform/runtime.ts'];
    const outside = files.filter(
      (f) =>
        wingOf(f) !== 'engine' &&
        !makers.includes(f) &&
        /^import (?!type )[^;]*from 'ioredis'/m.test(readFileSync(join(ROOT, f), 'utf8')),
    );
    assert.deepEqual(outside, []);
  });

  it('nothing in lib/ or functions/ imports the test-support door', () => {
    assert.deepEqual(
      files.filter((f) => (graph.get(f) ?? []).includes('lib/testing.ts')),
      [],
    );
  });

  it('only the engine runs Lua', () => {
    const outside = files.filter(
      (f) =>
        wingOf(f) !== 'engine' &&
        /\.(evalsha|eval|defineCommand|script)\s*\(/.test(readFileSync(join(ROOT, f), 'utf8')),
    );
    assert.deepEqual(outside, []);
  });

  it('no import circle', () => {
    const state = new Map<string, 'open' | 'done'>();
    const circles: string[] = [];
    const visit = (file: string, path: string[]) => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'open') {
        circles.push([...path.slice(path.indexOf(file)), file].join(' -> '));
        return;
      }
      state.set(file, 'open');
      for (const target of graph.get(file) ?? []) if (graph.has(target)) visit(target, [...path, file]);
      state.set(file, 'done');
    };
    for (const file of graph.keys()) visit(file, []);
    assert.deepEqual(circles, []);
  });

  it('no class over 250 lines (lib/client.ts apart), no function over 60 lines but those with a reason', () => {
    const found = files.flatMap((file) => sizes(file).map((s) => ({ ...s, where: `${file} ${s.name}` })));
    assert.deepEqual(
      found
        .filter((s) => s.kind === 'class' && s.lines > 250 && !s.where.startsWith('lib/client.ts '))
        .map((s) => `${s.where}: ${s.lines} lines`),
      [],
    );
    const long = found.filter((s) => s.kind === 'function' && s.lines > 60);
    assert.deepEqual(
      long.filter((s) => !LONG_FUNCTIONS[s.where]).map((s) => `${s.where}: ${s.lines} lines`),
      [],
    );
    assert.ok(Object.keys(LONG_FUNCTIONS).length <= 3);
  });

  it('bench/: no class over 250 lines, no function over 60 lines but those with a reason (at most 2)', () => {
    /** Bench functions allowed over 60 lines, and why. At most 2. */
    const longBench: Record<string, string> = {};
    const found = sources('bench').flatMap((file) => sizes(file).map((s) => ({ ...s, where: `${file} ${s.name}` })));
    assert.deepEqual(
      found
        .filter((s) => (s.kind === 'class' ? s.lines > 250 : s.lines > 60 && !longBench[s.where]))
        .map((s) => `${s.where}: ${s.lines} lines`),
      [],
    );
    assert.ok(Object.keys(longBench).length <= 2);
  });

  it('no positional parameter list longer than 5 (an options object beyond that)', () => {
    const long: string[] = [];
    for (const file of files) {
      const src = ts.createSourceFile(file, readFileSync(join(ROOT, file), 'utf8'), ts.ScriptTarget.ES2022, true);
      const visit = (node: ts.Node) => {
        if (ts.isFunctionLike(node)) {
          const params = node.parameters.filter((p) => p.name.getText(src) !== 'this');
          const name = (node as { name?: ts.Node }).name?.getText(src) ?? '(anonymous)';
          if (params.length > 5) long.push(`${file} ${name}: ${params.length} parameters`);
        }
        ts.forEachChild(node, visit);
      };
      visit(src);
    }
    assert.deepEqual(long, []);
  });

  it('the test itself sees a broken wall (a core file importing the engine)', () => {
    assert.equal(ALLOWED.core.includes('engine'), false);
    assert.equal(DOORS.engine!('lib/engine/script-runner.ts'), false);
  });
});
