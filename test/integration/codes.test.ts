/**
 * The codes Lua and TypeScript share (lib/engine/codes.ts, lua/includes/job.lua) agree.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FANOUT_MARK, JOB_STATE, LEASE, OUTCOME, REFUSAL, WAKE } from '../../lib/engine/codes';
import { useRedisServer } from '../support/redis';
import common from '../../lua/includes/job.lua';

describe('codes shared by Lua and TypeScript', () => {
  const server = useRedisServer();

  it('every table of lib/engine/codes.ts has its twin, name for name, in lua/includes/job.lua', async () => {
    // run the helpers in Redis itself and read the tables back, so Lua parses them, not a regex
    const states = Object.keys(JOB_STATE).map((name) => `${name} = ${name}`).join(', ');
    const lua = `${common}\nreturn cjson.encode({ JOB_STATE = { ${states} }, REFUSAL = REFUSAL, OUTCOME = OUTCOME, LEASE = LEASE, WAKE = WAKE, FANOUT_MARK = FANOUT_MARK })`;
    const tables = JSON.parse((await server.client().eval(lua, 0)) as string);
    assert.deepEqual(tables, { JOB_STATE, REFUSAL, OUTCOME, LEASE, WAKE, FANOUT_MARK });
  });
});
