import { deleteJob } from '../lib/edge/routes';
import { httpRoute } from '../lib/edge/http';

/** DELETE /jobs/{topic}/{id}: cancels a pending or running job. */
export const handler = httpRoute(deleteJob);
