// Values serverless.yml cannot express by itself for the AWS stages: choices made at package time
// from --param values (cluster mode, existing VPC, NAT gateway, endpoints, alarm actions) and lists
// derived from custom.queue (the fan-out's invoke grants, per-topic alarms). DEPLOY.md lists the
// parameters; their defaults are here.

/** Parameters of the AWS stages and their defaults (override with --param="name=value"). */
const DEFAULTS = {
  cluster: 'false', // 'true': ElastiCache cluster mode, `shards` shards, ioredis Cluster client
  shards: '2', // cluster mode: node groups, each a primary and a replica
  partitions: '', // hash-tag partitions of the keys; default 1, or 4 per shard in cluster mode
  nodeType: 'cache.t4g.micro',
  engineVersion: '8.0', // ElastiCache for Valkey
  snapshotDays: '7', // daily snapshots kept
  vpcCidr: '10.42.0.0/16', // the VPC this stack creates
  vpcId: '', // use an existing VPC instead (with subnetIds)
  subnetIds: '', // comma-separated private subnets in two or more AZs of vpcId
  lambdaSecurityGroupId: '', // use an existing group for the Lambdas instead of creating one
  natGateway: 'true', // egress for webhooks (created VPC only)
  vpcEndpoints: 'true', // Lambda interface endpoint; 'false' when the VPC has one already
  secretsEndpoint: 'false', // Secrets Manager interface endpoint, for handlers that read secrets
  reservedConcurrency: 'true', // 'false' on accounts whose unreserved pool cannot spare 4
  // 'false': only the sweeper and the fan-out may invoke functions. API functions and topic
  // handlers then only wake a running sweeper through Redis; a job they make due while no sweeper
  // runs waits for the per-minute tick (up to a minute late). 'true' lets them start one.
  wakeInvokes: 'true',
  apiRateLimit: '50', // HTTP API steady requests per second
  apiBurstLimit: '100',
  latenessAlarmMs: '30000', // p99 lateness per topic over 5 minutes that raises the alarm
  alarmEmail: '', // mailed by a new SNS topic when an alarm fires
  alarmTopicArn: '', // or an existing SNS topic
};

async function param(resolveVariable, name) {
  try {
    const value = await resolveVariable(`param:${name}`);
    if (value !== null && value !== undefined) return String(value);
  } catch (error) {
    // only "not given" means the default; anything else (a dependency not resolved yet) is the
    // resolver's business: it calls again later
    if (!/Value not found/.test(error?.message ?? '')) throw error;
  }
  return DEFAULTS[name];
}

const params = async (resolveVariable) =>
  Object.fromEntries(await Promise.all(Object.keys(DEFAULTS).map(async (n) => [n, await param(resolveVariable, n)])));

const isTrue = (value) => value === 'true';
const list = (value) => value.split(',').map((s) => s.trim()).filter(Boolean);
const upperFirst = (s) => s.charAt(0).toUpperCase() + s.slice(1);
const logicalName = (s) => upperFirst(s.replace(/[^A-Za-z0-9]/g, ''));

function check(p) {
  if (!['true', 'false'].includes(p.cluster)) throw new Error(`param cluster must be true or false, got ${p.cluster}`);
  if (p.vpcId && list(p.subnetIds).length < 2) throw new Error('param vpcId needs subnetIds: two or more private subnets in different AZs, comma-separated');
  if (!p.vpcId && (p.subnetIds || p.lambdaSecurityGroupId)) throw new Error('params subnetIds and lambdaSecurityGroupId need vpcId');
  const shards = Number(p.shards);
  if (!Number.isInteger(shards) || shards < 1 || shards > 500) throw new Error(`param shards must be an integer from 1 to 500, got ${p.shards}`);
  return p;
}

const target = async (resolveVariable) => String(await resolveVariable('param:target'));

module.exports.vpcId = async ({ resolveVariable }) => {
  const p = await params(resolveVariable);
  return p.vpcId || { Ref: 'DqVpc' };
};

module.exports.subnetIds = async ({ resolveVariable }) => {
  const p = await params(resolveVariable);
  return p.vpcId ? list(p.subnetIds) : [{ Ref: 'DqPrivateSubnetA' }, { Ref: 'DqPrivateSubnetB' }];
};

module.exports.lambdaSecurityGroup = async ({ resolveVariable }) => {
  const p = await params(resolveVariable);
  return p.lambdaSecurityGroupId || { Ref: 'DqLambdaSecurityGroup' };
};

/** provider.vpc of the AWS stages: every function runs in the private subnets. */
module.exports.vpc = async (ctx) => ({
  securityGroupIds: [await module.exports.lambdaSecurityGroup(ctx)],
  subnetIds: await module.exports.subnetIds(ctx),
});

