/**
 * The on-disk catalog: discovers the packs installed in a packs folder,
 * validates them, builds their module graphs and answers
 * {@linkcode SandboxModuleCatalog} questions. It keeps each pack's listing
 * in memory and reads a module's bytes when a run or a delivery needs them,
 * checked against the digest it lists (a bounded number stay cached). With
 * `indexPath` it keeps a discovery index, so a restart over an unchanged
 * packs folder reads and hashes nothing again. Needs Deno and `--allow-read`
 * on the packs folder (and read and write on the index).
 *
 * ```ts ignore
 * import { createDiskCatalog } from "@cordon/cordon/catalog/disk";
 *
 * const catalog = await createDiskCatalog("./packs");
 * console.log(catalog.summaries().map((pack) => pack.name));
 * console.log(catalog.diagnostics());
 * ```
 *
 * @module
 */

import { operatorText } from "../protocol/operator_text.ts";
import {
  type AuthorizedDelivery,
  CordonError,
  type Declaration,
  type DeliveryRefusal,
  type DiscoveryIndexPack,
  type DiscoveryOutcome,
  type ErrorCode,
  isModuleId,
  type ModuleSummary,
  type PackDiagnostic,
  type PackManifest,
  PackManifestSchema,
  type PackRef,
  type PackSummary,
  type Requester,
} from "../protocol/mod.ts";
import {
  type OptionKeys,
  readIntegerOption,
  readOptions,
} from "../protocol/options.ts";
import { RecentMap } from "../protocol/recent.ts";
import type {
  EntitlementPolicy,
  ExecutionResolution,
  PackStatus,
  ResolvedModule,
  ResolvedPack,
  SandboxModuleCatalog,
} from "./types.ts";
import { buildPackGraph } from "./graph.ts";
import { isNodeCompatSpecifier } from "../policy/import_specifier.ts";
import {
  answerFromMemory,
  attachBytes,
  listFromMemory,
} from "./in_memory_delivery.ts";
import { mapBounded } from "./_bounded.ts";
import { sha256DigestNow } from "./_sha256.ts";
import { parseUntrusted } from "./_schema_parse.ts";
import {
  DISCOVERY_RULES,
  filesOfProof,
  type IndexWarning,
  lstatUnlinked,
  type PackProof,
  packProof,
  proofOfLine,
  provenUnchanged,
  RACY_MS,
  readIndexFile,
  statsOf,
  writeIndexFile,
} from "./_discovery_index.ts";
import {
  declaredPackages,
  executionResolution,
  type PackRequest,
  packStatus,
  remedy,
} from "./_pack_status.ts";

export type { EntitlementPolicy } from "./types.ts";

/** A warning about the discovery index; see `onIndexWarning`. */
export interface IndexWarningInfo {
  /** `DISCOVERY_INDEX_IGNORED` or `DISCOVERY_INDEX_UNWRITABLE`. */
  code: ErrorCode;
  /** What happened and what to do; it holds no path. */
  message: string;
}

/** Options of {@linkcode createDiskCatalog}. */
export interface DiskCatalogOptions {
  /**
   * Decides whether a requester may have a pack's modules. Returning
   * anything but `true` refuses with `DELIVERY_FORBIDDEN`; throwing refuses
   * with `DELIVERY_UNAVAILABLE`.
   *
   * @default {() => true}
   */
  entitlement?: EntitlementPolicy;
  /**
   * The largest module file accepted, in bytes. A larger file rejects its
   * pack with `PACK_FILE_TOO_LARGE`. (`package.json` has its own 1 MiB cap.)
   *
   * @default {1048576}
   */
  maxModuleBytes?: number;
  /**
   * A file where discovery keeps its index between starts: for every pack
   * folder, what proves its files unchanged (size, times, device and inode
   * of each) and what discovery derived from them. A start reuses a pack's
   * entry only when every file it read is provably unchanged and not
   * modified within two seconds of the scan that indexed it; any other
   * pack is read and hashed again. The file is written after discovery
   * when anything changed, to a temporary file beside it that is renamed
   * over it. An index that cannot be used (damaged, another format or
   * version, another `maxModuleBytes`) is ignored and rewritten; one that
   * cannot be written is left alone; both with a warning. The bytes
   * delivered never come from the index: they are read from the pack and
   * checked against their digest. The catalog never writes into the packs
   * folder unless this path points there.
   *
   * @default {undefined} (no index file; rescans still reuse what the
   * catalog proved in memory)
   */
  indexPath?: string;
  /**
   * Called with each warning about the discovery index.
   *
   * @default {undefined} (`console.warn` of the message)
   */
  onIndexWarning?: (warning: IndexWarningInfo) => void;
  /** Aborts the first discovery; `createDiskCatalog` then rejects. */
  signal?: AbortSignal;
}

/** Options of {@linkcode DiskCatalog.rescan}. */
export interface RescanOptions {
  /** Aborts this rescan; the catalog keeps its current state. */
  signal?: AbortSignal;
}

/**
 * A catalog over a packs folder: the {@linkcode SandboxModuleCatalog}
 * answers, plus what discovery rejected and a way to discover again.
 */
