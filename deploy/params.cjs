// The parameters of the AWS stages: their defaults, how they are read from --param="name=value",
// and the checks that refuse a bad combination at package time. DEPLOY.md explains each one.

/** Parameters of the AWS stages and their defaults (override with --param="name=value"). */
const DEFAULTS = {
  // 'elasticache': ElastiCache for Valkey (replication is asynchronous: a failover can lose the
  // last acknowledged writes). 'memorydb': Amazon MemoryDB, a write is acknowledged once it is in
  // a Multi-AZ transaction log; always a cluster (`shards` shards, ioredis Cluster client).
  engine: 'elasticache',
  cluster: 'false', // 'true': ElastiCache cluster mode, `shards` shards, ioredis Cluster client
  shards: '2', // cluster mode and MemoryDB: shards, each a primary and `replicas` replicas
  // Replicas per shard (1 to 5). Durability `replica` refuses changes (503) while a shard has none:
  // with 1, from a failover until the lost node is replaced (minutes); 2 keep accepting.
  replicas: '1',
  partitions: '', // hash-tag partitions of the keys; default 1, or 4 per shard in cluster mode
  // while the partition count changes: the count before (DEPLOY.md, "Changing the partition count")
  formerPartitions: '',
  nodeType: '', // the engine's smallest node type (ENGINES) unless given
  engineVersion: '', // the engine's Valkey version (ENGINES) unless given
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

/** Per engine: the default node type and Valkey version, and the prefix every node type of it has. */
const ENGINES = {
  elasticache: { nodeType: 'cache.t4g.micro', engineVersion: '8.0', nodeTypePrefix: 'cache.' },
  memorydb: { nodeType: 'db.t4g.small', engineVersion: '7.2', nodeTypePrefix: 'db.' },
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

/** Every parameter as a string, given or default (nodeType and engineVersion: the engine's); nothing checked. */
async function params(resolveVariable) {
  const p = Object.fromEntries(
    await Promise.all(Object.keys(DEFAULTS).map(async (n) => [n, await param(resolveVariable, n)])),
  );
  const engine = ENGINES[p.engine] ?? {};
  return {
    ...p,
    nodeType: p.nodeType || (engine.nodeType ?? ''),
    engineVersion: p.engineVersion || (engine.engineVersion ?? ''),
  };
}

const isTrue = (value) => value === 'true';
/** True when the checked parameters `p` build Amazon MemoryDB instead of ElastiCache. */
const isMemoryDb = (p) => p.engine === 'memorydb';
/** True when the client must speak Redis Cluster: ElastiCache cluster mode, or MemoryDB (always a cluster). */
const isCluster = (p) => isMemoryDb(p) || isTrue(p.cluster);
const list = (value) =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** Returns the boolean parameter `name` of `p` ('true' or 'false'), or throws naming it. */
function booleanParam(p, name) {
  if (!['true', 'false'].includes(p[name])) throw new Error(`param ${name} must be true or false, got ${p[name]}`);
  return p[name];
}

/**
 * Returns `p` after refusing an unknown engine, another engine's node type, or an unusable cluster or network choice.
 */
function check(p) {
  if (!Object.hasOwn(ENGINES, p.engine))
    throw new Error(`param engine must be ${Object.keys(ENGINES).join(' or ')}, got ${p.engine}`);
  const { nodeTypePrefix } = ENGINES[p.engine];
  if (!p.nodeType.startsWith(nodeTypePrefix))
    throw new Error(`param nodeType ${p.nodeType} is not a node type of engine ${p.engine} (${nodeTypePrefix}*)`);
  booleanParam(p, 'cluster');
  if (p.vpcId && list(p.subnetIds).length < 2)
    throw new Error('param vpcId needs subnetIds: two or more private subnets in different AZs, comma-separated');
  if (!p.vpcId && (p.subnetIds || p.lambdaSecurityGroupId))
    throw new Error('params subnetIds and lambdaSecurityGroupId need vpcId');
  const replicas = Number(p.replicas);
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > 5)
    throw new Error(`param replicas must be an integer from 1 to 5, got ${p.replicas}`);
  const shards = Number(p.shards);
  if (!Number.isInteger(shards) || shards < 1 || shards > 500)
    throw new Error(`param shards must be an integer from 1 to 500, got ${p.shards}`);
  return p;
}

/**
 * Name of stage `stage` of `service`'s MemoryDB cluster, subnet group, parameter group and ACL:
 * `service-stage` in lower case (MemoryDB names match [a-z][a-z0-9-]*); throws for a stage that
 * does not fit. Such names are unique per account and region, like the stack's.
 */
function memoryDbName(service, stage) {
  const name = `${service}-${stage}`.toLowerCase();
  if (!/^[a-z][a-z0-9-]*$/.test(name) || /--|-$/.test(name))
    throw new Error(
      `param engine memorydb names its resources ${name}: use a stage of letters, digits and single hyphens`,
    );
  return name;
}

/** Every parameter, checked (see check). */
const checkedParams = async (resolveVariable) => check(await params(resolveVariable));

module.exports = {
  DEFAULTS,
  ENGINES,
  params,
  checkedParams,
  booleanParam,
  isTrue,
  isMemoryDb,
  isCluster,
  list,
  memoryDbName,
};
