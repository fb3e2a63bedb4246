import { addJobs } from '../lib/api';
import { httpRoute } from '../lib/http';

/** POST /jobs/batch: adds up to 500 jobs, one result per job. */
export const handler = httpRoute(addJobs);
