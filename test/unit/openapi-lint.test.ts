/**
 * openapi.yaml through a standard OpenAPI linter, as the people who point tools at it will read it:
 * `redocly lint` (@redocly/cli) with its recommended rules, every warning an error (redocly.yaml).
 * It validates the document against OpenAPI 3.1 and each example against its schema with its own
 * resolver and validator, so a form only our ajv reads correctly fails here. A finding the rule
 * gets wrong is listed, with its reason, in .redocly.lint-ignore.yaml.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { PROJECT_ROOT } from '../support/offline';

const CLI = join(PROJECT_ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');

interface Problem {
  ruleId: string;
  message: string;
  location: { pointer: string; start?: { line: number } }[];
}

describe('openapi.yaml passes redocly lint (recommended rules, warnings as errors)', () => {
  it('reports no problem', () => {
    const run = spawnSync(
      process.execPath,
      [CLI, 'lint', 'openapi.yaml', '--config', 'redocly.yaml', '--format', 'json', '--max-problems', '1000'],
      {
        cwd: PROJECT_ROOT,
        encoding: 'utf8',
        // no usage report to Redocly and no update check: the test runs offline and leaves nothing behind
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
        timeout: 180_000, // a loaded 2-core machine; it takes ~1.5 s alone
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    assert.equal(run.error, undefined, `redocly did not run: ${run.error?.message}`);
    const start = run.stdout.indexOf('{');
    assert.ok(start >= 0, `no JSON report from redocly (exit ${run.status}):\n${run.stdout}\n${run.stderr}`);
    const report = JSON.parse(run.stdout.slice(start)) as {
      totals: { errors: number; warnings: number; ignored: number };
      problems: Problem[];
    };
    const listed = report.problems.map(
      (p) => `${p.ruleId} at ${p.location[0]?.pointer} (line ${p.location[0]?.start?.line}): ${p.message}`,
    );
    assert.equal(listed.length, 0, `${listed.length} problems:\n${listed.join('\n')}`);
    assert.deepEqual([report.totals.errors, report.totals.warnings], [0, 0]);
    assert.equal(run.status, 0, run.stderr);
    // every exception in the ignore file still matches a finding: none is left over from an old document
    const ignores = parse(readFileSync(join(PROJECT_ROOT, '.redocly.lint-ignore.yaml'), 'utf8')) as Record<
      string,
      Record<string, string[]>
    >;
    const entries = Object.values(ignores).flatMap((rules) => Object.values(rules).flat());
    assert.equal(
      report.totals.ignored,
      entries.length,
      `the ignore file lists ${entries.length} findings, redocly matched ${report.totals.ignored}`,
    );
  });
});
