/**
 * The pack CLI: vets npm packages as packs. For each package it fetches the
 * version from the registry, checks the tarball against the registry's
 * integrity hash, bundles each public entry point into a self-contained ES
 * module (code shared by entry points goes into internal chunk modules),
 * checks every entry for what the sandbox refuses, loads it in the hardened
 * QuickJS realm (bundling alone an entry that throws at import in the build
 * it shares with the others, and falling back to the package's next build
 * of an entry that cannot work), and writes a pack folder whose manifest
 * records where it came from. Entries that cannot work are left out and
 * listed with their reasons in the manifest's report; a package no entry of
 * which works is not written (`NPM_NO_ENTRY_WORKS`). With `--force` every
 * entry is written, with the report.
 *
 * ```sh
 * deno task pack date-fns@4 papaparse --out ./packs
 * deno task pack dayjs --subpaths .,./plugin/utc --out ./packs
 * ```
 *
 * Its exit code is 0 when every pack was written clean, 1 when one was
 * refused or failed, 2 for bad flags, and 130 or 143 when SIGINT or SIGTERM
 * stopped it (it then writes nothing more into the packs folder and
 * removes its work folder).
 *
 * @module
 */

import { isNodeCompatSpecifier } from "../policy/import_specifier.ts";
import { CordonError } from "../protocol/cordon_error.ts";
import { operatorText } from "../protocol/operator_text.ts";
import { isPackName } from "../protocol/ids.ts";
import type { ErrorCode, NpmOrigin } from "../protocol/mod.ts";
import {
  MAX_TIMER_MS,
  readIntegerOption,
  readOptions,
  TIMEOUT_MS_RANGE,
} from "../protocol/options.ts";
import {
  count,
  type FlagSpec,
  isOsError,
  messageOf,
  nameOf,
  parseOrAnswer,
  pathErrorLine,
  readFlags,
  readIntegerFlag,
} from "./_flags.ts";
import { listenForStop, runProgram, STOP_EXIT_CODES } from "./_program.ts";
import type { BundleOutput } from "./_npm_bundle.ts";
import {
  chooseEntries,
  type EntryPoint,
  type EntrySelection,
  InvalidExports,
} from "./_npm_entries.ts";
import {
  DEFAULT_FETCH_TIMEOUT_MS,
  DEFAULT_MAX_UNPACKED_BYTES,
  DEFAULT_REGISTRY,
  fetchPackageTree,
  parseNpmSpec,
  UNPACKED_BYTES_RANGE,
} from "./_npm_fetch.ts";
import type { EntryCheck } from "./_pack_checks.ts";
import { buildPack } from "./_pack_build.ts";
import { LoadCheckBudget } from "./_pack_load_check.ts";
import { LICENSE_FILE, licenseOf } from "./_pack_origin.ts";
import { settle } from "./_pack_rounds.ts";
import { layOut, writePackFolder } from "./_pack_write.ts";
import { localPath } from "../catalog/local_path.ts";

export type { EntryCheck } from "./_pack_checks.ts";

