// cutBatches (issue 12, finding 4): handler events are cut by count and by bytes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveQueueConfig } from '../../lib/core/queue-config';
import { cutBatches } from '../../lib/workers/fanout';
import { EVENT_PAYLOAD_BYTES, MAX_BODY_BYTES } from '../../lib/core/limits';
import type { ClaimedJob } from '../../lib/engine';

const job = (id: string, bodyChars: number): ClaimedJob => ({
  topic: 't',
  id,
  attempt: 1,
  maxAttempts: 3,
  runAt: 1,
  deadline: 30_001,
  body: { pad: 'x'.repeat(bodyChars) },
  latenessMs: 0,
  claim: 'c',
});
const eventBytes = (jobs: ClaimedJob[]) => Buffer.byteLength(JSON.stringify({ topic: 't', jobs }));

describe('cutBatches', () => {
  it('cuts by batchSize when the jobs are small', () => {
    const { batches, oversized } = cutBatches(
      { name: 't', batchSize: 3 },
      Array.from({ length: 7 }, (_, i) => job(`j${i}`, 10)),
    );
    assert.deepEqual(
      batches.map((b) => b.map((j) => j.id)),
      [['j0', 'j1', 'j2'], ['j3', 'j4', 'j5'], ['j6']],
    );
    assert.equal(oversized.length, 0);
  });

  it('cuts by bytes: 20 jobs of 200 KB make events that each fit, in order, none lost', () => {
    const jobs = Array.from({ length: 20 }, (_, i) => job(`b${i}`, 200_000));
    const { batches } = cutBatches({ name: 't', batchSize: 20 }, jobs);
    assert.ok(batches.length >= 4);
    for (const b of batches) assert.ok(eventBytes(b) <= EVENT_PAYLOAD_BYTES, `${eventBytes(b)} bytes`);
    assert.deepEqual(
      batches.flat().map((j) => j.id),
      jobs.map((j) => j.id),
    );
  });

  it('sets apart a job that alone is over the limit, and keeps the others', () => {
    const { batches, oversized } = cutBatches({ name: 't', batchSize: 10 }, [
      job('a', 10),
      job('huge', EVENT_PAYLOAD_BYTES),
      job('b', 10),
    ]);
    assert.deepEqual(
      batches.map((b) => b.map((j) => j.id)),
      [['a', 'b']],
    );
    assert.deepEqual(
      oversized.map((o) => o.job.id),
      ['huge'],
    );
    assert.ok(oversized[0]!.bytes > EVENT_PAYLOAD_BYTES);
  });

  it('a job with a body of MAX_BODY_BYTES and a long url still fits one event', () => {
    const big: ClaimedJob = {
      ...job('x'.repeat(128), 0),
      body: 'y'.repeat(MAX_BODY_BYTES - 2),
      url: `https://example.com/${'p'.repeat(2020)}`,
    };
    const { batches, oversized } = cutBatches({ name: 't'.repeat(64), batchSize: 1 }, [big]);
    assert.equal(oversized.length, 0);
    assert.ok(eventBytes(batches[0]!) <= EVENT_PAYLOAD_BYTES);
  });

  it('the configuration refuses a maxBodyBytes no event could carry', () => {
    assert.equal(resolveQueueConfig({ topics: { t: {} }, maxBodyBytes: MAX_BODY_BYTES }).maxBodyBytes, MAX_BODY_BYTES);
    assert.throws(
      () => resolveQueueConfig({ topics: { t: {} }, maxBodyBytes: MAX_BODY_BYTES + 1 }),
      /maxBodyBytes must be an integer from 1 to 1040384/,
    );
  });
});
