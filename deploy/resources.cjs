// The CloudFormation resources of an AWS stage: the YAML fragments beside this file, chosen and
// adjusted by the parameters (deploy/params.cjs), the fan-out's invoke grants derived from
// custom.queue, and the alarms (deploy/alarms.cjs).
const { alarms } = require('./alarms.cjs');
const { checkedParams, isTrue } = require('./params.cjs');

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

/** The CloudFormation resources of an AWS stage (`resources` of deploy/aws.yml). */
async function resources({ resolveVariable }) {
  const p = await checkedParams(resolveVariable);
  const service = await resolveVariable('self:service');
  const stage = await resolveVariable('sls:stage');
  const queue = await resolveVariable('self:custom.queue');
  const load = (name) => resolveVariable(`file(./deploy/${name}.yml)`);
  const fragments = ['security', 'redis', 'secrets', 'iam', 'api'];
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

  return merge(out, alarms({ service, stage, queue, p }));
}

module.exports = { resources };
