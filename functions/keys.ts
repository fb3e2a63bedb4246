import { keys } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/**
 * POST /keys (create: the secret is shown once), GET /keys (list, never a secret), DELETE /keys/{name} (revoke): admin
 * keys only.
 */
export const handler = httpRoute(keys);
