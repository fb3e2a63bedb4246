import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { flowKeys, groupBucketKey, groupChunkKey, topicKeys, type GroupKey } from '../../lib/engine/keys';
import {
  INCLUDES,
  SCRIPTS,
  includeOrder,
  scriptLibrary,
  scriptText,
  type ScriptName,
} from '../../lib/engine/script-runner';

const dir = join(__dirname, '..', '..', 'lua');
const files = readdirSync(dir).filter((f) => f.endsWith('.lua'));
const includeFiles = readdirSync(join(dir, 'includes')).filter((f) => f.endsWith('.lua'));

/** Lua text without comments, and with every string literal emptied. */
function code(text: string): string {
  return text
    .replace(/--\[\[[\s\S]*?\]\]/g, '')
    .replace(/--[^\n]*/g, '')
    .replace(/'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"/g, "''");
}

/** The names a Lua text declares at its top level (a statement at the start of a line), in order. */
function topLevelLocals(text: string): string[] {
  return [...code(text).matchAll(/^local\s+(?:function\s+(\w+)|([\w\s,]+?)\s*(?:=|$))/gm)].flatMap((m) =>
    m[1] ? [m[1]] : m[2]!.split(',').map((n) => n.trim()),
  );
}

/** Every name a Lua text declares anywhere: locals, parameters, loop variables. */
function declared(text: string): Set<string> {
  const c = code(text);
  const lists = [
    ...[...c.matchAll(/\blocal\s+function\s+(\w+)/g)].map((m) => m[1]!),
    ...[...c.matchAll(/\blocal\s+(?!function\b)([\w\s,]+?)\s*(?:=|\n)/g)].map((m) => m[1]!),
    ...[...c.matchAll(/\bfunction\s*\w*\s*\(([^)]*)\)/g)].map((m) => m[1]!),
    ...[...c.matchAll(/\bfor\s+([\w\s,]+?)\s*(?:=|\bin\b)/g)].map((m) => m[1]!),
  ];
  return new Set(lists.flatMap((list) => list.split(',').map((n) => n.trim())).filter(Boolean));
}

/** The names a Lua text uses, other than as a field (`t.name`, `t:name`). */
function used(text: string): Set<string> {
  return new Set([...code(text).matchAll(/(?<![.:\w])([A-Za-z_]\w*)/g)].map((m) => m[1]!));
}

/** The includes a Lua text names on its `--- @include "name"` lines. */
function directives(text: string): string[] {
  return [...text.matchAll(/^--- @include "([^"]*)"/gm)].map((m) => m[1]!);
}

