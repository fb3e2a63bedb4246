/** A runtime of its own for tests that run handlers through their seam (not the process's). */
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import type { TopicInput } from '../../lib/core/queue-config';
import { createRuntime, type Runtime } from '../../lib/platform/runtime';
import { startRedis, type RedisProcess } from './redis';

export function testRuntime(
  redisUrl: string,
  topics: Record<string, TopicInput>,
  env: Record<string, string> = {},
): Runtime {
  return createRuntime({
    DQ_CONFIG: JSON.stringify({ topics }),
    REDIS_URL: redisUrl,
    API_TOKEN: 't',
    WEBHOOK_SECRET: 's',
    DQ_FUNCTION_PREFIX: 'x-',
    LOG_LEVEL: 'error',
    ...env,
  });
}

/**
 * Gives the enclosing suite a redis-server of its own and a test runtime on it for `topics`: started in a `before`
 * hook, stopped (the runtime's client first) in an `after` hook. Call at the top of a describe().
 */
export function useTestRuntime(topics: Record<string, TopicInput>): () => Runtime {
  let server: RedisProcess | undefined;
  let rt: Runtime | undefined;
  before(async () => {
    server = await startRedis();
    rt = testRuntime(server.url, topics);
  });
  after(async () => {
    rt?.redis.disconnect();
    await server?.stop();
  });
  return () => rt ?? assert.fail('the test runtime is not started yet');
}
