/**
 * The API-key routes: POST, GET and DELETE /keys (admin), and GET /whoami. Each route parses its
 * request and answers status and body; `keyService` beside them validates the raw input once
 * (./validation.ts), hands it to the engine and turns its refusals into HttpErrors.
 */
import { secretDigest, type Caller, type Engine, type KeyInfo } from '../engine';
import { MAX_KEYS } from '../core/limits';
import { isoOrNull } from '../core/time';
import { HttpError, replicated } from './api-errors';
import { accessFor, newSecret } from './auth';
import { needs, type ApiRequest, type ApiResponse } from './http';
import type { Runtime } from '../platform/runtime';
import { validateNewKey } from './validation';

/** The API's key operations over an engine, from raw input (the routes below, and tests, call them). */
export const keyService = {
  /**
   * Creates a key (validated here) made by `by`; its secret is in the answer and nowhere else.
   * 409 KEY_EXISTS, 409 TOO_MANY_KEYS.
   */
  async createKey(engine: Engine, input: unknown, by: Caller): Promise<{ key: KeyInfo; secret: string }> {
    const request = validateNewKey(input, engine.config);
    const secret = newSecret();
    const created = await replicated(engine.createKey({ ...request, sha: secretDigest(secret), createdBy: by.name }));
    if (created === 'taken')
      throw new HttpError(
        409,
        'KEY_EXISTS',
        `a key named ${request.name} exists; revoke it first or pick another name`,
      );
    if (created === 'full')
      throw new HttpError(
        409,
        'TOO_MANY_KEYS',
        `the deployment holds ${MAX_KEYS} keys, the most it may; revoke one first`,
      );
    return {
      key: { ...request, source: 'api', createdAt: created.createdAt, createdBy: by.name, lastUsedAt: null },
      secret,
    };
  },

  /** Revokes key `name`: 404 when there is none (or it was revoked already), 409 LAST_ADMIN_KEY for the last admin. */
  async revokeKey(engine: Engine, name: string, deploymentSha: string): Promise<void> {
    const revoked = await replicated(engine.revokeKey(name, deploymentSha));
    if (revoked === 'last-admin')
      throw new HttpError(
        409,
        'LAST_ADMIN_KEY',
        `key ${name} is the last key with the admin scope: create another admin key first, or no key could manage keys`,
      );
    if (!revoked) throw new HttpError(404, 'NOT_FOUND', `key ${name} not found`);
  },
};

/** A key as the API shows it: times as ISO strings. */
function keyView(key: KeyInfo) {
  return { ...key, createdAt: isoOrNull(key.createdAt), lastUsedAt: isoOrNull(key.lastUsedAt) };
}

/** POST /keys: { name, scope, topics? } -> 201 { key, secret }: the secret is shown this once. */
export async function createKey(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const { key, secret } = await keyService.createKey(rt.engine, req.json(), req.caller);
  return {
    status: 201,
    body: { key: keyView(key), secret },
    headers: { location: `/keys/${encodeURIComponent(key.name)}` },
  };
}

/** GET /keys: { keys }: every key's name, scope, topics, source, created and last used; never a secret. */
export async function listKeys(_req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const keys = await rt.engine.listKeys(accessFor(rt.engine, rt.config.apiToken).deploymentSha);
  return { status: 200, body: { keys: keys.map(keyView) } };
}

/**
 * DELETE /keys/{name}: revokes the key; { revoked: true }, 404 when there is none. Every warm
 * instance refuses it within KEY_RECHECK_MS.
 */
export async function revokeKey(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  const name = req.params.name ?? '';
  const access = accessFor(rt.engine, rt.config.apiToken);
  await keyService.revokeKey(rt.engine, name, access.deploymentSha);
  access.forgetName(name);
  return { status: 200, body: { revoked: true } };
}

/** POST /keys, GET /keys and DELETE /keys/{name}: one function, all admin. */
export async function keys(req: ApiRequest, rt: Runtime): Promise<ApiResponse> {
  if (req.method === 'POST') return createKey(req, rt);
  if (req.method === 'DELETE') return revokeKey(req, rt);
  return listKeys(req, rt);
}

/** GET /whoami: { key }: the name, scope and topics of the key the request came with. */
export async function whoami(req: ApiRequest): Promise<ApiResponse> {
  const { name, scope, topics } = req.caller;
  return { status: 200, body: { key: { name, scope, topics } } };
}

needs('read', whoami);
needs('admin', createKey, listKeys, revokeKey, keys);
