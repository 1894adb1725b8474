// This module is browser compatible.

/**
 * cordon runs code written by a platform's users (a workflow Code node, a
 * plugin, a notebook cell) that imports vetted modules, with one import
 * policy in the browser, in Deno and on Node, and with module bytes
 * delivered by opaque id and checked by digest.
 *
 * This entry re-exports the browser-safe surface: the wire protocol, the
 * catalog interface with the remote catalog, and the QuickJS loader. The
 * Deno-only parts have their own entries: `@cordon/cordon/catalog/disk`,
 * `@cordon/cordon/delivery`, `@cordon/cordon/sandbox`,
 * `@cordon/cordon/vm` and `@cordon/cordon/plugin`.
 *
 * ```ts ignore
 * import { createQuickJSLoader, createRemoteCatalog } from "@cordon/cordon";
 *
 * const catalog = createRemoteCatalog({ baseUrl: "http://127.0.0.1:8000" });
 * using loader = await createQuickJSLoader({ catalog });
 * const result = await loader.run({
 *   source: 'import { add } from "@cordon-fixtures/math"; export default add(1, 2);',
 *   packages: ["@cordon-fixtures/math"],
 * });
 * console.log(result); // { ok: true, value: 3, ... }
 * ```
 *
 * @module
 */

export * from "./protocol/mod.ts";
export * from "./catalog/mod.ts";
export * from "./loader/mod.ts";
