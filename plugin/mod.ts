/**
 * The plugin host and its bridge. A plugin module (for example a customer's
 * JavaScript) runs in a sandbox and reaches the host only through the
 * `cordon:host` proxies (`fetch`, `fs`, `capabilities`) that the host
 * checks against the plugin's policy. The bridge turns such a sandbox into
 * a {@linkcode PluginModule} with HTTP routes, and the plugin host serves
 * installed plugins with one web-standard `fetch(request)` handler, on
 * Deno (`Deno.serve(host.fetch)`) and on Node
 * (`http.createServer(toNodeListener(host.fetch))`).
 *
 * The vm tier is for moderately-trusted code only: `node:vm` is not a
 * security boundary. Use the worker, process or QuickJS tier for untrusted
 * code.
 *
 * ```ts ignore
 * import {
 *   createPluginHost,
 *   identifyAnonymously,
 *   createSandboxedVmPluginModule,
 * } from "@cordon/cordon/plugin";
 * import { createVmSandbox } from "@cordon/cordon/vm";
 *
 * const source = `
 *   export function routes() { return [{ method: "GET", path: "/hi" }]; }
 *   export function handleRequest(req) {
 *     return { status: 200, headers: [], body: "hi " + req.principalId };
 *   }`;
 * const host = createPluginHost({ identify: identifyAnonymously });
 * await host.installPlugin({
 *   kind: "vm",
 *   module: createSandboxedVmPluginModule({
 *     manifest: { id: "hi", version: "1.0.0" },
 *     sandbox: createVmSandbox({
 *       pluginId: "hi",
 *       pluginModule: { kind: "source", source, identifier: "hi.js" },
 *     }),
 *   }),
 * });
 * Deno.serve({ hostname: "127.0.0.1", port: 8080 }, host.fetch);
 * ```
 *
 * @module
 */

export * from "../vm/vm_policy.ts";
export * from "../vm/vm_sandbox.ts";
export * from "./plugin_module.ts";
export * from "./host_bridge.ts";
export * from "./host_plugin_module.ts";
export * from "./plugin_host.ts";
export * from "./node_listener.ts";
export * from "./response_headers.ts";
export * from "./plugin_sandbox.ts";
