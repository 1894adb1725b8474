import { createVmSandbox } from "./vm_sandbox.ts";
import * as cases from "../realm/_override_cases_test.ts";
import { registerOverrideCases } from "./node_test/override_cases.mjs";

// Every case is shared with the Node leg (vm/node_test/override.test.mjs).
registerOverrideCases(
  { createVmSandbox, cases },
  (name: string, fn: () => unknown) =>
    Deno.test(name, async () => {
      await fn();
    }),
);
