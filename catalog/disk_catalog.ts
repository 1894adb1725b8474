/**
 * The on-disk catalog: discovers the packs installed in a packs folder,
 * validates them, builds their module graphs and answers
 * {@linkcode SandboxModuleCatalog} questions. It keeps each pack's listing
 * in memory and reads a module's bytes when a run or a delivery needs them,
 * checked against the digest it lists (a bounded number stay cached). With
 * `indexPath` it keeps a discovery index, so a restart over an unchanged
 * packs folder reads and hashes nothing again. Runs on Deno, with
 * `--allow-read` on the packs folder (and read and write on the index), and
 * on Node 20.16+ (the Node build), with the same options and codes.
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

import {
  type AuthorizedDelivery,
  type Declaration,
  type DeliveryRefusal,
  type ErrorCode,
  isModuleId,
  type ModuleSummary,
  type PackDiagnostic,
  type PackSummary,
  type Requester,
} from "../protocol/mod.ts";
import {
  type OptionKeys,
  readIntegerOption,
  readOptions,
} from "../protocol/options.ts";
import { isThenable } from "../protocol/deadline.ts";
import { callSink } from "../protocol/hook_calls.ts";
import {
  ANONYMOUS_REQUESTER,
  snapshotRequester,
} from "../protocol/requester.ts";
import { RecentMap } from "../protocol/recent.ts";
import type {
  AuthorizeDeliveryOptions,
  EntitlementPolicy,
  ExecutionResolution,
  ResolvedModule,
  ResolvedPack,
  SandboxModuleCatalog,
} from "./types.ts";
import {
  answerFromMemory,
  attachBytes,
  entitleFromMemory,
  entitlementOptions,
  EVERYONE,
  listFromMemory,
  type WaitSignal,
} from "./in_memory_delivery.ts";
import { readDeliverySignal } from "./_prefetch_options.ts";
import {
  type IndexWarning,
  RACY_MS,
  readIndexFile,
} from "./_discovery_index.ts";
import {
  declaredPackages,
  executionResolution,
  type PackRequest,
  packStatus,
  remedy,
} from "./_pack_status.ts";
import { decodeUtf8 } from "./_utf8.ts";
import { CordonError } from "../protocol/cordon_error.ts";
import { isInside, realPathToBe } from "./_host_path.ts";
import { hostFs } from "./_host_fs.ts";
import { localPath } from "./local_path.ts";
import { deepFreeze, type InstalledPack } from "./_pack_folder.ts";
import {
  type CatalogState,
  discover,
  knownFromState,
} from "./_disk_discovery.ts";
import { changedSince, recordReader, saveIndex } from "./_index_records.ts";
import {
  changedRefusal,
  changedStatus,
  NOT_FOUND,
  policyFailed,
  readListedBytes,
} from "./_disk_delivery.ts";
import { authorizedDelivery, refusal } from "./_delivery_answer.ts";

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
   * with `DELIVERY_UNAVAILABLE`. A delivery handler with a `requester` hook
   * also asks it about each pack a listing would hold, and leaves out the
   * packs it does not allow (or fails to decide). Its third argument's
   * `signal` is the one `authorizeDelivery` was given, or the delivery
   * handler's for the request; a policy that waits should stop when it
   * aborts.
   *
   * @default {() => true}
   */
  entitlement?: EntitlementPolicy | undefined;
  /**
   * The largest module file accepted, in bytes. A larger file rejects its
   * pack with `PACK_FILE_TOO_LARGE`. (`package.json` has its own 1 MiB cap.)
   *
   * @default {1048576}
   */
  maxModuleBytes?: number | undefined;
  /**
   * A file where discovery keeps its index between starts (a path, or a
   * `file:` URL): for every pack
   * folder, what proves its files unchanged (size, times, device and inode
   * of each) and what discovery derived from them. A start reuses a pack's
   * entry only when every file it read is provably unchanged and not
   * modified within two seconds of the scan that indexed it; any other
   * pack is read and hashed again. The file is written after discovery
   * when anything changed, to a temporary file beside it that is synced
   * and renamed over it. An index that cannot be used (damaged, another
   * format or version, another `maxModuleBytes`) is ignored and rewritten;
   * one that cannot be written is left alone; both with a warning. The
   * bytes delivered never come from the index: they are read from the pack
   * and checked against their digest. The catalog never writes into the
   * packs folder: a path inside it (also through `..` or a link) is
   * refused with `DISCOVERY_INDEX_INSIDE_PACKS`.
   *
   * @default {undefined} (no index file; rescans still reuse what the
   * catalog proved in memory)
   */
  indexPath?: string | URL | undefined;
  /**
   * Called with each warning about the discovery index. Discovery does not
   * wait for it: what it throws, and what a promise it returns rejects
   * with, are dropped.
   *
   * @default {undefined} (`console.warn` of the message)
   */
  onIndexWarning?: ((warning: IndexWarningInfo) => void) | undefined;
  /** Aborts the first discovery; `createDiskCatalog` then rejects. */
  signal?: AbortSignal | undefined;
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

