import { createSandboxedVmPluginModule } from "./host_bridge.ts";
import { createPluginHost, identifyByTrustedHeaders } from "./plugin_host.ts";
import { createPluginSandbox, PLUGIN_TIERS } from "./plugin_sandbox.ts";
import { registerPluginHostCases } from "./node_test/plugin_host_e2e_cases.mjs";

/** Serves `handler` with Deno.serve on a free port of 127.0.0.1. */
function serve(handler: Deno.ServeHandler) {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    handler,
  );
  return {
    port: server.addr.port,
    close: () => server.shutdown(),
  };
}

// Every case is shared with the Node leg
// (plugin/node_test/plugin_host_e2e.test.mjs), which serves with node:http.
registerPluginHostCases(
  {
    createPluginHost,
    createSandboxedVmPluginModule,
    createPluginSandbox,
    identifyByTrustedHeaders,
    serve,
    tiers: PLUGIN_TIERS,
  },
  (name: string, fn: (t: Deno.TestContext) => unknown) =>
    Deno.test(name, async (t) => {
      await fn(t);
    }),
);
