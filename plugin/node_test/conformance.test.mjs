import { test } from "node:test";
import { plugin, testing } from "./_helpers.mjs";
import { registerConformanceCases } from "./conformance_cases.mjs";

// Every case is shared with plugin/testing_test.ts. The Node build does not
// export CordonError, so its name stands for it.
registerConformanceCases(
  {
    createSandboxedVmPluginModule: plugin.createSandboxedVmPluginModule,
    createPluginSandbox: plugin.createPluginSandbox,
    // Web Workers with Deno's permissions are Deno's.
    tiers: ["vm", "process"],
    isCordonError: (error) =>
      error instanceof Error && error.name === "CordonError",
    runVmHostBridgeConformance: testing.runVmHostBridgeConformance,
  },
  test,
);
