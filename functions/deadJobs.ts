import { listDead } from '../lib/edge/routes';
import { httpRoute } from '../lib/edge/http';

/** GET /topics/{topic}/dead: dead jobs, oldest first, with their last errors. */
export const handler = httpRoute(listDead);
