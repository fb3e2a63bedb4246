import { getJob } from '../lib/api';
import { httpRoute } from '../lib/http';

/** GET /jobs/{topic}/{id}: the job, or 404. */
export const handler = httpRoute(getJob);
