// This module is browser compatible.

/**
 * The remote catalog: a {@linkcode SandboxModuleCatalog} over a delivery
 * server, for browsers, Deno and Node. It fetches the catalog listing and
 * module bytes by id, verifies every body against its digest with
 * `crypto.subtle` before anything is cached, caches by digest, and
 * prefetches a declaration's whole module closure in parallel, because
 * QuickJS loads modules synchronously.
 *
 * @module
 */

import {
  type AuthorizedDelivery,
  type CatalogListing,
  CordonError,
  type Declaration,
  type DeliveryRefusal,
  type ErrorCode,
  ModuleIdSchema,
  type ModuleSummary,
  type OptionKeys,
  type PackSummary,
  readIntegerOption,
  readOptions,
  type RefusalReason,
  type Requester,
} from "../protocol/mod.ts";
import { settleUnlessAborted } from "../protocol/deadline.ts";
import {
  DEFAULT_DELIVERY_PREFIX,
  DELIVERY_PREFIX_RULE,
  isDeliveryPrefix,
} from "../protocol/delivery_prefix.ts";
import { ListingAges } from "./_listing_ages.ts";
import { RecentMap } from "../protocol/recent.ts";
import { readRequester, sameRequester } from "../protocol/requester.ts";
import { readDeliverySignal, readPrefetchSignal } from "./_prefetch_options.ts";
import { authorizedDelivery, refusal } from "./_delivery_answer.ts";
import {
  checkModuleCache,
  readCatalogHeaders,
  readFetchFunction,
  readMaxAgeMs,
  readRequestBounds,
} from "./_fetch_options.ts";
import { classifySpecifier } from "../policy/import_specifier.ts";
import { initScanner, scanModule } from "../policy/scan_module.ts";
import {
  checkPackGraph,
  describePacks,
  fromCache,
  notFetched,
  type PackClosure,
  resolveListedPack,
  settleAll,
  targetOf,
  targetsToLoad,
  toCache,
} from "./_listed_pack.ts";
import {
  abortedError,
  type CatalogHeaders,
  type Endpoint,
  endpointOf,
  type FetchFunction,
  fetchListing,
  fetchModule,
  type ModuleTarget,
  RefusedError,
  refuseUrlCredentials,
} from "./_remote_fetch.ts";
import {
  declaredPackages,
  executionResolution,
  type PackRequest,
  packStatus,
} from "./_pack_status.ts";

export type { CatalogHeaders, FetchFunction } from "./_remote_fetch.ts";
import type {
  AuthorizeDeliveryOptions,
  ExecutionResolution,
  PackStatus,
  PrefetchOptions,
  ResolvedModule,
  ResolvedPack,
  SandboxModuleCatalog,
} from "./types.ts";

/**
 * Where the remote catalog keeps verified module sources, by digest. Only
 * bytes that matched their digest are put; what `get` returns is hashed
 * again before use, so a store that was tampered with causes a refetch,
 * never a wrong run. A new pack version has new digests, so an upgrade is
 * a natural miss. A `get` or `put` that throws or rejects costs a refetch
 * (a miss) or a later one (a lost store), never the prefetch; one that
 * never settles (a blocked IndexedDB, or a `get` that awaits a prefetch of
 * its own catalog, which waits for it in turn) holds `prefetch` until its
 * `signal` aborts, as the loaders' run deadline does: a prefetch called
 * without a signal waits on.
 */
export interface ModuleCache {
  /**
   * Returns the source stored under a digest.
   *
   * @param digest A digest, `sha256-<base64>`.
   * @returns The source, or `undefined` when absent.
   */
  get(digest: string): string | undefined | Promise<string | undefined>;
  /**
   * Stores a verified source under its digest.
   *
   * @param digest The digest of `source`'s UTF-8 bytes.
   * @param source The source text.
   */
  put(digest: string, source: string): void | Promise<void>;
}

/** Options of {@linkcode createMemoryModuleCache}. */
export interface MemoryModuleCacheOptions {
  /**
   * The most sources kept; the least recently used go first.
   *
   * @default {1024}
   */
  maxEntries?: number | undefined;
  /**
   * The most bytes the sources kept may hold together, counted as two a
   * UTF-16 code unit (the most a JavaScript string takes); the least
   * recently used go first, and a source larger than this is not kept.
   *
   * @default {67108864} (64 MiB)
   */
  maxBytes?: number | undefined;
}

/** The default of {@linkcode MemoryModuleCacheOptions.maxBytes}. */
const DEFAULT_CACHE_MAX_BYTES = 64 * 1024 * 1024;

/**
 * Creates an in-memory {@linkcode ModuleCache}, the remote catalog's
 * default. Share one between catalogs to share fetched modules.
 *
 * @param options The caps on entries and bytes.
 * @returns A new, empty cache.
 * @throws {TypeError} When an option is unknown or `maxEntries` or
 * `maxBytes` is not a number.
 * @throws {RangeError} When `maxEntries` or `maxBytes` is not a positive
 * integer.
 *
 * @example
 * ```ts
 * import { createMemoryModuleCache } from "@cordon/cordon/catalog/remote";
 * import assert from "node:assert/strict";
 *
 * const cache = createMemoryModuleCache({ maxEntries: 1 });
 * cache.put("sha256-a", "export default 1;");
 * cache.put("sha256-b", "export default 2;");
 * assert.equal(cache.get("sha256-a"), undefined);
 * assert.equal(cache.get("sha256-b"), "export default 2;");
 * ```
 */
