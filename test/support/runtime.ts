/** A runtime of its own for tests that run handlers through their seam (not the process's). */
import type { TopicInput } from '../../lib/core/queue-config';
import { createRuntime, type Runtime } from '../../lib/platform/runtime';

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
