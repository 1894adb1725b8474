// The leak probe of the plugin host, written once: plugin/leak_test.ts
// registers it on every tier Deno runs, plugin/node_test/leak.test.mjs on
// the tiers Node hosts. Hostile and failing requests, plugins that fail to
// install, an uninstall and a disposal with requests and installs under
// way, then 20 hosts created and disposed, must leave this process as it
// found it (no realm process or thread, no descriptor, no busy core). This
// file is JavaScript so that Node runs it as is.

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  assertBackToBaseline,
  HAS_PROC,
  takeReading,
} from "../../vm/node_test/leak_probe.mjs";

const MAX_PAYLOAD_BYTES = 64 * 1024;
/** The deadline of the plugin that answers the runaway routes. */
const SHORT_TIMEOUT_MS = 300;
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Handler bodies of the hostile plugin, by route. */
const HANDLERS = {
  ok: `return { status: 200, headers: [], body: "ok" };`,
  throws: `throw new Error("no");`,
  loop: `for (;;) {}`,
  hang: `return new Promise(() => {});`,
  // Large steps, so that the heap runs out well within timeoutMs on a busy
  // machine (in 100,000-element steps it timed out first there).
  bomb:
    `const h = []; for (;;) h.push(new Array(1e6).fill(h.length)); return h;`,
  garbage: `return { status: 200, headers: [], body: () => 1 };`,
  denied: `return await import("node:fs");`,
  flood: `return { status: 200, headers: [], body: "x".repeat(${
    MAX_PAYLOAD_BYTES + 2 * 1024 * 1024
  }) };`,
  header: `return { status: 200, headers: [["set-cookie", "a=b"]], body: "" };`,
};

const PLUGIN = `
export const routes = () => ${
  JSON.stringify(
    Object.keys(HANDLERS).map((name) => ({ method: "GET", path: `/${name}` })),
  )
};
export async function handleRequest(req) {
  switch (new URL(req.url).pathname.split("/").pop()) {
${
  Object.entries(HANDLERS).map(([name, body]) =>
    `    case "${name}": { ${body} }`
  ).join("\n")
}
  }
}`;

/**
 * What each route answers: a status, and the problem's code. The runaways
 * (the two TIMEOUTs) go to a plugin with a short deadline; the rest get a
 * long one, so that a busy machine cannot turn their answers into TIMEOUT.
 */
