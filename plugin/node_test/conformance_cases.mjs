// The cases of runVmHostBridgeConformance() that hold on every runtime,
// written once. plugin/testing_test.ts registers them with Deno.test and
// plugin/node_test/conformance.test.mjs with node:test, each against its own
// build of the bridge. This file is JavaScript so that Node runs it as is.

import assert from "node:assert/strict";

/**
 * Registers the shared cases of runVmHostBridgeConformance().
 *
 * @param api `createSandboxedVmPluginModule`, `createPluginSandbox` and
 * `runVmHostBridgeConformance` of the build under test, `tiers` (the plugin
 * tiers this runtime hosts), and `isCordonError`, which tells whether a
 * thrown value is that build's CordonError.
 * @param test Registers one test: `test(name, fn)`.
 */
export function registerConformanceCases(api, test) {
  const {
    createSandboxedVmPluginModule,
    createPluginSandbox,
    isCordonError,
    runVmHostBridgeConformance,
    tiers,
  } = api;

  function realBridge(plugin, tier = "vm") {
    return createSandboxedVmPluginModule({
      manifest: plugin.manifest,
      sandbox: createPluginSandbox(tier, {
        pluginId: plugin.pluginId,
        pluginModule: plugin.pluginModule,
        policy: plugin.policy,
        proxies: plugin.proxies,
      }),
    });
  }

  /** A bridge that delegates to the real one except where it is broken. */
  function brokenBridge(plugin, breakage) {
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

  const mapHandlers = (wrap) => (routes) =>
    routes.map((route) => ({ ...route, handler: wrap(route.handler) }));

  /** For each check, a bridge broken in the behaviour that check covers. */
  const BROKEN = {
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
              isCordonError(error) && error.code === "BRIDGE_HANDLER_REJECTED"
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
            if (isCordonError(error) && error.code === "PERMISSION_DENIED") {
              return new Response("denied", { status: 200 });
            }
            throw error;
          }
        }),
      }),
  };

  for (const tier of tiers) {
    test(`runVmHostBridgeConformance() passes for a plugin on the ${tier} tier`, async () => {
      const report = await runVmHostBridgeConformance({
        buildBridge: (plugin) => realBridge(plugin, tier),
      });
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
  }

  for (const tier of tiers) {
    test(`createPluginSandbox() on the ${tier} tier reports that tier in metrics.tier`, async () => {
      const sandbox = createPluginSandbox(tier, {
        pluginId: `tier-${tier}`,
        pluginModule: {
          kind: "source",
          source: "export const twice = (n) => n * 2;",
          identifier: "twice.js",
        },
      });
      try {
        const started = await sandbox.start();
        const result = await sandbox.invoke("twice", 21);
        const missing = await sandbox.invoke("absent", null);
        assert.equal(result.ok, true);
        assert.equal(result.value, 42);
        assert.equal(missing.ok, false);
        assert.deepEqual(
          [started, result, missing].map((r) => r.metrics.tier),
          [tier, tier, tier],
        );
      } finally {
        await sandbox.dispose();
      }
    });
  }

  for (const tier of tiers) {
    test(`createPluginSandbox() on the ${tier} tier refuses a call past maxQueued with SANDBOX_BUSY at once`, async () => {
      let open = () => {};
      const gate = new Promise((resolve) => open = () => resolve("opened"));
      const sandbox = createPluginSandbox(tier, {
        pluginId: `busy-${tier}`,
        pluginModule: {
          kind: "source",
          source: `import { capabilities } from "cordon:host";
export const hold = () => capabilities.call("gate", null);
export const ping = () => "pong";`,
          identifier: "busy.js",
        },
        policy: { capabilities: ["gate"] },
        proxies: { capabilities: { gate: () => gate } },
        maxQueued: 1,
      });
      try {
        const held = [sandbox.invoke("hold"), sandbox.invoke("hold")];
        const refused = await sandbox.invoke("ping");
        assert.equal(refused.ok, false);
        assert.equal(refused.error.code, "SANDBOX_BUSY");
        assert.equal(refused.metrics.tier, tier);
        open();
        const answers = await Promise.all(held);
        assert.deepEqual(answers.map((r) => r.ok && r.value), [
          "opened",
          "opened",
        ]);
        const after = await sandbox.invoke("ping");
        assert.equal(after.ok && after.value, "pong");
      } finally {
        await sandbox.dispose();
      }
    });
  }

  for (const [name, build] of Object.entries(BROKEN)) {
    test(`runVmHostBridgeConformance() fails the ${name} check of a bridge broken there`, async () => {
      const report = await runVmHostBridgeConformance({ buildBridge: build });
      const check = report.checks.find((c) => c.name === name);
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

  test("runVmHostBridgeConformance() reports a bridge that cannot start instead of throwing", async () => {
    const report = await runVmHostBridgeConformance({
      buildBridge: () => {
        throw new Error("no bridge here");
      },
      timeoutMs: 5000,
    });
    assert.equal(report.passed, false);
    assert.ok(report.checks.every((check) => !check.passed));
    assert.match(report.checks[0].detail, /no bridge here/);
  });

  test("runVmHostBridgeConformance() rejects options without buildBridge", async () => {
    await assert.rejects(runVmHostBridgeConformance({}), TypeError);
  });

  test("runVmHostBridgeConformance() rejects a misspelt option and a timeoutMs out of range", async () => {
    const buildBridge = () => {
      throw new Error("not built");
    };
    await assert.rejects(
      runVmHostBridgeConformance({ buildBridge, timeout: 10 }),
      {
        name: "TypeError",
        message:
          "Cannot run the conformance checks: unknown option timeout; did you mean timeoutMs?",
      },
    );
    await assert.rejects(
      runVmHostBridgeConformance({ buildBridge, timeoutMs: Infinity }),
      {
        name: "RangeError",
        message:
          "Cannot run the conformance checks: timeoutMs must be an integer from 1 to 2147483647 milliseconds",
      },
    );
  });
}
