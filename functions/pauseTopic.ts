import { pauseTopic } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/** POST /topics/{topic}/pause: no job of the topic starts until it is resumed; adds are still taken. */
export const handler = httpRoute(pauseTopic);
