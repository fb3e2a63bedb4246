/**
 * The dashboard page's response without a browser: its CSP allows exactly its own inline script
 * and style (by hash), and the page has nothing else a strict CSP would block or that would run
 * data as code (inline handlers, style attributes, external resources, HTML sinks).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { handler } from '../../functions/dashboard';
import page from '../../lib/api/dashboard.html';
import apiDescription from '../../openapi.yaml';

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

describe('GET /dashboard', () => {
  it('serves the page with a CSP naming the hashes of its one script and one style and nosniff', async () => {
    const res = (await handler({ rawPath: '/dashboard' })) as {
      statusCode: number;
      headers: Record<string, string>;
      body: string;
    };
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.equal(res.body, page);
    const scripts = [...page.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]!);
    const styles = [...page.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => m[1]!);
    assert.deepEqual([scripts.length, styles.length], [1, 1]);
    const csp = Object.fromEntries(
      res.headers['content-security-policy']!.split('; ').map((d) => [
        d.split(' ')[0],
        d.split(' ').slice(1).join(' '),
      ]),
    );
    assert.equal(csp['default-src'], "'none'");
    assert.equal(csp['script-src'], sha256(scripts[0]!));
    assert.equal(csp['style-src'], sha256(styles[0]!));
    assert.equal(csp['connect-src'], "'self'");
    assert.equal(csp['frame-ancestors'], "'none'");
    assert.equal(csp['require-trusted-types-for'], "'script'");
  });

  it('has no inline handlers, style attributes, external resources or HTML sinks', () => {
    assert.equal((page.match(/<script/g) ?? []).length, 1);
    assert.doesNotMatch(page, /\son[a-z]+\s*=/i, 'inline event handler attribute');
    assert.doesNotMatch(page, /\sstyle\s*=/i, 'style attribute');
    assert.doesNotMatch(page, /\s(src|href)\s*=\s*"(https?:)?\/\//i, 'external resource');
    assert.doesNotMatch(page, /innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/);
  });
});

describe('GET / and GET /openapi.yaml (the same function)', () => {
  type Res = { statusCode: number; headers: Record<string, string>; body: string };
  it('GET / answers the links to the dashboard and to the API description', async () => {
    const res = (await handler({ rawPath: '/' })) as Res;
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'application/json');
    const body = JSON.parse(res.body) as Record<string, string>;
    assert.deepEqual([body.dashboard, body.api], ['/dashboard', '/openapi.yaml']);
  });

  it('GET /openapi.yaml answers the document as YAML, and GET /dashboard the page', async () => {
    const res = (await handler({ rawPath: '/openapi.yaml' })) as Res;
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'application/yaml; charset=utf-8');
    assert.equal(res.body, apiDescription);
    assert.match(res.body, /^openapi: 3\.1/m);
    assert.equal(((await handler({ rawPath: '/dashboard' })) as Res).body, page);
  });
});
