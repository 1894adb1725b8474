// This module is browser compatible.

/**
 * The staged catalog: a {@linkcode SandboxModuleCatalog} over a staged tree
 * (written by `cordon stage`) on any static host, or on the file system in
 * Deno (Node's `fetch` reads no `file:` URLs). No cordon code runs on the
 * server: the catalog reads the tree's `index.json`, then only the pack
 * indexes of the packs a declaration names, then their modules, and checks
 * every body against the digests the index gives with `crypto.subtle`
 * before anything is cached or run. Its failures have the remote catalog's
 * codes and wording.
 *
 * @module
 */

import { operatorText } from "../protocol/operator_text.ts";
import {
  type AuthorizedDelivery,
  type Declaration,
  type DeliveryRefusal,
  isPackName,
  type OptionKeys,
  type PackSummary,
  readOptions,
  type Requester,
  type StagedIndex,
  StagedIndexSchema,
  stagedModulePath,
  type StagedPackEntry,
  stagedPackIndexPath,
  StagedPackSchema,
} from "../protocol/mod.ts";
import { sha256Digest } from "./digest.ts";
import { readPrefetchSignal } from "./_prefetch_options.ts";
import { authorizedDelivery, refusal } from "./_delivery_answer.ts";
import {
  checkModuleCache,
  readCatalogHeaders,
  readFetchFunction,
  readMaxAgeMs,
  readRequestBounds,
} from "./_fetch_options.ts";
import {
  checkPackGraph,
  describePacks,
  fromCache,
  notFetched,
  type PackClosure,
  refusedPack,
  resolveListedPack,
  settleAll,
  targetsToLoad,
  toCache,
} from "./_listed_pack.ts";
import {
  type CatalogHeaders,
  type Endpoint,
  endpointOf,
  fetchFile,
  fetchFileBytes,
  type FetchFunction,
  listingTooLarge,
  mismatchDetail,
  type ModuleTarget,
  moduleTooLarge,
  readJson,
  refuseUrlCredentials,
  reloadingOnMismatch,
  verifyBody,
} from "./_remote_fetch.ts";
import {
  declaredPackages,
  executionResolution,
  type PackRequest,
  packStatus,
} from "./_pack_status.ts";
import { createMemoryModuleCache, type ModuleCache } from "./remote_catalog.ts";
import type {
  AuthorizeDeliveryOptions,
  ExecutionResolution,
  PackStatus,
  PrefetchOptions,
  ResolvedModule,
  ResolvedPack,
  SandboxModuleCatalog,
} from "./types.ts";

/** Options of {@linkcode createStagedCatalog}. */
export interface StagedCatalogOptions {
  /**
   * The staged tree's `index.json`: an http(s) URL, or a `file:` URL in
   * Deno (Node's and browsers' `fetch` read no `file:` URLs). The tree's
   * other files are read relative to it. It holds no user name or
   * password (failure messages name it): pass those in `headers`.
   */
  indexUrl: string | URL;
  /**
   * The fetch function to call. It must honour `init.signal`.
   *
   * @default {globalThis.fetch}
   */
  fetch?: FetchFunction | undefined;
  /**
   * Headers sent with every request, such as `Authorization` for a
   * private host. No redirect is followed, so they reach no other
   * address.
   *
   * @default {{}}
   */
  headers?: CatalogHeaders | undefined;
  /**
   * Where verified sources are kept by digest.
   *
   * @default {createMemoryModuleCache()}
   */
  cache?: ModuleCache | undefined;
  /**
   * How long a fetched `index.json` is used before `prefetch` revalidates
   * it with `If-None-Match`, in milliseconds. `0` revalidates on every
   * prefetch, so a newly published tree is seen by the next run.
   *
   * @default {0}
   */
  indexMaxAgeMs?: number | undefined;
  /**
   * How long one request may take, body included, in milliseconds.
   *
   * @default {30000}
   */
  fetchTimeoutMs?: number | undefined;
  /**
   * The most requests (the listing's, the modules') the catalog has in
   * flight at once; more wait for one of them, and a request's
   * `fetchTimeoutMs` starts only when it is sent. Keeps a pack of
   * thousands of modules from opening as many connections as it has
   * modules, past the host's limit of open files.
   *
   * @default {32}
   */
  maxConcurrentFetches?: number | undefined;
  /**
   * The most requests that may wait for one of the `maxConcurrentFetches`.
   * One past it is refused at once and its prefetch rejects with
   * `CATALOG_BUSY` (nothing was sent: prefetch again once others finish),
   * so prefetches started faster than the server answers cannot grow the
   * wait list, and the host's memory, without end. One prefetch of a pack
   * asks for all of its modules at once, so keep it above the modules of
   * the largest pack a run declares; the default leaves every honest
   * listing alone.
   *
   * @default {100000}
   */
  maxQueued?: number | undefined;
  /**
   * The longest `index.json` or pack index read, in bytes (16 MiB).
   *
   * @default {16777216}
   */
  maxListingBytes?: number | undefined;
  /**
   * The longest module body read, in bytes (1 MiB).
   *
   * @default {1048576}
   */
  maxModuleBytes?: number | undefined;
}

