import { deleteSchedule } from '../lib/edge/routes';
import { httpRoute } from '../lib/edge/http';

/** DELETE /schedules/{topic}/{id}: deletes the schedule and withdraws its pending occurrence, or 404. */
export const handler = httpRoute(deleteSchedule);
