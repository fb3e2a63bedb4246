import { listJobs } from '../lib/edge/routes';
import { httpRoute } from '../lib/edge/http';

/** GET /topics/{topic}/jobs: one page of a topic's delayed, ready, running or dead jobs, in time order. */
export const handler = httpRoute(listJobs);
