import { createSandboxedVmPluginModule } from "./host_bridge.ts";
import { createPluginHost, identifyAnonymously } from "./plugin_host.ts";
import { createPluginSandbox, PLUGIN_TIERS } from "./plugin_sandbox.ts";
import { registerAdversarialCases } from "./node_test/adversarial_cases.mjs";

/** Serves `handler` with Deno.serve on a free port of 127.0.0.1. */
function serve(handler: Deno.ServeHandler) {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    handler,
  );
  return { port: server.addr.port, close: () => server.shutdown() };
}

// The table is shared with the Node leg
// (plugin/node_test/adversarial.test.mjs).
registerAdversarialCases(
  {
    createPluginHost,
    createSandboxedVmPluginModule,
    createPluginSandbox,
    identifyAnonymously,
    serve,
    tiers: PLUGIN_TIERS,
  },
  (name: string, fn: (t: Deno.TestContext) => unknown) =>
    Deno.test(name, async (t) => {
      await fn(t);
    }),
);
