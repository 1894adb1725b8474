/**
 * The run CLI: runs one guest file in QuickJS on a runner process it can
 * kill (the QuickJS pool), so its time and memory limits hold for any
 * guest, or with `--in-thread` on its own thread, with the
 * on-disk catalog over a packs folder (by default cordon's fixture packs)
 * or the remote catalog of a running delivery server, and prints the
 * result as JSON.
 *
 * ```sh
 * deno task run guest.js --packages @cordon-fixtures/math --context '{"n":2}'
 * deno task run guest.js --packages greet --server http://127.0.0.1:8000
 * ```
 *
 * Its exit code is 0 when the run succeeded, 1 when it failed (the JSON
 * says why) or could not start, 2 for bad flags, and 130 or 143 when
 * SIGINT or SIGTERM stopped it.
 *
 * @module
 */

import { readOptions } from "../protocol/options.ts";
import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import { createRemoteCatalog } from "../catalog/remote_catalog.ts";
import type { SandboxModuleCatalog } from "../catalog/types.ts";
import { createQuickJSPool, type QuickJSPool } from "../loader/quickjs_pool.ts";
import {
  CordonError,
  type JsonValue,
  type SandboxResult,
} from "../protocol/mod.ts";
import { operatorJson, operatorQuote } from "../protocol/operator_text.ts";
import {
  failureLine,
  flagsErrorLine,
  type FlagSpec,
  isOsError,
  messageOf,
  nameOf,
  parseOrAnswer,
  readFlags,
  readIntegerFlag,
} from "./_flags.ts";
import {
  listenForStop,
  outputErrorLine,
  runProgram,
  STOP_EXIT_CODES,
} from "./_program.ts";
import { fileURLToPath } from "node:url";

/** The flags of the run CLI, parsed. */
export interface RunArgs {
  /** The guest file to run. */
  file: string;
  /** `--packages a,b`: the packs the guest declares. */
  packages: string[];
  /** `--packs DIR`: the packs folder of the on-disk catalog, when given. */
  packsDir?: string;
  /** `--server URL`: the delivery server of the remote catalog, when given. */
  serverUrl?: string;
  /** `--context JSON`: the value a function default export is called with. */
  context?: JsonValue;
  /** `--timeout-ms N`: the run's time limit. */
  timeoutMs?: number;
  /** `--memory-limit-bytes N`: the run's memory limit. */
  memoryLimitBytes?: number;
  /** `--max-source-bytes N`: the largest guest source the run takes. */
  maxSourceBytes?: number;
  /** `--max-context-bytes N`: the largest `--context` the run takes. */
  maxContextBytes?: number;
  /** `--max-result-bytes N`: the largest answer the run gives. */
  maxResultBytes?: number;
  /** `--in-thread`: run on this process's thread instead of a runner process. */
  inThread: boolean;
  /** `--help`: print the usage and exit. */
  help: boolean;
}

/**
 * The largest guest file the command reads: far above any Code node, and
 * a bound on what a wrong path (a log, an image) costs before it fails.
 */
const MAX_GUEST_FILE_BYTES = 16 * 1024 * 1024;

/**
 * The most characters of the guest file's path an error line quotes: any
 * path a user types, where a name made by a script or found in a folder
 * listing could be megabytes.
 */
const MAX_QUOTED_PATH_CHARS = 1024;

/** The run's limits the command takes from whole-number flags. */
type LimitOption =
  | "timeoutMs"
  | "memoryLimitBytes"
  | "maxSourceBytes"
  | "maxContextBytes"
  | "maxResultBytes";

/** Each limit's option and the flag that sets it. */
const LIMIT_FLAGS: readonly (readonly [LimitOption, string])[] = [
  ["timeoutMs", "--timeout-ms"],
  ["memoryLimitBytes", "--memory-limit-bytes"],
  ["maxSourceBytes", "--max-source-bytes"],
  ["maxContextBytes", "--max-context-bytes"],
  ["maxResultBytes", "--max-result-bytes"],
];

