import { listGroup } from '../lib/api';
import { httpRoute } from '../lib/http';

/** GET /topics/{topic}/groups/{group}: one page of the group's jobs, with a cursor to the next. */
export const handler = httpRoute(listGroup);
