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
import type { Declaration } from "../protocol/mod.ts";

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

/** Builds a catalog over inline packs. */
export function createTestCatalog(
  packs: readonly TestPack[],
): SandboxModuleCatalog & { resolutions: number } {
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
    authorizeDelivery() {
      return Promise.resolve({
        ok: false as const,
        reason: "not-found" as const,
        code: "MODULE_NOT_FOUND",
        message: "No module has this id",
      });
    },
    summaries() {
      return [];
    },
  };
  return catalog;
}