/** Module bodies kept for delivery, by count and in bytes. */
const CACHED_BODIES = 4096;
const CACHED_BODY_BYTES = 16 * 1024 * 1024;
/** Packs kept resolved with their sources for runs, by count and bytes. */
const RESIDENT_PACKS = 256;
const RESIDENT_PACK_BYTES = 16 * 1024 * 1024;

const allowEveryone: EntitlementPolicy = () => true;

// Captured at import: what the policy answered is read with the engine's
// own then, so a Promise.prototype.then the host replaces later cannot
// turn a refusal into a grant.
const { then } = Promise.prototype;
const { apply } = Reflect;

/** `promise.then(onFulfilled, onRejected)`, with the then of import time. */
function settleWith<T, R>(
  promise: Promise<T>,
  onFulfilled: (value: T) => R,
  onRejected: () => R,
): Promise<R> {
  return apply(then, promise, [onFulfilled, onRejected]);
}

/**
 * Asks the entitlement policy: whether it allows at once (only exactly
 * `true` does), or a promise of its answer when it waits. A thenable that
 * is not a promise is waited for as one (its first answer counts, as
 * `await` reads it). What tells them apart reads the answer, so it runs
 * here, inside the caller's `try`: an answer that cannot even be asked
 * whether it waits (a proxy whose reads throw) is a policy that failed.
 */
