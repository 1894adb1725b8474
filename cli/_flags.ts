/**
 * The flag reader of the CLIs: `node:util`'s `parseArgs` in strict mode,
 * with each refusal told in one line, and a flag given twice refused.
 *
 * @module
 */

// STYLE keeps `node:` imports in vm/ and plugin/; the CLIs are the one other place,
// because DESIGN's folder table has them parse flags with `node:util`'s
// `parseArgs`.
import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import { CordonError, type ErrorCode } from "../protocol/mod.ts";
import { errorName, posixCodeOf } from "../protocol/error_name.ts";
import { messageOf } from "../protocol/options.ts";
import { operatorQuote } from "../protocol/operator_text.ts";

/** The code every command's refusal of its arguments carries. */
const FLAGS_INVALID: ErrorCode = "CLI_FLAGS_INVALID";

/** The flags one command takes. */
export interface FlagSpec {
  /** The flags, as `parseArgs` takes them. */
  readonly options: ParseArgsOptionsConfig;
  /** Whether arguments that are not flags are kept as positionals. */
  readonly allowPositionals: boolean;
  /** Whether a value may be empty (`--name=`). */
  readonly emptyValues: boolean;
  /** What the flags belong to, for errors: "this server", "this command". */
  readonly owner: string;
}

/** The flags found on a command line, by option name. */
export interface Flags {
  readonly values: ReadonlyMap<string, string>;
  readonly switches: ReadonlySet<string>;
  readonly positionals: readonly string[];
}

export { messageOf };

