import { test } from "node:test";
import { vm } from "./_helpers.mjs";
import { registerOverrideCases } from "./override_cases.mjs";

// The cases of realm/, bundled for Node by `deno task build:node`.
const cases = await import("../../dist/cases/_override_cases_test.js");

// Every case is shared with vm/override_test.ts.
registerOverrideCases({ createVmSandbox: vm.createVmSandbox, cases }, test);
