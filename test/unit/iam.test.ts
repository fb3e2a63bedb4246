// auth iam: the caller a request's IAM authorizer context names (lib/api/iam.ts), and DQ_AUTH.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../lib/core/queue-config';
import { iamCaller, iamName, KEY_NAME_PATTERN } from '../../lib/testing';

describe('iamName: a short, stable key name from the signer ARN', () => {
  it('names users, assumed roles (role:session), federated users, roles and root', () => {
    const cases: [string, string][] = [
      ['arn:aws:iam::123456789012:user/alice', 'alice'],
      ['arn:aws:iam::123456789012:user/ops/team/alice', 'alice'],
      ['arn:aws:sts::123456789012:assumed-role/deployer/ci-run-7', 'deployer:ci-run-7'],
      ['arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Admin_0123/alice', 'AWSReservedSSO_Admin_0123:alice'],
      ['arn:aws:sts::123456789012:federated-user/bob', 'bob'],
      ['arn:aws:iam::123456789012:role/service/worker', 'worker'],
      ['arn:aws:iam::123456789012:root', 'root:123456789012'],
    ];
    for (const [arn, name] of cases) {
      assert.equal(iamName(arn), name, arn);
      assert.match(name, KEY_NAME_PATTERN);
    }
    assert.match(
      iamName('arn:aws-us-gov:sts::123456789012:assumed-role/AWSReservedSSO_Admin_0123/alice@example.com')!,
      /^AWSReservedSSO_Admin_0123:alice_example\.com::[0-9a-f]{10}$/,
      'a character a key name may not hold: `_`, and a tag',
    );
  });

  it('cuts a long name to 52 characters, tags it with a hash of the ARN, and keeps it valid', () => {
    const name = iamName(`arn:aws:sts::123456789012:assumed-role/${'r'.repeat(60)}/${'s+'.repeat(30)}`)!;
    assert.equal(name.length, 64);
    assert.match(name, KEY_NAME_PATTERN);
    assert.match(name, new RegExp(`^${'r'.repeat(52)}::[0-9a-f]{10}$`));
  });

  it('two sessions of a long-named role that differ only past character 64 get distinct names, each stable and valid', () => {
    const role = `arn:aws:sts::123456789012:assumed-role/${'deploy-pipeline-'.repeat(3)}prod`;
    const arns = [`${role}/build-2030-01-01-run-000001`, `${role}/build-2030-01-01-run-000002`];
    const names = arns.map((arn) => iamName(arn)!);
    assert.ok(`${'deploy-pipeline-'.repeat(3)}prod:build-2030-01-01-run-00000`.length > 64, 'they differ past 64');
    assert.notEqual(names[0], names[1]);
    for (const [i, name] of names.entries()) {
      assert.match(name, KEY_NAME_PATTERN);
      assert.equal(iamName(arns[i]!), name, 'the same caller, the same name');
    }
    const callers = arns.map((userArn) => iamCaller({ userArn })!.name);
    assert.notEqual(callers[0], callers[1], 'updatedBy and the log tell them apart');
    const ids = ['AROAEXAMPLE:'.padEnd(70, 'x') + '1', 'AROAEXAMPLE:'.padEnd(70, 'x') + '2'];
    assert.notEqual(iamCaller({ callerId: ids[0] })!.name, iamCaller({ callerId: ids[1] })!.name, 'from callerId too');
  });

  it('names that only differ in characters a key name may not hold stay apart; a name kept whole is never a cut one', () => {
    const at = iamName('arn:aws:sts::123456789012:assumed-role/Admin/alice+ops@example.com')!;
    const under = iamName('arn:aws:sts::123456789012:assumed-role/Admin/alice_ops_example.com')!;
    assert.equal(under, 'Admin:alice_ops_example.com', 'a name that needs no change is kept whole');
    assert.notEqual(at, under);
    assert.match(at, KEY_NAME_PATTERN);
    assert.ok(at.startsWith('Admin:alice_ops_example.com'), at);
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
    assert.deepEqual(iamCaller({ userArn: 'not-an-arn', callerId: 'AROAEXAMPLE:session1' }), {
      name: 'AROAEXAMPLE:session1',
      scope: 'admin',
      topics: null,
    });
    assert.match(iamCaller({ callerId: 'AROAEXAMPLE:session/1' })!.name, /^AROAEXAMPLE:session_1::[0-9a-f]{10}$/);
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
