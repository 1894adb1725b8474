import { test } from "node:test";
import { vm } from "./_helpers.mjs";
import { registerVmLeakCases } from "./leak_cases.mjs";

// The probe is shared with vm/leak_test.ts (Deno). On Node a thread realm
// shares this process: the probe checks that its threads are back to the
// baseline once the realms are terminated.
registerVmLeakCases(
  { createVmSandbox: vm.createVmSandbox, isolations: ["thread", "process"] },
  test,
);
