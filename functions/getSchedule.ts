import { getSchedule } from '../lib/api';
import { httpRoute } from '../lib/http';

/** GET /schedules/{topic}/{id}: the schedule with its next 5 run times, or 404. */
export const handler = httpRoute(getSchedule);
