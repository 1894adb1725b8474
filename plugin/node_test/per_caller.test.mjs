import { test } from "node:test";
import { plugin } from "./_helpers.mjs";
import { registerPerCallerCases } from "./per_caller_cases.mjs";

// Every case is shared with plugin/per_caller_test.ts.
registerPerCallerCases(plugin, test);