/** The limits the flags set, and no key for one they left out. */
function limitsOf(args: RunArgs): Partial<Record<LimitOption, number>> {
  const limits: Partial<Record<LimitOption, number>> = {};
  for (const [option] of LIMIT_FLAGS) {
    const value = args[option];
    if (value !== undefined) limits[option] = value;
  }
  return limits;
}

/**
 * Decodes a guest file strictly: a lenient decode would run a Latin-1 file
 * with U+FFFD in place of its letters and answer `ok: true`.
 */
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Reads a guest file, refusing what is not a regular file, too large or
 * not UTF-8. A file system error is told by its kind, as the runtime's
 * message names the path again.
 */
async function readGuestFile(path: string): Promise<string> {
  // The runtime refuses such a path with a message that repeats it
  // unescaped, control characters and all.
  if (path.includes("\0")) {
    throw new Error(
      "its name holds a NUL character, which no file name can; pass a JavaScript file this command may read",
    );
  }
  let bytes: Uint8Array;
  try {
    // A device or a pipe (`/dev/zero`) may never end: refused before it
    // is opened.
    const info = await Deno.stat(path);
    if (!info.isFile) {
      throw new Error("it is not a regular file; pass a JavaScript file");
    }
    if (info.size > MAX_GUEST_FILE_BYTES) {
      throw new Error(`it is larger than ${MAX_GUEST_FILE_BYTES} bytes`);
    }
    bytes = await Deno.readFile(path);
  } catch (error) {
    if (!isOsError(error)) throw error;
    throw new Error(
      `${nameOf(error)}; pass a JavaScript file this command may read`,
    );
  }
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new Error("it is not UTF-8 text; save it as UTF-8");
  }
}

/** The usage text `--help` prints. */
export const USAGE: string =
  `Run a guest ES module in the QuickJS sandbox and print the result as JSON.

Usage: deno task run <file.js> [flags]

Flags:
  --packages A,B            The packs the guest declares (default: none)
  --packs DIR               The packs folder (default: cordon's fixture packs)
  --server URL              Fetch packs from this delivery server instead
  --context JSON            The value a function default export is called with
  --timeout-ms N            The run's time limit (default: 5000)
  --memory-limit-bytes N    The run's memory limit (default: 67108864)
  --max-source-bytes N      The largest guest source, in bytes of UTF-8
                            (default: 4194304; the file is read up to 16 MiB)
  --max-context-bytes N     The largest --context, in bytes of its JSON
                            (default: 4194304)
  --max-result-bytes N      The largest answer, in bytes of its JSON
                            (default: 4194304)
  --in-thread               Run on this process's thread, not a runner process:
                            faster to start, but a long built-in call can
                            outlast --timeout-ms
  -h, --help                Print this help

Relative paths are read from the folder deno task was started in (INIT_CWD),
not the folder of deno.json, where the task runs.

Exit code: 0 when the run succeeded, 1 when it failed, 2 for bad flags, 130
after SIGINT, 143 after SIGTERM (the runner process is ended first).`;

const FLAGS: FlagSpec = {
  options: {
    packages: { type: "string" },
    packs: { type: "string" },
    server: { type: "string" },
    context: { type: "string" },
    "timeout-ms": { type: "string" },
    "memory-limit-bytes": { type: "string" },
    "max-source-bytes": { type: "string" },
    "max-context-bytes": { type: "string" },
    "max-result-bytes": { type: "string" },
    "in-thread": { type: "boolean" },
    help: { type: "boolean", short: "h" },
  },
  allowPositionals: true,
  emptyValues: true,
  owner: "this command",
};