export interface DiskCatalog extends SandboxModuleCatalog {
  /**
   * Lists the packs discovery rejected and why, one entry per problem,
   * sorted by folder. `pack` is the folder relative to the packs folder.
   */
  diagnostics(): PackDiagnostic[];
  /**
   * Discovers the packs folder again and swaps the new state in at once. A
   * rescan that fails (or aborts) keeps the old state and rejects. Rescans
   * run one after another. Packs whose files are provably unchanged are
   * not read again.
   */
  rescan(options?: RescanOptions): Promise<void>;
}

/** The default largest module file: 1 MiB. */
export const DEFAULT_MAX_MODULE_BYTES = 1024 * 1024;

const MAX_MANIFEST_BYTES = 1024 * 1024;
/**
 * Packs in discovery at once. Their reads are synchronous: on a warm page
 * cache they are several times cheaper than asynchronous ones, which also
 * spread over a thread pool, and measured slower here (10,000 packs: 8.4 s
 * read synchronously, 11.9 s with 32 packs' reads in flight). Each pack
 * yields to the event loop between files now and then so a server stays
 * live.
 */
const PACK_CONCURRENCY = 16;
const FILES_PER_TURN = 32;
/** Packs proved from the index between two turns of the event loop. */
const PROOFS_PER_TURN = 64;
/** Module bodies kept for delivery, by count and in bytes. */
const CACHED_BODIES = 4096;
const CACHED_BODY_BYTES = 16 * 1024 * 1024;
/** Packs kept resolved with their sources for runs, by count and bytes. */
const RESIDENT_PACKS = 256;
const RESIDENT_PACK_BYTES = 16 * 1024 * 1024;
const SEP = Deno.build.os === "windows" ? "\\" : "/";

const allowEveryone: EntitlementPolicy = () => true;
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const BOM = "\uFEFF";

/**
 * An installed pack as the catalog keeps it between requests: its listing,
 * where its files are, and nothing of their bytes.
 */
interface InstalledPack {
  ref: PackRef;
  summary: PackSummary;
  /** Exported subpath to file, as the manifest declares. */
  exports: Readonly<Record<string, string>>;
  /** Its folder in the packs folder, where its modules are read on demand. */
  rel: string;
}

/** What discovery concluded about one pack folder. */
type FolderOutcome =
  | { ok: true; pack: InstalledPack }
  | { ok: false; name?: string; diagnostic: PackDiagnostic };

/** One pack folder: its outcome and, when it can be proved, its proof. */
interface FolderRecord {
  outcome: FolderOutcome;
  proof: PackProof | undefined;
}

/** Proofs and outcomes a discovery may reuse, and when they were taken. */
interface KnownFolders {
  scannedAt: number;
  folders: ReadonlyMap<string, FolderRecord>;
}

interface CatalogState extends KnownFolders {
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

interface PackFolder {
  /** Relative to the packs folder, `/`-separated: `math`, `@acme/math`. */
  rel: string;
  /** Absolute path of the folder as listed (may be a symlink). */
  path: string;
}

/** The files a pack's discovery read so far, for its proof. */
class ProofCollector {
  paths: string[] = [];
  stats: number[] = [];
  /** False once a file was reached through a link or could not be read. */
  provable = true;
  /** Folders inside the pack found to be real folders, not links. */
  realFolders = new Set<string>();

  add(path: string, stats: number[] | undefined): void {
    if (stats === undefined) {
      this.provable = false;
      return;
    }
    this.paths.push(path);
    this.stats.push(...stats);
  }

  proof(): PackProof | undefined {
    return this.provable ? packProof(this.paths, this.stats) : undefined;
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : "Error";
}

function join(dir: string, relative: string): string {
  const inside = relative.startsWith("./") ? relative.slice(2) : relative;
  return `${dir}${SEP}${SEP === "/" ? inside : inside.replaceAll("/", SEP)}`;
}

class PackRejection extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly next: string = remedy(code),
  ) {
    super(detail);
  }
}

/**
 * Reads one file of a pack, checked on its real path, with what proves it
 * unchanged later when it was reached through no link.
 */
function readInside(
  packReal: string,
  file: string,
  maxBytes: number,
  collector: ProofCollector,
): Uint8Array<ArrayBuffer> {
  const expected = join(packReal, file);
  // Through real folders of a real pack folder, the path as written is the
  // real path: one lstat a file (and one a folder) proves it, where
  // `realPath` reads every link of the whole path (seven a file here).
  const unlinked = lstatUnlinked(packReal, file, collector.realFolders);
  const real = unlinked === undefined
    ? realInside(packReal, expected, file, collector)
    : expected;
  let bytes: Uint8Array<ArrayBuffer>;
  let info: Deno.FileInfo;
  try {
    // The proof is taken before the read: a change after it shows as
    // another time or size, or is within the racy window.
    info = unlinked ?? Deno.statSync(real);
    if (!info.isFile) {
      throw new PackRejection(
        "PACK_FILE_MISSING",
        `${operatorText(file)} is not a regular file`,
      );
    }
    if (info.size > maxBytes) {
      throw new PackRejection(
        "PACK_FILE_TOO_LARGE",
        `${
          operatorText(file)
        } is ${info.size} bytes, over the ${maxBytes}-byte cap`,
      );
    }
    bytes = Deno.readFileSync(real);
  } catch (error) {
    collector.provable = false;
    if (error instanceof PackRejection) throw error;
    throw unreadable(file, error);
  }
  if (bytes.byteLength > maxBytes) {
    collector.provable = false;
    throw new PackRejection(
      "PACK_FILE_TOO_LARGE",
      `${
        operatorText(file)
      } grew over the ${maxBytes}-byte cap while it was read`,
    );
  }
  collector.add(
    file,
    unlinked !== undefined && bytes.byteLength === info.size
      ? statsOf(info)
      : undefined,
  );
  return bytes;
}

