import { listGroup } from '../lib/edge/routes';
import { httpRoute } from '../lib/edge/http';

/** GET /topics/{topic}/groups/{group}: one page of the group's jobs, with a cursor to the next. */
export const handler = httpRoute(listGroup);
