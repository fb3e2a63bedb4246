import { whoami } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/** GET /whoami: the name, scope and topics of the key the request came with. */
export const handler = httpRoute(whoami);