/**
 * A catalog over a staged tree. `prefetch` must settle before
 * `resolveForExecution`, which answers synchronously from what was
 * fetched and verified.
 */
export interface StagedCatalog extends SandboxModuleCatalog {
  /**
   * Fetches (or revalidates) `index.json`, then the pack index of each
   * declared pack and every module it can load, in parallel. Each pack
   * index must hash to the digest `index.json` gives and each module to
   * the digest its pack index gives, and each pack's graph digests are
   * recomputed, before anything is cached.
   *
   * @param declaration The declaration about to run.
   * @param options A signal to cancel.
   * @returns A promise that settles when every module is available.
   * @throws {CordonError} `FETCH_FAILED` when a file cannot be fetched,
   * `DIGEST_MISMATCH` when bytes or graph digests do not match (both name
   * the pack), `WEB_CRYPTO_UNAVAILABLE` in a browser page that is not a
   * secure context, which has no `crypto.subtle` to check them with,
   * `ABORTED` when cancelled.
   * @throws {TypeError} When the declaration has no `packages` array, an
   * option is unknown or the signal is not an AbortSignal.
   */
  prefetch(declaration: Declaration, options?: PrefetchOptions): Promise<void>;
}

/** A checked pack: its summary and closure. */
type LoadedPack = { summary: PackSummary; closure: PackClosure & { ok: true } };

/** An `index.json` held by the catalog, with what was loaded for it. */
interface HeldIndex {
  /** The digest of `index.json`'s bytes. */
  digest: string;
  etag: string | undefined;
  /**
   * When it was fetched, by `performance.now()`: a wall clock stepped back
   * would keep it fresh for as long as the step.
   */
  fetchedAt: number;
  entries: Map<string, StagedPackEntry>;
  /** Per pack: its pack index, fetched and checked (or under way). */
  loading: Map<string, Promise<LoadedPack>>;
  loaded: Map<string, LoadedPack>;
  resolved: Map<string, { pack: ResolvedPack; modules: ResolvedModule[] }>;
}

const STAGED_REMEDY = "point the catalog at a staged tree's index.json";

class StagedModuleCatalog implements StagedCatalog {
  #endpoint: Endpoint;
  #root: URL;
  #cache: ModuleCache;
  #indexMaxAgeMs: number;
  #held: HeldIndex | undefined;
  #sources = new Map<string, string>();

  constructor(
    endpoint: Endpoint,
    root: URL,
    cache: ModuleCache,
    indexMaxAgeMs: number,
  ) {
    this.#endpoint = endpoint;
    this.#root = root;
    this.#cache = cache;
    this.#indexMaxAgeMs = indexMaxAgeMs;
  }

