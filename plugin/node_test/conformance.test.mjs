import { test } from "node:test";
import { plugin, testing, vm } from "./_helpers.mjs";
import { registerConformanceCases } from "./conformance_cases.mjs";

// Every case is shared with plugin/testing_test.ts. The Node build does not
// export CordonError, so its name stands for it.
registerConformanceCases(
  {
    createSandboxedVmPluginModule: plugin.createSandboxedVmPluginModule,
    createVmSandbox: vm.createVmSandbox,
    isCordonError: (error) =>
      error instanceof Error && error.name === "CordonError",
    runVmHostBridgeConformance: testing.runVmHostBridgeConformance,
  },
  test,
);
