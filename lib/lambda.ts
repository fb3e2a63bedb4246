import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { AppConfig } from './config';

/** Starts functions of this deployment asynchronously. */
export interface Invoker {
  /** Invokes function `name` (its serverless.yml key) with InvocationType Event; throws if not accepted. */
  invokeAsync(name: string, payload: unknown): Promise<void>;
}

/**
 * An invoker on the Lambda API (or serverless-offline's, when lambdaEndpoint is set). The SDK is
 * loaded at the first invoke, not at cold start: most API calls never invoke anything.
 */
export function createInvoker(config: Pick<AppConfig, 'functionPrefix' | 'lambdaEndpoint' | 'region'>): Invoker {
  let sdk: Promise<{ client: LambdaClient; InvokeCommand: typeof import('@aws-sdk/client-lambda').InvokeCommand }> | undefined;
  const load = () =>
    (sdk ??= import('@aws-sdk/client-lambda').then(({ LambdaClient, InvokeCommand }) => ({
      InvokeCommand,
      client: new LambdaClient({
        region: config.region,
        maxAttempts: 2,
        ...(config.lambdaEndpoint
          ? { endpoint: config.lambdaEndpoint, credentials: { accessKeyId: 'offline', secretAccessKey: 'offline' } }
          : {}),
      }),
    })));
  return {
    async invokeAsync(name, payload) {
      const { client, InvokeCommand } = await load();
      const result = await client.send(
        new InvokeCommand({
          FunctionName: config.functionPrefix + name,
          InvocationType: 'Event',
          Payload: Buffer.from(JSON.stringify(payload)),
        }),
      );
      if (result.StatusCode !== 202) throw new Error(`invoke of ${name} answered ${result.StatusCode}${result.FunctionError ? ` (${result.FunctionError})` : ''}`);
    },
  };
}
