/**
 * Verification of a staged tree, for release pipelines: every file is
 * hashed again and checked against the index, every id, graph digest and
 * dependency is recomputed, files the index does not name are reported,
 * and, against a previous release's index, a pack whose content changed
 * while its version did not is reported. Deno only: it reads folders.
 *
 * @module
 */

import { operatorText } from "../protocol/operator_text.ts";
import {
  CordonError,
  type ErrorCode,
  type PackSummary,
  STAGED_INDEX_FILE,
  type StagedIndex,
  StagedIndexSchema,
  stagedModulePath,
  type StagedPackEntry,
  stagedPackIndexPath,
  StagedPackSchema,
} from "../protocol/mod.ts";
import { readOptions } from "../protocol/options.ts";
import { moduleIdFor, sha256Digest } from "./digest.ts";
import { mapBounded } from "./_bounded.ts";
import { type HostAsyncFile, hostFs } from "./_host_fs.ts";
import { checkPackGraph } from "./_listed_pack.ts";
import { parseUntrusted } from "./_schema_parse.ts";
// As the staged catalog decodes: a byte order mark is kept, so JSON that
// starts with one is no JSON here either.
import { decodeUtf8 } from "./_utf8.ts";
import { errorName } from "../protocol/error_name.ts";
import { localPath } from "./local_path.ts";
import {
  HEADERS_FILE,
  headersFileText,
  NGINX_FILE,
  nginxSnippetText,
} from "./_staged_files.ts";

/** One problem of a staged tree. */
export interface StagedTreeProblem {
  /** The stable code, such as `STAGED_FILE_TAMPERED`. */
  code: ErrorCode;
  /** The file it is about, relative to the tree's root. */
  path: string;
  /** What is wrong and what to do. */
  message: string;
}

/** What {@linkcode verifyStagedTree} found. */
export interface StagedTreeReport {
  /** Every problem, sorted by path then code; empty when the tree is sound. */
  problems: StagedTreeProblem[];
  /** Packs the index lists. */
  packs: number;
  /** Modules the pack indexes list. */
  modules: number;
  /** Files hashed. */
  files: number;
}

/** Options of {@linkcode verifyStagedTree}. */
export interface VerifyStagedTreeOptions {
  /**
   * The index of the release before, from {@linkcode readStagedIndex}: a
   * pack staged at the same version in both must have the same content.
   * Copied at the call: a change made to it afterwards is not seen.
   */
  previous?: StagedIndex;
}

const READ_CONCURRENCY = 32;
/** The bytes asked for by one read of a staged file. */
const READ_CHUNK_BYTES = 64 * 1024;
const encoder = new TextEncoder();

/**
 * The most bytes of one staged file read: past any index or module that
 * staging writes, and short of what a file that never ends would cost.
 */
const MAX_FILE_BYTES = 64 * 1024 * 1024;

/**
 * A file's bytes, `"missing"`, or `"refused"` when it is no regular file
 * or is too large to be one staging wrote (a problem says so already).
 */
type Read = Uint8Array<ArrayBuffer> | "missing" | "refused";

/**
 * Reads one file of the tree, as a static host would serve it (through a
 * link too), but only a regular file of at most `MAX_FILE_BYTES`: a FIFO
 * would block the read forever, and a link to a device such as
 * `/dev/zero` would never end.
 */
async function readStaged(
  root: string,
  path: string,
  problems: Problems,
): Promise<Read> {
  const full = root === "" ? path : `${root}/${path}`;
  const refuse = (detail: string): Read => {
    problems.add(
      "STAGED_FILE_TAMPERED",
      path,
      `${detail}; stage the packs again into an empty folder and do not serve this tree`,
    );
    return "refused";
  };
  let file: HostAsyncFile;
  try {
    const info = await Deno.stat(full);
    if (info.isDirectory) return "missing";
    if (!info.isFile) return refuse("it is not a regular file");
    // The opener that does not wait on a named pipe: one put in place of
    // the file just checked would hold Deno's open until a writer came.
    file = await hostFs().open(full);
  } catch (error) {
    if (
      error instanceof Deno.errors.NotFound ||
      error instanceof Deno.errors.IsADirectory ||
      hostFs().errorKind(error) === "not-found"
    ) {
      return "missing";
    }
    throw treeUnusable(error);
  }
  try {
    const info = await file.stat().catch((error) => {
      throw treeUnusable(error);
    });
    if (!info.isFile) return refuse("it is not a regular file");
    const tooLarge = `it is larger than ${MAX_FILE_BYTES} bytes`;
    if (info.size > MAX_FILE_BYTES) return refuse(tooLarge);
    return await readOpened(file) ?? refuse(tooLarge);
  } finally {
    await file.close();
  }
}

