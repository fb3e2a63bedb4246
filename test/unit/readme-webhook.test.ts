/**
 * The README's webhook verification snippet, run as it stands: its code block is read from the
 * README, compiled, and given requests signed the way the stack signs them, with one secret and
 * with two while a secret is rotated.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import ts from 'typescript';
import * as webhook from '../../lib/workers/webhook';

const README = readFileSync(join(__dirname, '../../README.md'), 'utf8');

/** The ```ts block after "this very snippet runs in `test/unit/readme-webhook.test.ts`", compiled: its checkWebhook. */
function readmeCheckWebhook(): (
  req: { headers: Record<string, string | string[] | undefined> },
  rawBody: string,
) => webhook.VerifyWebhookResult {
  const at = README.indexOf('this very snippet runs in\n`test/unit/readme-webhook.test.ts`');
  assert.ok(at >= 0, 'the README points to this test');
  const block = /```ts\n([\s\S]*?)```/.exec(README.slice(at));
  assert.ok(block, 'a ts code block follows');
  const js = ts.transpileModule(`${block[1]}\nexport { checkWebhook };`, {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
  }).outputText;
  const module = { exports: {} as Record<string, unknown> };
  const requireFromReadme = (spec: string) => {
    assert.equal(spec, './lib/workers/webhook', 'the snippet imports the webhook module from the repository root');
    return webhook;
  };
  new Function('require', 'module', 'exports', js)(requireFromReadme, module, module.exports);
  return module.exports.checkWebhook as ReturnType<typeof readmeCheckWebhook>;
}

describe("the README's webhook verification snippet", () => {
  const saved = process.env.WEBHOOK_SECRET;
  after(() => {
    if (saved === undefined) delete process.env.WEBHOOK_SECRET;
    else process.env.WEBHOOK_SECRET = saved;
  });
  const checkWebhook = readmeCheckWebhook();
  const body = '{"order":42}';
  const now = Math.floor(Date.now() / 1000);
  const request = (signature: string) => ({ headers: { 'x-dq-timestamp': String(now), 'x-dq-signature': signature } });

  it('verifies a request signed with its secret, and refuses another secret, a changed body and missing headers', () => {
    process.env.WEBHOOK_SECRET = 'partner-secret';
    assert.deepEqual(checkWebhook(request(webhook.signWebhook('partner-secret', now, body)), body), { ok: true });
    assert.deepEqual(checkWebhook(request(webhook.signWebhook('other', now, body)), body), {
      ok: false,
      reason: 'bad_signature',
    });
    assert.deepEqual(checkWebhook(request(webhook.signWebhook('partner-secret', now, body)), `${body} `), {
      ok: false,
      reason: 'bad_signature',
    });
    assert.deepEqual(checkWebhook({ headers: {} }, body), { ok: false, reason: 'missing_headers' });
  });

  it('while the secret is rotated, a receiver that knows only the old one and one that knows only the new one both verify', () => {
    const signature = webhook.signWebhook(['new-secret', 'old-secret'], now, body);
    for (const secret of ['old-secret', 'new-secret']) {
      process.env.WEBHOOK_SECRET = secret;
      assert.deepEqual(checkWebhook(request(signature), body), { ok: true }, secret);
    }
    process.env.WEBHOOK_SECRET = 'neither';
    assert.deepEqual(checkWebhook(request(signature), body), { ok: false, reason: 'bad_signature' });
  });
});
