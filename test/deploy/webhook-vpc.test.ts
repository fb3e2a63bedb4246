/**
 * The stack's own VPC CIDR reaches the functions as DQ_WEBHOOK_DENY_CIDRS (issue 12, finding 8),
 * so webhooks cannot be pointed at resources inside it. Checked with `serverless print`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { printConfig } from '../support/stack';

async function environment(args: string[]): Promise<Record<string, string>> {
  const { status, config, output } = await printConfig(args);
  assert.equal(status, 0, output);
  return config.provider.environment;
}

describe('DQ_WEBHOOK_DENY_CIDRS (serverless print)', { concurrency: true }, () => {
  it("is the VPC's CIDR on AWS stages: the default, or the vpcCidr given", async () => {
    const [byDefault, given] = await Promise.all([
      environment(['--stage', 'prod']),
      environment(['--stage', 'prod', '--param=vpcCidr=10.9.0.0/16']),
    ]);
    assert.equal(byDefault.DQ_WEBHOOK_DENY_CIDRS, '10.42.0.0/16');
    assert.equal(given.DQ_WEBHOOK_DENY_CIDRS, '10.9.0.0/16');
  });

  it('is empty on the local stage, which has no VPC', async () => {
    assert.equal((await environment(['--stage', 'local'])).DQ_WEBHOOK_DENY_CIDRS ?? '', '');
  });
});
