// This module is browser compatible.

import type {
  AuthorizedDelivery,
  Declaration,
  DeliveryRefusal,
  PackRef,
  PackSummary,
  Requester,
  WireErrorCode,
} from "../protocol/mod.ts";

/** One module's bytes and digests, ready to load. */
export interface ResolvedModule {
  /** The module's opaque id. */
  id: string;
  /** The pack it belongs to. */
  pack: PackRef;
  /** Its file inside the pack, such as `./lib/round.js`. */
  path: string;
  /** Its source text. */
  source: string;
  /** SHA-256 of its UTF-8 bytes, `sha256-<base64>`. */
  digest: string;
  /** Digest over it and its dependency closure. */
  graphDigest: string;
  /** Ids of the modules it imports directly. */
  dependencyIds: string[];
}

/** A declared pack that resolved: its exported subpaths and files by id. */
export interface ResolvedPack {
  /** The pack name. */
  name: string;
  /** The installed version. */
  version: string;
  /** Digest over every exported module's graph digest. */
  graphDigest: string;
  /** Exported subpath (`.`, `./trig`) to module id. */
  exports: Record<string, string>;
  /** Every file of the pack (`./lib/round.js`) to module id. */
  files: Record<string, string>;
}

/** How one declared pack resolved. */
export type PackStatus =
  | { name: string; status: "ok"; version: string; graphDigest: string }
  | {
    name: string;
    status:
      | "not-installed"
      | "version-mismatch"
      | "digest-mismatch"
      | "unavailable";
    /**
     * The stable error code: one of `ErrorCode`, or, from
     * another version of cordon (a remote catalog's server), one this
     * version does not know.
     */
    code: WireErrorCode;
    /** What is wrong and what to do. */
    message: string;
  };

/** What a declaration may load, resolved before its run. */
export interface ExecutionResolution {
  /** One status per declared pack, in declaration order. */
  statuses: PackStatus[];
  /** The declared packs that resolved, by name. */
  packs: Record<string, ResolvedPack>;
  /** Every module of the resolved packs, by id. */
  modules: Record<string, ResolvedModule>;
  /**
   * Names of installed packs, declared or not, to tell "undeclared" apart.
   * Shared between runs, and frozen where the catalog can share it.
   */
  installed: readonly string[];
}

/**
 * The catalog every loader and delivery handler talks to: the on-disk
 * catalog on a server, the remote catalog in a browser.
 */
export interface SandboxModuleCatalog {
  /**
   * Resolves a declaration's packages synchronously, because QuickJS loads
   * modules synchronously. Never throws for unknown packs: they get a
   * status. The loaders fail a run with `CATALOG_FAILED` when it throws or
   * answers a promise (a method written `async`): a catalog that must wait
   * does so in `prefetch`.
   */
  resolveForExecution(declaration: Declaration): ExecutionResolution;
  /**
   * Authorizes and retrieves one module in one call: the bytes come only
   * with the permission. `options.signal` aborts once the caller stops
   * waiting for the answer; work still under way for it (a query, a
   * fetch) should stop then.
   */
  authorizeDelivery(
    moduleId: string,
    requester?: Requester,
    options?: AuthorizeDeliveryOptions,
  ): Promise<AuthorizedDelivery | DeliveryRefusal>;
  /** Lists the installed packs and their modules. */
  summaries(): PackSummary[];
  /**
   * Makes every module a declaration may load available synchronously.
   * Catalogs that fetch (the remote catalog) implement it; loaders call it,
   * when present, before `resolveForExecution`.
   */
  prefetch?(declaration: Declaration, options?: PrefetchOptions): Promise<void>;
}

/** Options of {@linkcode SandboxModuleCatalog.prefetch}. */
export interface PrefetchOptions {
  /**
   * Cancels the prefetch. The loaders abort it at the run's deadline or the
   * caller's abort, and stop waiting for the prefetch then, whether it
   * settles or not.
   */
  signal?: AbortSignal | undefined;
}

/**
 * Options of {@linkcode SandboxModuleCatalog.authorizeDelivery}. A catalog
 * that answers from memory may ignore them; the disk catalog hands the
 * signal to its {@linkcode EntitlementPolicy}.
 *
 * @example A catalog over a service stops its call when nobody waits
 * ```ts
 * import type { AuthorizeDeliveryOptions } from "@cordon/cordon/catalog";
 * import assert from "node:assert/strict";
 *
 * async function askEntitlements(
 *   moduleId: string,
 *   { signal }: AuthorizeDeliveryOptions = {},
 * ): Promise<boolean> {
 *   // A real catalog passes the signal on: fetch(url, { signal }).
 *   const { promise, resolve, reject } = Promise.withResolvers<boolean>();
 *   const stop = () => reject(signal?.reason);
 *   signal?.addEventListener("abort", stop, { once: true });
 *   if (moduleId === "known") resolve(true);
 *   try {
 *     return await promise;
 *   } finally {
 *     signal?.removeEventListener("abort", stop);
 *   }
 * }
 *
 * const controller = new AbortController();
 * const asked = askEntitlements("slow", { signal: controller.signal });
 * controller.abort(new DOMException("The caller left", "AbortError"));
 * await assert.rejects(asked, { name: "AbortError" });
 * ```
 */