/** Reserved concurrency per function name, or nothing with reservedConcurrency=false. */
module.exports.reservedConcurrency = async ({ resolveVariable }) => {
  const p = await params(resolveVariable);
  return isTrue(p.reservedConcurrency) ? { sweeper: 2, fanout: 2 } : {};
};

/** custom.queue.partitions: 1 on one node; in cluster mode 4 per shard, so slots spread evenly. */
module.exports.partitions = async ({ resolveVariable }) => {
  const p = check(await params(resolveVariable));
  if (p.partitions) return Number(p.partitions);
  if ((await target(resolveVariable)) === 'local' || !isTrue(p.cluster)) return 1;
  return 4 * Number(p.shards);
};

/** DQ_WAKE_INVOKES of the AWS stages. */
module.exports.wakeInvokes = async ({ resolveVariable }) => {
  const p = await params(resolveVariable);
  if (!['true', 'false'].includes(p.wakeInvokes)) throw new Error(`param wakeInvokes must be true or false, got ${p.wakeInvokes}`);
  return p.wakeInvokes;
};

/** Roles of the API functions that add jobs and of the topic handlers: with invoke rights or without. */
module.exports.apiWriterRole = async ({ resolveVariable }) => (isTrue((await params(resolveVariable)).wakeInvokes) ? 'DqApiWriterRole' : 'DqFunctionRole');
module.exports.handlerRole = async ({ resolveVariable }) => (isTrue((await params(resolveVariable)).wakeInvokes) ? 'DqHandlerRole' : 'DqFunctionRole');

/** REDIS_CLUSTER of the AWS stages. */
module.exports.redisCluster = async ({ resolveVariable }) => (await params(resolveVariable)).cluster;

/** REDIS_URL of the AWS stages: TLS, the AUTH token resolved by CloudFormation, the group's endpoint. */
module.exports.redisUrl = async ({ resolveVariable }) => {
  const p = await params(resolveVariable);
  const endpoint = isTrue(p.cluster) ? 'ConfigurationEndPoint' : 'PrimaryEndPoint';
  return { 'Fn::Sub': `rediss://:{{resolve:secretsmanager:\${DqRedisAuthSecret}:SecretString}}@\${DqRedis.${endpoint}.Address}:\${DqRedis.${endpoint}.Port}` };
};

for (const name of ['vpcCidr', 'nodeType', 'engineVersion']) {
  module.exports[name] = async ({ resolveVariable }) => (await params(resolveVariable))[name];
}
module.exports.snapshotDays = async ({ resolveVariable }) => Number((await params(resolveVariable)).snapshotDays);
module.exports.parameterGroupFamily = async ({ resolveVariable }) => `valkey${(await params(resolveVariable)).engineVersion.split('.')[0]}`;

const functionArn = (service, stage, name) => ({
  'Fn::Sub': `arn:\${AWS::Partition}:lambda:\${AWS::Region}:\${AWS::AccountId}:function:${service}-${stage}-${name}`,
});

function merge(into, fragment) {
  for (const [section, entries] of Object.entries(fragment ?? {})) {
    into[section] ??= {};
    for (const [key, value] of Object.entries(entries)) {
      if (key in into[section]) throw new Error(`deploy/: ${section}.${key} is defined twice`);
      into[section][key] = value;
    }
  }
  return into;
}

