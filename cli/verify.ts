/**
 * The verify CLI: checks a staged tree before (or after) it is published,
 * for release pipelines. It prints one line per problem and a summary,
 * and exits non-zero when there is any problem.
 *
 * ```sh
 * deno run --allow-read jsr:@cordon/cordon/cli/verify ./staged \
 *   --previous ./released/index.json
 * ```
 *
 * Its exit code is 0 when the tree is sound, 1 when it has problems or
 * cannot be read, and 2 for bad flags.
 *
 * @module
 */

import { readOptions } from "../protocol/options.ts";
import { readStagedIndex, verifyStagedTree } from "../catalog/verify_staged.ts";
import type { StagedIndex } from "../protocol/mod.ts";
import {
  failureLine,
  type FlagSpec,
  messageOf,
  nameOf,
  parseOrAnswer,
  readFlags,
} from "./_flags.ts";
import { runProgram } from "./_program.ts";

/** The flags of the verify CLI, parsed. */
export interface VerifyArgs {
  /** The staged tree's folder. */
  dir: string;
  /**
   * `--previous PATH`: the previous release's tree folder or `index.json`,
   * when given.
   */
  previous?: string;
  /** `--help`: print the usage and exit. */
  help: boolean;
}

/** The usage text `--help` prints. */
export const USAGE: string = `Verify a staged tree against its index.

Usage: deno task verify DIR [flags]

Flags:
  --previous PATH   The previous release's staged tree or its index.json:
                    a pack whose version did not change must not have
                    changed either
  -h, --help        Print this help

Prints one line per problem (a tampered, missing or extra file, an index
that disagrees with itself, a pack changed without a new version) and a
summary.

Relative paths are read from the folder deno task was started in (INIT_CWD),
not the folder of deno.json, where the task runs.

Exit code: 0 when the tree is sound, 1 when it has problems or cannot be
read, 2 for bad flags.`;

const FLAGS: FlagSpec = {
  options: {
    previous: { type: "string" },
    help: { type: "boolean", short: "h" },
  },
  allowPositionals: true,
  emptyValues: false,
  owner: "this command",
};

/**
 * Parses the verify CLI's flags with `node:util`'s `parseArgs` in strict
 * mode.
 *
 * @param args The command-line arguments, such as `Deno.args`.
 * @returns The parsed flags.
 * @throws {TypeError} When a flag is unknown, repeated or lacks a value,
 * or there is not exactly one folder (unless `--help`).
 *
 * @example
 * ```ts
 * import { parseVerifyArgs } from "@cordon/cordon/cli/verify";
 * import assert from "node:assert/strict";
 *
 * const args = parseVerifyArgs(["./staged", "--previous", "./old"]);
 * assert.equal(args.dir, "./staged");
 * assert.equal(args.previous, "./old");
 * assert.throws(() => parseVerifyArgs([]), TypeError);
 * ```
 */
export function parseVerifyArgs(args: readonly string[]): VerifyArgs {
  const { values, switches, positionals } = readFlags(args, FLAGS);
  const help = switches.has("help");
  if (!help && positionals.length !== 1) {
    throw new TypeError(
      "Cannot read the flags: give exactly one staged tree folder",
    );
  }
  const previous = values.get("previous");
  return {
    dir: positionals[0] ?? "",
    ...(previous === undefined ? {} : { previous }),
    help,
  };
}

/** Where {@linkcode runVerify} writes. */
export interface RunVerifyOptions {
  /**
   * Writes one line of output.
   *
   * @default {console.log}
   */
  print?: (line: string) => void;
  /**
   * Writes one line of error output.
   *
   * @default {console.error}
   */
  printError?: (line: string) => void;
}

/**
 * Runs the verify CLI.
 *
 * @param args The command-line arguments, such as `Deno.args`.
 * @param options Where to write.
 * @returns The exit code: 0 when the tree is sound (or `--help`), 1 when
 * it has problems or cannot be read, 2 for bad flags.
 *
 * @example
 * ```ts ignore
 * import { runVerify } from "@cordon/cordon/cli/verify";
 *
 * Deno.exit(await runVerify(["./staged"]));
 * ```
 */
export async function runVerify(
  args: readonly string[],
  options: RunVerifyOptions = {},
): Promise<number> {
  const { print = console.log, printError = console.error } = readOptions(
    "run the verify command",
    options,
    { print: true, printError: true },
  );
  const parsed = parseOrAnswer(parseVerifyArgs, args, USAGE, {
    print,
    printError,
  });
  if (typeof parsed === "number") return parsed;
  const started = performance.now();
  let previous: StagedIndex | undefined;
  if (parsed.previous !== undefined) {
    try {
      previous = await readStagedIndex(parsed.previous);
    } catch (error) {
      printError(failureLine(error, messageOf(error)));
      return 1;
    }
  }
  let report;
  try {
    report = await verifyStagedTree(
      parsed.dir,
      previous === undefined ? {} : { previous },
    );
  } catch (error) {
    printError(failureLine(
      error,
      `Cannot read the staged tree: ${
        nameOf(error)
      }; pass the folder deno task stage wrote`,
    ));
    return 1;
  }
  for (const problem of report.problems) {
    // A tampered tree names its own files, which the report escapes, so a
    // file name cannot forge a line (such as "OK: ...") or repaint the
    // terminal.
    print(`${problem.code}: ${problem.message}`);
  }
  const ms = Math.round(performance.now() - started);
  const checked = `${counted(report.packs, "pack")}, ${
    counted(report.modules, "module")
  }, ${counted(report.files, "file")} hashed in ${ms} ms`;
  if (report.problems.length === 0) {
    print(`OK: ${checked}`);
    return 0;
  }
  print(`FAILED: ${counted(report.problems.length, "problem")} (${checked})`);
  return 1;
}

/** `1 pack`, `2 packs`. */
function counted(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

if (import.meta.main) {
  await runProgram(runVerify);
}
