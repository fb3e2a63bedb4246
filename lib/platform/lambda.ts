import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { AppConfig } from '../core/queue-config';

type Sdk = typeof import('@aws-sdk/client-lambda');

/**
 * The SDK's exports from its dynamic import. In esbuild's split ESM output a dynamically imported
 * CommonJS module arrives with its exports only on `default` (evanw/esbuild#3245); unbundled, under
 * tsx and in CommonJS bundles they are named exports.
 */
function sdkExports(mod: Sdk | { default: Sdk }): Sdk {
  if ('LambdaClient' in mod && typeof mod.LambdaClient === 'function') return mod;
  const inner = (mod as { default?: Sdk }).default;
  if (inner && typeof inner.LambdaClient === 'function') return inner;
  throw new Error('@aws-sdk/client-lambda loaded without LambdaClient');
}

/** Starts functions of this deployment asynchronously. */
export interface Invoker {
  /** Invokes function `name` (its serverless.yml key) with InvocationType Event; throws if not accepted. */
  invokeAsync(name: string, payload: unknown): Promise<void>;
}

/**
 * An invoker on the Lambda API (or serverless-offline's, when lambdaEndpoint is set). The SDK is
 * loaded at the first invoke, not at cold start: most API calls never invoke anything. Keep the
 * import dynamic and keep it the only import of the SDK: with serverless.yml's ESM output and code
 * splitting, esbuild puts the SDK into chunk files that Node reads only when this import runs.
 * A failed load (a missing chunk) is retried at the next invoke rather than remembered.
 */
export function createInvoker(config: Pick<AppConfig, 'functionPrefix' | 'lambdaEndpoint' | 'region'>): Invoker {
  let sdk: Promise<{ client: LambdaClient; InvokeCommand: Sdk['InvokeCommand'] }> | undefined;
  const load = () =>
    (sdk ??= import('@aws-sdk/client-lambda').then(sdkExports).then(
      ({ LambdaClient, InvokeCommand }) => ({
        InvokeCommand,
        client: new LambdaClient({
          region: config.region,
          maxAttempts: 2,
          ...(config.lambdaEndpoint
            ? { endpoint: config.lambdaEndpoint, credentials: { accessKeyId: 'offline', secretAccessKey: 'offline' } }
            : {}),
        }),
      }),
      (error: unknown) => {
        sdk = undefined;
        throw error;
      },
    ));
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
      if (result.StatusCode !== 202)
        throw new Error(
          `invoke of ${name} answered ${result.StatusCode}${result.FunctionError ? ` (${result.FunctionError})` : ''}`,
        );
    },
  };
}
