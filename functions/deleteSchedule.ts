import { deleteSchedule } from '../lib/api';
import { httpRoute } from '../lib/http';

/** DELETE /schedules/{topic}/{id}: deletes the schedule and withdraws its pending occurrence, or 404. */
export const handler = httpRoute(deleteSchedule);
