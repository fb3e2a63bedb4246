import { resumeTopic } from '../lib/api/routes';
import { httpRoute } from '../lib/api/http';

/** POST /topics/{topic}/resume: the topic's jobs start again, within its limits; wakes the sweeper. */
export const handler = httpRoute(resumeTopic);
