import { deleteSchedule } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/** DELETE /schedules/{topic}/{id}: deletes the schedule and withdraws its pending occurrence, or 404. */
export const handler = httpRoute(deleteSchedule);
