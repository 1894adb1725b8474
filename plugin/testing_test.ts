import { CordonError } from "../protocol/cordon_error.ts";
import { createSandboxedVmPluginModule } from "./host_bridge.ts";
import { runVmHostBridgeConformance } from "./testing.ts";
import { createPluginSandbox, PLUGIN_TIERS } from "./plugin_sandbox.ts";
import { registerConformanceCases } from "./node_test/conformance_cases.mjs";

// Every case is shared with the Node leg (plugin/node_test/conformance.test.mjs).
registerConformanceCases(
  {
    createSandboxedVmPluginModule,
    createPluginSandbox,
    tiers: PLUGIN_TIERS,
    isCordonError: (error: unknown) => error instanceof CordonError,
    runVmHostBridgeConformance,
  },
  (name: string, fn: () => unknown) =>
    Deno.test(name, async () => {
      await fn();
    }),
);
