/**
 * A job record's state and flow key read off its first bytes (stateAndKey in
 * lua/includes/job.lua, the flow sweep's routing) agree with the decoded header, run in a real
 * redis-server's Lua: every state, no key, and keys of each msgpack string width.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { INCLUDES, includeOrder } from '../../lib/engine/lua';
import { useRedisServer } from '../support/redis';

describe('stateAndKey: a record header read without decoding it', () => {
  const server = useRedisServer();

  it('gives the state and key the decoded header holds, for every string width and for no key', async () => {
    const prelude = includeOrder('--- @include "job"')
      .map((name) => INCLUDES[name])
      .join('\n');
    // a header as the scripts write it (every slot filled, H_CHUNK set or not), a body after it
    const lua = `${prelude}
local out = {}
for state = PENDING, CANCELLED do
  for _, len in ipairs(cjson.decode(ARGV[1])) do
    local key = false
    if len >= 0 then key = string.rep('k', len) end
    for _, chunk in ipairs({ false, 7 }) do
      local h = { state, key, 1, 2, 0, false, false, false, false, false, 3, false, false, false, 0, 9, false, false }
      h[H_CHUNK] = chunk or nil
      local record = cmsgpack.pack(h) .. '{"a":1}'
      local decoded = decode(record)
      local s, k = stateAndKey(record)
      out[#out + 1] = { decoded[H_STATE], tostring(decoded[H_KEY]), s, tostring(k) }
    end
  end
end
return out`;
    const lengths = [-1, 0, 1, 31, 32, 255, 256, 65535];
    const rows = (await server.client().eval(lua, 0, JSON.stringify(lengths))) as [number, string, number, string][];
    assert.equal(rows.length, 6 * lengths.length * 2);
    for (const [state, key, readState, readKey] of rows) {
      assert.equal(readState, state);
      assert.equal(readKey, key);
    }
    // the cases are not all alike: no key, and keys of each width, came back as such
    assert.deepEqual(new Set(rows.map((r) => r[3].length)), new Set([5, 0, 1, 31, 32, 255, 256, 65535]));
  });
});
