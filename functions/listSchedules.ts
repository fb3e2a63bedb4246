import { listSchedules } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/** GET /schedules?topic=: one page of a topic's schedules by id, with a cursor to the next. */
export const handler = httpRoute(listSchedules);
