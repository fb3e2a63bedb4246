import { pauseSchedule } from '../lib/edge/routes';
import { httpRoute } from '../lib/edge/http';

/** POST /schedules/{topic}/{id}/pause: no occurrence of the schedule starts until it is resumed; its definition is kept. */
export const handler = httpRoute(pauseSchedule);
