// The CloudFormation resources of an AWS stage: the YAML fragments beside this file, chosen and
// adjusted by the parameters (deploy/params.cjs), the fan-out's invoke grants derived from
// custom.queue, the API's client policies with custom.queue.auth iam (deploy/auth.cjs), and the
// alarms (deploy/alarms.cjs).
const { alarms } = require('./alarms.cjs');
const { authResources } = require('./auth.cjs');
const { checkedParams, isMemoryDb, isTrue, memoryDbName } = require('./params.cjs');

const functionArn = (service, stage, name) => ({
  'Fn::Sub': `arn:\${AWS::Partition}:lambda:\${AWS::Region}:\${AWS::AccountId}:function:${service}-${stage}-${name}`,
});

/**
 * Access string of the MemoryDB user: the queue's keys and the commands it sends, nothing else.
 * Every key is built in lib/engine/keys.ts as dq:{...}:...; commands a Lua script calls are checked
 * against the caller's ACL too, so they are listed with the ones the client sends.
 */
const MEMORYDB_ACCESS = [
  'on',
  '~dq:*', // lib/engine/keys.ts builds every key under dq:
  '-@all',
  // scripts (lib/engine/script-runner.ts): FCALL of the queue's function library, which FUNCTION LOAD puts on a
  // primary that lacks it; EVAL and EVALSHA when a server refuses functions (no SCRIPT LOAD)
  '+fcall',
  '+function|load',
  '+eval',
  '+evalsha',
  '+blpop', // the sweeper's wake-up list (lib/workers/sweeper.ts)
  '+time',
  '+zcard',
  '+llen',
  '+zrange', // engine/sweep.ts, attempts.ts, read.ts
  '+hmget',
  '+hget',
  '+multi',
  '+exec', // bodies kept apart, read beside their script (engine/read.ts, attempts.ts, dead.ts)
  // GET /topics: lateness per minute (engine/lateness.ts); LRANGE of the ready heads is in the Lua list below
  '+hgetall',
  '+wait', // durability replica only (lib/engine/durable.ts; DQ_DURABILITY may ask for it)
  '+info', // ioredis' ready check on every connection; durability replica's replica count
  '+cluster|slots',
  '+cluster|info',
  '+asking', // ioredis Cluster: slot map, ready check, redirections
  '+client|setinfo', // ioredis names its library on connect (a refusal would count as an ACL failure)
  // Lua (lua/*.lua, lua/includes/job.lua)
  '+del',
  '+exists',
  '+get',
  '+set',
  '+incr',
  '+pexpire',
  '+hset',
  '+hdel',
  '+hstrlen',
  '+hincrby', // hincrby: a record write takes the next version from the jobs hash's #seq
  '+hlen', // createKey-2: the number of API keys
  '+hexists', // a topic's pause mark (flow.lua; read.ts reads it beside the counts)
  '+hsetnx', // pauseTopic-1
  '+lpush',
  '+lrange',
  '+lindex', // priorities: the ready list's and a lane's head (includes/priority.lua, includes/flow.lua)
  '+rpush',
  '+lpop',
  '+ltrim',
  '+zadd',
  '+zrem',
  '+zscore',
  '+zrank',
  '+zcount',
  '+zrangebyscore',
  '+zremrangebyrank',
  '+zrangebylex', // schedules: listSchedules-2 pages the schedule ids by name
].join(' ');

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

/** The CloudFormation resources of an AWS stage (`resources` of deploy/aws.yml). */
async function resources({ resolveVariable }) {
  const p = await checkedParams(resolveVariable);
  const service = await resolveVariable('self:service');
  const stage = await resolveVariable('sls:stage');
  const queue = await resolveVariable('self:custom.queue');
  const load = (name) => resolveVariable(`file(./deploy/${name}.yml)`);
  const fragments = ['security', isMemoryDb(p) ? 'memorydb' : 'redis', 'secrets', 'iam', 'api'];
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
      Statement: [
        {
          Effect: 'Allow',
          Principal: '*',
          Action: 'secretsmanager:GetSecretValue',
          Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:*' },
        },
      ],
    };
  }

  if (!isMemoryDb(p)) R.DqRedis.Properties.NumCacheClusters = 1 + Number(p.replicas); // cluster mode replaces it below
  if (isMemoryDb(p)) {
    // always a cluster: the `cluster` parameter does not apply
    Object.assign(R.DqMemoryDb.Properties, { NumShards: Number(p.shards), NumReplicasPerShard: Number(p.replicas) });
    R.DqMemoryDbUser.Properties.AccessString = MEMORYDB_ACCESS;
    R.DqRedisSecurityGroup.Properties.GroupDescription = R.DqRedisSecurityGroup.Properties.GroupDescription.replace(
      'ElastiCache',
      'MemoryDB',
    );
  } else if (isTrue(p.cluster)) {
    const group = R.DqRedis.Properties;
    delete group.NumCacheClusters;
    group.ClusterMode = 'enabled';
    group.NumNodeGroups = Number(p.shards);
    group.ReplicasPerNodeGroup = Number(p.replicas);
    R.DqRedisParameters.Properties.Properties['cluster-enabled'] = 'yes';
    R.DqRedisParameters.Properties.Description += ' (cluster mode)';
  }

  // The fan-out may invoke exactly the topics' handler functions.
  const handlers = [
    ...new Set(
      Object.values(queue.topics)
        .map((t) => t.handler)
        .filter(Boolean),
    ),
  ].sort();
  R.DqFanoutRole.Properties.Policies[0].PolicyDocument.Statement[0].Resource = handlers.map((h) =>
    functionArn(service, stage, h),
  );

  const names = isMemoryDb(p) ? { memoryDbName: memoryDbName(service, stage) } : {};
  merge(out, await authResources(resolveVariable, `${service}-${stage}`)); // custom.queue.auth iam: the client policies
  return merge(out, alarms({ service, stage, queue, p: { ...p, ...names } }));
}

module.exports = { resources, MEMORYDB_ACCESS };
