/**
 * `dq`: reads the command line, finds the command, resolves the connection, runs the command with
 * a DelayQueueClient and prints its result (a table, or `--json`); returns the exit code. Every
 * outside thing (argv, environment, output, files, stdin, fetch) comes in through `Io`, so tests
 * run it whole. bin/dq.cjs calls main().
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { DelayQueueClient } from '../client';
import { parseArgs, type ParsedArgs } from './args';
import { argCounts, COMMANDS, findCommand, GROUPS, type Command } from './commands';
import { resolveConnection } from './config';
import { describeFailure, EXIT, UsageError } from './errors';
import { failureText } from './format';
import { commandHelp, GLOBAL_OPTIONS, groupHelp, mainHelp, usageLine } from './help';
import type { TextSource } from './values';

/** Everything `dq` reads from and writes to. */
export interface Io {
  argv: readonly string[];
  env: Record<string, string | undefined>;
  home: string;
  stdout(text: string): void;
  stderr(text: string): void;
  /** A file's text, or undefined when it does not exist (the profile file). */
  readConfig(path: string): string | undefined;
  /** `--body @file` and `--body -`. */
  text: TextSource;
  /** A fetch for the client (tests); the global one when absent. */
  fetch?: typeof fetch;
  now?: () => number;
}

/** The help for words that name nothing, a group or a command; undefined when they name none of these. */
function helpFor(words: readonly string[]): string | undefined {
  if (words.length === 0) return mainHelp();
  const command = findCommand(words);
  if (command) return commandHelp(command);
  return words.length === 1 && GROUPS.some((g) => g.name === words[0]) ? groupHelp(words[0]!) : undefined;
}

/** The usage error for words that name no command. */
function unknownCommand(words: readonly string[]): UsageError {
  if (!GROUPS.some((g) => g.name === words[0]))
    return new UsageError(`unknown command "${words[0]}" (groups: ${GROUPS.map((g) => g.name).join(', ')})`);
  const names = COMMANDS.filter((c) => c.group === words[0]).map((c) => c.name);
  if (words.length === 1) return new UsageError(`dq ${words[0]} needs a command: ${names.join(', ')}`, words[0]);
  return new UsageError(
    `unknown command "${words[0]} ${words[1]}" (${words[0]} commands: ${names.join(', ')})`,
    words[0],
  );
}

/** The command the words name, with its arguments checked; throws UsageError otherwise. */
function commandOf(words: readonly string[]): { command: Command; args: string[] } {
  const command = findCommand(words);
  if (!command) throw unknownCommand(words);
  const args = words.slice(2);
  const { min, max } = argCounts(command);
  if (args.length < min || args.length > max) {
    const which =
      args.length < min
        ? `missing ${command.args.slice(args.length, min).join(' ')}`
        : `too many arguments: ${args.slice(max).join(' ')}`;
    throw new UsageError(`${which}\n${usageLine(command)}`, `${command.group} ${command.name}`);
  }
  return { command, args };
}

/** Prints a failure (as JSON with `json`; a usage error with the help to read) and returns its exit code. */
function printFailure(io: Io, error: unknown, json: boolean, command?: string): number {
  const failure = describeFailure(error);
  if (json) {
    const { exitCode: _exitCode, ...fields } = failure;
    io.stderr(JSON.stringify({ error: fields }) + '\n');
  } else {
    const where = error instanceof UsageError ? (error.command ?? command) : undefined;
    const hint = error instanceof UsageError ? `(see dq ${where ? `${where} ` : ''}--help)\n` : '';
    io.stderr(failureText(failure) + hint);
  }
  return failure.exitCode;
}

/** Runs `dq` with `io.argv` (the arguments after the program) and resolves to its exit code. */
export async function runCli(io: Io): Promise<number> {
  let parsed: ParsedArgs;
  try {
    parsed = parseArgs(io.argv, GLOBAL_OPTIONS, (words) => findCommand(words)?.options);
  } catch (error) {
    return printFailure(io, error, io.argv.includes('--json'));
  }
  const { words, options } = parsed;
  const json = options.json === true;
  if (words.length === 0 && options.help !== true) {
    io.stderr(mainHelp());
    return EXIT.usage;
  }
  if (options.help === true || words[0] === 'help') {
    const helpWords = words[0] === 'help' ? words.slice(1) : words;
    const text = helpFor(helpWords);
    if (text !== undefined) {
      io.stdout(text);
      return EXIT.ok;
    }
    return printFailure(io, unknownCommand(helpWords), json);
  }
  const named = findCommand(words);
  try {
    const { command, args } = commandOf(words);
    const str = (name: string) => (typeof options[name] === 'string' ? (options[name] as string) : undefined);
    const connection = resolveConnection({
      flags: { url: str('url'), key: str('key'), profile: str('profile') },
      env: io.env,
      home: io.home,
      readFile: io.readConfig,
    });
    const client = new DelayQueueClient({
      baseUrl: connection.url,
      token: connection.key,
      ...(io.fetch ? { fetch: io.fetch } : {}),
    });
    const output = await command.run({ client, text: io.text, now: (io.now ?? Date.now)() }, { args, options });
    io.stdout(json ? JSON.stringify(output.json) + '\n' : output.text);
    return EXIT.ok;
  } catch (error) {
    return printFailure(io, error, json, named && `${named.group} ${named.name}`);
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The process's `dq`: real argv, environment, files and streams; sets the exit code. */
export async function main(): Promise<void> {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error; // `dq … | head -1`: the reader has gone, nothing more to say
  });
  process.exitCode = await runCli({
    argv: process.argv.slice(2),
    env: process.env,
    home: homedir(),
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    readConfig: (path) => {
      try {
        return readFileSync(path, 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw new UsageError(`cannot read ${path}: ${(error as Error).message}`);
      }
    },
    text: { file: (path) => readFile(path, 'utf8'), stdin: readStdin },
  });
}
