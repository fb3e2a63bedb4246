/**
 * The API keys in Redis: create, revoke, list, and the lookup by a presented secret's digest. Keys
 * live in the `{keys}` slot (accessKeys), off every job's path: the HTTP edge
 * (lib/api/auth.ts) looks a key up once every few seconds per Lambda instance, not per request.
 * Secrets are never stored: a key is found by the SHA-256 of its secret (secrets are 32 random
 * bytes, so a fast digest is as good as a slow one). The deployment's own key (API_TOKEN) has no
 * record: it is the admin key named `deployment`, and revoking it adds its digest to a hash.
 * Each call that needs it takes `deploymentSha`: that key's digest, '' when the deployment has
 * none (an empty API_TOKEN).
 */
import { createHash } from 'node:crypto';
import { KEY_CHANGE } from './codes';
import { confirmSlotReplicated } from './durable';
import type { EngineContext } from './context';
import { accessKeys } from './keys';
import { readSlot, run } from './script-runner';
import * as script from './scripts';
import { contextOf } from './context';
import { MAX_KEYS } from '../core/limits';

/** What a key may do: `admin` everything (keys included), `write` every change and read, `read` every GET. */
export type Scope = 'admin' | 'write' | 'read';

/** The name of the deployment's key (API_TOKEN): no named key may take it. */
export const DEPLOYMENT_KEY = 'deployment';

/** Who a request comes from: the key's name, scope, and the topics it is limited to (null: every topic). */
export interface Caller {
  name: string;
  scope: Scope;
  topics: readonly string[] | null;
}

/** A key as listed: never its secret. */
export interface KeyInfo extends Caller {
  /** 'deployment': API_TOKEN; 'api': created over the API. */
  source: 'deployment' | 'api';
  createdAt: number | null;
  createdBy: string | null;
  /** When it was last used (noted at most once per KEY_USE_NOTE_MS), null for never. */
  lastUsedAt: number | null;
}

/** A key's use is noted at most once a minute: a busy key costs a write a minute, not one a request. */
export const KEY_USE_NOTE_MS = 60_000;

/** SHA-256 hex of a secret. */
export function secretDigest(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

const topicsOf = (text: string): string[] | null => (text === '' ? null : text.split(','));

const k = accessKeys();
const all = [k.records, k.hashes, k.uses, k.revoked] as const;

/** The key whose secret has digest `sha`, its use noted; null when there is none (or it was revoked). */
export async function authKey(ctx: EngineContext, sha: string, deploymentSha: string): Promise<Caller | null> {
  const reply = await run(
    ctx.redis,
    script.authKey(all, { clock: ctx.clock(), sha, deploymentSha, touchMs: KEY_USE_NOTE_MS }),
  );
  if (!reply) return null;
  const [name, scope, topics] = reply;
  return { name, scope: scope as Scope, topics: topicsOf(topics) };
}

/**
 * Creates key `name` for the secret of digest `sha`; 'taken' when the name is, 'full' at `maxKeys`. Durable before it
 * returns.
 */
export async function createKey(
  ctx: EngineContext,
  key: Caller & { sha: string; createdBy: string },
  maxKeys: number,
): Promise<{ createdAt: number } | 'taken' | 'full'> {
  const reply = await run(
    ctx.redis,
    script.createKey([k.records, k.hashes], {
      clock: ctx.clock(),
      name: key.name,
      sha: key.sha,
      scope: key.scope,
      topics: key.topics?.join(',') ?? '',
      createdBy: key.createdBy,
      maxKeys,
    }),
  );
  const [code, createdAt] = reply;
  if (code === KEY_CHANGE.NAME_TAKEN) return 'taken';
  if (code === KEY_CHANGE.TOO_MANY) return 'full';
  if (createdAt === undefined) throw new Error('createKey replied CREATED without a time');
  await confirmSlotReplicated(ctx, k.records);
  return { createdAt };
}

/**
 * Revokes key `name` (DEPLOYMENT_KEY: API_TOKEN); false when there is none, 'last-admin' (nothing changed) when it is
 * the last key with the admin scope: the deployment's while no named admin key exists, or the only named admin key
 * while the deployment's is revoked or there is none. Durable before it returns true.
 */
export async function revokeKey(
  ctx: EngineContext,
  name: string,
  deploymentSha: string,
): Promise<boolean | 'last-admin'> {
  const code = await run(ctx.redis, script.revokeKey(all, { name, deploymentSha }));
  if (code === KEY_CHANGE.LAST_ADMIN) return 'last-admin';
  const revoked = code === KEY_CHANGE.REVOKED;
  if (revoked) await confirmSlotReplicated(ctx, k.records);
  return revoked;
}

/** Every key, the deployment's first (while it has one and it is not revoked), then by name. Plain reads. */
export async function listKeys(ctx: EngineContext, deploymentSha: string): Promise<KeyInfo[]> {
  const [records, uses, revoked] = (await readSlot(ctx.redis, (p) =>
    p
      .hgetall(k.records)
      .hgetall(k.uses)
      .hget(k.revoked, deploymentSha || '-'),
  )) as [Record<string, string>, Record<string, string>, string | null];
  // a Map, not a lookup in `uses`: a name like `constructor` or `__proto__` would find Object.prototype's member
  const lastUse = new Map(Object.entries(uses));
  const used = (name: string) => {
    const at = lastUse.get(name);
    return at === undefined ? null : Number(at);
  };
  const keys: KeyInfo[] = Object.entries(records)
    .map(([name, text]) => {
      const r = JSON.parse(text) as { scope: Scope; topics: string; createdAt: number; createdBy: string };
      return {
        name,
        scope: r.scope,
        topics: topicsOf(r.topics),
        source: 'api' as const,
        createdAt: r.createdAt,
        createdBy: r.createdBy,
        lastUsedAt: used(name),
      };
    })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (deploymentSha !== '' && revoked === null)
    keys.unshift({
      name: DEPLOYMENT_KEY,
      scope: 'admin',
      topics: null,
      source: 'deployment',
      createdAt: null,
      createdBy: null,
      lastUsedAt: used(DEPLOYMENT_KEY),
    });
  return keys;
}

/** The engine's API-key operations (Engine in ./engine.ts lists them). */
export const keyOps = {
  /**
   * The key whose secret has digest `sha` (`deploymentSha`: API_TOKEN's, '' for none), its use noted; null for none.
   */
  authKey(this: object, sha: string, deploymentSha: string): Promise<Caller | null> {
    return authKey(contextOf(this), sha, deploymentSha);
  },

  /** Creates a named key for the secret of digest `sha`; 'taken' when the name is, 'full' at MAX_KEYS keys. */
  createKey(
    this: object,
    key: Caller & { sha: string; createdBy: string },
  ): Promise<{ createdAt: number } | 'taken' | 'full'> {
    return createKey(contextOf(this), key, MAX_KEYS);
  },

  /** Revokes key `name` ('deployment': the deployment's key); false when there is none, 'last-admin' for the last. */
  revokeKey(this: object, name: string, deploymentSha: string): ReturnType<typeof revokeKey> {
    return revokeKey(contextOf(this), name, deploymentSha);
  },

  /** Every key (never a secret), the deployment's first. */
  listKeys(this: object, deploymentSha: string): Promise<KeyInfo[]> {
    return listKeys(contextOf(this), deploymentSha);
  },
};
