/**
 * The AWS stages, proven without AWS: `serverless package --stage prod` (single node) and its
 * cluster variant run with dummy credentials, each in a copy of the project (so the two builds, and
 * the project's own .serverless/ and .esbuild/, never meet), and the CloudFormation templates are
 * checked here and, when AWS's cfn-lint is on PATH, by it.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import {
  cfnLint,
  functionKey,
  functions,
  hasCfnLint,
  type Json,
  ofType,
  packageStage,
  projectCopy,
  queueConfig,
  type Template,
  text,
  topicHandlers,
} from '../support/stack';

/** Function names an IAM role may invoke, read from its inline policies' Fn::Sub ARNs. */
function invokeTargets(t: Template, roleId: string): string[] {
  const role = t.Resources[roleId]!;
  const targets: string[] = [];
  for (const policy of role.Properties.Policies ?? []) {
    for (const statement of policy.PolicyDocument.Statement) {
      const actions = [statement.Action].flat();
      if (!actions.some((a: string) => /^lambda:(InvokeFunction|\*)$|^\*$/.test(a))) continue;
      for (const resource of [statement.Resource].flat()) {
        const arn = typeof resource === 'string' ? resource : resource['Fn::Sub'];
        const match = /:function:delay-queue-prod-([A-Za-z0-9_-]+)$/.exec(arn);
        assert.ok(match, `role ${roleId} may invoke ${text(resource)}: not one named function`);
        targets.push(match[1]!);
      }
    }
  }
  return targets.sort();
}

/** Who invokes whom, from the code (grep invokeAsync, wakeFor, requestFanout in lib/). */
function expectedInvokes(t: Template, key: string): string[] {
  if (['addJob', 'addJobs', 'putJob', 'redrive', 'putSchedule', 'resumeTopic', 'flows', 'resumeSchedule'].includes(key))
    return ['sweeper']; // the engine's wakeFor (lib/engine/coordination.ts) starts a sweeper
  if (key === 'sweeper') return ['fanout', 'sweeper']; // hand-over, requestFanout
  // one invoke per batch; and a fan-out whose paced topics wait past its time hands them over to a
  // new fan-out (requestFanout in runFanout, lib/workers/fanout.ts)
  if (key === 'fanout') return [...topicHandlers(t), 'fanout'].sort();
  if (topicHandlers(t).includes(key)) return ['fanout', 'sweeper']; // lib/workers/handler.ts
  return [];
}