/**
 * An opened regular file's bytes, or `null` past `MAX_FILE_BYTES` (it
 * grew since its status was read).
 */
async function readOpened(
  file: HostAsyncFile,
): Promise<Uint8Array<ArrayBuffer> | null> {
  const chunks: Uint8Array<ArrayBuffer>[] = [];
  let total = 0;
  for (;;) {
    const chunk = new Uint8Array(READ_CHUNK_BYTES);
    const read = await file.read(chunk).catch((error) => {
      throw treeUnusable(error);
    });
    if (read === null || read === 0) break;
    total += read;
    if (total > MAX_FILE_BYTES) return null;
    chunks.push(chunk.subarray(0, read));
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return bytes;
}

/** Every entry of a tree that is not a folder; links are listed apart. */
async function listFiles(
  root: string,
  prefix = "",
  found: { files: string[]; links: Set<string> } = {
    files: [],
    links: new Set(),
  },
): Promise<{ files: string[]; links: Set<string> }> {
  for await (const entry of Deno.readDir(`${root}/${prefix}`)) {
    const path = `${prefix}${entry.name}`;
    if (entry.isDirectory) await listFiles(root, `${path}/`, found);
    else {
      found.files.push(path);
      if (entry.isSymlink) found.links.add(path);
    }
  }
  return found;
}

/** Every file of the tree, or {@linkcode treeUnusable}. */
async function listTree(
  root: string,
): Promise<{ files: string[]; links: Set<string> }> {
  try {
    return await listFiles(root);
  } catch (error) {
    throw treeUnusable(error);
  }
}

/**
 * `PATH_UNUSABLE` for a tree, or a file in it, that cannot be listed or
 * read, naming only the kind of failure: Deno's own error names the path,
 * which the caller may not have given as written (a file: URL, a
 * subfolder).
 */
function treeUnusable(error: unknown): CordonError {
  const name = denoName(errorName(error));
  return new CordonError(
    "PATH_UNUSABLE",
    `Cannot read the staged tree: ${name}; ${treeRemedy(name)}`,
    { cause: error },
  );
}

/**
 * Deno's names for the failures Node's open reports by code (files are
 * opened with `node:fs`), so a message reads the same whichever call met
 * the failure.
 */
const DENO_NAMES: Readonly<Record<string, string>> = Object.freeze({
  EACCES: "PermissionDenied",
  EPERM: "PermissionDenied",
  ELOOP: "FilesystemLoop",
});

function denoName(name: string): string {
  return Object.hasOwn(DENO_NAMES, name) ? DENO_NAMES[name]! : name;
}

/**
 * What to do about a tree that cannot be read, by the failure's name. A
 * tree that permissions or a link keep from this process may be the
 * right one: asking for another folder would send its user the wrong way.
 */
function treeRemedy(name: string): string {
  switch (name) {
    case "NotCapable":
      return "run with --allow-read covering it";
    case "PermissionDenied":
      return "let this process read every file and folder of the tree: check their permissions";
    case "FilesystemLoop":
      return "a link in the tree leads to itself: stage the packs again into an empty folder";
    default:
      return "pass the folder deno task stage wrote";
  }
}

/** Whether two files hold the same bytes, as a host serves them. */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

function parseJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(decodeUtf8(bytes));
  } catch {
    return undefined;
  }
}

/** Collects problems with the registry's wording. */
class Problems {
  readonly list: StagedTreeProblem[] = [];

  add(code: ErrorCode, path: string, detail: string): void {
    this.list.push({ code, path, message: `${operatorText(path)}: ${detail}` });
  }
}