/** What to do about a pack file the server may not read: not a manifest fix. */
const UNREADABLE_FILE_REMEDY =
  "let the server read the file: check its permissions, and that --allow-read covers it";

/**
 * A file that is there but cannot be read. Refused permission is the
 * server's to fix, so it is told so; for anything else (a link loop, a
 * folder), adding the file or leaving it out of the manifest is the fix.
 */
function unreadable(file: string, error: unknown): PackRejection {
  const refused = error instanceof Deno.errors.PermissionDenied ||
    error instanceof Deno.errors.NotCapable;
  return new PackRejection(
    "PACK_FILE_MISSING",
    `${operatorText(file)} cannot be read (${errorName(error)})`,
    refused ? UNREADABLE_FILE_REMEDY : undefined,
  );
}

/**
 * The real path of a pack's file reached through a link, which must stay
 * inside the pack folder. Such a file is read but never proved unchanged.
 */
function realInside(
  packReal: string,
  expected: string,
  file: string,
  collector: ProofCollector,
): string {
  collector.provable = false;
  let real: string;
  try {
    real = Deno.realPathSync(expected);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw unreadable(file, error);
    throw new PackRejection(
      "PACK_FILE_MISSING",
      `${operatorText(file)} does not exist`,
    );
  }
  if (!real.startsWith(packReal + SEP)) {
    throw new PackRejection(
      "PACK_FILE_OUTSIDE",
      `${operatorText(file)} resolves outside the pack folder`,
    );
  }
  return real;
}

/**
 * Lets the event loop run. Not `setTimeout(0)`: nested timers are clamped
 * to 4 ms, which the 150 yields of a 10,000-pack restart paid as 600 ms.
 */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function decode(file: string, bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new PackRejection(
      "PACK_MODULE_SYNTAX",
      `${operatorText(file)} is not valid UTF-8`,
      "save the file as UTF-8",
    );
  }
}

function describeIssues(
  issues: readonly { path: readonly PropertyKey[]; message: string }[],
): string {
  const shown = issues.slice(0, 3).map((issue) => {
    const where = operatorText(issue.path.map(String).join("."));
    const message = operatorText(issue.message);
    return where === "" ? message : `${where}: ${message}`;
  });
  const more = issues.length > 3 ? ` (and ${issues.length - 3} more)` : "";
  return shown.join("; ") + more;
}

/** Whether a parsed manifest's `cordon.exports` has a `__proto__` key. */
function exportsProto(json: unknown): boolean {
  const exports = (json as { cordon?: { exports?: unknown } } | null)?.cordon
    ?.exports;
  return typeof exports === "object" && exports !== null &&
    Object.hasOwn(exports, "__proto__");
}

function readManifest(
  packReal: string,
  collector: ProofCollector,
): PackManifest {
  let text: string;
  try {
    text = decode(
      "package.json",
      readInside(packReal, "package.json", MAX_MANIFEST_BYTES, collector),
    );
  } catch (error) {
    if (error instanceof PackRejection && error.code !== "PACK_FILE_OUTSIDE") {
      throw new PackRejection(
        "PACK_MANIFEST_INVALID",
        error.detail.replace("does not exist", "is missing"),
        error.next === UNREADABLE_FILE_REMEDY
          ? error.next
          : "add a package.json whose cordon section declares the pack's modules",
      );
    }
    throw error;
  }
  let json: unknown;
  try {
    // Node and npm read a package.json saved with a byte order mark, as
    // some editors save it; so does discovery.
    json = JSON.parse(text.startsWith(BOM) ? text.slice(1) : text);
  } catch {
    throw new PackRejection(
      "PACK_MANIFEST_INVALID",
      "package.json is not valid JSON",
      "fix the JSON syntax of package.json",
    );
  }
  if (exportsProto(json)) {
    // zod leaves such a key out instead of refusing it, so the pack would
    // lose an export without a word.
    throw new PackRejection(
      "PACK_MANIFEST_INVALID",
      'package.json exports a subpath "__proto__"',
      "export subpaths of the form . or ./name",
    );
  }
  const parsed = parseUntrusted(PackManifestSchema, json);
  if (!parsed.success) {
    throw new PackRejection(
      "PACK_MANIFEST_INVALID",
      `package.json does not match the pack manifest schema: ${
        describeIssues(parsed.error.issues)
      }`,
    );
  }
  return parsed.data;
}

