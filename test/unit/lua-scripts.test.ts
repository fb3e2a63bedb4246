import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  flowKeys,
  groupBucketKey,
  keyedEntryKey,
  outboxKey,
  groupChunkKey,
  prioKey,
  topicKeys,
  type GroupKey,
  INCLUDES,
  SCRIPTS,
  includeOrder,
  scriptLibrary,
  scriptText,
  type ScriptName,
} from '../../lib/testing';

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

/** The table an include's helpers are fields of: its name with a capital first letter (includes/job.lua: Job). */
function tableOf(include: string): string {
  return include.charAt(0).toUpperCase() + include.slice(1);
}

/**
 * What include `name` exports: each `Table.field = value` of its export lines (`Job.decode, Job.save = decode,
 * save`), as [field, value].
 */
function exportsOf(name: string, text: string): [string, string][] {
  const table = tableOf(name);
  return [
    ...code(text).matchAll(
      new RegExp(`^ *((?:${table}\\.\\w+\\s*,\\s*)*${table}\\.\\w+)\\s*=\\s*([\\w\\s,]+?) *$`, 'gm'),
    ),
  ].flatMap((m) => {
    const fields = m[1]!.split(',').map((f) => f.trim().slice(table.length + 1));
    const values = m[2]!.split(',').map((v) => v.trim());
    return fields.map((field, i): [string, string] => [field, values[i] ?? '']);
  });
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

  it("lua/includes/ build five kinds of key name only: a group's further zsets, from the group's key, and the small groups' buckets, a flow topic's keys, the keyed adds' entries and the outbox, from the jobs hash's (as groupChunkKey, groupBucketKey, flowKeys, keyedEntryKey and outboxKey in lib/engine/keys.ts)", () => {
    const code = includeFiles
      .map((f) => readFileSync(join(dir, 'includes', f), 'utf8').replace(/--[^\n]*/g, ''))
      .join('\n');
    assert.doesNotMatch(code, /['"]dq:/);
    assert.deepEqual([...code.matchAll(/\.\.\s*['"][:#][^\n]*/g)].map((m) => m[0]).sort(), [
      ".. '#' .. c",
      ".. '#cb'",
      ".. '#db:' .. key, kind, tonumber(period), tonumber(maxWait)",
      ".. '#dd:' .. key, kind, tonumber(window), nil",
      ".. '#flow', conf = jobsKey .. '#fconf', ring = jobsKey .. '#lanes', wait = jobsKey .. '#fwait' }",
      ".. '#gb' .. b",
      ".. '#lane:' .. key",
      ".. '#lanep:' .. key",
      ".. '#prio'",
    ]);
    const jobs = topicKeys(0, 't', 1).jobs;
    assert.deepEqual(
      [keyedEntryKey(jobs, 'dedupe', 'k'), keyedEntryKey(jobs, 'debounce', 'k')],
      [`${jobs}#dd:k`, `${jobs}#db:k`],
    );
    const f = flowKeys(topicKeys(0, 't', 1).jobs);
    assert.deepEqual(
      [f.state, f.conf, f.ring, f.wait, f.lane('k'), f.lanePrio('k')],
      ['#flow', '#fconf', '#lanes', '#fwait', '#lane:k', '#lanep:k'].map((s) => `${topicKeys(0, 't', 1).jobs}${s}`),
    );
    assert.equal(prioKey(jobs), `${jobs}#prio`);
    assert.equal(outboxKey(jobs), `${jobs}#cb`);
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
  /** Each include by the name of its table. */
  const byTable = new Map([...texts.keys()].map((name) => [tableOf(name), name]));
  /** What each include gives the others and the scripts: the fields its exports set on its table. */
  const exported = new Map(
    [...texts].map(([name, text]) => [name, new Set(exportsOf(name, text).map(([field]) => field))]),
  );
  /** Every name some include exports. */
  const exportedNames = new Set([...exported.values()].flatMap((fields) => [...fields]));
  const reach = (names: readonly string[], seen = new Set<string>()): Set<string> => {
    for (const name of names) if (!seen.has(name)) reach(directives(texts.get(name) ?? ''), seen.add(name));
    return seen;
  };
  /** The includes whose tables a Lua text reads fields of (`Job.decode`), and those fields as `Job.decode`. */
  const tableUses = (text: string): { includes: Set<string>; fields: string[] } => {
    const uses = [...code(text).matchAll(/(?<![.:\w])([A-Z]\w*)\s*\.\s*(\w+)/g)].filter((m) => byTable.has(m[1]!));
    return {
      includes: new Set(uses.map((m) => byTable.get(m[1]!)!)),
      fields: uses.map((m) => `${m[1]}.${m[2]}`),
    };
  };

  it('every file of lua/includes/ is in INCLUDES under its name, with its text', () => {
    assert.deepEqual(Object.keys(INCLUDES).sort(), [...texts.keys()].sort());
    for (const [name, text] of texts) assert.equal(INCLUDES[name], text, name);
  });

  it('each include opens with a comment block, and reads no KEYS and no ARGV (a script passes what it needs)', () => {
    for (const [name, text] of texts) {
      assert.match(text, /^--\[\[\n {2}\S[\s\S]*?\n\]\]\n/, name);
      assert.doesNotMatch(code(text), /\b(KEYS|ARGV)\b/, name);
    }
  });

  it('each include declares one top-level name, its table (includes/job.lua: Job), and keeps its body in a do ... end block', () => {
    for (const [name, text] of texts) {
      assert.deepEqual(topLevelLocals(text), [tableOf(name)], name);
      assert.match(
        text,
        new RegExp(
          `^--\\[\\[[\\s\\S]*?\\n\\]\\]\\n(--- @include "\\w+"\\n)*local ${tableOf(name)} = \\{\\}\\ndo\\n[\\s\\S]*\\nend\\n$`,
        ),
        name,
      );
    }
  });

  it("each include's exports set a field of its table to its own name of the same name (Job.decode = decode)", () => {
    for (const [name, text] of texts) {
      const exports = exportsOf(name, text);
      assert.ok(exports.length > 0, `${name} exports nothing`);
      const own = declared(text);
      assert.deepEqual(
        exports.filter(([field, value]) => field !== value || !own.has(value)),
        [],
        `${name}: an export under another name, or of a name it does not declare`,
      );
      assert.equal(new Set(exports.map(([field]) => field)).size, exports.length, `${name} exports a name twice`);
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
    ...files.map((f) => ({ label: f, self: undefined, text: readFileSync(join(dir, f), 'utf8') })),
    ...[...texts].map(([name, text]) => ({ label: `includes/${name}.lua`, self: name, text })),
  ];
  for (const { label, self, text } of pieces) {
    it(`${label}: includes the includes whose tables it uses, uses each include it names, and reads only fields they export`, () => {
      const { includes, fields } = tableUses(text);
      const given = reach(directives(text));
      assert.deepEqual(
        [...includes]
          .filter((name) => name !== self && !given.has(name))
          .map((name) => `${tableOf(name)} (includes/${name}.lua)`),
        [],
        `${label} uses tables it does not include`,
      );
      assert.deepEqual(
        directives(text).filter((name) => !includes.has(name)),
        [],
        `${label} includes what it does not use`,
      );
      assert.deepEqual(
        fields.filter((field) => {
          const [table, name] = field.split('.');
          return !exported.get(byTable.get(table!)!)!.has(name!);
        }),
        [],
        `${label} reads fields no include exports (a nil at run time)`,
      );
      const own = declared(text);
      assert.deepEqual(
        [...used(text)].filter((name) => exportedNames.has(name) && !own.has(name)),
        [],
        `${label} uses an include's name without its table (a nil global at run time)`,
      );
      assert.deepEqual(
        [...own].filter((name) => byTable.has(name) && name !== (self && tableOf(self))),
        [],
        `${label} declares the name of an include's table`,
      );
    });
  }

  /** Scripts whose every job reads helpers of the includes: they take them into locals first. */
  const HOT: ReadonlySet<ScriptName> = new Set([
    'addJobs',
    'claimJobs',
    'claimFlow',
    'startAttempts',
    'ackJobs',
    'moveDue',
  ]);

  it("each script's full text declares at most 100 locals at its top level (Lua's limit: 200)", () => {
    for (const name of Object.keys(SCRIPTS) as ScriptName[]) {
      const locals = topLevelLocals(scriptText(name));
      assert.equal(new Set(locals).size, locals.length, `${name} declares a name twice`);
      assert.ok(locals.length <= 100, `${name}: ${locals.length} top-level locals`);
    }
  });

  it("the library holds every include once, then each script as a function named dq_<version>_<script> after its aliases of the includes' helpers, at most 100 locals at its top level", () => {
    const lib = scriptLibrary();
    assert.match(lib.name, /^dq_[0-9a-f]{12}$/);
    assert.ok(lib.text.startsWith(`#!lua name=${lib.name}\n`));
    for (const [name, text] of Object.entries(INCLUDES))
      assert.equal(lib.text.split(text).length, 2, `includes/${name}.lua once`);
    assert.ok(exported.get('call')!.has('beginCall'), 'includes/call.lua exports beginCall');
    for (const name of Object.keys(SCRIPTS) as ScriptName[]) {
      assert.equal(lib.functions[name], `${lib.name}_${name}`);
      assert.ok(lib.text.includes(`function_name = '${lib.functions[name]}'`), name);
      // do <its aliases of the includes' helpers, once> register_function{ ... Call.beginCall() <the rest> end } end
      const at = lib.text.indexOf(`function_name = '${lib.functions[name]}'`);
      const [, aliases, rest] = new RegExp(
        `\\ndo\\n((?:(?!\\ndo\\n)[\\s\\S])*?)redis\\.register_function\\{ function_name = '${lib.functions[name]}', flags = [^\\n]*` +
          `callback = function\\(KEYS, ARGV\\)\\nCall\\.beginCall\\(\\)\\n([\\s\\S]*?)\\nend \\}\\nend(?:\\n|$)`,
      ).exec(lib.text.slice(lib.text.lastIndexOf('\ndo\n', at)))!;
      assert.equal(
        aliases!.replace(/^ {2}/gm, '') + rest,
        SCRIPTS[name].source,
        `${name}: its text, each call from a clean state`,
      );
      const hoisted = code(aliases!)
        .split('\n')
        .filter((line) => line.trim());
      assert.deepEqual(
        hoisted.filter((line) => !/^ {2}local [\w, ]+ = (?:[A-Z]\w*\.\w+, )*[A-Z]\w*\.\w+$/.test(line)),
        [],
        `${name}: only aliases of the includes' helpers run before its function`,
      );
      const aliasAt = code(rest!).search(/^local [\w, ]+ = (?:[A-Z]\w*\.\w+, )*[A-Z]\w*\.\w+$/m);
      assert.ok(
        aliasAt === -1 || code(rest!).slice(0, aliasAt).trim() !== '',
        `${name}: its aliases of the includes' helpers run once, before its function`,
      );
      if (HOT.has(name)) assert.ok(hoisted.length > 0, `${name}: takes what each job uses into locals`);
    }
    // the functions' own are theirs
    const locals = topLevelLocals(lib.text.slice(0, lib.text.indexOf('redis.register_function')));
    assert.equal(new Set(locals).size, locals.length, 'a name declared twice');
    assert.ok(locals.length <= 100, `${locals.length} top-level locals`);
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
