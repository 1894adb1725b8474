import { CordonError } from "../protocol/cordon_error.ts";
import { createSandboxedVmPluginModule } from "./host_bridge.ts";
import { runVmHostBridgeConformance } from "./testing.ts";
import { createVmSandbox } from "../vm/vm_sandbox.ts";
import { registerConformanceCases } from "./node_test/conformance_cases.mjs";

// Every case is shared with the Node leg (bridge/node_test/conformance.test.mjs).
registerConformanceCases(
  {
    createSandboxedVmPluginModule,
    createVmSandbox,
    isCordonError: (error: unknown) => error instanceof CordonError,
    runVmHostBridgeConformance,
  },
  (name: string, fn: () => unknown) =>
    Deno.test(name, async () => {
      await fn();
    }),
);
