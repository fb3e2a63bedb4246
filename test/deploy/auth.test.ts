/**
 * custom.queue.auth (deploy/auth.cjs): with `iam`, API Gateway's AWS_IAM authorization on every API
 * route but the three open ones, three least-privilege client policies with their ARNs as outputs,
 * and DQ_AUTH=iam in every function; with the default `token`, no route has an authorizer and there
 * are no client policies. Checked in the packaged templates (dummy credentials), one per value.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import {
  cfnLint,
  functions,
  hasCfnLint,
  ofType,
  packageStage,
  printConfig,
  projectCopy,
  type Template,
  text,
} from '../support/stack';

const OPEN = ['GET /', 'GET /dashboard', 'GET /openapi.yaml'];

/** Route keys that a policy with execute-api ARNs `resources` may invoke (`*` matches anything, as in IAM). */
function allowed(resources: { 'Fn::Sub': string }[], routeKeys: string[]): string[] {
  const patterns = resources.map((r) => {
    const match =
      /^arn:\$\{AWS::Partition\}:execute-api:\$\{AWS::Region\}:\$\{AWS::AccountId\}:\$\{HttpApi\}\/\*\/(.+)$/.exec(
        r['Fn::Sub'],
      );
    assert.ok(match, `not a route ARN of this API: ${text(r)}`);
    return new RegExp(`^${match[1]!.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);
  });
  // a route key `GET /jobs/{topic}/{id}` is invoked as GET/jobs/<topic>/<id>
  return routeKeys.filter((key) => patterns.some((p) => p.test(key.replace(' ', '').replace(/\{[^}]+\}/g, 'x'))));
}

describe('custom.queue.auth (serverless package, dummy credentials)', () => {
  const dirs: string[] = [];
  let token: Template;
  let iam: Template;
  let iamPath: string;
  before(async () => {
    dirs.push(projectCopy(), projectCopy());
    [{ template: token }, { template: iam, path: iamPath }] = await Promise.all([
      packageStage(dirs[0]!, []),
      packageStage(dirs[1]!, ['auth=iam']),
    ]);
  });
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  const routes = (t: Template) =>
    ofType(t, 'AWS::ApiGatewayV2::Route').map(
      ([, r]) => r.Properties as { RouteKey: string; AuthorizationType?: string },
    );

  it('token (the default): no route has an authorizer, no client policies, DQ_AUTH=token', () => {
    assert.ok(routes(token).length >= 20);
    for (const route of routes(token)) assert.equal(route.AuthorizationType, undefined, route.RouteKey);
    assert.deepEqual(
      Object.keys(token.Resources).filter((id) => /^DqApi.*Policy$/.test(id)),
      [],
    );
    for (const [id, fn] of functions(token)) assert.equal(fn.Properties.Environment.Variables.DQ_AUTH, 'token', id);
  });

  it('iam: AWS_IAM on every API route, the dashboard, / and /openapi.yaml open', () => {
    const all = routes(iam);
    assert.deepEqual(
      all.map((r) => r.RouteKey).sort(),
      routes(token)
        .map((r) => r.RouteKey)
        .sort(),
      'the same routes',
    );
    for (const route of all)
      assert.equal(route.AuthorizationType, OPEN.includes(route.RouteKey) ? undefined : 'AWS_IAM', route.RouteKey);
    assert.equal(all.filter((r) => r.AuthorizationType === undefined).length, OPEN.length);
    for (const [id, fn] of functions(iam)) assert.equal(fn.Properties.Environment.Variables.DQ_AUTH, 'iam', id);
  });

  it('iam: read, write and admin policies allow execute-api:Invoke on exactly their scope’s routes, ARNs as outputs', () => {
    const keys = routes(iam)
      .map((r) => r.RouteKey)
      .filter((k) => !OPEN.includes(k));
    const reads = keys.filter((k) => k.startsWith('GET ') && !k.startsWith('GET /keys'));
    const changes = keys.filter((k) => !k.startsWith('GET ') && !/ \/keys/.test(k));
    const expected: Record<string, string[]> = { Read: reads, Write: [...reads, ...changes], Admin: keys };
    for (const [scope, want] of Object.entries(expected)) {
      const policy = iam.Resources[`DqApi${scope}Policy`];
      assert.equal(policy?.Type, 'AWS::IAM::ManagedPolicy', scope);
      const statements = policy!.Properties.PolicyDocument.Statement as {
        Effect: string;
        Action: string;
        Resource: { 'Fn::Sub': string }[];
      }[];
      assert.equal(statements.length, 1);
      assert.equal(statements[0]!.Effect, 'Allow');
      assert.equal(statements[0]!.Action, 'execute-api:Invoke');
      assert.deepEqual(allowed(statements[0]!.Resource, keys).sort(), want.sort(), `${scope} policy routes`);
      assert.deepEqual(iam.Outputs?.[`Api${scope}PolicyArn`]?.Value, { Ref: `DqApi${scope}Policy` }, `${scope} output`);
    }
    assert.ok(reads.includes('GET /jobs/{topic}/{id}') && !reads.includes('GET /keys'));
    assert.ok(changes.includes('POST /jobs') && !changes.includes('POST /keys'));
  });

  // W3005 (DependsOn already implied by a Ref or GetAtt) comes from the framework's templates, as in template.test.ts.
  it(
    'iam: the template passes AWS cfn-lint (ignoring W3005)',
    { skip: !hasCfnLint() && 'cfn-lint is not on PATH' },
    () => {
      const lint = cfnLint(iamPath);
      assert.equal(lint.status, 0, `cfn-lint ${iamPath}:\n${lint.output}`);
    },
  );

  it('iam on the local stage: DQ_AUTH=iam, no authorizer (serverless-offline 14 cannot start with one)', async () => {
    const { status, config, output } = await printConfig(['--stage', 'local', '--param=auth=iam']);
    assert.equal(status, 0, output);
    assert.equal(config.provider.environment.DQ_AUTH, 'iam');
    const events = Object.values(
      config.functions as Record<string, { events?: { httpApi?: { authorizer?: unknown } }[] }>,
    ).flatMap((fn) => fn.events ?? []);
    assert.ok(events.filter((e) => e.httpApi).length >= 20);
    for (const event of events) assert.equal(event.httpApi?.authorizer ?? null, null, text(event));
  });

  it('refuses an unknown auth, naming the setting', async () => {
    const { status, output } = await printConfig(['--stage', 'prod', '--param=auth=oauth']);
    assert.notEqual(status, 0);
    assert.match(output, /custom\.queue\.auth must be token or iam, got "oauth"/);
  });
});
