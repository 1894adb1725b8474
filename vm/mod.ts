/**
 * The vm tier: a plugin module (for example a partner's JavaScript) runs as
 * a `node:vm` `SourceTextModule` in its own context, off the host's thread,
 * and reaches the host only through the `cordon:host` proxies (`fetch`,
 * `fs`, `capabilities`) that the host checks against the plugin's policy.
 * `@cordon/cordon/plugin` turns such a sandbox into a plugin with HTTP
 * routes.
 *
 * The vm tier is for moderately-trusted code only: `node:vm` is not a
 * security boundary. Use the worker, process or QuickJS tier for untrusted
 * code.
 *
 * ```ts ignore
 * import { createVmSandbox } from "@cordon/cordon/vm";
 *
 * await using sandbox = createVmSandbox({
 *   pluginId: "add",
 *   pluginModule: {
 *     kind: "source",
 *     source: "export function add({ a, b }) { return a + b; }",
 *     identifier: "add.js",
 *   },
 * });
 * const result = await sandbox.invoke("add", { a: 1, b: 2 });
 * // result: { ok: true, value: 3, ... }
 * ```
 *
 * @module
 */

export * from "./vm_policy.ts";
export * from "./vm_sandbox.ts";
