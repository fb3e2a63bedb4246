import { createHash } from 'node:crypto';
import type { APIGatewayProxyResultV2 } from 'aws-lambda';
import page from './dashboard.html';
import apiDescription from '../../openapi.yaml';

/** CSP source for one inline block: its SHA-256, as browsers compute it over the exact text. */
function hashes(tag: 'script' | 'style'): string {
  const blocks = [...page.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))].map((m) => m[1]!);
  return blocks.map((text) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`).join(' ');
}

/**
 * The page's policy: only its own inline script and style (by hash), data calls to this origin
 * only, no HTML sinks (Trusted Types with no policy: innerHTML and the like throw), no framing.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  `script-src ${hashes('script')}`,
  `style-src ${hashes('style')}`,
  "connect-src 'self'",
  'img-src data:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

/** GET /dashboard: the static page (it holds no data; every call it makes is authenticated). */
export function dashboardResponse(): APIGatewayProxyResultV2 {
  return {
    statusCode: 200,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': DASHBOARD_CSP,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'x-frame-options': 'DENY',
      'cache-control': 'no-cache',
    },
    body: page,
  };
}

// Headers of the static answers other than the page: no sniffing, no caching of an old version.
const STATIC_HEADERS = { 'x-content-type-options': 'nosniff', 'cache-control': 'no-cache' };

/** GET /openapi.yaml: the API's description (OpenAPI 3.1), the repository's openapi.yaml as deployed. */
export function apiDescriptionResponse(): APIGatewayProxyResultV2 {
  return {
    statusCode: 200,
    headers: { 'content-type': 'application/yaml; charset=utf-8', ...STATIC_HEADERS },
    body: apiDescription,
  };
}

/** GET /: where to go, for someone who opens the API's base URL: the dashboard and the API's description. */
export function indexResponse(): APIGatewayProxyResultV2 {
  const links = { dashboard: '/dashboard', api: '/openapi.yaml' };
  return {
    statusCode: 200,
    headers: {
      'content-type': 'application/json',
      link: '</dashboard>; rel="alternate"; type="text/html", </openapi.yaml>; rel="service-desc"',
      ...STATIC_HEADERS,
    },
    body: JSON.stringify({
      message:
        "A delay queue on Redis: the operator's page is at /dashboard, the API is described at /openapi.yaml (every route but these takes a bearer token).",
      ...links,
    }),
  };
}

/** The static answers, by path: GET / (links), /dashboard (the page), /openapi.yaml (the API's description). */
export function staticResponse(path: string): APIGatewayProxyResultV2 {
  if (path === '/openapi.yaml') return apiDescriptionResponse();
  if (path === '/') return indexResponse();
  return dashboardResponse();
}
