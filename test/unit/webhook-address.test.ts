/**
 * The webhook address policy's special-purpose ranges (issue 12, finding 8): only global unicast
 * addresses are destinations, IPv4 addresses embedded in IPv6 ones are checked, and the stack's
 * own VPC CIDR is refused.
 */
import assert from 'node:assert/strict';
import dns from 'node:dns';
import { describe, it } from 'node:test';
import { loadConfig } from '../../lib/core/queue-config';
import { deliverWebhook, isForbiddenAddress } from '../../lib/workers/webhook';

/** Calls isForbiddenAddress with the VPC CIDRs as a second argument (code before the fix ignores it). */
const forbidden = isForbiddenAddress as (ip: string, denyCidrs?: readonly string[]) => string | null;

describe('webhook address policy: special-purpose ranges', () => {
  const refused: [ip: string, why: string][] = [
    ['::ffff:0:169.254.169.254', 'SIIT (RFC 6145) form of the metadata address'],
    ['::ffff:0:a9fe:a9fe', 'SIIT, hex'],
    ['::ffff:0:10.0.0.1', 'SIIT of a private address'],
    ['64:ff9b:1::a9fe:a9fe', 'local-use NAT64 (RFC 8215) of the metadata address'],
    ['64:ff9b:1::8.8.8.8', 'local-use NAT64: translated inside the network, whatever it embeds'],
    ['64:ff9b::169.254.169.254', 'NAT64 well-known prefix of the metadata address'],
    ['64:ff9b::7f00:1', 'NAT64 of loopback'],
    ['2002:a9fe:a9fe::1', '6to4 embedding 169.254.169.254'],
    ['2002:0a00:0001::1', '6to4 embedding 10.0.0.1'],
    ['2002:7f00:1::', '6to4 embedding 127.0.0.1'],
    ['2002:808:808::1', '6to4 (deprecated relays, RFC 7526), even of a public address'],
    ['2001:0:4136:e378:8000:63bf:5601:5601', 'Teredo whose obfuscated client is 169.254.169.254'],
    ['2001:0:4136:e378:8000:63bf:f5ff:fffe', 'Teredo whose client is 10.0.0.1'],
    ['2001::1', 'Teredo prefix'],
    ['198.18.0.1', 'benchmarking 198.18.0.0/15 (a valid VPC CIDR on AWS)'],
    ['198.19.255.254', 'benchmarking, upper half'],
    ['192.0.0.1', 'IETF protocol assignments 192.0.0.0/24'],
    ['192.0.0.170', 'NAT64 discovery'],
    ['192.0.2.1', 'documentation TEST-NET-1'],
    ['198.51.100.7', 'documentation TEST-NET-2'],
    ['203.0.113.9', 'documentation TEST-NET-3'],
    ['192.88.99.1', 'deprecated 6to4 relay anycast'],
    ['2001:db8::1', 'IPv6 documentation'],
    ['3fff::1', 'IPv6 documentation (RFC 9637)'],
    ['100::1', 'IPv6 discard-only (RFC 6666)'],
    ['2001:2::1', 'IPv6 benchmarking'],
    ['2001:20::1', 'ORCHIDv2'],
    ['5f00::1', 'SRv6 SIDs'],
    ['::808:808', 'IPv4-compatible (deprecated) of a public address'],
    ['::8.8.8.8', 'IPv4-compatible, dotted'],
    ['4000::1', 'outside 2000::/3, the only global unicast space'],
    ['fec0::1', 'site-local (deprecated)'],
    ['::ffff:198.18.0.1', 'IPv4-mapped benchmarking'],
  ];
  for (const [ip, why] of refused) {
    it(`refuses ${ip}: ${why}`, () => assert.notEqual(forbidden(ip), null, `${ip} was allowed`));
  }

  it('names the embedded IPv4 address and its range', () => {
    assert.match(forbidden('::ffff:0:169.254.169.254') ?? '', /link-local/);
    assert.match(forbidden('2002:a9fe:a9fe::1') ?? '', /169\.254\.169\.254.*link-local/);
    assert.match(forbidden('2001:0:4136:e378:8000:63bf:5601:5601') ?? '', /169\.254\.169\.254.*link-local/);
    assert.match(forbidden('64:ff9b::7f00:1') ?? '', /loopback/);
  });

  const allowed = [
    '8.8.8.8',
    '93.184.216.34',
    '198.17.255.255',
    '198.20.0.1',
    '192.0.1.1',
    '2606:4700::1111',
    '2001:4860:4860::8888',
    '::ffff:8.8.8.8',
    '::ffff:0:8.8.8.8',
    '64:ff9b::8.8.8.8',
    '2a00:1450:4001::1',
  ];
  for (const ip of allowed) {
    it(`allows global unicast ${ip}`, () => assert.equal(forbidden(ip), null));
  }

  it("refuses the stack's own VPC CIDR, also when embedded in IPv6", () => {
    const vpc = ['52.94.0.0/16', '2600:1f18:abcd::/56'];
    for (const ip of ['52.94.3.4', '::ffff:52.94.3.4', '64:ff9b::52.94.0.1', '2600:1f18:abcd:12::1']) {
      assert.match(forbidden(ip, vpc) ?? 'allowed', /VPC/, ip);
    }
    for (const ip of ['52.95.0.1', '2600:1f18:abce::1']) assert.equal(forbidden(ip, vpc), null, ip);
    assert.equal(forbidden('52.94.3.4'), null, 'a public address outside any VPC CIDR given');
  });

  it('deliverWebhook refuses a host resolving to a special-purpose or VPC address, without connecting', async (t) => {
    const answers: Record<string, string> = {
      'siit.example': '::ffff:0:169.254.169.254',
      'nat64.example': '64:ff9b:1::a9fe:a9fe',
      'sixtofour.example': '2002:a9fe:a9fe::1',
      'bench.example': '198.18.0.5',
      'vpc.example': '52.94.3.4',
    };
    t.mock.method(dns.promises, 'lookup', async (host: string) => [
      { address: answers[host]!, family: answers[host]!.includes(':') ? 6 : 4 },
    ]);
    const options = { secret: 's', allowPrivate: false, timeoutMs: 2_000, denyCidrs: ['52.94.0.0/16'] };
    for (const host of Object.keys(answers)) {
      const job = { topic: 'webhook', id: 'j', attempt: 1, url: `https://${host}/hook`, body: {} };
      await assert.rejects(
        deliverWebhook(job, options),
        (err: Error) => err.message.startsWith(`refused: ${host} resolves to ${answers[host]}`),
        host,
      );
    }
  });

  it('reads the VPC CIDRs from DQ_WEBHOOK_DENY_CIDRS, and fails at cold start on a bad one', () => {
    const env = {
      DQ_CONFIG: JSON.stringify({ topics: { webhook: { kind: 'webhook', handler: 'webhookHandler' } } }),
      REDIS_URL: 'redis://127.0.0.1:6379',
      DQ_FUNCTION_PREFIX: 'x-',
    };
    const read = (cidrs?: string) =>
      (
        loadConfig({ ...env, ...(cidrs === undefined ? {} : { DQ_WEBHOOK_DENY_CIDRS: cidrs }) }) as {
          webhookDenyCidrs?: string[];
        }
      ).webhookDenyCidrs;
    assert.deepEqual(read(), []);
    assert.deepEqual(read('10.42.0.0/16'), ['10.42.0.0/16']);
    assert.deepEqual(read(' 52.94.0.0/16, 2600:1f18:abcd::/56 '), ['52.94.0.0/16', '2600:1f18:abcd::/56']);
    for (const bad of ['10.42.0.0', '10.42.0.0/33', 'vpc/16', '2600::/129', '10.0.0.0/8/1']) {
      assert.throws(() => read(bad), /DQ_WEBHOOK_DENY_CIDRS/, bad);
    }
  });
});
