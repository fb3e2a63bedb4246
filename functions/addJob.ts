import { addJob } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/** POST /jobs: adds one delayed job (201, or 409 JOB_EXISTS with the existing job). */
export const handler = httpRoute(addJob);
