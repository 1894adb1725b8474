import { createSandboxedVmPluginModule } from "./host_bridge.ts";
import { createPluginHost, identifyByTrustedHeaders } from "./plugin_host.ts";
import { createPluginSandbox, PLUGIN_TIERS } from "./plugin_sandbox.ts";
import { registerPluginHostCases } from "./node_test/plugin_host_e2e_cases.mjs";
import { serve } from "./_test_serve_test.ts";

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
