// Plugins the host tables build on a tier, shared by the adversarial and
// uptime tables on both legs: this file takes the build under test as an
// argument, so Deno and Node run it as is.

/** A plugin that answers 200 "alive": the other plugins' bystander. */
export const CANARY = `
export const routes = () => [{ method: "GET", path: "/ok" }];
export const handleRequest = () => ({ status: 200, headers: [], body: "alive" });`;

/**
 * Builds the sandbox of plugin `id` from `source` on `tier` and its
 * sandboxed plugin module.
 *
 * @param api `createPluginSandbox` and `createSandboxedVmPluginModule` of
 * the build under test.
 * @param options The sandbox's other options (`limits`, `policy`,
 * `proxies`), and `maxBodyBytes` for the module.
 */
export function buildTablePlugin(api, tier, id, source, options) {
  const { maxBodyBytes, ...sandboxOptions } = options;
  const sandbox = api.createPluginSandbox(tier, {
    pluginId: id,
    pluginModule: { kind: "source", source, identifier: `${id}.js` },
    ...sandboxOptions,
  });
  const module = api.createSandboxedVmPluginModule({
    manifest: { id, version: "1.0.0" },
    sandbox,
    ...(maxBodyBytes === undefined ? {} : { maxBodyBytes }),
  });
  return { sandbox, module };
}
