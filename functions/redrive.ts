import { redrive } from '../lib/api';
import { httpRoute } from '../lib/http';

/** POST /topics/{topic}/dead/redrive: moves dead jobs back to delayed, due now. */
export const handler = httpRoute(redrive);
