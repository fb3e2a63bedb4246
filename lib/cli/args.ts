/**
 * The command line split into words and options: `--name value`, `--name=value`, flags without a
 * value, `-h`, and `--` (everything after it is a word). Pure; knows nothing of the commands but
 * the option specs it is given.
 */
import { UsageError } from './errors';

/** One option of a command, or a global one. */
export interface OptionSpec {
  /** The long name without dashes: `delay` is `--delay`. */
  name: string;
  /** The placeholder of its value in help (`DURATION`); absent for a flag, which takes none. */
  value?: string;
  /** A one-letter alias without the dash (`h` is `-h`). */
  short?: string;
  /** One line for `--help`. */
  help: string;
}

/** The words (command and arguments, in order) and the options given, by long name. */
export interface ParsedArgs {
  words: string[];
  options: Record<string, string | true>;
}

/**
 * Parses `argv` with the `globals` options everywhere and, once the words so far name a command,
 * that command's options (`specsFor(words)`, undefined while they name none). Throws UsageError
 * for an unknown option, a missing or unwanted value, or an option given twice.
 */
export function parseArgs(
  argv: readonly string[],
  globals: readonly OptionSpec[],
  specsFor: (words: readonly string[]) => readonly OptionSpec[] | undefined,
): ParsedArgs {
  const words: string[] = [];
  const options: Record<string, string | true> = {};
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === '--') {
      words.push(...argv.slice(i + 1));
      break;
    }
    if (token === '-' || !token.startsWith('-')) {
      words.push(token);
      continue;
    }
    const eq = token.indexOf('=');
    const written = eq === -1 ? token : token.slice(0, eq);
    const commandSpecs = specsFor(words);
    const spec = findSpec(written, [...globals, ...(commandSpecs ?? [])]);
    if (!spec)
      throw new UsageError(`unknown option ${written}`, commandSpecs ? words.slice(0, 2).join(' ') : undefined);
    if (options[spec.name] !== undefined) throw new UsageError(`--${spec.name} is given twice`);
    if (spec.value === undefined) {
      if (eq !== -1) throw new UsageError(`--${spec.name} takes no value`);
      options[spec.name] = true;
      continue;
    }
    if (eq !== -1) {
      options[spec.name] = token.slice(eq + 1);
      continue;
    }
    const next = argv[i + 1];
    if (next === undefined || (next.startsWith('--') && next !== '--')) {
      throw new UsageError(
        `--${spec.name} needs a value (${spec.value})${next ? `; to give one that starts with --, write --${spec.name}=${next}` : ''}`,
      );
    }
    options[spec.name] = next;
    i++;
  }
  return { words, options };
}

function findSpec(written: string, specs: readonly OptionSpec[]): OptionSpec | undefined {
  if (written.startsWith('--')) return specs.find((s) => s.name === written.slice(2));
  return written.length === 2 ? specs.find((s) => s.short === written.slice(1)) : undefined;
}
