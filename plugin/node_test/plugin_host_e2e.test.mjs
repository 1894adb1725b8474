import assert from "node:assert/strict";
import { test } from "node:test";
import { plugin, serve } from "./_helpers.mjs";
import { registerPluginHostCases } from "./plugin_host_e2e_cases.mjs";

const {
  createPluginHost,
  createSandboxedVmPluginModule,
  createPluginSandbox,
  identifyByTrustedHeaders,
} = plugin;

// Every case is shared with plugin/plugin_host_e2e_test.ts, which serves with
// Deno.serve.
registerPluginHostCases(
  {
    createPluginHost,
    createSandboxedVmPluginModule,
    createPluginSandbox,
    identifyByTrustedHeaders,
    serve,
    tiers: ["vm", "process"],
  },
  (name, fn) => test(name, (t) => fn({ step: (n, f) => t.test(n, f) })),
);

for (const tier of ["worker", "quickjs"]) {
  test(`createPluginSandbox() on Node refuses the ${tier} tier with SANDBOX_UNAVAILABLE`, () => {
    assert.throws(
      () =>
        createPluginSandbox(tier, {
          pluginId: "w",
          pluginModule: { kind: "source", source: "", identifier: "w.js" },
        }),
      (error) =>
        error.code === "SANDBOX_UNAVAILABLE" &&
        /needs Deno; .*\(a plugin: tier vm or process\)$/.test(error.message),
    );
  });
}
