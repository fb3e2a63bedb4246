// Every alarm of an AWS stage, and where alarms go. Most watch the EMF metrics the functions write
// (namespace DelayQueue, lib/platform/log.ts); missing data is normal there: an idle queue writes no
// metrics. Actions: an SNS topic mailing --param="alarmEmail=...", or --param="alarmTopicArn=...".

const upperFirst = (s) => s.charAt(0).toUpperCase() + s.slice(1);
const logicalName = (s) => upperFirst(s.replace(/[^A-Za-z0-9]/g, ''));

/** An AWS::CloudWatch::Alarm on `metric` of `namespace`; `rest` holds the statistic, period, threshold and so on. */
const alarm = (name, description, namespace, metric, dimensions, rest) => ({
  Type: 'AWS::CloudWatch::Alarm',
  Properties: {
    AlarmName: name,
    AlarmDescription: description,
    Namespace: namespace,
    MetricName: metric,
    Dimensions: dimensions,
    ...rest,
  },
});

/** Fires on the first occurrence within 5 minutes. */
const anyIn5Minutes = {
  Statistic: 'Sum',
  Period: 300,
  EvaluationPeriods: 1,
  Threshold: 1,
  ComparisonOperator: 'GreaterThanOrEqualToThreshold',
  TreatMissingData: 'notBreaching',
};

/**
 * The alarms of stage `stage` of `service` for the topics of `queue` under the checked parameters
 * `p` (with `memoryDbName` on MemoryDB), with their SNS topic when alarmEmail asks for one:
 * `{ Resources, Outputs }`.
 */
function alarms({ service, stage, queue, p }) {
  const prefix = `${service}-${stage}`;
  const byService = [{ Name: 'service', Value: prefix }];
  const R = {};

  R.DqSweeperErrorsAlarm = alarm(
    `${prefix}-sweeper-errors`,
    "The sweeper's loop failed repeatedly (Redis unreachable?); due jobs are not moving.",
    'DelayQueue',
    'sweeperErrors',
    byService,
    {
      ...anyIn5Minutes,
      Threshold: 5, // one failover costs a few errors; five in 5 minutes is an outage
    },
  );
  R.DqTimedOutDeadLettersAlarm = alarm(
    `${prefix}-dead-letters-ttr`,
    'Jobs went dead because their last attempt ran out of time (ttr) without an answer.',
    'DelayQueue',
    'deadLettered',
    byService,
    anyIn5Minutes,
  );
  R.DqSweeperThrottledAlarm = alarm(
    `${prefix}-sweeper-throttled`,
    'Invocations of the sweeper were throttled (reserved or account concurrency).',
    'AWS/Lambda',
    'Throttles',
    [{ Name: 'FunctionName', Value: `${prefix}-sweeper` }],
    {
      ...anyIn5Minutes,
      Threshold: 5, // throttled async invokes are retried by Lambda; many mean late jobs
    },
  );

  // Per topic: dead letters and lateness p99.
  for (const topic of Object.keys(queue.topics)) {
    const dimensions = [...byService, { Name: 'topic', Value: topic }];
    R[`DqDeadLetters${logicalName(topic)}Alarm`] = alarm(
      `${prefix}-dead-letters-${topic}`,
      `Jobs of topic ${topic} failed their last attempt and went dead (GET /topics/${topic}/dead).`,
      'DelayQueue',
      'dead',
      dimensions,
      anyIn5Minutes,
    );
    R[`DqLateness${logicalName(topic)}Alarm`] = alarm(
      `${prefix}-lateness-${topic}`,
      `Jobs of topic ${topic} reach their handler late: p99 of claim time minus due time.`,
      'DelayQueue',
      'lateness',
      dimensions,
      {
        ExtendedStatistic: 'p99',
        Unit: 'Milliseconds',
        Period: 300,
        EvaluationPeriods: 2, // two 5-minute periods: one slow tick is not an incident
        Threshold: Number(p.latenessAlarmMs),
        ComparisonOperator: 'GreaterThanThreshold',
        TreatMissingData: 'notBreaching',
      },
    );
  }

  // Memory: with noeviction a full Redis refuses writes, so warn well before. One alarm per shard,
  // on its first node (-001; a replica holds the same data, so after a failover it still tells).
  // ElastiCache names nodes <group>[-<shard>]-001 (dimension CacheClusterId); MemoryDB names them
  // <cluster>-<shard>-001 (namespace AWS/MemoryDB, dimensions ClusterName and NodeName).
  const memoryDb = p.engine === 'memorydb';
  const sharded = memoryDb || p.cluster === 'true';
  const nodes = sharded
    ? Array.from({ length: Number(p.shards) }, (_, i) => `-${String(i + 1).padStart(4, '0')}-001`)
    : ['-001'];
  nodes.forEach((suffix, i) => {
    const shard = nodes.length > 1 ? `Shard${i + 1}` : '';
    const dimensions = memoryDb
      ? [
          { Name: 'ClusterName', Value: p.memoryDbName },
          { Name: 'NodeName', Value: `${p.memoryDbName}${suffix}` },
        ]
      : [{ Name: 'CacheClusterId', Value: { 'Fn::Sub': `\${DqRedis}${suffix}` } }];
    R[`DqRedisMemory${shard}Alarm`] = alarm(
      `${prefix}-redis-memory${shard && `-${shard.toLowerCase()}`}`,
      'Redis memory is filling up; at 100% it refuses new jobs (maxmemory-policy noeviction). Scale the node type or shards.',
      memoryDb ? 'AWS/MemoryDB' : 'AWS/ElastiCache',
      'DatabaseMemoryUsagePercentage',
      dimensions,
      {
        Statistic: 'Maximum',
        Period: 300,
        EvaluationPeriods: 2,
        Threshold: 80,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'missing',
      },
    );
  });

  const Outputs = {};
  let action;
  if (p.alarmTopicArn) action = p.alarmTopicArn;
  else if (p.alarmEmail) {
    R.DqAlarmTopic = {
      Type: 'AWS::SNS::Topic',
      Properties: { TopicName: `${prefix}-alarms`, Subscription: [{ Protocol: 'email', Endpoint: p.alarmEmail }] },
    };
    action = { Ref: 'DqAlarmTopic' };
    Outputs.AlarmTopicArn = { Value: { Ref: 'DqAlarmTopic' } };
  }
  if (action) {
    for (const resource of Object.values(R)) {
      if (resource.Type === 'AWS::CloudWatch::Alarm')
        Object.assign(resource.Properties, { AlarmActions: [action], OKActions: [action] });
    }
  }
  return { Resources: R, Outputs };
}

module.exports = { alarms };
