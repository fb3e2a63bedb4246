import { listDead } from '../lib/api';
import { httpRoute } from '../lib/http';

/** GET /topics/{topic}/dead: dead jobs, oldest first, with their last errors. */
export const handler = httpRoute(listDead);
