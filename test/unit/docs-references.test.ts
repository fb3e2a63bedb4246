/**
 * The docs name only what exists. Every doc but CHANGELOG.md (which is history) is read, and the test fails on:
 * a repository path that does not exist (`lib/...`, `test/...`, a top-level file; `:line` and `#anchor` after it
 * allowed, an anchor into a Markdown file checked against its headings); an `npm run <name>` that package.json does
 * not define; a Lua script name (`addJobs-5`) with no file in lua/; a backticked camelCase identifier that occurs
 * nowhere in the code. It also holds README.md and BENCHMARKS.md to their lengths, and README, DESIGN, BENCHMARKS and
 * RELIABILITY to today: no date, no issue number (readers cannot see the tracker).
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = join(__dirname, '../..');

/** The docs checked: the top-level guides and everything under docs/. CHANGELOG.md is history and is left out. */
const TOP_DOCS = ['README.md', 'DESIGN.md', 'BENCHMARKS.md', 'RELIABILITY.md', 'DEPLOY.md'];
/** Docs that say what is today: no dates and no issue numbers. */
const DATELESS = ['README.md', 'DESIGN.md', 'BENCHMARKS.md', 'RELIABILITY.md'];
const MAX_LINES: Record<string, number> = { 'README.md': 500, 'BENCHMARKS.md': 400 };

/**
 * Where a named identifier must occur (as a word, outside comments) to count as existing: the code, and deploy/, whose
 * parameters (`natGateway`, `latenessAlarmMs`) DEPLOY.md names.
 */
const CODE_ROOTS = ['lib', 'functions', 'lua', 'bench', 'scripts', 'test/support', 'deploy'];
const CODE_FILES = ['serverless.yml', 'openapi.yaml', 'package.json'];

/**
 * Backticked camelCase words that are not this project's code, each with its reason. Keep it short: a name missing
 * from the code is almost always a doc that fell behind a rename.
 */
const NOT_CODE: Record<string, string> = {
  // none today: every backticked camelCase word in the docs is a name in the code
};

/** Files a doc tells the reader to write (examples), so they do not exist in the repository. */
const READER_FILES: Record<string, string> = {
  'functions/handlers/closeOrder.ts': "README.md's example of a topic handler the reader adds",
  'functions/handlers/invoice.ts': "DEPLOY.md's example of a topic handler added in production",
};

/** First path segments that make a word a repository path. */
const PATH_ROOTS = ['lib', 'functions', 'lua', 'test', 'bench', 'scripts', 'deploy', 'types', 'docs', 'bin', '.ci'];

interface Doc {
  name: string;
  text: string;
}

interface Problem {
  doc: string;
  line: number;
  what: string;
}

function listFiles(dir: string): string[] {
  const abs = join(ROOT, dir);
  if (!existsSync(abs)) return [];
  return readdirSync(abs, { recursive: true })
    .map(String)
    .filter((f) => statSync(join(abs, f)).isFile())
    .map((f) => posix.join(dir, f.split('\\').join('/')));
}

function docs(): Doc[] {
  const names = [...TOP_DOCS, ...listFiles('docs').filter((f) => f.endsWith('.md'))];
  return names.map((name) => ({ name, text: readFileSync(join(ROOT, name), 'utf8') }));
}

/**
 * A file's code without its comments: a name a stale comment still carries (`nudgeSweeper` in a YAML comment) does
 * not exist. Rough on purpose: a `//` inside a string that is not a URL may cut a few words, never add one.
 */
