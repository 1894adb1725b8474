// The plugin host's share of a plugin's requests per caller
// (maxConcurrentRequestsPerCaller), written once.
// plugin/per_caller_test.ts registers these cases with Deno.test,
// plugin/node_test/per_caller.test.mjs with node:test on the Node build.
// Requests are held by promise gates, never by timers. This file is
// JavaScript so that Node runs it as is.

import assert from "node:assert/strict";

const PLUGIN_URL = "http://127.0.0.1/plugins/slow/";

/** A request from a tenant (`null`: none), as a trusted gateway forwards it. */
function from(tenant, init = {}) {
  const headers = tenant === null ? {} : { "x-cordon-tenant": tenant };
  return new Request(PLUGIN_URL, { ...init, headers });
}

/** A promise and its resolve (Node 20 has no Promise.withResolvers). */
function resolvers() {
  let resolve;
  const promise = new Promise((settle) => resolve = settle);
  return { promise, resolve };
}

/**
 * Holds whoever calls `hold()` until `release()`, and tells when a number
 * of holders in all have arrived.
 */
function gate() {
  const held = [];
  const arrivals = [];
  let arrived = 0;
  return {
    get arrived() {
      return arrived;
    },
    hold() {
      arrived++;
      for (const arrival of arrivals.splice(0)) {
        if (arrival.count <= arrived) arrival.resolve();
        else arrivals.push(arrival);
      }
      const { promise, resolve } = resolvers();
      held.push(resolve);
      return promise;
    },
    /** Resolves once `count` holders in all have arrived. */
    reached(count) {
      if (arrived >= count) return Promise.resolve();
      const { promise, resolve } = resolvers();
      arrivals.push({ count, resolve });
      return promise;
    },
    release() {
      for (const resolve of held.splice(0)) resolve();
    },
  };
}

const CALLER_BUSY_DETAIL =
  'Plugin "slow" is answering as many requests of this caller as the host\'s maxConcurrentRequestsPerCaller allows: retry shortly';

async function assertCallerBusy(response) {
  assert.equal(response.status, 503);
  assert.equal(response.headers.get("retry-after"), "1");
  const body = await response.json();
  assert.equal(body.code, "PLUGIN_BUSY");
  assert.equal(body.detail, CALLER_BUSY_DETAIL);
}

async function assertServed(response) {
  assert.equal(response.status, 200);
  assert.equal(await response.text(), "done");
}

/**
 * Registers the cases.
 *
 * @param api `createPluginHost`, `createHostPluginModule`,
 * `createSandboxedVmPluginModule`, `createPluginSandbox` and
 * `identifyByTrustedHeaders` of the build under test.
 * @param test Registers one test: `test(name, fn)`.
 */
