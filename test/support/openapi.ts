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

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the parsed openapi.yaml, walked by property paths; a wrong path fails the test
type Json = Record<string, any>;

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

  /** `source`: a file to read, or a parsed document (a test's altered copy). */
  constructor(source: string | Json = join(PROJECT_ROOT, 'openapi.yaml')) {
    this.doc = typeof source === 'string' ? (parse(readFileSync(source, 'utf8')) as Json) : source;
    // strict: a typo in a schema keyword fails here instead of silently allowing anything
    this.ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false, strictTypes: false });
    addFormats(this.ajv);
    const defs = JSON.parse(
      JSON.stringify(this.doc.components.schemas).replaceAll('"#/components/schemas/', '"#/$defs/'),
    );
    this.ajv.addSchema({ $id: SCHEMA_ID, $defs: defs });
    this.routes = Object.keys(this.doc.paths).map((template) => ({
      template,
      regex: new RegExp(
        '^' +
          template
            .split(/\{[^}]+\}/)
            .map(escape)
            .join('([^/]+)') +
          '$',
      ),
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
      const rewritten = JSON.parse(
        JSON.stringify(schema ?? {}).replaceAll('"#/components/schemas/', `"${SCHEMA_ID}#/$defs/`),
      );
      v = this.ajv.compile(rewritten);
      this.validators.set(key, v);
    }
    return v;
  }

  /** ajv's reasons for a failed validation, as one line. */
  errorsText(errors: ValidateFunction['errors']): string {
    return this.ajv.errorsText(errors);
  }

  private resolve(node: Json): Json {
    let n = node;
    while (n && typeof n.$ref === 'string') {
      const parts = (n.$ref as string)
        .replace(/^#\//, '')
        .split('/')
        .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
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
    if (!v(value))
      this.fail(ex, `${what} does not match ${key}: ${this.ajv.errorsText(v.errors, { separator: '\n  ' })}`);
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
    if (!statusKey)
      this.fail(
        ex,
        `status ${ex.status} is not documented for ${name} (documented: ${Object.keys(responses).join(', ')})`,
      );
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
      if (!media)
        this.fail(ex, `content type ${JSON.stringify(contentType)} is not one of ${Object.keys(content).join(', ')}`);
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the text or the JSON it holds, checked against the document's schema next
      let body: any = ex.text;
      if (/json/.test(contentType)) {
        try {
          body = JSON.parse(ex.text);
        } catch {
          this.fail(ex, 'the body is not JSON');
        }
      }
      this.validate(ex, media.schema, `${name} ${statusKey} ${contentType}`, body, 'the response body');
      // a batch is accepted with invalid jobs in it (each gets its own 4xx): not a valid request then
      if (Array.isArray(body?.results) && body.results.some((r: { status: number }) => r.status >= 300))
        accepted = false;
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

  /**
   * Every example in the document with the schema it illustrates: the `example` and `examples` of
   * media types, parameters and headers (`$ref`s to components/examples resolved), and the
   * `examples` keyword of every schema and subschema, each against that subschema.
   */
  examples(): DocExample[] {
    const found: DocExample[] = [];
    const schemaExamples = (schema: unknown, where: string[]): void => {
      if (Array.isArray(schema) || !schema || typeof schema !== 'object') return;
      const s = schema as Json;
      if (Array.isArray(s.examples))
        s.examples.forEach((value: unknown, i: number) =>
          found.push({ where: pointer(...where, 'examples', String(i)), value, schema: s }),
        );
      for (const key of SUBSCHEMA) if (key in s) schemaExamples(s[key], [...where, key]);
      for (const key of SUBSCHEMA_LISTS)
        if (Array.isArray(s[key]))
          s[key].forEach((sub: unknown, i: number) => schemaExamples(sub, [...where, key, String(i)]));
      for (const key of SUBSCHEMA_MAPS)
        for (const [name, sub] of Object.entries((s[key] ?? {}) as Json)) schemaExamples(sub, [...where, key, name]);
    };
    const visit = (node: unknown, where: string[]): void => {
      if (Array.isArray(node)) return node.forEach((n, i) => visit(n, [...where, String(i)]));
      if (!node || typeof node !== 'object') return;
      const n = node as Json;
      if (n.schema !== undefined) {
        // a media type, parameter or header: its schema, and the examples beside it
        schemaExamples(n.schema, [...where, 'schema']);
        if (n.example !== undefined)
          found.push({ where: pointer(...where, 'example'), value: n.example, schema: n.schema });
        for (const [k, e] of Object.entries((n.examples ?? {}) as Json))
          found.push({
            where: pointer(...where, 'examples', k),
            value: this.resolve(e as Json).value,
            schema: n.schema,
          });
      }
      for (const [k, v] of Object.entries(n))
        if (k !== 'schema' && k !== 'examples' && k !== 'example') visit(v, [...where, k]);
    };
    visit(this.doc.paths, ['paths']);
    for (const part of ['responses', 'parameters', 'headers', 'requestBodies'])
      visit(this.doc.components?.[part], ['components', part]);
    for (const [name, schema] of Object.entries((this.doc.components?.schemas ?? {}) as Json))
      schemaExamples(schema, ['components', 'schemas', name]);
    return found;
  }

  /** The examples that do not match their schema, each with ajv's reasons; empty when all match. */
  exampleProblems(): string[] {
    return this.examples().flatMap(({ where, value, schema }) => {
      const v = this.validator(schema, `example schema ${where}`);
      return v(value) ? [] : [`${where}: ${this.ajv.errorsText(v.errors)}`];
    });
  }

  /**
   * Checks every example against its schema; returns how many there are, or throws listing every one that does not
   * match.
   */
  checkExamples(): number {
    const problems = this.exampleProblems();
    if (problems.length)
      throw new Error(`${problems.length} examples do not match their schema:\n${problems.join('\n')}`);
    return this.examples().length;
  }
}

/** One example of the document: where it is, its value, and the schema it must match. */
export interface DocExample {
  where: string;
  value: unknown;
  schema: unknown;
}

/** JSON Schema 2020-12 keywords whose value is one subschema, a list of them, or a map of them. */
const SUBSCHEMA = [
  'items',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'additionalProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  'propertyNames',
];
const SUBSCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
const SUBSCHEMA_MAPS = ['properties', 'patternProperties', 'dependentSchemas', '$defs'];

/**
 * Where an object of the document puts `$ref` beside other keys. Tools differ on such siblings
 * (some drop them, some merge them shallowly over the target, 2020-12 applies both), so the
 * document has none: a schema that extends or narrows another says so with `allOf`.
 */
export function refsWithSiblings(node: unknown, where: string[] = []): string[] {
  if (Array.isArray(node)) return node.flatMap((n, i) => refsWithSiblings(n, [...where, String(i)]));
  if (!node || typeof node !== 'object') return [];
  const n = node as Json;
  const here =
    '$ref' in n && Object.keys(n).length > 1
      ? [
          `${pointer(...where)} ($ref beside ${Object.keys(n)
            .filter((k) => k !== '$ref')
            .join(', ')})`,
        ]
      : [];
  return [...here, ...Object.entries(n).flatMap(([k, v]) => refsWithSiblings(v, [...where, k]))];
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
    contract.check({
      method: init?.method ?? 'GET',
      url: url.slice(baseUrl.length),
      requestBody: body,
      status: res.status,
      headers: res.headers,
      text,
    });
    return new Response(text, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}
