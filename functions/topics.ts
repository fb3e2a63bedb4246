import { listTopics } from '../lib/api';
import { httpRoute } from '../lib/http';

/** GET /topics: counts and next due time of every configured topic. */
export const handler = httpRoute(listTopics);
