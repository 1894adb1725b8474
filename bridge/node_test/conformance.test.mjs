import assert from "node:assert/strict";
import { test } from "node:test";
import { bridge, testing } from "./_helpers.mjs";

const { createSandboxedVmPluginModule, createVmSandbox } = bridge;
const { runVmHostBridgeConformance } = testing;

function realBridge(plugin) {
  return createSandboxedVmPluginModule({
    manifest: plugin.manifest,
    sandbox: createVmSandbox({
      pluginId: plugin.pluginId,
      pluginModule: plugin.pluginModule,
      policy: plugin.policy,
      proxies: plugin.proxies,
    }),
  });
}

function broken(plugin, { routes, start }) {
  const inner = realBridge(plugin);
  return {
    manifest: inner.manifest,
    get routes() {
      return routes ? routes(inner.routes) : inner.routes;
    },
    start: () => (start ? start(inner) : inner.start()),
    stop: () => inner.stop(),
    dispose: () => inner.dispose(),
    metrics: () => inner.metrics(),
  };
}

const wrapHandlers = (wrap) => (routes) =>
  routes.map((route) => ({ ...route, handler: wrap(route.handler) }));

const BROKEN = {
  "route registration": (p) =>
    broken(p, { routes: (routes) => routes.slice(0, -1) }),
  "request round trip": (p) =>
    broken(p, {
      routes: wrapHandlers((h) => (c) => h({ ...c, principalId: null })),
    }),
  "lifecycle": (p) =>
    broken(p, {
      start: async (inner) => {
        await inner.stop();
        await inner.start();
      },
    }),
  "error propagation": (p) =>
    broken(p, {
      routes: wrapHandlers((h) => (c) =>
        h(c).catch((error) => {
          if (error.code === "BRIDGE_HANDLER_REJECTED") {
            return new Response("failed", { status: 500 });
          }
          throw error;
        })
      ),
    }),
  "capability gate": (p) =>
    broken(p, {
      routes: wrapHandlers((h) => (c) =>
        h(c).catch((error) => {
          if (error.code === "PERMISSION_DENIED") {
            return new Response("denied", { status: 200 });
          }
          throw error;
        })
      ),
    }),
};

test("runVmHostBridgeConformance() on Node passes for the vm host bridge", async () => {
  const report = await runVmHostBridgeConformance({ buildBridge: realBridge });
  assert.deepEqual(
    report.checks.filter((c) => !c.passed),
    [],
  );
  assert.equal(report.checks.length, 5);
  assert.equal(report.passed, true);
});

for (const [name, build] of Object.entries(BROKEN)) {
  test(`runVmHostBridgeConformance() on Node fails only the ${name} check of a bridge broken there`, async () => {
    const report = await runVmHostBridgeConformance({ buildBridge: build });
    assert.equal(report.passed, false);
    assert.deepEqual(
      report.checks.filter((c) => !c.passed).map((c) => c.name),
      [name],
    );
  });
}