/**
 * Parses the CLI flags with `node:util`'s `parseArgs` in strict mode.
 * Values go as `--flag value` or `--flag=value`; one that starts with a
 * dash goes as `--flag=-x`, and a file name that does after `--`.
 *
 * @param args The command-line arguments, such as `Deno.args`.
 * @returns The parsed flags.
 * @throws {TypeError} When a flag is unknown, repeated or lacks a value,
 * when the file is missing, when `--packs` and `--server` are both given,
 * or when `--context` is not JSON.
 * @throws {RangeError} When a number flag is not a whole number.
 *
 * @example
 * ```ts
 * import { parseRunArgs } from "@cordon/cordon/cli/run";
 * import assert from "node:assert/strict";
 *
 * const args = parseRunArgs(["guest.js", "--packages", "greet,@acme/math", "--context={\"n\":1}"]);
 * assert.equal(args.file, "guest.js");
 * assert.deepEqual(args.packages, ["greet", "@acme/math"]);
 * assert.deepEqual(args.context, { n: 1 });
 * assert.throws(() => parseRunArgs(["guest.js", "--packs", "a", "--server", "http://x"]), TypeError);
 * ```
 */
export function parseRunArgs(args: readonly string[]): RunArgs {
  const { values, switches, positionals: files } = readFlags(args, FLAGS);
  const help = switches.has("help");
  if (files.length !== 1 && !help) {
    throw new TypeError(
      files.length === 0
        ? "Cannot read the flags: name the guest file to run"
        : "Cannot read the flags: name one guest file only",
    );
  }
  if (values.has("packs") && values.has("server")) {
    throw new TypeError(
      "Cannot read the flags: give --packs or --server, not both",
    );
  }
  let context: JsonValue | undefined;
  const contextText = values.get("context");
  if (contextText !== undefined) {
    try {
      context = JSON.parse(contextText) as JsonValue;
    } catch {
      throw new TypeError(
        "Cannot read the flags: --context must be JSON, such as '{\"n\":1}'",
      );
    }
  }
  const packages = (values.get("packages") ?? "").split(",").map((name) =>
    name.trim()
  ).filter((name) => name !== "");
  const out: RunArgs = {
    file: files[0] ?? "",
    packages,
    inThread: switches.has("in-thread"),
    help,
  };
  const packsDir = values.get("packs");
  if (packsDir !== undefined) out.packsDir = packsDir;
  const serverUrl = values.get("server");
  if (serverUrl !== undefined) out.serverUrl = serverUrl;
  if (context !== undefined) out.context = context;
  for (const [option, flag] of LIMIT_FLAGS) {
    const value = readIntegerFlag(flag, values.get(flag.slice(2)));
    if (value !== undefined) out[option] = value;
  }
  return out;
}

/**
 * The flag each option the command sets comes from, so that a refusal of
 * the option by the catalog or the pool speaks of the flag.
 */
const FLAG_OF_OPTION: Readonly<Record<string, string>> = Object.freeze({
  packsDir: "--packs",
  baseUrl: "--server",
  ...Object.fromEntries(LIMIT_FLAGS),
});

/**
 * A refusal of an option the command set from a flag, told as a refusal of
 * the flag: "Cannot run the declaration: timeoutMs must be ..." becomes
 * "Cannot read the flags: --timeout-ms must be ...". Any other message is
 * kept whole.
 */
function asFlagRefusal(message: string): string {
  const found = /: (\w+) (must .*)$/.exec(message);
  const flag = found && Object.hasOwn(FLAG_OF_OPTION, found[1]!)
    ? FLAG_OF_OPTION[found[1]!]
    : undefined;
  return flag === undefined
    ? message
    : `Cannot read the flags: ${flag} ${found![2]}`;
}

/**
 * A failure as one error line: a coded error (a runner that cannot start,
 * such as without `--allow-run`) with its code, so a script can tell the
 * failure from its line as from the exit code.
 */
function codedLine(error: unknown, message = messageOf(error)): string {
  return error instanceof CordonError
    ? `error: ${error.code}: ${message}`
    : `error: ${message}`;
}

/** Where {@linkcode runCli} writes. */
export interface RunCliOptions {
  /**
   * Writes the result (or the usage).
   *
   * @default {console.log}
   */
  print?: (text: string) => void;
  /**
   * Writes an error line.
   *
   * @default {console.error}
   */
  printError?: (text: string) => void;
}

