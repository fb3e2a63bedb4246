// The variables serverless.yml and the fragments in deploy/ read with ${file(./deploy/vars.cjs):…}:
// values derived from the --param options of the AWS stages. The parameters, their defaults and
// checks are in deploy/params.cjs; the resources in deploy/resources.cjs; the alarms in
// deploy/alarms.cjs.
const {
  booleanParam,
  checkedParams,
  isCluster,
  isMemoryDb,
  isTrue,
  list,
  memoryDbName,
  params,
} = require('./params.cjs');
const { resources } = require('./resources.cjs');

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

/** custom.queue.partitions: 1 on one node; in cluster mode (and on MemoryDB) 4 per shard, so slots spread evenly. */
module.exports.partitions = async ({ resolveVariable }) => {
  const p = await checkedParams(resolveVariable);
  if (p.partitions) return Number(p.partitions);
  if ((await target(resolveVariable)) === 'local' || !isCluster(p)) return 1;
  return 4 * Number(p.shards);
};

/** custom.queue.formerPartitions: the partition count before, while it changes (DEPLOY.md); null when it does not. */
module.exports.formerPartitions = async ({ resolveVariable }) => {
  const p = await checkedParams(resolveVariable);
  return p.formerPartitions ? Number(p.formerPartitions) : null;
};

/** DQ_WAKE_INVOKES of the AWS stages. */
module.exports.wakeInvokes = async ({ resolveVariable }) => booleanParam(await params(resolveVariable), 'wakeInvokes');

/** Roles of the API functions that add jobs and of the topic handlers: with invoke rights or without. */
module.exports.apiWriterRole = async ({ resolveVariable }) =>
  isTrue((await params(resolveVariable)).wakeInvokes) ? 'DqApiWriterRole' : 'DqFunctionRole';
module.exports.handlerRole = async ({ resolveVariable }) =>
  isTrue((await params(resolveVariable)).wakeInvokes) ? 'DqHandlerRole' : 'DqFunctionRole';

/** REDIS_CLUSTER of the AWS stages: 'true' in ElastiCache cluster mode and on MemoryDB. */
module.exports.redisCluster = async ({ resolveVariable }) => String(isCluster(await params(resolveVariable)));

const stageMemoryDbName = async (resolveVariable) =>
  memoryDbName(await resolveVariable('self:service'), await resolveVariable('sls:stage'));
/** Name of the MemoryDB cluster, its subnet group, parameter group and ACL (params.cjs memoryDbName). */
module.exports.memoryDbName = async ({ resolveVariable }) => stageMemoryDbName(resolveVariable);
/** The ACL user the functions authenticate as on MemoryDB. */
module.exports.memoryDbUser = async ({ resolveVariable }) => `${await stageMemoryDbName(resolveVariable)}-queue`;

/**
 * REDIS_URL of the AWS stages: TLS, the secret resolved by CloudFormation, the endpoint. ElastiCache:
 * the AUTH token and the group's primary (or configuration) endpoint; MemoryDB: the ACL user and its
 * password, and the cluster endpoint.
 */
module.exports.redisUrl = async ({ resolveVariable }) => {
  const p = await params(resolveVariable);
  const secret = '{{resolve:secretsmanager:${DqRedisAuthSecret}:SecretString}}';
  if (isMemoryDb(p)) {
    const user = await module.exports.memoryDbUser({ resolveVariable });
    // the Port deploy/memorydb.yml gives the cluster: ClusterEndpoint.Port is a number, which Fn::Sub refuses
    return { 'Fn::Sub': `rediss://${user}:${secret}@\${DqMemoryDb.ClusterEndpoint.Address}:6379` };
  }
  const endpoint = isTrue(p.cluster) ? 'ConfigurationEndPoint' : 'PrimaryEndPoint';
  return { 'Fn::Sub': `rediss://:${secret}@\${DqRedis.${endpoint}.Address}:\${DqRedis.${endpoint}.Port}` };
};

/**
 * custom.queue.durability of the AWS stages. ElastiCache: 'replica' (a change is acknowledged once
 * a replica has it, WAIT 1). MemoryDB: 'none', because MemoryDB acknowledges a write only once it is
 * in its Multi-AZ transaction log, which a failover keeps; its replicas are fed from that log, and
 * what WAIT answers there is not documented (DEPLOY.md, Choosing the Redis engine).
 */
module.exports.durability = async ({ resolveVariable }) =>
  isMemoryDb(await params(resolveVariable)) ? 'none' : 'replica';

for (const name of ['vpcCidr', 'nodeType', 'engineVersion']) {
  module.exports[name] = async ({ resolveVariable }) => (await params(resolveVariable))[name];
}
module.exports.snapshotDays = async ({ resolveVariable }) => Number((await params(resolveVariable)).snapshotDays);
/** Parameter group family of the engine version: valkey8 on ElastiCache, memorydb_valkey7 on MemoryDB. */
module.exports.parameterGroupFamily = async ({ resolveVariable }) => {
  const p = await params(resolveVariable);
  const major = p.engineVersion.split('.')[0];
  return isMemoryDb(p) ? `memorydb_valkey${major}` : `valkey${major}`;
};
module.exports.apiRateLimit = async ({ resolveVariable }) => Number((await params(resolveVariable)).apiRateLimit);
module.exports.apiBurstLimit = async ({ resolveVariable }) => Number((await params(resolveVariable)).apiBurstLimit);

/** The CloudFormation resources of an AWS stage (deploy/resources.cjs). */
module.exports.resources = resources;
