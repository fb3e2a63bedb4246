/**
 * A pending job's member in its topic's delayed zset (delayedMember in lua/includes/job.lua): the
 * id alone, or the id, a space and its flow key. Run in a real redis-server: members of one score
 * sort as their ids do (a listing's cursor and a sweep's order rely on it), whatever the keys.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ID_PATTERN } from '../../lib/core/queue-config';
import { useRedisServer } from '../support/redis';
import { INCLUDES, includeOrder } from '../../lib/testing';

/** Bytewise order, as a zset orders members. */
const bytewise = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

describe('delayedMember: a delayed job with a flow key', () => {
  const server = useRedisServer();

  it('sorts the members of one score in the order of their ids, with and without keys', async () => {
    const prelude = includeOrder('--- @include "job"')
      .map((name) => INCLUDES[name])
      .join('\n');
    const lua = `${prelude}
local jobs = cjson.decode(ARGV[1])
for _, j in ipairs(jobs) do redis.call('ZADD', KEYS[1], 5, Job.delayedMember(j[1], j[2] ~= cjson.null and j[2] or false)) end
return redis.call('ZRANGE', KEYS[1], 0, -1)`;
    // ids that are prefixes of one another, followed by every kind of character an id may hold
    // (the lowest, '-', sorts after the space), each with a key that would sort them otherwise
    const ids = ['a', 'a-', 'a.', 'a0', 'a:', 'aA', 'a_', 'az', 'a-b', 'ab', 'b', 'b.c', 'b-c', '-', '--'];
    const keys = ['zz', '', '-', 'a', null, 'zzz', 'tenant-42', '0', 'Z', '_', 'k', 'x.y', '', 'a:b', 'z'];
    for (const id of [...ids, ...keys]) if (id) assert.match(id, ID_PATTERN);
    const jobs = ids.map((id, i) => [id, keys[i]]);
    const members = (await server.client().eval(lua, 1, '{t}delayed', JSON.stringify(jobs))) as string[];
    assert.deepEqual(
      members.map((m) => m.split(' ')[0]),
      [...ids].sort(bytewise),
    );
    // the key is carried after the space, none for '' or no key
    assert.ok(
      members.includes('a zz') &&
        members.includes('a-') &&
        members.includes('a. -') &&
        members.includes('a0 a') &&
        members.includes('a:'),
    );
  });
});
