import { type OptionKeys, readOptions } from "../protocol/options.ts";
import {
  createVmSandbox,
  type VmIsolation,
  type VmSandbox,
  type VmSandboxOptions,
} from "../vm/vm_sandbox.ts";

/**
 * Where a sandboxed plugin runs:
 *
 * - `vm`: a `node:vm` context in a child process of the host's runtime, as
 *   `process` (results name the tier `vm`);
 * - `worker`: a Deno Web Worker with no permissions, inside a child
 *   process that a timeout kills (Deno only);
 * - `process`: a child process of the host's runtime (Deno with every
 *   permission denied, Node under its permission model with nothing
 *   granted);
 * - `quickjs`: a hardened QuickJS context, inside a Deno child process with
 *   every permission denied that a timeout kills (Deno only).
 */
export type PluginTier = "vm" | "worker" | "process" | "quickjs";

/** Every {@linkcode PluginTier}. */
export const PLUGIN_TIERS: readonly PluginTier[] = Object.freeze([
  "vm",
  "worker",
  "process",
  "quickjs",
]);

/** Options of {@linkcode createPluginSandbox}: a vm sandbox's, but its isolation. */
export type PluginSandboxOptions = Omit<VmSandboxOptions, "isolation">;

const SANDBOX_OPTION_KEYS: OptionKeys<PluginSandboxOptions> = {
  pluginId: true,
  policy: true,
  pluginModule: true,
  proxies: true,
  checker: true,
  limits: true,
  onLog: true,
  maxQueued: true,
};

/**
 * Creates the sandbox of a plugin on `tier`; give it to
 * `createSandboxedVmPluginModule()` and install it with `kind: tier`. Every
 * tier runs the same realm program (the `cordon:host` surface, marshalling
 * and lockdown), so the plugin's author changes nothing; what differs is
 * the boundary around it, and so what a runaway plugin costs.
 *
 * @param tier Where the plugin runs.
 * @param options The plugin, its policy, proxies and limits.
 * @returns The sandbox. The caller owns it and must dispose it (the bridge
 * does, once it is given the sandbox).
 * @throws {TypeError} When `tier` is not a {@linkcode PluginTier} or an
 * option has the wrong shape.
 * @throws {CordonError} `SANDBOX_UNAVAILABLE` for `worker` and `quickjs`
 * off Deno; `PROXY_FS_UNAVAILABLE` for folders in `policy.fs` without
 * `proxies.fs` where the default file proxy cannot check what it opens (on
 * Linux, a Deno host without every permission, `-A`).
 * @example
 * ```ts ignore
 * import { createPluginSandbox } from "@cordon/cordon/plugin";
 *
 * await using sandbox = createPluginSandbox("worker", {
 *   pluginId: "hi",
 *   pluginModule: {
 *     kind: "source",
 *     source: "export const hi = (name) => `hi ${name}`;",
 *     identifier: "hi.js",
 *   },
 * });
 * const result = await sandbox.invoke("hi", "ada");
 * // result: { ok: true, value: "hi ada", ... }
 * ```
 */
export function createPluginSandbox(
  tier: PluginTier,
  options: PluginSandboxOptions,
): VmSandbox {
  if (!PLUGIN_TIERS.includes(tier)) {
    throw new TypeError(
      `Cannot create a plugin sandbox on tier ${tierText(tier)}: use ${
        PLUGIN_TIERS.join(", ")
      }`,
    );
  }
  const isolation: VmIsolation = tier === "vm" ? "auto" : tier;
  const read = readOptions(
    "create a plugin sandbox",
    options,
    SANDBOX_OPTION_KEYS,
  );
  return createVmSandbox({ ...read, isolation });
}

/** A tier as given, for a message: a symbol or an object has no string to quote. */
function tierText(tier: unknown): string {
  if (typeof tier === "string") return JSON.stringify(tier);
  if (tier === null || tier === undefined) return String(tier);
  return typeof tier === "object" ? "an object" : `a ${typeof tier}`;
}
