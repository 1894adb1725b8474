import assert from "node:assert/strict";
import http from "node:http";
import { test } from "node:test";
import { plugin } from "./_helpers.mjs";
import { registerPluginHostCases } from "./plugin_host_e2e_cases.mjs";

const {
  createPluginHost,
  createSandboxedVmPluginModule,
  createPluginSandbox,
  identifyByTrustedHeaders,
  toNodeListener,
} = plugin;

/** Serves `handler` on Node's http server, through toNodeListener(). */
async function serve(handler) {
  const server = http.createServer(toNodeListener(handler));
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: server.address().port,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

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
        /needs Deno/.test(error.message),
    );
  });
}
