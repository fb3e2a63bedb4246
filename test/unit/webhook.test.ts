import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { isForbiddenAddress, signWebhook, verifyWebhook } from '../../lib/workers/webhook';

const NOW = 1_700_000_000;
const BODY = JSON.stringify({ order: 42, note: 'héllo' });

describe('webhook signatures', () => {
  it('signs with v1= and hex HMAC-SHA256 over timestamp.body', () => {
    const expected = createHmac('sha256', 'sekret').update(`${NOW}.${BODY}`).digest('hex');
    assert.equal(signWebhook('sekret', NOW, BODY), `v1=${expected}`);
    assert.match(signWebhook('sekret', NOW, BODY), /^v1=[0-9a-f]{64}$/);
  });

  it('verifies its own signature', () => {
    const signature = signWebhook('sekret', NOW, BODY);
    assert.deepEqual(verifyWebhook({ secret: 'sekret', body: BODY, timestamp: String(NOW), signature, now: NOW }), {
      ok: true,
    });
  });

  it('rejects a tampered body, a tampered signature and a wrong secret', () => {
    const signature = signWebhook('sekret', NOW, BODY);
    const base = { secret: 'sekret', body: BODY, timestamp: String(NOW), signature, now: NOW };
    assert.deepEqual(verifyWebhook({ ...base, body: BODY.replace('42', '43') }), {
      ok: false,
      reason: 'bad_signature',
    });
    assert.deepEqual(verifyWebhook({ ...base, secret: 'other' }), { ok: false, reason: 'bad_signature' });
    const flipped = signature.slice(0, -1) + (signature.endsWith('0') ? '1' : '0');
    assert.deepEqual(verifyWebhook({ ...base, signature: flipped }), { ok: false, reason: 'bad_signature' });
    assert.deepEqual(verifyWebhook({ ...base, signature: signature.slice(0, -2) }), {
      ok: false,
      reason: 'bad_signature',
    });
    assert.deepEqual(verifyWebhook({ ...base, signature: signature.replace('v1=', 'v0=') }), {
      ok: false,
      reason: 'bad_signature',
    });
  });

  it('binds the timestamp into the signature', () => {
    const signature = signWebhook('sekret', NOW, BODY);
    assert.deepEqual(verifyWebhook({ secret: 'sekret', body: BODY, timestamp: String(NOW + 1), signature, now: NOW }), {
      ok: false,
      reason: 'bad_signature',
    });
  });

  it('rejects stale, future and malformed timestamps', () => {
    const at = (ts: number) => ({
      secret: 'sekret',
      body: BODY,
      timestamp: String(ts),
      signature: signWebhook('sekret', ts, BODY),
      now: NOW,
    });
    assert.deepEqual(verifyWebhook(at(NOW - 300)), { ok: true });
    assert.deepEqual(verifyWebhook(at(NOW + 300)), { ok: true });
    assert.deepEqual(verifyWebhook(at(NOW - 301)), { ok: false, reason: 'stale_timestamp' });
    assert.deepEqual(verifyWebhook(at(NOW + 301)), { ok: false, reason: 'stale_timestamp' });
    assert.deepEqual(verifyWebhook({ ...at(NOW - 30), toleranceSeconds: 10 }), {
      ok: false,
      reason: 'stale_timestamp',
    });
    assert.deepEqual(verifyWebhook({ ...at(NOW), timestamp: 'yesterday' }), { ok: false, reason: 'stale_timestamp' });
    assert.deepEqual(verifyWebhook({ ...at(NOW), timestamp: '-1' }), { ok: false, reason: 'stale_timestamp' });
  });

  it('uses the system clock by default', () => {
    const ts = Math.floor(Date.now() / 1000);
    assert.deepEqual(
      verifyWebhook({ secret: 's', body: BODY, timestamp: String(ts), signature: signWebhook('s', ts, BODY) }),
      { ok: true },
    );
    assert.deepEqual(
      verifyWebhook({
        secret: 's',
        body: BODY,
        timestamp: String(ts - 3600),
        signature: signWebhook('s', ts - 3600, BODY),
      }),
      {
        ok: false,
        reason: 'stale_timestamp',
      },
    );
  });

  it('reports missing headers', () => {
    const signature = signWebhook('sekret', NOW, BODY);
    assert.deepEqual(verifyWebhook({ secret: 'sekret', body: BODY, timestamp: undefined, signature, now: NOW }), {
      ok: false,
      reason: 'missing_headers',
    });
    assert.deepEqual(
      verifyWebhook({ secret: 'sekret', body: BODY, timestamp: String(NOW), signature: undefined, now: NOW }),
      {
        ok: false,
        reason: 'missing_headers',
      },
    );
    assert.deepEqual(verifyWebhook({ secret: 'sekret', body: BODY, timestamp: '', signature: '', now: NOW }), {
      ok: false,
      reason: 'missing_headers',
    });
  });

  it('signs with each of several secrets while one is rotated: a receiver knowing either verifies', () => {
    const both = signWebhook(['old', 'new'], NOW, BODY);
    assert.equal(both, `${signWebhook('old', NOW, BODY)} ${signWebhook('new', NOW, BODY)}`);
    const base = { body: BODY, timestamp: String(NOW), signature: both, now: NOW };
    assert.deepEqual(verifyWebhook({ ...base, secret: 'old' }), { ok: true });
    assert.deepEqual(verifyWebhook({ ...base, secret: 'new' }), { ok: true });
    assert.deepEqual(verifyWebhook({ ...base, secret: 'other' }), { ok: false, reason: 'bad_signature' });
    assert.deepEqual(verifyWebhook({ ...base, body: `${BODY} `, secret: 'new' }), {
      ok: false,
      reason: 'bad_signature',
    });
  });

  it('accepts any of several secrets and any of several signatures during rotation', () => {
    const oldSig = signWebhook('old', NOW, BODY);
    const newSig = signWebhook('new', NOW, BODY);
    const base = { body: BODY, timestamp: String(NOW), now: NOW };
    assert.deepEqual(verifyWebhook({ ...base, secret: ['new', 'old'], signature: oldSig }), { ok: true });
    assert.deepEqual(verifyWebhook({ ...base, secret: ['new', 'old'], signature: newSig }), { ok: true });
    assert.deepEqual(verifyWebhook({ ...base, secret: 'new', signature: `${oldSig} ${newSig}` }), { ok: true });
    assert.deepEqual(verifyWebhook({ ...base, secret: 'old', signature: `${oldSig}  ${newSig}` }), { ok: true });
    assert.deepEqual(verifyWebhook({ ...base, secret: ['newer', 'newest'], signature: `${oldSig} ${newSig}` }), {
      ok: false,
      reason: 'bad_signature',
    });
    assert.deepEqual(verifyWebhook({ ...base, secret: [], signature: newSig }), { ok: false, reason: 'bad_signature' });
  });
});