export function createMemoryModuleCache(
  options: MemoryModuleCacheOptions = {},
): ModuleCache {
  const where = "create a module cache";
  const read = readOptions(where, options, {
    maxEntries: true,
    maxBytes: true,
  });
  const maxEntries = readIntegerOption(
    where,
    "maxEntries",
    read.maxEntries,
    1024,
    { min: 1, max: Number.MAX_SAFE_INTEGER, unit: "entries" },
  );
  const maxBytes = readIntegerOption(
    where,
    "maxBytes",
    read.maxBytes,
    DEFAULT_CACHE_MAX_BYTES,
    { min: 1, max: Number.MAX_SAFE_INTEGER, unit: "bytes" },
  );
  const entries = new RecentMap<string, string>({
    maxEntries,
    maxBytes,
    sizeOf: (source) => source.length * 2,
  });
  return {
    get(digest: string): string | undefined {
      return entries.get(digest);
    },
    put(digest: string, source: string): void {
      entries.set(digest, source);
    },
  };
}

/** Options of {@linkcode createRemoteCatalog}. */
export interface RemoteCatalogOptions {
  /**
   * The delivery server's base URL, such as `http://127.0.0.1:8000` or
   * `location.origin`. A path is kept: the routes live under
   * `baseUrl` + `prefix`. It holds no user name or password (failure
   * messages name it): pass those in `headers`.
   */
  baseUrl: string | URL;
  /**
   * The routes' prefix on the server: the listing at `prefix`, modules at
   * `prefix/:id`. Empty, or starting with `/` and not ending with one.
   *
   * @default {"/api/sandbox-modules"}
   */
  prefix?: string | undefined;
  /**
   * The fetch function to call. It must honour `init.signal`: the
   * catalog's deadlines and cancellation reach the network through it.
   *
   * @default {globalThis.fetch}
   */
  fetch?: FetchFunction | undefined;
  /**
   * Headers sent with every request, such as `Authorization`: the server's
   * entitlement policy decides by them.
   *
   * @default {{}}
   */
  headers?: CatalogHeaders | undefined;
  /**
   * The requester `headers` (or a browser's cookies) authenticate to the
   * server, the one the catalog speaks for: `authorizeDelivery` answers a
   * call that names this requester, or none, and refuses any other with
   * `DELIVERY_FORBIDDEN` without asking the server, since the server would
   * answer for this requester, not for the one named. So runs of several
   * tenants that share one catalog (a loader or pool given `requester`, a
   * delivery handler over it with a `requester` hook) get no pack through
   * another's grant.
   *
   * @default {none: every call that names a requester is refused}
   */
  requester?: Requester | undefined;
  /**
   * Where verified sources are kept by digest.
   *
   * @default {createMemoryModuleCache()}
   */
  cache?: ModuleCache | undefined;
  /**
   * How long a fetched listing is used before `prefetch` revalidates it
   * with `If-None-Match`, in milliseconds. `0` revalidates on every
   * prefetch, so a pack upgrade on the server is seen by the next run.
   *
   * @default {0}
   */
  listingMaxAgeMs?: number | undefined;
  /**
   * Which listing `prefetch` asks for: `"declared"`, only the packs the
   * declaration names (`?packs=a,b`), so a catalog of thousands of packs
   * costs a run only what it imports; or `"full"`, every pack at once, for
   * tools that list the whole catalog with `packs()`.
   *
   * @default {"declared"}
   */
  listing?: "declared" | "full" | undefined;
  /**
   * How long one request may take, from connecting to the last byte of its
   * body, in milliseconds. A request still unfinished then is abandoned
   * and fails with `FETCH_FAILED`. Each request has its own deadline: a
   * prefetch fetches the listing, then its modules in parallel. A run's
   * `timeoutMs` also ends the prefetch it waits for.
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
   * The longest catalog listing read, in bytes (16 MiB). A longer body is
   * abandoned as soon as it is announced or streamed past the cap, and
   * fails with `FETCH_FAILED`.
   *
   * @default {16777216}
   */
  maxListingBytes?: number | undefined;
  /**
   * The longest module body read, in bytes (1 MiB, the disk catalog's
   * default cap, so it fits what a delivery server with default settings
   * serves). A longer body is abandoned as soon as it is announced or
   * streamed past the cap, and fails with `FETCH_FAILED` naming the pack;
   * nothing of it is cached.
   *
   * @default {1048576}
   */
  maxModuleBytes?: number | undefined;
  /**
   * How many packs the catalog keeps ready to run: the verified sources of
   * the last `maxHeldPacks` packs that prefetches named, least recently
   * prefetched out, so a long-lived catalog over thousands of packs holds
   * what its runs use rather than every pack it ever ran. A pack let go is
   * loaded again by the next prefetch that names it, from `cache` when it
   * still holds the sources. A prefetch never lets go the packs of a
   * prefetch still under way, its own included.
   *
   * @default {256}
   */
  maxHeldPacks?: number | undefined;
}

/**
 * A catalog over a delivery server. `prefetch` must settle before
 * `resolveForExecution`, which answers synchronously from what was
 * fetched and verified.
 */
