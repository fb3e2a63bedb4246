/**
 * A job's version never names two different contents, across a failover too (issue 30 item 2).
 * A GET on the primary serves the version of a write no replica has; the failover to the replica
 * loses that write and the version counter goes back to the replica's value. A later write must
 * still get a version the failed primary never gave, or the first reader's If-Match would hold
 * against content it never saw (a lost update).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { startCuttableReplica } from '../support/failover';
import { makeQueue, rejects, uniqueTopic } from '../support/queue';
import { parseIfMatch } from '../../lib/testing';

describe('versions across a failover', () => {
  it('a version a reader saw on the failed primary never names other content on the new one: its If-Match is refused', async () => {
    const topic = uniqueTopic('ver');
    const pair = await startCuttableReplica();
    const clients: Redis[] = [];
    const api = (url: string, durabilityTimeout: number) => {
      const client = new Redis(url);
      clients.push(client);
      return makeQueue(client, { [topic]: {} }, { config: { durability: 'replica', durabilityTimeout } });
    };
    try {
      const writer = api(pair.primary.url, 1.5);
      const hasty = api(pair.primary.url, 0.2);
      const reader = api(pair.primary.url, 1.5);
      const first = await writer.add({ topic, id: 'j1', delay: 60, body: 'one' });
      pair.cutLink();
      // the primary writes "two" (the 503 says no replica has it), and a reader is shown it
      await rejects(hasty.put(topic, 'j1', { delay: 60, body: 'two' }), 503, 'NOT_REPLICATED');
      const seen = await reader.get(topic, 'j1');
      assert.equal(seen?.body, 'two');
      assert.ok(seen.version > first.job.version);

      const promoted = await pair.failover();
      const other = api(promoted.url, 1.5);
      assert.deepEqual(
        [(await other.get(topic, 'j1'))?.body, (await other.get(topic, 'j1'))?.version],
        ['one', first.job.version],
        'the failover lost "two"',
      );
      const theirs = await other.put(topic, 'j1', { delay: 60, body: 'three' });
      assert.equal(theirs.status, 'replaced', "another writer's put, acknowledged by the new primary's replica");
      assert.notEqual(
        theirs.job.version,
        seen.version,
        `version ${seen.version} named "two" on the failed primary; it must not name "three" now`,
      );
      assert.ok(
        theirs.job.version > seen.version,
        'a version given after the failover is larger than any the failed primary gave',
      );

      // the reader changes the job only if it is still what it saw: it is not
      const readerNow = api(promoted.url, 1.5);
      await rejects(
        readerNow.put(topic, 'j1', { delay: 60, body: 'four' }, { ifMatch: { version: seen.version } }),
        412,
        'VERSION_MISMATCH',
      );
      assert.equal((await other.get(topic, 'j1'))?.body, 'three', "the other writer's acknowledged put is not lost");

      // still the API's ETag: one quoted decimal that If-Match takes back
      for (const v of [first.job.version, seen.version, theirs.job.version])
        assert.deepEqual(parseIfMatch(`"${v}"`), { version: v });
    } finally {
      for (const c of clients) c.disconnect();
      await pair.stop();
    }
  });
});
