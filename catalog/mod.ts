// This module is browser compatible.

/**
 * The catalog every loader and delivery handler talks to: the
 * {@linkcode SandboxModuleCatalog} interface, SHA-256 digests and module
 * ids, and the module-graph builder that turns a pack's manifest and
 * sources into digests and graph digests. The on-disk catalog lives in
 * `@cordon/cordon/catalog/disk` (Deno and Node).
 *
 * ```ts
 * import { buildPackGraph, toReprDigest } from "@cordon/cordon/catalog";
 * import { PackManifestSchema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const manifest = PackManifestSchema.parse({
 *   name: "greet",
 *   version: "1.0.0",
 *   cordon: { exports: { ".": "./index.js" } },
 * });
 * const result = await buildPackGraph(manifest, {
 *   "./index.js": "export const greet = (name) => `Hello, ${name}!`;",
 * });
 * assert.equal(result.ok, true);
 * if (result.ok) {
 *   const [module] = result.graph.summary.modules;
 *   assert.match(toReprDigest(module!.digest), /^sha-256=:.+:$/);
 * }
 * ```
 *
 * @module
 */

export * from "./types.ts";
export * from "./digest.ts";
export * from "./graph.ts";
export * from "./empty_catalog.ts";
export * from "./remote_catalog.ts";
export * from "./staged_catalog.ts";