function withoutComments(file: string, text: string): string {
  if (/\.(ts|mjs|cjs|js|html)$/.test(file))
    return text
      .replace(/\/\*[\s\S]*?\*\//g, ' ')
      .replace(/<!--[\s\S]*?-->/g, ' ')
      .replace(/(?<![:\w'"`])\/\/.*$/gm, ' ');
  if (file.endsWith('.lua')) return text.replace(/--\[\[[\s\S]*?\]\]/g, ' ').replace(/--.*$/gm, ' ');
  if (/\.ya?ml$/.test(file)) return text.replace(/(^|\s)#.*$/gm, ' ');
  return text;
}

/** Every word (identifier-shaped) in the code, comments left out, once. */
let words: Set<string> | undefined;
function codeWords(): Set<string> {
  if (words) return words;
  words = new Set();
  const files = [...CODE_ROOTS.flatMap(listFiles), ...CODE_FILES];
  for (const file of files) {
    const code = withoutComments(file, readFileSync(join(ROOT, file), 'utf8'));
    for (const w of code.match(/[A-Za-z_$][\w$]*/g) ?? []) words.add(w);
  }
  return words;
}

const npmScripts = () =>
  new Set(Object.keys((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: object }).scripts));

/** Line number (1-based) of an offset. */
const lineOf = (text: string, at: number) => text.slice(0, at).split('\n').length;

/** Fenced code blocks blanked out (newlines kept, so line numbers hold). */
const withoutFences = (text: string) => text.replace(/^```[\s\S]*?^```/gm, (block) => block.replace(/[^\n]/g, ' '));

/** Inline code spans blanked out too: what is left is prose. */
const proseOf = (text: string) => withoutFences(text).replace(/`[^`\n]*`/g, (span) => ' '.repeat(span.length));

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const m of withoutFences(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Whether a repository path exists; a placeholder (`<name>`, `*`, `…`) is checked up to the folder before it. */
function pathExists(path: string, exists: (p: string) => boolean): boolean {
  const clean = path.replace(/\/+$/, '');
  const wild = clean.search(/[<*{…]/);
  if (wild < 0) return exists(clean);
  const folder = clean.slice(0, clean.lastIndexOf('/', wild));
  return folder === '' || exists(folder);
}

/** What the checks need to know of the repository; a test passes a made-up one. */
interface Repo {
  exists: (path: string) => boolean;
  scripts: Set<string>;
  words: Set<string>;
  /** The anchors of a Markdown file of the repository. */
  anchors: (path: string) => Set<string> | undefined;
  /** Names of the test files anywhere under test/. */
  testFiles: Set<string>;
}

function repo(): Repo {
  const testFiles = new Set(listFiles('test').map((f) => posix.basename(f)));
  return {
    exists: (p) => existsSync(join(ROOT, p)),
    scripts: npmScripts(),
    words: codeWords(),
    anchors: (p) => (existsSync(join(ROOT, p)) ? anchorsOf(readFileSync(join(ROOT, p), 'utf8')) : undefined),
    testFiles,
  };
}

const PATH_RE = new RegExp(
  `(?<![\\w@./~:-])((?:${PATH_ROOTS.map((r) => r.replace('.', '\\.')).join('|')})/[\\w.\\-/*<>{}…]*)`,
  'g',
);
/** A top-level file named alone: README.md, serverless.yml, package.json, … */
const TOP_FILE_RE = /(?<![\w@./~:-])([A-Za-z][\w-]*(?:\.[\w-]+)*\.(?:md|ya?ml|json|mjs|cjs))(?![\w/(-])/g;
const TEST_FILE_RE = /(?<![\w@./~:-])([\w-]+(?:\.[\w-]+)*\.test\.ts)(?![\w/-])/g;
const NPM_RUN_RE = /npm run(?: -s| --silent)? ([A-Za-z][\w:.*-]*)/g;
const SCRIPT_NAME_RE = /^(?:bench|test|ci):[\w-]+$/;
const LUA_RE = /(?<![\w./-])([a-z]+[A-Z][A-Za-z]*)-(\d+)(?:\.lua)?(?![\w-])/g;
const IDENT_RE = /^(?:[A-Za-z_$][\w$]*\.)*([a-z][a-z0-9]*[A-Z][A-Za-z0-9]*)(?:\(\))?$/;
const LINK_RE = /\]\(([^)\s]+)\)/g;

/** Every reference in one doc to a path, script, Lua script or identifier that does not exist. */
function brokenReferences(doc: Doc, r: Repo): Problem[] {
  const problems: Problem[] = [];
  const flag = (at: number, what: string) => problems.push({ doc: doc.name, line: lineOf(doc.text, at), what });
  const here = dirname(doc.name);
  const resolve = (target: string) => posix.normalize(here === '.' ? target : posix.join(here, target));

  for (const m of doc.text.matchAll(PATH_RE)) {
    // a serverless handler (`functions/addJob.handler`) names the module functions/addJob.ts
    const path = m[1]!.replace(/[.,;:)]+$/, '').replace(/\.handler$/, '.ts');
    if (!(path in READER_FILES) && !pathExists(path, r.exists)) flag(m.index, `path ${path} does not exist`);
  }
  for (const m of doc.text.matchAll(TOP_FILE_RE)) {
    // a file named alone is the doc's neighbour (docs/CLI.md in docs/REFERENCE.md) or a top-level one
    if (!r.exists(resolve(m[1]!)) && !r.exists(m[1]!)) flag(m.index, `file ${m[1]} does not exist`);
  }
  for (const m of doc.text.matchAll(TEST_FILE_RE)) {
    if (!r.testFiles.has(m[1]!)) flag(m.index, `test file ${m[1]} does not exist under test/`);
  }
  for (const m of doc.text.matchAll(LINK_RE)) {
    const target = m[1]!;
    if (/^[a-z][a-z+.-]*:/i.test(target)) continue; // https:, mailto:
    const [file = '', anchor] = target.split('#');
    const path = file === '' ? doc.name : resolve(file);
    if (file !== '' && !r.exists(path)) {
      flag(m.index, `link to ${file}, which does not exist`);
      continue;
    }
    if (anchor !== undefined && path.endsWith('.md') && !r.anchors(path)?.has(anchor))
      flag(m.index, `link to ${path}#${anchor}: no such heading`);
  }
  for (const m of doc.text.matchAll(NPM_RUN_RE)) {
    const name = m[1]!.replace(/[.:]+$/, '');
    const known = name.endsWith('*')
      ? [...r.scripts].some((s) => s.startsWith(name.slice(0, -1)))
      : r.scripts.has(name);
    if (!known) flag(m.index, `npm run ${name}: no such script in package.json`);
  }
  for (const m of doc.text.matchAll(LUA_RE)) {
    if (!r.exists(`lua/${m[1]}-${m[2]}.lua`)) flag(m.index, `Lua script ${m[1]}-${m[2]} is not a file in lua/`);
  }
  for (const m of withoutFences(doc.text).matchAll(/`([^`\n]+)`/g)) {
    const span = m[1]!;
    if (SCRIPT_NAME_RE.test(span) && !r.scripts.has(span)) flag(m.index, `\`${span}\`: no such script in package.json`);
    const ident = IDENT_RE.exec(span)?.[1];
    if (ident && !r.words.has(ident) && !(ident in NOT_CODE)) flag(m.index, `\`${ident}\` occurs nowhere in the code`);
  }
  return problems;
}

/** Dates (YYYY-MM-DD) and issue references in a doc's prose (code blocks and spans are data, not history). */
function historyIn(doc: Doc): Problem[] {
  const prose = proseOf(doc.text);
  const problems: Problem[] = [];
  const patterns: [RegExp, string][] = [
    [/(?<![\w-])\d{4}-[01]\d-[0-3]\d(?![\w-])/g, 'a date'],
    [/\b(?:issues?|PRs?|pull requests?|tickets?)\s+#?\d+/gi, 'an issue reference'],
    [/(?<![\w&/#])#\d+\b/g, 'an issue reference'],
  ];
  for (const [re, what] of patterns) {
    for (const m of prose.matchAll(re))
      problems.push({ doc: doc.name, line: lineOf(prose, m.index), what: `${what}: ${m[0]}` });
  }
  return problems;
}

const report = (problems: Problem[]) => problems.map((p) => `${p.doc}:${p.line}: ${p.what}`).join('\n');

describe('the docs name only what exists', () => {
  const all = docs();
  const r = repo();

  it('every path, npm script, Lua script and backticked identifier a doc names exists', () => {
    const problems = all.flatMap((d) => brokenReferences(d, r));
    assert.equal(problems.length, 0, `\n${report(problems)}`);
  });

  it('README.md and BENCHMARKS.md stay within their lengths', () => {
    for (const [name, max] of Object.entries(MAX_LINES)) {
      const lines = readFileSync(join(ROOT, name), 'utf8').trimEnd().split('\n').length;
      assert.ok(lines <= max, `${name} has ${lines} lines; at most ${max}`);
    }
  });

  it('README, DESIGN, BENCHMARKS and RELIABILITY hold no date and no issue number', () => {
    const problems = all.filter((d) => DATELESS.includes(d.name)).flatMap(historyIn);
    assert.equal(problems.length, 0, `\n${report(problems)}`);
  });

  it('flags each kind of bad reference (the checks can fail)', () => {
    const bad: Doc = {
      name: 'docs/BAD.md',
      text: [
        'The sweeper is `lib/workers/sweeperx.ts`; see lib/nowhere/ and [the guide](../README.md#no-such-heading).',
        'Run `npm run bench:nothing`; the add is addJobs-4 and claimFlow-6 claims.',
        'It calls `nudgeSweeper` and `Engine.holdSweeperLease()`, not `requestFanout`; see NOPE.md and gone.test.ts.',
        'Measured on 2026-11-27 (issue 31, #32); an ISO time `2027-06-01` in code is data.',
      ].join('\n'),
    };
    const made: Repo = {
      exists: (p) => ['lib', 'lib/workers', 'README.md', 'lua/claimFlow-6.lua'].includes(p),
      scripts: new Set(['bench:floor']),
      words: new Set(['requestFanout']),
      anchors: () => new Set(['quick-start']),
      testFiles: new Set(['docs-references.test.ts']),
    };
    const found = brokenReferences(bad, made).map((p) => `${p.line}: ${p.what}`);
    assert.deepEqual(found.sort(), [
      '1: link to README.md#no-such-heading: no such heading',
      '1: path lib/nowhere/ does not exist',
      '1: path lib/workers/sweeperx.ts does not exist',
      '2: Lua script addJobs-4 is not a file in lua/',
      '2: npm run bench:nothing: no such script in package.json',
      '3: `holdSweeperLease` occurs nowhere in the code',
      '3: `nudgeSweeper` occurs nowhere in the code',
      '3: file NOPE.md does not exist',
      '3: test file gone.test.ts does not exist under test/',
    ]);
    assert.deepEqual(
      historyIn(bad).map((p) => p.what),
      ['a date: 2026-11-27', 'an issue reference: issue 31', 'an issue reference: #32'],
    );
    assert.equal(slug('Durability: what a 2xx promises on a failover'), 'durability-what-a-2xx-promises-on-a-failover');
  });
});
