/**
 * Staging: turns a packs folder into a static, content-addressed tree that
 * keeps the delivery contract (ids, digests, graph digests, dependencies)
 * with no cordon code on the server. Each module's bytes go to
 * `modules/<id>.<digest>.js`, each pack's summary to
 * `packs/<name>.json`, and `index.json` lists the packs; `_headers` and
 * `_nginx.conf` say which headers each file should carry. The same packs
 * always stage to the same bytes. Deno only: it reads and writes folders.
 *
 * @module
 */

import { operatorText } from "../protocol/operator_text.ts";
import {
  CordonError,
  type PackDiagnostic,
  STAGED_INDEX_FILE,
  type StagedIndex,
  stagedModulePath,
  type StagedPackEntry,
  stagedPackIndexPath,
} from "../protocol/mod.ts";
import { readOptions } from "../protocol/options.ts";
import { createDiskCatalog } from "./disk_catalog.ts";
import { localPath } from "./local_path.ts";
import { sha256Digest } from "./digest.ts";
import { mapBounded } from "./_bounded.ts";
import { bytesDetached, isDetached } from "./_bytes.ts";
import { errorName } from "../protocol/error_name.ts";
import { isInside, realPathToBe, SEP } from "./_host_path.ts";
import {
  foldersOf,
  replaceFile,
  syncFolder,
  writeFileSynced,
} from "../protocol/replace_file.ts";
import { bytesOf, deliveryAuthorizer } from "./in_memory_delivery.ts";
import {
  canonicalIndex,
  canonicalPack,
  HEADERS_FILE,
  headersFileText,
  jsonBytes,
  NGINX_FILE,
  nginxSnippetText,
} from "./_staged_files.ts";

/** Options of {@linkcode planStagedTree}. */
export interface PlanStagedTreeOptions {
  /**
   * The largest module file accepted, in bytes; larger files reject their
   * pack, as the disk catalog does.
   *
   * @default {1048576}
   */
  maxModuleBytes?: number;
  /** Aborts the discovery. */
  signal?: AbortSignal;
}

/** A staged tree in memory, ready to write. */
export interface StagedTreePlan {
  /** The tree's `index.json`. */
  index: StagedIndex;
  /**
   * Every file of the tree by its path relative to the root, in path
   * order. {@linkcode writeStagedTree} writes these bytes as they are when
   * it reaches each file, without a copy: change or transfer none of them
   * until it settles (`verifyStagedTree()` reports a file changed
   * meanwhile as tampered).
   */
  files: ReadonlyMap<string, Uint8Array<ArrayBuffer>>;
  /** How many modules the tree holds. */
  modules: number;
  /** The packs discovery rejected, which the tree leaves out. */
  diagnostics: PackDiagnostic[];
}

const encoder = new TextEncoder();
/** The real path of the packs folder each plan was made from. */
const packsFolderOf = new WeakMap<StagedTreePlan, string>();
const WRITE_CONCURRENCY = 32;

