import { registerVmLeakCases } from "./node_test/leak_cases.mjs";
import { createVmSandbox } from "./vm_sandbox.ts";

// The probe is shared with the Node leg (vm/node_test/leak.test.mjs);
// Deno runs realms in child processes only.
registerVmLeakCases(
  { createVmSandbox, isolations: ["process", "worker", "quickjs"] },
  (name: string, options: { skip: boolean }, fn: () => Promise<void>) =>
    Deno.test({ name, ignore: options.skip, fn }),
);
