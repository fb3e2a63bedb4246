import { cancelGroup } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/**
 * DELETE /topics/{topic}/groups/{group}: cancels the group's pending jobs (and drops its running attempts' results).
 */
export const handler = httpRoute(cancelGroup);
