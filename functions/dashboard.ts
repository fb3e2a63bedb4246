import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { staticResponse } from '../lib/api/dashboard';

/**
 * GET /dashboard (the operator's page), GET /openapi.yaml (the API's description) and GET / (links to both): static, no
 * token needed.
 */
export const handler = async (event: Pick<APIGatewayProxyEventV2, 'rawPath'>) => staticResponse(event.rawPath);
