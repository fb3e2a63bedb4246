import { dashboardResponse } from '../lib/edge/dashboard';

/** GET /dashboard: the operator's page, no token needed to load it (it asks for one). */
export const handler = async () => dashboardResponse();