function byPath<T>(entries: [string, T][]): [string, T][] {
  return entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * Discovers a packs folder and builds its staged tree in memory. Packs that
 * discovery rejects are left out and listed in `diagnostics`; the caller
 * decides whether that is acceptable.
 *
 * @param packsDir The packs folder: a path, or a `file:` URL.
 * @param options The size cap and an abort signal.
 * @returns The plan: the index and every file's bytes.
 * @throws {TypeError} When `packsDir` is not a path or a `file:` URL of a
 * local folder, or an option is unknown or has the wrong type.
 * @throws {CordonError} `PATH_UNUSABLE` when the packs folder cannot be
 * read, as {@linkcode createDiskCatalog} throws.
 *
 * @example
 * ```ts
 * import { planStagedTree } from "@cordon/cordon/catalog/stage";
 * import assert from "node:assert/strict";
 *
 * const plan = await planStagedTree("./fixtures/packs");
 * assert.ok(plan.files.has("index.json"));
 * assert.deepEqual(plan.diagnostics, []);
 * ```
 */
export async function planStagedTree(
  packsDir: string | URL,
  options: PlanStagedTreeOptions = {},
): Promise<StagedTreePlan> {
  const where = "plan the staged tree";
  const packsPath = localPath(packsDir, {
    where,
    name: "packsDir",
    kind: "folder",
  });
  const { maxModuleBytes, signal } = readOptions(
    where,
    options,
    { maxModuleBytes: true, signal: true },
  );
  const catalog = await createDiskCatalog(packsPath, {
    maxModuleBytes,
    signal,
  });
  const files: [string, Uint8Array<ArrayBuffer>][] = [];
  const entries: StagedPackEntry[] = [];
  let modules = 0;
  const packs = catalog.summaries().map(canonicalPack).sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0
  );
  const authorize = deliveryAuthorizer(catalog);
  const packFiles: Uint8Array<ArrayBuffer>[] = [];
  for (const pack of packs) {
    for (const module of pack.modules) {
      const answer = authorize(module.id);
      const delivery = answer instanceof Promise ? await answer : answer;
      if (!delivery.ok) {
        throw new CordonError(
          "DELIVERY_UNAVAILABLE",
          `Cannot stage module ${
            operatorText(module.path)
          } of pack "${pack.name}": ${delivery.message}`,
        );
      }
      // The bytes discovery read and hashed, or the same bytes re-encoded.
      files.push([
        stagedModulePath(module.id, module.digest),
        bytesOf(delivery) ?? encoder.encode(delivery.content),
      ]);
      modules++;
    }
    packFiles.push(jsonBytes(pack));
  }
  const digests = await Promise.all(
    packFiles.map((bytes) => sha256Digest(bytes)),
  );
  for (const [i, pack] of packs.entries()) {
    files.push([stagedPackIndexPath(pack.name), packFiles[i]!]);
    entries.push({
      name: pack.name,
      version: pack.version,
      graphDigest: pack.graphDigest,
      indexDigest: digests[i]!,
    });
  }
  const index = canonicalIndex({ format: 1, packs: entries });
  files.push(
    [STAGED_INDEX_FILE, jsonBytes(index)],
    [HEADERS_FILE, encoder.encode(headersFileText())],
    [NGINX_FILE, encoder.encode(nginxSnippetText())],
  );
  const plan: StagedTreePlan = {
    index,
    files: new Map(byPath(files)),
    modules,
    diagnostics: catalog.diagnostics(),
  };
  packsFolderOf.set(plan, await Deno.realPath(packsPath));
  return plan;
}

async function isEmptyOrAbsent(dir: string): Promise<boolean> {
  try {
    for await (const _ of Deno.readDir(dir)) return false;
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return true;
    throw error;
  }
}

/**
 * Writes a planned tree into a new or empty folder. Files are written with
 * their final bytes, modules first and `index.json` last (to a temporary
 * file renamed into place), so a host serving the folder while it is
 * written never offers an index whose files are not there yet or part of
 * one, and a failure part way (a full disk, a killed process) leaves a
 * partial tree without `index.json`, which `verifyStagedTree` reports:
 * remove it and stage again. Every file and folder is synced to the disk
 * before `index.json` is renamed into place, and the rename after it, so
 * a power loss leaves the same: a whole tree, or one without `index.json`.
 *
 * Every file and folder of the tree is created, never written over, and
 * `_headers` first: of two stages started at once into one empty folder,
 * one writes its tree and the other refuses with `STAGE_OUTPUT_NOT_EMPTY`
 * having written nothing, so no tree mixes two stages' files.
 *
 * @param plan The plan from {@linkcode planStagedTree}.
 * @param outDir The folder to write into, a path or a `file:` URL; created
 * when absent.
 * @returns When every file is written.
 * @throws {CordonError} `BYTES_DETACHED` when a file's bytes were
 * transferred, before anything is written, or while the tree is written,
 * before `index.json`; `STAGE_OUTPUT_NOT_EMPTY` when `outDir` holds
 * anything, or another stage or process writes there once it was found
 * empty, `STAGE_OUTPUT_INSIDE_PACKS` when it is (or would be created)
 * inside the packs folder the plan was made from, `PATH_UNUSABLE` when it
 * cannot be made or a file cannot be written in it (the original error is
 * the `cause`); no message names a path.
 * @throws {TypeError} When `outDir` is not a path or a `file:` URL of a
 * local folder, or `plan` is no plan: its files are no `Map` of bytes, or
 * one's path is not relative inside the tree (`../x`, `/x`, `a//b`).
 *
 * @example
 * ```ts
 * import { planStagedTree, writeStagedTree } from "@cordon/cordon/catalog/stage";
 * import assert from "node:assert/strict";
 *
 * const out = await Deno.makeTempDir();
 * try {
 *   await writeStagedTree(await planStagedTree("./fixtures/packs"), out);
 *   const index = JSON.parse(await Deno.readTextFile(`${out}/index.json`));
 *   assert.equal(index.format, 1);
 * } finally {
 *   await Deno.remove(out, { recursive: true });
 * }
 * ```
 */
