import { redrive } from '../lib/edge/routes';
import { httpRoute } from '../lib/edge/http';

/** POST /topics/{topic}/dead/redrive: moves dead jobs back to delayed, due now. */
export const handler = httpRoute(redrive);
