/**
 * The command line parser of `dq` (lib/cli/args.ts): words and options in any order, values
 * inline or next, flags, `--`, and a usage error for each mistake.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseArgs, type OptionSpec } from '../../lib/cli/args';
import { UsageError } from '../../lib/cli/errors';

const GLOBALS: OptionSpec[] = [
  { name: 'url', value: 'URL', help: '' },
  { name: 'json', help: '' },
  { name: 'help', short: 'h', help: '' },
];
const ADD: OptionSpec[] = [
  { name: 'delay', value: 'DURATION', help: '' },
  { name: 'body', value: 'JSON', help: '' },
  { name: 'yes', help: '' },
];
const specsFor = (words: readonly string[]) => (words[0] === 'jobs' && words[1] === 'add' ? ADD : undefined);
const parse = (...argv: string[]) => parseArgs(argv, GLOBALS, specsFor);
const usage = (pattern: RegExp) => (error: unknown) => error instanceof UsageError && pattern.test(error.message);

describe('dq argument parsing', () => {
  it("splits words and options; global options anywhere, a command's after its name", () => {
    assert.deepEqual(parse('--json', 'jobs', 'add', 'example', 'id-1', '--delay', '10m', '--url=http://x', '--yes'), {
      words: ['jobs', 'add', 'example', 'id-1'],
      options: { json: true, delay: '10m', url: 'http://x', yes: true },
    });
    assert.deepEqual(
      parse('jobs', 'add', '--body', '-', 'example').options,
      { body: '-' },
      'a lone dash is a value (stdin)',
    );
    assert.deepEqual(
      parse('jobs', 'add', 'example', '--delay', '-1').options,
      { delay: '-1' },
      'a value may start with one dash',
    );
    assert.deepEqual(
      parse('jobs', 'add', 'example', '--body={"a":1}').options,
      { body: '{"a":1}' },
      '= splits at the first =',
    );
    assert.deepEqual(parse('-h').options, { help: true });
    assert.deepEqual(
      parse('jobs', 'add', '--', '--json', '-x').words,
      ['jobs', 'add', '--json', '-x'],
      'after -- everything is a word',
    );
  });

  it('refuses unknown options, naming the command whose help to read', () => {
    assert.throws(
      () => parse('jobs', 'add', 'example', '--dealy', '5'),
      (e: unknown) => usage(/unknown option --dealy/)(e) && (e as UsageError).command === 'jobs add',
    );
    assert.throws(
      () => parse('--delay', '5', 'jobs', 'add'),
      (e: unknown) => usage(/unknown option --delay/)(e) && (e as UsageError).command === undefined,
      "a command's option before the command is unknown",
    );
    assert.throws(() => parse('-x'), usage(/unknown option -x/));
    assert.throws(() => parse('-hx'), usage(/unknown option -hx/));
  });

  it('refuses a missing value, a value for a flag, and an option given twice', () => {
    assert.throws(() => parse('jobs', 'add', 'example', '--delay'), usage(/--delay needs a value \(DURATION\)$/));
    assert.throws(
      () => parse('jobs', 'add', 'example', '--delay', '--json'),
      usage(/--delay needs a value \(DURATION\); to give one that starts with --, write --delay=--json/),
    );
    assert.throws(() => parse('--json=yes', 'topics'), usage(/--json takes no value/));
    assert.throws(() => parse('jobs', 'add', '--delay', '1', '--delay', '2'), usage(/--delay is given twice/));
  });
});
