import { resumeTopic } from '../lib/edge/routes';
import { httpRoute } from '../lib/edge/http';

/** POST /topics/{topic}/resume: the topic's jobs start again, within its limits; wakes the sweeper. */
export const handler = httpRoute(resumeTopic);
