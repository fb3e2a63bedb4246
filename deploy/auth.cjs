// custom.queue.auth: how the HTTP API authenticates requests. `token` (the default): a bearer key,
// checked by the Lambdas (README, Keys and scopes). `iam`: API Gateway's AWS_IAM authorization on
// every API route (all but GET /, /dashboard and /openapi.yaml), SigV4-signed requests, and three
// managed policies a role or user is given to call the API (DEPLOY.md, IAM instead of keys).
const AUTH_MODES = ['token', 'iam'];

/** custom.queue.auth, checked: 'token' or 'iam'; throws naming the setting. */
async function authMode(resolveVariable) {
  const value = await resolveVariable("self:custom.queue.auth, 'token'");
  const mode = value === null || value === undefined || value === '' ? 'token' : String(value);
  if (!AUTH_MODES.includes(mode))
    throw new Error(`custom.queue.auth must be ${AUTH_MODES.join(' or ')}, got ${JSON.stringify(value)}`);
  return mode;
}

/**
 * The execute-api:Invoke rights of each client policy: [method, path] of the routes, path
 * parameters as `*`. Each scope's list matches the scopes lib/api/routes.ts gives the routes (a
 * read policy reads jobs, topics, groups, flow keys and schedules; write adds every change; admin
 * is the whole API, the keys routes included). test/deploy/auth.test.ts checks them against the
 * template.
 */
const READ = [
  ['GET', '/jobs/*'],
  ['GET', '/topics'],
  ['GET', '/topics/*'],
  ['GET', '/schedules'],
  ['GET', '/schedules/*'],
  ['GET', '/whoami'],
];
const WRITE = [
  ...READ,
  ['POST', '/jobs'],
  ['POST', '/jobs/batch'],
  ['PUT', '/jobs/*'],
  ['DELETE', '/jobs/*'],
  ['POST', '/topics/*/dead/redrive'],
  ['DELETE', '/topics/*/groups/*'],
  ['PUT', '/schedules/*'],
  ['DELETE', '/schedules/*'],
  ['POST', '/schedules/*/*/pause'],
  ['POST', '/schedules/*/*/resume'],
  ['POST', '/topics/*/pause'],
  ['POST', '/topics/*/resume'],
  ['PUT', '/topics/*/flows/*'],
  ['DELETE', '/topics/*/flows/*'],
  ['POST', '/topics/*/flows/*/pause'],
  ['POST', '/topics/*/flows/*/resume'],
];
const ADMIN = [['*', '/*']];
const SCOPES = { Read: READ, Write: WRITE, Admin: ADMIN };

/** The ARN of routes `method` `path` of the stack's HTTP API, on any stage. */
const routeArn = ([method, path]) => ({
  'Fn::Sub': `arn:\${AWS::Partition}:execute-api:\${AWS::Region}:\${AWS::AccountId}:\${HttpApi}/*/${method}${path}`,
});

/** With auth iam: the three client policies and their ARNs as outputs (`{ Resources, Outputs }`, empty with token). */
async function authResources(resolveVariable, prefix) {
  if ((await authMode(resolveVariable)) !== 'iam') return {};
  const Resources = {};
  const Outputs = {};
  for (const [scope, routes] of Object.entries(SCOPES)) {
    Resources[`DqApi${scope}Policy`] = {
      Type: 'AWS::IAM::ManagedPolicy',
      Properties: {
        ManagedPolicyName: `${prefix}-api-${scope.toLowerCase()}`,
        Description: `Calls the delay queue's HTTP API ${prefix} with scope ${scope.toLowerCase()} (custom.queue.auth iam; DEPLOY.md)`,
        PolicyDocument: {
          Version: '2012-10-17',
          Statement: [{ Effect: 'Allow', Action: 'execute-api:Invoke', Resource: routes.map(routeArn) }],
        },
      },
    };
    Outputs[`Api${scope}PolicyArn`] = {
      Description: `Attach to a role or user that calls the API with scope ${scope.toLowerCase()}`,
      Value: { Ref: `DqApi${scope}Policy` },
    };
  }
  return { Resources, Outputs };
}

module.exports = { AUTH_MODES, SCOPES, authMode, authResources };
/** DQ_AUTH of every function. */
module.exports.mode = async ({ resolveVariable }) => authMode(resolveVariable);
/**
 * The `authorizer` of every API route: AWS_IAM with auth iam on the AWS stages; none with token,
 * and none on the local stage, whose serverless-offline 14 cannot start with an aws_iam httpApi
 * authorizer (it configures it as JWT and stops: "only supports retrieving JWT from the headers").
 */
module.exports.authorizer = async ({ resolveVariable }) => {
  if ((await authMode(resolveVariable)) !== 'iam') return null;
  return String(await resolveVariable('param:target')) === 'local' ? null : { type: 'aws_iam' };
};
