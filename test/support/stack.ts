/**
 * The AWS stages without AWS, for test/deploy/: `serverless package` in a copy of the project (so
 * parallel builds, and the project's own .serverless/ and .esbuild/, never meet) and `serverless
 * print`, both with dummy credentials, and readers of the CloudFormation template they produce.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from './offline';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- CloudFormation properties of any resource type; tests read the fields they check
export type Json = any;
export interface Template {
  Resources: Record<
    string,
    {
      Type: string;
      Properties: Json;
      DependsOn?: string | string[];
      DeletionPolicy?: string;
      UpdateReplacePolicy?: string;
    }
  >;
  Outputs?: Record<string, Json>;
}

/** Left out of the copies: dependencies (linked instead), build output, local data, tests. */
const NOT_COPIED = new Set([
  'node_modules',
  '.git',
  '.serverless',
  '.esbuild',
  '.build',
  '.data',
  '.tmp',
  'coverage',
  'test-artifacts',
  'test',
  'bench',
]);
export const DUMMY_AWS = {
  AWS_ACCESS_KEY_ID: 'dummy',
  AWS_SECRET_ACCESS_KEY: 'dummy',
  AWS_REGION: 'us-east-1',
  AWS_PROFILE: '',
};
export const SERVERLESS = join(PROJECT_ROOT, 'node_modules', 'serverless', 'bin', 'serverless.js');

/** A copy of the project in a temporary folder, sharing node_modules. */
export function projectCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dq-package-'));
  for (const entry of readdirSync(PROJECT_ROOT)) {
    if (!NOT_COPIED.has(entry)) cpSync(join(PROJECT_ROOT, entry), join(dir, entry), { recursive: true });
  }
  symlinkSync(join(PROJECT_ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return dir;
}

/** Runs the framework in `cwd` with `args`; resolves with its exit code, its stdout, and everything it printed. */
export function runServerless(
  cwd: string,
  args: string[],
): Promise<{ code: number | null; stdout: string; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SERVERLESS, ...args], {
      cwd,
      env: { ...process.env, ...DUMMY_AWS, SLS_TELEMETRY_DISABLED: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let output = '';
    child.stdout.on('data', (d) => {
      stdout += d;
      output += d;
    });
    child.stderr.on('data', (d) => (output += d));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, output }));
  });
}

/** `serverless package --stage prod` in `dir` plus `params` (name=value); returns the update-stack template. */
export async function packageStage(dir: string, params: string[]): Promise<{ template: Template; path: string }> {
  const out = join(dir, 'package');
  const { code, output } = await runServerless(dir, [
    'package',
    '--stage',
    'prod',
    '--package',
    out,
    ...params.map((p) => `--param=${p}`),
  ]);
  assert.equal(code, 0, `serverless package ${params.join(' ')} failed:\n${output}`);
  const path = join(out, 'cloudformation-template-update-stack.json');
  return { template: JSON.parse(readFileSync(path, 'utf8')) as Template, path };
}

/**
 * `serverless print --format json`: the resolved configuration, without building anything. Each
 * print is a separate framework process (about 4 s of CPU, mostly loading it); the deploy suites
 * start theirs together (describe concurrency, Promise.all) instead of one after another.
 */
export async function printConfig(args: string[]): Promise<{ status: number | null; config?: Json; output: string }> {
  const { code, stdout, output } = await runServerless(PROJECT_ROOT, ['print', '--format', 'json', ...args]);
  if (code !== 0) return { status: code, output };
  return { status: 0, config: JSON.parse(stdout.slice(stdout.indexOf('{'))), output };
}

/** The resources of `t` of CloudFormation type `type`, as [logical id, resource]. */
export const ofType = (t: Template, type: string) => Object.entries(t.Resources).filter(([, r]) => r.Type === type);
/** The Lambda functions of `t`. */
export const functions = (t: Template) => ofType(t, 'AWS::Lambda::Function');
/** serverless.yml key of a function resource (`delay-queue-prod-sweeper` -> `sweeper`). */
export const functionKey = (fn: Json) => String(fn.Properties.FunctionName).replace(/^delay-queue-prod-/, '');
/** The DQ_CONFIG the functions of `t` get. */
export const queueConfig = (t: Template) =>
  JSON.parse(functions(t)[0]![1].Properties.Environment.Variables.DQ_CONFIG) as {
    partitions: number;
    formerPartitions?: number | null;
    durability: string;
    topics: Record<string, { handler?: string }>;
  };
/** The handler functions of the topics of `t`, sorted. */
export const topicHandlers = (t: Template) =>
  [...new Set(Object.values(queueConfig(t).topics).flatMap((topic) => (topic.handler ? [topic.handler] : [])))].sort();
export const text = (value: Json) => JSON.stringify(value);

/** Whether AWS's cfn-lint is on PATH (it is not installable everywhere; the tests that use it skip). */
export const hasCfnLint = () => spawnSync('cfn-lint', ['--version'], { encoding: 'utf8' }).status === 0;

/**
 * Runs AWS's cfn-lint on the template at `path`, ignoring W3005 (DependsOn already implied, from the framework's
 * templates).
 */
export function cfnLint(path: string): { status: number | null; output: string } {
  const lint = spawnSync('cfn-lint', ['--ignore-checks', 'W3005', '--', path], { encoding: 'utf8' });
  return { status: lint.status, output: lint.stdout + lint.stderr };
}
