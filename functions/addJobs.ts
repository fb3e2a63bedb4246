import { addJobs } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/** POST /jobs/batch: adds up to 500 jobs, one result per job. */
export const handler = httpRoute(addJobs);
