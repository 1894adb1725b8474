import { createSandboxedVmPluginModule } from "./host_bridge.ts";
import { registerPluginLeakCases } from "./node_test/leak_cases.mjs";
import { createPluginHost, identifyAnonymously } from "./plugin_host.ts";
import { createPluginSandbox, PLUGIN_TIERS } from "./plugin_sandbox.ts";

// The probe is shared with the Node leg (plugin/node_test/leak.test.mjs).
registerPluginLeakCases(
  {
    createPluginHost,
    createSandboxedVmPluginModule,
    createPluginSandbox,
    identifyAnonymously,
    tiers: PLUGIN_TIERS,
  },
  (name: string, options: { skip: boolean }, fn: () => Promise<void>) =>
    Deno.test({ name, ignore: options.skip, fn }),
);