/** `n` and its noun, in the plural unless `n` is 1: `3 packs`. */
export function count(n: number, noun: string, plural = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : plural}`;
}

/** Where a command writes its lines. */
export interface CommandOutput {
  print: (line: string) => void;
  printError: (line: string) => void;
}

/**
 * The line a command prints when its arguments are wrong: the code, what is
 * wrong, and where to read about the flags.
 */
export function flagsErrorLine(message: string): string {
  return `error: ${FLAGS_INVALID}: ${message}; run with --help for the flags`;
}

/** The code of a line about a path a command cannot read or write. */
const PATH_UNUSABLE: ErrorCode = "PATH_UNUSABLE";

/** The line a command prints about a path it cannot read or write. */
export function pathErrorLine(message: string): string {
  return `error: ${PATH_UNUSABLE}: ${message}`;
}

/**
 * The line a command prints when it fails: a coded error's own code and
 * message, or, for any other error, `PATH_UNUSABLE` and `pathMessage`,
 * as the command's paths are what it reads and writes.
 */
export function failureLine(error: unknown, pathMessage: string): string {
  return error instanceof CordonError
    ? `error: ${error.code}: ${error.message}`
    : pathErrorLine(pathMessage);
}

/**
 * A command's arguments, parsed, or the exit code of a command that has
 * already answered: its usage for `--help` (0), or what is wrong with the
 * flags and where to read about them, under `CLI_FLAGS_INVALID` (2).
 */
export function parseOrAnswer<T extends { readonly help: boolean }>(
  parse: (args: readonly string[]) => T,
  args: readonly string[],
  usage: string,
  { print, printError }: CommandOutput,
): T | number {
  let parsed: T;
  try {
    parsed = parse(args);
  } catch (error) {
    printError(flagsErrorLine(messageOf(error)));
    return 2;
  }
  if (!parsed.help) return parsed;
  print(usage);
  return 0;
}

/**
 * An OS error's kind (its cause's, when it wraps one) without its message,
 * which may name a path. An error the runtime has no class for (a full
 * disk: a plain `Error`) is named by its POSIX code, such as `ENOSPC`,
 * where its name alone says nothing.
 */
export function nameOf(error: unknown): string {
  const cause = error instanceof Error && error.cause instanceof Error
    ? error.cause
    : error;
  return cause instanceof Error ? errorName(cause) : "unexpected failure";
}

/**
 * Whether `error` is one of the runtime's errors of the operating system
 * (file system, network, permissions), whose message may name a path of
 * the machine and says little the error's name does not: one of its
 * classes, or a plain `Error` with a POSIX code (a full or read-only
 * disk, a name too long). Name it with {@linkcode nameOf}.
 */
export function isOsError(error: unknown): error is Error {
  return Object.values(Deno.errors).some((type) => error instanceof type) ||
    (error instanceof Error && posixCodeOf(error) !== undefined);
}

/**
 * The variable this project's tasks set to the folder `deno task` was
 * started in (`CORDON_START_DIR="$INIT_CWD"` in deno.json).
 */
export const START_DIR_VARIABLE = "CORDON_START_DIR";

/**
 * Makes the folder named by {@linkcode START_DIR_VARIABLE} the working
 * folder, so the relative paths a user typed after `deno task serve` mean
 * what they meant where they typed them: a task runs in the folder of its
 * deno.json. Only this project's tasks set the variable, so a command run
 * from another task or script reads paths as that runner intends. Does
 * nothing without the variable or leave to read it; a folder it cannot
 * enter is said in one line, and paths are then read from the folder of
 * deno.json. Each command calls it first, when run as a program.
 */
export function enterTaskStartDir(
  printError: (line: string) => void = console.error,
): void {
  const leave = Deno.permissions.querySync({
    name: "env",
    variable: START_DIR_VARIABLE,
  });
  if (leave.state !== "granted") return;
  const startDir = Deno.env.get(START_DIR_VARIABLE);
  if (!startDir) return;
  try {
    Deno.chdir(startDir);
  } catch (error) {
    printError(
      `warning: Cannot enter the folder the task was started in (${
        nameOf(error)
      }); relative paths are read from the folder of deno.json`,
    );
  }
}

/**
 * Reads a command line against a spec. Values go as `--name value` or
 * `--name=value`; a value that starts with a dash goes as `--name=-x`,
 * except a negative number, which goes either way (`--port -1`).
 *
 * @throws {TypeError} For an unknown flag, a positional the command does
 * not take, a missing or empty value, a value given to a switch, or a flag
 * given twice.
 */
export function readFlags(args: readonly string[], spec: FlagSpec): Flags {
  const joined = withNegativeValuesJoined(args, spec);
  let tokens;
  let positionals;
  try {
    ({ tokens, positionals } = parseArgs({
      args: joined,
      options: spec.options,
      strict: true,
      allowPositionals: spec.allowPositionals,
      tokens: true,
    }));
  } catch (error) {
    throw new TypeError(`Cannot read the flags: ${explain(joined, spec)}`, {
      cause: error,
    });
  }
  const seen = new Set<string>();
  const values = new Map<string, string>();
  const switches = new Set<string>();
  for (const token of tokens) {
    if (token.kind !== "option") continue;
    if (seen.has(token.rawName)) {
      throw new TypeError(
        `Cannot read the flags: ${token.rawName} is given twice`,
      );
    }
    seen.add(token.rawName);
    if (token.value === undefined) switches.add(token.name);
    else if (token.value === "" && !spec.emptyValues) {
      throw new TypeError(
        `Cannot read the flags: ${token.rawName} needs a value`,
      );
    } else values.set(token.name, token.value);
  }
  return { values, switches, positionals };
}

/**
 * The arguments with each negative number that follows a flag that takes
 * a value joined to it (`--port -1` as `--port=-1`): the parser takes any
 * argument that starts with a dash for a flag, and called the value
 * missing, where no flag starts with a digit and the value's own check
 * can say what it must be.
 */
function withNegativeValuesJoined(
  args: readonly string[],
  spec: FlagSpec,
): string[] {
  const joined: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") return [...joined, ...args.slice(i)];
    const next = args[i + 1];
    const name = arg.startsWith("--") ? arg.slice(2) : "";
    const takesValue = Object.hasOwn(spec.options, name) &&
      spec.options[name]!.type === "string";
    if (takesValue && next !== undefined && /^-[\d.]/.test(next)) {
      joined.push(`${arg}=${next}`);
      i++;
    } else {
      joined.push(arg);
    }
  }
  return joined;
}

/**
 * Says in one line which argument the strict parse refused: it read the
 * arguments loosely again and finds the first that breaks a strict rule.
 */
function explain(args: readonly string[], spec: FlagSpec): string {
  const notAFlag = (arg: string) =>
    `${operatorQuote(arg, 60)} is not a flag of ${spec.owner}`;
  const { tokens } = parseArgs({
    args: [...args],
    options: spec.options,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  for (const token of tokens) {
    if (token.kind === "positional") {
      if (!spec.allowPositionals) return notAFlag(token.value);
      continue;
    }
    if (token.kind !== "option") continue;
    const option = Object.hasOwn(spec.options, token.name)
      ? spec.options[token.name]
      : undefined;
    if (option === undefined) return notAFlag(args[token.index]!);
    if (option.type === "boolean") {
      if (token.value !== undefined) return notAFlag(args[token.index]!);
    } else if (
      token.value === undefined ||
      (!token.inlineValue && token.value.length > 1 &&
        token.value.startsWith("-"))
    ) {
      return `${token.rawName} needs a value`;
    }
  }
  return "they do not parse";
}

/**
 * Reads a whole-number flag's text: `undefined` when the flag is absent,
 * else its value, which must be digits only and, with `range`, within it.
 *
 * @throws {RangeError} When the text is not a whole number in range.
 */
export function readIntegerFlag(
  name: string,
  text: string | undefined,
  range?: { min: number; max: number },
): number | undefined {
  if (text === undefined) return undefined;
  const value = /^\d{1,10}$/.test(text) ? Number(text) : NaN;
  const valid = range === undefined
    ? !Number.isNaN(value)
    : value >= range.min && value <= range.max;
  if (!valid) {
    const expected = range === undefined
      ? "a whole number"
      : `an integer from ${range.min} to ${range.max}`;
    throw new RangeError(
      `Cannot read the flags: ${name} must be ${expected}, not ${
        operatorQuote(text, 20)
      }`,
    );
  }
  return value;
}
