/**
 * Discovers a packs folder: lists its pack folders (scoped ones too,
 * skipping folders that start with `.` or `_`), reuses the record of each
 * folder whose files are provably unchanged since a known discovery, loads
 * the others a few at a time, and settles the outcomes, duplicate names
 * among them, into one {@linkcode CatalogState} that the disk catalog swaps
 * in at once.
 *
 * @module
 */

import { operatorText } from "../protocol/operator_text.ts";
import {
  CordonError,
  type PackDiagnostic,
  type PackSummary,
} from "../protocol/mod.ts";
import { mapBounded } from "./_bounded.ts";
import { provenUnchanged, RACY_MS } from "./_discovery_index.ts";
import { remedy } from "./_pack_status.ts";
import { errorName } from "../protocol/error_name.ts";
import { join } from "./_host_path.ts";
import { nextTurn } from "./_pack_files.ts";
import { type HostDirEntry, hostFs } from "./_host_fs.ts";
import {
  deepFreeze,
  folderIdentity,
  type FolderRecord,
  type InstalledPack,
  loadPack,
  type PackFolder,
} from "./_pack_folder.ts";

/**
 * Packs in discovery at once. Their reads are synchronous: on a warm page
 * cache they are several times cheaper than asynchronous ones, which also
 * spread over a thread pool, and measured slower here (10,000 packs: 8.4 s
 * read synchronously, 11.9 s with 32 packs' reads in flight). Each pack
 * yields to the event loop between files now and then so a server stays
 * live.
 */
const PACK_CONCURRENCY = 16;

/** Packs proved from the index between two turns of the event loop. */
const PROOFS_PER_TURN = 64;

/** Proofs and outcomes a discovery may reuse, and when they were taken. */
export interface KnownFolders {
  scannedAt: number;
  folders: ReadonlyMap<string, FolderRecord>;
}

/** What one discovery found, and the records that prove it. */
export interface CatalogState extends KnownFolders {
  /** The packs folder's real path when it was discovered. */
  root: string;
  packs: ReadonlyMap<string, InstalledPack>;
  /** The pack of each installed module, by module id. */
  owners: ReadonlyMap<string, InstalledPack>;
  summaries: readonly PackSummary[];
  diagnostics: readonly PackDiagnostic[];
  installed: readonly string[];
  /** Rejected packs by the name they declare (or their folder), for hints. */
  rejected: ReadonlyMap<string, PackDiagnostic>;
  /** How many pack folders this discovery read (the others were proved). */
  read: number;
}

function skipped(name: string): boolean {
  // Hidden folders and `_name` folders (generated or private) are not packs;
  // npm names cannot start with `.` or `_` either.
  return name.startsWith(".") || name.startsWith("_");
}

/**
 * Whether an entry is a folder, following a link; a link that leads
 * nowhere (its target moved, or it loops) is the error that says so: an
 * operator linked a pack there.
 */
