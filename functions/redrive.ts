import { redrive } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/** POST /topics/{topic}/dead/redrive: moves dead jobs back to delayed, due now. */
export const handler = httpRoute(redrive);
