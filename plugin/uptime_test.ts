import { createSandboxedVmPluginModule } from "./host_bridge.ts";
import { createPluginHost, identifyAnonymously } from "./plugin_host.ts";
import { createPluginSandbox, PLUGIN_TIERS } from "./plugin_sandbox.ts";
import { registerUptimeCases } from "./node_test/uptime_cases.mjs";

// The table is shared with the Node leg (plugin/node_test/uptime.test.mjs).
registerUptimeCases(
  {
    createPluginHost,
    createSandboxedVmPluginModule,
    createPluginSandbox,
    identifyAnonymously,
    tiers: PLUGIN_TIERS,
  },
  (name: string, fn: (t: Deno.TestContext) => unknown) =>
    Deno.test(name, async (t) => {
      await fn(t);
    }),
);
