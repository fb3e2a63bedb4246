/**
 * API keys against a real redis-server: create, look up by the secret's digest, list (never a
 * secret), revoke (a named key, and the deployment's), last use noted at most once a minute; and
 * an instance's cache of what it learnt: a new key works at once, a revoked one stops within
 * KEY_RECHECK_MS, a burst of requests with one key asks Redis once. Names and deployment secrets
 * are unique per test: the keys share one slot.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { Engine, KEY_USE_NOTE_MS, secretDigest } from '../../lib/engine';
import { resolveQueueConfig } from '../../lib/core/queue-config';
import { TestClock } from '../support/queue';
import { useRedisServer } from '../support/redis';
import { Access, KEY_RECHECK_MS, newSecret, createKey, engineContext } from '../../lib/testing';

describe('API keys in Redis', () => {
  const server = useRedisServer();
  const unique = (label: string) => `${label}-${process.pid}-${randomBytes(4).toString('hex')}`;

  function setup() {
    const clock = new TestClock();
    const engine = new Engine(server.client(), resolveQueueConfig({ topics: { orders: {}, emails: {} } }), {
      clock: () => clock.now,
    });
    const deploymentToken = unique('deploy');
    return { clock, engine, deploymentToken, deploymentSha: secretDigest(deploymentToken) };
  }

  it('a created key is found by its secret, listed without it, and stops when revoked; the name is then free again', async () => {
    const { engine, deploymentSha } = setup();
    const name = unique('reader');
    const secret = newSecret();
    const created = await engine.createKey({
      name,
      scope: 'read',
      topics: ['orders'],
      sha: secretDigest(secret),
      createdBy: 'deployment',
    });
    assert.ok(typeof created === 'object' && created.createdAt > 0);
    assert.deepEqual(await engine.authKey(secretDigest(secret), deploymentSha), {
      name,
      scope: 'read',
      topics: ['orders'],
    });
    assert.equal(await engine.authKey(secretDigest(newSecret()), deploymentSha), null, 'an unknown secret');

    const listed = (await engine.listKeys(deploymentSha)).find((k) => k.name === name);
    assert.deepEqual(listed, {
      name,
      scope: 'read',
      topics: ['orders'],
      source: 'api',
      createdAt: created.createdAt,
      createdBy: 'deployment',
      lastUsedAt: listed?.lastUsedAt,
    });
    assert.ok(listed.lastUsedAt !== null, 'the lookup noted its use');
    const stored =
      JSON.stringify(await server.client().hgetall('dq:{keys}:keys')) +
      JSON.stringify(await server.client().hgetall('dq:{keys}:hashes'));
    assert.ok(!stored.includes(secret), 'the secret is stored nowhere');

    assert.equal(
      await engine.createKey({ name, scope: 'write', topics: null, sha: secretDigest(newSecret()), createdBy: 'x' }),
      'taken',
    );
    assert.equal(await engine.revokeKey(name, deploymentSha), true);
    assert.equal(await engine.authKey(secretDigest(secret), deploymentSha), null);
    assert.equal(await engine.revokeKey(name, deploymentSha), false, 'twice: not found');
    assert.equal(
      (await engine.listKeys(deploymentSha)).find((k) => k.name === name),
      undefined,
    );
    const again = newSecret();
    assert.ok(
      typeof (await engine.createKey({
        name,
        scope: 'write',
        topics: null,
        sha: secretDigest(again),
        createdBy: 'x',
      })) === 'object',
    );
    assert.deepEqual(await engine.authKey(secretDigest(again), deploymentSha), { name, scope: 'write', topics: null });
    assert.equal(await engine.revokeKey(name, deploymentSha), true);
  });

  it('the deployment key is admin, listed first, revocable (once another admin key exists); another deployment secret works after its revocation', async () => {
    const { engine, deploymentSha } = setup();
    const admin = unique('admin');
    await engine.createKey({
      name: admin,
      scope: 'admin',
      topics: null,
      sha: secretDigest(newSecret()),
      createdBy: 'x',
    });
    assert.deepEqual(await engine.authKey(deploymentSha, deploymentSha), {
      name: 'deployment',
      scope: 'admin',
      topics: null,
    });
    assert.deepEqual((await engine.listKeys(deploymentSha))[0], {
      name: 'deployment',
      scope: 'admin',
      topics: null,
      source: 'deployment',
      createdAt: null,
      createdBy: null,
      lastUsedAt: (await engine.listKeys(deploymentSha))[0]!.lastUsedAt,
    });
    assert.equal(await engine.revokeKey('deployment', deploymentSha), true);
    assert.equal(await engine.authKey(deploymentSha, deploymentSha), null);
    assert.notEqual((await engine.listKeys(deploymentSha))[0]?.name, 'deployment');
    assert.equal(await engine.revokeKey('deployment', deploymentSha), false, 'revoked already');
    const redeployed = secretDigest(unique('deploy'));
    assert.deepEqual(await engine.authKey(redeployed, redeployed), {
      name: 'deployment',
      scope: 'admin',
      topics: null,
    });
    assert.equal(await engine.authKey(redeployed, ''), null, 'no deployment key when API_TOKEN is empty');
    assert.equal(await engine.revokeKey('deployment', ''), false);
    assert.equal(await engine.revokeKey(admin, redeployed), true);
  });

  it('refuses to revoke the last admin: the deployment key while no other admin key exists, the last admin key once the deployment key is revoked', async () => {
    const { engine, deploymentSha } = setup();
    const make = async (name: string, scope: 'admin' | 'write') =>
      assert.equal(
        typeof (await engine.createKey({ name, scope, topics: null, sha: secretDigest(newSecret()), createdBy: 'x' })),
        'object',
      );
    assert.equal(await engine.revokeKey('deployment', deploymentSha), 'last-admin', 'the only admin');
    assert.equal((await engine.authKey(deploymentSha, deploymentSha))?.name, 'deployment', 'it still works');
    const writer = unique('writer');
    await make(writer, 'write');
    assert.equal(await engine.revokeKey('deployment', deploymentSha), 'last-admin', 'a write key is no admin');
    const admin = unique('admin');
    await make(admin, 'admin');
    assert.equal(await engine.revokeKey('deployment', deploymentSha), true, 'another admin exists');
    assert.equal(await engine.revokeKey(admin, deploymentSha), 'last-admin', 'the last admin left');
    assert.equal((await engine.listKeys(deploymentSha)).filter((k) => k.name === admin).length, 1, 'it stays');
    assert.equal(await engine.revokeKey(writer, deploymentSha), true, 'a key that is no admin goes');
    const second = unique('admin');
    await make(second, 'admin');
    assert.equal(await engine.revokeKey(admin, deploymentSha), true, 'one admin is left');
    assert.equal(await engine.revokeKey(second, deploymentSha), 'last-admin');
    assert.equal(await engine.revokeKey(second, ''), 'last-admin', 'no deployment key at all: the last admin');
    // a redeploy with another secret brings a deployment key back: the named admin may go then
    assert.equal(await engine.revokeKey(second, secretDigest(unique('deploy'))), true);
  });

  it("a key's use is noted at most once a minute", async () => {
    const { engine, clock, deploymentSha } = setup();
    const name = unique('busy');
    const secret = newSecret();
    await engine.createKey({ name, scope: 'write', topics: null, sha: secretDigest(secret), createdBy: 'deployment' });
    const lastUsed = async () => (await engine.listKeys(deploymentSha)).find((k) => k.name === name)!.lastUsedAt;
    assert.equal(await lastUsed(), null);
    await engine.authKey(secretDigest(secret), deploymentSha);
    const first = clock.now;
    assert.equal(await lastUsed(), first);
    clock.advance(KEY_USE_NOTE_MS - 1);
    await engine.authKey(secretDigest(secret), deploymentSha);
    assert.equal(await lastUsed(), first, 'not noted again within the minute');
    clock.advance(1);
    await engine.authKey(secretDigest(secret), deploymentSha);
    assert.equal(await lastUsed(), first + KEY_USE_NOTE_MS);
    await engine.revokeKey(name, deploymentSha);
  });

  it("keys never used, named like Object.prototype's members, list with lastUsedAt null", async () => {
    const { engine, deploymentSha } = setup();
    const names = ['constructor', 'toString', '__proto__', 'valueOf', 'hasOwnProperty'];
    for (const name of names) {
      const created = await engine.createKey({
        name,
        scope: 'read',
        topics: null,
        sha: secretDigest(newSecret()),
        createdBy: 'deployment',
      });
      assert.equal(typeof created, 'object', name);
    }
    try {
      const listed = await engine.listKeys(deploymentSha);
      for (const name of names)
        assert.deepEqual(
          listed.filter((k) => k.name === name).map((k) => [k.name, k.lastUsedAt]),
          [[name, null]],
        );
    } finally {
      for (const name of names) await engine.revokeKey(name, deploymentSha);
    }
  });

  it('a deployment holds at most the keys it may', async () => {
    const { engine } = setup();
    const held = await server.client().hlen('dq:{keys}:keys');
    const name = unique('over');
    assert.equal(
      await createKey(
        engineContext(engine),
        { name, scope: 'read', topics: null, sha: secretDigest(newSecret()), createdBy: 'x' },
        held,
      ),
      'full',
    );
    assert.equal(await server.client().hexists('dq:{keys}:keys', name), 0);
  });

  describe("an instance's cache", () => {
    it('a revoked key keeps working here until KEY_RECHECK_MS has passed, then is refused; a new key works at once', async () => {
      const { engine, deploymentToken, deploymentSha } = setup();
      let now = 1_000_000;
      const lookups: string[] = [];
      const counted = { authKey: (sha: string, dep: string) => (lookups.push(sha), engine.authKey(sha, dep)) };
      const access = new Access(counted, deploymentToken, () => now);
      const name = unique('rotating');
      const secret = newSecret();
      await engine.createKey({
        name,
        scope: 'write',
        topics: null,
        sha: secretDigest(secret),
        createdBy: 'deployment',
      });
      assert.equal((await access.caller(`Bearer ${secret}`))?.name, name, 'a new key works at once');
      await engine.revokeKey(name, deploymentSha); // through another instance
      now += KEY_RECHECK_MS - 1;
      assert.equal((await access.caller(`Bearer ${secret}`))?.name, name, 'still trusted within KEY_RECHECK_MS');
      now += 1;
      assert.equal(await access.caller(`Bearer ${secret}`), null, 'refused once KEY_RECHECK_MS has passed');
      assert.equal(lookups.length, 2);
      assert.equal((await access.caller(`Bearer ${deploymentToken}`))?.scope, 'admin');
      assert.equal(await access.caller(undefined), null);
      assert.equal(await access.caller('Basic abc'), null);
    });

    it('a burst of 50 concurrent requests with one key asks Redis once', async () => {
      const { engine, deploymentToken } = setup();
      let lookups = 0;
      const access = new Access({ authKey: (sha, dep) => ((lookups += 1), engine.authKey(sha, dep)) }, deploymentToken);
      const callers = await Promise.all(Array.from({ length: 50 }, () => access.caller(`Bearer ${deploymentToken}`)));
      assert.ok(callers.every((c) => c?.name === 'deployment'));
      assert.equal(lookups, 1);
    });
  });
});
