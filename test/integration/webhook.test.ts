import assert from 'node:assert/strict';
import dns from 'node:dns';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import tls from 'node:tls';
import { RetryLater } from '../../lib/workers/retry-later';
import {
  ATTEMPT_HEADER,
  deliverWebhook,
  JOB_ID_HEADER,
  SIGNATURE_HEADER,
  TIMESTAMP_HEADER,
  TOPIC_HEADER,
  verifyWebhook,
  WEBHOOK_USER_AGENT,
  type WebhookJob,
} from '../../lib/workers/webhook';

interface Recorded {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const SECRET = 'whsec_test';
const TEN_MB = 10 * 1024 * 1024;

function listen(server: net.Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)),
  );
}

function rejection(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => assert.fail('expected the delivery to fail'),
    (err: unknown) => {
      assert.ok(err instanceof Error, 'rejects with an Error');
      return err;
    },
  );
}

describe('deliverWebhook without a secret', () => {
  it('refuses to send an unsigned request', async () => {
    const error = await rejection(
      deliverWebhook(
        { topic: 't', id: 'j', attempt: 1, url: 'http://127.0.0.1:9/', body: {} },
        { secret: '', allowPrivate: true, timeoutMs: 1000 },
      ),
    );
    assert.match(error.message, /secret is not configured/);
  });
});

