import { whoami } from '../lib/edge/routes';
import { httpRoute } from '../lib/edge/http';

/** GET /whoami: the name, scope and topics of the key the request came with. */
export const handler = httpRoute(whoami);
