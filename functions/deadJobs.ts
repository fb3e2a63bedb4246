import { listDead } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/** GET /topics/{topic}/dead: dead jobs, oldest first, with their last errors. */
export const handler = httpRoute(listDead);