const ANSWERS = [
  ["ok", 200, null],
  ["throws", 502, "BRIDGE_HANDLER_REJECTED"],
  ["loop", 504, "TIMEOUT"],
  ["hang", 504, "TIMEOUT"],
  ["bomb", 502, "OUT_OF_MEMORY"],
  ["garbage", 502, "BRIDGE_UNMARSHAL_FAILED"],
  // A plugin's own failure, whatever its code, is the handler's.
  ["denied", 502, "BRIDGE_HANDLER_REJECTED"],
  // Refused while the realm writes it, as an answer just over the limit.
  ["flood", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ["header", 502, "BRIDGE_RESPONSE_HEADER_DENIED"],
];

/** Plugins that cannot install, and the code the install fails with. */
const BROKEN = [
  ["export const routes = (;", "BRIDGE_LIFECYCLE_FAILED"],
  [
    "export function start() { throw new Error('no'); }\nexport const routes = () => [];\nexport const handleRequest = () => null;",
    "BRIDGE_LIFECYCLE_FAILED",
  ],
  ["export const routes = () => 42;", "BRIDGE_INVALID_PLUGIN_SURFACE"],
  [
    "export const start = 5;\nexport const routes = () => [];\nexport const handleRequest = () => null;",
    "BRIDGE_INVALID_PLUGIN_SURFACE",
  ],
  [
    "export const stop = {};\nexport const routes = () => [];\nexport const handleRequest = () => null;",
    "BRIDGE_INVALID_PLUGIN_SURFACE",
  ],
];

/** Plugins that install: an optional hook exported as undefined is absent. */
const ABSENT_HOOKS = [
  "export const start = undefined;\nexport const stop = undefined;\nexport const routes = () => [];\nexport const handleRequest = () => null;",
];

/**
 * Registers the probe.
 *
 * @param api `createPluginHost`, `createSandboxedVmPluginModule`,
 * `createPluginSandbox`, `identifyAnonymously` of the build under test,
 * and `tiers`, the tiers to probe on this runtime.
 * @param test Registers one test: `test(name, { skip }, fn)`.
 */
export function registerPluginLeakCases(api, test) {
  const {
    createPluginHost,
    createSandboxedVmPluginModule,
    createPluginSandbox,
    identifyAnonymously,
    tiers,
  } = api;

  function pluginOf(tier, id, source = PLUGIN, timeoutMs = 10_000) {
    const sandbox = createPluginSandbox(tier, {
      pluginId: id,
      pluginModule: { kind: "source", source, identifier: `${id}.js` },
      limits: {
        timeoutMs,
        memoryLimitBytes: 32 * 1024 * 1024,
        maxPayloadBytes: MAX_PAYLOAD_BYTES,
      },
    });
    return createSandboxedVmPluginModule({
      manifest: { id, version: "1.0.0" },
      sandbox,
    });
  }

  /** Asks `host` for a route; checks the status, the code and the text. */
  async function expectAnswer(host, path, status, code) {
    const response = await host.fetch(new Request(`http://h/plugins/${path}`));
    const text = await response.text();
    assert.ok(
      !text.includes(ROOT) && !text.includes("file://"),
      `${path}: ${text}`,
    );
    const problem = code === null ? null : JSON.parse(text).code;
    assert.deepEqual([response.status, problem], [status, code], path);
    if (code === "SANDBOX_DISPOSED") {
      // Whether the plugin or its host is going away, the client retries.
      assert.match(
        JSON.parse(text).detail,
        /is being uninstalled, or its host is shutting down: retry later$/,
        path,
      );
    }
  }

  async function withHost(use) {
    const host = createPluginHost({ identify: identifyAnonymously });
    try {
      await use(host);
    } finally {
      await host.dispose();
    }
  }

  test(
    `the plugin host leaves no realm, descriptor, thread, memory or busy core behind on the ${
      tiers.join(", ")
    } tiers after hostile requests, failed installs, disposal under way and 20 lifecycles`,
    { skip: !HAS_PROC },
    async () => {
      await withHost(async (host) => {
        for (const tier of tiers) {
          await host.installPlugin({
            kind: tier,
            module: pluginOf(tier, tier),
          });
        }
      });
      const baseline = takeReading();
      await withHost(async (host) => {
        for (const tier of tiers) {
          await host.installPlugin({
            kind: tier,
            module: pluginOf(tier, tier),
          });
          const runaways = `${tier}-runaways`;
          await host.installPlugin({
            kind: tier,
            module: pluginOf(tier, runaways, PLUGIN, SHORT_TIMEOUT_MS),
          });
          for (const [route, status, code] of ANSWERS) {
            const id = code === "TIMEOUT" ? runaways : tier;
            await expectAnswer(host, `${id}/${route}`, status, code);
            await expectAnswer(host, `${id}/ok`, 200, null);
          }
          for (const [index, [source, code]] of BROKEN.entries()) {
            await assert.rejects(
              host.installPlugin({
                kind: tier,
                module: pluginOf(tier, `broken-${index}`, source),
              }),
              { code },
            );
          }
          for (const [index, source] of ABSENT_HOOKS.entries()) {
            const id = `absent-${index}`;
            await host.installPlugin({
              kind: tier,
              module: pluginOf(tier, id, source),
            });
            assert.equal(await host.uninstallPlugin(id), true);
          }
          // An uninstall with a request under way: the request is answered
          // for the disposal at once, not left to its deadline.
          const pending = expectAnswer(
            host,
            `${tier}/hang`,
            503,
            "SANDBOX_DISPOSED",
          );
          await new Promise((resolve) => setTimeout(resolve, 100));
          assert.equal(await host.uninstallPlugin(tier), true);
          await pending;
        }
        // Disposed with a request and an install under way.
        const [first] = tiers;
        await host.installPlugin({
          kind: first,
          module: pluginOf(first, "last"),
        });
        const pending = expectAnswer(
          host,
          "last/hang",
          503,
          "SANDBOX_DISPOSED",
        );
        // Its start() hook would hold the install until the hook's
        // deadline; the disposal ends it at once.
        const installing = assert.rejects(
          host.installPlugin({
            kind: first,
            module: pluginOf(
              first,
              "late",
              "export const start = () => new Promise(() => {});\nexport const routes = () => [];\nexport const handleRequest = () => null;",
            ),
          }),
          (error) =>
            error.code === "BRIDGE_LIFECYCLE_FAILED" &&
            error.cause?.code === "SANDBOX_DISPOSED",
        );
        await new Promise((resolve) => setTimeout(resolve, 100));
        await host.dispose();
        await pending;
        await installing;
      });
      for (let i = 0; i < 20; i++) {
        const tier = tiers[i % tiers.length];
        await withHost(async (host) => {
          await host.installPlugin({ kind: tier, module: pluginOf(tier, "p") });
          await expectAnswer(host, "p/ok", 200, null);
        });
      }
      console.log(await assertBackToBaseline(baseline, "plugin host"));
    },
  );
}
