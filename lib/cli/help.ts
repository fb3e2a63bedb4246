/**
 * `dq --help`, `dq <group> --help` and `dq <group> <command> --help`, written from the command
 * table, so a new command documents itself. Pure.
 */
import type { OptionSpec } from './args';
import { COMMANDS, GROUPS, type Command } from './commands';
import { DEFAULT_URL, DEV_KEY } from './config';
import { EXIT_HELP } from './errors';
import { table } from './format';

/** Options every command takes. */
export const GLOBAL_OPTIONS: readonly OptionSpec[] = [
  { name: 'url', value: 'URL', help: `the API's base URL (else DQ_URL, the profile's "url", or ${DEFAULT_URL})` },
  { name: 'key', value: 'KEY', help: 'the API key, sent as a bearer token (else DQ_KEY, or the profile\'s "key")' },
  {
    name: 'profile',
    value: 'NAME',
    help: 'the profile of the profile file to use (else DQ_PROFILE, or the file\'s "default")',
  },
  { name: 'json', help: "print the API's answer as JSON on stdout, and errors as JSON on stderr" },
  { name: 'help', short: 'h', help: 'show help' },
];

const indent = (text: string) =>
  text
    .trimEnd()
    .split('\n')
    .map((l) => `  ${l}`.trimEnd())
    .join('\n');

const noHeader = (text: string) => text.slice(text.indexOf('\n') + 1);

function optionLines(options: readonly OptionSpec[]): string {
  const rows = options.map((o) => [
    [o.short ? `-${o.short}, ` : '', `--${o.name}`, o.value ? ` ${o.value}` : ''].join(''),
    o.help,
  ]);
  return indent(noHeader(table(['', ''], rows)));
}

const usage = (c: Command) =>
  `dq ${c.group} ${c.name}${c.args.length ? ` ${c.args.join(' ')}` : ''}${c.options.length ? ' [options]' : ''}`;

function commandList(commands: readonly Command[]): string {
  return indent(
    noHeader(
      table(
        ['', ''],
        commands.map((c) => [`${c.group} ${c.name} ${c.args.join(' ')}`.trimEnd(), c.summary]),
      ),
    ),
  );
}

/** `dq --help`: every command, the global options, where the connection comes from, the exit codes. */
export function mainHelp(): string {
  return [
    'dq: operate a delay queue through its HTTP API: jobs, groups, dead jobs, schedules, topics.',
    '',
    'Usage: dq <group> <command> [arguments] [options]',
    '',
    'Commands:',
    commandList(COMMANDS),
    '',
    'Global options (anywhere on the line):',
    optionLines(GLOBAL_OPTIONS),
    '',
    'Connection: each of the URL and the key from its flag, else DQ_URL / DQ_KEY, else the profile',
    '(--profile, DQ_PROFILE, or the file\'s "default") of $DQ_CONFIG or ~/.config/dq/config.json,',
    `else ${DEFAULT_URL}; the key ${DEV_KEY} is used for a loopback URL when none is given.`,
    '',
    'Exit codes:',
    indent(
      noHeader(
        table(
          ['', ''],
          EXIT_HELP.map(([code, what]) => [String(code), what]),
        ),
      ),
    ),
    '',
    "Run 'dq <group> <command> --help' for a command's arguments and options.",
    '',
  ].join('\n');
}

/** `dq <group> --help`: the group's commands. */
export function groupHelp(group: string): string {
  const summary = GROUPS.find((g) => g.name === group)?.summary ?? '';
  return [
    `dq ${group}: ${summary}`,
    '',
    'Commands:',
    commandList(COMMANDS.filter((c) => c.group === group)),
    '',
    `Run 'dq ${group} <command> --help' for its options.`,
    '',
  ].join('\n');
}

/** `dq <group> <command> --help`: usage, what it does, its options and the global ones. */
export function commandHelp(c: Command): string {
  return [
    `Usage: ${usage(c)}`,
    '',
    `${c.summary[0]!.toUpperCase()}${c.summary.slice(1)}.`,
    ...(c.details ? [c.details] : []),
    ...(c.options.length ? ['', 'Options:', optionLines(c.options)] : []),
    '',
    'Global options:',
    optionLines(GLOBAL_OPTIONS),
    '',
  ].join('\n');
}

/** The usage line of a command, for a usage error. */
export function usageLine(c: Command): string {
  return `usage: ${usage(c)}`;
}
