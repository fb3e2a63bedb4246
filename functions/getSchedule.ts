import { getSchedule } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/** GET /schedules/{topic}/{id}: the schedule with its next 5 run times, or 404. */
export const handler = httpRoute(getSchedule);
