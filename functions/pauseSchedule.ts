import { pauseSchedule } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/**
 * POST /schedules/{topic}/{id}/pause: no occurrence of the schedule starts until it is resumed; its definition is kept.
 */
export const handler = httpRoute(pauseSchedule);