export interface AuthorizeDeliveryOptions {
  /**
   * Aborts once the caller stops waiting for the answer, with the reason
   * as the signal's `reason`: the delivery handler at `catalogTimeoutMs`
   * (a `TimeoutError`), when the request's client goes (the request's
   * own abort reason), and is already aborted (an `AbortError`) when
   * first read after it answered the request; the QuickJS loader and
   * pool at the run's deadline or the caller's abort. The caller has then
   * stopped waiting, whether the call settles or not, so an implementation
   * should stop its work (pass the signal on to its `fetch` or database
   * query) and may settle however it likes. Its abort listeners run in the
   * caller's turn and must not throw: Deno ends the process for an error a
   * listener throws, as it does for any event listener.
   */
  signal?: AbortSignal | undefined;
}

/**
 * Decides whether a requester may have a pack's modules. Only `true`, or
 * a promise or other thenable that fulfils with `true` (its first answer
 * counts, as `await` reads it), allows; any other answer, a truthy string
 * included, refuses delivery with `DELIVERY_FORBIDDEN`, and a throw or a
 * rejection with `DELIVERY_UNAVAILABLE`. A policy that waits (a
 * database, an entitlement service) should stop its work when
 * `options.signal` aborts: nobody reads its answer any more. The disk
 * catalog, the delivery handler and the loaders hand it a copy of the
 * requester with a `null` prototype holding only the ids given, so a key
 * a dependency added to `Object.prototype` names no tenant or principal.
 *
 * @example A policy over a service passes the signal on
 * ```ts
 * import type { EntitlementPolicy } from "@cordon/cordon/catalog";
 * import assert from "node:assert/strict";
 *
 * const grants = new Map([["t1", ["greet"]]]);
 * // A real policy passes the signal on: fetch(url, { signal: signal ?? null }).
 * const entitlement: EntitlementPolicy = async (
 *   pack,
 *   requester,
 *   { signal } = {},
 * ) => {
 *   signal?.throwIfAborted();
 *   await Promise.resolve();
 *   return grants.get(requester.tenantId ?? "")?.includes(pack.name) ===
 *     true;
 * };
 *
 * const pack = { name: "greet", version: "1.0.0" };
 * assert.equal(await entitlement(pack, { tenantId: "t1" }), true);
 * const left = new AbortController();
 * left.abort(new DOMException("The caller left", "AbortError"));
 * await assert.rejects(
 *   async () =>
 *     await entitlement(pack, { tenantId: "t1" }, { signal: left.signal }),
 *   { name: "AbortError" },
 * );
 * ```
 */
export type EntitlementPolicy = (
  pack: PackRef,
  requester: Requester,
  options?: EntitlementOptions,
) => boolean | Promise<boolean>;

/**
 * What an {@linkcode EntitlementPolicy} is told besides the pack and the
 * requester. The disk catalog always passes this object; a policy that
 * takes two arguments ignores it.
 *
 * @example A policy that waits reads the signal only when it must wait
 * ```ts
 * import type { EntitlementOptions } from "@cordon/cordon/catalog";
 * import type { PackRef } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const cached = new Map([["greet", true]]);
 * async function entitled(
 *   pack: PackRef,
 *   options: EntitlementOptions = {},
 * ): Promise<boolean> {
 *   const known = cached.get(pack.name);
 *   if (known !== undefined) return known;
 *   // A real policy asks its service: fetch(url, { signal: options.signal }).
 *   options.signal?.throwIfAborted();
 *   return false;
 * }
 *
 * assert.equal(await entitled({ name: "greet", version: "1.0.0" }), true);
 * ```
 */
export interface EntitlementOptions {
  /**
   * Aborts once the caller stops waiting for the policy's answer, with
   * the reason as its `reason`, as {@linkcode AuthorizeDeliveryOptions}'
   * `signal` does: the signal given to `authorizeDelivery` (the QuickJS
   * loader's and pool's run deadline or their caller's abort), or the
   * delivery handler's `catalogTimeoutMs` or its client leaving (a signal
   * first read after its answer is already aborted). `undefined` when the
   * catalog was asked without one. The
   * delivery handler creates its signal when this property is first read,
   * so a policy that answers at once should not read it.
   */
  readonly signal?: AbortSignal;
}
