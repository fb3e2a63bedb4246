import { putJob } from '../lib/api';
import { httpRoute } from '../lib/http';

/** PUT /jobs/{topic}/{id}: creates the job (201) or replaces it while pending (200). */
export const handler = httpRoute(putJob);
