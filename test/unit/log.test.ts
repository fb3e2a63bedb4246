// CloudWatch EMF output (issue 12, finding 9): a metric line carries at most 100 values per
// metric; CloudWatch drops a line that breaks the limit. Metric names and dimensions are a
// contract with the alarms in deploy/alarms.cjs, so they are checked too.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { emitMetrics, EMF_MAX_VALUES, setMetricsService } from '../../lib/platform/log';

interface EmfLine {
  _aws: {
    Timestamp: number;
    CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[];
  };
  [key: string]: unknown;
}

function capture(run: (write: (line: string) => void) => void): EmfLine[] {
  const lines: string[] = [];
  run((line) => lines.push(line));
  return lines.map((line) => JSON.parse(line) as EmfLine);
}

test('EMF: the limit is the one CloudWatch documents', () => {
  assert.equal(EMF_MAX_VALUES, 100);
});

test('EMF: 250 lateness values become lines of at most 100 values each, none lost, none repeated', () => {
  setMetricsService('delay-queue-test');
  const lateness = Array.from({ length: 250 }, (_, i) => i);
  const lines = capture((write) =>
    emitMetrics(
      { topic: 'orders' },
      { Lateness: { unit: 'Milliseconds', value: lateness }, Delivered: { unit: 'Count', value: 250 } },
      write,
    ),
  );
  assert.ok(lines.length >= 3, `expected at least 3 lines, got ${lines.length}`);
  const seen: number[] = [];
  let delivered = 0;
  for (const line of lines) {
    const directive = line._aws.CloudWatchMetrics[0]!;
    assert.equal(directive.Namespace, 'DelayQueue');
    assert.deepEqual(directive.Dimensions, [['service', 'topic']]);
    assert.equal(line.service, 'delay-queue-test');
    assert.equal(line.topic, 'orders');
    for (const { Name } of directive.Metrics) {
      const value = line[Name];
      assert.ok(value !== undefined, `${Name} is declared and present`);
      if (Array.isArray(value)) assert.ok(value.length <= 100, `${Name} carries ${value.length} values`);
    }
    if (Array.isArray(line.Lateness)) seen.push(...(line.Lateness as number[]));
    if (typeof line.Delivered === 'number') delivered += line.Delivered;
  }
  assert.deepEqual(seen, lateness, 'every value once, in order');
  assert.equal(delivered, 250, 'a scalar is written once, not once per line');
});

test('EMF: a small list and scalars stay one line; an empty list is left out', () => {
  const lines = capture((write) =>
    emitMetrics(
      {},
      {
        Lateness: { unit: 'Milliseconds', value: [1, 2, 3] },
        Empty: { unit: 'Count', value: [] },
        Claimed: { unit: 'Count', value: 3 },
      },
      write,
    ),
  );
  assert.equal(lines.length, 1);
  assert.deepEqual(lines[0]!.Lateness, [1, 2, 3]);
  assert.equal(lines[0]!.Claimed, 3);
  assert.equal(lines[0]!.Empty, undefined);
  assert.deepEqual(lines[0]!._aws.CloudWatchMetrics[0]!.Metrics.map((m) => m.Name).sort(), ['Claimed', 'Lateness']);
});

test('EMF: exactly 100 values is one line', () => {
  const lines = capture((write) =>
    emitMetrics({}, { Lateness: { unit: 'Milliseconds', value: Array.from({ length: 100 }, () => 7) } }, write),
  );
  assert.equal(lines.length, 1);
  assert.equal((lines[0]!.Lateness as number[]).length, 100);
});

// The alarms watch DelayQueue metrics by name and dimensions. Each one must be written by some
// emitMetrics call in lib/ whose extra dimensions are exactly the alarm's (besides `service`):
// a renamed metric or a changed dimension would leave an alarm that can never fire.
test('EMF: every DelayQueue alarm watches a metric that lib/ emits, with the same dimensions', async () => {
  const { readFileSync, readdirSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { createRequire } = await import('node:module');
  const { alarms } = createRequire(__filename)('../../deploy/alarms.cjs') as {
    alarms: (input: unknown) => {
      Resources: Record<
        string,
        { Type: string; Properties: { Namespace: string; MetricName: string; Dimensions: { Name: string }[] } }
      >;
    };
  };
  const { Resources } = alarms({
    service: 'dq',
    stage: 'prod',
    queue: { topics: { orders: {} } },
    p: { latenessAlarmMs: '1000', cluster: 'false', shards: '1' },
  });
  const watched = Object.values(Resources)
    .filter((r) => r.Type === 'AWS::CloudWatch::Alarm' && r.Properties.Namespace === 'DelayQueue')
    .map((r) => ({
      metric: r.Properties.MetricName,
      dims: r.Properties.Dimensions.map((d) => d.Name)
        .filter((n) => n !== 'service')
        .sort()
        .join(','),
    }));
  assert.ok(watched.length >= 4, `found ${watched.length} DelayQueue alarms`);
  // Every emitMetrics(<dims>, { name: ..., ... }) call in lib/, read from the source.
  const lib = join(__dirname, '..', '..', 'lib');
  const emitted = new Set<string>();
  for (const file of readdirSync(lib, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.ts'))) {
    const source = readFileSync(join(lib, file), 'utf8');
    for (const call of source.matchAll(/emitMetrics\(\s*\{([^}]*)\}\s*,\s*\{([\s\S]*?)\}\s*\)/g)) {
      const dims = [...call[1]!.matchAll(/(\w+)\s*:/g)]
        .map((m) => m[1])
        .sort()
        .join(',');
      for (const m of call[2]!.matchAll(/(\w+)\s*:\s*\{\s*unit/g)) emitted.add(`${m[1]}|${dims}`);
    }
  }
  for (const { metric, dims } of watched)
    assert.ok(
      emitted.has(`${metric}|${dims}`),
      `alarm on ${metric} [${dims}] matches an emitMetrics call; emitted: ${[...emitted].join(' ')}`,
    );
});
