import { listJobs } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/** GET /topics/{topic}/jobs: one page of a topic's delayed, ready, running or dead jobs, in time order. */
export const handler = httpRoute(listJobs);
