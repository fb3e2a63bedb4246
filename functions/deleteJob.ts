import { deleteJob } from '../lib/api';
import { httpRoute } from '../lib/http';

/** DELETE /jobs/{topic}/{id}: cancels a pending or running job. */
export const handler = httpRoute(deleteJob);
