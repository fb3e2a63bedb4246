import { cancelGroup } from '../lib/edge/routes';
import { httpRoute } from '../lib/edge/http';

/** DELETE /topics/{topic}/groups/{group}: cancels the group's pending jobs (and drops its running attempts' results). */
export const handler = httpRoute(cancelGroup);
