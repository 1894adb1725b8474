import { createSandboxedVmPluginModule } from "./host_bridge.ts";
import { createHostPluginModule } from "./host_plugin_module.ts";
import { createPluginHost, identifyAnonymously } from "./plugin_host.ts";
import { createPluginSandbox, PLUGIN_TIERS } from "./plugin_sandbox.ts";
import { defaultResponseHeaderPolicy } from "./response_headers.ts";
import { registerHttpSemanticsCases } from "./node_test/http_semantics_cases.mjs";
import { serve } from "./_test_serve_test.ts";

// The table is shared with the Node leg
// (plugin/node_test/http_semantics.test.mjs).
registerHttpSemanticsCases(
  {
    createPluginHost,
    createHostPluginModule,
    createSandboxedVmPluginModule,
    createPluginSandbox,
    identifyAnonymously,
    defaultResponseHeaderPolicy,
    serve,
    tiers: PLUGIN_TIERS,
  },
  (name: string, fn: (t: Deno.TestContext) => unknown) =>
    Deno.test(name, async (t) => {
      await fn(t);
    }),
);
