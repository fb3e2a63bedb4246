/**
 * Webhooks, as the rest of the code imports them: signing and verifying (webhook/sign.ts), which
 * addresses may receive a delivery (webhook/address.ts), and the delivery itself (webhook/deliver.ts).
 */
export {
  SIGNATURE_HEADER,
  signWebhook,
  TIMESTAMP_HEADER,
  verifyWebhook,
  type VerifyWebhookOptions,
  type VerifyWebhookResult,
} from './webhook/sign';
export { isForbiddenAddress } from './webhook/address';
export {
  ATTEMPT_HEADER,
  deliverWebhook,
  JOB_ID_HEADER,
  TOPIC_HEADER,
  WEBHOOK_USER_AGENT,
  type DeliverWebhookOptions,
  type DeliveryResult,
  type WebhookJob,
} from './webhook/deliver';