/**
 * Reads a staged tree's index: `<dir>/index.json` when given a folder, or
 * the file itself.
 *
 * @param given A staged tree's folder or an `index.json`: a path, or a
 * `file:` URL.
 * @returns The validated index.
 * @throws {CordonError} `PATH_UNUSABLE` when the path cannot be read (the
 * original error is the `cause`), `STAGED_FILE_MISSING` when the folder
 * has no `index.json`, `STAGED_INDEX_INVALID` when the file is not JSON
 * that matches the staged index schema or lists a pack twice or out of
 * order; no message names an absolute path.
 * @throws {TypeError} When `given` is not a path or a `file:` URL of a
 * local file or folder.
 *
 * @example
 * ```ts ignore
 * import { readStagedIndex, verifyStagedTree } from "@cordon/cordon/catalog/verify";
 *
 * const previous = await readStagedIndex("./release-1.4/index.json");
 * const report = await verifyStagedTree("./staged", { previous });
 * ```
 */
export async function readStagedIndex(
  given: string | URL,
): Promise<StagedIndex> {
  const path = localPath(given, {
    where: "read the previous staged index",
    name: "path",
    kind: "file",
  });
  let file = path;
  try {
    if ((await Deno.stat(path)).isDirectory) {
      file = `${path.replace(/[\\/]+$/, "")}/${STAGED_INDEX_FILE}`;
    }
  } catch (error) {
    throw new CordonError(
      "PATH_UNUSABLE",
      `Cannot read the previous staged index: ${
        (error as Error).name
      }; pass a staged tree's folder or its index.json`,
      { cause: error },
    );
  }
  const read = await readStaged("", file, new Problems()).catch(() =>
    "missing" as const
  );
  if (read === "missing" || read === "refused") {
    throw new CordonError(
      "STAGED_FILE_MISSING",
      "Cannot read the previous staged index: the folder has no index.json; pass a staged tree's folder or its index.json",
    );
  }
  const parsed = parseUntrusted(StagedIndexSchema, parseJson(read));
  if (!parsed.success) {
    throw new CordonError(
      "STAGED_INDEX_INVALID",
      "Cannot read the previous staged index: it does not match the staged index schema (schemas/staged_index.json)",
    );
  }
  const misordered = misorderedPacks(parsed.data)[0];
  if (misordered !== undefined) {
    throw new CordonError(
      "STAGED_INDEX_INVALID",
      `Cannot read the previous staged index: it lists pack "${misordered}" twice or out of order; pass the index.json that staging wrote`,
    );
  }
  return parsed.data;
}

/**
 * Checks a staged tree against its own index: every file is hashed again,
 * every module id is derived again from its pack's name, version and path,
 * every graph digest and dependency is recomputed, `_headers` and
 * `_nginx.conf` must be what staging writes, and no file may be missing or
 * extra. With `previous`, a pack whose version is unchanged must have an
 * unchanged graph digest and pack index.
 *
 * @param dir The staged tree's folder: a path, or a `file:` URL.
 * @param options The previous release's index, if any.
 * @returns The report: problems (empty when sound) and counts.
 * @throws {TypeError} When `dir` is not a path or a `file:` URL of a local
 * folder, an option is unknown or `previous` is not a staged index (one
 * that lists a pack twice or out of order included, as
 * {@linkcode readStagedIndex} refuses it).
 * @throws {CordonError} `PATH_UNUSABLE` when the folder, or a folder in
 * it, cannot be listed, or a file in it cannot be opened (a link that
 * leads to itself; the original error is the `cause`); the message names
 * no path.
 *
 * @example
 * ```ts
 * import { planStagedTree, writeStagedTree } from "@cordon/cordon/catalog/stage";
 * import { verifyStagedTree } from "@cordon/cordon/catalog/verify";
 * import assert from "node:assert/strict";
 *
 * const out = await Deno.makeTempDir();
 * try {
 *   await writeStagedTree(await planStagedTree("./fixtures/packs"), out);
 *   await Deno.writeTextFile(`${out}/stray.txt`, "x");
 *   const report = await verifyStagedTree(out);
 *   assert.deepEqual(report.problems.map((p) => p.code), ["STAGED_FILE_EXTRA"]);
 * } finally {
 *   await Deno.remove(out, { recursive: true });
 * }
 * ```
 */
