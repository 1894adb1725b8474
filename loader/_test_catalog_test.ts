// This module is browser compatible.

/**
 * An in-memory catalog for the loader's tests: packs described inline, no
 * discovery, no digests checked.
 *
 * @module
 */

import type {
  ExecutionResolution,
  PackStatus,
  ResolvedModule,
  ResolvedPack,
  SandboxModuleCatalog,
} from "../catalog/types.ts";
import type {
  AuthorizedDelivery,
  Declaration,
  DeliveryRefusal,
  Requester,
} from "../protocol/mod.ts";
import type { EntitlementPolicy } from "../catalog/types.ts";

/** One pack of the in-memory catalog. */
export interface TestPack {
  name: string;
  version?: string;
  /** Exported subpath to file. */
  exports: Record<string, string>;
  /** File (`./x.js`) to source, exported and internal. */
  files: Record<string, string>;
}

const DIGEST = "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";

/** Builds a catalog over inline packs, granting by `entitlement` (default: everyone). */
export function createTestCatalog(
  packs: readonly TestPack[],
  entitlement: EntitlementPolicy = () => true,
): SandboxModuleCatalog & { resolutions: number } {
  const byId = new Map<string, ResolvedModule>();
  const resolved = new Map<
    string,
    { pack: ResolvedPack; modules: ResolvedModule[] }
  >();
  let counter = 0;
  for (const spec of packs) {
    const version = spec.version ?? "1.0.0";
    const files: Record<string, string> = {};
    const modules: ResolvedModule[] = [];
    for (const [path, source] of Object.entries(spec.files)) {
      const id = `m${++counter}`;
      files[path] = id;
      modules.push({
        id,
        pack: { name: spec.name, version },
        path,
        source,
        digest: DIGEST,
        graphDigest: DIGEST,
        dependencyIds: [],
      });
    }
    const exports: Record<string, string> = {};
    for (const [subpath, file] of Object.entries(spec.exports)) {
      exports[subpath] = files[file]!;
    }
    for (const module of modules) byId.set(module.id, module);
    resolved.set(spec.name, {
      pack: { name: spec.name, version, graphDigest: DIGEST, exports, files },
      modules,
    });
  }
  const catalog = {
    resolutions: 0,
    resolveForExecution(declaration: Declaration): ExecutionResolution {
      catalog.resolutions++;
      const statuses: PackStatus[] = [];
      const out: ExecutionResolution = {
        statuses,
        packs: {},
        modules: {},
        installed: [...resolved.keys()],
      };
      for (const request of declaration.packages) {
        const name = typeof request === "string" ? request : request.specifier;
        const entry = resolved.get(name);
        if (entry === undefined) {
          statuses.push({
            name,
            status: "not-installed",
            code: "PACK_NOT_INSTALLED",
            message: `Pack "${name}" is not installed: install it`,
          });
          continue;
        }
        statuses.push({
          name,
          status: "ok",
          version: entry.pack.version,
          graphDigest: DIGEST,
        });
        out.packs[name] = entry.pack;
        for (const module of entry.modules) out.modules[module.id] = module;
      }
      return out;
    },
    async authorizeDelivery(
      moduleId: string,
      requester: Requester = {},
    ): Promise<AuthorizedDelivery | DeliveryRefusal> {
      const module = byId.get(moduleId);
      if (module === undefined) {
        return {
          ok: false,
          reason: "not-found",
          code: "MODULE_NOT_FOUND",
          message: "No module has this id",
        };
      }
      if (await entitlement(module.pack, requester) !== true) {
        return {
          ok: false,
          reason: "forbidden",
          code: "DELIVERY_FORBIDDEN",
          message: `Pack "${module.pack.name}" is refused`,
        };
      }
      const { source, pack, path, digest, graphDigest, dependencyIds } = module;
      return {
        ok: true,
        moduleId,
        content: source,
        mediaType: "text/javascript",
        digest,
        graphDigest,
        dependencyIds,
        pack,
        path,
      };
    },
    summaries() {
      return [];
    },
  };
  return catalog;
}

/**
 * The packs of `inner` handed out frozen, as the shipped catalogs hand them
 * out, so the loader keeps its guest plans between runs.
 */
export function frozenCatalog(
  inner: SandboxModuleCatalog,
): SandboxModuleCatalog {
  return {
    ...inner,
    resolveForExecution(declaration) {
      const resolution = inner.resolveForExecution(declaration);
      for (const pack of Object.values(resolution.packs)) {
        Object.freeze(pack.exports);
        Object.freeze(pack);
      }
      for (const module of Object.values(resolution.modules)) {
        Object.freeze(module);
      }
      return resolution;
    },
  };
}
