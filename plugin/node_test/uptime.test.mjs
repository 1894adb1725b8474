import { test } from "node:test";
import { plugin } from "./_helpers.mjs";
import { registerUptimeCases } from "./uptime_cases.mjs";

// The table is shared with plugin/uptime_test.ts (every tier on Deno); Node
// hosts the vm and process tiers.
registerUptimeCases(
  { ...plugin, tiers: ["vm", "process"] },
  (name, fn) => test(name, (t) => fn({ step: (n, f) => t.test(n, f) })),
);
