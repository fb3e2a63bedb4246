/**
 * `dq` (bin/dq.cjs) run as a child process against the real stack (redis-server + serverless
 * offline): jobs, groups, dead jobs (a webhook that fails once dies, is redriven and delivered),
 * schedules and topics, in tables and as --json, the connection from the environment and from a
 * profile file, and the exit codes of a usage error (2), a refusal (1), a miss (3) and no answer
 * (4). Waits are on conditions read through the client, never on time.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { DelayQueueClient, type Job, type Schedule, type TopicStats } from '../../lib/client';
import { freePort } from '../../scripts/support/process';
import { PROJECT_ROOT, startOffline, type OfflineProcess } from '../support/offline';
import { startReceiver, type Receiver } from '../support/receiver';
import { startRedis, type RedisProcess } from '../support/redis';

const SECRET = 'cli-webhook-secret';
const BIN = join(PROJECT_ROOT, 'bin', 'dq.cjs');
const RUN_LIMIT_MS = 120_000; // a hung CLI fails the test instead of hanging the suite; not a timing assert

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('the dq CLI against the stack', () => {
  let redisServer: RedisProcess;
  let offline: OfflineProcess;
  let receiver: Receiver;
  let queue: DelayQueueClient;
  let dir: string;
  let seq = 0;
  const uid = (label: string) => `${label}-${process.pid}-${++seq}`;

  /**
   * Runs `command` (node bin/dq.cjs, or another program) with the stack's URL and key in DQ_URL and DQ_KEY unless `env`
   * says otherwise.
   */
  function run(
    args: string[],
    options: { env?: Record<string, string | undefined>; stdin?: string; command?: string[] } = {},
  ): Promise<Run> {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DQ_URL: offline.baseUrl,
      DQ_KEY: offline.token,
      DQ_CONFIG: join(dir, 'absent.json'),
      DQ_PROFILE: undefined,
      ...options.env,
    };
    delete env.NODE_TEST_CONTEXT; // set by node --test for its subprocesses; not for this one
    for (const [name, value] of Object.entries(env)) if (value === undefined) delete env[name];
    const [program, ...prefix] = options.command ?? [process.execPath, BIN];
    const child = spawn(program!, [...prefix, ...args], { cwd: PROJECT_ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.stdin.end(options.stdin ?? '');
    const guard = setTimeout(() => child.kill('SIGKILL'), RUN_LIMIT_MS);
    return new Promise((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code) => {
        clearTimeout(guard);
        resolve({ code, stdout, stderr });
      });
    });
  }
  const dq = (...args: string[]) => run(args);

  /** `dq --json <args>` that must succeed: its stdout parsed. */
  async function dqJson<T>(...args: string[]): Promise<T> {
    const r = await run(['--json', ...args]);
    assert.equal(r.code, 0, `dq --json ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    assert.equal(r.stderr, '');
    return JSON.parse(r.stdout) as T;
  }

  const ok = (r: Run, what: string) => assert.equal(r.code, 0, `${what} exited ${r.code}: ${r.stderr}`);

  /** Polls job topic/id through the client until `state` (a generous limit, for a busy machine). */
  async function untilState(topic: string, id: string, state: string): Promise<Job> {
    const end = Date.now() + 60_000;
    for (;;) {
      const job = await queue.get(topic, id);
      if (job?.state === state) return job;
      if (Date.now() > end) assert.fail(`${topic}/${id} is not ${state} after 60 s: ${JSON.stringify(job)}`);
      await sleep(100);
    }
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dq-cli-'));
    [redisServer, receiver] = await Promise.all([startRedis(), startReceiver(SECRET)]);
    offline = await startOffline({ redisUrl: redisServer.url, env: { WEBHOOK_SECRET: SECRET } });
    queue = new DelayQueueClient({ baseUrl: offline.baseUrl, token: offline.token });
  });
  after(async () => {
    await offline?.stop();
    await receiver?.close();
    await redisServer?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('jobs add, get, put, list, cancel; a body from a file and from stdin; --json; a missing job exits 3', async () => {
    const id = uid('order');
    const added = await dq(
      'jobs',
      'add',
      'example',
      id,
      '--delay',
      '1h',
      '--body',
      '{"orderId":42}',
      '--max-attempts',
      '3',
      '--ttr',
      '20s',
    );
    ok(added, 'jobs add');
    assert.match(added.stdout, new RegExp(`^added example/${id}\\n`));
    assert.match(added.stdout, /^state +delayed$/m);
    assert.match(added.stdout, /^attempts +0 of 3$/m);

    const { job } = await dqJson<{ job: Job }>('jobs', 'get', 'example', id);
    assert.deepEqual([job.body, job.maxAttempts, job.ttr], [{ orderId: 42 }, 3, 20]);

    writeFileSync(join(dir, 'body.json'), '{"orderId": 43}\n');
    const put = await dq(
      'jobs',
      'put',
      'example',
      id,
      '--delay',
      '2h',
      '--body',
      `@${join(dir, 'body.json')}`,
      '--if-match',
      String(job.version),
    );
    ok(put, 'jobs put');
    assert.match(put.stdout, new RegExp(`^replaced example/${id}\\n`));
    const stale = await dq('jobs', 'put', 'example', id, '--delay', '2h', '--if-match', String(job.version));
    assert.equal(stale.code, 1);
    assert.match(
      stale.stderr,
      /^dq: VERSION_MISMATCH \(HTTP 412\): .*\n {2}the job as it is: example\/.*, state delayed, version \d+\n$/,
    );
    const replaced = await queue.get('example', id);
    assert.deepEqual(
      [replaced?.body, replaced?.maxAttempts],
      [{ orderId: 43 }, 5],
      "a put replaces the whole job: no --max-attempts, the topic's",
    );

    const from = Date.now();
    const listed = await dqJson<{ jobs: Job[]; next: string | null }>(
      'jobs',
      'list',
      'example',
      '--state',
      'delayed',
      '--from',
      String(from),
      '--to',
      new Date(from + 3 * 3_600_000).toISOString(),
      '--all',
    );
    assert.ok(
      listed.jobs.some((j) => j.id === id),
      `${id} is listed`,
    );
    assert.equal(listed.next, null);
    const table = await dq('jobs', 'list', 'example', '--from', String(from));
    ok(table, 'jobs list');
    assert.match(table.stdout, /^ID +STATE +RUN AT +ATTEMPTS +GROUP +BODY +LAST ERROR$/m);
    assert.match(
      table.stdout,
      new RegExp(`^${id} +delayed +\\S+ \\(in \\d+h[ \\dm]*\\) +0/5 +- +\\{"orderId":43\\}`, 'm'),
    );

    const cancelled = await dq('jobs', 'cancel', 'example', id);
    ok(cancelled, 'jobs cancel');
    assert.match(cancelled.stdout, /^state +cancelled$/m);

    const now = uid('now');
    ok(
      await run(['jobs', 'add', 'example', now, '--delay', '0', '--body', '-'], { stdin: '"hello"' }),
      'jobs add --body -',
    );
    assert.equal((await untilState('example', now, 'done')).body, 'hello');

    const missing = await dq('jobs', 'get', 'example', uid('missing'));
    assert.deepEqual([missing.code, missing.stdout], [3, '']);
    assert.match(missing.stderr, /^dq: NOT_FOUND: no job example\/missing-/);
    const missingJson = await dq('--json', 'jobs', 'cancel', 'example', 'no-such-job');
    assert.equal(missingJson.code, 3);
    assert.equal(JSON.parse(missingJson.stderr).error.code, 'NOT_FOUND');
  });

  it('jobs add --priority, --dedupe-key, --debounce-key: it says whether the add created, deduplicated or debounced', async () => {
    const key = uid('dd');
    const created = await dq('jobs', 'add', 'example', '--delay', '1h', '--priority', '-3', '--dedupe-key', key);
    ok(created, 'jobs add --dedupe-key');
    const id = new RegExp(`^added example/(${key}::\\S{16})\n`).exec(created.stdout)?.[1];
    assert.ok(id, created.stdout);
    assert.match(created.stdout, /^priority +-3$/m);
    const duplicate = await dq('jobs', 'add', 'example', '--delay', '1', '--dedupe-key', key, '--dedupe-window', '1h');
    ok(duplicate, 'a duplicate');
    assert.match(duplicate.stdout, new RegExp(`^duplicate of example/${id}: nothing changed`));
    assert.match((await dq('jobs', 'get', 'example', id)).stdout, /^priority +-3$/m);

    const bkey = uid('db');
    const args = ['jobs', 'add', 'example', '--debounce-key', bkey, '--debounce-period', '1h', '--body'];
    const first = await dqJson<{ job: Job }>(...args, '{"n":1}');
    const folded = await dq(...args, '{"n":2}');
    ok(folded, 'a fold');
    assert.match(folded.stdout, new RegExp(`^debounced into example/${first.job.id} `));
    assert.match(folded.stdout, /^body +\{"n":2\}$/m);
  });

  it('groups list (paged) and cancel (with --yes)', async () => {
    const group = uid('grp');
    const ids = [0, 1, 2].map((i) => `${group}-${i}`);
    const added = await queue.addMany(ids.map((id) => ({ topic: 'example', id, delay: 3600, group })));
    assert.ok(added.every((r) => r.ok));

    const page = await dq('groups', 'list', 'example', group, '--limit', '2');
    ok(page, 'groups list');
    assert.match(page.stdout, /^more: --cursor \S+$/m);
    const all = await dqJson<{ jobs: Job[]; next: null }>('groups', 'list', 'example', group, '--limit', '2', '--all');
    assert.deepEqual(all.jobs.map((j) => j.id).sort(), ids);

    const unconfirmed = await dq('groups', 'cancel', 'example', group);
    assert.equal(unconfirmed.code, 2);
    assert.match(unconfirmed.stderr, /add --yes to do it/);
    assert.ok(
      (await queue.listGroup('example', group)).jobs.every((j) => j.state === 'delayed'),
      'nothing was cancelled without --yes',
    );

    const cancelled = await dq('groups', 'cancel', 'example', group, '--yes');
    ok(cancelled, 'groups cancel');
    assert.equal(
      cancelled.stdout,
      `cancelled 3 delayed or ready jobs of group ${group}; 0 running (their results will be dropped)\n`,
    );
    assert.ok((await queue.listGroup('example', group)).jobs.every((j) => j.state === 'cancelled'));
  });

  it('dead list and redrive: a webhook that fails once dies, is listed, redriven and delivered', async () => {
    const id = uid('hook');
    const added = await dq(
      'jobs',
      'add',
      'webhook',
      id,
      '--delay',
      '0',
      '--webhook-url',
      `${receiver.url}/fail-1/${id}`,
      '--max-attempts',
      '1',
      '--body',
      '{"n":1}',
    );
    ok(added, 'jobs add webhook');
    await untilState('webhook', id, 'dead');

    const table = await dq('dead', 'list', 'webhook');
    ok(table, 'dead list');
    assert.match(table.stdout, /^ID +DIED AT +ATTEMPTS +GROUP +LAST ERROR$/m);
    assert.match(table.stdout, new RegExp(`^${id} +\\S+ \\(.*\\) +1/1 +- +.*HTTP 500`, 'm'));
    const page = await dqJson<{ jobs: (Job & { diedAt: string })[] }>('dead', 'list', 'webhook', '--limit', '100');
    assert.deepEqual(
      page.jobs.filter((j) => j.id === id).map((j) => j.state),
      ['dead'],
    );

    const redriven = await dq('dead', 'redrive', 'webhook', id);
    ok(redriven, 'dead redrive');
    assert.equal(redriven.stdout, 'redriven 1 dead jobs of webhook\n');
    const done = await untilState('webhook', id, 'done');
    assert.equal(done.attempts, 1);
    assert.equal(receiver.of(id).length, 2);
    assert.deepEqual(await dqJson('dead', 'redrive', 'webhook', '--count', '10'), { redriven: 0 });
  });

  it('schedules put, get, list, delete', async () => {
    const id = uid('report');
    const created = await dq('schedules', 'put', 'example', id, '--every', '1h', '--body', '{"report":"hourly"}');
    ok(created, 'schedules put');
    assert.match(created.stdout, new RegExp(`^created schedule example/${id}\\n`));
    assert.match(created.stdout, /^runs +every 3600s$/m);

    const replaced = await dqJson<{ schedule: Schedule; created: boolean }>(
      'schedules',
      'put',
      'example',
      id,
      '--cron',
      '0 9 * * 1-5',
      '--timezone',
      'Europe/Berlin',
      '--paused',
      '--catch-up',
      'none',
    );
    assert.deepEqual(
      [
        replaced.created,
        replaced.schedule.cron,
        replaced.schedule.timezone,
        replaced.schedule.paused,
        replaced.schedule.catchUp,
      ],
      [false, '0 9 * * 1-5', 'Europe/Berlin', true, 'none'],
    );

    const got = await dq('schedules', 'get', 'example', id);
    ok(got, 'schedules get');
    assert.match(got.stdout, /^runs +cron 0 9 \* \* 1-5 Europe\/Berlin$/m);
    assert.match(got.stdout, /^paused +true$/m);
    assert.match(got.stdout, /^expireAfter +-$/m);
    ok(
      await dq(
        ...['schedules', 'put', 'example', id, '--cron', '0 9 * * 1-5', '--timezone', 'Europe/Berlin', '--paused'],
        ...['--catch-up', 'none', '--expire-after', '10m'],
      ),
      'schedules put --expire-after',
    );
    assert.match((await dq('schedules', 'get', 'example', id)).stdout, /^expireAfter +600s$/m);
    const list = await dqJson<{ schedules: Schedule[] }>('schedules', 'list', 'example', '--all');
    assert.ok(list.schedules.some((s) => s.id === id));
    const table = await dq('schedules', 'list', 'example');
    assert.match(table.stdout, new RegExp(`^${id} +cron 0 9 \\* \\* 1-5 Europe/Berlin +paused`, 'm'));

    const deleted = await dq('schedules', 'delete', 'example', id);
    ok(deleted, 'schedules delete');
    assert.equal(deleted.stdout, `deleted schedule example/${id}\n`);
    assert.equal((await dq('schedules', 'get', 'example', id)).code, 3);
    const again = await dq('schedules', 'delete', 'example', id);
    assert.equal(again.code, 3);
    assert.match(again.stderr, /^dq: NOT_FOUND \(HTTP 404\)/);
  });

  it('topics stats: a table of every topic, JSON of one', async () => {
    const table = await dq('topics', 'stats');
    ok(table, 'topics stats');
    assert.match(table.stdout, /^TOPIC +DELAYED +READY +RUNNING +DEAD +EXPIRED +NEXT DUE/);
    assert.match(table.stdout, /^example +\d+/m);
    assert.match(table.stdout, /^webhook +\d+/m);
    const { topics } = await dqJson<{ topics: TopicStats[] }>('topics', 'stats', 'webhook');
    assert.deepEqual(
      topics.map((t) => t.topic),
      ['webhook'],
    );
    assert.equal((await dq('topics', 'stats', 'nope')).code, 3);
  });

  it('keys create, whoami, list, revoke: a read key reads and is refused a change (FORBIDDEN, exit 1), and once revoked is refused (UNAUTHORIZED)', async () => {
    const name = uid('cli-reader');
    const created = await dqJson<{ key: { name: string; scope: string; topics: string[] | null }; secret: string }>(
      'keys',
      'create',
      name,
      '--scope',
      'read',
      '--topics',
      'example',
    );
    assert.deepEqual([created.key.name, created.key.scope, created.key.topics], [name, 'read', ['example']]);
    assert.match(created.secret, /^dq_/);
    const asReader = (...args: string[]) => run(args, { env: { DQ_KEY: created.secret } });
    const who = await asReader('keys', 'whoami');
    ok(who, 'keys whoami');
    assert.match(who.stdout, new RegExp(`^name +${name}\n`));
    ok(await asReader('topics', 'stats'), 'a read key reads');
    const refused = await asReader('jobs', 'add', 'example', '--delay', '1h');
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(refused.stderr, /^dq: FORBIDDEN \(HTTP 403\): key \S+ has scope read; this needs scope write\n$/);
    const listed = await dq('keys', 'list');
    ok(listed, 'keys list');
    assert.match(listed.stdout, /^NAME +SCOPE +TOPICS/);
    assert.match(listed.stdout, new RegExp(`^${name} +read +example +api +deployment `, 'm'));
    assert.ok(!listed.stdout.includes(created.secret), 'no secret in the list');
    assert.equal((await dq('keys', 'revoke', name)).code, 2, 'revoke asks for --yes');
    ok(await dq('keys', 'revoke', name, '--yes'), 'keys revoke');
    const end = Date.now() + 60_000;
    for (;;) {
      const r = await asReader('keys', 'whoami');
      if (r.code === 1 && /UNAUTHORIZED/.test(r.stderr)) break;
      if (Date.now() > end) assert.fail(`the revoked key still works after 60 s: ${r.code} ${r.stdout}${r.stderr}`);
      await sleep(200);
    }
  });

  it('exit codes: 2 for a usage error (nothing sent), 1 for a refusal with its code, 4 for no answer; --help exits 0', async () => {
    const help = await dq('jobs', 'add', '--help');
    assert.deepEqual([help.code, help.stderr], [0, '']);
    assert.match(help.stdout, /^Usage: dq jobs add <topic> \[id\] \[options\]/);

    const usage = await dq('jobs', 'add', 'example', '--delay', 'soon');
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /^dq: USAGE: --delay must be seconds or a duration like 10m/);
    const usageJson = await dq('--json', 'jobs', 'get', 'example');
    assert.deepEqual([usageJson.code, JSON.parse(usageJson.stderr).error.code], [2, 'USAGE']);

    const unknownTopic = await dq('jobs', 'add', 'nope', '--delay', '1');
    assert.equal(unknownTopic.code, 1);
    assert.match(unknownTopic.stderr, /^dq: UNKNOWN_TOPIC \(HTTP 400\)/);
    const invalid = await dq('--json', 'jobs', 'add', 'example', '--delay', '400d');
    assert.equal(invalid.code, 1);
    const { error } = JSON.parse(invalid.stderr) as {
      error: { code: string; status: number; details: { path: string }[] };
    };
    assert.deepEqual(
      [error.code, error.status, error.details.map((d) => d.path)],
      ['VALIDATION_FAILED', 400, ['delay']],
    );
    const stranger = await run(['topics', 'stats'], { env: { DQ_KEY: 'wrong' } });
    assert.equal(stranger.code, 1);
    assert.match(stranger.stderr, /^dq: UNAUTHORIZED \(HTTP 401\)/);

    const nobody = await run(['topics', 'stats'], { env: { DQ_URL: `http://127.0.0.1:${await freePort()}` } });
    assert.equal(nobody.code, 4);
    assert.match(nobody.stderr, /^dq: NETWORK_ERROR \(no answer\): .*ECONNREFUSED/);
  });

  it('the connection from a profile file; a flag beats the environment, which beats the profile', async () => {
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        default: 'stack',
        profiles: {
          stack: { url: offline.baseUrl, key: offline.token },
          wrongKey: { url: offline.baseUrl, key: 'wrong' },
        },
      }),
    );
    const profileEnv = { DQ_CONFIG: config, DQ_URL: undefined, DQ_KEY: undefined };
    ok(await run(['topics', 'stats'], { env: profileEnv }), "the file's default profile");
    assert.equal(
      (await run(['topics', 'stats', '--profile', 'wrongKey'], { env: profileEnv })).code,
      1,
      '--profile picks another',
    );
    ok(
      await run(['topics', 'stats', '--profile', 'wrongKey', '--key', offline.token], { env: profileEnv }),
      '--key beats the profile',
    );
    ok(
      await run(['topics', 'stats'], { env: { ...profileEnv, DQ_PROFILE: 'wrongKey', DQ_KEY: offline.token } }),
      'DQ_KEY beats the profile DQ_PROFILE chose',
    );
    assert.equal(
      (await run(['topics', 'stats', '--key', 'wrong'], { env: profileEnv })).code,
      1,
      '--key beats the default profile too',
    );
    const noProfile = await run(['topics', 'stats', '--profile', 'nope'], { env: profileEnv });
    assert.equal(noProfile.code, 2);
    assert.match(noProfile.stderr, /no profile "nope" in .*config.json \(profiles: stack, wrongKey\)/);
  });

  it('npm run -s dq -- … runs the same CLI (the way the README documents)', async () => {
    const r = await run(['run', '-s', 'dq', '--', '--json', 'topics', 'stats', 'example'], { command: ['npm'] });
    ok(r, 'npm run -s dq');
    assert.equal((JSON.parse(r.stdout) as { topics: TopicStats[] }).topics[0]?.topic, 'example');
  });
});
