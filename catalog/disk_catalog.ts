/**
 * The on-disk catalog: discovers the packs installed in a packs folder,
 * validates them, builds their module graphs and answers
 * {@linkcode SandboxModuleCatalog} questions from memory. Needs Deno and
 * `--allow-read` on the packs folder.
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
  type PackDiagnostic,
  type PackManifest,
  PackManifestSchema,
  type PackRef,
  type PackSummary,
  type Requester,
} from "../protocol/mod.ts";
import type {
  EntitlementPolicy,
  ExecutionResolution,
  ResolvedModule,
  ResolvedPack,
  SandboxModuleCatalog,
} from "./types.ts";
import { buildPackGraph } from "./graph.ts";
import {
  answerFromMemory,
  attachBytes,
  listFromMemory,
} from "./in_memory_delivery.ts";
import { mapBounded } from "./_bounded.ts";
import {
  declaredPackages,
  executionResolution,
  packStatus,
  remedy,
} from "./_pack_status.ts";

export type { EntitlementPolicy } from "./types.ts";

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
   * run one after another.
   */
  rescan(options?: RescanOptions): Promise<void>;
}

/** The default largest module file: 1 MiB. */
export const DEFAULT_MAX_MODULE_BYTES = 1024 * 1024;

const MAX_MANIFEST_BYTES = 1024 * 1024;
const PACK_CONCURRENCY = 16;
const FILES_PER_TURN = 32;
const SEP = Deno.build.os === "windows" ? "\\" : "/";

const allowEveryone: EntitlementPolicy = () => true;
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
/**
 * Each module's file as discovery read it. Its digest is the module's
 * `digest` (the source is its exact UTF-8 text: decoding is fatal and keeps
 * a BOM), so delivery sends these bytes without encoding or hashing again.
 */
const discoveredBytes = new WeakMap<ResolvedModule, Uint8Array<ArrayBuffer>>();

interface InstalledPack {
  ref: PackRef;
  summary: PackSummary;
  resolved: ResolvedPack;
  modules: readonly ResolvedModule[];
}

interface CatalogState {
  packs: ReadonlyMap<string, InstalledPack>;
  modules: ReadonlyMap<string, ResolvedModule>;
  summaries: readonly PackSummary[];
  diagnostics: readonly PackDiagnostic[];
  installed: readonly string[];
  /** Rejected packs by the name they declare (or their folder), for hints. */
  rejected: ReadonlyMap<string, PackDiagnostic>;
}

interface PackFolder {
  /** Relative to the packs folder, `/`-separated: `math`, `@acme/math`. */
  rel: string;
  /** Absolute path of the folder as listed (may be a symlink). */
  path: string;
}

type PackOutcome =
  | {
    ok: true;
    folder: PackFolder;
    manifest: PackManifest;
    summary: PackSummary;
    sources: Record<string, string>;
    /** Every declared file as read, by its path in the pack. */
    bytes: ReadonlyMap<string, Uint8Array<ArrayBuffer>>;
  }
  | {
    ok: false;
    folder: PackFolder;
    /** The pack name the folder declared, when its manifest was read. */
    name?: string;
    diagnostic: PackDiagnostic;
  };

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

/** Reads one file of a pack, checked on its real path. */
function readInside(
  packReal: string,
  file: string,
  maxBytes: number,
): Uint8Array<ArrayBuffer> {
  let real: string;
  try {
    real = Deno.realPathSync(join(packReal, file));
  } catch (error) {
    throw new PackRejection(
      "PACK_FILE_MISSING",
      error instanceof Deno.errors.NotFound
        ? `${file} does not exist`
        : `${file} cannot be read (${errorName(error)})`,
    );
  }
  if (!real.startsWith(packReal + SEP)) {
    throw new PackRejection(
      "PACK_FILE_OUTSIDE",
      `${file} resolves outside the pack folder`,
    );
  }
  let bytes: Uint8Array<ArrayBuffer>;
  try {
    const info = Deno.statSync(real);
    if (!info.isFile) {
      throw new PackRejection(
        "PACK_FILE_MISSING",
        `${file} is not a regular file`,
      );
    }
    if (info.size > maxBytes) {
      throw new PackRejection(
        "PACK_FILE_TOO_LARGE",
        `${file} is ${info.size} bytes, over the ${maxBytes}-byte cap`,
      );
    }
    bytes = Deno.readFileSync(real);
  } catch (error) {
    if (error instanceof PackRejection) throw error;
    throw new PackRejection(
      "PACK_FILE_MISSING",
      `${file} cannot be read (${errorName(error)})`,
    );
  }
  if (bytes.byteLength > maxBytes) {
    throw new PackRejection(
      "PACK_FILE_TOO_LARGE",
      `${file} grew over the ${maxBytes}-byte cap while it was read`,
    );
  }
  return bytes;
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

function decode(file: string, bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new PackRejection(
      "PACK_MODULE_SYNTAX",
      `${file} is not valid UTF-8`,
      "save the file as UTF-8",
    );
  }
}

