/**
 * Module delivery over HTTP: a web-standard handler that serves sandbox
 * modules by opaque id with `Repr-Digest`, strong entity tags and caching
 * that stays correct when a pack is re-installed, plus `serveDelivery()`
 * to serve a packs folder with `Deno.serve`. The `cli/serve.ts` CLI
 * (`jsr:@cordon/cordon/cli/serve`) runs it from the command line. On Node
 * the handler is served with `node:http` through `toNodeListener()` of
 * `@cordon/cordon/plugin`; `serveDelivery()` runs on Deno only.
 *
 * ```ts
 * import { createDeliveryHandler } from "@cordon/cordon/delivery";
 * import type { SandboxModuleCatalog } from "@cordon/cordon/catalog";
 * import assert from "node:assert/strict";
 *
 * const catalog: SandboxModuleCatalog = {
 *   resolveForExecution: () => ({ statuses: [], packs: {}, modules: {}, installed: [] }),
 *   authorizeDelivery: () =>
 *     Promise.resolve({
 *       ok: false, reason: "forbidden", code: "DELIVERY_FORBIDDEN", message: "No",
 *     }),
 *   summaries: () => [],
 * };
 * const handle = createDeliveryHandler(catalog);
 * const response = await handle(
 *   new Request("http://localhost/api/sandbox-modules/m1"),
 * );
 * assert.equal(response.status, 403);
 * assert.equal(response.headers.get("content-type"), "application/problem+json");
 * await response.body?.cancel();
 * ```
 *
 * @module
 */

export * from "./handler.ts";
export * from "./serve.ts";
