/**
 * What discovery concludes about one pack folder: the pack it installs, as
 * the disk catalog keeps it between requests (its listing and where its
 * files are, none of their bytes), or the diagnostic that rejects it; with
 * the proof of the files it read. {@linkcode loadPack} reads, checks and
 * hashes a folder to reach that conclusion.
 *
 * @module
 */

import { operatorText } from "../protocol/operator_text.ts";
import type {
  ErrorCode,
  PackDiagnostic,
  PackRef,
  PackSummary,
} from "../protocol/mod.ts";
import { buildPackGraph } from "./graph.ts";
import { isNodeCompatSpecifier } from "../policy/import_specifier.ts";
import { errorName } from "../protocol/error_name.ts";
import { type PackProof, provenUnchanged } from "./_discovery_index.ts";
import { remedy } from "./_pack_status.ts";
import {
  FileReplaced,
  PackRejection,
  ProofCollector,
  readFiles,
  readManifest,
} from "./_pack_files.ts";
import { hostFs } from "./_host_fs.ts";

/**
 * An installed pack as the catalog keeps it between requests: its listing,
 * where its files are, and nothing of their bytes.
 */
export interface InstalledPack {
  ref: PackRef;
  summary: PackSummary;
  /** Exported subpath to file, as the manifest declares. */
  exports: Readonly<Record<string, string>>;
  /** Its folder in the packs folder, where its modules are read on demand. */
  rel: string;
}

/** What discovery concluded about one pack folder. */
export type FolderOutcome =
  | { ok: true; pack: InstalledPack }
  | { ok: false; name?: string; diagnostic: PackDiagnostic };

/** One pack folder: its outcome and, when it can be proved, its proof. */
export interface FolderRecord {
  outcome: FolderOutcome;
  proof: PackProof | undefined;
}

/** A folder of the packs folder that may hold a pack. */
export interface PackFolder {
  /** Relative to the packs folder, `/`-separated: `math`, `@acme/math`. */
  rel: string;
  /** Absolute path of the folder as listed (may be a symlink). */
  path: string;
}

/** Freezes a value and everything it holds. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

/** The outcome of a folder refused with `code`. */
export function rejectedFolder(
  rel: string,
  name: string | undefined,
  code: ErrorCode | string,
  message: string,
): FolderOutcome {
  return {
    ok: false,
    ...(name === undefined ? {} : { name }),
    diagnostic: { pack: rel, code, message },
  };
}

/** What to do about a pack folder discovery may not read: not a manifest fix. */
function unreadableFolderRemedy(): string {
  return `let the server read the pack folder: check its permissions, and that ${hostFs().readFlag} covers it`;
}

/**
 * How many times a pack folder is read when it is replaced during each
 * read: an upgrade's swap falls within one read, and only a writer that
 * keeps replacing it outlasts three.
 */
const READS_WHILE_REPLACED = 3;

/**
 * Reads, checks and hashes one pack folder, or gives `undefined` when no
 * folder is there any more (moved or removed since it was listed). Its
 * files are read by path, so a folder swapped in during the read (an
 * upgrade's rename) would give the old manifest with new modules, and a
 * link put in place of a file or folder of the pack after its check would
 * lead the read out of the pack: a read during which the path came to lead
 * to another folder, a file opened was not the one checked, or a file read
 * is no longer at its path through real folders, is done again.
 */
export async function loadPack(
  folder: PackFolder,
  maxBytes: number,
): Promise<FolderRecord | undefined> {
  for (let read = 1;; read++) {
    const before = folderIdentity(folder.path);
    if (before === undefined) return undefined;
    const record = await readPack(folder, maxBytes);
    if (
      record !== REPLACED && folderIdentity(folder.path) === before &&
      stillAsRead(folder, record)
    ) return record;
    if (read === READS_WHILE_REPLACED) return replacedFolder(folder, record);
  }
}

/**
 * The folder a path leads to (following links): its device, inode and
 * birth time, so a folder renamed over it reads as another one; why it
 * cannot be read, which its read reports; or `undefined` when nothing is
 * there.
 */
export function folderIdentity(path: string): string | undefined {
  const fs = hostFs();
  try {
    return fs.identitySync(path);
  } catch (error) {
    if (fs.errorKind(error) === "not-found") return undefined;
    return `unreadable: ${errorName(error)}`;
  }
}

