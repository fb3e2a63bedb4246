/**
 * Who a request comes from, and what it may do. A request presents `Authorization: Bearer
 * <secret>`; the secret's SHA-256 names a key (lib/engine/api-keys.ts): the deployment's (API_TOKEN,
 * admin, named `deployment`) or one created over the API. Each Lambda instance keeps what it
 * learnt of a digest for KEY_RECHECK_MS and then asks Redis again, so a new key works at once
 * (an unknown digest is looked up as it comes), a revoked one stops within KEY_RECHECK_MS on every
 * warm instance, and a key costs Redis one lookup per instance every few seconds, not one per
 * request.
 */
import { randomBytes } from 'node:crypto';
import { secretDigest, type Caller, type Engine, type Scope } from '../engine';
import { HttpError } from './api-errors';

export type { Caller, Scope } from '../engine';

/** How long an instance trusts what it learnt of a key (found, or not found) before it asks Redis again. */
export const KEY_RECHECK_MS = 2_000;

/** The most digests an instance remembers; past it, the oldest learnt goes first. */
const CACHE_ENTRIES = 10_000;

const RANK: Record<Scope, number> = { read: 1, write: 2, admin: 3 };

/** Whether a key of scope `have` may call a route that needs `need` (admin > write > read). */
export function scopeAllows(have: Scope, need: Scope): boolean {
  return RANK[have] >= RANK[need];
}

/** Whether `caller` may touch `topic`: a key limited to some topics touches those only. */
export function mayUseTopic(caller: Caller, topic: string): boolean {
  return caller.topics === null || caller.topics.includes(topic);
}

/** Throws 403 FORBIDDEN when `caller` may not touch `topic`. */
export function requireTopicAccess(caller: Caller, topic: string): void {
  if (!mayUseTopic(caller, topic))
    throw new HttpError(
      403,
      'FORBIDDEN',
      `key ${caller.name} may not use topic ${topic} (it is limited to ${caller.topics!.join(', ')})`,
    );
}

/** Throws 403 FORBIDDEN, naming the scope, when `caller` lacks `need`. */
export function requireScope(caller: Caller, need: Scope): void {
  if (!scopeAllows(caller.scope, need))
    throw new HttpError(403, 'FORBIDDEN', `key ${caller.name} has scope ${caller.scope}; this needs scope ${need}`);
}

/** A new key's secret: `dq_` and 32 random bytes, base64url. Shown once; only its digest is kept. */
export function newSecret(): string {
  return `dq_${randomBytes(32).toString('base64url')}`;
}

/** The bearer secret of an Authorization header, or null. */
export function bearer(header: string | undefined): string | null {
  const match = /^Bearer (.+)$/.exec(header ?? '');
  return match ? match[1]! : null;
}

interface Learnt {
  caller: Caller | null;
  at: number;
}

/** One instance's view of the keys: the lookup and its cache. */
export class Access {
  private readonly learnt = new Map<string, Learnt>();
  private readonly asking = new Map<string, Promise<Caller | null>>();
  readonly deploymentSha: string;

  constructor(
    private readonly engine: Pick<Engine, 'authKey'>,
    apiToken: string,
    private readonly now: () => number = Date.now,
  ) {
    this.deploymentSha = apiToken === '' ? '' : secretDigest(apiToken);
  }

  /** The key a request's Authorization header presents, or null (none, unknown, revoked). Redis errors propagate. */
  async caller(header: string | undefined): Promise<Caller | null> {
    const secret = bearer(header);
    if (secret === null) return null;
    const sha = secretDigest(secret);
    const known = this.learnt.get(sha);
    if (known && this.now() - known.at < KEY_RECHECK_MS) return known.caller;
    // one lookup per digest at a time: a burst of requests with one key asks Redis once
    let pending = this.asking.get(sha);
    if (!pending) {
      pending = this.lookUp(sha).finally(() => this.asking.delete(sha));
      this.asking.set(sha, pending);
    }
    return pending;
  }

  /** Forgets everything learnt of the key named `name`. */
  forgetName(name: string): void {
    for (const [sha, entry] of this.learnt) if (entry.caller?.name === name) this.learnt.delete(sha);
  }

  private async lookUp(sha: string): Promise<Caller | null> {
    const caller = await this.engine.authKey(sha, this.deploymentSha);
    this.learnt.delete(sha); // re-inserted last: the map's order is the order learnt
    this.learnt.set(sha, { caller, at: this.now() });
    if (this.learnt.size > CACHE_ENTRIES) this.learnt.delete(this.learnt.keys().next().value!);
    return caller;
  }
}

const instances = new WeakMap<object, Access>();

/** The Access of an engine and token (one per runtime). */
export function accessFor(engine: Pick<Engine, 'authKey'>, apiToken: string): Access {
  let access = instances.get(engine);
  if (!access) instances.set(engine, (access = new Access(engine, apiToken)));
  return access;
}
