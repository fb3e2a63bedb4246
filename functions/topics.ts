import { listTopics } from '../lib/edge/routes';
import { httpRoute } from '../lib/edge/http';

/** GET /topics: counts and next due time of every configured topic. */
export const handler = httpRoute(listTopics);
