import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isUnavailable } from '../../lib/platform/redis';

describe('isUnavailable: which Redis errors answer 503', () => {
  it('counts unreachable, loading, failover and full (noeviction) as unavailable', () => {
    for (const message of [
      'connect ECONNREFUSED 127.0.0.1:6379',
      'Connection is closed.',
      'Command timed out',
      'LOADING Redis is loading the dataset in memory',
      "READONLY You can't write against a read only replica.",
      "OOM command not allowed when used memory > 'maxmemory'.",
      'CLUSTERDOWN The cluster is down',
      // a failover (issue 13's scenario 6 answered these 500): the connection closed under a
      // command that is not re-sent, and a WAIT unblocked as its primary was demoted
      'Command aborted due to connection close',
      'UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)',
    ]) {
      assert.equal(isUnavailable(new Error(message)), true, message);
    }
    const retries = new Error('Reached the max retries per request limit (which is 1).');
    retries.name = 'MaxRetriesPerRequestError';
    assert.equal(isUnavailable(retries), true);
  });

  it('counts a slot on the move as unavailable: redirections ioredis did not follow, and its refused pipelines (issue 30 item 7)', () => {
    // seen while `CLUSTER SETSLOT … MIGRATING` and MIGRATE moved slots under load
    for (const message of [
      'MOVED 3999 127.0.0.1:30002',
      'ASK 3999 127.0.0.1:30002',
      'TRYAGAIN Multiple keys request during rehashing of slot',
      'CLUSTERDOWN Hash slot not served',
      // ioredis refuses, before sending it, an auto-pipeline whose slots no longer share a node
      'All keys in the pipeline should belong to the same slots allocation group',
      'Too many Cluster redirections. Last error: ReplyError: MOVED 3999 127.0.0.1:30002',
    ]) {
      assert.equal(isUnavailable(new Error(message)), true, message);
    }
    const aborted = Object.assign(new Error('EXECABORT Transaction discarded because of previous errors.'), {
      previousErrors: [new Error('ASK 3999 127.0.0.1:30002')],
    });
    assert.equal(isUnavailable(aborted), true, 'a transaction discarded because its slot was moving');
    const broken = Object.assign(new Error('EXECABORT Transaction discarded because of previous errors.'), {
      previousErrors: [new Error('ERR unknown command')],
    });
    assert.equal(isUnavailable(broken), false, 'a transaction discarded for a bug is not');
  });

  it('does not hide bugs: script errors and other failures are not unavailability', () => {
    for (const message of [
      'ERR user_script:12: Script attempted to access nonexistent global variable',
      'WRONGTYPE Operation against a key holding the wrong kind of value',
      'boom',
      'ERR TASK 12 failed',
    ]) {
      assert.equal(isUnavailable(new Error(message)), false, message);
    }
    assert.equal(isUnavailable('ECONNREFUSED'), false, 'only Errors count');
  });
});