  async #refreshIndex(
    names: string[],
    signal: AbortSignal | undefined,
  ): Promise<HeldIndex> {
    const held = this.#held;
    if (
      held !== undefined &&
      performance.now() - held.fetchedAt < this.#indexMaxAgeMs
    ) {
      return held;
    }
    const what = describePacks(names);
    const url = this.#endpoint.listingUrl;
    const answer = await fetchFile(this.#endpoint, url, what, {
      maxBytes: this.#endpoint.maxListingBytes,
      tooLarge: listingTooLarge(this.#endpoint),
      accept: "application/json",
      ...(held?.etag === undefined ? {} : { etag: held.etag }),
      ...(signal === undefined ? {} : { signal }),
    });
    if (answer.notModified) {
      const kept = this.#held ?? held!;
      kept.fetchedAt = performance.now();
      return kept;
    }
    // An unchanged index keeps what was checked and fetched for it, also
    // from hosts (and file URLs) that send no entity tag.
    const digest = await sha256Digest(answer.bytes);
    const current = this.#held;
    if (current !== undefined && current.digest === digest) {
      current.etag = answer.etag;
      current.fetchedAt = performance.now();
      return current;
    }
    const index = readJson(answer.bytes, StagedIndexSchema, {
      what,
      url,
      schemaName: "the staged index schema",
      remedy: STAGED_REMEDY,
    });
    return this.#hold(index, digest, answer.etag);
  }

  #hold(
    index: StagedIndex,
    digest: string,
    etag: string | undefined,
  ): HeldIndex {
    // A new publish: sources are fetched again from the cache, by digest,
    // only for the packs a declaration names.
    this.#sources.clear();
    const held: HeldIndex = {
      digest,
      etag,
      fetchedAt: performance.now(),
      entries: new Map(index.packs.map((entry) => [entry.name, entry])),
      loading: new Map(),
      loaded: new Map(),
      resolved: new Map(),
    };
    this.#held = held;
    return held;
  }

  #loadPack(
    held: HeldIndex,
    entry: StagedPackEntry,
    early: Promise<PackFile> | undefined,
    signal: AbortSignal | undefined,
  ): Promise<LoadedPack> {
    let loading = held.loading.get(entry.name);
    if (loading === undefined) {
      loading = (early ?? this.#fetchPackFile(entry.name, signal))
        .then((file) => checkPack(entry, file))
        .then((loaded) => {
          held.loaded.set(entry.name, loaded);
          return loaded;
        });
      // A failed fetch is tried again by the next prefetch.
      loading.catch(() => held.loading.delete(entry.name));
      held.loading.set(entry.name, loading);
    }
    return loading;
  }

  async #fetchPackFile(
    name: string,
    signal: AbortSignal | undefined,
  ): Promise<PackFile> {
    const url = new URL(stagedPackIndexPath(name), this.#root).href;
    const answer = await fetchFileBytes(
      this.#endpoint,
      url,
      describePacks([name]),
      {
        maxBytes: this.#endpoint.maxListingBytes,
        tooLarge: listingTooLarge(this.#endpoint),
        accept: "application/json",
        ...(signal === undefined ? {} : { signal }),
      },
    );
    return { url, bytes: answer.bytes };
  }

  /**
   * Starts fetching the pack index of each declared pack not held yet, so
   * it travels while `index.json` does: a first run then waits for two
   * round trips, as with a delivery server, not three.
   */
  #fetchEarly(
    names: string[],
    signal: AbortSignal | undefined,
  ): Map<string, Promise<PackFile>> {
    const held = this.#held;
    const early = new Map<string, Promise<PackFile>>();
    for (const name of names) {
      if (
        early.has(name) || !isPackName(name) ||
        held?.loading.has(name)
      ) {
        continue;
      }
      const fetching = this.#fetchPackFile(name, signal);
      // A pack that is not installed answers 404: nobody asks for it.
      fetching.catch(() => {});
      early.set(name, fetching);
    }
    return early;
  }

  async #loadModule(target: ModuleTarget, signal?: AbortSignal): Promise<void> {
    const cached = await fromCache(this.#cache, target.digest, signal);
    if (cached !== undefined) {
      this.#sources.set(target.digest, cached);
      return;
    }
    const url =
      new URL(stagedModulePath(target.id, target.digest), this.#root).href;
    const source = await reloadingOnMismatch(async (reload) => {
      const answer = await fetchFileBytes(
        this.#endpoint,
        url,
        `module ${operatorText(target.path)} of pack "${target.pack}"`,
        {
          maxBytes: this.#endpoint.maxModuleBytes,
          tooLarge: moduleTooLarge(this.#endpoint),
          accept: "text/javascript",
          reload,
          ...(signal === undefined ? {} : { signal }),
        },
      );
      return await verifyBody(target, answer.bytes);
    });
    this.#sources.set(target.digest, source);
    await toCache(this.#cache, target.digest, source, signal);
  }

  async prefetch(
    declaration: Declaration,
    options: PrefetchOptions = {},
  ): Promise<void> {
    const signal = readPrefetchSignal(options);
    const requests = declaredPackages(declaration);
    const names = requests.map((request) => request.name);
    const early = this.#fetchEarly(names, signal);
    try {
      const held = await this.#refreshIndex(names, signal);
      const entries = this.#wanted(held, requests);
      // Every fetch runs to its end, so the first failure in declaration
      // order is reported, whichever finished first.
      const packs = await settleAll(
        entries.map((entry) =>
          this.#loadPack(held, entry, early.get(entry.name), signal)
        ),
      );
      const targets = targetsToLoad(
        packs.map(({ summary, closure }) => ({
          summary,
          modules: closure.modules,
        })),
        this.#sources,
      );
      await settleAll(
        targets.map((target) => this.#loadModule(target, signal)),
      );
    } finally {
      // Fetches started early end before the prefetch does, used or not.
      await Promise.allSettled(early.values());
    }
  }

  #wanted(held: HeldIndex, requests: PackRequest[]): StagedPackEntry[] {
    const entries: StagedPackEntry[] = [];
    for (const request of requests) {
      const entry = held.entries.get(request.name);
      if (entry === undefined || entries.includes(entry)) continue;
      if (packStatus(request, entry).status === "ok") entries.push(entry);
    }
    return entries;
  }

  #resolvePack(
    held: HeldIndex,
    name: string,
  ): { pack: ResolvedPack; modules: ResolvedModule[] } | undefined {
    const memo = held.resolved.get(name);
    if (memo !== undefined) return memo;
    const loaded = held.loaded.get(name);
    if (loaded === undefined) return undefined;
    const resolved = resolveListedPack(
      loaded.summary,
      loaded.closure,
      this.#sources,
    );
    if (resolved !== undefined) held.resolved.set(name, resolved);
    return resolved;
  }

  resolveForExecution(declaration: Declaration): ExecutionResolution {
    const held = this.#held;
    const statuses = declaredPackages(declaration).map(
      (request): PackStatus => {
        if (held === undefined) return notFetched(request.name);
        const status = packStatus(request, held.entries.get(request.name));
        if (status.status !== "ok") return status;
        return this.#resolvePack(held, request.name) === undefined
          ? notFetched(request.name)
          : status;
      },
    );
    const installed = held === undefined ? [] : [...held.entries.keys()].sort();
    return executionResolution(
      statuses,
      (name) => held!.resolved.get(name)!,
      installed,
    );
  }

  // Answered from the sources held, so it has nothing to stop.
  authorizeDelivery(
    moduleId: string,
    _requester?: Requester,
    _options?: AuthorizeDeliveryOptions,
  ): Promise<AuthorizedDelivery | DeliveryRefusal> {
    for (const { summary } of this.#held?.loaded.values() ?? []) {
      const module = summary.modules.find((entry) => entry.id === moduleId);
      const source = module && this.#sources.get(module.digest);
      if (module === undefined || source === undefined) continue;
      return Promise.resolve(authorizedDelivery(summary, module, source));
    }
    return Promise.resolve(refusal(
      "not-found",
      "MODULE_NOT_FOUND",
      `No module with id "${moduleId}" is in the packs fetched so far: prefetch a declaration that names its pack first`,
    ));
  }

  summaries(): PackSummary[] {
    return structuredClone(
      [...this.#held?.loaded.values() ?? []].map((loaded) => loaded.summary)
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    );
  }
}

/** A pack index file as fetched. */
interface PackFile {
  url: string;
  bytes: Uint8Array<ArrayBuffer>;
}

/** Checks a pack index against `index.json` and its own graph. */
async function checkPack(
  entry: StagedPackEntry,
  file: PackFile,
): Promise<LoadedPack> {
  const actual = await sha256Digest(file.bytes);
  if (actual !== entry.indexDigest) {
    const { detail, misserved } = mismatchDetail(
      file.bytes,
      `its pack index hashes to ${actual} but the staged index gives ${entry.indexDigest}`,
    );
    throw refusedPack(entry.name, detail, !misserved);
  }
  const summary = readJson(file.bytes, StagedPackSchema, {
    what: describePacks([entry.name]),
    url: file.url,
    schemaName: "the staged pack schema",
    remedy: STAGED_REMEDY,
  });
  if (
    summary.name !== entry.name || summary.version !== entry.version ||
    summary.graphDigest !== entry.graphDigest
  ) {
    throw refusedPack(
      entry.name,
      "its pack index names another pack, version or graph digest than the staged index",
    );
  }
  const closure = await checkPackGraph(summary);
  if (!closure.ok) throw closure.error;
  return { summary, closure };
}

const STAGED_OPTION_KEYS: OptionKeys<StagedCatalogOptions> = {
  indexUrl: true,
  fetch: true,
  headers: true,
  cache: true,
  indexMaxAgeMs: true,
  fetchTimeoutMs: true,
  maxConcurrentFetches: true,
  maxQueued: true,
  maxListingBytes: true,
  maxModuleBytes: true,
};

/**
 * Creates a catalog over a staged tree, for browsers, Deno and Node. Call
 * `prefetch(declaration)` before each run (the QuickJS loader does); then
 * `resolveForExecution` answers synchronously from verified sources.
 *
 * Guarantees: a pack index is used only after its SHA-256 equals the digest
 * `index.json` gives, and a module's bytes only after their SHA-256 equals
 * the digest its pack index gives; each pack's graph digests are
 * recomputed. Nothing that fails a check is cached or run. Only the
 * declared packs' files are fetched, and no redirect is followed (a 3xx
 * answer is `FETCH_FAILED`), so no request leaves the tree. Failures have
 * the remote catalog's codes and wording (`FETCH_FAILED`,
 * `DIGEST_MISMATCH`, `WEB_CRYPTO_UNAVAILABLE`, `ABORTED`).
 *
 * A static host has no entitlement policy: anyone who reaches the tree
 * may read every module, and `authorizeDelivery` answers for the modules
 * of packs fetched so far only.
 *
 * @param options The index URL, fetch, headers, cache and bounds.
 * @returns The catalog. It holds no resources beyond memory.
 * @throws {TypeError} When `indexUrl` is not an absolute http(s) or file
 * URL without query, fragment, user name or password, `fetch` or `cache` have the wrong
 * shape, `indexMaxAgeMs` or a bound is not a number, or an option is unknown.
 * @throws {RangeError} When `indexMaxAgeMs` is not a whole number, 0 or more, a
 * bound is not a positive integer (`maxConcurrentFetches` at most 1024), or
 * `maxQueued` is not an integer from 0 to 1000000000.
 *
 * @example Run a declaration from a staged tree on a static host
 * ```ts ignore
 * import { createStagedCatalog } from "@cordon/cordon/catalog/staged";
 * import { createQuickJSLoader } from "@cordon/cordon/loader";
 *
 * const catalog = createStagedCatalog({
 *   indexUrl: "https://cdn.example.com/cordon/index.json",
 * });
 * using loader = await createQuickJSLoader({ catalog });
 * const result = await loader.run({
 *   source: 'import { greet } from "greet"; export default greet("web");',
 *   packages: ["greet"],
 * });
 * ```
 */
export function createStagedCatalog(
  given: StagedCatalogOptions,
): StagedCatalog {
  const action = "create a staged catalog";
  const what = `Cannot ${action}`;
  if (typeof given !== "object" || given === null) {
    throw new TypeError(`${what}: pass an options object with an indexUrl`);
  }
  const options = readOptions(action, given, STAGED_OPTION_KEYS);
  let indexUrl: URL;
  try {
    indexUrl = new URL(options.indexUrl);
  } catch {
    throw new TypeError(
      `${what}: indexUrl must be an absolute URL such as https://cdn.example.com/cordon/index.json`,
    );
  }
  if (
    !["http:", "https:", "file:"].includes(indexUrl.protocol) ||
    indexUrl.search !== "" || indexUrl.hash !== ""
  ) {
    throw new TypeError(
      `${what}: indexUrl must be an http, https or file URL without query or fragment`,
    );
  }
  refuseUrlCredentials(indexUrl, what, "indexUrl");
  const fetchFunction = readFetchFunction(action, options.fetch);
  const cache = checkModuleCache(
    action,
    options.cache ?? createMemoryModuleCache(),
  );
  const indexMaxAgeMs = readMaxAgeMs(
    action,
    "indexMaxAgeMs",
    options.indexMaxAgeMs,
  );
  const endpoint = endpointOf(
    { listingUrl: indexUrl.href, moduleBase: new URL(".", indexUrl).href },
    fetchFunction,
    readCatalogHeaders(action, options.headers),
    readRequestBounds(action, options),
  );
  return new StagedModuleCatalog(
    endpoint,
    new URL(".", indexUrl),
    cache,
    indexMaxAgeMs,
  );
}
