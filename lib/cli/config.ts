/**
 * Where `dq` sends its requests and with which key: each of the base URL and the key from a flag
 * (`--url`, `--key`), else the environment (`DQ_URL`, `DQ_KEY`), else the chosen profile of the
 * profile file, else the local default (http://127.0.0.1:3000, and `dev-token` for a loopback
 * URL only). Pure: the environment and the file reader are given.
 */
import { UsageError } from './errors';

/** The base URL `npm run dev` serves by default. */
export const DEFAULT_URL = 'http://127.0.0.1:3000';
/** The API token of `npm run dev`; used only for a loopback URL when no key is given. */
export const DEV_KEY = 'dev-token';

/** A named connection in the profile file. */
export interface Profile {
  url?: string;
  key?: string;
}

/** Where a setting came from, for `dq --help` style explanations and for errors. */
export type Source = 'flag' | 'env' | 'profile' | 'default';

/** The base URL and key to use, and where each came from. */
export interface Connection {
  url: string;
  key: string;
  /** The profile used, if any. */
  profile: string | undefined;
  sources: { url: Source; key: Source };
}

/**
 * What resolveConnection reads: the flags, the environment, and the profile file through `readFile` (undefined: no such
 * file).
 */
export interface ConnectionInput {
  flags: { url?: string; key?: string; profile?: string };
  env: Record<string, string | undefined>;
  home: string;
  readFile(path: string): string | undefined;
}

/** The profile file: `$DQ_CONFIG`, else `$XDG_CONFIG_HOME/dq/config.json`, else `~/.config/dq/config.json`. */
export function configPath(env: Record<string, string | undefined>, home: string): string {
  if (env.DQ_CONFIG) return env.DQ_CONFIG;
  const base = env.XDG_CONFIG_HOME || `${home.replace(/\/+$/, '')}/.config`;
  return `${base}/dq/config.json`;
}

/** The profile file's profiles and default, checked; throws UsageError naming the file and the bad field. */
export function parseProfiles(
  text: string,
  path: string,
): { default: string | undefined; profiles: Map<string, Profile> } {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${path} is not JSON: ${(error as Error).message}`);
  }
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObject(data) || !isObject(data.profiles))
    throw new UsageError(`${path} must be {"default": "<name>", "profiles": {"<name>": {"url": "…", "key": "…"}}}`);
  if (data.default !== undefined && typeof data.default !== 'string')
    throw new UsageError(`${path}: "default" must be a profile name`);
  // a Map, not an object: a profile named `constructor` or `__proto__` is the file's, not Object.prototype's
  const profiles = new Map<string, Profile>();
  for (const [name, profile] of Object.entries(data.profiles)) {
    if (!isObject(profile)) throw new UsageError(`${path}: profile "${name}" must be an object with "url" and "key"`);
    for (const field of ['url', 'key'] as const) {
      if (profile[field] !== undefined && typeof profile[field] !== 'string')
        throw new UsageError(`${path}: profiles.${name}.${field} must be a string`);
    }
    profiles.set(name, {
      ...(profile.url !== undefined ? { url: profile.url as string } : {}),
      ...(profile.key !== undefined ? { key: profile.key as string } : {}),
    });
  }
  return { default: data.default, profiles };
}

/** The chosen profile (`--profile`, else `DQ_PROFILE`, else the file's default), or none. */
function chooseProfile(input: ConnectionInput): { name: string; profile: Profile } | undefined {
  const path = configPath(input.env, input.home);
  const named = input.flags.profile ?? (input.env.DQ_PROFILE || undefined);
  const text = input.readFile(path);
  if (text === undefined) {
    if (named !== undefined)
      throw new UsageError(
        `profile "${named}" asked for (${input.flags.profile !== undefined ? '--profile' : 'DQ_PROFILE'}), but there is no profile file ${path}`,
      );
    return undefined;
  }
  const file = parseProfiles(text, path);
  const name = named ?? file.default;
  if (name === undefined) return undefined;
  const profile = file.profiles.get(name);
  if (!profile)
    throw new UsageError(
      `no profile "${name}" in ${path} (profiles: ${[...file.profiles.keys()].join(', ') || 'none'})`,
    );
  return { name, profile };
}

const isLoopback = (url: URL) => ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);

/** Resolves the base URL and key, flag > environment > profile > default; throws UsageError when none fits. */
export function resolveConnection(input: ConnectionInput): Connection {
  const chosen = chooseProfile(input);
  const pick = (
    flag: string | undefined,
    env: string | undefined,
    fromProfile: string | undefined,
  ): [string, Source] | undefined =>
    flag !== undefined
      ? [flag, 'flag']
      : env
        ? [env, 'env']
        : fromProfile !== undefined
          ? [fromProfile, 'profile']
          : undefined;
  const [url, urlSource] = pick(input.flags.url, input.env.DQ_URL, chosen?.profile.url) ?? [DEFAULT_URL, 'default'];
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`the base URL "${url}" (from ${urlSource}) is not a URL; give one like ${DEFAULT_URL}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new UsageError(`the base URL "${url}" (from ${urlSource}) must be http:// or https://`);
  const key =
    pick(input.flags.key, input.env.DQ_KEY, chosen?.profile.key) ??
    (isLoopback(parsed) ? [DEV_KEY, 'default' as const] : undefined);
  if (!key || key[0] === '') {
    throw new UsageError(
      `no API key for ${url}: give --key, set DQ_KEY, or add "key" to a profile in ${configPath(input.env, input.home)}`,
    );
  }
  if (!/^[\x21-\x7e]+$/.test(key[0]))
    throw new UsageError(
      `the API key (from ${key[1]}) must be printable ASCII without spaces, as an HTTP header carries it`,
    );
  return { url, key: key[0], profile: chosen?.name, sources: { url: urlSource, key: key[1] } };
}