/** The CloudFormation resources of an AWS stage, composed from the fragments in deploy/. */
module.exports.resources = async ({ resolveVariable }) => {
  const p = check(await params(resolveVariable));
  const service = await resolveVariable('self:service');
  const stage = await resolveVariable('sls:stage');
  const queue = await resolveVariable('self:custom.queue');
  const load = (name) => resolveVariable(`file(./deploy/${name}.yml)`);
  const fragments = ['security', 'redis', 'secrets', 'iam', 'api', 'alarms'];
  if (!p.vpcId) fragments.push('network');
  if (!p.vpcId && isTrue(p.natGateway)) fragments.push('nat');
  if (isTrue(p.vpcEndpoints)) fragments.push('endpoints');
  const out = {};
  for (const fragment of await Promise.all(fragments.map(load))) merge(out, fragment);
  const R = out.Resources;

  if (p.lambdaSecurityGroupId) delete R.DqLambdaSecurityGroup;

  // Without wake-up invokes, API functions and handlers use the plain role (no invoke rights).
  if (!isTrue(p.wakeInvokes)) {
    delete R.DqApiWriterRole;
    delete R.DqHandlerRole;
  }

  if (isTrue(p.vpcEndpoints) && isTrue(p.secretsEndpoint)) {
    R.DqSecretsManagerEndpoint = structuredClone(R.DqLambdaEndpoint);
    R.DqSecretsManagerEndpoint.Properties.ServiceName = { 'Fn::Sub': 'com.amazonaws.${AWS::Region}.secretsmanager' };
    R.DqSecretsManagerEndpoint.Properties.PolicyDocument = {
      Version: '2012-10-17',
      Statement: [{ Effect: 'Allow', Principal: '*', Action: 'secretsmanager:GetSecretValue', Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:*' } }],
    };
  }

  if (isTrue(p.cluster)) {
    const group = R.DqRedis.Properties;
    delete group.NumCacheClusters;
    group.ClusterMode = 'enabled';
    group.NumNodeGroups = Number(p.shards);
    group.ReplicasPerNodeGroup = 1;
    R.DqRedisParameters.Properties.Properties['cluster-enabled'] = 'yes';
    R.DqRedisParameters.Properties.Description += ' (cluster mode)';
  }

  // The fan-out may invoke exactly the topics' handler functions.
  const handlers = [...new Set(Object.values(queue.topics).map((t) => t.handler).filter(Boolean))].sort();
  R.DqFanoutRole.Properties.Policies[0].PolicyDocument.Statement[0].Resource = handlers.map((h) => functionArn(service, stage, h));

  // Per topic: dead letters and lateness p99.
  for (const topic of Object.keys(queue.topics)) {
    const dimensions = [{ Name: 'service', Value: `${service}-${stage}` }, { Name: 'topic', Value: topic }];
    R[`DqDeadLetters${logicalName(topic)}Alarm`] = {
      Type: 'AWS::CloudWatch::Alarm',
      Properties: {
        AlarmName: `${service}-${stage}-dead-letters-${topic}`,
        AlarmDescription: `Jobs of topic ${topic} failed their last attempt and went dead (GET /topics/${topic}/dead).`,
        Namespace: 'DelayQueue',
        MetricName: 'dead',
        Dimensions: dimensions,
        Statistic: 'Sum',
        Period: 300,
        EvaluationPeriods: 1,
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      },
    };
    R[`DqLateness${logicalName(topic)}Alarm`] = {
      Type: 'AWS::CloudWatch::Alarm',
      Properties: {
        AlarmName: `${service}-${stage}-lateness-${topic}`,
        AlarmDescription: `Jobs of topic ${topic} reach their handler late: p99 of claim time minus due time.`,
        Namespace: 'DelayQueue',
        MetricName: 'lateness',
        Dimensions: dimensions,
        ExtendedStatistic: 'p99',
        Unit: 'Milliseconds',
        Period: 300,
        EvaluationPeriods: 2, // two 5-minute periods: one slow tick is not an incident
        Threshold: Number(p.latenessAlarmMs),
        ComparisonOperator: 'GreaterThanThreshold',
        TreatMissingData: 'notBreaching',
      },
    };
  }

  // Memory: with noeviction a full Redis refuses writes, so warn well before. One alarm per shard,
  // on its first node (-001; a replica holds the same data, so after a failover it still tells).
  const nodes = isTrue(p.cluster)
    ? Array.from({ length: Number(p.shards) }, (_, i) => `-${String(i + 1).padStart(4, '0')}-001`)
    : ['-001'];
  nodes.forEach((suffix, i) => {
    R[`DqRedisMemory${nodes.length > 1 ? `Shard${i + 1}` : ''}Alarm`] = {
      Type: 'AWS::CloudWatch::Alarm',
      Properties: {
        AlarmName: `${service}-${stage}-redis-memory${nodes.length > 1 ? `-shard${i + 1}` : ''}`,
        AlarmDescription: 'Redis memory is filling up; at 100% it refuses new jobs (maxmemory-policy noeviction). Scale the node type or shards.',
        Namespace: 'AWS/ElastiCache',
        MetricName: 'DatabaseMemoryUsagePercentage',
        Dimensions: [{ Name: 'CacheClusterId', Value: { 'Fn::Sub': `\${DqRedis}${suffix}` } }],
        Statistic: 'Maximum',
        Period: 300,
        EvaluationPeriods: 2,
        Threshold: 80,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'missing',
      },
    };
  });

  // Alarm actions.
  let action;
  if (p.alarmTopicArn) action = p.alarmTopicArn;
  else if (p.alarmEmail) {
    R.DqAlarmTopic = {
      Type: 'AWS::SNS::Topic',
      Properties: { TopicName: `${service}-${stage}-alarms`, Subscription: [{ Protocol: 'email', Endpoint: p.alarmEmail }] },
    };
    action = { Ref: 'DqAlarmTopic' };
    out.Outputs.AlarmTopicArn = { Value: { Ref: 'DqAlarmTopic' } };
  }
  if (action) {
    for (const resource of Object.values(R)) {
      if (resource.Type === 'AWS::CloudWatch::Alarm') Object.assign(resource.Properties, { AlarmActions: [action], OKActions: [action] });
    }
  }
  return out;
};
module.exports.apiRateLimit = async ({ resolveVariable }) => Number((await params(resolveVariable)).apiRateLimit);
module.exports.apiBurstLimit = async ({ resolveVariable }) => Number((await params(resolveVariable)).apiBurstLimit);
