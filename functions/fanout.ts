import type { Context } from 'aws-lambda';
import { runFanout } from '../lib/workers/fanout';
import { takeColdStart } from '../lib/platform/log';
import { runtime } from '../lib/platform/runtime';

/** The fan-out: claims ready jobs of the given topics and invokes their handlers asynchronously. */
export async function handler(
  event: { token?: string; topics?: string[] } | undefined,
  context: Context,
): Promise<unknown> {
  const rt = runtime();
  const log = rt.log.child({ function_request_id: context.awsRequestId, cold_start: takeColdStart() });
  try {
    // a paced topic's wait for its next start is bounded by what is left of this invocation
    const remainingMs =
      typeof context.getRemainingTimeInMillis === 'function' ? () => context.getRemainingTimeInMillis() : undefined;
    const reports = await runFanout(
      { ...rt, log, timings: rt.config.timings, ...(remainingMs ? { remainingMs } : {}) },
      {
        ...(typeof event?.token === 'string' ? { token: event.token } : {}),
        ...(Array.isArray(event?.topics) ? { topics: event.topics } : {}),
      },
    );
    log.info('fan-out finished', { reports });
    return reports;
  } catch (error) {
    log.error('fan-out failed; claimed jobs return after their ttr', { error });
    return { outcome: 'error' };
  }
}
