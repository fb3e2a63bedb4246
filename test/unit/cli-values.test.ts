/**
 * Option values of `dq` (lib/cli/values.ts): durations, times, counts, If-Match, backoff, choices
 * and bodies from the line, a file or stdin; each refusal a usage error naming the option.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UsageError } from '../../lib/cli/errors';
import {
  parseBackoff,
  parseChoice,
  parseCount,
  parseDuration,
  parseIfMatch,
  parseTime,
  readBody,
  type TextSource,
} from '../../lib/cli/values';

const usage = (pattern: RegExp) => (error: unknown) => error instanceof UsageError && pattern.test(error.message);

describe('dq option values', () => {
  it('durations: seconds as numbers, units passed on as the API takes them', () => {
    assert.equal(parseDuration('delay', '90'), 90);
    assert.equal(parseDuration('delay', '1.5'), 1.5);
    for (const d of ['250ms', '10s', '10m', '1.5h', '2d']) assert.equal(parseDuration('delay', d), d);
    for (const bad of ['10 m', 'soon', '-1', '10min', ''])
      assert.throws(() => parseDuration('ttr', bad), usage(/^--ttr must be seconds or a duration like 10m/));
  });

  it('times: digits are epoch ms, anything else goes to the API as text', () => {
    assert.equal(parseTime('1893456000000'), 1_893_456_000_000);
    assert.equal(parseTime('2030-01-01T00:00:00Z'), '2030-01-01T00:00:00Z');
  });

  it('counts within their range', () => {
    assert.equal(parseCount('limit', '50', 1, 500), 50);
    assert.throws(
      () => parseCount('limit', '0', 1, 500),
      usage(/--limit must be a whole number from 1 to 500, not "0"/),
    );
    assert.throws(() => parseCount('limit', '501', 1, 500), usage(/--limit/));
    assert.throws(
      () => parseCount('max-attempts', '2.5'),
      usage(/--max-attempts must be a whole number from 1, not "2.5"/),
    );
  });

  it('If-Match: a version, its ETag form, or *', () => {
    assert.equal(parseIfMatch('3'), 3);
    assert.equal(parseIfMatch('"3"'), 3);
    assert.equal(parseIfMatch('*'), '*');
    for (const bad of ['W/"3"', 'v3', '-1', '1,2'])
      assert.throws(() => parseIfMatch(bad), usage(/--if-match must be a job's version/));
  });

  it('backoff: a ladder as text, a policy as JSON', () => {
    assert.equal(parseBackoff('15s 3m 10m'), '15s 3m 10m');
    assert.deepEqual(parseBackoff('{"type":"fixed","delay":30}'), { type: 'fixed', delay: 30 });
    assert.throws(() => parseBackoff('{"type":'), usage(/--backoff is not JSON/));
  });

  it('choices', () => {
    assert.equal(parseChoice('state', 'dead', ['delayed', 'dead']), 'dead');
    assert.throws(
      () => parseChoice('state', 'done', ['delayed', 'dead']),
      usage(/--state must be one of delayed, dead, not "done"/),
    );
  });

  it('bodies: JSON inline, @file, - for stdin; not JSON is refused with how to send a string', async () => {
    const source: TextSource = {
      file: async (path) => {
        if (path === 'job.json') return '{"orderId": 7}\n';
        throw new Error(`ENOENT: no such file or directory, open '${path}'`);
      },
      stdin: async () => '[1, 2]',
    };
    assert.deepEqual(await readBody('{"a":1}', source), { a: 1 });
    assert.equal(await readBody('"hello"', source), 'hello');
    assert.equal(await readBody('null', source), null);
    assert.deepEqual(await readBody('@job.json', source), { orderId: 7 });
    assert.deepEqual(await readBody('-', source), [1, 2]);
    await assert.rejects(
      readBody('hello', source),
      usage(/--body is not JSON: .*; send a string quoted, as --body '"hello"'/),
    );
    await assert.rejects(
      readBody('@missing.json', source),
      usage(/--body @missing.json: cannot read missing.json: ENOENT/),
    );
    await assert.rejects(
      readBody('-', { ...source, stdin: async () => '{' }),
      usage(/--body is not JSON \(from stdin\)/),
    );
  });
});
