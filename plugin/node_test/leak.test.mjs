import { test } from "node:test";
import { plugin } from "./_helpers.mjs";
import { registerPluginLeakCases } from "./leak_cases.mjs";

const {
  createPluginHost,
  createSandboxedVmPluginModule,
  createPluginSandbox,
  identifyAnonymously,
} = plugin;

// The probe is shared with plugin/leak_test.ts (every tier on Deno); Node
// hosts the vm and process tiers (realm processes both).
registerPluginLeakCases(
  {
    createPluginHost,
    createSandboxedVmPluginModule,
    createPluginSandbox,
    identifyAnonymously,
    tiers: ["vm", "process"],
  },
  test,
);