/**
 * Runs the CLI: reads the guest file, builds the catalog, runs the guest
 * once and prints the result as JSON.
 *
 * @param args The command-line arguments, such as `Deno.args`.
 * @param options Where to write.
 * @returns The exit code: 0 when the run succeeded (or `--help`), 1 when it
 * failed or could not start, 2 for bad flags, 130 or 143 when SIGINT or
 * SIGTERM stopped a run on a runner process (which is ended first).
 *
 * @example
 * ```ts ignore
 * import { runCli } from "@cordon/cordon/cli/run";
 *
 * Deno.exit(await runCli(["guest.js", "--packages", "greet"]));
 * ```
 */
export async function runCli(
  args: readonly string[],
  options: RunCliOptions = {},
): Promise<number> {
  const { print = console.log, printError = console.error } = readOptions(
    "run the run command",
    options,
    { print: true, printError: true },
  );
  const parsed = parseOrAnswer(parseRunArgs, args, USAGE, {
    print,
    printError,
  });
  if (typeof parsed === "number") return parsed;
  let source: string;
  try {
    source = await readGuestFile(parsed.file);
  } catch (error) {
    printError(failureLine(
      error,
      `Cannot read the guest file ${
        operatorQuote(parsed.file, MAX_QUOTED_PATH_CHARS)
      }: ${messageOf(error)}`,
    ));
    return 1;
  }
  let catalog: SandboxModuleCatalog;
  try {
    if (parsed.serverUrl !== undefined) {
      catalog = createRemoteCatalog({ baseUrl: parsed.serverUrl });
    } else {
      const packsDir = parsed.packsDir ??
        fileURLToPath(new URL("../fixtures/packs/", import.meta.url));
      catalog = await createDiskCatalog(packsDir);
    }
  } catch (error) {
    // The remote catalog checks the URL --server gave it: a refusal of
    // that is a refusal of the flags.
    if (error instanceof TypeError) {
      printError(flagsErrorLine(asFlagRefusal(messageOf(error))));
      return 2;
    }
    printError(failureLine(
      error,
      `Cannot open the catalog: ${nameOf(error)}; pass --packs DIR`,
    ));
    return 1;
  }
  // A runner process that SIGINT or SIGTERM left behind would run on until
  // it noticed its parent gone: listening, the command ends the run and its
  // runner before it exits. An in-thread run holds the thread a listener
  // would need, so there the signal ends the process, runner and all.
  using stop = parsed.inThread ? undefined : listenForStop("run");
  let runner: QuickJSPool;
  try {
    runner = await createQuickJSPool(
      parsed.inThread
        ? { catalog, isolation: "in-thread" }
        : { catalog, size: 1 },
    );
  } catch (error) {
    printError(codedLine(error));
    return 1;
  }
  await using loader = runner;
  let result: SandboxResult;
  try {
    result = await loader.run({ source, packages: parsed.packages }, {
      ...(parsed.context === undefined ? {} : { context: parsed.context }),
      ...limitsOf(parsed),
      ...(stop === undefined ? {} : { signal: stop.signal }),
    });
  } catch (error) {
    const message = `Cannot run the guest file: ${messageOf(error)}`;
    // The pool checks the limits the flags gave it: a refusal of those is
    // a refusal of the flags.
    if (error instanceof RangeError || error instanceof TypeError) {
      printError(flagsErrorLine(asFlagRefusal(message)));
      return 2;
    }
    printError(codedLine(error, message));
    return 1;
  }
  if (stop?.stoppedBy !== undefined) {
    printError(
      `error: INTERRUPTED: Stopped by ${stop.stoppedBy} before the guest file finished: its runner process is ended and no result is printed`,
    );
    return STOP_EXIT_CODES[stop.stoppedBy] ?? 1;
  }
  try {
    // The result is the guest's text, printed to a terminal.
    print(operatorJson(result, 2)!);
  } catch (error) {
    // A full disk is not the run's failure.
    printError(outputErrorLine(error));
    return 1;
  }
  return result.ok ? 0 : 1;
}

if (import.meta.main) {
  await runProgram(runCli);
}