function describeIssues(
  issues: readonly { path: readonly PropertyKey[]; message: string }[],
): string {
  const shown = issues.slice(0, 3).map((issue) => {
    const where = issue.path.map(String).join(".");
    return where === "" ? issue.message : `${where}: ${issue.message}`;
  });
  const more = issues.length > 3 ? ` (and ${issues.length - 3} more)` : "";
  return shown.join("; ") + more;
}

function readManifest(packReal: string): PackManifest {
  let text: string;
  try {
    text = decode(
      "package.json",
      readInside(packReal, "package.json", MAX_MANIFEST_BYTES),
    );
  } catch (error) {
    if (error instanceof PackRejection && error.code !== "PACK_FILE_OUTSIDE") {
      throw new PackRejection(
        "PACK_MANIFEST_INVALID",
        error.detail.replace("does not exist", "is missing"),
        "add a package.json whose cordon section declares the pack's modules",
      );
    }
    throw error;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new PackRejection(
      "PACK_MANIFEST_INVALID",
      "package.json is not valid JSON",
      "fix the JSON syntax of package.json",
    );
  }
  const parsed = PackManifestSchema.safeParse(json);
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

async function loadPack(
  folder: PackFolder,
  maxBytes: number,
): Promise<PackOutcome> {
  let name: string | undefined;
  const reject = (
    code: ErrorCode,
    detail: string,
    next: string = remedy(code),
  ): PackOutcome => ({
    ok: false,
    folder,
    name,
    diagnostic: {
      pack: folder.rel,
      code,
      message: `Cannot use pack "${folder.rel}": ${detail}; ${next}`,
    },
  });
  try {
    const packReal = Deno.realPathSync(folder.path);
    const manifest = readManifest(packReal);
    name = manifest.name;
    if (manifest.name.toLowerCase() !== folder.rel.toLowerCase()) {
      return reject(
        "PACK_MANIFEST_INVALID",
        `package.json names the pack "${manifest.name}" but its folder is "${folder.rel}"`,
        "install the pack in a folder named after it",
      );
    }
    const files = [
      ...new Set([
        ...Object.values(manifest.cordon.exports),
        ...manifest.cordon.internal,
      ]),
    ];
    const bytes = new Map<string, Uint8Array<ArrayBuffer>>();
    const sources: Record<string, string> = {};
    for (const [index, file] of files.entries()) {
      // Sync reads are several times faster than async ones here; yield to
      // the event loop every FILES_PER_TURN files so a server stays live.
      if (index > 0 && index % FILES_PER_TURN === 0) await nextTurn();
      const read = readInside(packReal, file, maxBytes);
      bytes.set(file, read);
      sources[file] = decode(file, read);
    }
    const graph = await buildPackGraph(manifest, sources);
    if (!graph.ok) {
      return {
        ok: false,
        folder,
        name,
        diagnostic: {
          pack: folder.rel,
          code: graph.code,
          // Same name, but say it as the folder spells it, like the others.
          message: graph.message.replace(
            `"${manifest.name}"`,
            `"${folder.rel}"`,
          ),
        },
      };
    }
    return {
      ok: true,
      folder,
      manifest,
      summary: graph.graph.summary,
      sources: graph.graph.sources,
      bytes,
    };
  } catch (error) {
    if (error instanceof PackRejection) {
      return reject(error.code, error.detail, error.next);
    }
    return reject(
      "PACK_MANIFEST_INVALID",
      `the pack folder cannot be read (${errorName(error)})`,
    );
  }
}

function skipped(name: string): boolean {
  // Hidden folders and `_name` folders (generated or private) are not packs;
  // npm names cannot start with `.` or `_` either.
  return name.startsWith(".") || name.startsWith("_");
}

function isDirectory(entry: Deno.DirEntry, path: string): boolean {
  if (entry.isDirectory) return true;
  if (!entry.isSymlink) return false;
  try {
    return Deno.statSync(path).isDirectory;
  } catch {
    return false;
  }
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
    if (!isDirectory(entry, folder.path)) continue;
    (entry.name.startsWith("@") ? scopes : folders).push(folder);
  }
  for (const scope of scopes) {
    try {
      for (const entry of Deno.readDirSync(scope.path)) {
        if (skipped(entry.name)) continue;
        const folder = {
          rel: `${scope.rel}/${entry.name}`,
          path: join(scope.path, entry.name),
        };
        if (isDirectory(entry, folder.path)) folders.push(folder);
      }
    } catch (error) {
      problems.push({
        pack: scope.rel,
        code: "PACK_MANIFEST_INVALID",
        message: `Cannot use scope folder "${scope.rel}": it cannot be read (${
          errorName(error)
        }); ${remedy("PACK_MANIFEST_INVALID")}`,
      });
    }
  }
  folders.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
  return { folders, problems };
}

