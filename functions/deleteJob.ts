import { deleteJob } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/** DELETE /jobs/{topic}/{id}: cancels a pending or running job. */
export const handler = httpRoute(deleteJob);