export async function writeStagedTree(
  plan: StagedTreePlan,
  outDir: string | URL,
): Promise<void> {
  const files = checkedFiles(plan);
  const outPath = localPath(outDir, {
    where: "stage",
    name: "outDir",
    kind: "folder",
  });
  try {
    await writeTree(plan, files, outPath);
  } catch (error) {
    if (error instanceof CordonError) throw error;
    // Deno's own error names the path, which the caller may not have
    // given as written (a file: URL, a folder below it).
    throw new CordonError(
      "PATH_UNUSABLE",
      `Cannot write the staged tree: ${
        errorName(error)
      }; check that the output folder is writable and its disk has room, then remove what was written (it has no index.json) and stage again`,
      { cause: error },
    );
  }
}

/** Writes the plan's `files` under `outPath`, which must be empty or absent and outside the packs folder. */
async function writeTree(
  plan: StagedTreePlan,
  files: ReadonlyMap<string, Uint8Array<ArrayBuffer>>,
  outPath: string,
): Promise<void> {
  if (!await isEmptyOrAbsent(outPath)) {
    throw new CordonError(
      "STAGE_OUTPUT_NOT_EMPTY",
      "Cannot stage into the output folder: it is not empty; stage into a new or empty folder",
    );
  }
  const packs = packsFolderOf.get(plan);
  // The folder as written may reach a folder it then leaves with `..`;
  // writing to the real path creates no such folder on the way.
  const root = await realPathToBe(outPath.replace(/[\\/]+$/, "") || SEP);
  if (packs !== undefined && isInside(root, packs)) {
    throw new CordonError(
      "STAGE_OUTPUT_INSIDE_PACKS",
      "Cannot stage into the output folder: it is inside the packs folder, whose next discovery would take the staged tree for a pack; stage into a folder outside the packs folder",
    );
  }
  await Deno.mkdir(root, { recursive: true });
  // Another stage into the same folder may have found it empty too. Every
  // file and folder of the tree is created exclusively, so neither writes
  // over the other's, and the first one is the same in every tree: of two
  // stages, one creates it and the other stops before writing anything.
  const [claim, modules, packIndexes, index] = writePhases(files);
  await claimFolder(root, claim!);
  const folders = foldersOf(files.keys());
  for (const folder of folders) {
    await exclusively(Deno.mkdir(`${root}/${folder}`));
  }
  // Written in the order a static host must see them: modules, then the
  // pack indexes naming them, then index.json naming those. A host serving
  // the folder while it is written, or a write that fails part-way (a
  // full disk), never shows an index.json whose files are not all there.
  // Each file and folder is synced before index.json is renamed into
  // place, so after a power loss an index.json names no file that is
  // empty or gone.
  for (const phase of [modules!, packIndexes!]) {
    await mapBounded(
      phase,
      WRITE_CONCURRENCY,
      ([path, bytes]) => createSynced(root, path, bytes),
    );
  }
  await mapBounded(
    folders,
    WRITE_CONCURRENCY,
    (folder) => syncFolder(`${root}/${folder}`),
  );
  // index.json goes to a hidden temporary file renamed into place: a host
  // reads the whole file or none, and a process ended while writing it
  // leaves only the temporary file, which `verifyStagedTree` reports as
  // extra. Only this stage writes here (it made the claim), and every file
  // the index names is one it created.
  for (const [name, bytes] of index!) {
    refuseDetached(name, bytes);
    await replaceFile(root, name, (file) => file.writeFile(bytes), {
      temporaryPrefix: `.${name}.`,
    });
  }
  // The root itself may be new: its name in its parent is kept too.
  await syncFolder(dirname(root));
}

/** Writes one new file of the tree, synced; a file already there is refused. */
function createSynced(
  root: string,
  path: string,
  bytes: Uint8Array,
): Promise<void> {
  // Transferred since the plan was checked: the file would be written
  // empty, and the write fail with a bare TypeError.
  refuseDetached(path, bytes);
  return exclusively(
    writeFileSynced(`${root}/${path}`, bytes, { createNew: true }),
  );
}

/**
 * Refuses a file whose bytes' buffer was transferred: it holds no bytes,
 * and a tree written with it empty would fail its digests.
 */
function refuseDetached(path: string, bytes: Uint8Array): void {
  if (isDetached(bytes)) {
    throw bytesDetached(
      `write the staged tree's file ${operatorText(path)}`,
    );
  }
}

