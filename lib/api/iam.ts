/**
 * The caller of a request under `custom.queue.auth: iam`. API Gateway has checked the request's
 * SigV4 signature and the caller's IAM policy (execute-api:Invoke on the route, DEPLOY.md) before
 * the Lambda runs, and puts who signed it in `requestContext.authorizer.iam`. The IAM policy is the
 * scope check, so the caller is admin on every topic here; its name, recorded in `updatedBy` and the
 * request log, is read from the signer's ARN.
 */
import type { Caller } from '../engine';

/**
 * What API Gateway tells of the signer (@types/aws-lambda APIGatewayEventRequestContextIAMAuthorizer['iam'], the fields
 * read here).
 */
export interface IamIdentity {
  userArn?: string | null;
  callerId?: string | null;
  accountId?: string | null;
}

const MAX_NAME = 64; // KEY_NAME_PATTERN's length

/** `value` with every character outside [A-Za-z0-9._:-] as `_`, at most 64 characters; '' for none. */
function sanitise(value: string): string {
  return value.replace(/[^A-Za-z0-9._:-]/g, '_').slice(0, MAX_NAME);
}

/**
 * A short, stable name for the signer of ARN `arn` (valid for KEY_NAME_PATTERN), or null when the
 * ARN is not an IAM or STS principal:
 * - `arn:aws:iam::123456789012:user/ops/alice` → `alice`
 * - `arn:aws:sts::123456789012:assumed-role/deployer/ci-run-7` → `deployer:ci-run-7` (role, then session)
 * - `arn:aws:sts::123456789012:federated-user/bob` → `bob`
 * - `arn:aws:iam::123456789012:root` → `root:123456789012`
 * Characters a key name may not hold become `_`; a name is cut at 64 characters.
 */
export function iamName(arn: string): string | null {
  const match = /^arn:[a-z-]+:(iam|sts)::(\d{12}):(.+)$/.exec(arn);
  if (!match) return null;
  const [, , account, resource] = match as unknown as [string, string, string, string];
  if (resource === 'root') return `root:${account}`;
  const parts = resource.split('/');
  const kind = parts[0];
  let name: string;
  if (kind === 'assumed-role' && parts.length >= 3) name = `${parts[1]}:${parts.slice(2).join('/')}`;
  else if ((kind === 'user' || kind === 'federated-user' || kind === 'role') && parts.length >= 2)
    name = parts[parts.length - 1]!;
  else return null;
  const clean = sanitise(name);
  return clean === '' ? null : clean;
}

/**
 * The caller of a request API Gateway authorised with IAM: admin, every topic; null without a usable identity (the
 * route answers 401).
 */
export function iamCaller(identity: IamIdentity | null | undefined): Caller | null {
  if (!identity) return null;
  const fromArn = identity.userArn ? iamName(identity.userArn) : null;
  const name = fromArn ?? (identity.callerId ? sanitise(identity.callerId) : '');
  return name ? { name, scope: 'admin', topics: null } : null;
}
