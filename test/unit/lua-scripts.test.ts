import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { groupBucketKey, groupChunkKey, topicKeys, type GroupKey } from '../../lib/engine/keys';
import { SCRIPTS } from '../../lib/engine/lua';

const dir = join(__dirname, '..', '..', 'lua');
const files = readdirSync(dir).filter((f) => f.endsWith('.lua'));

describe('lua/ scripts', () => {
  it('every script file is registered, under its own name', () => {
    assert.deepEqual(files.sort(), Object.values(SCRIPTS).map((s) => s.file).sort());
  });

  it("lua/includes/job.lua builds two kinds of key name only: a group's further zsets, from the group's key, and the small groups' buckets, from the jobs hash's (as groupChunkKey and groupBucketKey in lib/engine/keys.ts)", () => {
    const code = readFileSync(join(dir, 'includes', 'job.lua'), 'utf8').replace(/--[^\n]*/g, '');
    assert.doesNotMatch(code, /['"]dq:/);
    assert.deepEqual([...code.matchAll(/\.\.\s*['"][:#][^\n]*/g)].map((m) => m[0]), [".. '#' .. c", ".. '#gb' .. b"]);
    assert.equal(groupChunkKey('dq:{p0}:group:t:g' as GroupKey, 3), 'dq:{p0}:group:t:g#3');
    assert.equal(groupChunkKey('dq:{p0}:group:t:g' as GroupKey, 0), 'dq:{p0}:group:t:g');
    assert.equal(groupBucketKey(topicKeys(0, 't').jobs, 5), `${topicKeys(0, 't').jobs}#gb5`);
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
      assert.match(source, /^--\[\[\n  \S[\s\S]*?KEYS\[1\][\s\S]*?\n\]\]/);
      assert.doesNotMatch(code, /['"]dq:|\.\.\s*['"][:#]/, 'key names are built in lib/engine/keys.ts only (and chunkKey in lua/includes/job.lua)');
      assert.doesNotMatch(code, /'KEYS'|"KEYS"|'SCAN'|'LREM'|ZRANGE[^\n]*0,\s*-1/, 'no unbounded commands');
    });

    it(`${file}: replies with named codes, never a bare negative number (lua/includes/job.lua names them)`, () => {
      assert.doesNotMatch(code, /return\s*\{?\s*-\d/);
    });
  }
});
