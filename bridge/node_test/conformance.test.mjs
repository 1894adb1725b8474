import { test } from "node:test";
import { bridge, testing } from "./_helpers.mjs";
import { registerConformanceCases } from "./conformance_cases.mjs";

// Every case is shared with bridge/testing_test.ts. The Node build does not
// export CordonError, so its name stands for it.
registerConformanceCases(
  {
    createSandboxedVmPluginModule: bridge.createSandboxedVmPluginModule,
    createVmSandbox: bridge.createVmSandbox,
    isCordonError: (error) =>
      error instanceof Error && error.name === "CordonError",
    runVmHostBridgeConformance: testing.runVmHostBridgeConformance,
  },
  test,
);
