// auth iam: the caller a request's IAM authorizer context names (lib/api/iam.ts), and DQ_AUTH.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { iamCaller, iamName } from '../../lib/api/iam';
import { KEY_NAME_PATTERN } from '../../lib/api/validation';
import { loadConfig } from '../../lib/core/queue-config';

describe('iamName: a short, stable key name from the signer ARN', () => {
  it('names users, assumed roles (role:session), federated users, roles and root', () => {
    const cases: [string, string][] = [
      ['arn:aws:iam::123456789012:user/alice', 'alice'],
      ['arn:aws:iam::123456789012:user/ops/team/alice', 'alice'],
      ['arn:aws:sts::123456789012:assumed-role/deployer/ci-run-7', 'deployer:ci-run-7'],
      [
        'arn:aws-us-gov:sts::123456789012:assumed-role/AWSReservedSSO_Admin_0123/alice@example.com',
        'AWSReservedSSO_Admin_0123:alice_example.com',
      ],
      ['arn:aws:sts::123456789012:federated-user/bob', 'bob'],
      ['arn:aws:iam::123456789012:role/service/worker', 'worker'],
      ['arn:aws:iam::123456789012:root', 'root:123456789012'],
    ];
    for (const [arn, name] of cases) {
      assert.equal(iamName(arn), name, arn);
      assert.match(name, KEY_NAME_PATTERN);
    }
  });

  it('cuts a long name at 64 characters and keeps it valid', () => {
    const name = iamName(`arn:aws:sts::123456789012:assumed-role/${'r'.repeat(60)}/${'s+'.repeat(30)}`)!;
    assert.equal(name.length, 64);
    assert.match(name, KEY_NAME_PATTERN);
    assert.ok(name.startsWith(`${'r'.repeat(60)}:s_`));
  });

  it('is null for what is not an IAM or STS principal', () => {
    for (const arn of [
      '',
      'alice',
      'arn:aws:s3:::bucket',
      'arn:aws:iam::123:user/alice',
      'arn:aws:sts::123456789012:assumed-role/only-role',
      'arn:aws:iam::123456789012:group/admins',
    ])
      assert.equal(iamName(arn), null, arn);
  });
});

describe('iamCaller', () => {
  it('is admin on every topic, named from userArn, else from callerId', () => {
    assert.deepEqual(iamCaller({ userArn: 'arn:aws:iam::123456789012:user/alice', callerId: 'AIDAEXAMPLE' }), {
      name: 'alice',
      scope: 'admin',
      topics: null,
    });
    assert.deepEqual(iamCaller({ userArn: 'not-an-arn', callerId: 'AROAEXAMPLE:session/1' }), {
      name: 'AROAEXAMPLE:session_1',
      scope: 'admin',
      topics: null,
    });
  });

  it('is null without an identity (the request answers 401)', () => {
    for (const identity of [undefined, null, {}, { userArn: '', callerId: '' }, { userArn: null, callerId: null }])
      assert.equal(iamCaller(identity), null, JSON.stringify(identity));
  });
});

describe('DQ_AUTH', () => {
  const env = (extra: Record<string, string>) => ({
    DQ_CONFIG: JSON.stringify({ topics: { a: {} } }),
    REDIS_URL: 'redis://x',
    DQ_FUNCTION_PREFIX: 'p-',
    ...extra,
  });
  it('is token when unset or empty, iam when asked, and refuses anything else naming the variable', () => {
    assert.equal(loadConfig(env({})).auth, 'token');
    assert.equal(loadConfig(env({ DQ_AUTH: '' })).auth, 'token');
    assert.equal(loadConfig(env({ DQ_AUTH: 'iam' })).auth, 'iam');
    assert.throws(
      () => loadConfig(env({ DQ_AUTH: 'IAM' })),
      /environment variable DQ_AUTH must be token or iam, got "IAM"/,
    );
  });
});