describe('isForbiddenAddress', () => {
  const forbidden: [string, RegExp][] = [
    ['127.0.0.1', /^loopback$/],
    ['127.255.255.254', /^loopback$/],
    ['::1', /^loopback$/],
    ['0:0:0:0:0:0:0:1', /^loopback$/],
    ['10.0.0.1', /^private$/],
    ['10.255.255.255', /^private$/],
    ['172.16.0.1', /^private$/],
    ['172.31.255.255', /^private$/],
    ['192.168.1.1', /^private$/],
    ['fc00::1', /^private$/],
    ['fd12:3456:789a::1', /^private$/],
    ['169.254.169.254', /^link-local$/],
    ['169.254.0.1', /^link-local$/],
    ['fe80::1', /^link-local$/],
    ['fe80::1%eth0', /^link-local$/],
    ['febf::1', /^link-local$/],
    ['0.0.0.0', /^unspecified$/],
    ['::', /^unspecified$/],
    ['100.64.0.1', /^CGNAT$/],
    ['100.127.255.255', /^CGNAT$/],
    ['224.0.0.1', /^multicast$/],
    ['239.255.255.250', /^multicast$/],
    ['ff02::1', /^multicast$/],
    ['255.255.255.255', /^reserved$/],
    ['::ffff:127.0.0.1', /^IPv4-mapped loopback$/],
    ['::ffff:7f00:1', /^IPv4-mapped loopback$/],
    ['::ffff:10.1.2.3', /^IPv4-mapped private$/],
    ['::ffff:169.254.169.254', /^IPv4-mapped link-local$/],
    ['::ffff:a9fe:a9fe', /^IPv4-mapped link-local$/],
    ['::FFFF:192.168.0.1', /^IPv4-mapped private$/],
    ['::ffff:0.0.0.0', /^IPv4-mapped unspecified$/],
    ['::ffff:100.64.1.1', /^IPv4-mapped CGNAT$/],
    ['::127.0.0.1', /^IPv4-compatible \(embeds 127\.0\.0\.1: loopback\)$/],
    ['64:ff9b::10.0.0.1', /^NAT64 private$/],
    ['not-an-ip', /^not an IP address$/],
    ['', /^not an IP address$/],
  ];
  for (const [ip, reason] of forbidden) {
    it(`refuses ${ip || '(empty)'}`, () => assert.match(isForbiddenAddress(ip) ?? 'null', reason));
  }

  const allowed = [
    '93.184.216.34',
    '8.8.8.8',
    '1.1.1.1',
    '172.15.255.255',
    '172.32.0.1',
    '100.63.255.255',
    '100.128.0.1',
    '169.253.0.1',
    '2606:4700::1111',
    '2001:4860:4860::8888',
    '::ffff:93.184.216.34',
    '64:ff9b::8.8.8.8',
  ];
  for (const ip of allowed) {
    it(`allows ${ip}`, () => assert.equal(isForbiddenAddress(ip), null));
  }
});