function checkTemplate(label: string, get: () => Template, cluster: boolean): void {
  describe(label, () => {
    it('runs every function on a supported runtime, in the VPC, with logs kept 30 days', () => {
      const t = get();
      assert.ok(functions(t).length >= 12);
      for (const [id, fn] of functions(t)) {
        const runtime = /^nodejs(\d+)\.x$/.exec(fn.Properties.Runtime);
        assert.ok(runtime && Number(runtime[1]) >= 22, `${id} runs ${fn.Properties.Runtime}`);
        // No exemptions: every function, the dashboard's static page included, lives in the VPC.
        const vpc = fn.Properties.VpcConfig;
        assert.ok(vpc, `${id} is not in the VPC`);
        assert.equal(vpc.SubnetIds.length, 2, `${id} subnets`);
        assert.deepEqual(vpc.SecurityGroupIds, [{ Ref: 'DqLambdaSecurityGroup' }], `${id} security group`);
      }
      for (const [id, group] of ofType(t, 'AWS::Logs::LogGroup'))
        assert.equal(group.Properties.RetentionInDays, 30, id);
    });

    it('has ElastiCache with TLS, encryption at rest, an AUTH token from Secrets Manager, failover to a replica', () => {
      const t = get();
      const groups = ofType(t, 'AWS::ElastiCache::ReplicationGroup');
      assert.equal(groups.length, 1);
      const [, group] = groups[0]!;
      const p = group.Properties;
      assert.equal(p.TransitEncryptionEnabled, true);
      assert.equal(p.TransitEncryptionMode, 'required');
      assert.equal(p.AtRestEncryptionEnabled, true);
      assert.equal(p.AutomaticFailoverEnabled, true);
      assert.equal(p.MultiAZEnabled, true);
      assert.deepEqual(p.AuthToken, { 'Fn::Sub': '{{resolve:secretsmanager:${DqRedisAuthSecret}:SecretString}}' });
      assert.equal(t.Resources.DqRedisAuthSecret!.Type, 'AWS::SecretsManager::Secret');
      assert.equal(t.Resources.DqRedisAuthSecret!.Properties.GenerateSecretString.ExcludePunctuation, true);
      assert.equal(group.DeletionPolicy, 'Snapshot');
      const parameters = t.Resources[p.CacheParameterGroupName.Ref]!.Properties;
      assert.equal(parameters.Properties['maxmemory-policy'], 'noeviction');
      if (cluster) {
        assert.equal(p.ClusterMode, 'enabled');
        assert.ok(p.NumNodeGroups > 1 && p.ReplicasPerNodeGroup >= 1, text(p));
        assert.equal(parameters.Properties['cluster-enabled'], 'yes');
      } else {
        assert.equal(p.NumCacheClusters, 2);
        assert.equal(p.NumNodeGroups, undefined);
      }
    });

    it('gives the functions the Redis URL over TLS with the token, and the secrets by dynamic reference', () => {
      const t = get();
      const endpoint = cluster ? 'ConfigurationEndPoint' : 'PrimaryEndPoint';
      // The API token only in the functions behind routes (but the dashboard's static page), the
      // webhook secret only in the handlers of webhook topics.
      const routed = new Set(
        ofType(t, 'AWS::ApiGatewayV2::Integration').map(
          ([, i]) => text(i.Properties.IntegrationUri).match(/"([A-Za-z0-9]+)LambdaFunction"/)![1]!,
        ),
      );
      const webhookHandlers = new Set(
        Object.values(queueConfig(t).topics).flatMap((topic: Json) =>
          topic.kind === 'webhook' ? [topic.handler] : [],
        ),
      );
      const apiToken = { 'Fn::Sub': '{{resolve:secretsmanager:${DqApiTokenSecret}:SecretString}}' };
      const webhookSecret = { 'Fn::Sub': '{{resolve:secretsmanager:${DqWebhookSecret}:SecretString}}' };
      let holders = 0;
      for (const [id, fn] of functions(t)) {
        const env = fn.Properties.Environment.Variables;
        const key = functionKey(fn);
        assert.deepEqual(
          env.REDIS_URL,
          {
            'Fn::Sub': `rediss://:{{resolve:secretsmanager:\${DqRedisAuthSecret}:SecretString}}@\${DqRedis.${endpoint}.Address}:\${DqRedis.${endpoint}.Port}`,
          },
          id,
        );
        assert.equal(env.REDIS_CLUSTER, String(cluster), id);
        const servesApi = routed.has(id.replace(/LambdaFunction$/, '')) && key !== 'dashboard';
        assert.deepEqual(env.API_TOKEN, servesApi ? apiToken : '', `${id} API_TOKEN`);
        assert.deepEqual(env.WEBHOOK_SECRET, webhookHandlers.has(key) ? webhookSecret : '', `${id} WEBHOOK_SECRET`);
        holders += Number(servesApi) + Number(webhookHandlers.has(key));
        assert.equal(env.DQ_WEBHOOK_ALLOW_PRIVATE, 'false', id);
        assert.equal(env.DQ_LAMBDA_ENDPOINT, '', id);
      }
      assert.ok(routed.size >= 8 && webhookHandlers.size >= 1);
      // CloudFormation resolves at most 60 dynamic references per template.
      const references = text(t).match(/\{\{resolve:/g)!.length;
      assert.equal(references, functions(t).length + holders + 1);
      assert.ok(references <= 60, `${references} dynamic references`);
      assert.ok(
        !/dev-token|dev-webhook-secret|127\.0\.0\.1:6389|\$\{ssm:/.test(text(t)),
        'local-stage values or ssm variables leaked into the template',
      );
      const partitions = queueConfig(t).partitions;
      assert.ok(cluster ? partitions > 1 : partitions === 1, `partitions ${partitions}`);
      assert.equal(
        queueConfig(t).formerPartitions,
        null,
        'no partition count change unless --param formerPartitions is given',
      );
    });

    it('opens Redis on 6379 to the Lambdas security group only, never to an address range', () => {
      const t = get();
      const rules: Json[] = [];
      for (const [, sg] of ofType(t, 'AWS::EC2::SecurityGroup'))
        rules.push(...(sg.Properties.SecurityGroupIngress ?? []).map((r: Json) => ({ ...r, GroupId: 'inline' })));
      for (const [, rule] of ofType(t, 'AWS::EC2::SecurityGroupIngress')) rules.push(rule.Properties);
      for (const rule of rules) {
        const covers6379 = rule.IpProtocol === '-1' || (rule.FromPort <= 6379 && rule.ToPort >= 6379);
        if (covers6379)
          assert.ok(!rule.CidrIp && !rule.CidrIpv6, `ingress on 6379 from an address range: ${text(rule)}`);
        assert.notEqual(rule.CidrIp, '0.0.0.0/0', text(rule));
        assert.notEqual(rule.CidrIpv6, '::/0', text(rule));
      }
      const redisRules = rules.filter((r) => text(r.GroupId) === text({ Ref: 'DqRedisSecurityGroup' }));
      assert.deepEqual(
        redisRules.map((r) => [r.IpProtocol, r.FromPort, r.ToPort, r.SourceSecurityGroupId]),
        [['tcp', 6379, 6379, { Ref: 'DqLambdaSecurityGroup' }]],
      );
      const group = ofType(t, 'AWS::ElastiCache::ReplicationGroup')[0]![1];
      assert.deepEqual(group.Properties.SecurityGroupIds, [{ Ref: 'DqRedisSecurityGroup' }]);
    });

    it('reaches the Lambda API through an interface endpoint (no NAT needed for it)', () => {
      const t = get();
      const endpoints = ofType(t, 'AWS::EC2::VPCEndpoint').map(([, e]) => e.Properties);
      const lambda = endpoints.find(
        (e) => text(e.ServiceName) === text({ 'Fn::Sub': 'com.amazonaws.${AWS::Region}.lambda' }),
      );
      assert.ok(lambda, 'no Lambda endpoint');
      assert.equal(lambda.VpcEndpointType, 'Interface');
      assert.equal(lambda.PrivateDnsEnabled, true);
      assert.equal(lambda.SubnetIds.length, 2);
      assert.equal(
        endpoints.some((e) => /secretsmanager/.test(text(e.ServiceName))),
        cluster,
        'the Secrets Manager endpoint follows secretsEndpoint',
      );
    });

    it('grants lambda:InvokeFunction only to the functions that invoke, only on the functions they invoke', () => {
      const t = get();
      const keys = functions(t).map(([, fn]) => functionKey(fn));
      for (const [id, fn] of functions(t)) {
        const role = fn.Properties.Role;
        assert.ok(role?.['Fn::GetAtt']?.[1] === 'Arn', `${id} has no role of ours: ${text(role)}`);
        const targets = invokeTargets(t, role['Fn::GetAtt'][0]);
        assert.deepEqual(targets, expectedInvokes(t, functionKey(fn)), `${id} (${role['Fn::GetAtt'][0]}) may invoke`);
        for (const target of targets)
          assert.ok(keys.includes(target), `${id} may invoke ${target}, which does not exist`);
      }
      assert.equal(
        ofType(t, 'AWS::IAM::Role').some(([id]) => id === 'IamRoleLambdaExecution'),
        false,
        'the framework default role is unused',
      );
      for (const [id, role] of ofType(t, 'AWS::IAM::Role')) {
        assert.deepEqual(
          role.Properties.ManagedPolicyArns,
          [{ Ref: 'DqFunctionBasePolicy' }],
          `${id} managed policies`,
        );
      }
      // Resource '*' only where AWS requires it: the ENI actions of Lambdas in a VPC.
      const statements = [
        ...ofType(t, 'AWS::IAM::ManagedPolicy').flatMap(([, p]) => p.Properties.PolicyDocument.Statement),
        ...ofType(t, 'AWS::IAM::Role').flatMap(([, r]) =>
          (r.Properties.Policies ?? []).flatMap((p: Json) => p.PolicyDocument.Statement),
        ),
      ];
      for (const s of statements) {
        if ([s.Resource].flat().includes('*'))
          assert.ok(
            [s.Action]
              .flat()
              .every((a: string) =>
                /^ec2:(Create|Describe|Delete)NetworkInterfaces?$|^ec2:DescribeSubnets$|^ec2:(Assign|Unassign)PrivateIpAddresses$/.test(
                  a,
                ),
              ),
            text(s),
          );
        assert.ok(![s.Action].flat().some((a: string) => a === '*' || a.endsWith(':*')), text(s));
      }
    });

    it('turns Lambda async retries off on the handlers, the sweeper and the fan-out, with a bounded event age', () => {
      const t = get();
      const configs = new Map(
        ofType(t, 'AWS::Lambda::EventInvokeConfig').map(([, c]) => [
          c.Properties.FunctionName.Ref as string,
          c.Properties,
        ]),
      );
      const byKey = new Map(functions(t).map(([id, fn]) => [functionKey(fn), id]));
      for (const key of [...topicHandlers(t), 'sweeper', 'fanout']) {
        const config = configs.get(byKey.get(key)!);
        assert.ok(config, `${key} has no EventInvokeConfig`);
        assert.equal(config.MaximumRetryAttempts, 0, key);
        assert.ok(config.MaximumEventAgeInSeconds >= 60 && config.MaximumEventAgeInSeconds <= 300, key);
      }
      // Lambda's minimum on the topic handlers: a late event finds its attempt ended and is not run
      // (issue 12, finding 3); the age is kept as short as Lambda allows all the same.
      for (const key of topicHandlers(t)) assert.equal(configs.get(byKey.get(key)!)!.MaximumEventAgeInSeconds, 60, key);
      assert.equal(t.Resources[byKey.get('sweeper')!]!.Properties.ReservedConcurrentExecutions, 2);
      assert.equal(t.Resources[byKey.get('fanout')!]!.Properties.ReservedConcurrentExecutions, 2);
    });

    it("tells each topic its handler's timeout, so a longer ttr is refused (issue 12, finding 5)", () => {
      const t = get();
      const byKey = new Map(functions(t).map(([, fn]) => [functionKey(fn), fn]));
      for (const [name, topic] of Object.entries(queueConfig(t).topics) as [
        string,
        { handler?: string; handlerTimeout?: number },
      ][]) {
        if (!topic.handler) continue;
        assert.equal(topic.handlerTimeout, byKey.get(topic.handler)!.Properties.Timeout, `topic ${name}`);
      }
    });

    it('throttles the HTTP API and leaves CORS off', () => {
      const t = get();
      const stage = t.Resources.HttpApiStage!.Properties;
      assert.ok(
        stage.DefaultRouteSettings.ThrottlingRateLimit > 0 && stage.DefaultRouteSettings.ThrottlingBurstLimit > 0,
        text(stage),
      );
      assert.equal(t.Resources.HttpApi!.Properties.CorsConfiguration, undefined);
    });

    it('alarms on dead letters, lateness p99 per topic, sweeper errors and Redis memory', () => {
      const t = get();
      const alarms = ofType(t, 'AWS::CloudWatch::Alarm').map(([, a]) => a.Properties);
      const find = (metric: string, topic?: string) =>
        alarms.find(
          (a) =>
            a.Namespace === 'DelayQueue' &&
            a.MetricName === metric &&
            text(a.Dimensions).includes(topic ? `"Value":"${topic}"` : '"service"'),
        );
      assert.ok(find('sweeperErrors'));
      assert.ok(find('deadLettered'));
      for (const topic of Object.keys(queueConfig(t).topics)) {
        assert.ok(find('dead', topic), `dead-letter alarm of ${topic}`);
        assert.equal(find('lateness', topic)?.ExtendedStatistic, 'p99', `lateness alarm of ${topic}`);
      }
      const memory = alarms.filter(
        (a) => a.Namespace === 'AWS/ElastiCache' && a.MetricName === 'DatabaseMemoryUsagePercentage',
      );
      const group = ofType(t, 'AWS::ElastiCache::ReplicationGroup')[0]![1].Properties;
      assert.equal(memory.length, cluster ? group.NumNodeGroups : 1, 'a memory alarm per shard');
      const actions = alarms.map((a) => text(a.AlarmActions));
      assert.ok(
        actions.every((a) => a === (cluster ? text([{ Ref: 'DqAlarmTopic' }]) : undefined)),
        'alarm actions follow alarmEmail',
      );
    });
  });
}

describe('AWS stages (serverless package, dummy credentials)', () => {
  const dirs: string[] = [];
  let single: { template: Template; path: string };
  let cluster: { template: Template; path: string };
  before(async () => {
    dirs.push(projectCopy(), projectCopy());
    [single, cluster] = await Promise.all([
      packageStage(dirs[0]!, []),
      packageStage(dirs[1]!, ['cluster=true', 'alarmEmail=ops@example.com', 'secretsEndpoint=true']),
    ]);
  });
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  checkTemplate('prod, single node', () => single.template, false);
  checkTemplate('prod, cluster mode', () => cluster.template, true);

  // W3005 (DependsOn already implied by a Ref or GetAtt) comes from the framework's templates.
  it(
    'passes AWS cfn-lint (ignoring W3005) on both templates',
    { skip: !hasCfnLint() && 'cfn-lint is not on PATH' },
    () => {
      for (const path of [single.path, cluster.path]) {
        const lint = cfnLint(path);
        assert.equal(lint.status, 0, `cfn-lint ${path}:\n${lint.output}`);
      }
    },
  );
});
