// This module is browser compatible.

import type {
  AuthorizedDelivery,
  Declaration,
  DeliveryRefusal,
  PackRef,
  PackSummary,
  Requester,
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
    /** The stable error code. */
    code: string;
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
   * status.
   */
  resolveForExecution(declaration: Declaration): ExecutionResolution;
  /**
   * Authorizes and retrieves one module in one call: the bytes come only
   * with the permission.
   */
  authorizeDelivery(
    moduleId: string,
    requester?: Requester,
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
  signal?: AbortSignal;
}

/**
 * Decides whether a requester may have a pack's modules. Returning `false`
 * refuses delivery with `DELIVERY_FORBIDDEN`.
 */
export type EntitlementPolicy = (
  pack: PackRef,
  requester: Requester,
) => boolean | Promise<boolean>;
