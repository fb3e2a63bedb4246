/**
 * The dashboard in a real headless Chromium (Debian's `chromium`, driven by playwright-core)
 * against the local stack: redis-server + serverless offline + a webhook receiver. Signs in,
 * watches a job added through the API appear in the counts, watches a job die, redrives it with
 * a click and sees it finish. Then the per-topic start lateness, oldest ready age and last-hour
 * chart, live and from a faked GET /topics. Then the upcoming jobs, a group's jobs page by page,
 * a group cancel behind its confirmation, and a job's group and version, all against the live API; at 1400 px
 * wide every column of the upcoming table in view, long ids and groups too, and narrower the table scrolls in its box.
 * Then a topic's schedules page by page, an empty topic, an API error and hostile text in a schedule.
 * Then keys: a read key reads everything and has every change control disabled (a change refused
 * anyway shows the API's 403 and keeps the key), and a write key limited to one topic sees that
 * topic only and redrives. Then the Pause / Resume buttons of a topic and of a schedule, and the flow keys
 * card: a key of the flow topic partner (its state, paused and resumed), a read key's button off, a 403,
 * and only flow topics offered.
 * Screenshots (desktop and phone) go to test-artifacts/.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { chromium, type APIResponse, type BrowserContext, type Page, type Route } from 'playwright-core';
import { DelayQueueClient, type Job, type Schedule, type SchedulePage, type TopicStats } from '../../lib/client';
import { PROJECT_ROOT, startOffline, type OfflineProcess } from '../support/offline';
import { Contract } from '../support/openapi';
import { startReceiver, type Receiver } from '../support/receiver';
import { startRedis, type RedisProcess } from '../support/redis';

const SECRET = 'browser-webhook-secret';
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = join(PROJECT_ROOT, 'test-artifacts');
const HOSTILE = '<img src=x onerror="window.__pwned=1">&amp;<script>window.__pwned=2</script>';
const ACTIVE = ['delayed', 'ready', 'running'];

/** One page of GET /topics/{topic}/jobs or GET /topics/{topic}/groups/{group}. */
interface JobPage {
  jobs: Job[];
  next: string | null;
}

