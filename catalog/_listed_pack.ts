// This module is browser compatible.

/**
 * What the remote and the staged catalog share about packs a listing names:
 * the graph check that makes a pinned graph digest hold for the bytes that
 * run, the resolution built from verified sources, their bounds and the
 * wording of their messages, so both fail word for word alike.
 *
 * @module
 */

import { operatorText } from "../protocol/operator_text.ts";
import {
  CordonError,
  type ModuleSummary,
  type PackSummary,
} from "../protocol/mod.ts";
import { sha256Digest } from "./digest.ts";
import { moduleGraphDigest, packGraphDigest } from "./graph.ts";
import { boundedClosures, MAX_CLOSURE_STEPS } from "./_closures.ts";
import {
  abortedError,
  type ModuleTarget,
  refusalEnding,
} from "./_remote_fetch.ts";
import { settleUnlessAborted } from "../protocol/deadline.ts";
import type { PackStatus, ResolvedModule, ResolvedPack } from "./types.ts";

export const DEFAULT_FETCH_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_LISTING_BYTES = 16 * 1024 * 1024;
export const DEFAULT_MAX_MODULE_BYTES = 1024 * 1024;

/** A pack's modules and exports, once its graph digests were checked. */
export type PackClosure =
  | { ok: true; modules: ModuleSummary[]; exports: Record<string, string> }
  | { ok: false; error: CordonError; detail: string };

export function describePacks(names: string[]): string {
  if (names.length === 0) return "the catalog listing";
  const shown = names.slice(0, 3).map((name) => `"${name}"`).join(", ");
  const more = names.length > 3 ? ` and ${names.length - 3} more` : "";
  return `the catalog listing for pack ${shown}${more}`;
}

export function notFetched(name: string): PackStatus {
  return {
    name,
    status: "unavailable",
    code: "FETCH_FAILED",
    message:
      `Pack "${name}" has not been fetched: await catalog.prefetch(declaration) before the run`,
  };
}

/**
 * The error of a pack whose listing or index does not add up; `distrust`
 * false when `detail` names what a misconfigured host sent instead.
 */
export function refusedPack(
  name: string,
  detail: string,
  distrust = true,
): CordonError {
  return new CordonError(
    "DIGEST_MISMATCH",
    `Refusing pack "${name}": ${detail}; ${refusalEnding("pack", distrust)}`,
  );
}

function graphError(name: string, detail: string): PackClosure {
  return { ok: false, error: refusedPack(name, detail), detail };
}

/**
 * Recomputes every graph digest of a pack from the listed module digests
 * (which fetched bytes are checked against) and its listed dependencies, so
 * a pinned `graphDigest` holds for the bytes that run. A pack whose listing
 * does not add up is refused.
 */
export async function checkPackGraph(pack: PackSummary): Promise<PackClosure> {
  const byId = new Map(pack.modules.map((module) => [module.id, module]));
  if (byId.size !== pack.modules.length) {
    return graphError(pack.name, "the listing names a module id twice");
  }
  const exports: Record<string, string> = {};
  for (const module of pack.modules) {
    for (const subpath of module.exportedAs) {
      if (Object.hasOwn(exports, subpath)) {
        return graphError(
          pack.name,
          `the listing exports ${operatorText(subpath)} twice`,
        );
      }
      exports[subpath] = module.id;
    }
  }
  for (const module of pack.modules) {
    if (module.dependencyIds.some((id) => !byId.has(id))) {
      return graphError(
        pack.name,
        `the listing gives ${
          operatorText(module.path)
        } a dependency outside the pack`,
      );
    }
  }
  const closures = boundedClosures(
    pack.modules,
    (module) => module.dependencyIds.map((id) => byId.get(id)!),
  );
  if (closures === undefined) {
    const detail =
      `its modules import each other through more than ${MAX_CLOSURE_STEPS} links, more than any catalog follows`;
    return {
      ok: false,
      error: new CordonError(
        "PACK_GRAPH_TOO_LARGE",
        `Refusing pack "${pack.name}": ${detail}; the pack was not cached or run`,
      ),
      detail,
    };
  }
  const digests = await Promise.all(
    pack.modules.map((module, i) => moduleGraphDigest(module, closures[i]!)),
  );
  for (const [i, module] of pack.modules.entries()) {
    if (digests[i] !== module.graphDigest) {
      return graphError(
        pack.name,
        `the listed graph digest of ${
          operatorText(module.path)
        } does not match the digests of its dependencies`,
      );
    }
  }
  const exportDigests = Object.fromEntries(
    Object.entries(exports).map((
      [subpath, id],
    ) => [subpath, byId.get(id)!.graphDigest]),
  );
  if (await packGraphDigest(exportDigests) !== pack.graphDigest) {
    return graphError(
      pack.name,
      "its listed graph digest does not match the graph digests of its exports",
    );
  }
  return { ok: true, modules: pack.modules, exports };
}

