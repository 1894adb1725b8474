import { createSandboxedVmPluginModule } from "./host_bridge.ts";
import { createHostPluginModule } from "./host_plugin_module.ts";
import { createPluginHost, identifyAnonymously } from "./plugin_host.ts";
import { createPluginSandbox, PLUGIN_TIERS } from "./plugin_sandbox.ts";
import { registerAdversarialCases } from "./node_test/adversarial_cases.mjs";
import { serve } from "./_test_serve_test.ts";

// The table is shared with the Node leg
// (plugin/node_test/adversarial.test.mjs).
registerAdversarialCases(
  {
    createPluginHost,
    createSandboxedVmPluginModule,
    createPluginSandbox,
    createHostPluginModule,
    identifyAnonymously,
    serve,
    tiers: PLUGIN_TIERS,
  },
  (
    name: string,
    ...rest:
      | [(t: Deno.TestContext) => unknown]
      | [{ ignore: boolean }, (t: Deno.TestContext) => unknown]
  ) => {
    const [options, fn] = rest.length === 1
      ? [{ ignore: false }, ...rest]
      : rest;
    Deno.test({
      name,
      ignore: options.ignore,
      fn: async (t) => {
        await fn(t);
      },
    });
  },
);
