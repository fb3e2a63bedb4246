import { runtime } from '../../lib/platform/runtime';
import { topicHandler } from '../../lib/workers/handler';
import { deliverWebhook } from '../../lib/workers/webhook';

/** The built-in webhook topic handler: POSTs each job's body to its url, signed; 2xx is success. */
export const handler = topicHandler(async (job, { topic, signal, timeLeftMs, now, traceparent }) => {
  const { config } = runtime();
  await deliverWebhook(
    { ...job, topic },
    {
      secret: config.webhookSecrets,
      allowPrivate: config.webhookAllowPrivate,
      allowHosts: config.webhookAllowHosts,
      denyCidrs: config.webhookDenyCidrs,
      signal,
      timeoutMs: timeLeftMs(),
      now, // signatures carry the Redis clock's time: a host with a skewed clock still passes receivers' checks
      ...(traceparent ? { traceparent } : {}),
    },
  );
});
