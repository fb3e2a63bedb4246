/**
 * Where `dq` connects (lib/cli/config.ts): flag > environment > profile > the local default, the
 * profile chosen by --profile, DQ_PROFILE or the file's default, and a usage error for every
 * broken or missing piece, naming the file or the setting.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { configPath, DEFAULT_URL, DEV_KEY, resolveConnection, type ConnectionInput } from '../../lib/cli/config';
import { UsageError } from '../../lib/cli/errors';

const FILE = '/home/op/.config/dq/config.json';
const PROFILES = JSON.stringify({
  default: 'staging',
  profiles: {
    staging: { url: 'https://staging.example.com', key: 'staging-key' },
    prod: { url: 'https://prod.example.com', key: 'prod-key' },
    urlOnly: { url: 'https://other.example.com' },
  },
});

function input(fields: Partial<ConnectionInput> & { file?: string } = {}): ConnectionInput {
  const { file, ...rest } = fields;
  return {
    flags: {},
    env: {},
    home: '/home/op',
    readFile: (path) => (path === FILE || path === '/etc/dq.json' ? file : undefined),
    ...rest,
  };
}
const usage = (pattern: RegExp) => (error: unknown) => error instanceof UsageError && pattern.test(error.message);

describe('dq connection', () => {
  it('the profile file: $DQ_CONFIG, else $XDG_CONFIG_HOME/dq, else ~/.config/dq', () => {
    assert.equal(configPath({}, '/home/op'), FILE);
    assert.equal(configPath({}, '/home/op/'), FILE);
    assert.equal(configPath({ XDG_CONFIG_HOME: '/xdg' }, '/home/op'), '/xdg/dq/config.json');
    assert.equal(configPath({ DQ_CONFIG: '/etc/dq.json', XDG_CONFIG_HOME: '/xdg' }, '/home/op'), '/etc/dq.json');
  });

  it('with nothing set: the local stack and its dev key', () => {
    assert.deepEqual(resolveConnection(input()), {
      url: DEFAULT_URL,
      key: DEV_KEY,
      profile: undefined,
      sources: { url: 'default', key: 'default' },
    });
    assert.equal(
      resolveConnection(input({ flags: { url: 'http://localhost:4000' } })).key,
      DEV_KEY,
      'any loopback URL gets the dev key',
    );
  });

  it('flag > environment > profile, each setting on its own', () => {
    const file = PROFILES;
    assert.deepEqual(resolveConnection(input({ file })), {
      url: 'https://staging.example.com',
      key: 'staging-key',
      profile: 'staging',
      sources: { url: 'profile', key: 'profile' },
    });
    const env = { DQ_URL: 'https://env.example.com', DQ_KEY: 'env-key' };
    assert.deepEqual(resolveConnection(input({ file, env })), {
      url: 'https://env.example.com',
      key: 'env-key',
      profile: 'staging',
      sources: { url: 'env', key: 'env' },
    });
    const flags = { url: 'https://flag.example.com', key: 'flag-key' };
    assert.deepEqual(resolveConnection(input({ file, env, flags })), {
      url: 'https://flag.example.com',
      key: 'flag-key',
      profile: 'staging',
      sources: { url: 'flag', key: 'flag' },
    });
    assert.deepEqual(
      resolveConnection(input({ file, env: { DQ_KEY: 'env-key' }, flags: { url: 'https://flag.example.com' } }))
        .sources,
      { url: 'flag', key: 'env' },
    );
    assert.equal(
      resolveConnection(input({ file, env: { DQ_URL: '' } })).url,
      'https://staging.example.com',
      'an empty variable is unset',
    );
  });

  it("the profile: --profile > DQ_PROFILE > the file's default", () => {
    const file = PROFILES;
    assert.equal(resolveConnection(input({ file, env: { DQ_PROFILE: 'prod' } })).key, 'prod-key');
    assert.equal(
      resolveConnection(input({ file, env: { DQ_PROFILE: 'prod' }, flags: { profile: 'staging' } })).key,
      'staging-key',
    );
    assert.equal(
      resolveConnection(
        input({ file: JSON.stringify({ profiles: { a: { url: 'https://a.example.com', key: 'k' } } }) }),
      ).url,
      DEFAULT_URL,
      'no default, none named: no profile',
    );
    assert.equal(
      resolveConnection(input({ file, env: { DQ_CONFIG: '/etc/dq.json' }, flags: { profile: 'prod' } })).url,
      'https://prod.example.com',
    );
  });

  it("profiles named like Object.prototype's members: only the file's own, found as named", () => {
    for (const profile of ['constructor', 'toString', '__proto__', 'hasOwnProperty'])
      assert.throws(
        () => resolveConnection(input({ file: PROFILES, flags: { profile } })),
        usage(new RegExp(`no profile "${profile}" in .*config.json \\(profiles: staging, prod, urlOnly\\)`)),
        profile,
      );
    // written out: in an object literal `__proto__:` sets the prototype, JSON.parse makes it a field
    const file =
      '{"default":"__proto__","profiles":{"__proto__":{"url":"https://proto.example.com","key":"proto-key"},' +
      '"b":{"url":"https://b.example.com"}}}';
    assert.deepEqual(
      [resolveConnection(input({ file })).url, resolveConnection(input({ file })).key],
      ['https://proto.example.com', 'proto-key'],
    );
    assert.throws(
      () => resolveConnection(input({ file, flags: { profile: 'url' } })),
      usage(/no profile "url" in .*config.json \(profiles: __proto__, b\)/),
    );
  });

  it('usage errors: an unknown profile, a profile without a file, a broken file, a bad URL, no key for a remote URL', () => {
    assert.throws(
      () => resolveConnection(input({ file: PROFILES, flags: { profile: 'dev' } })),
      usage(/no profile "dev" in .*config.json \(profiles: staging, prod, urlOnly\)/),
    );
    assert.throws(
      () => resolveConnection(input({ env: { DQ_PROFILE: 'prod' } })),
      usage(
        /profile "prod" asked for \(DQ_PROFILE\), but there is no profile file \/home\/op\/.config\/dq\/config.json/,
      ),
    );
    assert.throws(() => resolveConnection(input({ file: '{"profiles":' })), usage(/config.json is not JSON/));
    assert.throws(() => resolveConnection(input({ file: '{"default":"a"}' })), usage(/must be \{"default"/));
    assert.throws(
      () => resolveConnection(input({ file: '{"profiles":{"a":{"url":3}}}' })),
      usage(/profiles\.a\.url must be a string/),
    );
    assert.throws(
      () => resolveConnection(input({ flags: { url: 'example.com' } })),
      usage(/the base URL "example.com" \(from flag\) is not a URL/),
    );
    assert.throws(
      () => resolveConnection(input({ env: { DQ_URL: 'ftp://example.com' } })),
      usage(/\(from env\) must be http:\/\/ or https:\/\//),
    );
    assert.throws(
      () => resolveConnection(input({ file: PROFILES, flags: { profile: 'urlOnly' } })),
      usage(/no API key for https:\/\/other.example.com: give --key, set DQ_KEY, or add "key" to a profile/),
    );
    assert.throws(() => resolveConnection(input({ flags: { key: '' } })), usage(/no API key/));
    assert.throws(
      () => resolveConnection(input({ env: { DQ_KEY: 'pasted …' } })),
      usage(/the API key \(from env\) must be printable ASCII without spaces/),
    );
  });
});
