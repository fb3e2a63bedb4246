import { getJob } from '../lib/edge/routes';
import { httpRoute } from '../lib/edge/http';

/** GET /jobs/{topic}/{id}: the job, or 404. */
export const handler = httpRoute(getJob);
