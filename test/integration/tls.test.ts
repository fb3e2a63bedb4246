/**
 * The engine over TLS with AUTH, as the AWS stages run it (ElastiCache with TransitEncryption and
 * an AUTH token): a local redis-server with only a TLS port and `requirepass`, certificates made
 * here with openssl, and the client from lib/platform/redis.ts built from a rediss:// URL exactly as on
 * AWS, plus this test's CA.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { createRedis } from '../../lib/platform/redis';
import { freePort } from '../support/redis';
import { lifecycleSuite } from './lifecycle';

function openssl(dir: string, args: string[]): void {
  const result = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`openssl ${args.join(' ')} failed: ${result.stderr}`);
}

/** A CA and a server certificate for 127.0.0.1 signed by it, in `dir`. */
function makeCertificates(dir: string): void {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(dir, [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=delay-queue test CA',
  ]);
  openssl(dir, ['req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1']);
  writeFileSync(join(dir, 'san.cnf'), 'subjectAltName=IP:127.0.0.1\n');
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '2',
    '-extfile',
    'san.cnf',
  ]);
}

// Debian's redis-server (7.0) is built with TLS (it links libssl), so this runs everywhere CI does.
describe('engine over TLS with AUTH (the AWS client settings)', () => {
  let dir: string;
  let server: ChildProcess | undefined;
  let exited: Promise<void>;
  let url: string;
  let ca: Buffer;
  let redis: Redis;
  const password = randomBytes(24).toString('hex');

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dq-tls-'));
    makeCertificates(dir);
    ca = readFileSync(join(dir, 'ca.crt'));
    const port = await freePort();
    // TLS only: the plain port is off, as on ElastiCache with TransitEncryptionMode required
    server = spawn(
      'redis-server',
      [
        '--port',
        '0',
        '--tls-port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--tls-cert-file',
        join(dir, 'server.crt'),
        '--tls-key-file',
        join(dir, 'server.key'),
        '--tls-ca-cert-file',
        join(dir, 'ca.crt'),
        '--tls-auth-clients',
        'no',
        '--requirepass',
        password,
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'no',
      ],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
    exited = new Promise((resolve) => server!.once('exit', () => resolve()));
    url = `rediss://:${password}@127.0.0.1:${port}`;
    redis = createRedis({ url, cluster: false }, { tls: { ca } }) as Redis;
    redis.on('error', () => undefined); // refused until the server listens
    for (let tries = 0; ; tries++) {
      if ((await redis.ping().catch(() => '')) === 'PONG') break;
      if (tries > 100) throw new Error('redis-server with TLS did not answer');
      await sleep(100);
    }
  });
  after(async () => {
    redis?.disconnect();
    if (server?.exitCode === null) {
      process.kill(server.pid!, 'SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('talks TLS with the AUTH token from the URL', async () => {
    assert.equal(await redis.ping(), 'PONG');
    const info = await redis.info('server');
    assert.match(info, /redis_version:7/);
    assert.equal(await redis.call('CONFIG', 'GET', 'tls-port').then((r) => (r as string[])[1]), url.split(':').pop());
  });

  it('refuses a server whose certificate it cannot verify, and a wrong token', async () => {
    const untrusted = createRedis(
      { url, cluster: false },
      { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null },
    ) as Redis;
    const errors: Error[] = [];
    untrusted.on('error', (error: Error) => errors.push(error));
    await assert.rejects(untrusted.connect());
    untrusted.disconnect();
    assert.match(errors.map((e) => e.message).join('\n'), /self-signed|unable to verify|certificate/i);
    const wrong = createRedis(
      { url: url.replace(password, 'not-the-token'), cluster: false },
      { tls: { ca }, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null },
    ) as Redis;
    const refusals: Error[] = [];
    wrong.on('error', (error: Error) => refusals.push(error));
    await assert.rejects(wrong.connect().then(() => wrong.ping()));
    wrong.disconnect();
    assert.match(refusals.map((e) => e.message).join('\n'), /WRONGPASS|invalid username-password/i);
  });

  lifecycleSuite({
    redis: () => redis,
    partitions: 1,
    flushScripts: async () => {
      await redis.function('FLUSH');
      await redis.script('FLUSH');
    },
  });
});
