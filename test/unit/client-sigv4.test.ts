/**
 * The client's SigV4 signing (lib/client.ts signRequest, WebCrypto) against an independent
 * implementation, the AWS SDK's @smithy/signature-v4 (installed with @aws-sdk/client-lambda; used
 * by this test only): the same requests, at a fixed date, must get the same Authorization header.
 * Then a DelayQueueClient with `sigv4` against a local server: the signed headers reach it, and
 * they verify. No AWS here: that API Gateway accepts these signatures is not checked (DEPLOY.md).
 */
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { SignatureV4 } from '@smithy/signature-v4';
import { DelayQueueClient, signRequest, type AwsCredentials } from '../../lib/client';

/** The SDK's hash interface over node:crypto (HMAC when given a secret), as @smithy/hash-node does. */
type Data = string | ArrayBuffer | ArrayBufferView;
const bytes = (data: Data) =>
  typeof data === 'string'
    ? Buffer.from(data)
    : ArrayBuffer.isView(data)
      ? Buffer.from(data.buffer, data.byteOffset, data.byteLength)
      : Buffer.from(data);
class Sha256 {
  private readonly hash;
  constructor(secret?: Data) {
    this.hash = secret ? createHmac('sha256', bytes(secret)) : createHash('sha256');
  }
  update(data: Data): void {
    this.hash.update(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
}

const KEYS: AwsCredentials = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
};
const SESSION: AwsCredentials = {
  ...KEYS,
  accessKeyId: 'ASIAEXAMPLE',
  sessionToken: 'IQoJb3JpZ2luX2VjEXAMPLE//token+with/odd=chars',
};
const DATE = new Date('2026-11-26T07:08:09.123Z');

/** The Authorization header the SDK computes for `method` `url` with `body`. */
async function reference(
  method: string,
  url: string,
  body: string | undefined,
  credentials: AwsCredentials,
  date = DATE,
): Promise<Record<string, string>> {
  const u = new URL(url);
  const signer = new SignatureV4({ service: 'execute-api', region: 'eu-west-1', credentials, sha256: Sha256 });
  const query: Record<string, string> = {};
  for (const [name, value] of u.searchParams) query[name] = value;
  const signed = (await signer.sign(
    {
      method,
      protocol: u.protocol,
      hostname: u.hostname,
      ...(u.port ? { port: Number(u.port) } : {}),
      path: u.pathname,
      query,
      headers: { host: u.host },
      ...(body !== undefined ? { body } : {}),
    } as never,
    {
      signingDate: date,
    },
  )) as unknown as { headers: Record<string, string> };
  return signed.headers;
}

describe('signRequest agrees with @smithy/signature-v4', () => {
  const cases: { name: string; method: string; url: string; body?: string; credentials: AwsCredentials }[] = [
    {
      name: 'GET with a query (unsorted, spaces, reserved characters)',
      method: 'GET',
      url: 'https://abc123.execute-api.eu-west-1.amazonaws.com/topics/orders/jobs?state=ready&limit=10&cursor=a%20b%2Bc&after=x*y(1)',
      credentials: KEYS,
    },
    {
      name: 'POST with a JSON body',
      method: 'POST',
      url: 'https://abc123.execute-api.eu-west-1.amazonaws.com/jobs',
      body: JSON.stringify({ topic: 'orders', id: 'o-1', delay: 30, body: { café: 'ü', n: 1 } }),
      credentials: KEYS,
    },
    {
      name: 'a path with characters to encode (encoded twice)',
      method: 'PUT',
      url: `https://abc123.execute-api.eu-west-1.amazonaws.com/jobs/${encodeURIComponent('orders')}/${encodeURIComponent('order:42.a_b-c é!')}`,
      body: '{}',
      credentials: KEYS,
    },
    {
      name: 'a session token (temporary credentials)',
      method: 'DELETE',
      url: 'https://abc123.execute-api.eu-west-1.amazonaws.com/schedules/orders/nightly',
      credentials: SESSION,
    },
    {
      name: 'a session token, a query and a port',
      method: 'GET',
      url: 'http://127.0.0.1:8443/topics/orders/dead?limit=5',
      credentials: SESSION,
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const ours = await signRequest(
        { method: c.method, url: c.url, ...(c.body !== undefined ? { body: c.body } : {}) },
        { region: 'eu-west-1', credentials: c.credentials, date: DATE },
      );
      const theirs = await reference(c.method, c.url, c.body, c.credentials);
      assert.equal(ours.headers.authorization, theirs.authorization);
      assert.equal(ours.headers['x-amz-date'], theirs['x-amz-date']);
      assert.equal(ours.headers['x-amz-security-token'], theirs['x-amz-security-token']);
      assert.equal(ours.headers['x-amz-content-sha256'], theirs['x-amz-content-sha256']);
      assert.equal(ours.headers['x-amz-date'], '20261126T070809Z');
      assert.match(
        ours.headers.authorization!,
        c.credentials.sessionToken
          ? /SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,/
          : /SignedHeaders=host;x-amz-content-sha256;x-amz-date,/,
      );
      // the URL sent has the signed (canonical) query: the same parameters
      assert.deepEqual([...new URL(ours.url).searchParams].sort(), [...new URL(c.url).searchParams].sort());
    });
  }

  it('puts the service, region and date in the credential scope', async () => {
    const { headers } = await signRequest(
      { method: 'GET', url: 'https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08' },
      { region: 'us-east-1', service: 'iam', credentials: KEYS, date: DATE },
    );
    assert.match(
      headers.authorization!,
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/20261126\/us-east-1\/iam\/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=[0-9a-f]{64}$/,
    );
  });
});

describe('DelayQueueClient with sigv4', () => {
  let server: Server;
  let base: string;
  const seen: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[] = [];
  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
        res
          .writeHead(201, { 'content-type': 'application/json' })
          .end(JSON.stringify({ job: { topic: 'orders', id: 'o-1' } }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(() => server.close());

  it('sends the signature instead of a bearer key, with the session token, and it verifies', async () => {
    let asked = 0;
    const client = new DelayQueueClient({
      baseUrl: base,
      sigv4: { region: 'eu-west-1', credentials: async () => ((asked += 1), SESSION) },
      retries: 0,
    });
    await client.add({ topic: 'orders', id: 'o-1', delay: 30, body: { n: 1 } });
    const req = seen.at(-1)!;
    assert.equal(asked, 1, 'the credentials provider is asked per request');
    assert.equal(req.method, 'POST');
    assert.equal(req.headers['x-amz-security-token'], SESSION.sessionToken);
    assert.match(String(req.headers['x-amz-date']), /^\d{8}T\d{6}Z$/);
    assert.match(
      String(req.headers.authorization),
      /^AWS4-HMAC-SHA256 Credential=ASIAEXAMPLE\/\d{8}\/eu-west-1\/execute-api\/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token, Signature=[0-9a-f]{64}$/,
    );
    // what the server received verifies: the SDK signs the request as received to the same header
    const date = String(req.headers['x-amz-date']);
    const at = new Date(
      `${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:${date.slice(11, 13)}:${date.slice(13, 15)}Z`,
    );
    assert.equal(
      req.headers.authorization,
      (await reference(req.method, base + req.url, req.body, SESSION, at)).authorization,
    );
  });

  it('refuses neither or both of token and sigv4', () => {
    assert.throws(() => new DelayQueueClient({ baseUrl: base }), /give token or sigv4/);
    assert.throws(
      () => new DelayQueueClient({ baseUrl: base, token: 't', sigv4: { region: 'r', credentials: KEYS } }),
      /give token or sigv4/,
    );
  });
});
