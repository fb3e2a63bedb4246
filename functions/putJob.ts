import { putJob } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/** PUT /jobs/{topic}/{id}: creates the job (201) or replaces it while pending (200). */
export const handler = httpRoute(putJob);
