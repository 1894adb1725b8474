// This module is browser compatible.

/**
 * The import policy of one run as one pure function:
 * given the declaration's resolution, which module a specifier imported from
 * a referrer resolves to, or why it is denied. The loader calls it from its
 * module normaliser, which QuickJS asks for every import (a cached module is
 * served only after its name was normalised), so every decision is keyed by
 * referrer.
 *
 * @module
 */

import type {
  ExecutionResolution,
  ResolvedModule,
  ResolvedPack,
} from "../catalog/types.ts";
import { resolvePackImport } from "./pack_import.ts";
import type { PackRef } from "../protocol/delivery.ts";
import type { ErrorCode } from "../protocol/error_codes.ts";
import {
  classifySpecifier,
  IMPORT_DENIED_ERROR_NAME,
  quoteSpecifier as quote,
} from "./import_specifier.ts";
import { operatorText } from "../protocol/operator_text.ts";

/** The module name guest source is evaluated under. */
export const GUEST_MODULE_NAME = "cordon:guest";

/** The scheme of the virtual names pack modules are evaluated under. */
export const PACK_MODULE_SCHEME = "cordon-pack:";

/** An import the policy allows: the module to load, by name and id. */
export interface ImportAllowed {
  /** Always `true`. */
  ok: true;
  /** The module's name inside QuickJS, `cordon-pack:<pack>@<version>/<path>`. */
  name: string;
  /** The module. */
  module: ResolvedModule;
}

/** An import the policy refuses, with the failure every tier reports. */
export interface ImportDenied {
  /** Always `false`. */
  ok: false;
  /** The stable error code. */
  code: ErrorCode;
  /**
   * `"ImportDeniedError"`, or `"SyntaxError"` for source text engines read
   * differently (a NUL character or a lone surrogate).
   */
  name: string;
  /** What was refused, why, and what to do next. */
  message: string;
}

/** What the policy decided for one import. */
export type ImportDecision = ImportAllowed | ImportDenied;

/** The import policy of one run. */
export interface ImportPolicy {
  /**
   * Decides one import.
   *
   * @param referrer The importing module's name: {@linkcode GUEST_MODULE_NAME}
   * or a pack module's name.
   * @param specifier The specifier as written.
   * @returns The module to load, or the denial.
   */
  resolve(referrer: string, specifier: string): ImportDecision;
  /**
   * Finds an allowed module by the name {@linkcode ImportPolicy.resolve}
   * gave it.
   *
   * @param name A pack module's name.
   * @returns The module, or `undefined` for any other name.
   */
  moduleByName(name: string): ResolvedModule | undefined;
}

/**
 * The name a pack module is evaluated under inside QuickJS:
 * `cordon-pack:<pack>@<version>/<path>`. It appears in stack traces; it is
 * never a filesystem path or URL the host fetches.
 *
 * @param pack The pack.
 * @param path The module's file inside the pack, such as `./lib/round.js`.
 * @returns The name, such as `cordon-pack:@acme/math@1.2.0/lib/round.js`.
 *
 * @example
 * ```ts
 * import { packModuleName } from "@cordon/cordon/policy";
 * import assert from "node:assert/strict";
 *
 * assert.equal(
 *   packModuleName({ name: "@acme/math", version: "1.2.0" }, "./lib/round.js"),
 *   "cordon-pack:@acme/math@1.2.0/lib/round.js",
 * );
 * ```
 */
export function packModuleName(pack: PackRef, path: string): string {
  return `${PACK_MODULE_SCHEME}${pack.name}@${pack.version}/${
    path.startsWith("./") ? path.slice(2) : path
  }`;
}

function denied(code: ErrorCode, message: string): ImportDenied {
  return { ok: false, code, name: IMPORT_DENIED_ERROR_NAME, message };
}

function listSubpaths(pack: ResolvedPack): string {
  return Object.keys(pack.exports).sort().map(quote).join(", ");
}

interface PackModuleEntry {
  pack: ResolvedPack;
  module: ResolvedModule;
}

/**
 * Creates the import policy of one run from the catalog's resolution of the
 * declaration. It never throws and never asks the catalog again.
 *
 * - A specifier `classifySpecifier` denies (URL schemes, absolute paths,
 *   Node built-in and compat names, encoded path characters) keeps that
 *   code and message, from any referrer.
 * - Guest source imports declared packs by name: `pack` or `pack/sub` for
 *   an exported subpath. Others are `IMPORT_UNDECLARED` or
 *   `IMPORT_NOT_EXPORTED` (internal helpers of a pack are not exported).
 *   Guest source has no relative imports (`IMPORT_PATH_ESCAPE`).
 * - A pack module imports relative files of its own pack that the pack
 *   lists, resolved as URLs are; leaving the pack or naming another pack is
 *   `IMPORT_PATH_ESCAPE`.
 *
 * @param resolution The catalog's answer for the declaration.
 * @returns The policy.
 *
 * @example
 * ```ts
 * import { createImportPolicy } from "@cordon/cordon/policy";
 * import assert from "node:assert/strict";
 *
 * const policy = createImportPolicy({ statuses: [], packs: {}, modules: {}, installed: [] });
 * const decision = policy.resolve("cordon:guest", "node:fs");
 * assert.equal(decision.ok, false);
 * assert.equal(!decision.ok && decision.code, "IMPORT_NODE_BUILTIN");
 * ```
 */