describe('the dashboard in headless Chromium', () => {
  let redisServer: RedisProcess;
  let offline: OfflineProcess;
  let receiver: Receiver;
  let traceSink: Server | undefined;
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
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      viewport: { width: 1280, height: 860 },
    });
    // traces on, to a sink that takes and drops them: a job's view shows its trace id
    traceSink = createServer((req, res) => req.resume().on('end', () => res.writeHead(200).end('{}')));
    await new Promise<void>((resolve) => traceSink!.listen(0, '127.0.0.1', resolve));
    const DQ_OTLP_ENDPOINT = `http://127.0.0.1:${(traceSink.address() as AddressInfo).port}`;
    offline = await startOffline({ redisUrl: redisServer.url, env: { WEBHOOK_SECRET: SECRET, DQ_OTLP_ENDPOINT } });
    context = await launching;
    page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      // the wrong key's 401 is logged by Chromium as a failed resource: expected
      if (message.type() === 'error' && !/status of 401/.test(message.text()))
        problems.push(`console: ${message.text()}`);
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
    await new Promise<void>((resolve) => (traceSink ? traceSink.close(() => resolve()) : resolve()));
    await redisServer?.stop();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  const text = (selector: string) =>
    page
      .locator(selector)
      .first()
      .innerText({ timeout: 1000 })
      .catch(() => '');
  async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > end) {
        await page
          .screenshot({ path: join(ARTIFACTS, 'dashboard-failure.png'), fullPage: true })
          .catch(() => undefined);
        assert.fail(`timed out waiting for ${what}`);
      }
      await page.waitForTimeout(100);
    }
  }

  it('serves a static page with a strict CSP, asks for the API key once, shows who is signed in, live counts, a job, the dead list and a redrive', async () => {
    const res = await page.goto(`${offline.baseUrl}/dashboard`);
    assert.equal(res?.status(), 200);
    const headers = res!.headers();
    assert.match(headers['content-type'] ?? '', /^text\/html/);
    assert.equal(headers['x-content-type-options'], 'nosniff');
    assert.match(headers['content-security-policy'] ?? '', /default-src 'none'; script-src 'sha256-[^']+'/);
    assert.doesNotMatch(headers['content-security-policy'] ?? '', /unsafe-inline|unsafe-eval/);

    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-sign-in.png') });
    assert.equal(await text('#login label'), 'API key');
    // a wrong key is refused and nothing is kept
    await page.fill('#api-key', 'not-the-key');
    await page.click('#login-form button[type=submit]');
    await until('the refusal', async () => (await text('#login-error')) === 'The key was refused. Enter it again.');
    assert.equal(await page.evaluate('sessionStorage.length'), 0);

    await page.fill('#api-key', offline.token);
    await page.click('#login-form button[type=submit]');
    await page.waitForSelector('#topics tr[data-topic="example"]');
    await page.selectOption('#interval', '2000');
    assert.equal(await text('[data-testid="whoami"]'), 'signed in as deployment (admin)', "the deployment's key");
    assert.equal(await text('[data-testid="signout"]'), 'Forget key');
    assert.equal(await page.evaluate('sessionStorage.length'), 1, 'the key is in sessionStorage');
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
    await client.add({
      topic: 'webhook',
      id,
      delay: 0,
      url: `${receiver.url}/fail-1/${id}`,
      maxAttempts: 1,
      body: { orderId: 7 },
    });
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
        body: JSON.stringify({
          topics: [
            {
              topic: 'example',
              delayed: 40,
              ready: 12,
              running: 0,
              dead: 0,
              nextDueAt: new Date(Date.now() - 95_000).toISOString(),
            },
            { topic: 'webhook', delayed: 0, ready: 0, running: 0, dead: 0, nextDueAt: null },
          ],
        }),
      }),
    );
    await until('the lateness', async () => /^1 min \d+ s late$/.test(await text('[data-testid="example-lateness"]')));
    assert.equal(await text('[data-testid="webhook-lateness"]'), '—');
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-late.png') });
    await page.unroute('**/topics');

    assert.deepEqual(problems, [], 'no script errors, CSP violations or dialogs');
  });

  /** What the page draws for `topic`'s last hour, read from the SVG. */
  async function chartOf(topic: string) {
    const chart = page.locator(`svg[data-testid="${topic}-chart"]`);
    const timeout = 2000; // the chart is drawn already when this is called
    return {
      label: await chart.getAttribute('aria-label', { timeout }),
      role: await chart.getAttribute('role', { timeout }),
      title: await chart.locator(':scope > title').textContent({ timeout }),
      markup: await chart.evaluate((node) => node.outerHTML, undefined, { timeout }),
      bars: await chart.locator(`rect[data-testid="${topic}-bar"]`).evaluateAll((rects) =>
        rects.map((r) => ({
          started: Number(r.getAttribute('data-started')),
          x: Number(r.getAttribute('x')),
          height: Number(r.getAttribute('height')),
        })),
      ),
      points: await chart.locator(`circle[data-testid="${topic}-p99-point"]`).evaluateAll((dots) =>
        dots.map((c) => ({
          minute: c.getAttribute('data-minute'),
          p99: Number(c.getAttribute('data-p99')),
          cy: Number(c.getAttribute('cy')),
        })),
      ),
      line: await chart
        .locator(`path[data-testid="${topic}-p99-line"]`)
        .getAttribute('d', { timeout: 1000 })
        .catch(() => null),
      maxStarted: await chart.locator(`text[data-testid="${topic}-max-started"]`).textContent({ timeout }),
      maxP99: await chart.locator(`text[data-testid="${topic}-max-p99"]`).textContent({ timeout }),
    };
  }
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  /**
   * Opens the page (signing in with the deployment's key unless the session's key is still there) and waits for
   * `topic`'s row; `fast`: refresh every 2 s.
   */
  async function openDashboard(topic: string, fast: boolean): Promise<void> {
    await page.goto(`${offline.baseUrl}/dashboard`);
    if (await page.locator('#login').isVisible()) {
      await page.fill('#api-key', offline.token);
      await page.click('#login-form button[type=submit]');
    }
    await page.waitForSelector(`#topics tr[data-topic="${topic}"]`);
    if (fast) await page.selectOption('#interval', '2000');
  }

  it('shows per topic how late attempts started (p50/p99/max over 5 min), the oldest ready age and a last-hour chart', async () => {
    await openDashboard('webhook', false);

    // live: a webhook job runs; the page shows what GET /topics says, formatted
    const id = `timed-${process.pid}`;
    await client.add({ topic: 'webhook', id, delay: 0, url: `${receiver.url}/ok/${id}`, maxAttempts: 1, body: {} });
    await until('the webhook job to finish', async () => (await client.get('webhook', id))?.state === 'done');
    let live: TopicStats | undefined;
    await until("the page to show the API's webhook starts", async () => {
      live = (await client.topics()).find((t) => t.topic === 'webhook');
      if (!live || live.lateness.started < 1) return false;
      const bars = await page
        .locator('rect[data-testid="webhook-bar"]')
        .evaluateAll((rects) => rects.map((r) => Number(r.getAttribute('data-started'))));
      return (
        bars.length === 60 &&
        sum(bars) === sum(live.lastHour.map((m) => m.started)) &&
        /\d/.test(await text('[data-testid="webhook-p50"]'))
      );
    });
    for (const key of ['p50', 'p99', 'max'])
      assert.match(await text(`[data-testid="webhook-${key}"]`), /^(\d+ ms|\d+(\.\d)? s|\d+ min \d+ s)$/, key);
    assert.equal(await text('[data-testid="webhook-oldest-ready"]'), '—', 'nothing is ready');
    const webhook = await chartOf('webhook');
    assert.equal(webhook.points.length, live!.lastHour.filter((m) => m.p99Ms !== null).length);
    assert.match(webhook.label ?? '', /^webhook, last hour: \d+ attempts? started, at most \d+ in a minute/);
    // example has only jobs due in an hour or more: nothing started, all zero and null
    for (const key of ['p50', 'p99', 'max', 'oldest-ready'])
      assert.equal(await text(`[data-testid="example-${key}"]`), '—', key);
    const idle = await chartOf('example');
    assert.equal(idle.bars.length, 60);
    assert.deepEqual(
      idle.bars.map((b) => b.height),
      Array(60).fill(0),
    );
    assert.deepEqual([idle.points.length, idle.line], [0, null]);
    assert.deepEqual(
      [idle.maxStarted, idle.maxP99, idle.label],
      ['0/min', 'p99 —', 'example, last hour: no attempts started.'],
    );
    assert.doesNotMatch(idle.markup, /NaN|Infinity|undefined/);
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-lateness-live.png') });

    // faked: a busy hour with gaps (a minute without starts has no p99), a topic that never ran, and
    // one whose p99 bin bound (up to 19 % high) is above the exact max: shown as the max
    const now = Math.floor(Date.now() / 60_000) * 60_000;
    // 0 at 0, 25, 30-34 and 50; 24 (the most) at 7 and 57
    const started = Array.from({ length: 60 }, (_, i) => (i >= 30 && i < 35 ? 0 : (i * 7) % 25));
    const busy: TopicStats['lastHour'] = started.map((n, i) => ({
      minute: new Date(now - (59 - i) * 60_000).toISOString(),
      started: n,
      p99Ms: n > 0 ? 50 + i * 20 : null,
    }));
    const topics: TopicStats[] = [
      {
        topic: 'example',
        flow: false,
        paused: false,
        delayed: 40,
        ready: 12,
        running: 3,
        dead: 0,
        expired: 0,
        nextDueAt: null,
        lateness: { windowSeconds: 300, started: 321, p50Ms: 12, p99Ms: 1480, maxMs: 95_000 },
        oldestReadyAgeMs: 7_200_000,
        lastHour: busy,
      },
      {
        topic: 'webhook',
        flow: false,
        paused: false,
        delayed: 0,
        ready: 0,
        running: 0,
        dead: 0,
        expired: 0,
        nextDueAt: null,
        lateness: { windowSeconds: 300, started: 0, p50Ms: null, p99Ms: null, maxMs: null },
        oldestReadyAgeMs: null,
        lastHour: busy.map((m) => ({ ...m, started: 0, p99Ms: null })),
      },
      {
        topic: 'burst',
        flow: false,
        paused: false,
        delayed: 0,
        ready: 1,
        running: 0,
        dead: 0,
        expired: 2,
        nextDueAt: null,
        lateness: { windowSeconds: 300, started: 3, p50Ms: 800, p99Ms: 2380, maxMs: 2100 },
        oldestReadyAgeMs: 0,
        lastHour: busy.map((m, i) => ({ ...m, started: i === 59 ? 3 : 0, p99Ms: i === 59 ? 2380 : null })),
      },
    ];
    const body = JSON.stringify({ topics });
    const headers = { 'content-type': 'application/json', date: new Date().toUTCString() };
    // the fake is what the API may answer
    new Contract().check({ method: 'GET', url: '/topics', status: 200, headers: new Headers(headers), text: body });
    await page.route('**/topics', (route) => route.fulfill({ status: 200, headers, body }));
    await until('the faked numbers', async () => (await text('[data-testid="example-p50"]')) === '12 ms');
    assert.deepEqual(
      await Promise.all(
        ['p50', 'p99', 'max', 'oldest-ready'].flatMap((key) => [
          text(`[data-testid="example-${key}"]`),
          text(`[data-testid="webhook-${key}"]`),
        ]),
      ),
      ['12 ms', '—', '1.5 s', '—', '1 min 35 s', '—', '2 h 0 min', '—'],
    );
    assert.deepEqual(
      await Promise.all(['p50', 'p99', 'max', 'oldest-ready'].map((key) => text(`[data-testid="burst-${key}"]`))),
      ['800 ms', '2.1 s', '2.1 s', '0 ms'],
    );
    assert.equal(await text('[data-testid="burst-expired"]'), '2 expired', 'expired jobs beside the dead ones');
    assert.equal(await page.locator('[data-testid="example-expired"]').count(), 0, 'none shown for none');

    const chart = await chartOf('example');
    assert.equal(chart.role, 'img');
    assert.deepEqual(
      chart.bars.map((b) => b.started),
      started,
      'one bar per minute, oldest first',
    );
    assert.ok(
      chart.bars.every((b, i) => i === 0 || b.x > chart.bars[i - 1]!.x),
      'left to right',
    );
    const tallest = Math.max(...chart.bars.map((b) => b.height));
    assert.ok(tallest >= 20, `the busiest minute's bar is tall (${tallest} px)`);
    for (const [i, bar] of chart.bars.entries())
      assert.ok(
        Math.abs(bar.height - (started[i]! / 24) * tallest) < 0.02,
        `bar ${i}: ${bar.height} px for ${started[i]} started`,
      );
    const timed = busy.filter((m) => m.p99Ms !== null);
    assert.deepEqual(
      chart.points.map((p) => [p.minute, p.p99]),
      timed.map((m) => [m.minute, m.p99Ms]),
      'a point per minute with a p99, none for the others',
    );
    assert.ok(
      chart.points.every((p, i) => i === 0 || p.cy < chart.points[i - 1]!.cy),
      'a higher p99 is drawn higher',
    );
    assert.equal(
      (chart.line ?? '').match(/M/g)?.length,
      4,
      'the line breaks at each run of minutes without a p99 (0, 25, 30-34, 50)',
    );
    assert.deepEqual([chart.maxStarted, chart.maxP99], ['24/min', 'p99 1.2 s']);
    assert.match(
      chart.label ?? '',
      new RegExp(
        `^example, last hour: ${sum(started)} attempts started, at most 24 in a minute \\(.+\\); per-minute start lateness p99 at most 1\\.2 s\\.$`,
      ),
    );
    assert.equal(chart.title, chart.label);
    assert.doesNotMatch(chart.markup, /NaN|Infinity|undefined/);

    const lone = await chartOf('burst');
    assert.deepEqual(
      lone.bars.map((b, i) => [i, b.height > 0]).filter(([, drawn]) => drawn),
      [[59, true]],
      'one bar, the current minute',
    );
    assert.deepEqual(
      [lone.points.length, lone.maxStarted, lone.maxP99],
      [1, '3/min', 'p99 2.4 s'],
      'a lone minute is a point',
    );

    const never = await chartOf('webhook');
    assert.deepEqual(
      [never.bars.length, Math.max(...never.bars.map((b) => b.height)), never.points.length, never.line],
      [60, 0, 0, null],
    );
    assert.doesNotMatch(never.markup, /NaN|Infinity|undefined/);

    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-lateness.png') });
    await page
      .locator('#topics')
      .screenshot({ path: join(ARTIFACTS, 'dashboard-lateness-topics.png'), scale: 'device' });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-lateness-phone.png'), fullPage: true });
    await page.setViewportSize({ width: 1280, height: 860 });
    await page.unroute('**/topics');

    assert.deepEqual(problems, [], 'no script errors, CSP violations or dialogs');
  });

  /** One request to the API with the deployment's key; the parsed JSON answer. */
  async function call<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    const res = await fetch(offline.baseUrl + path, {
      method,
      headers: {
        authorization: `Bearer ${offline.token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: (await res.json()) as T };
  }
  async function addJob(job: Record<string, unknown>): Promise<Job> {
    const res = await call<{ job: Job }>('POST', '/jobs', { topic: 'example', ...job });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.job;
  }
  async function jobOf(id: string): Promise<Job> {
    const res = await call<{ job: Job }>('GET', `/jobs/example/${encodeURIComponent(id)}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.job;
  }
  /** Every job of a group as the API lists them, following `next`. */
  async function groupOf(group: string): Promise<Job[]> {
    const jobs: Job[] = [];
    let cursor: string | null = null;
    do {
      const res: { status: number; body: JobPage } = await call<JobPage>(
        'GET',
        `/topics/example/groups/${encodeURIComponent(group)}?limit=50${cursor !== null ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      assert.equal(res.status, 200, JSON.stringify(res.body));
      jobs.push(...res.body.jobs);
      cursor = res.body.next;
    } while (cursor !== null);
    return jobs;
  }
  /** The rows of a table of the page: each row's data-id and data-run-at, and its cells' text. */
  const rowsOf = (table: string) =>
    page.locator(`#${table} tbody tr`).evaluateAll((trs) =>
      trs.map((tr) => ({
        id: tr.getAttribute('data-id'),
        runAt: tr.getAttribute('data-run-at'),
        cells: [...tr.querySelectorAll('td')].map((td) => (td.textContent ?? '').trim()),
      })),
    );
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

  it("lists the next 50 upcoming jobs with their groups, shows a group page by page, cancels it only after a confirmation, and shows a job's group and version", async () => {
    await openDashboard('example', true);

    // upcoming: jobs added out of order are listed by due time, with their group (these are due
    // before anything the earlier tests left in example, so they are the first rows)
    const sfx = String(process.pid);
    const [g1, g2, fill, group] = [`g1-${sfx}`, `g2-${sfx}`, `fill-${sfx}`, `grp-${sfx}`];
    const up = { a: `up-a-${sfx}`, b: `up-b-${sfx}`, c: `up-c-${sfx}`, d: `up-d-${sfx}` };
    await addJob({ id: up.c, delay: 1500, group: g1, maxAttempts: 3 });
    await addJob({ id: up.a, delay: 600, group: g1, maxAttempts: 4 });
    await addJob({ id: up.d, delay: 1800, maxAttempts: 3 });
    const callback = { url: 'https://hooks.example/job-ended', on: ['done'] };
    // tracing on: the add's answer names the trace of its request (the view below reads it back from the record)
    const addedB = await addJob({ id: up.b, delay: 900, group: g2, maxAttempts: 3, priority: 5, callback });
    assert.match(addedB.traceId ?? '', /^[0-9a-f]{32}$/, `the add was traced: ${JSON.stringify(addedB)}`);
    await page.selectOption('#upcoming-topic', 'example');
    await until(
      'the four jobs in the upcoming list',
      async () => (await rowsOf('upcoming')).filter((r) => Object.values(up).includes(r.id ?? '')).length === 4,
    );
    const rows = await rowsOf('upcoming');
    assert.deepEqual(
      rows.slice(0, 4).map((r) => [r.id, r.cells[1], r.cells[2], r.cells[3]]),
      [
        [up.a, up.a, g1, '0 of 4'],
        [up.b, up.b, g2, '0 of 3'],
        [up.c, up.c, g1, '0 of 3'],
        [up.d, up.d, '—', '0 of 3'],
      ],
    );
    assert.match(rows[0]!.cells[0]!, /\d:\d\d.*in \d+ min \d+ s$/, 'the due time, and how far off');
    const listed = await call<JobPage>('GET', '/topics/example/jobs?state=delayed&limit=50');
    assert.deepEqual(
      rows.map((r) => [r.id, r.runAt]),
      listed.body.jobs.map((j) => [j.id, j.runAt]),
      'what the API lists, in its order',
    );
    assert.ok(
      rows.every((r, i) => i === 0 || Date.parse(r.runAt!) >= Date.parse(rows[i - 1]!.runAt!)),
      'soonest first',
    );

    // at most 50: 60 more (one group, due later) fill the list, and the rest is counted
    const batch = await call<{ results: { status: number }[] }>('POST', '/jobs/batch', {
      jobs: Array.from({ length: 60 }, (_, i) => ({
        topic: 'example',
        id: `${fill}-${String(i).padStart(2, '0')}`,
        delay: 2400 + i,
        group: fill,
      })),
    });
    assert.equal(batch.status, 200);
    assert.deepEqual(
      batch.body.results.map((r) => r.status),
      Array(60).fill(201),
    );
    await until('50 rows, the fillers among them', async () => {
      const now = await rowsOf('upcoming');
      return (
        now.length === 50 &&
        now.some((r) => r.id === `${fill}-00`) &&
        /^The next 50 delayed jobs of example \(\d+ in all\)/.test(await text('#upcoming-summary'))
      );
    });
    const full = await call<JobPage>('GET', '/topics/example/jobs?state=delayed&limit=50');
    assert.notEqual(full.body.next, null, 'the API has more than 50');
    await until('the page to list what the API lists', async () =>
      same(
        (await rowsOf('upcoming')).map((r) => r.id),
        full.body.jobs.map((j) => j.id),
      ),
    );
    await page.locator('#upcoming-card').screenshot({ path: join(ARTIFACTS, 'dashboard-upcoming.png') });

    // a group of 60, page by page: its link in the upcoming list opens it, "Show more" reads on
    await page.locator(`#upcoming tbody tr[data-id="${fill}-00"] [data-testid="upcoming-group"] button`).click();
    await until(
      'the first page of the group',
      async () => (await rowsOf('group-jobs')).length === 50 && (await page.locator('#group-more').isVisible()),
    );
    assert.match(
      await text('#group-summary'),
      new RegExp(`^The first 50 jobs in group ${fill} of example: 50 delayed`),
    );
    assert.equal(await page.inputValue('#group-name'), fill);
    await page.click('#group-more');
    await until('the whole group', async () => (await rowsOf('group-jobs')).length === 60);
    assert.equal(await page.locator('#group-more').isVisible(), false);
    const fillJobs = await groupOf(fill);
    assert.deepEqual(
      (await rowsOf('group-jobs')).map((r) => [r.id, r.cells[1]]),
      fillJobs.map((j) => [j.id, j.state]),
      "the API's jobs, in its order, with their states",
    );
    assert.equal(await text('#group-summary'), `60 jobs in group ${fill} of example: 60 delayed.`);

    // a group with three delayed jobs and one done, looked up by name
    const members = [`${group}-1`, `${group}-2`, `${group}-3`];
    for (const [i, id] of members.entries()) await addJob({ id, delay: 3000 + i * 100, group });
    const ran = `${group}-ran`;
    await addJob({ id: ran, delay: 0, group });
    await until('the group job due now to run', async () => (await jobOf(ran)).state === 'done');
    await page.selectOption('#group-topic', 'example');
    await page.fill('#group-name', group);
    await page.click('#group-form button[type=submit]');
    await until("the group's four jobs", async () => (await rowsOf('group-jobs')).length === 4);
    const before = await groupOf(group);
    assert.deepEqual(before.map((j) => j.id).sort(), [...members, ran].sort());
    assert.deepEqual(
      (await rowsOf('group-jobs')).map((r) => [r.id, r.cells[1], r.cells[3]]),
      before.map((j) => [j.id, j.state, `${j.attempts} of ${j.maxAttempts}`]),
    );
    assert.match(
      await text('#group-summary'),
      new RegExp(`^4 jobs in group ${group} of example: (3 delayed, 1 done|1 done, 3 delayed)\\.$`),
    );
    const states = async () => Promise.all(members.map(async (id) => (await jobOf(id)).state));

    // "Cancel group" alone cancels nothing: it asks, "Keep them" backs out
    await page.click('#group-cancel');
    assert.equal(await text('#group-confirm'), 'Confirm cancel 3 jobs');
    assert.equal(await page.locator('#group-cancel').isVisible(), false);
    await page.waitForTimeout(1000);
    assert.deepEqual(await states(), ['delayed', 'delayed', 'delayed'], 'nothing cancelled before the confirmation');
    await page.click('#group-keep');
    assert.deepEqual(
      [await page.locator('#group-confirm').isVisible(), await page.locator('#group-cancel').isVisible()],
      [false, true],
    );
    // nor does a double click on it: the second click lands on "Keep them" or a confirm not yet enabled
    await page.dblclick('#group-cancel');
    await page.waitForTimeout(1000);
    assert.deepEqual(await states(), ['delayed', 'delayed', 'delayed'], 'nothing cancelled by a double click');
    if (await page.locator('#group-keep').isVisible()) await page.click('#group-keep');

    // confirmed: the API cancels the three, the page shows its answer and the new states
    await page.click('#group-cancel');
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-group-confirm.png') });
    const answering = page.waitForResponse(
      (r) => r.request().method() === 'DELETE' && r.url().endsWith(`/topics/example/groups/${group}`),
    );
    await page.click('#group-confirm');
    const answer = await answering;
    assert.equal(answer.status(), 200);
    assert.deepEqual(await answer.json(), { cancelled: 3, running: 0 });
    await until('the outcome', async () => (await text('[data-testid="group-cancelled"]')) === '3');
    assert.equal(await text('[data-testid="group-running"]'), '0');
    assert.deepEqual(await states(), ['cancelled', 'cancelled', 'cancelled'], 'the API has them cancelled');
    assert.equal((await jobOf(ran)).state, 'done', 'a finished job stays as it was');
    assert.equal((await jobOf(up.a)).state, 'delayed', 'other groups are untouched');
    const after = await groupOf(group);
    await until('the page to show the states the API lists', async () =>
      same(
        (await rowsOf('group-jobs')).map((r) => [r.id, r.cells[1]]),
        after.map((j) => [j.id, j.state]),
      ),
    );
    assert.equal(
      await page.isDisabled('#group-cancel'),
      !after.some((j) => ACTIVE.includes(j.state)),
      'nothing left to cancel: the button is off',
    );
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-group-cancelled.png'), fullPage: true });

    // running attempts are shown with what happens to them (faked: no example job runs that long)
    const fake = JSON.stringify({ cancelled: 1, running: 2 });
    const fakeHeaders = { 'content-type': 'application/json', date: new Date().toUTCString() };
    new Contract().check({
      method: 'DELETE',
      url: `/topics/example/groups/${g1}`,
      status: 200,
      headers: new Headers(fakeHeaders),
      text: fake,
    }); // the fake is what the API may answer
    await page.route(`**/topics/example/groups/${g1}`, (route) =>
      route.request().method() === 'DELETE'
        ? route.fulfill({ status: 200, headers: fakeHeaders, body: fake })
        : route.fallback(),
    );
    await page.fill('#group-name', g1);
    await page.click('#group-form button[type=submit]');
    await until('group g1', async () => (await rowsOf('group-jobs')).length === 2);
    await page.click('#group-cancel');
    assert.equal(await text('#group-confirm'), 'Confirm cancel 2 jobs');
    await page.click('#group-confirm');
    await until('the faked outcome', async () => (await text('[data-testid="group-running"]')) === '2');
    assert.match(
      await text('#group-outcome'),
      /1 cancelled, 2 running \(they finish the attempt they are in, then stay cancelled: no retry\)/,
    );
    await page.unroute(`**/topics/example/groups/${g1}`);

    // the job view: group (a link to it) and version, which grows with a change
    await page.selectOption('#lookup-topic', 'example');
    await page.fill('#lookup-id', up.a);
    await page.click('#lookup-form button[type=submit]');
    await until('the job', async () => (await text('[data-testid="job-state"]')) === 'delayed');
    const v1 = (await jobOf(up.a)).version;
    assert.equal(await text('[data-testid="job-group"]'), g1);
    assert.equal(await text('[data-testid="job-version"]'), String(v1));
    const put = await call<{ job: Job }>('PUT', `/jobs/example/${up.a}`, { delay: 650, group: g1, maxAttempts: 4 });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.ok(put.body.job.version > v1, `the version grew (${v1} -> ${put.body.job.version})`);
    await until(
      'the new version',
      async () => (await text('[data-testid="job-version"]')) === String(put.body.job.version),
    );
    assert.equal(await text('[data-testid="job-group"]'), g1);
    await page.fill('#lookup-id', members[0]!);
    await page.click('#lookup-form button[type=submit]');
    await until('the cancelled job', async () => (await text('[data-testid="job-state"]')) === 'cancelled');
    assert.deepEqual(
      [await text('[data-testid="job-group"]'), await text('[data-testid="job-version"]')],
      [group, String((await jobOf(members[0]!)).version)],
    );
    await page.fill('#lookup-id', up.d);
    await page.click('#lookup-form button[type=submit]');
    await until('the job without a group', async () => (await text('[data-testid="job-group"]')) === 'none');
    assert.equal(await text('[data-testid="job-version"]'), String((await jobOf(up.d)).version));
    assert.equal(await page.locator('[data-testid="job-priority"]').count(), 0, 'priority 0: no line');
    assert.equal(await page.locator('[data-testid="job-callback"]').count(), 0, 'no callback: no line');
    // a keyed job: its dedupe key, the part of its id before ::
    const keyed = await addJob({ delay: 3600, dedupe: { key: `order-${sfx}` } });
    assert.ok(keyed.id.startsWith(`order-${sfx}::`), keyed.id);
    await page.fill('#lookup-id', keyed.id);
    await page.click('#lookup-form button[type=submit]');
    await until('the keyed job', async () => (await page.locator('[data-testid="job-keyed-key"]').count()) === 1);
    assert.equal(await text('[data-testid="job-keyed-key"]'), `order-${sfx}`);
    // its group link opens the group
    await page.fill('#lookup-id', up.b);
    await page.click('#lookup-form button[type=submit]');
    await until('job b', async () => (await text('[data-testid="job-group"]')) === g2);
    assert.equal(await text('[data-testid="job-priority"]'), '5', 'its priority, not 0');
    // its callback: the URL alone went to the webhook topic
    assert.equal(await text('[data-testid="job-callback"]'), 'webhook on done to https://hooks.example/job-ended');
    // tracing on: the job keeps its add's trace, and its view shows it
    const jobB = await jobOf(up.b);
    const traceId = jobB.traceId;
    assert.equal(traceId, addedB.traceId, `the record kept the add's trace: ${JSON.stringify(jobB)}`);
    await until('the trace line', async () => (await text('[data-testid="job-trace"]')) === traceId);
    assert.equal(await page.locator('[data-testid="job-keyed-key"]').count(), 0, 'no :: in its id, no key');
    await page.click('[data-testid="job-group"]');
    await until('group g2', async () =>
      same(
        (await rowsOf('group-jobs')).map((r) => r.id),
        [up.b],
      ),
    );
    assert.equal(await page.inputValue('#group-name'), g2);

    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-groups-phone.png'), fullPage: true });
    await page.setViewportSize({ width: 1280, height: 860 });
    assert.deepEqual(problems, [], 'no script errors, CSP violations or dialogs');
  });

  /**
   * A page function (as source): whether `node` is drawn whole in the viewport and in every box around it that clips
   * (overflow other than visible), so not cut off nor scrolled out of its box.
   */
  const WHOLE_IN_VIEW = `(node) => {
    const r = node.getBoundingClientRect();
    if (r.width === 0 || r.left < 0 || r.right > document.documentElement.clientWidth + 0.5) return false;
    for (let a = node.parentElement; a && a !== document.body; a = a.parentElement) {
      if (getComputedStyle(a).overflowX === 'visible') continue;
      const c = a.getBoundingClientRect();
      const left = c.left + a.clientLeft;
      if (r.left < left - 0.5 || r.right > left + a.clientWidth + 0.5) return false;
    }
    return true;
  }`;
  /**
   * Where the upcoming jobs table draws each column's header and the group column's cells: for each, whether it
   * is whole in view (WHOLE_IN_VIEW), and whether the table's box scrolls; `scrollLeft` first scrolls that box.
   */
  const upcomingLayout = (scrollLeft = 0) =>
    page.evaluate(`(() => {
      const table = document.getElementById('upcoming');
      const box = table.parentElement;
      box.scrollLeft = ${scrollLeft};
      const shown = ${WHOLE_IN_VIEW};
      return {
        headers: [...table.tHead.rows[0].cells].map((th) => [th.textContent, shown(th)]),
        groups: [...table.tBodies[0].rows].map((tr) => {
          const cell = tr.querySelector('[data-testid="upcoming-group"]');
          return [tr.dataset.id, shown(cell) && shown(cell.firstElementChild)];
        }),
        overflowX: getComputedStyle(box).overflowX,
        scrolls: box.scrollWidth > box.clientWidth + 0.5,
        boxInCard: box.getBoundingClientRect().right <= document.getElementById('upcoming-card').getBoundingClientRect().right + 0.5,
      };
    })()`) as Promise<{
      headers: [string, boolean][];
      groups: [string, boolean][];
      overflowX: string;
      scrolls: boolean;
      boxInCard: boolean;
    }>;

  it('at 1400 px wide shows every column of the upcoming jobs table, the group column whole; narrower, the table scrolls inside its box', async () => {
    await openDashboard('example', true);
    // ids and groups as they come: a UUID (an id left out), a tenant-scoped group, dotted and colon-separated names
    const sfx = String(process.pid);
    const groups = [`tenant:acme-industries.eu-west-1:invoices-${sfx}`, `reminders.customer-0042.2025-06-${sfx}`];
    const ids = [
      (await addJob({ delay: 420, group: groups[0] })).id,
      (await addJob({ id: `invoice:acme-industries:2025-06-30:${sfx}`, delay: 430, group: groups[0] })).id,
      (await addJob({ id: `reminder.customer-0042.renewal-notice.${sfx}`, delay: 440, group: groups[1] })).id,
    ];
    await page.selectOption('#upcoming-topic', 'example');
    await until(
      'the three jobs in the upcoming list',
      async () => (await rowsOf('upcoming')).filter((r) => ids.includes(r.id ?? '')).length === 3,
    );

    await page.setViewportSize({ width: 1400, height: 900 });
    try {
      const wide = await upcomingLayout();
      assert.deepEqual(
        wide.headers,
        [
          ['Due', true],
          ['Id', true],
          ['Group', true],
          ['Attempts', true],
        ],
        'every header whole in view at 1400 px',
      );
      assert.deepEqual(
        wide.groups.filter(([, whole]) => !whole),
        [],
        'every group cell whole in view at 1400 px',
      );
      assert.equal(wide.scrolls, false, 'nothing to scroll to at 1400 px');
      await page.locator('#upcoming-card').screenshot({ path: join(ARTIFACTS, 'dashboard-upcoming-1400.png') });

      // narrower, two columns still (above 860 px): the table scrolls inside its box, whole once scrolled
      await page.setViewportSize({ width: 900, height: 900 });
      const narrow = await upcomingLayout();
      assert.equal(narrow.boxInCard, true, 'the table box stays in its card');
      if (narrow.scrolls) {
        assert.match(narrow.overflowX, /^(auto|scroll)$/);
        const scrolled = await upcomingLayout(100_000);
        assert.deepEqual(
          scrolled.headers.slice(2),
          [
            ['Group', true],
            ['Attempts', true],
          ],
          'scrolled right, the last columns whole',
        );
      } else {
        assert.deepEqual(
          narrow.headers.filter(([, whole]) => !whole),
          [],
        );
      }
      await page.locator('#upcoming-card').screenshot({ path: join(ARTIFACTS, 'dashboard-upcoming-900.png') });
    } finally {
      await page.setViewportSize({ width: 1280, height: 860 });
    }
    assert.deepEqual(problems, [], 'no script errors, CSP violations or dialogs');
  });

  it("shows a job's attempt history in its view: a job that failed once and then was done has both attempts, their outcomes and the error, in view next to its attempts and last error", async () => {
    await openDashboard('webhook', true);
    // a webhook whose receiver fails once: the first attempt fails (HTTP 500), the retry a second later is done
    const id = `history-${process.pid}`;
    await client.add({
      topic: 'webhook',
      id,
      delay: 0,
      url: `${receiver.url}/fail-1/${id}`,
      maxAttempts: 3,
      backoff: { type: 'fixed', delay: 1 },
      expireAfter: 3600, // far off: both attempts start; the view shows when it would expire
      body: { orderId: 9 },
    });
    await until('the job done on its second attempt', async () => (await client.get('webhook', id))?.state === 'done');
    const job = (await client.get('webhook', id))!;
    assert.deepEqual(
      job.attemptHistory.map((a) => [a.attempt, a.outcome]),
      [
        [1, 'failed'],
        [2, 'done'],
      ],
      'the API has both attempts',
    );

    await page.selectOption('#lookup-topic', 'webhook');
    await page.fill('#lookup-id', id);
    await page.click('#lookup-form button[type=submit]');
    await until('the job in the lookup', async () => (await text('[data-testid="job-state"]')) === 'done');
    assert.equal(await text('[data-testid="job-attempts"]'), '2 of 3');
    assert.match(await text('[data-testid="job-error"]'), /HTTP 500/, 'the last error, from the failed attempt');
    assert.ok(job.expiresAt, 'the API has its expiry');
    assert.equal(
      await page.locator('[data-testid="job-expires"] time').getAttribute('datetime'),
      job.expiresAt,
      'the view shows when the job would expire',
    );
    const rows = await page.locator('[data-testid="job-history-row"]').evaluateAll((trs) =>
      trs.map((tr) => ({
        outcome: tr.getAttribute('data-outcome'),
        cells: [...tr.querySelectorAll('td')].map((td) => (td.textContent ?? '').trim()),
      })),
    );
    assert.deepEqual(
      rows.map((r) => [r.outcome, r.cells[0], r.cells[1]]),
      [
        ['failed', '1', 'failed'],
        ['done', '2', 'done'],
      ],
      'both attempts, oldest first, with their outcomes',
    );
    assert.match(rows[0]!.cells.at(-1)!, /HTTP 500/, "the failed attempt's error");
    assert.equal(rows[1]!.cells.at(-1), '—', 'none for the done one');
    assert.ok(
      rows.every((r) => /^\d/.test(r.cells[3]!) && /^\d/.test(r.cells[4]!)),
      `how long each took and how late it started: ${JSON.stringify(rows)}`,
    );

    // no cell of the history is cut off: on a desktop all are in view, on a phone its box scrolls sideways to each
    /** The history's cells (index: text) not whole in view (WHOLE_IN_VIEW) with its box scrolled to `scrollLeft`. */
    const cut = (scrollLeft: number) =>
      page.evaluate(`(() => {
        const table = document.querySelector('[data-testid="job-history"]');
        table.parentElement.scrollLeft = ${scrollLeft};
        const shown = ${WHOLE_IN_VIEW};
        return [...table.querySelectorAll('th, td')].map((c, i) => shown(c) ? null : i + ': ' + c.textContent).filter((c) => c !== null);
      })()`) as Promise<string[]>;
    for (const width of [1280, 1400]) {
      await page.setViewportSize({ width, height: 860 });
      assert.deepEqual(await cut(0), [], `every history cell whole in view at ${width} px`);
    }
    await page.setViewportSize({ width: 390, height: 844 });
    const [left, right] = [await cut(0), await cut(100_000)];
    assert.deepEqual(
      left.filter((c) => right.includes(c)),
      [],
      'at 390 px each history cell whole in view with its box scrolled to one end or the other',
    );
    await page.locator('#lookup-card').screenshot({ path: join(ARTIFACTS, 'dashboard-job-history-phone.png') });
    await page.setViewportSize({ width: 1280, height: 860 });
    const labels = await page.locator('#lookup-result dt').allInnerTexts();
    assert.deepEqual(
      labels.slice(0, 4),
      ['State', 'Attempts', 'Last error', 'History'],
      'state, attempts, last error and the attempts one by one come first',
    );
    await page.locator('#lookup-card').screenshot({ path: join(ARTIFACTS, 'dashboard-job-history.png') });
    assert.deepEqual(problems, [], 'no script errors, CSP violations or dialogs');
  });

  async function putSchedule(id: string, schedule: Record<string, unknown>, status: number): Promise<Schedule> {
    const res = await call<{ schedule: Schedule }>('PUT', `/schedules/example/${id}`, schedule);
    assert.equal(res.status, status, JSON.stringify(res.body));
    return res.body.schedule;
  }
  /** Every schedule of example as the API lists them, following `next`. */
  async function schedulesOf(): Promise<Schedule[]> {
    const schedules: Schedule[] = [];
    let cursor: string | null = null;
    do {
      const res: { status: number; body: SchedulePage } = await call<SchedulePage>(
        'GET',
        `/schedules?topic=example&limit=100${cursor !== null ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      assert.equal(res.status, 200, JSON.stringify(res.body));
      schedules.push(...res.body.schedules);
      cursor = res.body.next;
    } while (cursor !== null);
    return schedules;
  }
  /**
   * The rows of the schedules table: id, first next run, the next runs and last run shown (datetime), and each cell's
   * text.
   */
  const scheduleRows = () =>
    page.locator('#schedules tbody tr').evaluateAll((trs) =>
      trs.map((tr) => ({
        id: tr.getAttribute('data-id'),
        nextRun: tr.getAttribute('data-next-run'),
        next: [...tr.querySelectorAll('[data-testid="schedule-next"] time')].map((t) => t.getAttribute('datetime')),
        last: tr.querySelector('[data-testid="schedule-last"] time')?.getAttribute('datetime') ?? null,
        cells: [...tr.querySelectorAll('td')].map((td) => (td.textContent ?? '').trim()),
      })),
    );
  /**
   * What the schedules table should show for `s`: id, recurrence, first 3 next runs, last run, paused, pending
   * occurrence, its Pause / Resume button.
   */
  const expectedRow = (s: Schedule) => ({
    id: s.id,
    nextRun: s.nextRuns[0] ?? null,
    next: s.nextRuns.slice(0, 3),
    last: s.lastRunAt,
    cells: [
      s.id,
      s.every !== undefined ? `every ${s.every} s` : `${s.cron} (${s.timezone})`,
      s.paused ? 'none while paused' : undefined,
      s.lastRunAt === null ? 'never' : undefined,
      s.paused ? 'yes' : 'no',
      s.pending?.id ?? '—',
      s.paused ? 'Resume' : 'Pause',
    ],
  });
  /** A row's cells with those whose text holds a time ("in 3 h 12 min") left out, as expectedRow leaves them. */
  const timeless = (rows: Awaited<ReturnType<typeof scheduleRows>>, expected: ReturnType<typeof expectedRow>[]) =>
    rows.map((r, i) => ({ ...r, cells: r.cells.map((c, j) => (expected[i]?.cells[j] === undefined ? undefined : c)) }));

  it("lists a topic's schedules (recurrence, next runs, last run, paused, pending occurrence) page by page, an empty topic and an API error, and shows hostile text as text", async () => {
    await openDashboard('example', true);

    // a cron schedule in a time zone, an `every` one, and a paused one that ran once first
    const sfx = String(process.pid);
    const ids = { cron: `s-a-cron-${sfx}`, every: `s-b-every-${sfx}`, paused: `s-c-paused-${sfx}` };
    await putSchedule(ids.cron, { cron: '30 9 * * 1-5', timezone: 'America/New_York', body: { note: HOSTILE } }, 201);
    await putSchedule(ids.every, { every: 7200 }, 201);
    await putSchedule(ids.paused, { every: 1 }, 201);
    await until(
      'the every-second schedule to run once',
      async () => (await client.getSchedule('example', ids.paused))?.lastRunAt != null,
    );
    assert.equal((await putSchedule(ids.paused, { every: 1, paused: true }, 200)).paused, true);
    // an occurrence already due when it was paused runs as it was: wait until it is handed over
    await until(
      'the paused schedule to have nothing pending',
      async () => (await client.getSchedule('example', ids.paused))?.pending === null,
    );

    await page.selectOption('#schedules-topic', 'example');
    let listed = await schedulesOf();
    assert.deepEqual(
      listed.map((s) => s.id),
      Object.values(ids),
      'nothing else has schedules in example',
    );
    await until('the three schedules as the API lists them', async () => {
      const expected = listed.map(expectedRow);
      return same(timeless(await scheduleRows(), expected), expected);
    });
    const rows = await scheduleRows();
    assert.deepEqual(
      rows.map((r) => [r.cells[1], r.cells[4]]),
      [
        ['30 9 * * 1-5 (America/New_York)', 'no'],
        ['every 7200 s', 'no'],
        ['every 1 s', 'yes'],
      ],
    );
    assert.deepEqual(
      rows.map((r) => r.next.length),
      [3, 3, 0],
      'the first three next runs; none while paused',
    );
    assert.match(rows[0]!.cells[2]!, /\(in \d+ (s|min|h|days)/, 'the next run, and how far off');
    assert.match(rows[2]!.cells[3]!, /\((now|\d.* ago)\)$/, 'the paused one ran, and how long ago');
    assert.equal(await text('#schedules-summary'), '3 schedules in example, by id.');
    assert.equal(await page.locator('#schedules-more').isVisible(), false);
    await page.locator('#schedules-card').screenshot({ path: join(ARTIFACTS, 'dashboard-schedules.png') });

    // the pending occurrence opens the job (its hostile body shown as text)
    await page.locator(`#schedules tbody tr[data-id="${ids.cron}"] [data-testid="schedule-pending"] button`).click();
    await until('the occurrence in the lookup', async () => (await text('[data-testid="job-state"]')) === 'delayed');
    assert.equal(await text('#lookup-result p code'), `example / ${listed[0]!.pending!.id}`);
    assert.match(await text('#lookup-result pre'), /<img src=x onerror=/);

    // 50 a page: 50 more (paused, so no jobs) and "Show more" reads on
    const fillers = Array.from({ length: 50 }, (_, i) => `s-d-fill-${sfx}-${String(i).padStart(2, '0')}`);
    for (let i = 0; i < fillers.length; i += 10)
      await Promise.all(fillers.slice(i, i + 10).map((id) => putSchedule(id, { every: 60, paused: true }, 201)));
    await until(
      'the first page',
      async () => (await scheduleRows()).length === 50 && (await page.locator('#schedules-more').isVisible()),
    );
    assert.equal(await text('#schedules-summary'), 'The first 50 schedules of example, by id; "Show more" reads on.');
    await page.click('#schedules-more');
    listed = await schedulesOf();
    assert.equal(listed.length, 53);
    await until('all 53, as the API lists them', async () =>
      same(
        (await scheduleRows()).map((r) => r.id),
        listed.map((s) => s.id),
      ),
    );
    assert.equal(await page.locator('#schedules-more').isVisible(), false);
    assert.equal(await text('#schedules-summary'), '53 schedules in example, by id.');

    // a topic without schedules (clicking a topic selects it here too)
    await page.click('#topics tr[data-topic="webhook"] .topic-link');
    await until('the empty state', async () => (await text('#schedules-summary')) === 'No schedules in webhook.');
    assert.equal(await page.inputValue('#schedules-topic'), 'webhook');
    assert.equal((await scheduleRows()).length, 0);

    // an API error is shown like the other views' (Chromium logs the failed request: expected here)
    const mark = problems.length;
    const isList = (url: URL) => url.pathname.endsWith('/schedules');
    await page.route(isList, (route) =>
      route.fulfill({
        status: 503,
        headers: { 'content-type': 'application/json', 'retry-after': '1' },
        body: JSON.stringify({ error: { code: 'UNAVAILABLE', message: 'the queue store is unavailable' } }),
      }),
    );
    await page.selectOption('#schedules-topic', 'example');
    await until(
      'the error',
      async () => (await text('#schedules-summary')) === 'Could not read the schedules: the queue store is unavailable',
    );
    assert.equal(await page.locator('#schedules .error-text, #schedules-summary .error-text').count(), 1);
    assert.equal((await scheduleRows()).length, 0);
    await page.unroute(isList);

    // hostile text in every field shown is text (faked, and outside the contract: the API refuses
    // such ids, cron expressions and zones, and the page must not rely on that)
    const runAt = new Date(Date.now() + 3_600_000).toISOString();
    const hostile = {
      topic: 'example',
      id: HOSTILE,
      cron: HOSTILE,
      timezone: HOSTILE,
      catchUp: 'latest',
      paused: false,
      body: { note: HOSTILE },
      maxAttempts: 5,
      ttr: 30,
      backoff: { type: 'fixed', delay: 5 },
      url: null,
      group: null,
      version: 1,
      createdAt: runAt,
      updatedAt: runAt,
      pending: { id: HOSTILE, runAt },
      lastRunAt: null,
      nextRuns: [runAt],
    };
    await page.route(isList, (route) =>
      route.fulfill({
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ schedules: [hostile], next: null }),
      }),
    );
    await until('the hostile row', async () => (await scheduleRows()).some((r) => r.id === HOSTILE));
    const [row] = await scheduleRows();
    assert.deepEqual([row!.cells[0], row!.cells[1], row!.cells[5]], [HOSTILE, `${HOSTILE} (${HOSTILE})`, HOSTILE]);
    assert.equal(await page.evaluate('window.__pwned'), undefined);
    assert.equal(await page.locator('#schedules img, #schedules script').count(), 0);
    await page.unroute(isList);
    const during = problems.splice(mark); // late enough that the faked 503s have all been answered
    assert.ok(
      during.every((p) => /status of 503/.test(p)),
      during.join('\n'),
    );

    assert.deepEqual(problems, [], 'no script errors, CSP violations or dialogs');
  });

  it('a click is not lost when a refresh lands between the press and the release: the answers wait for the release before the page is redrawn', async () => {
    await openDashboard('webhook', true);
    await page.click('#topics tr[data-topic="example"] .topic-link');
    await until('example to be selected', async () => (await page.inputValue('#schedules-topic')) === 'example');
    // Hold the next refresh's GET /topics at the network: its answer is fetched from the API but
    // not yet handed to the page. Then press the webhook link, mark the pressed element (to tell
    // whether the table is drawn anew under it), and hand the answer over: that answer reaches the
    // page between the press and the release, whatever the machine's speed.
    const isTopics = (url: URL) => url.pathname.endsWith('/topics');
    let gate!: (held: { route: Route; response: APIResponse }) => void;
    const held = new Promise<{ route: Route; response: APIResponse }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no refresh asked for GET /topics within 60 s')), 60_000);
      gate = (h) => (clearTimeout(timer), resolve(h));
    });
    let holding = true;
    await page.route(isTopics, async (route) => {
      if (!holding || route.request().method() !== 'GET') return route.fallback(); // later refreshes go to the API
      holding = false;
      gate({ route, response: await route.fetch({ timeout: 60_000 }) });
    });
    const { route, response } = await held;
    const link = page.locator('#topics tr[data-topic="webhook"] .topic-link');
    const box = await link.boundingBox();
    assert.ok(box, 'the webhook link is on screen');
    const [x, y] = [box.x + box.width / 2, box.y + box.height / 2];
    await page.mouse.move(x, y);
    await page.mouse.down();
    await page.evaluate(`document.elementFromPoint(${x}, ${y}).dataset.pressed = "1"`);
    await route.fulfill({ response });
    await (await route.request().response())?.finished(); // the page has the whole answer now
    await page.unroute(isTopics); // not before: unrouting hands a held request to the API at once
    // what a refresh needs to draw its rows, had it not waited (a page that does not wait draws
    // within milliseconds of the answer: this ends as soon as the marked link is gone)
    await page
      .locator('[data-pressed]')
      .waitFor({ state: 'detached', timeout: 1500 })
      .catch(() => undefined);
    const sameElement = await page.locator('#topics tr[data-topic="webhook"] .topic-link[data-pressed]').count();
    await page.mouse.up();
    assert.equal(sameElement, 1, 'the table was not drawn anew under the pressed link');
    await until(
      'the click to select webhook',
      async () =>
        (await page.inputValue('#schedules-topic')) === 'webhook' &&
        (await text('#schedules-summary')) === 'No schedules in webhook.',
    );
    // once released, the refresh draws (the mark goes with the old element)
    await until(
      'the table drawn again after the release',
      async () => (await page.locator('#topics tr[data-topic="webhook"] .topic-link[data-pressed]').count()) === 0,
    );
    assert.deepEqual(problems, [], 'no script errors, CSP violations or dialogs');
  });

  /** Creates a key with the deployment's key (POST /keys); its secret. */
  async function createKey(name: string, scope: 'read' | 'write', topics?: string[]): Promise<string> {
    const res = await call<{ key: { name: string; scope: string; topics: string[] | null }; secret: string }>(
      'POST',
      '/keys',
      { name, scope, ...(topics ? { topics } : {}) },
    );
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(res.body.key, { ...res.body.key, name, scope, topics: topics ?? null });
    return res.body.secret;
  }
  /** Forgets the key the tab holds, if any, and signs in with `secret`. */
  async function signInWith(secret: string): Promise<void> {
    await page.goto(`${offline.baseUrl}/dashboard`);
    if (await page.locator('#signout').isVisible()) {
      await page.click('#signout');
      assert.equal(await text('#login-error'), 'Key forgotten.');
    }
    await page.fill('#api-key', secret);
    await page.click('#login-form button[type=submit]');
  }
  /** Whether `selector` is disabled and its title says the key is read-only. */
  async function offForRead(selector: string, name: string): Promise<boolean> {
    const button = page.locator(selector);
    return (
      (await button.isDisabled()) &&
      (await button.getAttribute('title')) ===
        `key ${name} has scope read: changes need a key with scope write (or admin)`
    );
  }

  it('with a read key: shows its name and scope, reads everything, and disables every change; a change refused anyway shows the 403 and keeps the key; a write key limited to a topic sees it only and redrives', async () => {
    const sfx = String(process.pid);
    const [reader, writer] = [`reader-${sfx}`, `writer-${sfx}`];
    const readSecret = await createKey(reader, 'read');
    // a dead webhook job and a group of two delayed jobs to look at
    const dead = `ro-dead-${sfx}`;
    await client.add({
      topic: 'webhook',
      id: dead,
      delay: 0,
      url: `${receiver.url}/fail-1/${dead}`,
      maxAttempts: 1,
      body: {},
    });
    await until('the webhook job to die', async () => (await client.get('webhook', dead))?.state === 'dead');
    const group = `ro-grp-${sfx}`;
    for (const i of [1, 2]) await addJob({ id: `${group}-${i}`, delay: 3600, group });

    await signInWith(readSecret);
    await until(
      "the key's name and scope",
      async () => (await text('[data-testid="whoami"]')) === `signed in as ${reader} (read)`,
    );
    assert.equal(await page.evaluate('sessionStorage.length'), 1);
    // reading works: the topics table fills with what the API counts
    await page.waitForSelector('#topics tr[data-topic="webhook"]');
    const counts = await client.topics();
    await until(
      'the counts the API gives',
      async () =>
        (await text('[data-testid="webhook-dead"]')) === String(counts.find((t) => t.topic === 'webhook')?.dead),
    );
    assert.deepEqual(
      await page.locator('#topics tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-topic'))),
      counts.map((t) => t.topic),
    );

    // the dead list shows the job; "Redrive all" and its "Redrive" are off, "Details" works
    await page.click('#topics tr[data-topic="webhook"] .topic-link');
    const item = page.locator(`#dead-list li[data-id="${dead}"]`);
    await until('the dead job in the list', async () => (await item.count()) === 1);
    assert.equal(await offForRead('#redrive-all', reader), true, '"Redrive all" is off, saying why');
    assert.equal(
      await offForRead(`#dead-list li[data-id="${dead}"] [data-testid="redrive"]`, reader),
      true,
      '"Redrive" is off, saying why',
    );
    await item.getByRole('button', { name: 'Details' }).click();
    await until('the dead job in the lookup', async () => (await text('[data-testid="job-state"]')) === 'dead');

    // a group is shown; "Cancel group" is off and a click on it does not ask for a confirmation
    await page.selectOption('#group-topic', 'example');
    await page.fill('#group-name', group);
    await page.click('#group-form button[type=submit]');
    await until(
      "the group's two jobs",
      async () => (await text('#group-summary')) === `2 jobs in group ${group} of example: 2 delayed.`,
    );
    assert.equal(await offForRead('#group-cancel', reader), true, '"Cancel group" is off, saying why');
    await page.click('#group-cancel', { force: true });
    assert.deepEqual(
      [await page.locator('#group-confirm').isVisible(), await page.locator('#group-keep').isVisible()],
      [false, false],
      'no confirm step',
    );
    assert.equal(await text('#whoami'), `signed in as ${reader} (read)`);
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-read-key.png'), fullPage: true });

    // the page thinks the key may write (GET /whoami faked once): the API refuses the redrive with
    // 403, the page says so where a failed redrive is told, keeps the key, asks again and turns off
    const mark = problems.length;
    let faked = 0;
    await page.route('**/whoami', (route) => {
      if (faked++ > 0) return route.fallback();
      return route.fulfill({
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key: { name: reader, scope: 'write', topics: null } }),
      });
    });
    await page.reload();
    await until(
      'the faked scope',
      async () => (await text('[data-testid="whoami"]')) === `signed in as ${reader} (write)`,
    );
    await page.click('#topics tr[data-topic="webhook"] .topic-link');
    const redrive = page.locator(`#dead-list li[data-id="${dead}"] [data-testid="redrive"]`);
    await until('"Redrive" on', async () => (await redrive.count()) === 1 && (await redrive.isEnabled()));
    const refusing = page.waitForResponse(
      (r) => r.request().method() === 'POST' && r.url().endsWith('/topics/webhook/dead/redrive'),
    );
    await redrive.click();
    assert.equal((await refusing).status(), 403);
    await until(
      'the refusal in the toast',
      async () => (await text('#toast')) === `Redrive failed: key ${reader} has scope read; this needs scope write`,
    );
    await until(
      'the scope read again',
      async () => (await text('[data-testid="whoami"]')) === `signed in as ${reader} (read)`,
    );
    await until(
      'the change controls off again',
      async () =>
        (await offForRead('#redrive-all', reader)) &&
        (await offForRead(`#dead-list li[data-id="${dead}"] [data-testid="redrive"]`, reader)),
    );
    assert.deepEqual(
      [
        await page.locator('#app').isVisible(),
        await page.locator('#login').isVisible(),
        await page.evaluate('sessionStorage.length'),
      ],
      [true, false, 1],
      'still signed in',
    );
    assert.equal((await client.get('webhook', dead))?.state, 'dead', 'nothing redriven');
    await page.unroute('**/whoami');
    const during = problems.splice(mark);
    assert.ok(
      during.every((p) => /status of 403/.test(p)),
      during.join('\n'),
    );

    // a write key limited to webhook: its topics are shown, only webhook is listed, a redrive works
    await signInWith(await createKey(writer, 'write', ['webhook']));
    await until(
      "the write key's name, scope and topics",
      async () => (await text('[data-testid="whoami"]')) === `signed in as ${writer} (write) · topics: webhook`,
    );
    await until(
      'the dead job in the list',
      async () => (await page.locator(`#dead-list li[data-id="${dead}"]`).count()) === 1,
    );
    assert.deepEqual(
      await page.locator('#topics tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-topic'))),
      ['webhook'],
    );
    assert.deepEqual(await page.locator('#group-topic option').evaluateAll((os) => os.map((o) => o.textContent)), [
      'webhook',
    ]);
    assert.deepEqual(
      [await page.isEnabled('#redrive-all'), await page.getAttribute('#redrive-all', 'title')],
      [true, ''],
    );
    await page.locator(`#dead-list li[data-id="${dead}"] [data-testid="redrive"]`).click();
    await until('the toast', async () => /1 job redriven/.test(await text('#toast')));
    await until('the job to finish', async () => (await client.get('webhook', dead))?.state === 'done');

    await page.click('#signout');
    assert.equal(await page.evaluate('sessionStorage.length'), 0);
    assert.deepEqual(problems, [], 'no script errors, CSP violations or dialogs');
  });

  it('pauses and resumes a topic with its button: the paused mark follows GET /topics; a read key has the button off', async () => {
    const reader = `pause-reader-${process.pid}`;
    const readSecret = await createKey(reader, 'read');
    await signInWith(offline.token);
    const button = page.locator('[data-testid="partner-pause"]');
    await until(
      'the Pause button of topic partner',
      async () => (await button.count()) === 1 && (await button.innerText()) === 'Pause' && (await button.isEnabled()),
    );
    await button.click();
    await until('the paused mark', async () => (await page.locator('[data-testid="partner-paused"]').count()) === 1);
    assert.equal((await client.topics()).find((t) => t.topic === 'partner')?.paused, true, 'the API says paused');
    assert.equal(await page.locator('[data-testid="example-paused"]').count(), 0, 'only that topic');
    await until('the Resume button', async () => (await button.innerText()) === 'Resume' && (await button.isEnabled()));

    await signInWith(readSecret);
    await until(
      "the reader's name",
      async () => (await text('[data-testid="whoami"]')) === `signed in as ${reader} (read)`,
    );
    await until(
      'the Resume button, off for a read key',
      async () => (await button.count()) === 1 && (await offForRead('[data-testid="partner-pause"]', reader)),
    );

    await signInWith(offline.token);
    await until(
      'the Resume button, on',
      async () => (await button.count()) === 1 && (await button.innerText()) === 'Resume' && (await button.isEnabled()),
    );
    await button.click();
    await until(
      'the paused mark gone',
      async () =>
        (await page.locator('[data-testid="partner-paused"]').count()) === 0 && (await button.innerText()) === 'Pause',
    );
    assert.equal((await client.topics()).find((t) => t.topic === 'partner')?.paused, false, 'the API says not paused');
    await page.click('#signout');
    assert.deepEqual(problems, [], 'no script errors, CSP violations or dialogs');
  });

  it('pauses and resumes a schedule with its button: the paused mark follows GET /schedules; a read key has the button off', async () => {
    const id = `a-pause-${process.pid}`; // first by id: on the first page whatever else example holds
    const reader = `schedule-reader-${process.pid}`;
    const readSecret = await createKey(reader, 'read');
    await putSchedule(id, { every: 3600 }, 201);
    const row = page.locator(`#schedules tbody tr[data-id="${id}"]`);
    const button = row.locator('[data-testid="schedule-pause"]');
    const shown = async (paused: 'yes' | 'no', label: 'Pause' | 'Resume') =>
      (await button.count()) === 1 &&
      (await row.locator('[data-testid="schedule-paused"]').innerText()) === paused &&
      (await button.innerText()) === label &&
      (await button.isEnabled());
    await signInWith(offline.token);
    await page.waitForSelector('#topics tr[data-topic="example"]');
    await page.selectOption('#schedules-topic', 'example');
    await until('the Pause button of the schedule', () => shown('no', 'Pause'));
    await button.click();
    await until('the schedule shown paused, with a Resume button', () => shown('yes', 'Resume'));
    const paused = await client.getSchedule('example', id);
    assert.deepEqual(
      [paused?.paused, paused?.pending, paused?.every],
      [true, null, 3600],
      'the API says paused, the definition kept',
    );

    await signInWith(readSecret);
    await until(
      "the reader's name",
      async () => (await text('[data-testid="whoami"]')) === `signed in as ${reader} (read)`,
    );
    await page.selectOption('#schedules-topic', 'example');
    await until(
      'the Resume button, off for a read key',
      async () =>
        (await button.count()) === 1 &&
        (await offForRead(`#schedules tbody tr[data-id="${id}"] [data-testid="schedule-pause"]`, reader)),
    );

    await signInWith(offline.token);
    await page.waitForSelector('#topics tr[data-topic="example"]');
    await page.selectOption('#schedules-topic', 'example');
    await until('the Resume button, on', () => shown('yes', 'Resume'));
    await button.click();
    await until('the schedule shown running, with a Pause button', () => shown('no', 'Pause'));
    const resumed = await client.getSchedule('example', id);
    assert.deepEqual(
      [resumed?.paused, resumed?.pending !== null],
      [false, true],
      'the API says not paused, an occurrence pending',
    );
    await client.deleteSchedule('example', id);
    await page.click('#signout');
    assert.deepEqual(problems, [], 'no script errors, CSP violations or dialogs');
  });

  /** Looks flow key `key` of `topic` up in the flow keys card. */
  async function showFlowKey(topic: string, key: string): Promise<void> {
    await until(
      `topic ${topic} in the flow keys card`,
      async () => (await page.locator(`#flow-topic option[value="${topic}"]`).count()) === 1,
    );
    await page.selectOption('#flow-topic', topic);
    await page.fill('#flow-key', key);
    await page.click('#flow-form button[type=submit]');
  }

  it("shows a flow topic's schedule with its flow key, and one without a key without", async () => {
    const withKey = `k-sched-${process.pid}`;
    const without = `n-sched-${process.pid}`;
    await client.putSchedule('partner', withKey, { every: 3600, paused: true, key: `tenant-${process.pid}` });
    await client.putSchedule('partner', without, { every: 3600, paused: true });
    try {
      await signInWith(offline.token);
      await page.waitForSelector('#topics tr[data-topic="partner"]');
      await page.selectOption('#schedules-topic', 'partner');
      const row = (id: string) => page.locator(`#schedules tbody tr[data-id="${id}"]`);
      await until(
        'both schedules listed',
        async () => (await row(withKey).count()) === 1 && (await row(without).count()) === 1,
      );
      assert.equal(await row(withKey).locator('[data-testid="schedule-key"]').innerText(), `key tenant-${process.pid}`);
      assert.equal(await row(without).locator('[data-testid="schedule-key"]').count(), 0, 'no key, no key line');
    } finally {
      await client.deleteSchedule('partner', withKey);
      await client.deleteSchedule('partner', without);
    }
  });

  it("shows a flow key's state (running, ready, paused, held, limits in force and pinned) and pauses and resumes it; a read key has the button off, a refused change shows the 403; only flow topics are offered", async () => {
    const key = `acme-${process.pid}`;
    const reader = `flow-reader-${process.pid}`;
    const readSecret = await createKey(reader, 'read');
    const button = page.locator('[data-testid="flow-pause"]');
    /** The key shown paused or not, with the button to change that, on. */
    const shown = async (paused: 'yes' | 'no', label: 'Pause' | 'Resume') =>
      (await text('[data-testid="flow-paused"]')) === paused &&
      (await button.count()) === 1 &&
      (await button.innerText()) === label &&
      (await button.isEnabled());
    const ids = [1, 2, 3].map((i) => `${key}-${i}`);
    // the topic paused: the key's jobs, due now, wait in its lane (ready), none starts
    await client.pauseTopic('partner');
    try {
      for (const id of ids) await client.add({ topic: 'partner', id, delay: 0, key, body: { note: HOSTILE } });
      await until("the key's 3 jobs ready", async () => (await client.flowKey('partner', key)).ready === 3);
      await client.setFlowKey('partner', key, { concurrency: 1 });

      await signInWith(offline.token);
      await showFlowKey('partner', key);
      await until(
        "the key's state",
        async () => (await text('[data-testid="flow-ready"]')) === '3' && (await shown('no', 'Pause')),
      );
      assert.deepEqual(
        await Promise.all(
          ['name', 'running', 'ready', 'paused', 'held', 'concurrency', 'rate', 'pinned'].map((f) =>
            text(`[data-testid="flow-${f}"]`),
          ),
        ),
        [
          `partner / ${key}`,
          '0',
          '3',
          'no',
          'not held: its rate lets the next start go',
          '1 at once',
          '10 per s, burst 1',
          'concurrency 1',
        ],
        'the key pinned to 1 at once, the topic default rate',
      );
      assert.match(
        await text('[data-testid="flow-updated"]'),
        / by deployment$/,
        'who pinned it (the client signs with the deployment key)',
      );
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard-flow-key.png'), fullPage: true });
      await button.click();
      await until('the key shown paused, with a Resume button', () => shown('yes', 'Resume'));
      assert.equal((await client.flowKey('partner', key)).paused, true, 'the API says paused');
      assert.match(await text('#toast'), new RegExp(`^flow key ${key} of partner paused`));
      assert.equal(await page.inputValue('#flow-key'), key);

      // only the topics with flow control are offered: no key of a plain topic is ever asked for
      const offered = await page
        .locator('#flow-topic option')
        .evaluateAll((options) => options.map((o) => (o as unknown as { value: string }).value));
      const flowTopics = (await client.topics()).filter((t) => t.flow).map((t) => t.topic);
      assert.deepEqual(flowTopics, ['partner'], "the stack's one flow topic");
      assert.deepEqual(offered, flowTopics, 'the flow keys card offers the flow topics, and only them');
      assert.ok(
        problems.every((p) => !/status of 400/.test(p)),
        problems.join('\n'),
      );

      // a read key sees the key, the button off, saying why
      await signInWith(readSecret);
      await until(
        "the reader's name",
        async () => (await text('[data-testid="whoami"]')) === `signed in as ${reader} (read)`,
      );
      await showFlowKey('partner', key);
      await until(
        'the Resume button, off for a read key',
        async () =>
          (await text('[data-testid="flow-paused"]')) === 'yes' &&
          (await offForRead('[data-testid="flow-pause"]', reader)),
      );
      assert.equal(await text('[data-testid="flow-ready"]'), '3');

      // the page thinks the read key may write (GET /whoami faked once): the API refuses the
      // resume with 403, the card says so, the key stays signed in and shown, the button goes off
      const mark = problems.length;
      let faked = 0;
      await page.route('**/whoami', (route) => {
        if (faked++ > 0) return route.fallback();
        return route.fulfill({
          status: 200,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ key: { name: reader, scope: 'write', topics: null } }),
        });
      });
      await page.reload();
      await until(
        'the faked scope',
        async () => (await text('[data-testid="whoami"]')) === `signed in as ${reader} (write)`,
      );
      await showFlowKey('partner', key);
      await until('the Resume button, on', () => shown('yes', 'Resume'));
      const refusing = page.waitForResponse(
        (r) => r.request().method() === 'POST' && r.url().endsWith(`/topics/partner/flows/${key}/resume`),
      );
      await button.click();
      assert.equal((await refusing).status(), 403);
      await until(
        'the refusal in the card',
        async () =>
          (await text('[data-testid="flow-failed"]')) ===
          `Resume failed: key ${reader} has scope read; this needs scope write`,
      );
      await until(
        'the button off again',
        async () =>
          (await text('[data-testid="whoami"]')) === `signed in as ${reader} (read)` &&
          (await offForRead('[data-testid="flow-pause"]', reader)),
      );
      assert.deepEqual(
        [
          await page.locator('#app').isVisible(),
          await page.evaluate('sessionStorage.length'),
          await page.inputValue('#flow-key'),
        ],
        [true, 1, key],
        'still signed in, the key still shown',
      );
      assert.equal((await client.flowKey('partner', key)).paused, true, 'nothing resumed');
      await page.unroute('**/whoami');
      const during = problems.splice(mark);
      assert.ok(
        during.every((p) => /status of 403/.test(p)),
        during.join('\n'),
      );

      // the deployment's key resumes it
      await signInWith(offline.token);
      await showFlowKey('partner', key);
      await until('the Resume button, on', () => shown('yes', 'Resume'));
      await button.click();
      await until('the key shown running again, with a Pause button', () => shown('no', 'Pause'));
      assert.equal((await client.flowKey('partner', key)).paused, false, 'the API says not paused');
    } finally {
      await client.resumeTopic('partner');
    }
    // the topic resumed: the key's jobs run, one at a time, and the card follows
    await until("the key's jobs done", async () =>
      (await Promise.all(ids.map((id) => client.get('partner', id)))).every((job) => job?.state === 'done'),
    );
    await until(
      'the card to show none ready or running',
      async () =>
        (await text('[data-testid="flow-ready"]')) === '0' && (await text('[data-testid="flow-running"]')) === '0',
    );
    await client.clearFlowKey('partner', key);
    assert.equal(await page.evaluate('window.__pwned'), undefined);
    await page.click('#signout');
    assert.deepEqual(problems, [], 'no script errors, CSP violations or dialogs');
  });
});
