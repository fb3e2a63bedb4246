import { resumeSchedule } from '../lib/edge/routes';
import { httpRoute } from '../lib/edge/http';

/** POST /schedules/{topic}/{id}/resume: the schedule runs again, catching up on missed runs by its catchUp; wakes the sweeper. */
export const handler = httpRoute(resumeSchedule);
