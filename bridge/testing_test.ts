import assert from "node:assert/strict";
import { CordonError } from "../protocol/cordon_error.ts";
import { createSandboxedVmPluginModule } from "./host_bridge.ts";
import type { PluginModule, RouteDefinition } from "./plugin_module.ts";
import {
  type ConformanceCheckName,
  type ConformancePlugin,
  runVmHostBridgeConformance,
} from "./testing.ts";
import { createVmSandbox } from "./vm_sandbox.ts";

function realBridge(plugin: ConformancePlugin): PluginModule {
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

/** A bridge that delegates to the real one except where it is broken. */
function brokenBridge(
  plugin: ConformancePlugin,
  breakage: {
    routes?: (routes: readonly RouteDefinition[]) => RouteDefinition[];
    start?: (inner: PluginModule) => Promise<void>;
  },
): PluginModule {
  const inner = realBridge(plugin);
  return {
    manifest: inner.manifest,
    get routes() {
      return breakage.routes ? breakage.routes(inner.routes) : inner.routes;
    },
    start: () => breakage.start ? breakage.start(inner) : inner.start(),
    stop: () => inner.stop(),
    dispose: () => inner.dispose(),
    metrics: () => inner.metrics(),
    [Symbol.asyncDispose]: () => inner.dispose(),
  };
}

const mapHandlers = (
  wrap: (handler: RouteDefinition["handler"]) => RouteDefinition["handler"],
) =>
(routes: readonly RouteDefinition[]) =>
  routes.map((route) => ({ ...route, handler: wrap(route.handler) }));

const BROKEN: Record<
  ConformanceCheckName,
  (plugin: ConformancePlugin) => PluginModule
> = {
  "route registration": (plugin) =>
    brokenBridge(plugin, { routes: (routes) => routes.slice(0, -1) }),
  "request round trip": (plugin) =>
    brokenBridge(plugin, {
      routes: mapHandlers((handler) => (context) =>
        handler({ ...context, tenantId: null })
      ),
    }),
  "lifecycle": (plugin) =>
    brokenBridge(plugin, {
      start: async (inner) => {
        await inner.stop();
        await inner.start();
      },
    }),
  "error propagation": (plugin) =>
    brokenBridge(plugin, {
      routes: mapHandlers((handler) => async (context) => {
        try {
          return await handler(context);
        } catch (error) {
          if (
            error instanceof CordonError &&
            error.code === "BRIDGE_HANDLER_REJECTED"
          ) return new Response("plugin failed", { status: 500 });
          throw error;
        }
      }),
    }),
  "capability gate": (plugin) =>
    brokenBridge(plugin, {
      routes: mapHandlers((handler) => async (context) => {
        try {
          return await handler(context);
        } catch (error) {
          if (
            error instanceof CordonError && error.code === "PERMISSION_DENIED"
          ) {
            throw new CordonError("BRIDGE_HANDLER_REJECTED", "failed", {
              cause: error.cause,
            });
          }
          throw error;
        }
      }),
    }),
};

Deno.test("runVmHostBridgeConformance() passes for the vm host bridge", async () => {
  const report = await runVmHostBridgeConformance({ buildBridge: realBridge });
  assert.deepEqual(
    report.checks.map((check) => [check.name, check.passed, check.detail]),
    report.checks.map((check) => [check.name, true, check.detail]),
  );
  assert.deepEqual(report.checks.map((check) => check.name), [
    "route registration",
    "request round trip",
    "lifecycle",
    "error propagation",
    "capability gate",
  ]);
  assert.equal(report.passed, true);
});

for (const [name, build] of Object.entries(BROKEN)) {
  Deno.test(`runVmHostBridgeConformance() fails the ${name} check of a bridge broken there`, async () => {
    const report = await runVmHostBridgeConformance({ buildBridge: build });
    const check = report.checks.find((c) => c.name === name)!;
    assert.equal(check.passed, false, check.detail);
    assert.equal(report.passed, false);
    assert.ok(check.detail.length > 0);
    // The checks are independent: only the broken behaviour fails.
    assert.deepEqual(
      report.checks.filter((c) => !c.passed).map((c) => c.name),
      [name],
    );
  });
}

Deno.test("runVmHostBridgeConformance() reports a bridge that cannot start instead of throwing", async () => {
  const report = await runVmHostBridgeConformance({
    buildBridge: () => {
      throw new Error("no bridge here");
    },
    timeoutMs: 5000,
  });
  assert.equal(report.passed, false);
  assert.ok(report.checks.every((check) => !check.passed));
  assert.match(report.checks[0]!.detail, /no bridge here/);
});

Deno.test("runVmHostBridgeConformance() rejects options without buildBridge", async () => {
  await assert.rejects(
    runVmHostBridgeConformance(
      {} as Parameters<typeof runVmHostBridgeConformance>[0],
    ),
    TypeError,
  );
});
