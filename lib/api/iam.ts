/**
 * The caller of a request under `custom.queue.auth: iam`. API Gateway has checked the request's
 * SigV4 signature and the caller's IAM policy (execute-api:Invoke on the route, DEPLOY.md) before
 * the Lambda runs, and puts who signed it in `requestContext.authorizer.iam`. The IAM policy is the
 * scope check, so the caller is admin on every topic here; its name, recorded in `updatedBy` and the
 * request log, is read from the signer's ARN.
 */
import { createHash } from 'node:crypto';
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
/** Joins a changed name to its tag: never in a name kept whole (IAM names hold no `:`, ours one at most). */
const TAG_MARK = '::';
const TAG_LENGTH = 10; // hex digits of SHA-256: 40 bits

/**
 * `name` as a key name (KEY_NAME_PATTERN): whole when it is one, holds no `::` and fits in 64 characters; else with
 * every character outside [A-Za-z0-9._:-] as `_`, cut to 52, then `::` and the first 10 hex digits of the SHA-256 of
 * `whole` (the ARN or callerId it came from), so that two callers whose names differ only past the cut, or only in
 * characters a key name may not hold, never share a name. '' for none.
 */
function fit(name: string, whole: string): string {
  if (name === '') return '';
  if (name.length <= MAX_NAME && /^[A-Za-z0-9._:-]+$/.test(name) && !name.includes(TAG_MARK)) return name;
  const tag = createHash('sha256').update(whole).digest('hex').slice(0, TAG_LENGTH);
  const kept = name.replace(/[^A-Za-z0-9._:-]/g, '_').slice(0, MAX_NAME - TAG_MARK.length - TAG_LENGTH);
  return `${kept}${TAG_MARK}${tag}`;
}

/**
 * A short, stable name for the signer of ARN `arn` (valid for KEY_NAME_PATTERN), or null when the
 * ARN is not an IAM or STS principal:
 * - `arn:aws:iam::123456789012:user/ops/alice` → `alice`
 * - `arn:aws:sts::123456789012:assumed-role/deployer/ci-run-7` → `deployer:ci-run-7` (role, then session)
 * - `arn:aws:sts::123456789012:federated-user/bob` → `bob`
 * - `arn:aws:iam::123456789012:root` → `root:123456789012`
 * A name longer than 64 characters, or with characters a key name may not hold (`_` then), is cut to 52 and tagged
 * with `::` and a hash of the ARN (fit): distinct callers keep distinct names.
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
  const fitted = fit(name, arn);
  return fitted === '' ? null : fitted;
}

/**
 * The caller of a request API Gateway authorised with IAM: admin, every topic; null without a usable identity (the
 * route answers 401).
 */
export function iamCaller(identity: IamIdentity | null | undefined): Caller | null {
  if (!identity) return null;
  const fromArn = identity.userArn ? iamName(identity.userArn) : null;
  const name = fromArn ?? (identity.callerId ? fit(identity.callerId, identity.callerId) : '');
  return name ? { name, scope: 'admin', topics: null } : null;
}
