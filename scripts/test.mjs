// The one test command: runs every *.test.ts under test/<suite>/ with Node's test runner.
// `node scripts/test.mjs` runs all suites; `node scripts/test.mjs unit integration` picks some.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const ALL = ['unit', 'integration', 'e2e', 'deploy', 'browser'];
const suites = process.argv.slice(2).length ? process.argv.slice(2) : ALL;
const files = suites.flatMap((suite) => {
  const dir = join('test', suite);
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.test.ts'))
    .sort()
    .map((f) => join(dir, f));
});
if (files.length === 0) {
  console.error(`no test files under ${suites.map((s) => `test/${s}`).join(', ')}`);
  process.exit(1);
}
const result = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--import',
    './test/support/lua-loader.mjs',
    '--import',
    './test/support/no-keepalive.mjs',
    '--test',
    '--test-reporter',
    process.env.TEST_REPORTER ?? 'spec',
    '--test-concurrency',
    process.env.TEST_CONCURRENCY ?? '2',
    ...files,
  ],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
