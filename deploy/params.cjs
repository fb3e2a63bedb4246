// The parameters of the AWS stages: their defaults, how they are read from --param="name=value",
// and the checks that refuse a bad combination at package time. DEPLOY.md explains each one.

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

/** Every parameter as a string, given or default; nothing checked. */
const params = async (resolveVariable) =>
  Object.fromEntries(await Promise.all(Object.keys(DEFAULTS).map(async (n) => [n, await param(resolveVariable, n)])));

const isTrue = (value) => value === 'true';
const list = (value) => value.split(',').map((s) => s.trim()).filter(Boolean);

/** Returns the boolean parameter `name` of `p` ('true' or 'false'), or throws naming it. */
function booleanParam(p, name) {
  if (!['true', 'false'].includes(p[name])) throw new Error(`param ${name} must be true or false, got ${p[name]}`);
  return p[name];
}

/** Returns `p` after refusing an unusable cluster or network choice. */
function check(p) {
  booleanParam(p, 'cluster');
  if (p.vpcId && list(p.subnetIds).length < 2) throw new Error('param vpcId needs subnetIds: two or more private subnets in different AZs, comma-separated');
  if (!p.vpcId && (p.subnetIds || p.lambdaSecurityGroupId)) throw new Error('params subnetIds and lambdaSecurityGroupId need vpcId');
  const shards = Number(p.shards);
  if (!Number.isInteger(shards) || shards < 1 || shards > 500) throw new Error(`param shards must be an integer from 1 to 500, got ${p.shards}`);
  return p;
}

/** Every parameter, checked (see check). */
const checkedParams = async (resolveVariable) => check(await params(resolveVariable));

module.exports = { DEFAULTS, params, checkedParams, booleanParam, isTrue, list };