export function registerPerCallerCases(api, test) {
  const {
    createPluginHost,
    createHostPluginModule,
    createSandboxedVmPluginModule,
    createPluginSandbox,
    identifyByTrustedHeaders,
  } = api;

  /** A host with 8 places per plugin and 2 per caller. */
  function hostOf(identify = identifyByTrustedHeaders) {
    return createPluginHost({
      identify,
      identifyTimeoutMs: 3_600_000,
      maxConcurrentRequests: 8,
      maxConcurrentRequestsPerCaller: 2,
    });
  }

  /**
   * A host plugin whose answers to tenant `held` (with no principal) wait
   * at the gate, and that fails every request while `state.failing`; it
   * reads a POST's body, as every plugin module does before its handler
   * runs.
   */
  function slowPlugin(gated, { held = "a", state = { failing: false } } = {}) {
    return createHostPluginModule({
      manifest: { id: "slow", version: "1.0.0" },
      plugin: {
        routes: () => [
          { method: "GET", path: "/" },
          { method: "POST", path: "/" },
        ],
        handleRequest: async (req) => {
          if (state.failing) throw new Error("the plugin failed");
          // A principal of the held tenant is answered at once.
          if (req.tenantId === held && req.principalId === null) {
            await gated.hold();
          }
          return { status: 200, headers: [], body: "done" };
        },
      },
    });
  }

  /**
   * Has tenant "a" take exactly its 2 places: its next request is refused
   * while tenant "b" is served. Then lets them go.
   */
  async function assertWholeShare(host, gated) {
    const held = [host.fetch(from("a")), host.fetch(from("a"))];
    await gated.reached(gated.arrived + 2);
    await assertCallerBusy(await host.fetch(from("a")));
    await assertServed(await host.fetch(from("b")));
    gated.release();
    for (const response of await Promise.all(held)) {
      await assertServed(response);
    }
  }

  test("the plugin host serves other callers while one holds maxConcurrentRequestsPerCaller requests of a plugin, and refuses that caller's next with PLUGIN_BUSY naming the option", async () => {
    const gated = gate();
    const host = hostOf();
    try {
      await host.installPlugin({ kind: "host", module: slowPlugin(gated) });
      const held = [host.fetch(from("a")), host.fetch(from("a"))];
      await gated.reached(2);
      await assertCallerBusy(await host.fetch(from("a")));
      assert.equal(gated.arrived, 2);
      // Another tenant, and another principal of the same tenant, are
      // other callers.
      await assertServed(await host.fetch(from("b")));
      await assertServed(
        await host.fetch(
          new Request(PLUGIN_URL, {
            headers: { "x-cordon-tenant": "a", "x-cordon-principal": "ada" },
          }),
        ),
      );
      gated.release();
      for (const response of await Promise.all(held)) {
        await assertServed(response);
      }
    } finally {
      await host.dispose();
    }
  });

  test("the plugin host counts every request without an identity as one caller under maxConcurrentRequestsPerCaller", async () => {
    const gated = gate();
    const host = hostOf();
    try {
      await host.installPlugin({
        kind: "host",
        module: slowPlugin(gated, { held: null }),
      });
      const held = [host.fetch(from(null)), host.fetch(from(null))];
      await gated.reached(2);
      await assertCallerBusy(await host.fetch(from(null)));
      await assertServed(await host.fetch(from("b")));
      gated.release();
      for (const response of await Promise.all(held)) {
        await assertServed(response);
      }
    } finally {
      await host.dispose();
    }
  });

  test("the plugin host gives a caller's place back when its request is answered or fails", async () => {
    const gated = gate();
    const state = { failing: false };
    const host = hostOf();
    try {
      await host.installPlugin({
        kind: "host",
        module: slowPlugin(gated, { state }),
      });
      await assertWholeShare(host, gated);
      // Answered: its share is whole again, and no larger.
      await assertWholeShare(host, gated);
      state.failing = true;
      for (let i = 0; i < 3; i++) {
        const failed = await host.fetch(from("a"));
        assert.equal(failed.status, 502);
        await failed.body?.cancel();
      }
      state.failing = false;
      await assertWholeShare(host, gated);
    } finally {
      await host.dispose();
    }
  });

  test("the plugin host gives a caller's place back when its client leaves during identify() or while its body is read", async () => {
    const gated = gate();
    const identifying = gate();
    const reading = gate();
    const host = hostOf(async (request) => {
      // "late" is tenant "a", known only once the test lets it go.
      if (request.headers.get("x-cordon-tenant") !== "late") {
        return identifyByTrustedHeaders(request);
      }
      await identifying.hold();
      return { principalId: null, tenantId: "a" };
    });
    try {
      await host.installPlugin({ kind: "host", module: slowPlugin(gated) });
      const client = new AbortController();
      const left = host.fetch(from("late", { signal: client.signal }));
      await identifying.reached(1);
      client.abort();
      assert.equal((await (await left).json()).code, "ABORTED");
      await assertWholeShare(host, gated);
      // Two bodies the plugin module waits for: both requests count.
      const bodies = [];
      const posts = [0, 1].map(() =>
        host.fetch(from("a", {
          method: "POST",
          body: new ReadableStream({
            pull(controller) {
              bodies.push(controller);
              return reading.hold();
            },
          }),
          duplex: "half",
        }))
      );
      await reading.reached(2);
      await assertCallerBusy(await host.fetch(from("a")));
      // Their clients leave.
      for (const controller of bodies) {
        controller.error(new Error("the client left"));
      }
      reading.release();
      for (const response of await Promise.all(posts)) {
        assert.ok(response.status >= 400, `answered ${response.status}`);
        await response.body?.cancel();
      }
      await assertWholeShare(host, gated);
    } finally {
      identifying.release();
      await host.dispose();
    }
  });

  test("the plugin host leaves no caller's count behind when a plugin is uninstalled or the host disposed with its requests in flight", async () => {
    const gated = gate();
    const host = hostOf();
    try {
      await host.installPlugin({ kind: "host", module: slowPlugin(gated) });
      const held = [host.fetch(from("a")), host.fetch(from("a"))];
      await gated.reached(2);
      assert.equal(await host.uninstallPlugin("slow"), true);
      // The same id installed again starts with every caller's share.
      const next = gate();
      await host.installPlugin({ kind: "host", module: slowPlugin(next) });
      await assertWholeShare(host, next);
      // The requests of the plugin that was uninstalled end meanwhile, and
      // what they held is nobody's.
      gated.release();
      for (const response of await Promise.all(held)) {
        await response.body?.cancel();
      }
      await assertWholeShare(host, next);
    } finally {
      await host.dispose();
    }
    const disposed = hostOf();
    await disposed.installPlugin({ kind: "host", module: slowPlugin(gated) });
    const inFlight = [disposed.fetch(from("a")), disposed.fetch(from("a"))];
    await gated.reached(gated.arrived + 2);
    await disposed.dispose();
    gated.release();
    for (const response of await Promise.all(inFlight)) {
      await response.body?.cancel();
    }
    const after = await disposed.fetch(from("a"));
    assert.equal((await after.json()).code, "SANDBOX_DISPOSED");
  });

  test("the plugin host counts a sandboxed plugin's requests per caller, and they end when it is uninstalled", async () => {
    const held = gate();
    const host = hostOf();
    const sandboxed = () =>
      createSandboxedVmPluginModule({
        manifest: { id: "slow", version: "1.0.0" },
        sandbox: createPluginSandbox("vm", {
          pluginId: "slow",
          pluginModule: {
            kind: "source",
            identifier: "slow.js",
            source: `import { capabilities } from "cordon:host";
export const routes = () => [{ method: "GET", path: "/" }];
export async function handleRequest(req) {
  if (req.tenantId === "a") await capabilities.call("hold", {});
  return { status: 200, headers: [], body: "done" };
}`,
          },
          policy: { capabilities: ["hold"] },
          proxies: { capabilities: { hold: () => held.hold() } },
        }),
      });
    try {
      await host.installPlugin({ kind: "vm", module: sandboxed() });
      const inFlight = [host.fetch(from("a")), host.fetch(from("a"))];
      await held.reached(2);
      await assertCallerBusy(await host.fetch(from("a")));
      await assertServed(await host.fetch(from("b")));
      assert.equal(await host.uninstallPlugin("slow"), true);
      for (const response of await Promise.all(inFlight)) {
        assert.equal(response.status, 503);
        assert.equal((await response.json()).code, "SANDBOX_DISPOSED");
      }
      await host.installPlugin({ kind: "vm", module: sandboxed() });
      const again = [host.fetch(from("a")), host.fetch(from("a"))];
      await held.reached(4);
      await assertCallerBusy(await host.fetch(from("a")));
      held.release();
      for (const response of await Promise.all(again)) {
        await assertServed(response);
      }
    } finally {
      held.release();
      await host.dispose();
    }
  });
}