export interface RemoteCatalog extends SandboxModuleCatalog {
  /**
   * Fetches (or revalidates) the listing, then every module the
   * declaration's packs can load, in parallel, by URLs pinned to the
   * listed digests. Each body is hashed and compared with the listing and
   * with its `Repr-Digest` header before it is cached; each pack's graph
   * digests are recomputed from the listed module digests, so a pinned
   * `graphDigest` holds for the bytes that run. Packs that are not
   * installed, or do not match their pins, are skipped:
   * `resolveForExecution` reports them.
   *
   * @param declaration The declaration about to run.
   * @param options A signal to cancel.
   * @returns A promise that settles when every module is available.
   * @throws {CordonError} `FETCH_FAILED` when the listing or a module cannot
   * be fetched, `DIGEST_MISMATCH` when bytes or graph digests do not match
   * (both name the pack), `WEB_CRYPTO_UNAVAILABLE` in a browser page that
   * is not a secure context, which has no `crypto.subtle` to check them
   * with, `ABORTED` when cancelled.
   * @throws {TypeError} When the declaration has no `packages` array, an
   * option is unknown or the signal is not an AbortSignal.
   */
  prefetch(declaration: Declaration, options?: PrefetchOptions): Promise<void>;
}

/** A listing held by the catalog, with its lookups. */
interface HeldListing {
  listing: CatalogListing;
  packs: Map<string, PackSummary>;
  modules: Map<string, { pack: PackSummary; module: ModuleSummary }>;
  /** Per pack: the graph check under way. */
  checking: Map<string, Promise<PackClosure>>;
  /** Per pack: the modules its exports reach, or why the graph is wrong. */
  closures: Map<string, PackClosure>;
  /** Per pack: the resolution built once all its sources are held. */
  resolved: Map<string, { pack: ResolvedPack; modules: ResolvedModule[] }>;
}

/** One listing request's answer, kept to revalidate it. */
interface HeldSelection {
  etag: string | undefined;
  packs: PackSummary[];
}

/** The packs whose sources a remote catalog keeps by default. */
const DEFAULT_MAX_HELD_PACKS = 256;

/** The most packs one listing request names (the server's limit). */
const MAX_LISTED_PACKS = 64;

/** The packs the guest source imports by bare specifier, read or not. */
async function importedPacks(declaration: Declaration): Promise<string[]> {
  if (typeof declaration.source !== "string") return [];
  await initScanner();
  const scan = scanModule(declaration.source, { mode: "guest" });
  if (!scan.readable) return [];
  return scan.specifiers.flatMap((specifier) => {
    const found = classifySpecifier(specifier);
    return found.kind === "bare" ? [found.pack] : [];
  });
}

/** How many listing requests keep their answer for revalidation. */
const MAX_HELD_SELECTIONS = 256;

/**
 * The packs held after a listing answer: those asked for come from the
 * answer (a pack it leaves out is no longer installed), the others stay.
 * A server that lists every pack anyway updates every pack it lists.
 */
function merge(
  held: HeldListing | undefined,
  wanted: readonly string[] | undefined,
  answer: readonly PackSummary[],
): PackSummary[] {
  if (held === undefined || wanted === undefined) return [...answer];
  const replaced = new Set([...wanted, ...answer.map((pack) => pack.name)]);
  const kept = held.listing.packs.filter((pack) => !replaced.has(pack.name));
  return [...kept, ...answer].sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0
  );
}

/** Whether an answer lists exactly the packs held for the names asked. */
function sameSelection(
  held: HeldListing,
  wanted: readonly string[] | undefined,
  answer: readonly PackSummary[],
): boolean {
  const names = wanted ?? [...held.packs.keys()];
  if (wanted === undefined && answer.length !== held.packs.size) return false;
  const listed = new Map(answer.map((pack) => [pack.name, pack]));
  if (answer.some((pack) => !names.includes(pack.name))) return false;
  return names.every((name) => {
    const mine = held.packs.get(name);
    const theirs = listed.get(name);
    if (mine === undefined || theirs === undefined) return mine === theirs;
    return mine.version === theirs.version &&
      mine.graphDigest === theirs.graphDigest &&
      JSON.stringify(mine.modules) === JSON.stringify(theirs.modules);
  });
}

/** Whether two loads ask the server for the same module, named alike. */
function sameModule(a: ModuleTarget, b: ModuleTarget): boolean {
  return a.id === b.id && a.pack === b.pack && a.path === b.path;
}

/**
 * Why `work` failed (`undefined` when it fulfilled), once it settles;
 * rejects with `ABORTED` as soon as `signal` aborts, leaving `work` to its
 * own caller.
 */
function failureWithin(
  work: Promise<void>,
  signal: AbortSignal | undefined,
): Promise<unknown> {
  const settled = work.then(() => undefined, (error: unknown) => error ?? null);
  if (signal?.aborted) return Promise.reject(abortedError(signal.reason));
  return settleUnlessAborted<unknown>(settled, signal, () => {
    throw abortedError(signal!.reason);
  });
}

/**
 * The codes a delivery server's refusal may carry, by reason. Another code
 * (a run's TIMEOUT on a 500, a 404 that claims DIGEST_MISMATCH) is the
 * server's word on something it cannot know, so it is not passed on.
 */
const REFUSAL_CODES: Readonly<Record<RefusalReason, readonly ErrorCode[]>> = {
  "not-found": ["MODULE_NOT_FOUND", "MODULE_ID_INVALID"],
  forbidden: ["DELIVERY_FORBIDDEN"],
  unavailable: ["DELIVERY_UNAVAILABLE", "PACK_FILE_CHANGED"],
};