/**
 * A checked pack's resolution from the verified sources held by digest, or
 * `undefined` while any of its sources is missing.
 */
export function resolveListedPack(
  summary: PackSummary,
  closure: PackClosure & { ok: true },
  sources: ReadonlyMap<string, string>,
): { pack: ResolvedPack; modules: ResolvedModule[] } | undefined {
  const modules: ResolvedModule[] = [];
  const files: Record<string, string> = {};
  for (const module of closure.modules) {
    const source = sources.get(module.digest);
    if (source === undefined) return undefined;
    files[module.path] = module.id;
    modules.push(Object.freeze({
      id: module.id,
      pack: Object.freeze({ name: summary.name, version: summary.version }),
      path: module.path,
      source,
      digest: module.digest,
      graphDigest: module.graphDigest,
      dependencyIds: Object.freeze([...module.dependencyIds]) as string[],
    }));
  }
  return {
    pack: Object.freeze({
      name: summary.name,
      version: summary.version,
      graphDigest: summary.graphDigest,
      exports: Object.freeze({ ...closure.exports }),
      files: Object.freeze(files),
    }),
    modules,
  };
}

/** Where a catalog keeps verified sources by digest (a `ModuleCache`). */
export interface SourceCache {
  get(digest: string): string | undefined | Promise<string | undefined>;
  put(digest: string, source: string): void | Promise<void>;
}

/**
 * The source a cache holds for `digest`, when it still hashes to that
 * digest: a cache is storage, not a witness. A cache that fails is a miss;
 * one that never answers (a blocked IndexedDB) is waited for only until
 * `signal` aborts.
 *
 * @throws {CordonError} `ABORTED` when `signal` aborts first.
 */
export async function fromCache(
  cache: SourceCache,
  digest: string,
  signal?: AbortSignal,
): Promise<string | undefined> {
  try {
    const source = await unlessAborted(cache.get(digest), signal);
    if (typeof source !== "string") return undefined;
    return await sha256Digest(source) === digest ? source : undefined;
  } catch {
    if (signal?.aborted) throw abortedError(signal.reason);
    return undefined;
  }
}

/**
 * Stores a verified source; a cache that cannot store costs a refetch
 * later. A store that never ends is waited for only until `signal` aborts.
 *
 * @throws {CordonError} `ABORTED` when `signal` aborts first.
 */
export async function toCache(
  cache: SourceCache,
  digest: string,
  source: string,
  signal?: AbortSignal,
): Promise<void> {
  try {
    await unlessAborted(cache.put(digest, source), signal);
  } catch {
    if (signal?.aborted) throw abortedError(signal.reason);
    // Nothing is lost: the source is held in memory and can be fetched again.
  }
}

/** Waits for a cache's answer until `signal` aborts. */
function unlessAborted<T>(
  answer: T | Promise<T>,
  signal: AbortSignal | undefined,
): Promise<T> {
  return settleUnlessAborted(answer, signal, () => {
    throw abortedError(signal!.reason);
  });
}

/** What fetching a listed module needs to know about it. */
export function targetOf(
  summary: PackSummary,
  module: ModuleSummary,
): ModuleTarget {
  return {
    id: module.id,
    path: module.path,
    pack: summary.name,
    digest: module.digest,
  };
}

/**
 * The modules of checked packs whose sources are not held yet, once per
 * digest: modules with the same bytes are fetched once.
 */
export function targetsToLoad(
  packs: readonly { summary: PackSummary; modules: readonly ModuleSummary[] }[],
  held: ReadonlyMap<string, string>,
): ModuleTarget[] {
  const targets = new Map<string, ModuleTarget>();
  for (const { summary, modules } of packs) {
    for (const module of modules) {
      if (held.has(module.digest) || targets.has(module.digest)) continue;
      targets.set(module.digest, targetOf(summary, module));
    }
  }
  return [...targets.values()];
}

/**
 * Waits for every promise, then throws the first rejection in the order
 * given (not the first to happen), so a failure is reported the same way
 * whichever request finished first.
 */
export async function settleAll<T>(work: Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(work);
  for (const outcome of settled) {
    if (outcome.status === "rejected") throw outcome.reason;
  }
  return settled.map((outcome) => (outcome as PromiseFulfilledResult<T>).value);
}
