/**
 * A local OTLP/HTTP receiver for tests of traces: keeps every export it is sent (its path, headers and
 * decoded JSON body) and answers 200. Stopped with `close()`.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OtlpExport {
  path: string;
  headers: IncomingHttpHeaders;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- OTLP JSON as the receiver decoded it
  body: any;
}

export interface OtlpReceiver {
  /** Its URL: what DQ_OTLP_ENDPOINT names (exports go to `<url>/v1/traces`). */
  url: string;
  /** Every export received, in order. */
  exports: OtlpExport[];
  /** Every span of every export, in order. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- OTLP JSON spans; each test reads the fields it checks
  spans(): any[];
  close(): Promise<void>;
}

/** Starts a receiver on a free loopback port. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const exports: OtlpExport[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      exports.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse(text) });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exports,
    spans: () =>
      exports.flatMap((e) =>
        (e.body.resourceSpans as { scopeSpans: { spans: unknown[] }[] }[]).flatMap((rs) =>
          rs.scopeSpans.flatMap((ss) => ss.spans),
        ),
      ),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
