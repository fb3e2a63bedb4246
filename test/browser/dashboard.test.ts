/**
 * The dashboard in a real headless Chromium (Debian's `chromium`, driven by playwright-core)
 * against the local stack: redis-server + serverless offline + a webhook receiver. Signs in,
 * watches a job added through the API appear in the counts, watches a job die, redrives it with
 * a click and sees it finish. Screenshots (desktop and phone) go to test-artifacts/.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { DelayQueueClient } from '../../lib/client';
import { PROJECT_ROOT, startOffline, type OfflineProcess } from '../support/offline';
import { startReceiver, type Receiver } from '../support/receiver';
import { startRedis, type RedisProcess } from '../support/redis';

const SECRET = 'browser-webhook-secret';
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = join(PROJECT_ROOT, 'test-artifacts');
const HOSTILE = '<img src=x onerror="window.__pwned=1">&amp;<script>window.__pwned=2</script>';

describe('the dashboard in headless Chromium', () => {
  let redisServer: RedisProcess;
  let offline: OfflineProcess;
  let receiver: Receiver;
  let context: BrowserContext;
  let page: Page;
  let client: DelayQueueClient;
  let profile: string;
  const problems: string[] = [];

  before(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `the browser test needs Chromium at ${CHROMIUM} (or set CHROMIUM_PATH). Install it:\n` +
          '    Debian/Ubuntu: sudo apt-get install -y chromium\n' +
          '    macOS:         brew install --cask chromium, then CHROMIUM_PATH=/Applications/Chromium.app/Contents/MacOS/Chromium',
      );
    }
    profile = mkdtempSync(join(tmpdir(), 'dq-chromium-'));
    [redisServer, receiver] = await Promise.all([startRedis(), startReceiver(SECRET)]);
    const launching = chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1280, height: 860 },
    });
    offline = await startOffline({ redisUrl: redisServer.url, env: { WEBHOOK_SECRET: SECRET } });
    context = await launching;
    page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      // the wrong token's 401 is logged by Chromium as a failed resource: expected
      if (message.type() === 'error' && !/status of 401/.test(message.text())) problems.push(`console: ${message.text()}`);
    });
    page.on('dialog', (dialog) => {
      problems.push(`unexpected dialog: ${dialog.message()}`);
      void dialog.dismiss();
    });
    client = new DelayQueueClient({ baseUrl: offline.baseUrl, token: offline.token });
    mkdirSync(ARTIFACTS, { recursive: true });
  });

  after(async () => {
    await context?.close();
    await offline?.stop();
    await receiver?.close();
    await redisServer?.stop();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  const text = (selector: string) => page.locator(selector).first().innerText({ timeout: 1000 }).catch(() => '');
  async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > end) {
        await page.screenshot({ path: join(ARTIFACTS, 'dashboard-failure.png'), fullPage: true }).catch(() => undefined);
        assert.fail(`timed out waiting for ${what}`);
      }
      await page.waitForTimeout(100);
    }
  }

  it('serves a static page with a strict CSP, asks for the token once, and shows live counts, a job, the dead list and a redrive', async () => {
    const res = await page.goto(`${offline.baseUrl}/dashboard`);
    assert.equal(res?.status(), 200);
    const headers = res!.headers();
    assert.match(headers['content-type'] ?? '', /^text\/html/);
    assert.equal(headers['x-content-type-options'], 'nosniff');
    assert.match(headers['content-security-policy'] ?? '', /default-src 'none'; script-src 'sha256-[^']+'/);
    assert.doesNotMatch(headers['content-security-policy'] ?? '', /unsafe-inline|unsafe-eval/);

    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-sign-in.png') });
    // a wrong token is refused and nothing is kept
    await page.fill('#token', 'not-the-token');
    await page.click('#login-form button[type=submit]');
    await until('the refusal', async () => /refused/.test(await text('#login-error')));
    assert.equal(await page.evaluate('sessionStorage.length'), 0);

    await page.fill('#token', offline.token);
    await page.click('#login-form button[type=submit]');
    await page.waitForSelector('#topics tr[data-topic="example"]');
    await page.selectOption('#interval', '2000');
    assert.equal(await page.evaluate('sessionStorage.length'), 1, 'the token is in sessionStorage');
    assert.equal(await page.evaluate('localStorage.length'), 0, 'and not in localStorage');
    assert.equal(await text('[data-testid="example-delayed"]'), '0');

    // a job added through the API appears in the counts; its hostile body is shown as text
    const waiting = await client.add({ topic: 'example', id: 'order-42', delay: 3600, body: { note: HOSTILE } });
    await client.add({ topic: 'example', id: 'order-43', delay: 7200, body: { orderId: 43 } });
    await until('example to show 2 delayed', async () => (await text('[data-testid="example-delayed"]')) === '2');
    assert.equal(await text('[data-testid="example-dead"]'), '0');
    await page.fill('#lookup-id', waiting.id);
    await page.selectOption('#lookup-topic', 'example');
    await page.click('#lookup-form button[type=submit]');
    await until('the looked-up job', async () => (await text('[data-testid="job-state"]')) === 'delayed');
    assert.match(await text('#lookup-result pre'), /<img src=x onerror=/);
    assert.equal(await page.evaluate('window.__pwned'), undefined);
    assert.equal(await page.locator('#lookup-result img, #lookup-result script').count(), 0);

    // a webhook whose receiver fails once: with one attempt it dies
    const id = `healed-${process.pid}`;
    await client.add({ topic: 'webhook', id, delay: 0, url: `${receiver.url}/fail-1/${id}`, maxAttempts: 1, body: { orderId: 7 } });
    await until('webhook to show 1 dead', async () => (await text('[data-testid="webhook-dead"]')) === '1');
    await page.click('#topics tr[data-topic="webhook"] .topic-link');
    const item = page.locator(`#dead-list li[data-id="${id}"]`);
    await until('the dead job in the list', async () => (await item.count()) === 1);
    assert.match(await item.locator('pre').innerText(), /HTTP 500/);
    await item.getByRole('button', { name: 'Details' }).click();
    await until('the dead job in the lookup', async () => (await text('[data-testid="job-state"]')) === 'dead');
    assert.equal(await text('[data-testid="job-attempts"]'), '1 of 1');
    assert.match(await text('[data-testid="job-error"]'), /HTTP 500/);
    await page.evaluate('window.scrollTo(0, 0)');
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-desktop.png'), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-phone.png'), fullPage: true });
    await page.setViewportSize({ width: 1280, height: 860 });
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-dark.png') });
    await page.emulateMedia({ colorScheme: 'light' });

    // redrive it with a click: it runs again, the receiver answers 200, the job is done
    await item.getByRole('button', { name: 'Redrive' }).click();
    await until('the toast', async () => /1 job redriven/.test(await text('#toast')));
    await until('the job to finish', async () => (await text('[data-testid="job-state"]')) === 'done');
    assert.equal(await text('[data-testid="job-attempts"]'), '1 of 1');
    await until('the dead count back to 0', async () => (await text('[data-testid="webhook-dead"]')) === '0');
    assert.equal(await page.locator('#dead-list li').count(), 0);
    assert.equal(receiver.of(id).length, 2);
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-after-redrive.png'), fullPage: true });

    // pausing stops the refresh: a new job does not show until resumed
    await page.click('[data-testid="pause"]');
    await client.add({ topic: 'example', id: 'order-44', delay: 3600 });
    await page.waitForTimeout(3000); // longer than the 2 s refresh interval
    assert.equal(await text('[data-testid="example-delayed"]'), '2');
    await page.click('[data-testid="pause"]');
    await until('example to show 3 delayed', async () => (await text('[data-testid="example-delayed"]')) === '3');

    // lateness: a due job the sweeper has not moved (faked: the live sweeper keeps up)
    await page.route('**/topics', (route) =>
      route.fulfill({
        status: 200,
        headers: { 'content-type': 'application/json', date: new Date().toUTCString() },
        body: JSON.stringify({ topics: [
          { topic: 'example', delayed: 40, ready: 12, running: 0, dead: 0, nextDueAt: new Date(Date.now() - 95_000).toISOString() },
          { topic: 'webhook', delayed: 0, ready: 0, running: 0, dead: 0, nextDueAt: null },
        ] }),
      }),
    );
    await until('the lateness', async () => /^1 min \d+ s late$/.test(await text('[data-testid="example-lateness"]')));
    assert.equal(await text('[data-testid="webhook-lateness"]'), '—');
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-late.png') });
    await page.unroute('**/topics');

    assert.deepEqual(problems, [], 'no script errors, CSP violations or dialogs');
  });
});