/** The server's problem code when it fits the refusal, else FETCH_FAILED. */
function refusalCode(
  reason: RefusalReason,
  code: ErrorCode | undefined,
): ErrorCode {
  return code !== undefined && REFUSAL_CODES[reason].includes(code)
    ? code
    : "FETCH_FAILED";
}

/**
 * The refusal of a delivery whose caller stopped waiting for it: nothing
 * it fetched was kept, and asking again fetches it anew.
 */
function abortedRefusal(): DeliveryRefusal {
  return refusal(
    "unavailable",
    "ABORTED",
    "Cannot deliver the module: the caller's signal aborted the request before the server answered; ask again while the module is still wanted",
  );
}

/**
 * `If-None-Match` for a cached source: any representation the server
 * still delivers at a pinned URL is the listed digest's.
 */
const ANY_REPRESENTATION = "*";

/**
 * The failure of a prefetch whose packs other prefetches listed anew each
 * time it listed them together.
 */
function listingKeptChanging(names: string[]): CordonError {
  return new CordonError(
    "FETCH_FAILED",
    `Cannot prefetch packs ${
      names.map((name) => JSON.stringify(name)).join(", ")
    }: the server's listing of them changed each time they were listed, so no one listing held them together; run again once the packs are upgraded`,
  );
}