/** Options of {@linkcode packNpm}. */
export interface PackNpmOptions {
  /**
   * The packs folder the pack is written into, as `<outDir>/<name>/`: a
   * path, or a `file:` URL.
   */
  outDir: string | URL;
  /**
   * The subpaths to bundle, such as `[".", "./plugin/utc"]`.
   *
   * @default {every subpath the package exports}
   */
  subpaths?: readonly string[];
  /**
   * The npm registry's base URL.
   *
   * @default {"https://registry.npmjs.org"}
   */
  registry?: string;
  /**
   * Write every entry, those that cannot work too, with the report in
   * `cordon.npm.report`; without it such entries are left out (and listed
   * there), and a package no entry of which works is not written.
   *
   * @default {false}
   */
  force?: boolean;
  /**
   * How long one registry request (metadata or tarball) may take, from
   * sending it to the last byte of its body, in milliseconds. A request
   * still unfinished then is abandoned and fails with `NPM_FETCH_FAILED`.
   * Each request has its own deadline.
   *
   * @default {60000}
   */
  fetchTimeoutMs?: number;
  /**
   * How many bytes the tarballs of the package and its dependencies may
   * unpack to together (tar headers included): every file stays in memory
   * until the pack is written. A tree that unpacks to more fails with
   * `NPM_PACKAGE_INVALID`, naming the package that passed the bound. Each
   * tarball is also bounded by itself, at 256 MiB.
   *
   * @default {536870912}
   */
  maxUnpackedBytes?: number;
  /**
   * Stops the pack: aborts the downloads, ends the bundler's process and
   * the load check's runs, removes the work folder and writes nothing into
   * `outDir` (a pack whose swap into place has begun finishes it);
   * `packNpm()` then rejects with the signal's reason.
   */
  signal?: AbortSignal;
}

/** Why the first subpaths were skipped, for a refusal's message. */
function skippedText(skipped: EntrySelection["skipped"]): string {
  if (skipped.length === 0) return "";
  const shown = skipped.slice(0, 3).map(({ subpath, reason }) =>
    `${subpath} ${reason}`
  );
  if (skipped.length > 3) shown.push(`${skipped.length - 3} more`);
  return ` (${shown.join("; ")})`;
}

/** What {@linkcode packNpm} did with one package. */
export interface PackReport {
  /** The npm name. */
  name: string;
  /** The version fetched. */
  version: string;
  /** The licence its `package.json` states. */
  license: string;
  /** The registry's integrity hash the tarball matched. */
  integrity: string;
  /** One check per entry point, in subpath order. */
  entries: EntryCheck[];
  /** Exported subpaths that are not entries of the pack, and why. */
  skipped: { subpath: string; reason: string }[];
  /** How many modules the pack has, entries and chunks. */
  modules: number;
  /** The size of its modules, in bytes. */
  bytes: number;
  /** Whether the pack folder was written. */
  written: boolean;
}

