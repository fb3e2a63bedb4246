import { listSchedules } from '../lib/edge/routes';
import { httpRoute } from '../lib/edge/http';

/** GET /schedules?topic=: one page of a topic's schedules by id, with a cursor to the next. */
export const handler = httpRoute(listSchedules);
