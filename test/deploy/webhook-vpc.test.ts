/**
 * The stack's own VPC CIDR reaches the functions as DQ_WEBHOOK_DENY_CIDRS (issue 12, finding 8),
 * so webhooks cannot be pointed at resources inside it. Checked with `serverless print`.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PROJECT_ROOT } from '../support/offline';

const SERVERLESS = join(PROJECT_ROOT, 'node_modules', 'serverless', 'bin', 'serverless.js');
const DUMMY_AWS = { AWS_ACCESS_KEY_ID: 'dummy', AWS_SECRET_ACCESS_KEY: 'dummy', AWS_REGION: 'us-east-1', AWS_PROFILE: '' };

function environment(args: string[]): Record<string, string> {
  const print = spawnSync(process.execPath, [SERVERLESS, 'print', '--format', 'json', ...args], { cwd: PROJECT_ROOT, encoding: 'utf8', env: { ...process.env, ...DUMMY_AWS, SLS_TELEMETRY_DISABLED: '1' } });
  assert.equal(print.status, 0, print.stdout + print.stderr);
  return JSON.parse(print.stdout.slice(print.stdout.indexOf('{'))).provider.environment;
}

describe('DQ_WEBHOOK_DENY_CIDRS (serverless print)', () => {
  it("is the VPC's CIDR on AWS stages: the default, or the vpcCidr given", () => {
    assert.equal(environment(['--stage', 'prod']).DQ_WEBHOOK_DENY_CIDRS, '10.42.0.0/16');
    assert.equal(environment(['--stage', 'prod', '--param=vpcCidr=10.9.0.0/16']).DQ_WEBHOOK_DENY_CIDRS, '10.9.0.0/16');
  });

  it('is empty on the local stage, which has no VPC', () => {
    assert.equal(environment(['--stage', 'local']).DQ_WEBHOOK_DENY_CIDRS ?? '', '');
  });
});
