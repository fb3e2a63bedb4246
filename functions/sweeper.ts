import type { Context } from 'aws-lambda';
import { takeColdStart } from '../lib/platform/log';
import { runtime } from '../lib/platform/runtime';
import { runSweeper, type SweeperReport } from '../lib/workers/sweeper';

/** The sweeper: run by the per-minute tick, by itself, and by adds that need it sooner. */
export async function handler(
  event: { source?: string } | undefined,
  context: Context,
): Promise<SweeperReport | { outcome: 'error' }> {
  const rt = runtime();
  const log = rt.log.child({
    function_request_id: context.awsRequestId,
    cold_start: takeColdStart(),
    source: event?.source ?? 'unknown',
  });
  try {
    const report = await runSweeper({
      ...rt,
      log,
      timings: rt.config.timings,
      remainingMs: () => context.getRemainingTimeInMillis(),
    });
    log.info('sweeper finished', { ...report });
    return report;
  } catch (error) {
    log.error('sweeper failed; the next tick starts another', { error });
    return { outcome: 'error' };
  }
}
