import http from "node:http";
import { test } from "node:test";
import { plugin, vm } from "./_helpers.mjs";
import { registerPluginHostCases } from "./plugin_host_e2e_cases.mjs";

const {
  createPluginHost,
  createSandboxedVmPluginModule,
  identifyByTrustedHeaders,
  toNodeListener,
} = plugin;
const { createVmSandbox } = vm;

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
    createVmSandbox,
    identifyByTrustedHeaders,
    serve,
  },
  (name, fn) => test(name, (t) => fn({ step: (n, f) => t.test(n, f) })),
);