/** Which part of the pack-name rule an npm name breaks, in words. */
function packNameBreach(name: string): string {
  if (/[A-Z]/.test(name)) return "it has capital letters";
  if (/[~'!()*]/.test(name)) return "it has one of ~ ' ! ( ) *";
  if (name.length > 214) return "it is over 214 characters long";
  return "it or its part after the scope starts with - or _";
}

/**
 * Refuses, before anything is fetched, a package whose npm name is no pack
 * name (`JSONStream`): its pack would keep that name, which no declaration
 * can list and no import can name. npm took such names before its current
 * rules, or takes them still (`-x`, `@s/_x`).
 */
function refuseNonPackName(name: string): void {
  if (isPackName(name)) return;
  throw new CordonError(
    "NPM_NOT_BUNDLABLE",
    `Cannot pack ${name}: guest code declares and imports a pack by its package's name, and this one is no pack name (lowercase npm-style, name or @scope/name): ${
      packNameBreach(name)
    }; only a dependency may have such a name, so pack a package published under a pack name that depends on it`,
  );
}

/**
 * Refuses a package named like a Node built-in (`punycode`, `buffer`,
 * `events`) before anything is fetched: import-policy rule 2 denies that
 * name in every sandbox, so its pack could never be imported.
 */
function refuseBuiltinName(name: string): void {
  if (!isNodeCompatSpecifier(name)) return;
  throw new CordonError(
    "NPM_NOT_BUNDLABLE",
    `Cannot pack ${name}: its name is a Node built-in's, which the import policy denies in every sandbox; pack a copy published under another name (punycode's is punycode.js)`,
  );
}

/**
 * Fetches one npm package, bundles and checks it, and writes it as a pack
 * into `options.outDir` unless an entry cannot work (or `force` is set).
 * The same package version always gives the same bytes.
 *
 * Every failure of the package is a {@linkcode CordonError} with a
 * one-line message and one of these codes:
 *
 * - `NPM_FETCH_FAILED`: the registry or a tarball cannot be fetched (the
 *   network, an HTTP error, over 64 MiB, not in full within
 *   `fetchTimeoutMs`, a tarball URL that is not http(s)).
 * - `NPM_NOT_FOUND`: the registry has no such package, or no version in
 *   the range or tag.
 * - `NPM_INTEGRITY_MISMATCH`: a tarball does not match the registry's hash.
 * - `NPM_PACKAGE_INVALID`: metadata, `package.json` or an archive is
 *   malformed or unsafe, or the tree unpacks to over `maxUnpackedBytes`.
 * - `NPM_NOT_BUNDLABLE`: a name that is no pack name (`JSONStream`) or is
 *   a Node built-in's, no entry point, a subpath the package does not
 *   export, a dependency from outside the registry, or the bundler failed
 *   on every entry.
 * - `PATH_UNUSABLE`: `outDir` or the temp folder cannot be written, the
 *   temp folder's path holds a comma (set `TMPDIR`), or Deno cannot write
 *   the cache folder it downloads the bundler into (set `DENO_DIR`).
 *
 * An entry that cannot work in the sandbox is no failure: the report
 * lists it.
 *
 * @param spec An npm spec: `date-fns`, `date-fns@4`, `@scope/name@^1.2`.
 * @param options Where to write, which subpaths, the registry, the time
 * bound of each request.
 * @returns What was checked and whether the pack was written.
 * @throws {TypeError} When the spec is not an npm name, `outDir` is not a
 * path or a `file:` URL of a local folder, or `fetchTimeoutMs` or
 * `maxUnpackedBytes` is not a number.
 * @throws {RangeError} When `fetchTimeoutMs` is not an integer from 1 to
 * 2147483647, or `maxUnpackedBytes` one from 1 to 8589934592 (8 GiB).
 * @throws {CordonError} With one of the codes above and a one-line message
 * when the package cannot be fetched, does not match its integrity hash,
 * is malformed or cannot be bundled; or the signal's reason when
 * `options.signal` aborts, with nothing written into `outDir` unless the
 * pack's swap into place had begun. Writing to `outDir` may throw the file
 * system's error.
 *
 * @example
 * ```ts ignore
 * import { packNpm } from "@cordon/cordon/cli/pack";
 *
 * const report = await packNpm("date-fns@4", { outDir: "./packs" });
 * console.log(report.written, report.entries.length);
 * ```
 */
export async function packNpm(
  spec: string,
  given: PackNpmOptions,
): Promise<PackReport> {
  const options = readOptions("pack an npm package", given ?? null, {
    outDir: true,
    subpaths: true,
    registry: true,
    force: true,
    fetchTimeoutMs: true,
    maxUnpackedBytes: true,
    signal: true,
  });
  const outDir = localPath(options.outDir, {
    where: "pack an npm package",
    name: "outDir",
    kind: "folder",
  });
  const parsed = parseNpmSpec(spec);
  refuseNonPackName(parsed.name);
  refuseBuiltinName(parsed.name);
  const fetchTimeoutMs = readIntegerOption(
    "pack an npm package",
    "fetchTimeoutMs",
    options.fetchTimeoutMs,
    DEFAULT_FETCH_TIMEOUT_MS,
    TIMEOUT_MS_RANGE,
  );
  const maxUnpackedBytes = readIntegerOption(
    "pack an npm package",
    "maxUnpackedBytes",
    options.maxUnpackedBytes,
    DEFAULT_MAX_UNPACKED_BYTES,
    UNPACKED_BYTES_RANGE,
  );
  const { signal } = options;
  signal?.throwIfAborted();
  const tree = await fetchPackageTree(parsed, {
    registry: options.registry ?? DEFAULT_REGISTRY,
    fetchTimeoutMs,
    maxUnpackedBytes,
    ...(signal === undefined ? {} : { signal }),
  });
  const { root } = tree;
  const what = `${root.name}@${root.version}`;
  const work = await makeWorkFolder();
  try {
    await layOut(work, tree, signal);
    const paths = new Set(root.files.map((file) => file.path));
    let selection: EntrySelection;
    try {
      const byPath = new Map(root.files.map((file) => [file.path, file]));
      selection = chooseEntries(
        root.manifest,
        (path) => paths.has(path),
        options.subpaths,
        (path) => {
          const file = byPath.get(path);
          return file === undefined
            ? undefined
            : new TextDecoder().decode(file.bytes);
        },
      );
    } catch (error) {
      throw new CordonError(
        error instanceof InvalidExports
          ? "NPM_PACKAGE_INVALID"
          : "NPM_NOT_BUNDLABLE",
        `Cannot pack ${what}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    if (selection.entries.length === 0) {
      throw new CordonError(
        "NPM_NOT_BUNDLABLE",
        `Cannot pack ${what}: it has no JavaScript entry point a pack can export${
          skippedText(selection.skipped)
        }; ${
          options.subpaths === undefined
            ? "name one with --subpaths"
            : "name another subpath with --subpaths, or pack another version"
        }`,
      );
    }
    const license = licenseOf(root.manifest);
    const origin: NpmOrigin = {
      name: root.name,
      version: root.version,
      integrity: root.integrity,
      license,
      bundled: [],
    };
    const licenseFile = root.files
      .filter((file) => LICENSE_FILE.test(file.path))
      .sort((a, b) => (a.path < b.path ? -1 : 1))[0];
    const aloneBuilds = new Map<string, BundleOutput>();
    const budget = new LoadCheckBudget();
    const build = (
      entries: readonly EntryPoint[],
      report?: NpmOrigin["report"],
    ) =>
      buildPack(work, {
        tree,
        entries,
        origin,
        licenseBytes: licenseFile?.bytes,
        report,
        aloneBuilds,
        budget,
        ...(signal === undefined ? {} : { signal }),
      });
    const outcome = await settle(
      build,
      selection.entries,
      options.force === true,
    );
    const report: PackReport = {
      name: root.name,
      version: root.version,
      license,
      integrity: root.integrity,
      entries: outcome.checks,
      skipped: selection.skipped,
      modules: outcome.pack?.modules ?? 0,
      bytes: outcome.pack?.bytes ?? 0,
      written: false,
    };
    if (outcome.pack === undefined) return report;
    await writePackFolder(
      outDir,
      root.name,
      outcome.pack.files,
      signal,
    );
    report.written = true;
    return report;
  } finally {
    await Deno.remove(work, { recursive: true });
  }
}

/** The flags of the pack CLI, parsed. */
export interface PackArgs {
  /** The npm specs to pack. */
  specs: string[];
  /** `--out DIR`: the packs folder. */
  outDir: string;
  /** `--subpaths .,./sub`: the subpaths to bundle (one package only). */
  subpaths?: string[];
  /** `--registry URL`: the npm registry. */
  registry?: string;
  /** `--fetch-timeout-ms N`: the time bound of each registry request. */
  fetchTimeoutMs?: number;
  /** `--max-unpacked-bytes N`: what the whole package tree may unpack to. */
  maxUnpackedBytes?: number;
  /** `--force`: write packs that cannot work, with their report. */
  force: boolean;
  /** `--help`: print the usage and exit. */
  help: boolean;
}

/** The usage text `--help` prints. */
export const PACK_USAGE: string =
  `Vet npm packages as packs: fetch, check integrity, bundle, check, write.

Usage: deno task pack <npm-spec>... --out PACKS_DIR [flags]

Flags:
  --out DIR                 The packs folder to write into (required)
  --subpaths .,./sub        The subpaths to bundle (one package only;
                            default: every subpath the package exports)
  --registry URL            The npm registry (default: ${DEFAULT_REGISTRY})
  --fetch-timeout-ms N      How long one registry request may take, body
                            included (default: ${DEFAULT_FETCH_TIMEOUT_MS})
  --max-unpacked-bytes N    How many bytes the tarballs of a package and its
                            dependencies may unpack to together
                            (default: ${DEFAULT_MAX_UNPACKED_BYTES})
  --force                   Write a pack even when an entry cannot work;
                            its manifest then carries the report
  -h, --help                Print this help

A package that cannot be packed prints "error: CODE: message", CODE one of
NPM_FETCH_FAILED, NPM_NOT_FOUND, NPM_INTEGRITY_MISMATCH, NPM_PACKAGE_INVALID,
NPM_NOT_BUNDLABLE, NPM_NO_ENTRY_WORKS (see docs/packing.md), or PATH_UNUSABLE
for an --out it cannot write into. SIGINT (Ctrl-C) or SIGTERM stops it with
INTERRUPTED: the packages not packed yet get nothing in --out.

A relative --out is read from the folder deno task was started in
(INIT_CWD), not the folder of deno.json, where the task runs.

Exit code: 0 when every pack was written clean, 1 when one was refused or
failed, 2 for bad flags, 130 after SIGINT, 143 after SIGTERM.`;

const FLAGS: FlagSpec = {
  options: {
    out: { type: "string" },
    subpaths: { type: "string" },
    registry: { type: "string" },
    "fetch-timeout-ms": { type: "string" },
    "max-unpacked-bytes": { type: "string" },
    force: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  },
  allowPositionals: true,
  emptyValues: false,
  owner: "this command",
};

/**
 * Parses the pack CLI's flags with `node:util`'s `parseArgs` in strict mode.
 *
 * @param args The command-line arguments, such as `Deno.args`.
 * @returns The parsed flags.
 * @throws {TypeError} When a flag is unknown, repeated or lacks a value,
 * when no package or no `--out` is given, when a spec is not an npm name,
 * or when `--subpaths` is given with several packages.
 * @throws {RangeError} When `--fetch-timeout-ms` is not a whole number
 * from 1 to 2147483647, or `--max-unpacked-bytes` one from 1 to
 * 8589934592.
 *
 * @example
 * ```ts
 * import { parsePackArgs } from "@cordon/cordon/cli/pack";
 * import assert from "node:assert/strict";
 *
 * const args = parsePackArgs(["date-fns@4", "marked", "--out", "packs"]);
 * assert.deepEqual(args.specs, ["date-fns@4", "marked"]);
 * assert.equal(args.outDir, "packs");
 * assert.throws(() => parsePackArgs(["date-fns"]), TypeError);
 * ```
 */
export function parsePackArgs(args: readonly string[]): PackArgs {
  const { values, switches, positionals } = readFlags(args, FLAGS);
  const help = switches.has("help");
  const out: PackArgs = {
    specs: [...positionals],
    outDir: values.get("out") ?? "",
    force: switches.has("force"),
    help,
  };
  if (help) return out;
  if (out.specs.length === 0) {
    throw new TypeError(
      "Cannot read the flags: name at least one npm package, such as date-fns@4",
    );
  }
  for (const spec of out.specs) parseNpmSpec(spec);
  if (out.outDir === "") {
    throw new TypeError(
      "Cannot read the flags: --out names the packs folder to write into",
    );
  }
  const subpaths = values.get("subpaths");
  if (subpaths !== undefined) {
    if (out.specs.length > 1) {
      throw new TypeError(
        "Cannot read the flags: --subpaths applies to one package; pack the others with another command",
      );
    }
    out.subpaths = subpaths.split(",").map((subpath) => subpath.trim())
      .filter((subpath) => subpath !== "");
  }
  const registry = values.get("registry");
  if (registry !== undefined) {
    if (!/^https?:\/\/[^\s]+$/.test(registry)) {
      throw new TypeError(
        "Cannot read the flags: --registry must be an http(s) URL",
      );
    }
    out.registry = registry;
  }
  const fetchTimeoutMs = readIntegerFlag(
    "--fetch-timeout-ms",
    values.get("fetch-timeout-ms"),
    { min: 1, max: MAX_TIMER_MS },
  );
  if (fetchTimeoutMs !== undefined) out.fetchTimeoutMs = fetchTimeoutMs;
  const maxUnpackedBytes = readIntegerFlag(
    "--max-unpacked-bytes",
    values.get("max-unpacked-bytes"),
    UNPACKED_BYTES_RANGE,
  );
  if (maxUnpackedBytes !== undefined) out.maxUnpackedBytes = maxUnpackedBytes;
  return out;
}

/** Where {@linkcode packCli} writes. */
export interface PackCliOptions {
  /**
   * Writes the report (or the usage).
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

/** The report's lines: the package, each entry's checks, and the outcome. */
function describe(
  report: PackReport,
  outDir: string,
  force: boolean,
): string[] {
  const lines = [
    `${report.name}@${report.version} (${report.license}, ${
      report.integrity.slice(0, 22)
    }…): ${count(report.entries.length, "entry", "entries")}, ${
      count(report.modules, "module")
    }, ${count(report.bytes, "byte")}`,
  ];
  for (const entry of report.entries) {
    const mark = entry.problems.length > 0 ? "refused" : "ok";
    lines.push(`  ${entry.subpath}: ${mark}`);
    for (const problem of entry.problems) {
      lines.push(`    cannot work: ${problem}`);
    }
    for (const warning of entry.warnings) lines.push(`    note: ${warning}`);
  }
  for (const skipped of report.skipped) {
    lines.push(`  ${skipped.subpath}: left out, it ${skipped.reason}`);
  }
  const refused = report.entries.some((entry) => entry.problems.length > 0);
  lines.push(
    report.written
      ? `  written to ${outDir}/${report.name}${
        !refused
          ? ""
          : force
          ? ", every entry included and the report in its manifest (--force)"
          : ", the refused entries left out and listed in its manifest's report"
      }`
      : "  not written",
  );
  return lines;
}

/** The error line of a package no entry of which works. */
function noEntryWorksLine(report: PackReport): string {
  const code: ErrorCode = "NPM_NO_ENTRY_WORKS";
  return `error: ${code}: Cannot pack ${report.name}@${report.version}: no entry works in a sandbox (the report above gives each entry's reasons); pack another build or version of the package, or pass --force to write it with the report`;
}

/**
 * What keeps `--out` from being a packs folder, before any package is
 * fetched: an existing path that is no folder.
 */
async function outDirProblem(outDir: string): Promise<string | undefined> {
  try {
    if ((await Deno.stat(outDir)).isDirectory) return undefined;
    return "it is a file, not a folder; pass the packs folder to write into (it is created when absent)";
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    return `it cannot be read (${
      nameOf(error)
    }); pass a packs folder this command may read and write`;
  }
}

/**
 * Makes the folder a package is unpacked and bundled in, under the system's
 * temp folder, so a failure there is not blamed on `--out`.
 *
 * @throws {CordonError} `PATH_UNUSABLE` when the temp folder cannot be
 * written.
 */
async function makeWorkFolder(): Promise<string> {
  try {
    return await Deno.makeTempDir({ prefix: "cordon-pack-" });
  } catch (error) {
    if (!isOsError(error)) throw error;
    throw new CordonError(
      "PATH_UNUSABLE",
      `Cannot make a work folder in the temp folder: ${
        nameOf(error)
      }; set TMPDIR to a folder this command may write, with room to unpack the packages`,
    );
  }
}

/**
 * The line of a command a stop signal ended, naming the packages it did
 * not pack (none when the signal came as the last one was finished).
 */
function interruptedLine(
  by: Deno.Signal,
  notPacked: readonly string[],
): string {
  const code: ErrorCode = "INTERRUPTED";
  if (notPacked.length === 0) {
    return `error: ${code}: Stopped by ${by} after the last package named was done, as the lines above say`;
  }
  const them = notPacked.length === 1 ? "it" : "them";
  return `error: ${code}: Stopped by ${by} before ${notPacked.join(", ")} ${
    notPacked.length === 1 ? "was" : "were"
  } packed: nothing of ${them} was written into --out and the work folder is removed; run the command again to pack ${them}`;
}

/**
 * Runs the CLI: packs each named package and prints what it checked.
 * SIGINT or SIGTERM stops it: the package being packed is not written (a
 * pack whose swap into place has begun finishes it), its work folder is
 * removed, the packages after it are not packed, and one `INTERRUPTED`
 * line names them.
 *
 * @param args The command-line arguments, such as `Deno.args`.
 * @param options Where to write.
 * @returns The exit code: 0 when every pack was written clean (or
 * `--help`), 1 when one was refused or failed, 2 for bad flags, 130 after
 * SIGINT and 143 after SIGTERM.
 *
 * @example
 * ```ts ignore
 * import { packCli } from "@cordon/cordon/cli/pack";
 *
 * Deno.exit(await packCli(["date-fns@4", "--out", "./packs"]));
 * ```
 */
export async function packCli(
  args: readonly string[],
  options: PackCliOptions = {},
): Promise<number> {
  const { print = console.log, printError = console.error } = readOptions(
    "run the pack command",
    options,
    { print: true, printError: true },
  );
  const parsed = parseOrAnswer(parsePackArgs, args, PACK_USAGE, {
    print,
    printError,
  });
  if (typeof parsed === "number") return parsed;
  const { outDir } = parsed;
  const outProblem = await outDirProblem(outDir);
  if (outProblem !== undefined) {
    printError(
      pathErrorLine(`Cannot write into --out: ${outProblem}`),
    );
    return 1;
  }
  using stop = listenForStop("pack");
  let code = 0;
  let done = 0;
  for (const spec of parsed.specs) {
    if (stop.signal.aborted) break;
    try {
      const report = await packNpm(spec, {
        outDir,
        signal: stop.signal,
        force: parsed.force,
        ...(parsed.subpaths === undefined ? {} : { subpaths: parsed.subpaths }),
        ...(parsed.registry === undefined ? {} : { registry: parsed.registry }),
        ...(parsed.fetchTimeoutMs === undefined
          ? {}
          : { fetchTimeoutMs: parsed.fetchTimeoutMs }),
        ...(parsed.maxUnpackedBytes === undefined
          ? {}
          : { maxUnpackedBytes: parsed.maxUnpackedBytes }),
      });
      // Subpaths, file names and load failures come from the package.
      for (const line of describe(report, parsed.outDir, parsed.force)) {
        print(operatorText(line));
      }
      const clean = report.entries.every((entry) =>
        entry.problems.length === 0
      );
      if (!report.written) printError(operatorText(noEntryWorksLine(report)));
      if (!report.written || !clean) code = 1;
    } catch (error) {
      // A failure once stopped is the stop's doing, not the package's.
      if (stop.signal.aborted) break;
      printError(operatorText(
        error instanceof CordonError
          ? `error: ${error.code}: ${error.message}`
          : isOsError(error)
          ? pathErrorLine(
            `Cannot write the pack into --out: ${
              nameOf(error)
            }; check that it is a folder this command may write and its disk has room`,
          )
          : `error: ${messageOf(error)}`,
      ));
      code = 1;
    }
    done++;
  }
  if (stop.stoppedBy === undefined) return code;
  printError(
    operatorText(interruptedLine(stop.stoppedBy, parsed.specs.slice(done))),
  );
  return STOP_EXIT_CODES[stop.stoppedBy] ?? 1;
}

if (import.meta.main) {
  await runProgram(packCli);
}