/**
 * Creates the tree's first file (`_headers`, in every staged tree)
 * exclusively, and then finds nothing else in the folder: a stage that
 * finds the file there stops, having written nothing, and one that
 * created it is the only stage writing there.
 */
async function claimFolder(
  root: string,
  claim: [string, Uint8Array<ArrayBuffer>][],
): Promise<void> {
  for (const [path, bytes] of claim) {
    refuseDetached(path, bytes);
    try {
      await writeFileSynced(`${root}/${path}`, bytes, { createNew: true });
    } catch (error) {
      if (!isAlreadyThere(error)) throw error;
      throw new CordonError(
        "STAGE_OUTPUT_NOT_EMPTY",
        "Cannot stage into the output folder: another stage is writing there, or it was not empty; nothing was written; stage into a new or empty folder",
        { cause: error },
      );
    }
  }
  // What another process put there once the folder was found empty, and
  // before the claim, is no file of this tree either.
  for await (const entry of Deno.readDir(root)) {
    if (!claim.some(([path]) => path === entry.name)) throw writtenBeside();
  }
}

/** `write`, with a file or folder already at its path refused as one another process made. */
async function exclusively(write: Promise<void>): Promise<void> {
  try {
    await write;
  } catch (error) {
    if (!isAlreadyThere(error)) throw error;
    throw writtenBeside(error);
  }
}

function writtenBeside(cause?: unknown): CordonError {
  return new CordonError(
    "STAGE_OUTPUT_NOT_EMPTY",
    "Cannot stage into the output folder: another process wrote there while this stage did, and the tree has no index.json; stage into a new or empty folder that nothing else writes to",
    { cause },
  );
}

/** Whether a Deno or `node:fs` call failed because its path was taken. */
function isAlreadyThere(error: unknown): boolean {
  return error instanceof Deno.errors.AlreadyExists ||
    (error as { code?: unknown } | null)?.code === "EEXIST";
}

/**
 * The plan's files, copied as they are checked, or a refusal of a plan no
 * staging made: one that is no plan, or one with a file whose path is not a
 * plain relative path, which would be written outside the output folder
 * (`../x`) or somewhere unexpected in it. The copy is what gets written: a
 * file the caller adds to the plan while it is written is never read.
 */
function checkedFiles(
  plan: StagedTreePlan,
): Map<string, Uint8Array<ArrayBuffer>> {
  const files: unknown = typeof plan === "object" && plan !== null
    ? plan.files
    : undefined;
  const refuse = (why: string): never => {
    throw new TypeError(
      `Cannot stage into the output folder: plan must be a plan planStagedTree() returned; ${why}`,
    );
  };
  if (!(files instanceof Map)) refuse("its files are no Map");
  const checked = new Map<string, Uint8Array<ArrayBuffer>>();
  for (const [path, bytes] of files as Map<unknown, unknown>) {
    if (typeof path !== "string" || !isTreePath(path)) {
      refuse(
        `its file ${
          operatorText(String(path))
        } is no relative path inside the tree`,
      );
    }
    if (!(bytes instanceof Uint8Array)) {
      refuse(`its file ${operatorText(path as string)} holds no bytes`);
    }
    refuseDetached(path as string, bytes as Uint8Array);
    checked.set(path as string, bytes as Uint8Array<ArrayBuffer>);
  }
  return checked;
}

/** Whether `path` is `a/b.c`: relative, slash-separated, with no empty, `.` or `..` segment. */
function isTreePath(path: string): boolean {
  return path !== "" && !/[\\\0]/.test(path) &&
    path.split("/").every((segment) =>
      segment !== "" && segment !== "." && segment !== ".."
    );
}

/**
 * The tree's files in four groups, in the order they are written: the
 * headers file, modules and the other host file, pack indexes, index.json.
 */
function writePhases(
  files: ReadonlyMap<string, Uint8Array<ArrayBuffer>>,
): [string, Uint8Array<ArrayBuffer>][][] {
  const phases: [string, Uint8Array<ArrayBuffer>][][] = [[], [], [], []];
  for (const file of files) {
    const [path] = file;
    const phase = path === HEADERS_FILE
      ? 0
      : path === STAGED_INDEX_FILE
      ? 3
      : path.startsWith("packs/")
      ? 2
      : 1;
    phases[phase]!.push(file);
  }
  return phases;
}

/** The folder that holds `path`, a real path with no separator at its end. */
function dirname(path: string): string {
  const cut = path.lastIndexOf(SEP);
  return cut <= 0 ? SEP : path.slice(0, cut);
}