function toResolved(
  manifest: PackManifest,
  summary: PackSummary,
  sources: Record<string, string>,
  bytes: ReadonlyMap<string, Uint8Array<ArrayBuffer>>,
): InstalledPack {
  const ref: PackRef = { name: summary.name, version: summary.version };
  const idOf = new Map(summary.modules.map((m) => [m.path, m.id]));
  const exports: Record<string, string> = {};
  for (const [subpath, file] of Object.entries(manifest.cordon.exports)) {
    exports[subpath] = idOf.get(file)!;
  }
  const files: Record<string, string> = Object.fromEntries(idOf);
  const modules = summary.modules.map((m): ResolvedModule => ({
    id: m.id,
    pack: { ...ref },
    path: m.path,
    source: sources[m.path]!,
    digest: m.digest,
    graphDigest: m.graphDigest,
    dependencyIds: [...m.dependencyIds],
  }));
  for (const module of modules) {
    discoveredBytes.set(module, bytes.get(module.path)!);
  }
  return deepFreeze({
    ref,
    summary,
    resolved: {
      name: summary.name,
      version: summary.version,
      graphDigest: summary.graphDigest,
      exports,
      files,
    },
    modules,
  });
}

async function discover(
  packsDir: string,
  maxBytes: number,
  signal: AbortSignal | undefined,
): Promise<CatalogState> {
  signal?.throwIfAborted();
  let listing: ReturnType<typeof listPackFolders>;
  try {
    listing = listPackFolders(Deno.realPathSync(packsDir));
  } catch (error) {
    throw new Error(
      `Cannot read the packs folder: ${
        errorName(error)
      }; check that it exists, is a folder and is readable`,
      { cause: error },
    );
  }
  const outcomes = await mapBounded(
    listing.folders,
    PACK_CONCURRENCY,
    (folder) => loadPack(folder, maxBytes),
    signal,
  );

  const byName = new Map<string, PackOutcome[]>();
  for (const outcome of outcomes) {
    const name = outcome.ok ? outcome.manifest.name : outcome.name;
    if (name === undefined) continue;
    byName.set(name, [...(byName.get(name) ?? []), outcome]);
  }
  const diagnostics: PackDiagnostic[] = [...listing.problems];
  const rejected = new Map<string, PackDiagnostic>();
  const packs = new Map<string, InstalledPack>();
  for (const outcome of outcomes) {
    if (!outcome.ok) {
      diagnostics.push(outcome.diagnostic);
      rejected.set(outcome.name ?? outcome.folder.rel, outcome.diagnostic);
      continue;
    }
    const name = outcome.manifest.name;
    const claims = byName.get(name)!;
    if (claims.length > 1) {
      const folders = claims.map((claim) => `"${claim.folder.rel}"`).join(", ");
      const diagnostic: PackDiagnostic = {
        pack: outcome.folder.rel,
        code: "PACK_DUPLICATE",
        message:
          `Cannot use pack "${outcome.folder.rel}": folders ${folders} all declare "${name}"; ${
            remedy("PACK_DUPLICATE")
          }`,
      };
      diagnostics.push(diagnostic);
      rejected.set(name, diagnostic);
      continue;
    }
    packs.set(
      name,
      toResolved(
        outcome.manifest,
        outcome.summary,
        outcome.sources,
        outcome.bytes,
      ),
    );
  }

  const modules = new Map<string, ResolvedModule>();
  for (const pack of packs.values()) {
    for (const module of pack.modules) modules.set(module.id, module);
  }
  const installed = [...packs.keys()].sort();
  const summaries = installed.map((name) => packs.get(name)!.summary);
  diagnostics.sort((a, b) => (a.pack < b.pack ? -1 : a.pack > b.pack ? 1 : 0));
  return {
    packs,
    modules,
    summaries: deepFreeze(summaries),
    diagnostics: deepFreeze(diagnostics),
    installed: deepFreeze(installed),
    rejected,
  };
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

const NOT_FOUND: DeliveryRefusal = Object.freeze(refusal(
  "not-found",
  "MODULE_NOT_FOUND",
  `No installed module has this id: ${remedy("MODULE_NOT_FOUND")}`,
));

class DiskCatalogImpl implements DiskCatalog {
  readonly #packsDir: string;
  readonly #maxBytes: number;
  readonly #entitlement: EntitlementPolicy;
  #state: CatalogState;
  #queue: Promise<void> = Promise.resolve();
  #deliveries = new WeakMap<ResolvedModule, AuthorizedDelivery>();

  constructor(
    packsDir: string,
    maxBytes: number,
    entitlement: EntitlementPolicy,
    state: CatalogState,
  ) {
    this.#packsDir = packsDir;
    this.#maxBytes = maxBytes;
    this.#entitlement = entitlement;
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
    const state = this.#state;
    const statuses = declaredPackages(declaration).map((request) =>
      packStatus(
        request,
        state.packs.get(request.name)?.resolved,
        state.rejected.get(request.name)?.code,
      )
    );
    return executionResolution(
      statuses,
      (name) => {
        const pack = state.packs.get(name)!;
        return { pack: pack.resolved, modules: pack.modules };
      },
      // Frozen and shared: copying it would cost every run the whole
      // catalog's size.
      state.installed,
    );
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
   * entitlement policy returns a promise: the modules are in memory. The
   * delivery handler calls it through `in_memory_delivery.ts`.
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
    const module = this.#state.modules.get(moduleId);
    if (module === undefined) return { ...NOT_FOUND };
    let allowed: unknown;
    try {
      allowed = this.#entitlement(module.pack, requester);
    } catch {
      return policyFailed(module.pack.name);
    }
    // Only a policy that waits makes the answer wait.
    if (allowed instanceof Promise) {
      return allowed.then(
        (answer) => this.#grant(module, answer),
        () => policyFailed(module.pack.name),
      );
    }
    return this.#grant(module, allowed);
  }

  /** Delivers a module when the policy answered exactly `true`. */
  #grant(
    module: ResolvedModule,
    allowed: unknown,
  ): AuthorizedDelivery | DeliveryRefusal {
    if (allowed !== true) {
      return refusal(
        "forbidden",
        "DELIVERY_FORBIDDEN",
        `Cannot deliver a module of pack "${module.pack.name}": the entitlement policy refused this requester; ${
          remedy("DELIVERY_FORBIDDEN")
        }`,
      );
    }
    return this.#deliveryOf(module);
  }

  /** One frozen delivery per module version, shared by every request. */
  #deliveryOf(module: ResolvedModule): AuthorizedDelivery {
    let delivery = this.#deliveries.get(module);
    if (delivery === undefined) {
      delivery = deepFreeze<AuthorizedDelivery>({
        ok: true,
        moduleId: module.id,
        content: module.source,
        mediaType: "text/javascript",
        digest: module.digest,
        graphDigest: module.graphDigest,
        dependencyIds: [...module.dependencyIds],
        pack: { ...module.pack },
        path: module.path,
      });
      attachBytes(delivery, discoveredBytes.get(module)!);
      this.#deliveries.set(module, delivery);
    }
    return delivery;
  }

  summaries(): PackSummary[] {
    return [...this.#state.summaries];
  }

  diagnostics(): PackDiagnostic[] {
    return [...this.#state.diagnostics];
  }

  rescan(options: RescanOptions = {}): Promise<void> {
    const run = this.#queue.then(async () => {
      this.#state = await discover(
        this.#packsDir,
        this.#maxBytes,
        options.signal,
      );
    });
    this.#queue = run.catch(() => {});
    return run;
  }
}

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
 * @throws {TypeError} When `packsDir` is empty or an option has the wrong
 * type.
 * @throws {RangeError} When `maxModuleBytes` is not a positive integer.
 * @throws {Error} When the packs folder cannot be read (the original error
 * is the `cause`), or the signal's reason when it aborts.
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
  const {
    entitlement = allowEveryone,
    maxModuleBytes = DEFAULT_MAX_MODULE_BYTES,
    signal,
  } = options;
  if (typeof entitlement !== "function") {
    throw new TypeError(
      "Cannot create the disk catalog: entitlement must be a function",
    );
  }
  if (!Number.isSafeInteger(maxModuleBytes) || maxModuleBytes <= 0) {
    throw new RangeError(
      "Cannot create the disk catalog: maxModuleBytes must be a positive integer of bytes",
    );
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError(
      "Cannot create the disk catalog: signal must be an AbortSignal",
    );
  }
  const state = await discover(packsDir, maxModuleBytes, signal);
  return new DiskCatalogImpl(packsDir, maxModuleBytes, entitlement, state);
}
