import { resumeSchedule } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/**
 * POST /schedules/{topic}/{id}/resume: the schedule runs again, catching up on missed runs by its catchUp; wakes the
 * sweeper.
 */
export const handler = httpRoute(resumeSchedule);
