import { listTopics } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/** GET /topics: counts and next due time of every configured topic. */
export const handler = httpRoute(listTopics);
