// This module is browser compatible.

/**
 * The import policy, written once for every tier and for pack discovery:
 * {@linkcode classifySpecifier} denies a specifier by its form (URL schemes,
 * absolute paths, Node built-in and compat names, encoded path characters)
 * or splits it into pack and subpath, {@linkcode resolvePackImport} keeps
 * a pack module's relative imports inside its pack, and
 * {@linkcode createImportPolicy} decides one run's imports from the
 * catalog's resolution of its declaration.
 *
 * ```ts
 * import { classifySpecifier, createImportPolicy } from "@cordon/cordon/policy";
 * import assert from "node:assert/strict";
 *
 * const found = classifySpecifier("node:fs");
 * assert.equal(found.kind === "denied" && found.code, "IMPORT_NODE_BUILTIN");
 *
 * const policy = createImportPolicy({ statuses: [], packs: {}, modules: {}, installed: [] });
 * const decision = policy.resolve("cordon:guest", "@acme/math");
 * assert.equal(!decision.ok && decision.code, "IMPORT_UNDECLARED");
 * ```
 *
 * @module
 */

export * from "./import_specifier.ts";
export * from "./import_policy.ts";
export * from "./pack_import.ts";
