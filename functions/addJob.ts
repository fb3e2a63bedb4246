import { addJob } from '../lib/api';
import { httpRoute } from '../lib/http';

/** POST /jobs: adds one delayed job (201, or 409 JOB_EXISTS with the existing job). */
export const handler = httpRoute(addJob);
