/**
 * The stack's options as `serverless print` resolves them (no build): an existing VPC, a VPC
 * without NAT, wakeInvokes, replicas, and the local stage. test/deploy/template.test.ts packages
 * the default stages.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Json, printConfig } from '../support/stack';

describe('network options (serverless print)', { concurrency: true }, () => {
  it('uses the given VPC, subnets and security group, and creates no network of its own', async () => {
    const { status, config, output } = await printConfig([
      '--stage',
      'prod',
      '--param=vpcId=vpc-0abc',
      '--param=subnetIds=subnet-0aaa, subnet-0bbb',
      '--param=lambdaSecurityGroupId=sg-0ccc',
      '--param=vpcEndpoints=false',
      '--param=reservedConcurrency=false',
    ]);
    assert.equal(status, 0, output);
    assert.deepEqual(config.provider.vpc, { securityGroupIds: ['sg-0ccc'], subnetIds: ['subnet-0aaa', 'subnet-0bbb'] });
    const resources = config.resources.Resources as Record<string, Json>;
    for (const id of ['DqVpc', 'DqNatGateway', 'DqLambdaEndpoint', 'DqLambdaSecurityGroup'])
      assert.equal(resources[id], undefined, id);
    assert.deepEqual(resources.DqRedisSubnetGroup.Properties.SubnetIds, ['subnet-0aaa', 'subnet-0bbb']);
    assert.equal(resources.DqRedisSecurityGroup.Properties.VpcId, 'vpc-0abc');
    assert.equal(resources.DqRedisIngressFromLambdas.Properties.SourceSecurityGroupId, 'sg-0ccc');
    assert.equal(config.functions.sweeper.reservedConcurrency ?? null, null);
  });

  it('builds its own VPC without a NAT gateway when asked (no webhooks)', async () => {
    const { status, config, output } = await printConfig(['--stage', 'prod', '--param=natGateway=false']);
    assert.equal(status, 0, output);
    const resources = config.resources.Resources as Record<string, Json>;
    assert.ok(resources.DqVpc && resources.DqLambdaEndpoint);
    for (const id of ['DqNatGateway', 'DqInternetGateway', 'DqPublicSubnet', 'DqPrivateDefaultRoute'])
      assert.equal(resources[id], undefined, id);
  });

  it('with wakeInvokes=false, only the sweeper and the fan-out may invoke functions', async () => {
    const { status, config, output } = await printConfig(['--stage', 'prod', '--param=wakeInvokes=false']);
    assert.equal(status, 0, output);
    const resources = config.resources.Resources as Record<string, Json>;
    const invokers = Object.entries(resources)
      .filter(
        ([, r]) =>
          r.Type === 'AWS::IAM::Role' && JSON.stringify(r.Properties.Policies ?? []).includes('lambda:InvokeFunction'),
      )
      .map(([id]) => id)
      .sort();
    assert.deepEqual(invokers, ['DqFanoutRole', 'DqSweeperRole']);
    for (const name of [
      'addJob',
      'addJobs',
      'putJob',
      'redrive',
      'putSchedule',
      'resumeTopic',
      'flows',
      'resumeSchedule',
      'exampleHandler',
      'webhookHandler',
    ]) {
      assert.equal(config.functions[name].role, 'DqFunctionRole', name);
    }
    assert.equal(config.provider.environment.DQ_WAKE_INVOKES, 'false');
  });

  it('replicas: more replicas per shard, on every engine; at least one (durability replica needs it)', async () => {
    const prints = (variants: string[][]) =>
      Promise.all(variants.map((params) => printConfig(['--stage', 'prod', ...params.map((p) => `--param=${p}`)])));
    const resourcesOf = ({ status, config, output }: Awaited<ReturnType<typeof printConfig>>) => {
      assert.equal(status, 0, output);
      return config.resources.Resources as Record<string, Json>;
    };
    const bad = ['0', '6', 'two'];
    const [good, refused] = await Promise.all([
      prints([[], ['replicas=2'], ['replicas=2', 'cluster=true'], ['replicas=2', 'engine=memorydb']]),
      prints(bad.map((value) => [`replicas=${value}`])),
    ]);
    const [byDefault, two, twoCluster, twoMemoryDb] = good.map(resourcesOf);
    assert.equal(byDefault!.DqRedis!.Properties.NumCacheClusters, 2, 'default: a primary and one replica');
    assert.equal(two!.DqRedis!.Properties.NumCacheClusters, 3);
    assert.equal(twoCluster!.DqRedis!.Properties.ReplicasPerNodeGroup, 2);
    assert.equal(twoMemoryDb!.DqMemoryDb!.Properties.NumReplicasPerShard, 2);
    refused.forEach(({ status, output }, i) => {
      assert.notEqual(status, 0, bad[i]);
      assert.match(output, /param replicas must be an integer from 1 to 5/);
    });
  });

  it('refuses a VPC without its subnets', async () => {
    const { status, output } = await printConfig(['--stage', 'prod', '--param=vpcId=vpc-0abc']);
    assert.notEqual(status, 0);
    assert.match(output, /param vpcId needs subnetIds/);
  });
});

describe('the local stage', () => {
  it('has no AWS settings: no VPC, roles, resources', async () => {
    const { status, config, output } = await printConfig(['--stage', 'local']);
    assert.equal(status, 0, output);
    assert.equal(config.resources ?? null, null);
    assert.equal(config.provider.vpc ?? null, null);
    assert.equal(config.provider.iam ?? null, null);
    for (const [name, fn] of Object.entries(config.functions as Record<string, Json>))
      assert.equal(fn.role ?? null, null, name);
    assert.match(config.provider.environment.REDIS_URL, /^redis:\/\//);
    assert.equal(config.provider.environment.REDIS_CLUSTER, 'false');
  });
});
