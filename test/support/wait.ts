/** Waits on a condition in end-to-end tests: a bounded poll, never a fixed sleep. */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Resolves with `check`'s first truthy answer, polled every 100 ms; fails after `timeoutMs` (a ceiling, so a stuck
 * stack fails the test instead of hanging it: a slow machine only waits longer).
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  timeoutMs = 120_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) assert.fail(`timed out after ${timeoutMs / 1000}s waiting for ${what}`);
    await sleep(100);
  }
}