class RemoteModuleCatalog implements RemoteCatalog {
  #endpoint: Endpoint;
  #cache: ModuleCache;
  #fullListing: boolean;
  #held: HeldListing | undefined;
  /** When each pack name was last listed by the server. */
  #listingAges: ListingAges;
  /** The answers to recent listing requests, by their sorted pack names. */
  #selections = new RecentMap<string, HeldSelection>({
    maxEntries: MAX_HELD_SELECTIONS,
  });
  /** Verified sources of the held listing's modules, by digest. */
  #sources = new Map<string, string>();
  /**
   * Digests of the held listing's modules that the server delivered to
   * this catalog's requester, or confirmed it may have: a source in the
   * cache, which other catalogs may share, is used only for these.
   */
  #granted = new Set<string>();
  /** The entity tag last seen for each module id, and its digest. */
  #etags = new Map<string, { etag: string; digest: string }>();
  /**
   * Module loads under way, by digest, so concurrent prefetches share one,
   * with the module each asks the server for.
   */
  #loading = new Map<string, { target: ModuleTarget; done: Promise<void> }>();
  #maxHeldPacks: number;
  /** The requester the server's answers are for, when the caller named it. */
  #requester: Requester | undefined;
  /** The packs prefetches named, least recently named first. */
  #prefetched = new Set<string>();
  /** How many prefetches under way name each pack. */
  #inPrefetch = new Map<string, number>();
  /**
   * The listing answer that last listed each pack name, as listed or as
   * absent, by its serial, so a run's packs are taken from one answer: a
   * name not here was last listed by the last answer of every pack.
   */
  #listedBy = new Map<string, number>();
  #answers = 0;
  #listedAllBy = 0;

  constructor(
    endpoint: Endpoint,
    cache: ModuleCache,
    listingMaxAgeMs: number,
    fullListing: boolean,
    maxHeldPacks: number,
    requester: Requester | undefined,
  ) {
    this.#requester = requester;
    this.#endpoint = endpoint;
    this.#cache = cache;
    this.#listingAges = new ListingAges(listingMaxAgeMs);
    this.#fullListing = fullListing;
    this.#maxHeldPacks = maxHeldPacks;
  }

  /**
   * Lists the packs again unless each was listed within `listingMaxAgeMs`:
   * `names` (the ones messages name) and `also`; every pack with `every`,
   * with more names than one request may carry, or with the `"full"`
   * listing option.
   */
  async #refreshListing(
    names: string[],
    signal: AbortSignal | undefined,
    { every = false, also = [], force = false }: {
      every?: boolean;
      also?: string[];
      force?: boolean;
    } = {},
  ): Promise<HeldListing> {
    const listed = [...new Set([...names, ...also])].sort();
    const wanted =
      this.#fullListing || every || listed.length > MAX_LISTED_PACKS
        ? undefined
        : listed;
    const held = this.#held;
    if (held !== undefined && !force && this.#fresh(wanted)) return held;
    if (wanted?.length === 0) return held ?? this.#hold({ packs: [] });
    const key = wanted?.join(",") ?? "";
    // Asking marks it used, so a selection revalidated run after run stays.
    const known = this.#selections.get(key);
    const answer = await fetchListing(
      this.#endpoint,
      known?.etag,
      describePacks(names),
      signal,
      wanted,
    );
    const packs = answer.notModified ? known!.packs : answer.listing.packs;
    if (!answer.notModified) {
      this.#remember(key, { etag: answer.etag, packs });
    }
    const current = this.#held;
    const now = performance.now();
    if (wanted === undefined) {
      this.#listingAges.listedAll(packs.map((pack) => pack.name), now);
    } else this.#listingAges.listed(wanted, now);
    // An unchanged selection keeps what was checked and fetched for it.
    const kept = current !== undefined &&
        sameSelection(current, wanted, packs)
      ? current
      : this.#hold({ packs: merge(current, wanted, packs) });
    this.#listingAges.forgetStale(now, (name) => kept.packs.has(name));
    this.#noteAnswer(wanted, kept);
    return kept;
  }

  /** Records that one answer listed `wanted` (every pack when undefined). */
  #noteAnswer(wanted: readonly string[] | undefined, kept: HeldListing): void {
    const serial = ++this.#answers;
    if (wanted === undefined) {
      this.#listedAllBy = serial;
      this.#listedBy.clear();
      return;
    }
    for (const name of wanted) this.#listedBy.set(name, serial);
    // Only names held or named by a prefetch under way are worth keeping.
    for (const name of [...this.#listedBy.keys()]) {
      if (!kept.packs.has(name) && !this.#inPrefetch.has(name)) {
        this.#listedBy.delete(name);
      }
    }
  }

  /**
   * Whether one listing answer gave every pack of `names` as held now: a
   * concurrent prefetch's answer may have replaced some of them since.
   */
  #listedTogether(names: readonly string[]): boolean {
    const serials = new Set(
      names.map((name) => this.#listedBy.get(name) ?? this.#listedAllBy),
    );
    return serials.size <= 1;
  }

  /** Whether every pack asked for was listed within `listingMaxAgeMs`. */
  #fresh(wanted: readonly string[] | undefined): boolean {
    const now = performance.now();
    return wanted === undefined
      ? this.#listingAges.areAllFresh(now)
      : this.#listingAges.areFresh(wanted, now);
  }

  /** Keeps a selection's answer for revalidation, least recently used out. */
  #remember(key: string, selection: HeldSelection): void {
    if (selection.etag === undefined) {
      this.#selections.delete(key);
      return;
    }
    this.#selections.set(key, selection);
  }

  #hold(listing: CatalogListing): HeldListing {
    const packs = new Map<string, PackSummary>();
    const modules = new Map<
      string,
      { pack: PackSummary; module: ModuleSummary }
    >();
    const digests = new Set<string>();
    for (const pack of listing.packs) {
      packs.set(pack.name, pack);
      for (const module of pack.modules) {
        modules.set(module.id, { pack, module });
        digests.add(module.digest);
      }
    }
    // Keep only sources the new listing still names: an upgraded module has
    // a new digest and is fetched again.
    for (const digest of [...this.#sources.keys()]) {
      if (!digests.has(digest)) this.#sources.delete(digest);
    }
    for (const digest of [...this.#granted]) {
      if (!digests.has(digest)) this.#granted.delete(digest);
    }
    for (const [id, known] of [...this.#etags]) {
      if (modules.get(id)?.module.digest !== known.digest) {
        this.#etags.delete(id);
      }
    }
    const held: HeldListing = {
      listing,
      packs,
      modules,
      checking: new Map(),
      closures: new Map(),
      resolved: new Map(),
    };
    this.#held = held;
    return held;
  }

  #closure(held: HeldListing, pack: PackSummary): Promise<PackClosure> {
    const done = held.closures.get(pack.name);
    if (done !== undefined) return Promise.resolve(done);
    let checking = held.checking.get(pack.name);
    if (checking === undefined) {
      checking = checkPackGraph(pack).then((closure) => {
        held.closures.set(pack.name, closure);
        held.checking.delete(pack.name);
        return closure;
      });
      held.checking.set(pack.name, checking);
    }
    return checking;
  }

  async #store(
    digest: string,
    source: string,
    signal?: AbortSignal,
  ): Promise<void> {
    this.#sources.set(digest, source);
    this.#granted.add(digest);
    await toCache(this.#cache, digest, source, signal);
  }

  /**
   * Loads a module, or joins the load of the same digest another prefetch
   * started, so runs that start together fetch each module once.
   */
  #load(target: ModuleTarget, signal?: AbortSignal): Promise<void> {
    const pending = this.#loading.get(target.digest);
    if (pending !== undefined) return this.#join(pending, target, signal);
    const done = this.#loadOnce(target, signal).finally(() => {
      if (this.#loading.get(target.digest)?.done === done) {
        this.#loading.delete(target.digest);
      }
    });
    this.#loading.set(target.digest, { target, done });
    return done;
  }

  /**
   * Waits for another prefetch's load, within this caller's signal. The
   * server's failure is every waiter's that asks for the same module, so
   * it is not asked again; a load its own caller aborted, one of another
   * module with the same bytes (another pack, or another version whose id
   * the server may have dropped; its error names that module) or a source
   * gone since is loaded again, once for all the waiters that were joined
   * to it: each loading it alone sent the server as many requests as
   * prefetches waited.
   */
  async #join(
    pending: { target: ModuleTarget; done: Promise<void> },
    target: ModuleTarget,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const failure = await failureWithin(pending.done, signal);
    if (failure === undefined && this.#sources.has(target.digest)) return;
    const shared = failure instanceof CordonError &&
      failure.code !== "ABORTED" && sameModule(pending.target, target);
    if (shared) throw failure;
    await this.#load(target, signal);
  }

  /**
   * Loads a module from the cache or the server. A cached source this
   * catalog's requester was not granted yet (another catalog's, sharing
   * the cache, or one kept across page loads) is used once the server
   * answers its pinned URL with 304 to `If-None-Match: *`, which it does
   * only after its entitlement policy allowed this requester: the bytes
   * come only with the permission, and without a body.
   */
  async #loadOnce(target: ModuleTarget, signal?: AbortSignal): Promise<void> {
    const cached = await fromCache(this.#cache, target.digest, signal);
    if (cached !== undefined && this.#granted.has(target.digest)) {
      this.#sources.set(target.digest, cached);
      return;
    }
    const verified = await fetchModule(this.#endpoint, target, {
      pinned: true,
      signal,
      ...(cached === undefined ? {} : { etag: ANY_REPRESENTATION }),
    });
    if (verified === undefined) {
      this.#granted.add(target.digest);
      this.#sources.set(target.digest, cached!);
      return;
    }
    await this.#store(target.digest, verified.source, signal);
    if (verified.etag !== undefined) {
      this.#etags.set(target.id, {
        etag: verified.etag,
        digest: target.digest,
      });
    }
  }

  async prefetch(
    declaration: Declaration,
    options: PrefetchOptions = {},
  ): Promise<void> {
    const signal = readPrefetchSignal(options);
    const requests = declaredPackages(declaration);
    const names = requests.map((request) => request.name);
    this.#pin(names, 1);
    try {
      // Packs the guest imports without declaring them are listed too, so
      // an undeclared import is told apart from a missing pack as on disk.
      const also = await importedPacks(declaration);
      let held = await this.#refreshListing(names, signal, { also });
      await this.#prefetchFrom(held, requests, signal);
      // A concurrent prefetch may have brought a newer listing meanwhile:
      // make its modules available too, as resolveForExecution reads it.
      // Where that listing named only some of this run's packs (or they
      // were taken from answers of other times, each still fresh), they
      // are listed again together, so the run never gets a pack of one
      // release beside one of another.
      for (let round = 0; round < 3; round++) {
        const together = this.#listedTogether(names);
        if (together && this.#held === held) break;
        held = together
          ? this.#held!
          : await this.#refreshListing(names, signal, { also, force: true });
        await this.#prefetchFrom(held, requests, signal);
      }
      if (!this.#listedTogether(names)) throw listingKeptChanging(names);
    } finally {
      // While this prefetch's packs are still pinned, so that its run finds
      // them however many packs it names; and when it failed too, as it
      // may have loaded some of them.
      this.#letGo();
      this.#pin(names, -1);
    }
  }

  /** Counts the prefetches naming `names`, which become the newest. */
  #pin(names: readonly string[], delta: 1 | -1): void {
    for (const name of new Set(names)) {
      const count = (this.#inPrefetch.get(name) ?? 0) + delta;
      if (count === 0) this.#inPrefetch.delete(name);
      else this.#inPrefetch.set(name, count);
      if (delta === 1) {
        this.#prefetched.delete(name);
        this.#prefetched.add(name);
      }
    }
  }

  /**
   * Drops the sources of the packs least recently prefetched beyond
   * maxHeldPacks, but those of prefetches under way; a source another
   * kept pack lists stays.
   */
  #letGo(): void {
    let excess = this.#prefetched.size - this.#maxHeldPacks;
    if (excess <= 0) return;
    const dropped = new Set<string>();
    for (const name of this.#prefetched) {
      if (excess === 0) break;
      if (this.#inPrefetch.has(name)) continue;
      dropped.add(name);
      excess--;
    }
    if (dropped.size === 0) return;
    for (const name of dropped) this.#prefetched.delete(name);
    const held = this.#held;
    const kept = new Set<string>();
    for (const name of this.#prefetched) {
      for (const module of held?.packs.get(name)?.modules ?? []) {
        kept.add(module.digest);
      }
    }
    for (const digest of [...this.#sources.keys()]) {
      if (!kept.has(digest)) this.#sources.delete(digest);
    }
    for (const name of dropped) held?.resolved.delete(name);
  }

  async #prefetchFrom(
    held: HeldListing,
    requests: PackRequest[],
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const packs: PackSummary[] = [];
    for (const request of requests) {
      const summary = held.packs.get(request.name);
      if (summary === undefined || packs.includes(summary)) continue;
      // A pack resolved from this listing had every source, and keeps
      // them until it is let go: a run does not walk its modules again.
      if (held.resolved.has(request.name)) continue;
      if (packStatus(request, summary).status === "ok") packs.push(summary);
    }
    const closures = await Promise.all(
      packs.map((pack) => this.#closure(held, pack)),
    );
    const checked = closures.map((closure, i) => {
      if (!closure.ok) throw closure.error;
      return { summary: packs[i]!, modules: closure.modules };
    });
    const targets = targetsToLoad(checked, this.#sources);
    if (targets.length === 0) return;
    // Every fetch runs to its end, so the first failure in declaration
    // order is reported, whichever finished first.
    await settleAll(targets.map((target) => this.#load(target, signal)));
  }

  #resolvePack(
    held: HeldListing,
    summary: PackSummary,
  ): { pack: ResolvedPack; modules: ResolvedModule[] } | undefined {
    const memo = held.resolved.get(summary.name);
    if (memo !== undefined) return memo;
    // The graph was checked during prefetch.
    const settled = held.closures.get(summary.name);
    if (settled === undefined || !settled.ok) return undefined;
    const resolved = resolveListedPack(summary, settled, this.#sources);
    if (resolved === undefined) return undefined;
    held.resolved.set(summary.name, resolved);
    return resolved;
  }

  resolveForExecution(declaration: Declaration): ExecutionResolution {
    const held = this.#held;
    const requests = declaredPackages(declaration);
    const statuses = requests.map((request): PackStatus => {
      if (held === undefined) return notFetched(request.name);
      const summary = held.packs.get(request.name);
      const status = packStatus(request, summary);
      if (status.status !== "ok") return status;
      return this.#resolvePack(held, summary!) === undefined
        ? notFetched(request.name)
        : status;
    });
    const installed = held === undefined ? [] : [...held.packs.keys()].sort();
    return executionResolution(
      statuses,
      (name) => held!.resolved.get(name)!,
      installed,
    );
  }

  async authorizeDelivery(
    moduleId: string,
    requester?: Requester,
    options?: AuthorizeDeliveryOptions,
  ): Promise<AuthorizedDelivery | DeliveryRefusal> {
    const signal = readDeliverySignal(options);
    if (signal?.aborted) return abortedRefusal();
    if (!ModuleIdSchema.safeParse(moduleId).success) {
      return refusal(
        "not-found",
        "MODULE_ID_INVALID",
        "Cannot deliver the module: its id is malformed; use an id exactly as the catalog listed it",
      );
    }
    if (!this.#speaksFor(requester)) {
      return refusal(
        "forbidden",
        "DELIVERY_FORBIDDEN",
        `Cannot deliver module "${moduleId}" to this requester: a remote catalog answers only for the requester its headers authenticate, named by its requester option; create a remote catalog for each requester, with its own headers and requester`,
      );
    }
    let held: HeldListing;
    try {
      // A module of a pack held is listed again with its pack alone; an
      // unknown id can only be found in the whole listing.
      const known = this.#held?.modules.get(moduleId);
      held = await this.#refreshListing(
        known === undefined ? [] : [known.pack.name],
        signal,
        { every: known === undefined },
      );
    } catch (error) {
      if (signal?.aborted) return abortedRefusal();
      const { code, message } = error as CordonError;
      return refusal("unavailable", code, message);
    }
    const entry = held.modules.get(moduleId);
    if (entry === undefined) {
      return refusal(
        "not-found",
        "MODULE_NOT_FOUND",
        `No module with id "${moduleId}" is in the catalog listing: list the catalog again; the pack may have been upgraded or removed`,
      );
    }
    const { pack, module } = entry;
    const target = targetOf(pack, module);
    const known = this.#etags.get(module.id);
    const heldSource = this.#sources.get(module.digest) ??
      await this.#fromCacheWithin(module.digest, signal);
    if (signal?.aborted) return abortedRefusal();
    const etag = known !== undefined && known.digest === module.digest &&
        heldSource !== undefined
      ? known.etag
      : undefined;
    let source: string;
    try {
      const verified = await fetchModule(this.#endpoint, target, {
        pinned: false,
        etag,
        signal,
      });
      if (verified === undefined) {
        source = heldSource!;
      } else {
        source = verified.source;
        if (verified.etag !== undefined) {
          this.#etags.set(module.id, {
            etag: verified.etag,
            digest: module.digest,
          });
        }
      }
    } catch (error) {
      if (signal?.aborted) return abortedRefusal();
      if (error instanceof RefusedError) {
        const { status, code } = error.refusal;
        const reason: RefusalReason = status === 404
          ? "not-found"
          : status === 403
          ? "forbidden"
          : "unavailable";
        return refusal(reason, refusalCode(reason, code), error.message);
      }
      if (error instanceof CordonError) {
        return refusal("unavailable", error.code, error.message);
      }
      throw error;
    }
    if (this.#held === held) {
      await this.#store(module.digest, source, this.#cacheDeadline())
        .catch(() => {});
    }
    return authorizedDelivery(pack, module, source);
  }

  /**
   * Whether the server's answers to this catalog are for `requester`: a
   * call that names none asks for the catalog's own requester. One whose
   * ids cannot be read is no one the catalog speaks for.
   */
  #speaksFor(requester: Requester | undefined): boolean {
    if (requester === undefined) return true;
    const own = this.#requester;
    if (own === undefined) return false;
    try {
      return sameRequester(own, readRequester("deliver a module", requester)!);
    } catch {
      return false;
    }
  }

  /**
   * What the cache holds for `digest`, waited for no longer than a fetch
   * nor past the caller's signal: a cache that never answers (a blocked
   * IndexedDB) counts as a miss.
   */
  #fromCacheWithin(
    digest: string,
    signal: AbortSignal | undefined,
  ): Promise<string | undefined> {
    const deadline = this.#cacheDeadline();
    const until = signal === undefined
      ? deadline
      : AbortSignal.any([signal, deadline]);
    return fromCache(this.#cache, digest, until).catch(() => undefined);
  }

  #cacheDeadline(): AbortSignal {
    return AbortSignal.timeout(this.#endpoint.fetchTimeoutMs);
  }

  summaries(): PackSummary[] {
    return structuredClone(this.#held?.listing.packs ?? []);
  }
}

const REMOTE_OPTION_KEYS: OptionKeys<RemoteCatalogOptions> = {
  baseUrl: true,
  prefix: true,
  fetch: true,
  headers: true,
  requester: true,
  cache: true,
  listingMaxAgeMs: true,
  listing: true,
  fetchTimeoutMs: true,
  maxConcurrentFetches: true,
  maxQueued: true,
  maxListingBytes: true,
  maxModuleBytes: true,
  maxHeldPacks: true,
};

/**
 * Creates a catalog over a delivery server, for browsers, Deno and Node.
 * Call `prefetch(declaration)` before each run (the QuickJS loader does); then
 * `resolveForExecution` answers synchronously from verified sources.
 *
 * Guarantees: a module's bytes are used only after their SHA-256, computed
 * here with `crypto.subtle`, equals both the digest in the catalog listing
 * and the response's `Repr-Digest`; bytes that do not match are never
 * cached. Sources are cached by digest, so a pack upgrade (new digests) is
 * a miss and an unchanged module is never fetched twice; a cached source
 * this catalog did not fetch itself (the cache may be shared with other
 * catalogs, or kept across page loads) is used once the server grants it
 * to this catalog's requester, by one conditional request answered 304
 * without a body. The listing is revalidated with `If-None-Match`.
 *
 * Bounds: each request must finish, body included, within
 * `fetchTimeoutMs`, and bodies are read only up to `maxListingBytes`,
 * `maxModuleBytes` or 16 KiB for a problem+json error; past a bound the
 * request is abandoned and fails with `FETCH_FAILED`. At most 32 requests
 * of a catalog are in flight at once; the others wait their turn, and
 * their deadlines start when they are sent. The sources held for runs are
 * those of the last `maxHeldPacks` packs that prefetches named.
 *
 * The catalog speaks for one requester, the one its `headers`
 * authenticate, which the `requester` option names: the server's
 * entitlement policy decides for it, and `authorizeDelivery` refuses a
 * call that names another requester with `DELIVERY_FORBIDDEN`. Its `signal` ends the listing
 * and module requests it sends, and it then answers an `unavailable`
 * refusal with the code `ABORTED`, keeping nothing of what it had not
 * fetched and verified in full.
 *
 * @param options The server's base URL and prefix, fetch, headers, cache
 * and bounds.
 * @returns The catalog. It holds no resources beyond memory.
 * @throws {TypeError} When `baseUrl` is not an absolute http(s) URL
 * without query, fragment, user name or password, `prefix` is malformed, `fetch` or `cache`
 * have the wrong shape, `listingMaxAgeMs` or a bound is not a number, or an option is unknown.
 * @throws {RangeError} When `listingMaxAgeMs` is not a whole number, 0 or more,
 * `fetchTimeoutMs`, `maxListingBytes`, `maxModuleBytes`,
 * `maxConcurrentFetches` or `maxHeldPacks` is not a positive integer
 * (`fetchTimeoutMs` at most 2147483647, `maxConcurrentFetches` at most
 * 1024), or `maxQueued` is not an integer from 0 to 1000000000.
 *
 * @example Run a declaration through a delivery server
 * ```ts ignore
 * import { createRemoteCatalog } from "@cordon/cordon/catalog/remote";
 *
 * const catalog = createRemoteCatalog({ baseUrl: "http://127.0.0.1:8000" });
 * const declaration = {
 *   source: 'import { add } from "@cordon/math"; export default add(1, 2);',
 *   packages: ["@cordon/math"],
 * };
 * await catalog.prefetch(declaration);
 * const { statuses } = catalog.resolveForExecution(declaration);
 * console.log(statuses[0]?.status); // "ok"
 * ```
 */
export function createRemoteCatalog(
  given: RemoteCatalogOptions,
): RemoteCatalog {
  if (typeof given !== "object" || given === null) {
    throw new TypeError(
      "Cannot create a remote catalog: pass an options object with a baseUrl",
    );
  }
  const options = readOptions(
    "create a remote catalog",
    given,
    REMOTE_OPTION_KEYS,
  );
  let base: URL;
  try {
    base = new URL(options.baseUrl);
  } catch {
    throw new TypeError(
      "Cannot create a remote catalog: baseUrl must be an absolute URL such as http://127.0.0.1:8000",
    );
  }
  if (
    (base.protocol !== "http:" && base.protocol !== "https:") ||
    base.search !== "" || base.hash !== ""
  ) {
    throw new TypeError(
      "Cannot create a remote catalog: baseUrl must be an http or https URL without query or fragment",
    );
  }
  refuseUrlCredentials(base, "Cannot create a remote catalog", "baseUrl");
  const prefix = options.prefix ?? DEFAULT_DELIVERY_PREFIX;
  if (!isDeliveryPrefix(prefix)) {
    throw new TypeError(
      `Cannot create a remote catalog: ${DELIVERY_PREFIX_RULE}`,
    );
  }
  const action = "create a remote catalog";
  const fetchFunction = readFetchFunction(action, options.fetch);
  const cache = checkModuleCache(
    action,
    options.cache ?? createMemoryModuleCache(),
  );
  const listingMaxAgeMs = readMaxAgeMs(
    action,
    "listingMaxAgeMs",
    options.listingMaxAgeMs,
  );
  const bounds = readRequestBounds(action, options);
  const root = `${base.origin}${base.pathname.replace(/\/+$/, "")}`;
  const moduleBase = `${root}${prefix}`;
  const endpoint = endpointOf(
    {
      listingUrl: moduleBase === base.origin ? `${moduleBase}/` : moduleBase,
      moduleBase,
    },
    fetchFunction,
    readCatalogHeaders(action, options.headers),
    bounds,
  );
  const listing = options.listing ?? "declared";
  if (listing !== "declared" && listing !== "full") {
    throw new TypeError(
      'Cannot create a remote catalog: listing must be "declared" or "full"',
    );
  }
  const maxHeldPacks = readIntegerOption(
    action,
    "maxHeldPacks",
    options.maxHeldPacks,
    DEFAULT_MAX_HELD_PACKS,
    { min: 1, max: Number.MAX_SAFE_INTEGER, unit: "packs" },
  );
  return new RemoteModuleCatalog(
    endpoint,
    cache,
    listingMaxAgeMs,
    listing === "full",
    maxHeldPacks,
    readRequester(action, options.requester),
  );
}
