import { addJob } from '../lib/edge/routes';
import { httpRoute } from '../lib/edge/http';

/** POST /jobs: adds one delayed job (201, or 409 JOB_EXISTS with the existing job). */
export const handler = httpRoute(addJob);
