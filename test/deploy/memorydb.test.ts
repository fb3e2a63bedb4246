/**
 * --param="engine=memorydb" (issue 13): `serverless package --stage prod` builds Amazon MemoryDB in
 * place of ElastiCache, and the CloudFormation template is checked here and, when AWS's cfn-lint is
 * on PATH, by it. A bad engine value fails packaging. `serverless print` checks an existing VPC.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PROJECT_ROOT } from '../support/offline';
import {
  cfnLint,
  functions,
  hasCfnLint,
  type Json,
  ofType,
  packageStage,
  printConfig,
  projectCopy,
  queueConfig,
  runServerless,
  type Template,
  text,
} from '../support/stack';

const SHARDS = 3; // not the default (2), so the template shows the parameter reached the cluster
const secret = '{{resolve:secretsmanager:${DqRedisAuthSecret}:SecretString}}';

/** Every command the Lua scripts call (redis.call / redis.pcall), lower case. */
function luaCommands(): string[] {
  const dir = join(PROJECT_ROOT, 'lua');
  const files = readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.lua'));
  const commands = new Set<string>();
  for (const file of files) {
    for (const m of readFileSync(join(dir, file), 'utf8').matchAll(/redis\.p?call\(\s*'([A-Za-z]+)'/g))
      commands.add(m[1]!.toLowerCase());
  }
  return [...commands].sort();
}

const one = (t: Template, type: string) => {
  const found = ofType(t, type);
  assert.equal(found.length, 1, `${type}: ${found.map(([id]) => id).join(', ')}`);
  return found[0]![1].Properties;
};

describe('engine=memorydb (serverless package, dummy credentials)', () => {
  const dirs: string[] = [];
  let packaged: { template: Template; path: string };
  let refused: { code: number | null; output: string };
  before(async () => {
    dirs.push(projectCopy(), projectCopy());
    [packaged, refused] = await Promise.all([
      packageStage(dirs[0]!, ['engine=memorydb', `shards=${SHARDS}`]),
      runServerless(dirs[1]!, [
        'package',
        '--stage',
        'prod',
        '--package',
        join(dirs[1]!, 'package'),
        '--param=engine=redis',
      ]),
    ]);
  });
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('builds a MemoryDB cluster and no ElastiCache: TLS, a replica per shard, `shards` shards, the Redis security group, the private subnets', () => {
    const t = packaged.template;
    assert.deepEqual(
      Object.values(t.Resources)
        .filter((r) => r.Type.startsWith('AWS::ElastiCache::'))
        .map((r) => r.Type),
      [],
    );
    const cluster = one(t, 'AWS::MemoryDB::Cluster');
    assert.equal(cluster.TLSEnabled, true);
    assert.equal(cluster.NumReplicasPerShard, 1);
    assert.equal(cluster.NumShards, SHARDS);
    assert.equal(cluster.NodeType, 'db.t4g.small');
    assert.equal(cluster.Engine, 'valkey');
    assert.equal(cluster.Port, 6379);
    assert.equal(cluster.SnapshotRetentionLimit, 7);
    assert.ok(cluster.FinalSnapshotName, 'a final snapshot when the stack deletes the cluster');
    // the security group ElastiCache would use, open on 6379 to the Lambdas' group only
    assert.deepEqual(cluster.SecurityGroupIds, [{ Ref: 'DqRedisSecurityGroup' }]);
    const ingress = ofType(t, 'AWS::EC2::SecurityGroupIngress')
      .map(([, r]) => r.Properties)
      .filter((r) => text(r.GroupId) === text({ Ref: 'DqRedisSecurityGroup' }));
    assert.deepEqual(
      ingress.map((r) => [r.IpProtocol, r.FromPort, r.ToPort, r.SourceSecurityGroupId]),
      [['tcp', 6379, 6379, { Ref: 'DqLambdaSecurityGroup' }]],
    );
    // the private subnets the functions run in
    const subnets = one(t, 'AWS::MemoryDB::SubnetGroup');
    assert.equal(cluster.SubnetGroupName, subnets.SubnetGroupName);
    for (const [id, fn] of functions(t)) assert.deepEqual(fn.Properties.VpcConfig.SubnetIds, subnets.SubnetIds, id);
    assert.deepEqual(subnets.SubnetIds, [{ Ref: 'DqPrivateSubnetA' }, { Ref: 'DqPrivateSubnetB' }]);
    // noeviction: a full queue refuses writes instead of dropping jobs
    const parameters = one(t, 'AWS::MemoryDB::ParameterGroup');
    assert.equal(cluster.ParameterGroupName, parameters.ParameterGroupName);
    assert.equal(parameters.Family, 'memorydb_valkey7');
    assert.equal(parameters.Parameters['maxmemory-policy'], 'noeviction');
    // names, not Refs: the cluster waits for what it names
    const dependsOn = [ofType(t, 'AWS::MemoryDB::Cluster')[0]![1].DependsOn].flat().sort();
    assert.deepEqual(dependsOn, ['DqMemoryDbAcl', 'DqMemoryDbParameters', 'DqMemoryDbSubnetGroup']);
  });

  it('lets one ACL user in, with a password generated in Secrets Manager, on the dq:* keys and the commands the queue sends', () => {
    const t = packaged.template;
    const cluster = one(t, 'AWS::MemoryDB::Cluster');
    const acl = one(t, 'AWS::MemoryDB::ACL');
    const user = one(t, 'AWS::MemoryDB::User');
    assert.equal(cluster.ACLName, acl.ACLName);
    assert.deepEqual(acl.UserNames, [user.UserName]);
    assert.deepEqual(user.AuthenticationMode, { Type: 'password', Passwords: [{ 'Fn::Sub': secret }] });
    const generated = t.Resources.DqRedisAuthSecret!;
    assert.equal(generated.Type, 'AWS::SecretsManager::Secret');
    assert.equal(generated.Properties.GenerateSecretString.ExcludePunctuation, true, 'the password goes into a URL');
    assert.ok(generated.Properties.GenerateSecretString.PasswordLength >= 32);
    for (const name of [user.UserName, acl.ACLName, cluster.ClusterName]) assert.match(name, /^[a-z][a-z0-9-]*$/);

    const rules = String(user.AccessString).split(' ');
    assert.equal(rules[0], 'on');
    assert.deepEqual(
      rules.filter((r) => /^[~%&]/.test(r)),
      ['~dq:*'],
      'keys: dq:* only; no pub/sub channels',
    );
    assert.ok(rules.includes('-@all') && !rules.some((r) => r.startsWith('+@')), 'no command category granted');
    const granted = new Set(rules.filter((r) => r.startsWith('+')).map((r) => r.slice(1)));
    for (const command of ['fcall', 'function|load', 'eval', 'evalsha', 'blpop', 'time', 'cluster|slots'])
      assert.ok(granted.has(command), command);
    // a command a Lua script calls runs under the caller's ACL: every one must be granted
    const missing = luaCommands().filter((c) => !granted.has(c));
    assert.deepEqual(missing, [], 'commands the Lua scripts call that the user may not run');
    for (const dangerous of ['flushall', 'flushdb', 'keys', 'config', 'script', 'debug', 'shutdown', 'acl'])
      assert.ok(![...granted].some((c) => c === dangerous || c.startsWith(`${dangerous}|`)), dangerous);
    assert.deepEqual(
      [...granted].filter((c) => c === 'function' || c.startsWith('function|')),
      ['function|load'],
      'of FUNCTION, only LOAD: never FLUSH, DELETE or RESTORE',
    );
  });

  it('gives the functions the cluster endpoint with the user and password over TLS, the cluster client, 4 partitions per shard, durability none', () => {
    const t = packaged.template;
    const user = one(t, 'AWS::MemoryDB::User').UserName;
    const url = {
      'Fn::Sub': `rediss://${user}:${secret}@\${DqMemoryDb.ClusterEndpoint.Address}:${one(t, 'AWS::MemoryDB::Cluster').Port}`,
    };
    for (const [id, fn] of functions(t)) {
      assert.deepEqual(fn.Properties.Environment.Variables.REDIS_URL, url, id);
      assert.equal(fn.Properties.Environment.Variables.REDIS_CLUSTER, 'true', id);
    }
    assert.equal(t.Resources.DqMemoryDb!.Type, 'AWS::MemoryDB::Cluster');
    assert.equal(queueConfig(t).partitions, 4 * SHARDS);
    // MemoryDB acknowledges a write once its Multi-AZ transaction log has it: no WAIT for a replica
    assert.equal(queueConfig(t).durability, 'none');
    const references = text(t).match(/\{\{resolve:/g)!.length;
    assert.ok(references <= 60, `${references} dynamic references (CloudFormation resolves at most 60)`);
  });

  it('alarms on MemoryDB memory per shard (AWS/MemoryDB, ClusterName and NodeName), none on ElastiCache', () => {
    const t = packaged.template;
    const cluster = one(t, 'AWS::MemoryDB::Cluster').ClusterName;
    const alarms = ofType(t, 'AWS::CloudWatch::Alarm').map(([, a]) => a.Properties);
    assert.deepEqual(
      alarms.filter((a) => a.Namespace === 'AWS/ElastiCache'),
      [],
    );
    const memory = alarms.filter(
      (a) => a.Namespace === 'AWS/MemoryDB' && a.MetricName === 'DatabaseMemoryUsagePercentage',
    );
    assert.deepEqual(
      memory.map((a) => a.Dimensions),
      Array.from({ length: SHARDS }, (_, i) => [
        { Name: 'ClusterName', Value: cluster },
        { Name: 'NodeName', Value: `${cluster}-000${i + 1}-001` },
      ]),
    );
  });

  it('outputs the secret, the cluster and the user, and no replication group', () => {
    const outputs = packaged.template.Outputs ?? {};
    assert.deepEqual(outputs.RedisAuthSecretArn?.Value, { Ref: 'DqRedisAuthSecret' });
    assert.ok(outputs.MemoryDbClusterName && outputs.MemoryDbUserName);
    assert.equal(outputs.RedisReplicationGroupId, undefined);
  });

  it('refuses an engine it does not know, naming the parameter', () => {
    assert.notEqual(refused.code, 0, refused.output);
    assert.match(refused.output, /param engine must be elasticache or memorydb, got redis/);
  });

  it('passes AWS cfn-lint (ignoring W3005)', { skip: !hasCfnLint() && 'cfn-lint is not on PATH' }, () => {
    const lint = cfnLint(packaged.path);
    assert.equal(lint.status, 0, `cfn-lint ${packaged.path}:\n${lint.output}`);
  });
});

describe('engine=memorydb options (serverless print)', { concurrency: true }, () => {
  it('puts the cluster in the given VPC subnets and security group rules', async () => {
    const { status, config, output } = await printConfig([
      '--stage',
      'prod',
      '--param=engine=memorydb',
      '--param=vpcId=vpc-0abc',
      '--param=subnetIds=subnet-0aaa,subnet-0bbb',
      '--param=lambdaSecurityGroupId=sg-0ccc',
      '--param=vpcEndpoints=false',
    ]);
    assert.equal(status, 0, output);
    const resources = config.resources.Resources as Record<string, Json>;
    assert.deepEqual(resources.DqMemoryDbSubnetGroup.Properties.SubnetIds, ['subnet-0aaa', 'subnet-0bbb']);
    assert.equal(resources.DqRedisSecurityGroup.Properties.VpcId, 'vpc-0abc');
    assert.equal(resources.DqRedisIngressFromLambdas.Properties.SourceSecurityGroupId, 'sg-0ccc');
  });

  it('refuses an ElastiCache node type, naming the parameter', async () => {
    const { status, output } = await printConfig([
      '--stage',
      'prod',
      '--param=engine=memorydb',
      '--param=nodeType=cache.t4g.micro',
    ]);
    assert.notEqual(status, 0);
    assert.match(output, /param nodeType cache\.t4g\.micro is not a node type of engine memorydb/);
  });
});