describe('lua/ scripts', () => {
  it('every script file is registered, under its own name', () => {
    assert.deepEqual(
      files.sort(),
      Object.values(SCRIPTS)
        .map((s) => s.file)
        .sort(),
    );
  });

  it("lua/includes/ build three kinds of key name only: a group's further zsets, from the group's key, and the small groups' buckets and a flow topic's keys, from the jobs hash's (as groupChunkKey, groupBucketKey and flowKeys in lib/engine/keys.ts)", () => {
    const code = includeFiles
      .map((f) => readFileSync(join(dir, 'includes', f), 'utf8').replace(/--[^\n]*/g, ''))
      .join('\n');
    assert.doesNotMatch(code, /['"]dq:/);
    assert.deepEqual([...code.matchAll(/\.\.\s*['"][:#][^\n]*/g)].map((m) => m[0]).sort(), [
      ".. '#' .. c",
      ".. '#flow', conf = jobsKey .. '#fconf', ring = jobsKey .. '#lanes', wait = jobsKey .. '#fwait' }",
      ".. '#gb' .. b",
      ".. '#lane:' .. key",
    ]);
    const f = flowKeys(topicKeys(0, 't', 1).jobs);
    assert.deepEqual(
      [f.state, f.conf, f.ring, f.wait, f.lane('k')],
      ['#flow', '#fconf', '#lanes', '#fwait', '#lane:k'].map((s) => `${topicKeys(0, 't', 1).jobs}${s}`),
    );
    assert.equal(groupChunkKey('dq:{p0}:group:t:g' as GroupKey, 3), 'dq:{p0}:group:t:g#3');
    assert.equal(groupChunkKey('dq:{p0}:group:t:g' as GroupKey, 0), 'dq:{p0}:group:t:g');
    assert.equal(groupBucketKey(topicKeys(0, 't', 1).jobs, 5), `${topicKeys(0, 't', 1).jobs}#gb5`);
  });

  for (const file of files) {
    const source = readFileSync(join(dir, file), 'utf8');
    const code = source.replace(/--\[\[[\s\S]*?\]\]/g, '').replace(/--[^\n]*/g, '');

    it(`${file}: the highest KEYS[n] is the number in its name and in SCRIPTS`, () => {
      const declared = Number(/-(\d+)\.lua$/.exec(file)![1]);
      const used = Math.max(...[...code.matchAll(/KEYS\[(\d+)\]/g)].map((m) => Number(m[1])));
      assert.equal(used, declared);
      const entry = Object.values(SCRIPTS).find((s) => s.file === file)!;
      assert.equal(entry.numberOfKeys, declared);
    });

    it(`${file}: opens with a contract block and builds no key names`, () => {
      assert.match(source, /^--\[\[\n {2}\S[\s\S]*?KEYS\[1\][\s\S]*?\n\]\]/);
      assert.doesNotMatch(
        code,
        /['"]dq:|\.\.\s*['"][:#]/,
        'key names are built in lib/engine/keys.ts only (and chunkKey in lua/includes/groups.lua)',
      );
      assert.doesNotMatch(code, /'KEYS'|"KEYS"|'SCAN'|'LREM'|ZRANGE[^\n]*0,\s*-1/, 'no unbounded commands');
    });

    it(`${file}: replies with named codes, never a bare negative number (lua/includes/codes.lua names them)`, () => {
      assert.doesNotMatch(code, /return\s*\{?\s*-\d/);
    });
  }
});

describe('lua/includes/', () => {
  const texts = new Map(
    includeFiles.map((f) => [f.slice(0, -'.lua'.length), readFileSync(join(dir, 'includes', f), 'utf8')]),
  );
  /** Which include declares each top-level name of the includes. */
  const owner = new Map<string, string>();
  for (const [name, text] of texts)
    for (const local of topLevelLocals(text))
      owner.set(local, owner.has(local) ? `${owner.get(local)}, ${name}` : name);
  const reach = (names: readonly string[], seen = new Set<string>()): Set<string> => {
    for (const name of names) if (!seen.has(name)) reach(directives(texts.get(name) ?? ''), seen.add(name));
    return seen;
  };

  it('every file of lua/includes/ is in INCLUDES under its name, with its text', () => {
    assert.deepEqual(Object.keys(INCLUDES).sort(), [...texts.keys()].sort());
    for (const [name, text] of texts) assert.equal(INCLUDES[name], text, name);
  });

  it('no two includes declare the same name', () => {
    assert.deepEqual(
      [...owner].filter(([, by]) => by.includes(',')),
      [],
    );
  });

  it('each include opens with a comment block, and reads no KEYS and no ARGV (a script passes what it needs)', () => {
    for (const [name, text] of texts) {
      assert.match(text, /^--\[\[\n {2}\S[\s\S]*?\n\]\]\n/, name);
      assert.doesNotMatch(code(text), /\b(KEYS|ARGV)\b/, name);
    }
  });

  it('every include is included by some script', () => {
    const reached = reach(files.flatMap((f) => directives(readFileSync(join(dir, f), 'utf8'))));
    assert.deepEqual(
      [...texts.keys()].filter((name) => !reached.has(name)),
      [],
    );
  });

  const pieces = [
    ...files.map((f) => ({ label: f, text: readFileSync(join(dir, f), 'utf8') })),
    ...[...texts].map(([name, text]) => ({ label: `includes/${name}.lua`, text })),
  ];
  for (const { label, text } of pieces) {
    it(`${label}: includes what it uses of the includes, and uses each include it names`, () => {
      const own = declared(text);
      const given = reach(directives(text));
      const missing = [...used(text)].filter(
        (name) => owner.has(name) && !own.has(name) && !given.has(owner.get(name)!),
      );
      assert.deepEqual(
        missing.map((name) => `${name} (includes/${owner.get(name)}.lua)`),
        [],
        `${label} uses names it does not include`,
      );
      const names = used(text);
      const idle = directives(text).filter(
        (include) => !topLevelLocals(texts.get(include) ?? '').some((local) => names.has(local)),
      );
      assert.deepEqual(idle, [], `${label} includes what it does not use`);
    });
  }

  it("a script's own top-level names do not shadow an include's", () => {
    for (const file of files) {
      const shadowed = topLevelLocals(readFileSync(join(dir, file), 'utf8')).filter((name) => owner.has(name));
      assert.deepEqual(shadowed, [], file);
    }
  });

  it("each script's full text declares fewer than Lua's 200 locals at its top level", () => {
    for (const name of Object.keys(SCRIPTS) as ScriptName[]) {
      const locals = topLevelLocals(scriptText(name));
      assert.equal(new Set(locals).size, locals.length, `${name} declares a name twice`);
      assert.ok(locals.length < 200, `${name}: ${locals.length} top-level locals`);
    }
  });

  it('the library holds every include once, then each script as a function named dq_<version>_<script>, at most 200 locals at its top level', () => {
    const lib = scriptLibrary();
    assert.match(lib.name, /^dq_[0-9a-f]{12}$/);
    assert.ok(lib.text.startsWith(`#!lua name=${lib.name}\n`));
    for (const [name, text] of Object.entries(INCLUDES))
      assert.equal(lib.text.split(text).length, 2, `includes/${name}.lua once`);
    for (const name of Object.keys(SCRIPTS) as ScriptName[]) {
      assert.equal(lib.functions[name], `${lib.name}_${name}`);
      assert.ok(lib.text.includes(`function_name = '${lib.functions[name]}'`), name);
      assert.ok(
        lib.text.includes(`\nbeginCall()\n${SCRIPTS[name].source}\nend }`),
        `${name} starts from a clean per-call state`,
      );
    }
    // the functions' own are theirs
    const locals = topLevelLocals(lib.text.slice(0, lib.text.indexOf('redis.register_function')));
    assert.equal(new Set(locals).size, locals.length, 'a name declared twice');
    assert.ok(locals.length < 200, `${locals.length} top-level locals`);
  });

  it('the full text of syncPoint-1.lua is the script alone; of getSchedule-1.lua, the schedules include then the script', () => {
    assert.equal(scriptText('syncPoint'), SCRIPTS.syncPoint.source);
    assert.equal(scriptText('getSchedule'), `${INCLUDES.schedules}\n${SCRIPTS.getSchedule.source}`);
  });
});

describe('includeOrder', () => {
  const includes = { a: '--- @include "b"\n--- @include "c"\n', b: '--- @include "c"\n', c: '', d: '' };

  it('puts every include after those it includes, each once, in the order named', () => {
    assert.deepEqual(includeOrder('--- @include "d"\n--- @include "a"\n--- @include "c"\nreturn 1', includes), [
      'd',
      'c',
      'b',
      'a',
    ]);
    assert.deepEqual(includeOrder('return 1', includes), []);
  });

  it('reads only whole `--- @include` lines', () => {
    assert.deepEqual(includeOrder('-- --- @include "a"\nlocal x = 1 --- @include "b"\n--- @include "c"', includes), [
      'c',
    ]);
  });

  it('throws on an unknown include, naming who includes it', () => {
    assert.throws(
      () => includeOrder('--- @include "a"', { a: '--- @include "zz"' }, 'x-1.lua'),
      /includes\/a\.lua includes "zz"/,
    );
    assert.throws(() => includeOrder('--- @include "toString"', includes, 'x-1.lua'), /x-1\.lua includes "toString"/);
  });

  it('throws on includes that go round', () => {
    assert.throws(
      () => includeOrder('--- @include "a"', { a: '--- @include "b"', b: '--- @include "a"' }),
      /a -> b -> a/,
    );
  });
});
