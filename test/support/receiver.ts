/**
 * A local HTTP server that webhook jobs are delivered to in end-to-end tests. What it answers is
 * scripted by the path: /ok/<id>, /fail-<n>/<id> (500 for the first n requests), /fail/<id>
 * (always 500), /hang-<n>/<id> (no answer for the first n requests, then 200). It records every
 * request with its arrival time, whether its signature verified with the secret, and which of the
 * secrets it was given verify it (a receiver that knows only one of them, each).
 */
import { createServer, type Server } from 'node:http';
import { verifyWebhook } from '../../lib/workers/webhook';

export interface Delivery {
  path: string;
  at: number;
  body: string;
  attempt: string | undefined;
  /** The x-dq-job-id and x-dq-topic headers. */
  jobId: string | undefined;
  topic: string | undefined;
  verified: boolean;
  /** Those of the receiver's secrets (`secret`, then `others`) that the request's signature verifies with. */
  verifiedBy: string[];
}

export interface Receiver {
  url: string;
  deliveries: Delivery[];
  /** Deliveries whose path ends with /<id>. */
  of(id: string): Delivery[];
  close(): Promise<void>;
}

export async function startReceiver(secret: string, ...others: string[]): Promise<Receiver> {
  const deliveries: Delivery[] = [];
  const counts = new Map<string, number>();
  const hanging = new Set<import('node:http').ServerResponse>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = req.url ?? '/';
      const header = (name: string) => {
        const v = req.headers[name];
        return Array.isArray(v) ? v[0] : v;
      };
      const verifies = (s: string) =>
        verifyWebhook({ secret: s, body, timestamp: header('x-dq-timestamp'), signature: header('x-dq-signature') }).ok;
      deliveries.push({
        path,
        at: Date.now(),
        body,
        attempt: header('x-dq-attempt'),
        jobId: header('x-dq-job-id'),
        topic: header('x-dq-topic'),
        verified: verifies(secret),
        verifiedBy: [secret, ...others].filter(verifies),
      });
      const n = (counts.get(path) ?? 0) + 1;
      counts.set(path, n);
      const [, mode] = path.split('/');
      const fail = /^fail-(\d+)$/.exec(mode ?? '');
      const hang = /^hang-(\d+)$/.exec(mode ?? '');
      if (mode === 'fail' || (fail && n <= Number(fail[1]))) {
        res.writeHead(500, { 'content-type': 'text/plain' }).end('receiver says no');
      } else if (hang && n <= Number(hang[1])) {
        hanging.add(res); // never answered; closed with the server
      } else {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    deliveries,
    of: (id) => deliveries.filter((d) => d.path.endsWith(`/${id}`)),
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
