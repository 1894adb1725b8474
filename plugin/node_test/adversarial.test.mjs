import http from "node:http";
import { test } from "node:test";
import { plugin } from "./_helpers.mjs";
import { registerAdversarialCases } from "./adversarial_cases.mjs";

const {
  createPluginHost,
  createSandboxedVmPluginModule,
  createPluginSandbox,
  identifyAnonymously,
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

// The table is shared with plugin/adversarial_test.ts (every tier on Deno);
// Node hosts the vm and process tiers.
registerAdversarialCases(
  {
    createPluginHost,
    createSandboxedVmPluginModule,
    createPluginSandbox,
    identifyAnonymously,
    serve,
    tiers: ["vm", "process"],
  },
  (name, fn) => test(name, (t) => fn({ step: (n, f) => t.test(n, f) })),
);