function askPolicy(
  policy: EntitlementPolicy,
  ...question: Parameters<EntitlementPolicy>
): boolean | Promise<unknown> {
  const answer: unknown = policy(...question);
  if (answer instanceof Promise) return answer;
  return isThenable(answer) ? Promise.resolve(answer) : answer === true;
}

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
      (moduleId, requester, waiting) =>
        this.#authorizeNow(moduleId, requester, waiting),
    );
    // Each discovery builds a new frozen list, so the handler can tell a
    // changed listing by identity, without comparing every pack.
    listFromMemory(this, () => this.#state.summaries);
    // The default policy answers the same to everyone: the listing then
    // needs no requester and stays one answer for all.
    entitleFromMemory(
      this,
      entitlement === allowEveryone
        ? EVERYONE
        : (summary, requester, waiting) =>
          this.#entitledNow(summary, requester, waiting),
    );
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
      content = decodeUtf8(bytes);
    } catch {
      return undefined;
    }
    const delivery = deepFreeze(authorizedDelivery(pack.ref, module, content));
    attachBytes(delivery, bytes);
    const body = { delivery, size: bytes.byteLength };
    this.#bodies.set(module, body);
    return body;
  }

  // Its answer comes from memory, or from the entitlement policy, which is
  // given the signal to stop its own work.
  authorizeDelivery(
    moduleId: string,
    requester?: Requester,
    options?: AuthorizeDeliveryOptions,
  ): Promise<AuthorizedDelivery | DeliveryRefusal> {
    try {
      const signal = readDeliverySignal(options);
      const waiting = signal === undefined ? undefined : { signal };
      // The policy is shown a copy that reads no id from Object.prototype.
      const asking = typeof requester === "object" && requester !== null
        ? snapshotRequester(requester)
        : requester;
      return Promise.resolve(this.#authorizeNow(moduleId, asking, waiting));
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
    requester: Requester = ANONYMOUS_REQUESTER,
    waiting?: WaitSignal,
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
    let allowed: boolean | Promise<unknown>;
    try {
      allowed = askPolicy(
        this.#entitlement,
        pack.ref,
        requester,
        entitlementOptions(waiting),
      );
    } catch {
      return policyFailed(pack.ref.name);
    }
    // Only a policy that waits makes the answer wait.
    if (allowed instanceof Promise) {
      return settleWith(
        allowed,
        (answer) => this.#grant(pack, module, answer),
        () => policyFailed(pack.ref.name),
      );
    }
    return this.#grant(pack, module, allowed);
  }

  /**
   * Whether the policy allows a requester a listed pack, asked as
   * {@linkcode DiskCatalogImpl.#authorizeNow} asks it for each of its
   * modules: only exactly `true` allows, and a policy that throws or
   * rejects allows nothing.
   */
  #entitledNow(
    summary: PackSummary,
    requester: Requester,
    waiting?: WaitSignal,
  ): boolean | Promise<boolean> {
    const pack = this.#state.packs.get(summary.name);
    if (pack === undefined) return false;
    // A rescan since the listing was read may have replaced the pack: the
    // policy is asked about the version listed.
    const ref = pack.summary === summary
      ? pack.ref
      : Object.freeze({ name: summary.name, version: summary.version });
    let allowed: boolean | Promise<unknown>;
    try {
      allowed = askPolicy(
        this.#entitlement,
        ref,
        requester,
        entitlementOptions(waiting),
      );
    } catch {
      return false;
    }
    if (allowed instanceof Promise) {
      return settleWith(allowed, (answer) => answer === true, () => false);
    }
    return allowed;
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

function readRescanSignal(options: RescanOptions): AbortSignal | undefined {
  const where = "rescan the packs folder";
  const { signal } = readOptions(where, options, { signal: true });
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError(`Cannot ${where}: signal must be an AbortSignal`);
  }
  return signal;
}

/**
 * Refuses an index file inside the packs folder, as written or through
 * `..` or links: each of its writes changes the packs folder, so a
 * watching server rescans, writes the index and rescans again without end
 * (56 rescans in 3 s after one change, measured). A packs folder that
 * cannot be read is left to discovery, and an index path that cannot be
 * followed (a file on the way) to the index's read and write, which say
 * why.
 */
async function refuseIndexInside(
  packsPath: string,
  indexPath: string,
): Promise<void> {
  let packs: string;
  let index: string;
  try {
    packs = await hostFs().realPath(packsPath);
    index = await realPathToBe(indexPath);
  } catch {
    return;
  }
  if (isInside(index, packs)) {
    throw new CordonError(
      "DISCOVERY_INDEX_INSIDE_PACKS",
      "Cannot use the discovery index: it is inside the packs folder, where each of its writes changes the folder (a watching server rescans without end); point the index at a file outside the packs folder",
    );
  }
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
 * @param packsDir The packs folder: a path, or a `file:` URL as Deno's file
 * APIs take one.
 * @param options The entitlement policy, size cap and abort signal.
 * @returns The catalog, ready to answer.
 * @throws {TypeError} When `packsDir` is empty or a URL that is not a
 * `file:` URL of a local folder, an option is unknown or an option has the
 * wrong type.
 * @throws {RangeError} When `maxModuleBytes` is not a positive integer.
 * @throws {CordonError} `PATH_UNUSABLE` when the packs folder cannot be
 * read (the original error is the `cause`), `DISCOVERY_INDEX_INSIDE_PACKS`
 * when `indexPath` is inside the packs folder (also through `..` or a
 * link).
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
 *   const id = resolution.packs["greet"]!.exports["."]!;
 *   const delivery = await catalog.authorizeDelivery(id);
 *   assert.equal(delivery.ok && delivery.path, "./index.js");
 * } finally {
 *   await Deno.remove(packsDir, { recursive: true });
 * }
 * ```
 */
export async function createDiskCatalog(
  packsDir: string | URL,
  options: DiskCatalogOptions = {},
): Promise<DiskCatalog> {
  const where = "create the disk catalog";
  const packsPath = localPath(packsDir, {
    where,
    name: "packsDir",
    kind: "folder",
  });
  const {
    entitlement = allowEveryone,
    maxModuleBytes: givenMaxModuleBytes,
    indexPath: givenIndexPath,
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
  const indexPath = givenIndexPath === undefined
    ? undefined
    : localPath(givenIndexPath, { where, name: "indexPath", kind: "file" });
  if (onIndexWarning !== undefined && typeof onIndexWarning !== "function") {
    throw new TypeError(
      "Cannot create the disk catalog: onIndexWarning must be a function",
    );
  }
  // A failing warning sink does not fail the discovery it warns about.
  const warn: IndexWarning = (code, message) => {
    if (onIndexWarning === undefined) console.warn(message);
    else callSink(onIndexWarning, { code, message });
  };
  if (indexPath !== undefined) await refuseIndexInside(packsPath, indexPath);
  const file = indexPath === undefined
    ? undefined
    : await readIndexFile(indexPath, maxModuleBytes, warn, recordReader());
  const known = file && {
    trustBefore: file.header.scannedAt - RACY_MS,
    folders: file.packs,
  };
  const state = await discover(packsPath, maxModuleBytes, known, signal);
  if (indexPath !== undefined && changedSince(known, state)) {
    await saveIndex(indexPath, maxModuleBytes, state, warn);
  }
  return new DiskCatalogImpl(
    packsPath,
    maxModuleBytes,
    entitlement,
    { path: indexPath, warn },
    state,
  );
}
