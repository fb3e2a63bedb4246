import { topicHandler } from '../../lib/workers/handler';

/** The README's example topic: logs each job (never its body) and succeeds. */
export const handler = topicHandler(async (job, { log }) => {
  log.info('example job handled', { bodyBytes: JSON.stringify(job.body).length });
});