function isDirectory(entry: HostDirEntry, path: string): boolean | Error {
  if (entry.isDirectory) return true;
  if (!entry.isSymlink) return false;
  try {
    return hostFs().statSync(path).isDirectory;
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}

function brokenLink(rel: string, error: Error): PackDiagnostic {
  return {
    pack: rel,
    code: "PACK_MANIFEST_INVALID",
    message: `Cannot use pack "${
      operatorText(rel)
    }": its folder is a link that leads to no folder (${
      errorName(error)
    }); link it to the pack's folder, or remove the link`,
  };
}

/**
 * Whether a folder's name, as the host read it, is not the name on disk:
 * Deno and Node read a name that is not UTF-8 with U+FFFD in place of
 * its bad bytes, so the path made of it leads nowhere (or, when a folder
 * is named with U+FFFD itself, to that other folder). No pack or scope
 * name holds U+FFFD, so such a folder is refused by its name alone.
 */
function notUtf8(name: string): boolean {
  return name.includes("\uFFFD");
}

/**
 * Whether an entry of that name may be a folder: a folder, or a link,
 * which a name read as U+FFFD cannot be followed to tell. A file is passed
 * over whatever its name, as every file beside the packs is.
 */
function isNotUtf8Folder(entry: HostDirEntry): boolean {
  return notUtf8(entry.name) && (entry.isDirectory || entry.isSymlink);
}

const NOT_UTF8 =
  "holds bytes that are not UTF-8 (read as U+FFFD), which no pack name does";

function notUtf8Folder(rel: string): PackDiagnostic {
  return {
    pack: rel,
    code: "PACK_MANIFEST_INVALID",
    message: `Cannot use pack "${
      operatorText(rel)
    }": its folder's name ${NOT_UTF8}; install the pack in a folder named after it`,
  };
}

function notUtf8Scope(rel: string): PackDiagnostic {
  return {
    pack: rel,
    code: "PACK_MANIFEST_INVALID",
    message: `Cannot use scope folder "${
      operatorText(rel)
    }": its name ${NOT_UTF8}; rename the folder after the scope of the packs it holds`,
  };
}

/** Sorts `folder` into `folders`, or its broken link into `problems`. */
function addFolder(
  entry: HostDirEntry,
  folder: PackFolder,
  folders: PackFolder[],
  problems: PackDiagnostic[],
): void {
  if (isNotUtf8Folder(entry)) {
    problems.push(notUtf8Folder(folder.rel));
    return;
  }
  const kind = isDirectory(entry, folder.path);
  if (kind instanceof Error) problems.push(brokenLink(folder.rel, kind));
  else if (kind) folders.push(folder);
}

/**
 * What to do about a scope folder discovery cannot list: no manifest is
 * at fault, so the remedy is the folder's own (a permission, or a folder
 * put back where a file or a broken link now is).
 */
function scopeFolderRemedy(error: unknown): string {
  const fs = hostFs();
  const kind = fs.errorKind(error);
  return kind === "denied" || kind === "not-capable"
    ? `let the server read the scope folder: check its permissions, and that ${fs.readFlag} covers it`
    : "make it a folder that holds pack folders, or remove it";
}

function listPackFolders(
  root: string,
): { folders: PackFolder[]; problems: PackDiagnostic[] } {
  const folders: PackFolder[] = [];
  const problems: PackDiagnostic[] = [];
  const scopes: PackFolder[] = [];
  const fs = hostFs();
  for (const entry of fs.readDirSync(root)) {
    if (skipped(entry.name)) continue;
    const folder = { rel: entry.name, path: join(root, entry.name) };
    if (entry.name.startsWith("@") && isNotUtf8Folder(entry)) {
      problems.push(notUtf8Scope(folder.rel));
      continue;
    }
    addFolder(
      entry,
      folder,
      entry.name.startsWith("@") ? scopes : folders,
      problems,
    );
  }
  for (const scope of scopes) {
    try {
      for (const entry of fs.readDirSync(scope.path)) {
        if (skipped(entry.name)) continue;
        const folder = {
          rel: `${scope.rel}/${entry.name}`,
          path: join(scope.path, entry.name),
        };
        addFolder(entry, folder, folders, problems);
      }
    } catch (error) {
      problems.push({
        pack: scope.rel,
        code: "PACK_MANIFEST_INVALID",
        message: `Cannot use scope folder "${
          operatorText(scope.rel)
        }": it cannot be read (${errorName(error)}); ${
          scopeFolderRemedy(error)
        }`,
      });
    }
  }
  folders.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
  return { folders, problems };
}

/** Folders a discovery may reuse when their files are provably unchanged. */
export interface Known {
  /** Proof times at or after this are racy. */
  trustBefore: number;
  folders: ReadonlyMap<string, FolderRecord>;
}

/** The records of a discovery, for the next one to reuse. */
export function knownFromState(state: KnownFolders): Known {
  return { trustBefore: state.scannedAt - RACY_MS, folders: state.folders };
}

/** A folder's record, when its files are provably the ones it was made of. */
function prove(known: Known, folder: PackFolder): FolderRecord | undefined {
  const record = known.folders.get(folder.rel);
  if (record?.proof === undefined) return undefined;
  return provenUnchanged(folder.path, record.proof, known.trustBefore)
    ? record
    : undefined;
}

/**
 * What to do about a packs folder that cannot be read: a folder the
 * runtime's permissions keep from this process exists and is readable, so
 * saying to check that would send its user the wrong way.
 */
function packsFolderRemedy(error: unknown): string {
  const fs = hostFs();
  return fs.errorKind(error) === "not-capable"
    ? `run with ${fs.readFlag} covering it`
    : "check that it exists, is a folder and is readable";
}

/**
 * How many times the packs folder is discovered when the path comes to lead
 * to another folder during each discovery: a swap of the whole folder falls
 * within one, and only a writer that keeps swapping outlasts three.
 */
const DISCOVERIES_WHILE_SWAPPED = 3;

/**
 * Discovers the packs folder, reusing the records of unchanged folders.
 * Pack folders are read in the folder the path led to when it began, so a
 * discovery during which the path came to lead to another one (a release
 * swapped in by a link, the old one then removed) is done again: it may
 * have lost packs of a folder that was being removed.
 */
export async function discover(
  packsDir: string,
  maxBytes: number,
  known: Known | undefined,
  signal: AbortSignal | undefined,
): Promise<CatalogState> {
  for (let pass = 1;; pass++) {
    const before = packsIdentity(packsDir);
    const state = await discoverOnce(packsDir, maxBytes, known, signal);
    if (pass === DISCOVERIES_WHILE_SWAPPED) return state;
    if (packsIdentity(packsDir) === before) return state;
  }
}

/**
 * The folder the packs path leads to: its real path and the folder's
 * identity there; or `undefined` when the path cannot be resolved.
 */
function packsIdentity(packsDir: string): string | undefined {
  let real: string;
  try {
    real = hostFs().realPathSync(packsDir);
  } catch {
    return undefined;
  }
  return `${real}\n${folderIdentity(real)}`;
}

/** Discovers the packs folder once. */
async function discoverOnce(
  packsDir: string,
  maxBytes: number,
  known: Known | undefined,
  signal: AbortSignal | undefined,
): Promise<CatalogState> {
  signal?.throwIfAborted();
  // Before any proof is taken: a file changed since may not show it.
  const scannedAt = Date.now();
  let listing: ReturnType<typeof listPackFolders>;
  let root: string;
  try {
    root = hostFs().realPathSync(packsDir);
    listing = listPackFolders(root);
  } catch (error) {
    throw new CordonError(
      "PATH_UNUSABLE",
      `Cannot read the packs folder: ${errorName(error)}; ${
        packsFolderRemedy(error)
      }`,
      { cause: error },
    );
  }
  const records = new Map<string, FolderRecord>();
  const unproved: PackFolder[] = [];
  for (const [index, folder] of listing.folders.entries()) {
    // Proofs are synchronous stats; let a serving process answer between.
    if (index > 0 && index % PROOFS_PER_TURN === 0) {
      await nextTurn();
      signal?.throwIfAborted();
    }
    const record = known && prove(known, folder);
    if (record === undefined) unproved.push(folder);
    else records.set(folder.rel, record);
  }
  const loaded = await mapBounded(
    unproved,
    PACK_CONCURRENCY,
    (folder) => loadPack(folder, maxBytes),
    signal,
  );
  unproved.forEach((folder, index) => {
    // Gone since it was listed: as if it had not been listed.
    const record = loaded[index];
    if (record !== undefined) records.set(folder.rel, record);
  });
  const outcomes = listing.folders.flatMap((folder) => {
    const record = records.get(folder.rel);
    return record === undefined ? [] : [{ folder, outcome: record.outcome }];
  });

  const byName = new Map<string, PackFolder[]>();
  for (const { folder, outcome } of outcomes) {
    const name = outcome.ok ? outcome.pack.summary.name : outcome.name;
    if (name === undefined) continue;
    byName.set(name, [...(byName.get(name) ?? []), folder]);
  }
  const diagnostics: PackDiagnostic[] = [...listing.problems];
  const rejected = new Map<string, PackDiagnostic>();
  const packs = new Map<string, InstalledPack>();
  for (const { folder, outcome } of outcomes) {
    if (!outcome.ok) {
      diagnostics.push(outcome.diagnostic);
      rejected.set(outcome.name ?? folder.rel, outcome.diagnostic);
      continue;
    }
    const name = outcome.pack.summary.name;
    const claims = byName.get(name)!;
    if (claims.length > 1) {
      const folders = claims.map((claim) => `"${operatorText(claim.rel)}"`)
        .join(", ");
      const diagnostic: PackDiagnostic = {
        pack: folder.rel,
        code: "PACK_DUPLICATE",
        message: `Cannot use pack "${
          operatorText(folder.rel)
        }": folders ${folders} all declare "${name}"; ${
          remedy("PACK_DUPLICATE")
        }`,
      };
      diagnostics.push(diagnostic);
      rejected.set(name, diagnostic);
      continue;
    }
    packs.set(name, outcome.pack);
  }

  const owners = new Map<string, InstalledPack>();
  for (const pack of packs.values()) {
    for (const module of pack.summary.modules) owners.set(module.id, pack);
  }
  const installed = [...packs.keys()].sort();
  const summaries = installed.map((name) => packs.get(name)!.summary);
  diagnostics.sort((a, b) => (a.pack < b.pack ? -1 : a.pack > b.pack ? 1 : 0));
  return {
    root,
    scannedAt,
    folders: records,
    packs,
    owners,
    summaries: deepFreeze(summaries),
    diagnostics: deepFreeze(diagnostics),
    installed: deepFreeze(installed),
    rejected,
    read: unproved.length,
  };
}
