/**
 * Checks real HTTP exchanges against openapi.yaml with ajv (JSON Schema 2020-12, the dialect of
 * OpenAPI 3.1): the operation exists, the status is documented, the content type is one the
 * response declares, required headers are there, the body matches the schema, and a request
 * the API accepted (2xx) matches the request schema. Records which operations and statuses were
 * seen, so a test can require that every operation was exercised.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import { PROJECT_ROOT } from './offline';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
const SCHEMA_ID = 'https://delay-queue.local/openapi.json';

/** One request and its answer, as a test saw them. */
export interface Exchange {
  method: string;
  /** Path with query, e.g. `/topics/webhook/dead?limit=5`. */
  url: string;
  requestBody?: unknown;
  status: number;
  headers: Headers;
  /** The raw response text. */
  text: string;
}

const pointer = (...parts: string[]) => '#/' + parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export class Contract {
  readonly doc: Json;
  private readonly ajv: Ajv2020;
  private readonly routes: { template: string; regex: RegExp; literal: number }[];
  private readonly validators = new Map<string, ValidateFunction>();
  /** `METHOD /template` → statuses seen. */
  readonly seen = new Map<string, Set<number>>();

  constructor(file = join(PROJECT_ROOT, 'openapi.yaml')) {
    this.doc = parse(readFileSync(file, 'utf8')) as Json;
    // strict: a typo in a schema keyword fails here instead of silently allowing anything
    this.ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false, strictTypes: false });
    addFormats(this.ajv);
    const defs = JSON.parse(JSON.stringify(this.doc.components.schemas).replaceAll('"#/components/schemas/', '"#/$defs/'));
    this.ajv.addSchema({ $id: SCHEMA_ID, $defs: defs });
    this.routes = Object.keys(this.doc.paths).map((template) => ({
      template,
      regex: new RegExp('^' + template.split(/\{[^}]+\}/).map(escape).join('([^/]+)') + '$'),
      literal: template.replace(/\{[^}]+\}/g, '').length,
    }));
    this.routes.sort((a, b) => b.literal - a.literal); // /jobs/batch before /jobs/{topic}/{id}
  }

  /** Every `METHOD /template` the document declares. */
  operations(): string[] {
    return Object.entries(this.doc.paths as Json).flatMap(([template, item]) =>
      Object.keys(item)
        .filter((m) => METHODS.includes(m))
        .map((m) => `${m.toUpperCase()} ${template}`),
    );
  }

  /** A validator for a schema of the document; `$ref`s to components resolve against it. */
  validator(schema: unknown, key: string): ValidateFunction {
    let v = this.validators.get(key);
    if (!v) {
      const rewritten = JSON.parse(JSON.stringify(schema ?? {}).replaceAll('"#/components/schemas/', `"${SCHEMA_ID}#/$defs/`));
      v = this.ajv.compile(rewritten);
      this.validators.set(key, v);
    }
    return v;
  }

  private resolve(node: Json): Json {
    let n = node;
    while (n && typeof n.$ref === 'string') {
      const parts = (n.$ref as string).replace(/^#\//, '').split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
      n = parts.reduce<Json>((o, p) => o?.[p], this.doc);
      if (!n) throw new Error(`unresolved $ref ${node.$ref}`);
    }
    return n;
  }

  private fail(ex: Exchange, what: string): never {
    throw new Error(`${ex.method} ${ex.url} → ${ex.status}: ${what}\nresponse: ${ex.text.slice(0, 600)}`);
  }

  private validate(ex: Exchange, schema: unknown, key: string, value: unknown, what: string): void {
    const v = this.validator(schema, key);
    if (!v(value)) this.fail(ex, `${what} does not match ${key}: ${this.ajv.errorsText(v.errors, { separator: '\n  ' })}`);
  }

  /** Throws, naming the request, unless the exchange is what the document says. */
  check(ex: Exchange): void {
    const path = new URL(ex.url, 'http://x').pathname;
    const method = ex.method.toLowerCase();
    const route = this.routes.find((r) => r.regex.test(path));
    if (!route) this.fail(ex, 'no path of the document matches');
    const op = this.doc.paths[route.template][method] as Json | undefined;
    if (!op) this.fail(ex, `${route.template} has no ${method} operation`);
    const name = `${ex.method.toUpperCase()} ${route.template}`;
    const responses = op.responses as Json;
    const statusKey = [String(ex.status), `${String(ex.status)[0]}XX`, 'default'].find((k) => k in responses);
    if (!statusKey) this.fail(ex, `status ${ex.status} is not documented for ${name} (documented: ${Object.keys(responses).join(', ')})`);
    const response = this.resolve(responses[statusKey]);

    for (const [header, spec] of Object.entries((response.headers ?? {}) as Json)) {
      const h = this.resolve(spec);
      const value = ex.headers.get(header);
      if (value === null) {
        if (h.required) this.fail(ex, `required header ${header} is missing`);
        continue;
      }
      this.validate(ex, h.schema, `${name} ${statusKey} header ${header}`, value, `header ${header}`);
    }

    let accepted = true;
    const content = response.content as Json | undefined;
    const contentType = (ex.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (!content) {
      if (ex.text !== '') this.fail(ex, 'the response has a body, the document says none');
    } else {
      const media = content[contentType];
      if (!media) this.fail(ex, `content type ${JSON.stringify(contentType)} is not one of ${Object.keys(content).join(', ')}`);
      let body: any = ex.text; // eslint-disable-line @typescript-eslint/no-explicit-any
      if (/json/.test(contentType)) {
        try {
          body = JSON.parse(ex.text);
        } catch {
          this.fail(ex, 'the body is not JSON');
        }
      }
      this.validate(ex, media.schema, `${name} ${statusKey} ${contentType}`, body, 'the response body');
      // a batch is accepted with invalid jobs in it (each gets its own 4xx): not a valid request then
      if (Array.isArray(body?.results) && body.results.some((r: { status: number }) => r.status >= 300)) accepted = false;
    }

    if (accepted && ex.status >= 200 && ex.status < 300 && ex.requestBody !== undefined) {
      const requestBody = op.requestBody ? this.resolve(op.requestBody) : undefined;
      const schema = requestBody?.content?.['application/json']?.schema;
      if (!schema) this.fail(ex, 'the API accepted a body the document does not describe');
      this.validate(ex, schema, `${name} request`, ex.requestBody, 'the accepted request body');
    }

    const statuses = this.seen.get(name) ?? new Set<number>();
    statuses.add(ex.status);
    this.seen.set(name, statuses);
  }

  /** Every example in the document (media types and parameters) checked against its schema. */
  checkExamples(): number {
    let count = 0;
    const visit = (node: unknown, where: string[]): void => {
      if (Array.isArray(node)) return node.forEach((n, i) => visit(n, [...where, String(i)]));
      if (!node || typeof node !== 'object') return;
      const n = node as Json;
      if (n.schema && (n.examples || n.example !== undefined) && where.at(-2) !== 'properties') {
        const schema = n.schema;
        const examples: [string, unknown][] = n.example !== undefined ? [['example', n.example]] : Object.entries(n.examples as Json).map(([k, e]) => [k, this.resolve(e as Json).value]);
        for (const [k, value] of examples) {
          const v = this.validator(schema, pointer(...where, 'schema'));
          if (!v(value)) throw new Error(`example ${pointer(...where)} ${k} does not match its schema: ${this.ajv.errorsText(v.errors)}`);
          count++;
        }
      }
      for (const [k, v] of Object.entries(n)) if (k !== 'examples' && k !== 'example') visit(v, [...where, k]);
    };
    visit(this.doc.paths, ['paths']);
    visit(this.doc.components.responses, ['components', 'responses']);
    visit(this.doc.components.parameters, ['components', 'parameters']);
    return count;
  }
}

/**
 * A fetch that sends the request and checks the exchange against the contract before handing
 * back the response (its body re-readable), for DelayQueueClient's `fetch` option.
 */
export function checkingFetch(contract: Contract, baseUrl: string): typeof fetch {
  return async (input, init) => {
    const url = String(input);
    const res = await fetch(input, init);
    const text = await res.text();
    const body = typeof init?.body === 'string' ? JSON.parse(init.body) : undefined;
    contract.check({ method: init?.method ?? 'GET', url: url.slice(baseUrl.length), requestBody: body, status: res.status, headers: res.headers, text });
    return new Response(text, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}
