/** The check of a URL a job is POSTed to (its `url`, or its callback's): one rule for both. */
import { URL_MAX_LENGTH } from './limits';

/** `value` as a normalised http(s) URL of at most URL_MAX_LENGTH characters without credentials, or what is wrong. */
export function checkHttpUrl(value: unknown): string | { message: string } {
  if (typeof value !== 'string' || value.length > URL_MAX_LENGTH)
    return { message: `must be an http(s) URL of at most ${URL_MAX_LENGTH} characters` };
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { message: 'is not a valid URL' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { message: 'must use https or http' };
  if (url.username || url.password) return { message: 'must not carry credentials' };
  return url.href;
}
