/**
 * A stand-in for the Lambda service that can be killed: one Node process serving the Lambda
 * invoke API (POST /2015-03-31/functions/<name>/invocations, InvocationType Event -> 202, then the
 * function runs in the background) for the real handlers in functions/. Fault tests start one
 * host per function (sweeper, fan-out, webhook handler) and SIGKILL them at will.
 *
 * Environment: the Lambdas' own (REDIS_URL, DQ_CONFIG, DQ_LAMBDA_ENDPOINT, and the shortened
 * DQ_SWEEPER_* / DQ_FANOUT_MARK_MS timings, read by lib/core/queue-config.ts like any other setting), plus
 *   HOST_FUNCTIONS   comma-separated keys this host serves (sweeper,fanout,webhookHandler)
 *   HOST_TIMEOUT_MS  each invocation's time limit, seen through getRemainingTimeInMillis
 * Prints `READY <port>` on stdout when it listens.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { Context } from 'aws-lambda';
import { handler as fanout } from '../../../functions/fanout';
import { handler as webhookHandler } from '../../../functions/handlers/webhook';
import { handler as sweeper } from '../../../functions/sweeper';

const env = process.env;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the handlers take different event types, and a parameter typed unknown would accept none of them
const handlers: Record<string, (event: any, context: Context) => Promise<unknown>> = {
  sweeper,
  fanout,
  webhookHandler,
};
const served = new Set((env.HOST_FUNCTIONS ?? 'sweeper,fanout,webhookHandler').split(','));
const prefix = env.DQ_FUNCTION_PREFIX ?? '';
const timeoutMs = Number(env.HOST_TIMEOUT_MS ?? 30_000);

const server = createServer((req, res) => {
  const match = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/.exec(req.url ?? '');
  const name = match ? decodeURIComponent(match[1]!).slice(prefix.length) : '';
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const fn = handlers[name];
    if (!fn || !served.has(name)) {
      res.writeHead(404, { 'x-amzn-errortype': 'ResourceNotFoundException' }).end('{}');
      return;
    }
    const text = Buffer.concat(chunks).toString('utf8');
    const event = text ? JSON.parse(text) : {};
    const started = Date.now();
    const context = {
      awsRequestId: randomUUID(),
      getRemainingTimeInMillis: () => timeoutMs - (Date.now() - started),
    } as Context;
    if (req.headers['x-amz-invocation-type'] === 'Event') {
      res.writeHead(202).end();
      void fn(event, context).catch((error) => console.error('host: function threw', name, error));
      return;
    }
    fn(event, context).then(
      (result) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result ?? null)),
      (error) =>
        res
          .writeHead(200, { 'x-amz-function-error': 'Unhandled' })
          .end(JSON.stringify({ errorMessage: String(error) })),
    );
  });
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`READY ${(server.address() as { port: number }).port}\n`);
});
