import { putSchedule } from '../lib/api';
import { httpRoute } from '../lib/http';

/** PUT /schedules/{topic}/{id}: creates a recurring schedule (201) or replaces it and its pending occurrence (200). */
export const handler = httpRoute(putSchedule);