/** Reads a pack's declared files in order; the first failure wins. */
async function readFiles(
  packReal: string,
  files: readonly string[],
  maxBytes: number,
  collector: ProofCollector,
): Promise<Map<string, string>> {
  const sources = new Map<string, string>();
  for (const [index, file] of files.entries()) {
    if (index > 0 && index % FILES_PER_TURN === 0) await nextTurn();
    sources.set(
      file,
      decode(file, readInside(packReal, file, maxBytes, collector)),
    );
  }
  return sources;
}

function rejectedFolder(
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
const UNREADABLE_FOLDER_REMEDY =
  "let the server read the pack folder: check its permissions, and that --allow-read covers it";

/** Reads, checks and hashes one pack folder. */
async function loadPack(
  folder: PackFolder,
  maxBytes: number,
): Promise<FolderRecord> {
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
    const packReal = Deno.realPathSync(folder.path);
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
    if (error instanceof PackRejection) {
      return reject(error.code, error.detail, error.next);
    }
    collector.provable = false;
    return reject(
      "PACK_MANIFEST_INVALID",
      `the pack folder cannot be read (${errorName(error)})`,
      UNREADABLE_FOLDER_REMEDY,
    );
  }
}

function installedPack(
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

/** No subpath exports the module: one shared, frozen list. */
const NOT_EXPORTED: string[] = Object.freeze([]) as unknown as string[];

/**
 * Keeps one copy of each pack file path: packs tend to repeat the same
 * paths, and an index holds every one.
 */
class Strings {
  #seen = new Map<string, string>();
  one(text: string): string {
    const seen = this.#seen.get(text);
    if (seen !== undefined) return seen;
    this.#seen.set(text, text);
    return text;
  }
}

/**
 * A folder's record from its index line, when the line agrees with itself
 * and its folder: every module is a file it proves, every dependency and
 * export names a module, and the pack's name is its folder's.
 */
function recordOfLine(
  line: DiscoveryIndexPack,
  proof: PackProof,
  strings: Strings,
): FolderRecord | undefined {
  if (proof.paths[0] !== "package.json") return undefined;
  const { outcome, folder: rel } = line;
  if (!outcome.ok) {
    return {
      outcome: rejectedFolder(
        rel,
        outcome.name,
        outcome.diagnostic.code,
        outcome.diagnostic.message,
      ),
      proof,
    };
  }
  if (outcome.name.toLowerCase() !== rel.toLowerCase()) return;
  const proved = new Set(proof.paths);
  const entries = outcome.modules;
  const exportedAs = new Map<string, string[]>();
  for (const [subpath, file] of Object.entries(outcome.exports)) {
    exportedAs.set(file, [...(exportedAs.get(file) ?? []), subpath].sort());
  }
  for (const [path, , , , dependencies] of entries) {
    if (!proved.has(path)) return undefined;
    if (!dependencies.every((at) => at < entries.length)) return undefined;
  }
  // Arrays made by map have their exact length; ones grown by push keep
  // spare room, which a hundred thousand modules would pay for.
  const modules = entries.map((
    [path, id, digest, graphDigest, dependencies],
  ): ModuleSummary => ({
    id,
    path: strings.one(path),
    exportedAs: exportedAs.get(path) ?? NOT_EXPORTED,
    digest,
    graphDigest,
    dependencyIds: dependencies.map((at) => entries[at]![1]),
  }));
  const paths = new Set(modules.map((module) => module.path));
  for (const file of exportedAs.keys()) {
    if (!paths.has(file)) return undefined;
  }
  const summary: PackSummary = {
    name: outcome.name,
    version: outcome.version,
    graphDigest: outcome.graphDigest,
    modules,
  };
  return {
    outcome: {
      ok: true,
      pack: installedPack(summary, outcome.exports, rel),
    },
    proof: {
      paths: proof.paths.map((path) => strings.one(path)),
      stats: proof.stats,
    },
  };
}

/** Turns index lines into folder records, sharing repeated paths. */
function recordReader(): (
  line: DiscoveryIndexPack,
) => FolderRecord | undefined {
  const strings = new Strings();
  return (line) => recordOfLine(line, proofOfLine(line), strings);
}

/** A folder's index line. */
function lineOfRecord(
  folder: string,
  record: FolderRecord & { proof: PackProof },
): DiscoveryIndexPack {
  const { outcome } = record;
  let written: DiscoveryOutcome;
  if (outcome.ok) {
    const { summary, exports } = outcome.pack;
    const position = new Map(summary.modules.map((m, i) => [m.id, i]));
    written = {
      ok: true,
      name: summary.name,
      version: summary.version,
      graphDigest: summary.graphDigest,
      exports: { ...exports },
      modules: summary.modules.map((m) => [
        m.path,
        m.id,
        m.digest,
        m.graphDigest,
        m.dependencyIds.map((id) => position.get(id)!),
      ]),
    };
  } else {
    written = {
      ok: false,
      ...(outcome.name === undefined ? {} : { name: outcome.name }),
      diagnostic: { ...outcome.diagnostic },
    };
  }
  return { folder, files: filesOfProof(record.proof), outcome: written };
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
function isDirectory(entry: Deno.DirEntry, path: string): boolean | Error {
  if (entry.isDirectory) return true;
  if (!entry.isSymlink) return false;
  try {
    return Deno.statSync(path).isDirectory;
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

/** Sorts `folder` into `folders`, or its broken link into `problems`. */
function addFolder(
  entry: Deno.DirEntry,
  folder: PackFolder,
  folders: PackFolder[],
  problems: PackDiagnostic[],
): void {
  const kind = isDirectory(entry, folder.path);
  if (kind instanceof Error) problems.push(brokenLink(folder.rel, kind));
  else if (kind) folders.push(folder);
}

function listPackFolders(
  root: string,
): { folders: PackFolder[]; problems: PackDiagnostic[] } {
  const folders: PackFolder[] = [];
  const problems: PackDiagnostic[] = [];
  const scopes: PackFolder[] = [];
  for (const entry of Deno.readDirSync(root)) {
    if (skipped(entry.name)) continue;
    const folder = { rel: entry.name, path: join(root, entry.name) };
    addFolder(
      entry,
      folder,
      entry.name.startsWith("@") ? scopes : folders,
      problems,
    );
  }
  for (const scope of scopes) {
    try {
      for (const entry of Deno.readDirSync(scope.path)) {
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
          remedy("PACK_MANIFEST_INVALID")
        }`,
      });
    }
  }
  folders.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
  return { folders, problems };
}

/** Folders a discovery may reuse when their files are provably unchanged. */
interface Known {
  /** Proof times at or after this are racy. */
  trustBefore: number;
  folders: ReadonlyMap<string, FolderRecord>;
}

function knownFromState(state: KnownFolders): Known {
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

async function discover(
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
    root = Deno.realPathSync(packsDir);
    listing = listPackFolders(root);
  } catch (error) {
    throw new CordonError(
      "PATH_UNUSABLE",
      `Cannot read the packs folder: ${
        errorName(error)
      }; check that it exists, is a folder and is readable`,
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
  unproved.forEach((folder, index) => records.set(folder.rel, loaded[index]!));
  const outcomes = listing.folders.map((folder) => ({
    folder,
    outcome: records.get(folder.rel)!.outcome,
  }));

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

/** Reads a module's file now, or `undefined` when it is not the listed one. */
function readListedBytes(
  root: string,
  pack: InstalledPack,
  module: ModuleSummary,
  maxBytes: number,
): Uint8Array<ArrayBuffer> | undefined {
  try {
    const path = join(join(root, pack.rel), module.path);
    const info = Deno.statSync(path);
    if (!info.isFile || info.size > maxBytes) return undefined;
    const bytes = Deno.readFileSync(path);
    if (bytes.byteLength > maxBytes) return undefined;
    // The digest, not the path, decides: only the listed bytes go out.
    return sha256DigestNow(bytes) === module.digest ? bytes : undefined;
  } catch {
    return undefined;
  }
}

function refusal(
  reason: DeliveryRefusal["reason"],
  code: ErrorCode,
  message: string,
): DeliveryRefusal {
  return { ok: false, reason, code, message };
}

function policyFailed(pack: string): DeliveryRefusal {
  return refusal(
    "unavailable",
    "DELIVERY_UNAVAILABLE",
    `Cannot deliver a module of pack "${pack}": the entitlement policy failed; ${
      remedy("DELIVERY_UNAVAILABLE")
    }`,
  );
}

function changedRefusal(pack: PackRef): DeliveryRefusal {
  return refusal(
    "unavailable",
    "PACK_FILE_CHANGED",
    `Cannot deliver a module of pack "${pack.name}": its file changed on disk since discovery listed it; ${
      remedy("PACK_FILE_CHANGED")
    }`,
  );
}

function changedStatus(name: string): PackStatus {
  return {
    name,
    status: "unavailable",
    code: "PACK_FILE_CHANGED",
    message:
      `Pack "${name}" cannot be loaded: a file of it changed on disk since discovery listed it; ${
        remedy("PACK_FILE_CHANGED")
      }`,
  };
}

const NOT_FOUND: DeliveryRefusal = Object.freeze(refusal(
  "not-found",
  "MODULE_NOT_FOUND",
  `No installed module has this id: ${remedy("MODULE_NOT_FOUND")}`,
));

/** A module's checked bytes, and the delivery that hands them out. */
interface Body {
  delivery: AuthorizedDelivery;
  size: number;
}

/** A pack resolved for runs, with every module's source. */
interface ResidentPack {
  pack: ResolvedPack;
  modules: readonly ResolvedModule[];
  size: number;
}

/** The bytes a cached value holds, for the byte bound of its cache. */
function sizeOf(value: { size: number }): number {
  return value.size;
}

/**
 * The resolution of one list of declared packages, kept between runs: a
 * Code node declares the same packages run after run, and its loader then
 * finds the same frozen packs, so it can keep what it derived from them.
 */
interface KeptResolution {
  /** The discovery it was made from. */
  readonly state: CatalogState;
  /** Each resolved pack and the resident copy the resolution holds. */
  readonly residents: readonly (readonly [InstalledPack, ResidentPack])[];
  readonly resolution: ExecutionResolution;
  /** The bytes of the resident copies it holds. */
  readonly size: number;
}

/**
 * The most resolutions kept, and the most bytes of packs they hold, so
 * resolutions whose packs left the resident cache hold no more than it.
 */
const KEPT_RESOLUTIONS = 256;
const KEPT_RESOLUTION_BYTES = RESIDENT_PACK_BYTES;

class DiskCatalogImpl implements DiskCatalog {
  readonly #packsDir: string;
  readonly #maxBytes: number;
  readonly #entitlement: EntitlementPolicy;
  readonly #indexPath: string | undefined;
  readonly #warn: IndexWarning;
  #state: CatalogState;
  #queue: Promise<void> = Promise.resolve();
  /** Module bodies by the listed module, so a rescan that relists it keeps it. */
  #bodies = new RecentMap<ModuleSummary, Body>({
    maxEntries: CACHED_BODIES,
    maxBytes: CACHED_BODY_BYTES,
    sizeOf,
  });
  /** Resolutions by their declared packages, for {@linkcode KeptResolution}. */
  #resolutions = new RecentMap<string, KeptResolution>({
    maxEntries: KEPT_RESOLUTIONS,
    maxBytes: KEPT_RESOLUTION_BYTES,
    sizeOf,
  });
  #resident = new RecentMap<InstalledPack, ResidentPack>({
    maxEntries: RESIDENT_PACKS,
    maxBytes: RESIDENT_PACK_BYTES,
    sizeOf,
  });

  constructor(
    packsDir: string,
    maxBytes: number,
    entitlement: EntitlementPolicy,
    index: { path: string | undefined; warn: IndexWarning },
    state: CatalogState,
  ) {
    this.#packsDir = packsDir;
    this.#maxBytes = maxBytes;
    this.#entitlement = entitlement;
    this.#indexPath = index.path;
    this.#warn = index.warn;
    this.#state = state;
    answerFromMemory(
      this,
      (moduleId, requester) => this.#authorizeNow(moduleId, requester),
    );
    // Each discovery builds a new frozen list, so the handler can tell a
    // changed listing by identity, without comparing every pack.
    listFromMemory(this, () => this.#state.summaries);
  }

  resolveForExecution(declaration: Declaration): ExecutionResolution {
    const requests = declaredPackages(declaration);
    const key = JSON.stringify(requests);
    const kept = this.#resolutions.get(key);
    if (kept !== undefined && this.#stillHolds(kept)) return kept.resolution;
    const made = this.#resolve(requests);
    if (!("residents" in made)) return made;
    this.#resolutions.set(key, made);
    return made.resolution;
  }

  /**
   * Whether `kept` is what resolving its packages again would give: made
   * from the current discovery, with each of its packs still resident as
   * the same object (asking also marks it as used, as resolving does).
   */
  #stillHolds(kept: KeptResolution): boolean {
    return kept.state === this.#state &&
      kept.residents.every(([pack, resident]) =>
        this.#resident.get(pack) === resident
      );
  }

  /**
   * Resolves `requests`: kept, frozen, when every pack resolved; as it is
   * otherwise, so a run after a failed read reads again.
   */
  #resolve(
    requests: readonly PackRequest[],
  ): KeptResolution | ExecutionResolution {
    const state = this.#state;
    const resident = new Map<string, ResidentPack>();
    const residents: [InstalledPack, ResidentPack][] = [];
    const statuses = requests.map((request) => {
      const pack = state.packs.get(request.name);
      const status = packStatus(
        request,
        pack?.summary,
        state.rejected.get(request.name)?.code,
      );
      if (status.status !== "ok") return status;
      const found = this.#residentOf(pack!);
      if (found === undefined) return changedStatus(request.name);
      resident.set(request.name, found);
      residents.push([pack!, found]);
      return status;
    });
    const resolution = executionResolution(
      statuses,
      (name) => resident.get(name)!,
      // Frozen and shared: copying it would cost every run the whole
      // catalog's size.
      state.installed,
    );
    if (statuses.some((status) => status.status !== "ok")) return resolution;
    const size = residents.reduce((sum, [, found]) => sum + found.size, 0);
    return { state, residents, resolution: deepFreeze(resolution), size };
  }

  /**
   * A pack with every module's source, read and checked now unless it is
   * kept from an earlier run; `undefined` when a file is not the listed one.
   */
  #residentOf(pack: InstalledPack): ResidentPack | undefined {
    const kept = this.#resident.get(pack);
    if (kept !== undefined) return kept;
    const { summary, ref } = pack;
    const modules: ResolvedModule[] = [];
    let size = 0;
    for (const module of summary.modules) {
      const body = this.#bodyOf(pack, module);
      if (body === undefined) return undefined;
      size += body.size;
      modules.push({
        id: module.id,
        pack: ref,
        path: module.path,
        source: body.delivery.content,
        digest: module.digest,
        graphDigest: module.graphDigest,
        dependencyIds: [...module.dependencyIds],
      });
    }
    const idOf = new Map(summary.modules.map((m) => [m.path, m.id]));
    const exports: Record<string, string> = {};
    for (const [subpath, file] of Object.entries(pack.exports)) {
      exports[subpath] = idOf.get(file)!;
    }
    const resolved = deepFreeze<ResidentPack>({
      pack: {
        name: summary.name,
        version: summary.version,
        graphDigest: summary.graphDigest,
        exports,
        files: Object.fromEntries(idOf),
      },
      modules,
      size,
    });
    this.#resident.set(pack, resolved);
    return resolved;
  }

  /**
   * A module's bytes and delivery, read and checked against its listed
   * digest now unless they are kept; `undefined` when the file is gone or
   * is not the listed one.
   */
  #bodyOf(pack: InstalledPack, module: ModuleSummary): Body | undefined {
    const kept = this.#bodies.get(module);
    if (kept !== undefined) return kept;
    const bytes = readListedBytes(
      this.#state.root,
      pack,
      module,
      this.#maxBytes,
    );
    if (bytes === undefined) return undefined;
    let content: string;
    try {
      content = utf8.decode(bytes);
    } catch {
      return undefined;
    }
    const delivery = deepFreeze<AuthorizedDelivery>({
      ok: true,
      moduleId: module.id,
      content,
      mediaType: "text/javascript",
      digest: module.digest,
      graphDigest: module.graphDigest,
      dependencyIds: [...module.dependencyIds],
      pack: pack.ref,
      path: module.path,
    });
    attachBytes(delivery, bytes);
    const body = { delivery, size: bytes.byteLength };
    this.#bodies.set(module, body);
    return body;
  }

  authorizeDelivery(
    moduleId: string,
    requester?: Requester,
  ): Promise<AuthorizedDelivery | DeliveryRefusal> {
    try {
      return Promise.resolve(this.#authorizeNow(moduleId, requester));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Answers what `authorizeDelivery` answers, as a plain value unless the
   * entitlement policy returns a promise: the listing is in memory and a
   * module's bytes are read synchronously. The delivery handler calls it
   * through `in_memory_delivery.ts`.
   */
  #authorizeNow(
    moduleId: string,
    requester: Requester = {},
  ):
    | AuthorizedDelivery
    | DeliveryRefusal
    | Promise<AuthorizedDelivery | DeliveryRefusal> {
    if (!isModuleId(moduleId)) {
      return { ...NOT_FOUND };
    }
    const pack = this.#state.owners.get(moduleId);
    if (pack === undefined) return { ...NOT_FOUND };
    const module = pack.summary.modules.find((m) => m.id === moduleId)!;
    let allowed: unknown;
    try {
      allowed = this.#entitlement(pack.ref, requester);
    } catch {
      return policyFailed(pack.ref.name);
    }
    // Only a policy that waits makes the answer wait.
    if (allowed instanceof Promise) {
      return allowed.then(
        (answer) => this.#grant(pack, module, answer),
        () => policyFailed(pack.ref.name),
      );
    }
    return this.#grant(pack, module, allowed);
  }

  /** Delivers a module when the policy answered exactly `true`. */
  #grant(
    pack: InstalledPack,
    module: ModuleSummary,
    allowed: unknown,
  ): AuthorizedDelivery | DeliveryRefusal {
    if (allowed !== true) {
      return refusal(
        "forbidden",
        "DELIVERY_FORBIDDEN",
        `Cannot deliver a module of pack "${pack.ref.name}": the entitlement policy refused this requester; ${
          remedy("DELIVERY_FORBIDDEN")
        }`,
      );
    }
    return this.#bodyOf(pack, module)?.delivery ?? changedRefusal(pack.ref);
  }

  summaries(): PackSummary[] {
    return [...this.#state.summaries];
  }

  diagnostics(): PackDiagnostic[] {
    return [...this.#state.diagnostics];
  }

  rescan(options: RescanOptions = {}): Promise<void> {
    let signal: AbortSignal | undefined;
    try {
      signal = readRescanSignal(options);
    } catch (error) {
      return Promise.reject(error);
    }
    const run = this.#queue.then(async () => {
      const before = this.#state;
      const known = knownFromState(before);
      const state = await discover(
        this.#packsDir,
        this.#maxBytes,
        known,
        signal,
      );
      this.#state = state;
      // They hold the old discovery, and nothing kept matches it now.
      this.#resolutions.clear();
      if (this.#indexPath !== undefined && changedSince(known, state)) {
        await saveIndex(this.#indexPath, this.#maxBytes, state, this.#warn);
      }
    });
    this.#queue = run.catch(() => {});
    return run;
  }
}

/** Whether a discovery read a pack, or a folder went away, since `known`. */
function changedSince(known: Known | undefined, state: CatalogState): boolean {
  return known === undefined || state.read > 0 ||
    known.folders.size !== state.folders.size;
}

/** Writes a discovery's provable folders to the index file. */
function saveIndex(
  path: string,
  maxModuleBytes: number,
  state: CatalogState,
  warn: IndexWarning,
): Promise<void> {
  return writeIndexFile(
    path,
    {
      format: 1,
      rules: DISCOVERY_RULES,
      maxModuleBytes,
      scannedAt: state.scannedAt,
    },
    indexLines(state),
    warn,
  );
}

/** The index lines of a discovery's provable folders, made one at a time. */
function* indexLines(state: CatalogState): Generator<DiscoveryIndexPack> {
  for (const [folder, record] of state.folders) {
    if (record.proof !== undefined) {
      yield lineOfRecord(folder, { ...record, proof: record.proof });
    }
  }
}

function readRescanSignal(options: RescanOptions): AbortSignal | undefined {
  const where = "rescan the packs folder";
  const { signal } = readOptions(where, options, { signal: true });
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError(`Cannot ${where}: signal must be an AbortSignal`);
  }
  return signal;
}

const DISK_OPTION_KEYS: OptionKeys<DiskCatalogOptions> = {
  entitlement: true,
  maxModuleBytes: true,
  indexPath: true,
  onIndexWarning: true,
  signal: true,
};

/**
 * Discovers the packs installed in a folder and returns a catalog over
 * them. A pack is `<packsDir>/<name>/package.json` or
 * `<packsDir>/@scope/<name>/package.json` whose `cordon` section declares its
 * sandbox modules. Each pack that breaks a rule is rejected on its own, with
 * a diagnostic, and the others are installed; folders starting with `.` or
 * `_` are skipped. Messages and diagnostics never contain the folder's
 * absolute path.
 *
 * @param packsDir The packs folder.
 * @param options The entitlement policy, size cap and abort signal.
 * @returns The catalog, ready to answer.
 * @throws {TypeError} When `packsDir` is empty, an option is unknown or
 * an option has the wrong type.
 * @throws {RangeError} When `maxModuleBytes` is not a positive integer.
 * @throws {CordonError} `PATH_UNUSABLE` when the packs folder cannot be
 * read (the original error is the `cause`).
 * @throws {Error} The signal's reason when it aborts.
 *
 * @example
 * ```ts
 * import { createDiskCatalog } from "@cordon/cordon/catalog/disk";
 * import assert from "node:assert/strict";
 *
 * const packsDir = await Deno.makeTempDir();
 * try {
 *   await Deno.mkdir(`${packsDir}/greet`);
 *   await Deno.writeTextFile(`${packsDir}/greet/package.json`, JSON.stringify({
 *     name: "greet",
 *     version: "1.0.0",
 *     cordon: { exports: { ".": "./index.js" } },
 *   }));
 *   await Deno.writeTextFile(
 *     `${packsDir}/greet/index.js`,
 *     "export const greet = (name) => `Hello, ${name}!`;\n",
 *   );
 *   const catalog = await createDiskCatalog(packsDir);
 *   const resolution = catalog.resolveForExecution({
 *     source: 'import { greet } from "greet"; export default greet("Ada");',
 *     packages: ["greet"],
 *   });
 *   assert.equal(resolution.statuses[0]?.status, "ok");
 *   const id = resolution.packs.greet!.exports["."]!;
 *   const delivery = await catalog.authorizeDelivery(id);
 *   assert.equal(delivery.ok && delivery.path, "./index.js");
 * } finally {
 *   await Deno.remove(packsDir, { recursive: true });
 * }
 * ```
 */
export async function createDiskCatalog(
  packsDir: string,
  options: DiskCatalogOptions = {},
): Promise<DiskCatalog> {
  if (typeof packsDir !== "string" || packsDir === "") {
    throw new TypeError(
      "Cannot create the disk catalog: packsDir must be a non-empty folder path",
    );
  }
  const where = "create the disk catalog";
  const {
    entitlement = allowEveryone,
    maxModuleBytes: givenMaxModuleBytes,
    indexPath,
    onIndexWarning,
    signal,
  } = readOptions(where, options, DISK_OPTION_KEYS);
  if (typeof entitlement !== "function") {
    throw new TypeError(
      "Cannot create the disk catalog: entitlement must be a function",
    );
  }
  const maxModuleBytes = readIntegerOption(
    where,
    "maxModuleBytes",
    givenMaxModuleBytes,
    DEFAULT_MAX_MODULE_BYTES,
    { min: 1, max: Number.MAX_SAFE_INTEGER, unit: "bytes" },
  );
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError(
      "Cannot create the disk catalog: signal must be an AbortSignal",
    );
  }
  if (
    indexPath !== undefined &&
    (typeof indexPath !== "string" || indexPath === "")
  ) {
    throw new TypeError(
      "Cannot create the disk catalog: indexPath must be a non-empty file path",
    );
  }
  if (onIndexWarning !== undefined && typeof onIndexWarning !== "function") {
    throw new TypeError(
      "Cannot create the disk catalog: onIndexWarning must be a function",
    );
  }
  const warn: IndexWarning = (code, message) => {
    if (onIndexWarning === undefined) console.warn(message);
    else onIndexWarning({ code, message });
  };
  const file = indexPath === undefined
    ? undefined
    : await readIndexFile(indexPath, maxModuleBytes, warn, recordReader());
  const known = file && {
    trustBefore: file.header.scannedAt - RACY_MS,
    folders: file.packs,
  };
  const state = await discover(packsDir, maxModuleBytes, known, signal);
  if (indexPath !== undefined && changedSince(known, state)) {
    await saveIndex(indexPath, maxModuleBytes, state, warn);
  }
  return new DiskCatalogImpl(
    packsDir,
    maxModuleBytes,
    entitlement,
    { path: indexPath, warn },
    state,
  );
}
