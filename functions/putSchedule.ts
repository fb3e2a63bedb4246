import { putSchedule } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/** PUT /schedules/{topic}/{id}: creates a recurring schedule (201) or replaces it and its pending occurrence (200). */
export const handler = httpRoute(putSchedule);