export async function verifyStagedTree(
  dir: string | URL,
  options: VerifyStagedTreeOptions = {},
): Promise<StagedTreeReport> {
  const where = "verify the staged tree";
  const path = localPath(dir, { where, name: "dir", kind: "folder" });
  const { previous: given } = readOptions(where, options, {
    previous: true,
  });
  // The parsed copy is what is compared: the index as it was at the call,
  // whatever the caller changes while the tree is read.
  const parsed = given === undefined
    ? undefined
    : parseUntrusted(StagedIndexSchema, given);
  if (
    parsed !== undefined &&
    (!parsed.success || misorderedPacks(parsed.data).length > 0)
  ) {
    // A pack listed twice would leave one of its entries unchecked, as
    // readStagedIndex refuses it for.
    throw new TypeError(
      "Cannot verify the staged tree: previous must be a staged index, as readStagedIndex returns",
    );
  }
  const previous = parsed?.data;
  const root = path.replace(/[\\/]+$/, "");
  const listed = await listTree(root);
  const present = new Set(listed.files);
  const problems = new Problems();
  // A link may point anywhere, and a host may follow it: a staged tree
  // holds regular files only.
  for (const path of listed.links) {
    problems.add(
      "STAGED_FILE_TAMPERED",
      path,
      "it is a symbolic link, not a file; stage the packs again into an empty folder",
    );
  }
  const expected = new Set<string>([STAGED_INDEX_FILE]);
  const report = (): StagedTreeReport => {
    for (const path of present) {
      if (!expected.has(path)) {
        problems.add(
          "STAGED_FILE_EXTRA",
          path,
          "the staged index does not name this file; remove it, or stage the packs again into an empty folder",
        );
      }
    }
    problems.list.sort((a, b) =>
      a.path < b.path ? -1 : a.path > b.path ? 1 : a.code < b.code ? -1 : 1
    );
    return { problems: problems.list, packs, modules, files: hashed };
  };
  let packs = 0;
  let modules = 0;
  let hashed = 0;

  for (
    const [file, text] of [
      [HEADERS_FILE, headersFileText()],
      [NGINX_FILE, nginxSnippetText()],
    ] as const
  ) {
    expected.add(file);
    const read = await readStaged(root, file, problems);
    if (read === "missing") {
      problems.add(
        "STAGED_FILE_MISSING",
        file,
        "the headers file is missing; publish the whole staged tree",
      );
    } else if (read !== "refused" && !sameBytes(read, encoder.encode(text))) {
      problems.add(
        "STAGED_FILE_TAMPERED",
        file,
        "it differs from what staging writes; stage the packs again",
      );
    }
  }

  const indexBytes = await readStaged(root, STAGED_INDEX_FILE, problems);
  if (indexBytes === "missing") {
    problems.add(
      "STAGED_FILE_MISSING",
      STAGED_INDEX_FILE,
      "the tree has no index; publish the whole staged tree",
    );
    return report();
  }
  const parsedIndex = indexBytes === "refused"
    ? undefined
    : parseUntrusted(StagedIndexSchema, parseJson(indexBytes));
  if (parsedIndex === undefined || !parsedIndex.success) {
    if (parsedIndex !== undefined) {
      problems.add(
        "STAGED_INDEX_INVALID",
        STAGED_INDEX_FILE,
        "it is not JSON that matches the staged index schema (schemas/staged_index.json); stage the packs again",
      );
    }
    // The rest cannot be named: everything else would be reported extra.
    for (const path of present) expected.add(path);
    return report();
  }
  const index = parsedIndex.data;
  packs = index.packs.length;
  checkIndexOrder(index, problems);

  const summaries = await mapBounded(
    index.packs,
    READ_CONCURRENCY,
    (entry) => checkPackIndex(root, entry, problems, expected),
  );
  const targets: { path: string; digest: string; pack: string }[] = [];
  for (const summary of summaries) {
    if (summary === undefined) continue;
    for (const module of summary.modules) {
      targets.push({
        path: stagedModulePath(module.id, module.digest),
        digest: module.digest,
        pack: summary.name,
      });
    }
  }
  modules = targets.length;
  await mapBounded(targets, READ_CONCURRENCY, async (target) => {
    expected.add(target.path);
    const read = await readStaged(root, target.path, problems);
    if (read === "refused") return;
    if (read === "missing") {
      problems.add(
        "STAGED_FILE_MISSING",
        target.path,
        `a module of pack "${target.pack}" is missing; publish the whole staged tree`,
      );
      return;
    }
    hashed++;
    const actual = await sha256Digest(read);
    if (actual !== target.digest) {
      problems.add(
        "STAGED_FILE_TAMPERED",
        target.path,
        `a module of pack "${target.pack}" hashes to ${actual} but its pack index gives ${target.digest}; stage the packs again and do not serve this file`,
      );
    }
  });
  hashed += summaries.filter((summary) => summary !== undefined).length + 1;
  if (previous !== undefined) {
    checkAgainstPrevious(index, previous, problems);
  }
  return report();
}

