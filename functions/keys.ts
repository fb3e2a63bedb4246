import { keys } from '../lib/edge/routes';
import { httpRoute } from '../lib/edge/http';

/** POST /keys (create: the secret is shown once), GET /keys (list, never a secret), DELETE /keys/{name} (revoke): admin keys only. */
export const handler = httpRoute(keys);