describe('deliverWebhook against a local server', () => {
  const requests: Recorded[] = [];
  let server: http.Server;
  let base: string;

  before(async () => {
    server = http.createServer((req, res) => {
      res.on('error', () => {});
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = req.url ?? '/';
        requests.push({
          method: req.method ?? '',
          path,
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
        switch (path) {
          case '/ok':
          case '/target':
            res.writeHead(200, { 'content-type': 'text/plain' }).end('thanks');
            return;
          case '/created-streaming':
            res.writeHead(201, { 'content-type': 'text/plain' });
            res.write('accepted, but this body never ends');
            return;
          case '/fail':
            res
              .writeHead(500, { 'content-type': 'text/plain' })
              .end('database\r\nexploded:\tconnection pool exhausted');
            return;
          case '/empty-fail':
            res.writeHead(502).end();
            return;
          case '/busy':
            res.writeHead(429, { 'retry-after': '7' }).end('slow down');
            return;
          case '/unavailable-until':
            res.writeHead(503, { 'retry-after': new Date(Date.now() + 120_000).toUTCString() }).end('maintenance');
            return;
          case '/busy-forever':
            res.writeHead(429, { 'retry-after': String(7 * 86_400) }).end();
            return;
          case '/busy-no-header':
            res.writeHead(429).end('slow down');
            return;
          case '/redirect':
            res.writeHead(302, { location: `${base}/target?token=secret` }).end();
            return;
          case '/huge':
            res.writeHead(500, { 'content-type': 'text/plain' });
            res.end(Buffer.alloc(TEN_MB, 'x'));
            return;
          case '/hang':
            return;
          default:
            res.writeHead(404).end('no such route');
        }
      });
    });
    base = `http://127.0.0.1:${await listen(server)}`;
  });

  after(() => {
    server.closeAllConnections();
    server.close();
  });

  const job = (path: string, extra: Partial<WebhookJob> = {}): WebhookJob => ({
    topic: 'orders',
    id: 'job-1',
    attempt: 2,
    url: `${base}${path}`,
    body: { order: 42, items: ['a', 'b'], note: 'héllo' },
    ...extra,
  });
  const local = { secret: SECRET, allowPrivate: true, timeoutMs: 5000 };
  const hits = (path: string) => requests.filter((r) => r.path.split('?')[0] === path).length;

  it('POSTs the signed JSON body, which the receiver can verify', async () => {
    const before = requests.length;
    const result = await deliverWebhook(job('/ok'), local);
    assert.equal(result.status, 200);
    assert.ok(result.durationMs >= 0);
    assert.equal(requests.length, before + 1);
    const got = requests.at(-1)!;
    assert.equal(got.method, 'POST');
    assert.equal(got.body, JSON.stringify(job('/ok').body));
    assert.equal(got.headers['content-type'], 'application/json');
    assert.equal(got.headers['user-agent'], WEBHOOK_USER_AGENT);
    assert.equal(got.headers[TOPIC_HEADER], 'orders');
    assert.equal(got.headers[JOB_ID_HEADER], 'job-1');
    assert.equal(got.headers[ATTEMPT_HEADER], '2');
    const timestamp = got.headers[TIMESTAMP_HEADER] as string | undefined;
    assert.ok(Math.abs(Number(timestamp) - Date.now() / 1000) < 60);
    const signature = got.headers[SIGNATURE_HEADER] as string | undefined;
    assert.deepEqual(verifyWebhook({ secret: SECRET, body: got.body, timestamp, signature }), { ok: true });
    assert.deepEqual(verifyWebhook({ secret: 'wrong', body: got.body, timestamp, signature }), {
      ok: false,
      reason: 'bad_signature',
    });
  });

  it('while a secret is rotated, signs with both: a receiver that knows only the old one and one that knows only the new one both verify', async () => {
    await deliverWebhook(job('/ok'), { ...local, secret: ['new-secret', SECRET] });
    const got = requests.at(-1)!;
    const check = (secret: string) =>
      verifyWebhook({
        secret,
        body: got.body,
        timestamp: got.headers[TIMESTAMP_HEADER] as string,
        signature: got.headers[SIGNATURE_HEADER] as string,
      });
    assert.equal(String(got.headers[SIGNATURE_HEADER]).split(' ').length, 2);
    assert.deepEqual(check(SECRET), { ok: true }, 'a receiver with the old secret only');
    assert.deepEqual(check('new-secret'), { ok: true }, 'a receiver with the new secret only');
    assert.deepEqual(check('neither'), { ok: false, reason: 'bad_signature' });
    await assert.rejects(deliverWebhook(job('/ok'), { ...local, secret: [] }), /refusing to send unsigned/);
  });

  it('signs with the injected clock', async () => {
    const now = 1_700_000_000_123;
    await deliverWebhook(job('/ok', { body: null }), { ...local, now: () => now });
    const got = requests.at(-1)!;
    assert.equal(got.body, 'null');
    assert.equal(got.headers[TIMESTAMP_HEADER], '1700000000');
    const check = verifyWebhook({
      secret: SECRET,
      body: got.body,
      timestamp: got.headers[TIMESTAMP_HEADER] as string,
      signature: got.headers[SIGNATURE_HEADER] as string,
      now: 1_700_000_000,
    });
    assert.deepEqual(check, { ok: true });
  });

  it('succeeds on a 2xx without waiting for the response body', async () => {
    const result = await deliverWebhook(job('/created-streaming'), { ...local, timeoutMs: 2000 });
    assert.equal(result.status, 201);
  });

  it('fails a 500 with the status and a one-line body excerpt', async () => {
    const err = await rejection(deliverWebhook(job('/fail'), local));
    assert.ok(!(err instanceof RetryLater));
    assert.equal(err.message, 'HTTP 500: database exploded: connection pool exhausted');
  });

  it('fails a bodiless error with its status line', async () => {
    const err = await rejection(deliverWebhook(job('/empty-fail'), local));
    assert.equal(err.message, 'HTTP 502: Bad Gateway');
  });

  it('asks to retry after Retry-After seconds on a 429', async () => {
    const err = await rejection(deliverWebhook(job('/busy'), local));
    assert.ok(err instanceof RetryLater, `RetryLater, got ${err.name}: ${err.message}`);
    assert.equal(err.retryAfterMs, 7000);
    assert.match(err.message, /^HTTP 429/);
  });

  it('reads an HTTP-date Retry-After on a 503', async () => {
    const err = await rejection(deliverWebhook(job('/unavailable-until'), local));
    assert.ok(err instanceof RetryLater);
    assert.ok(err.retryAfterMs > 100_000 && err.retryAfterMs <= 120_000, `${err.retryAfterMs} ms`);
  });

  it('clamps Retry-After to a day', async () => {
    const err = await rejection(deliverWebhook(job('/busy-forever'), local));
    assert.ok(err instanceof RetryLater);
    assert.equal(err.retryAfterMs, 86_400_000);
  });

  it('treats a 429 without Retry-After as an ordinary failure', async () => {
    const err = await rejection(deliverWebhook(job('/busy-no-header'), local));
    assert.ok(!(err instanceof RetryLater));
    assert.equal(err.message, 'HTTP 429: slow down');
  });

  it('does not follow a redirect', async () => {
    const err = await rejection(deliverWebhook(job('/redirect'), local));
    assert.match(err.message, /^HTTP 302: redirect to http:\/\/127\.0\.0\.1:\d+\/target not followed$/);
    assert.doesNotMatch(err.message, /token|secret/);
    assert.equal(hits('/redirect'), 1);
    assert.equal(hits('/target'), 0);
  });

  it('reads only the start of a huge error body', async () => {
    const err = await rejection(deliverWebhook(job('/huge'), local));
    assert.ok(err.message.length <= 300, `message is ${err.message.length} chars`);
    assert.match(err.message, /^HTTP 500: x{200}$/);
  });

  // without the timeout the delivery would wait for the test's own timeout, and fail there
  it('times out on a server that never answers', { timeout: 60_000 }, async () => {
    const err = await rejection(deliverWebhook(job('/hang'), { ...local, timeoutMs: 300 }));
    assert.equal(err.message, 'timed out after 300 ms');
  });

  it('gives up when the caller aborts', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const err = await rejection(
      deliverWebhook(job('/hang'), { ...local, timeoutMs: 10_000, signal: controller.signal }),
    );
    assert.match(err.message, /^timed out after \d+ ms$/);
  });

  it('gives up at once on an already aborted signal', async () => {
    const before = hits('/ok');
    const err = await rejection(deliverWebhook(job('/ok'), { ...local, signal: AbortSignal.abort() }));
    assert.match(err.message, /timed out/);
    assert.equal(hits('/ok'), before);
  });

  it('fails a job without a url', async () => {
    const err = await rejection(deliverWebhook(job('/ok', { url: undefined }), local));
    assert.equal(err.message, 'job has no url');
  });

  it('reports a refused connection briefly', async () => {
    const closed = net.createServer();
    const port = await listen(closed);
    await new Promise((resolve) => closed.close(resolve));
    const err = await rejection(deliverWebhook(job('/', { url: `http://127.0.0.1:${port}/` }), local));
    assert.equal(err.message, `ECONNREFUSED 127.0.0.1:${port}`);
  });

  describe('without allowPrivate', () => {
    const strict = { secret: SECRET, allowPrivate: false, timeoutMs: 2000 };

    it('refuses http: URLs', async () => {
      const before = requests.length;
      const err = await rejection(deliverWebhook(job('/ok'), strict));
      assert.match(err.message, /only https/);
      assert.equal(requests.length, before);
    });

    it('refuses a loopback address', async () => {
      const before = requests.length;
      const err = await rejection(deliverWebhook(job('/ok', { url: `${base.replace('http:', 'https:')}/ok` }), strict));
      assert.match(err.message, /^refused: 127\.0\.0\.1 .*loopback/);
      assert.equal(requests.length, before);
    });

    it('refuses IPv6 loopback and metadata addresses given literally', async () => {
      const v6 = await rejection(deliverWebhook(job('/', { url: 'https://[::1]:9/' }), strict));
      assert.match(v6.message, /loopback/);
      const mapped = await rejection(
        deliverWebhook(job('/', { url: 'https://[::ffff:169.254.169.254]/latest' }), strict),
      );
      assert.match(mapped.message, /link-local/);
      const metadata = await rejection(
        deliverWebhook(job('/', { url: 'https://169.254.169.254/latest/meta-data' }), strict),
      );
      assert.match(metadata.message, /link-local/);
      const decimal = await rejection(deliverWebhook(job('/', { url: 'https://2130706433/' }), strict));
      assert.match(decimal.message, /loopback/);
    });

    it('refuses a hostname if any of its addresses is forbidden', async (t) => {
      t.mock.method(dns.promises, 'lookup', async () => [
        { address: '93.184.216.34', family: 4 },
        { address: '10.0.0.7', family: 4 },
      ]);
      const err = await rejection(deliverWebhook(job('/', { url: 'https://mixed.example/' }), strict));
      assert.equal(err.message, 'refused: mixed.example resolves to 10.0.0.7 (private)');
    });

    it('refuses a hostname resolving to localhost', async () => {
      const err = await rejection(deliverWebhook(job('/', { url: 'https://localhost:9/' }), strict));
      assert.match(err.message, /^refused: localhost resolves to .*loopback/);
    });

    it('connects to the address it checked, not to a fresh lookup', async (t) => {
      const lookups: string[] = [];
      t.mock.method(dns.promises, 'lookup', async (host: string) => {
        lookups.push(host);
        return [{ address: '93.184.216.34', family: 4 }]; // global unicast (documentation ranges are refused)
      });
      // stop at the TLS connect, so no packet leaves the machine; keep the options it was given
      const connects: tls.ConnectionOptions[] = [];
      t.mock.method(tls, 'connect', (options: tls.ConnectionOptions) => {
        connects.push(options);
        throw new Error('not connecting in this test');
      });
      const err = await rejection(
        deliverWebhook(job('/', { url: 'https://pinned.invalid:9/' }), { ...strict, timeoutMs: 500 }),
      );
      assert.match(err.message, /not connecting in this test/);
      assert.equal(connects.length, 1);
      const lookup = connects[0]!.lookup!;
      const answer = await new Promise((resolve) =>
        lookup('pinned.invalid', {}, (error, address, family) => resolve([error, address, family])),
      );
      assert.deepEqual(answer, [null, '93.184.216.34', 4], 'the connection resolves to the checked address');
      assert.deepEqual(lookups, ['pinned.invalid'], 'no second DNS lookup of the hostname');
    });

    describe('with allowHosts', () => {
      let tlsServer: tls.Server;
      let port: number;
      let connections = 0;
      const serverNames: string[] = [];
      before(async () => {
        tlsServer = tls.createServer({
          SNICallback: (name, done) => {
            serverNames.push(name);
            done(new Error('no certificate in this test'));
          },
        });
        tlsServer.on('connection', () => connections++);
        tlsServer.on('tlsClientError', () => {});
        port = await listen(tlsServer);
      });
      after(() => tlsServer.close());

      it('lets an allowed host through the address check', async () => {
        const url = `https://localhost:${port}/hook`;
        const refused = await rejection(deliverWebhook(job('/', { url }), strict));
        assert.match(refused.message, /loopback/);
        assert.equal(connections, 0, 'a refused host is never connected to');

        const err = await rejection(deliverWebhook(job('/', { url }), { ...strict, allowHosts: ['localhost'] }));
        assert.doesNotMatch(err.message, /refused|loopback/);
        assert.match(err.message, /ECONNRESET|socket|TLS|EPROTO/);
        assert.equal(connections, 1, 'the allowed host was connected to');
        assert.deepEqual(serverNames, ['localhost'], 'TLS SNI carries the hostname');
        assert.equal(requests.filter((r) => r.path === '/hook').length, 0);
      });
    });
  });
});
