import { listGroup } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/** GET /topics/{topic}/groups/{group}: one page of the group's jobs, with a cursor to the next. */
export const handler = httpRoute(listGroup);