export function createImportPolicy(
  resolution: ExecutionResolution,
): ImportPolicy {
  const packs = new Map<string, ResolvedPack>(Object.entries(resolution.packs));
  // Built on first use: a run whose pack modules are already loaded only
  // resolves the guest's own imports, whatever the size of its packs.
  let byNameMap: Map<string, PackModuleEntry> | undefined;
  function byName(): Map<string, PackModuleEntry> {
    if (byNameMap !== undefined) return byNameMap;
    byNameMap = new Map();
    for (const pack of packs.values()) {
      for (const id of Object.values(pack.files)) {
        const module = resolution.modules[id];
        if (module === undefined) continue;
        byNameMap.set(packModuleName(pack, module.path), { pack, module });
      }
    }
    return byNameMap;
  }

  function allowed(entry: PackModuleEntry | undefined): ImportAllowed | null {
    if (entry === undefined) return null;
    return {
      ok: true,
      name: packModuleName(entry.pack, entry.module.path),
      module: entry.module,
    };
  }

  function fromGuest(
    specifier: string,
    pack: string,
    subpath: string,
  ): ImportDecision {
    const resolved = packs.get(pack);
    if (resolved === undefined) {
      return denied(
        "IMPORT_UNDECLARED",
        // Read only for a denial: a large catalog installs many packs.
        resolution.installed.includes(pack)
          ? `Cannot import ${quote(specifier)} from a sandbox module: pack ${
            quote(pack)
          } is not declared; add it to the declaration's packages`
          : `Cannot import ${quote(specifier)} from a sandbox module: pack ${
            quote(pack)
          } is not declared or installed; install it and add it to the declaration's packages`,
      );
    }
    const id = Object.hasOwn(resolved.exports, subpath)
      ? resolved.exports[subpath]
      : undefined;
    const module = id === undefined ? undefined : resolution.modules[id];
    const decision = allowed(
      module === undefined ? undefined : { pack: resolved, module },
    );
    if (decision !== null) return decision;
    return denied(
      "IMPORT_NOT_EXPORTED",
      `Cannot import ${quote(specifier)} from a sandbox module: pack ${
        quote(pack)
      } does not export ${
        quote(subpath)
      }; import one of its exported subpaths: ${listSubpaths(resolved)}`,
    );
  }

  function fromPack(
    specifier: string,
    referrer: PackModuleEntry,
    kind: "bare" | "relative",
  ): ImportDecision {
    const where = `pack ${quote(referrer.pack.name)} (${
      operatorText(referrer.module.path)
    })`;
    if (kind === "bare") {
      return denied(
        "IMPORT_PATH_ESCAPE",
        `Cannot import ${
          quote(specifier)
        } from ${where}: a pack module may import only relative files of its own pack; fix or reinstall the pack`,
      );
    }
    const files = referrer.pack.files;
    const result = resolvePackImport(
      specifier,
      referrer.module.path,
      (path) => Object.hasOwn(files, path),
    );
    if (result.ok) {
      const id = files[result.path]!;
      const module = resolution.modules[id];
      const decision = allowed(
        module === undefined ? undefined : { pack: referrer.pack, module },
      );
      if (decision !== null) return decision;
    }
    const reason = result.ok ? "is not a module of the pack" : result.reason;
    return denied(
      "IMPORT_PATH_ESCAPE",
      `Cannot import ${
        quote(specifier)
      } from ${where}: the specifier ${reason}; relative imports stay inside their pack, so fix or reinstall the pack`,
    );
  }

  return {
    resolve(referrer, specifier) {
      const kind = classifySpecifier(specifier);
      if (kind.kind === "denied") return denied(kind.code, kind.message);
      if (referrer === GUEST_MODULE_NAME) {
        if (kind.kind === "bare") {
          return fromGuest(specifier, kind.pack, kind.subpath);
        }
        return denied(
          "IMPORT_PATH_ESCAPE",
          `Cannot import ${
            quote(specifier)
          } from a sandbox module: guest source has no relative imports; import declared packs by name`,
        );
      }
      const entry = byName().get(referrer);
      if (entry === undefined) {
        return denied(
          "IMPORT_PATH_ESCAPE",
          `Cannot import ${quote(specifier)} from ${
            quote(referrer)
          }: the importing module is not part of this run; import declared packs from the guest source`,
        );
      }
      return fromPack(specifier, entry, kind.kind);
    },
    moduleByName(name) {
      return byName().get(name)?.module;
    },
  };
}
