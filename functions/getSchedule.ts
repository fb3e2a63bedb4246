import { getSchedule } from '../lib/edge/routes';
import { httpRoute } from '../lib/edge/http';

/** GET /schedules/{topic}/{id}: the schedule with its next 5 run times, or 404. */
export const handler = httpRoute(getSchedule);