/**
 * Whether the files a read proved are still the ones at their paths, each
 * reached through real folders: this sees a folder moved away and back
 * during the read, whose identity is then the same as before, and a link
 * put in place of a folder inside the pack after it was checked.
 */
function stillAsRead(folder: PackFolder, record: FolderRecord): boolean {
  return record.proof === undefined ||
    provenUnchanged(folder.path, record.proof, Infinity);
}

/** The record of a folder replaced during every read, proved by nothing. */
function replacedFolder(
  folder: PackFolder,
  last: FolderRecord | typeof REPLACED,
): FolderRecord {
  const name = last === REPLACED
    ? undefined
    : last.outcome.ok
    ? last.outcome.pack.summary.name
    : last.outcome.name;
  return {
    outcome: rejectedFolder(
      folder.rel,
      name,
      "PACK_FOLDER_REPLACED",
      `Cannot use pack "${
        operatorText(folder.rel)
      }": its folder, or a file or folder in it, was replaced while discovery read it, ${READS_WHILE_REPLACED} times in a row; ${
        remedy("PACK_FOLDER_REPLACED")
      }`,
    ),
    proof: undefined,
  };
}

/** A read that found a file of the pack replaced as it read it. */
const REPLACED = Symbol("replaced");

/** Reads, checks and hashes one pack folder once. */
async function readPack(
  folder: PackFolder,
  maxBytes: number,
): Promise<FolderRecord | typeof REPLACED> {
  const collector = new ProofCollector();
  let name: string | undefined;
  const reject = (
    code: ErrorCode,
    detail: string,
    next: string = remedy(code),
  ): FolderRecord => ({
    outcome: rejectedFolder(
      folder.rel,
      name,
      code,
      `Cannot use pack "${operatorText(folder.rel)}": ${detail}; ${next}`,
    ),
    proof: collector.proof(),
  });
  try {
    const packReal = hostFs().realPathSync(folder.path);
    const manifest = readManifest(packReal, collector);
    name = manifest.name;
    if (isNodeCompatSpecifier(manifest.name)) {
      // Import-policy rule 2 denies this name whatever a declaration
      // says: listed, the pack would look installed and never load.
      return reject(
        "PACK_MANIFEST_INVALID",
        "its name is a Node built-in's, which the import policy denies in every sandbox",
        "install the package under another name",
      );
    }
    if (manifest.name.toLowerCase() !== folder.rel.toLowerCase()) {
      return reject(
        "PACK_MANIFEST_INVALID",
        `package.json names the pack "${manifest.name}" but its folder is "${
          operatorText(folder.rel)
        }"`,
        "install the pack in a folder named after it",
      );
    }
    const files = [
      ...new Set([
        ...Object.values(manifest.cordon.exports),
        ...manifest.cordon.internal,
      ]),
    ];
    const sources = await readFiles(packReal, files, maxBytes, collector);
    const graph = await buildPackGraph(manifest, sources);
    if (!graph.ok) {
      return {
        outcome: rejectedFolder(
          folder.rel,
          name,
          graph.code,
          // Same name, but say it as the folder spells it, like the others.
          graph.message.replace(
            `"${manifest.name}"`,
            () => `"${operatorText(folder.rel)}"`,
          ),
        ),
        proof: collector.proof(),
      };
    }
    const pack = installedPack(
      graph.graph.summary,
      manifest.cordon.exports,
      folder.rel,
    );
    return { outcome: { ok: true, pack }, proof: collector.proof() };
  } catch (error) {
    if (error instanceof FileReplaced) return REPLACED;
    if (error instanceof PackRejection) {
      return reject(error.code, error.detail, error.next);
    }
    collector.provable = false;
    return reject(
      "PACK_MANIFEST_INVALID",
      `the pack folder cannot be read (${errorName(error)})`,
      unreadableFolderRemedy(),
    );
  }
}

/** A pack as the catalog keeps it, frozen. */
export function installedPack(
  summary: PackSummary,
  exports: Readonly<Record<string, string>>,
  rel: string,
): InstalledPack {
  return deepFreeze({
    ref: { name: summary.name, version: summary.version },
    summary,
    exports: { ...exports },
    rel,
  });
}
