import { test } from "node:test";
import { plugin, serve } from "./_helpers.mjs";
import { registerHttpSemanticsCases } from "./http_semantics_cases.mjs";

const {
  createPluginHost,
  createHostPluginModule,
  createSandboxedVmPluginModule,
  createPluginSandbox,
  identifyAnonymously,
  defaultResponseHeaderPolicy,
} = plugin;

// The table is shared with plugin/http_semantics_test.ts (every tier on
// Deno); Node hosts the vm and process tiers.
registerHttpSemanticsCases(
  {
    createPluginHost,
    createHostPluginModule,
    createSandboxedVmPluginModule,
    createPluginSandbox,
    identifyAnonymously,
    defaultResponseHeaderPolicy,
    serve,
    tiers: ["vm", "process"],
  },
  (name, fn) => test(name, (t) => fn({ step: (n, f) => t.test(n, f) })),
);
