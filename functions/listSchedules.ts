import { listSchedules } from '../lib/api';
import { httpRoute } from '../lib/http';

/** GET /schedules?topic=: one page of a topic's schedules by id, with a cursor to the next. */
export const handler = httpRoute(listSchedules);
