import { addJobs } from '../lib/edge/routes';
import { httpRoute } from '../lib/edge/http';

/** POST /jobs/batch: adds up to 500 jobs, one result per job. */
export const handler = httpRoute(addJobs);
