// This module is browser compatible.

/**
 * The QuickJS loader: runs the guest ES module of a declaration in a fresh
 * QuickJS (WebAssembly) context, in Deno and in browsers alike. Guest code
 * may import only the packs it declares, and only their exported subpaths;
 * pack modules may import only their own files. Everything else is denied
 * with a stable code and a message that says what to do. Before any pack or
 * guest module evaluates, the context is hardened (console captured, no
 * code generation from strings, no timers, frozen intrinsics), and every
 * run has a time, memory, stack and log limit.
 *
 * ```ts
 * import { createQuickJSLoader } from "@cordon/cordon/loader";
 * import type { SandboxModuleCatalog } from "@cordon/cordon/catalog";
 * import assert from "node:assert/strict";
 *
 * const catalog: SandboxModuleCatalog = {
 *   resolveForExecution: () => ({ statuses: [], packs: {}, modules: {}, installed: [] }),
 *   authorizeDelivery: () => Promise.resolve({ ok: false, reason: "not-found", code: "MODULE_NOT_FOUND", message: "none" }),
 *   summaries: () => [],
 * };
 * using loader = await createQuickJSLoader({ catalog });
 * const result = await loader.run({ source: "export default [1, 2].map((n) => n * 2);" });
 * assert.deepEqual(result.ok && result.value, [2, 4]);
 * ```
 *
 * @module
 */

export * from "./quickjs_loader.ts";
export * from "../policy/import_policy.ts";
export * from "./quickjs_pool.ts";
