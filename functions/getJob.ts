import { getJob } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/** GET /jobs/{topic}/{id}: the job, or 404. */
export const handler = httpRoute(getJob);
