import { flows } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/**
 * GET, PUT, DELETE /topics/{topic}/flows/{key}, POST …/pause and …/resume: a flow key's state, pinned limits and pause.
 */
export const handler = httpRoute(flows);