/**
 * The packs an index lists twice or out of name order: staging sorts them,
 * and of a pack listed twice only one entry would be checked.
 */
function misorderedPacks(index: StagedIndex): string[] {
  return index.packs.filter((entry, i) => {
    const before = index.packs[i - 1];
    return before !== undefined && !(before.name < entry.name);
  }).map((entry) => entry.name);
}

function checkIndexOrder(index: StagedIndex, problems: Problems): void {
  for (const name of misorderedPacks(index)) {
    problems.add(
      "STAGED_INDEX_INVALID",
      STAGED_INDEX_FILE,
      `pack "${name}" is listed twice or out of order; stage the packs again`,
    );
  }
}

/** Checks one pack index file; returns its summary when it can be read. */
async function checkPackIndex(
  root: string,
  entry: StagedPackEntry,
  problems: Problems,
  expected: Set<string>,
): Promise<PackSummary | undefined> {
  const path = stagedPackIndexPath(entry.name);
  expected.add(path);
  const read = await readStaged(root, path, problems);
  if (read === "refused") return undefined;
  if (read === "missing") {
    problems.add(
      "STAGED_FILE_MISSING",
      path,
      `the pack index of "${entry.name}" is missing; publish the whole staged tree`,
    );
    return undefined;
  }
  const actual = await sha256Digest(read);
  if (actual !== entry.indexDigest) {
    problems.add(
      "STAGED_FILE_TAMPERED",
      path,
      `the pack index of "${entry.name}" hashes to ${actual} but the staged index gives ${entry.indexDigest}; stage the packs again`,
    );
  }
  const parsed = parseUntrusted(StagedPackSchema, parseJson(read));
  if (!parsed.success) {
    problems.add(
      "STAGED_INDEX_INVALID",
      path,
      `the pack index of "${entry.name}" does not match the staged pack schema (schemas/staged_pack.json); stage the packs again`,
    );
    return undefined;
  }
  const summary = parsed.data;
  const invalid = (detail: string) =>
    problems.add(
      "STAGED_INDEX_INVALID",
      path,
      `the pack index of "${entry.name}" ${detail}; stage the packs again`,
    );
  if (
    summary.name !== entry.name || summary.version !== entry.version ||
    summary.graphDigest !== entry.graphDigest
  ) {
    invalid(
      "names another pack, version or graph digest than the staged index",
    );
  }
  const ids = await Promise.all(
    summary.modules.map((module) =>
      moduleIdFor(summary.name, summary.version, module.path)
    ),
  );
  for (const [i, module] of summary.modules.entries()) {
    if (module.id !== ids[i]) {
      invalid(
        `gives ${module.path} the id ${module.id}, not the id derived from its name, version and path (${
          ids[i]
        })`,
      );
    }
  }
  const graph = await checkPackGraph(summary);
  if (!graph.ok) invalid(`does not add up: ${graph.detail}`);
  return summary;
}

function checkAgainstPrevious(
  index: StagedIndex,
  previous: StagedIndex,
  problems: Problems,
): void {
  const before = new Map(previous.packs.map((entry) => [entry.name, entry]));
  for (const entry of index.packs) {
    const old = before.get(entry.name);
    if (old === undefined || old.version !== entry.version) continue;
    if (
      old.graphDigest !== entry.graphDigest ||
      old.indexDigest !== entry.indexDigest
    ) {
      problems.add(
        "STAGED_PACK_CHANGED",
        stagedPackIndexPath(entry.name),
        `pack "${entry.name}" is still version ${entry.version} but its content changed since the previous release (graph digest ${old.graphDigest} then, ${entry.graphDigest} now); give it a new version number, or restore the released content`,
      );
    }
  }
}
