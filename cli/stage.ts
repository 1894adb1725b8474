/**
 * The stage CLI: writes a packs folder as a static, content-addressed tree
 * for an embedded app, a CDN or any static host (see `docs/staging.md`).
 *
 * ```sh
 * deno run --allow-read --allow-write jsr:@cordon/cordon/cli/stage \
 *   --packs ./packs --out ./staged
 * ```
 *
 * Its exit code is 0 when the tree was written, 1 when discovery rejected
 * packs (unless `--allow-rejected`) or the tree cannot be written, and 2
 * for bad flags.
 *
 * @module
 */

import { readOptions } from "../protocol/options.ts";
import { planStagedTree, writeStagedTree } from "../catalog/stage.ts";
import { operatorText } from "../protocol/mod.ts";
import {
  count,
  failureLine,
  type FlagSpec,
  nameOf,
  parseOrAnswer,
  readFlags,
} from "./_flags.ts";
import { runProgram } from "./_program.ts";

/** The flags of the stage CLI, parsed. */
export interface StageArgs {
  /** `--packs DIR`: the packs folder to stage. */
  packsDir: string;
  /** `--out DIR`: the new or empty folder to write the tree into. */
  outDir: string;
  /** `--allow-rejected`: stage the other packs when discovery rejects some. */
  allowRejected: boolean;
  /** `--help`: print the usage and exit. */
  help: boolean;
}

/** The usage text `--help` prints. */
export const USAGE: string =
  `Stage a packs folder into a static, content-addressed tree.

Usage: deno task stage --packs DIR --out DIR [flags]

Flags:
  --packs DIR        The packs folder to stage
  --out DIR          A new or empty folder to write the tree into
  --allow-rejected   Stage the other packs when discovery rejects some
  -h, --help         Print this help

The tree: index.json, packs/<name>.json, modules/<id>.<digest>.js, and
the response headers for static hosts (_headers) and nginx (_nginx.conf).
Check it with: deno task verify DIR

Relative paths are read from the folder deno task was started in (INIT_CWD),
not the folder of deno.json, where the task runs.

Exit code: 0 when the tree was written, 1 when discovery rejected packs
(without --allow-rejected) or the tree cannot be written, 2 for bad flags.`;

const FLAGS: FlagSpec = {
  options: {
    packs: { type: "string" },
    out: { type: "string" },
    "allow-rejected": { type: "boolean" },
    help: { type: "boolean", short: "h" },
  },
  allowPositionals: false,
  emptyValues: false,
  owner: "this command",
};

/**
 * Parses the stage CLI's flags with `node:util`'s `parseArgs` in strict
 * mode.
 *
 * @param args The command-line arguments, such as `Deno.args`.
 * @returns The parsed flags.
 * @throws {TypeError} When a flag is unknown, repeated or lacks a value,
 * or `--packs` or `--out` is missing (unless `--help`).
 *
 * @example
 * ```ts
 * import { parseStageArgs } from "@cordon/cordon/cli/stage";
 * import assert from "node:assert/strict";
 *
 * const args = parseStageArgs(["--packs", "./packs", "--out=./staged"]);
 * assert.equal(args.outDir, "./staged");
 * assert.equal(args.allowRejected, false);
 * assert.throws(() => parseStageArgs(["--packs", "./packs"]), TypeError);
 * ```
 */
export function parseStageArgs(args: readonly string[]): StageArgs {
  const { values, switches } = readFlags(args, FLAGS);
  const help = switches.has("help");
  const packsDir = values.get("packs");
  const outDir = values.get("out");
  if (!help && (packsDir === undefined || outDir === undefined)) {
    throw new TypeError(
      `Cannot read the flags: ${
        packsDir === undefined ? "--packs" : "--out"
      } is required`,
    );
  }
  return {
    packsDir: packsDir ?? "",
    outDir: outDir ?? "",
    allowRejected: switches.has("allow-rejected"),
    help,
  };
}

/** Where {@linkcode runStage} writes. */
export interface RunStageOptions {
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
 * Runs the stage CLI.
 *
 * @param args The command-line arguments, such as `Deno.args`.
 * @param options Where to write.
 * @returns The exit code: 0 when the tree was written (or `--help`), 1
 * when packs were rejected or the tree cannot be written, 2 for bad flags.
 *
 * @example
 * ```ts ignore
 * import { runStage } from "@cordon/cordon/cli/stage";
 *
 * Deno.exit(await runStage(["--packs", "./packs", "--out", "./staged"]));
 * ```
 */
export async function runStage(
  args: readonly string[],
  options: RunStageOptions = {},
): Promise<number> {
  const { print = console.log, printError = console.error } = readOptions(
    "run the stage command",
    options,
    { print: true, printError: true },
  );
  const parsed = parseOrAnswer(parseStageArgs, args, USAGE, {
    print,
    printError,
  });
  if (typeof parsed === "number") return parsed;
  const started = performance.now();
  let plan;
  try {
    plan = await planStagedTree(parsed.packsDir);
  } catch (error) {
    printError(failureLine(
      error,
      `Cannot read the packs folder: ${
        nameOf(error)
      }; pass an existing folder to --packs`,
    ));
    return 1;
  }
  for (const d of plan.diagnostics) {
    // A folder name comes as written in the packs folder: escaped, it
    // cannot forge a line or repaint the terminal. The message is the
    // catalog's, which escapes what it quotes.
    printError(`rejected ${operatorText(d.pack)}: ${d.code}: ${d.message}`);
  }
  if (plan.diagnostics.length > 0 && !parsed.allowRejected) {
    printError(
      `error: STAGE_PACKS_REJECTED: discovery found ${
        count(plan.diagnostics.length, "problem")
      }; nothing was written; fix the packs, or pass --allow-rejected to stage the others`,
    );
    return 1;
  }
  try {
    await writeStagedTree(plan, parsed.outDir);
  } catch (error) {
    printError(failureLine(
      error,
      `Cannot write the staged tree: ${
        nameOf(error)
      }; check that the output folder is writable and its disk has room, then remove what was written (it has no index.json) and stage again`,
    ));
    return 1;
  }
  const ms = Math.round(performance.now() - started);
  print(
    `Staged ${count(plan.index.packs.length, "pack")} and ${
      count(plan.modules, "module")
    } (${count(plan.files.size, "file")}) in ${ms} ms`,
  );
  return 0;
}

if (import.meta.main) {
  await runProgram(runStage);
}
