// The long-uptime table: what an operator sees of a hostile plugin after
// weeks, written once. plugin/uptime_test.ts registers it with Deno.test on
// every tier, plugin/node_test/uptime.test.mjs with node:test on the tiers
// Node hosts. This file is JavaScript so that Node runs it as is.
//
// Restart storms: a plugin whose start() throws in every new realm, or whose
// module never finishes loading again, must not cost the host a realm start
// per request for ever; one whose realm dies at each request it serves is
// started again for each, and each request gets its own answer. Plugin text
// that reaches the operator (console lines, thrown messages, route paths
// quoted in install errors) must arrive as one bounded line without
// terminal escapes.

import assert from "node:assert/strict";
import { buildTablePlugin, CANARY } from "./_table_plugins.mjs";

/**
 * A call's and a module's deadline, which each runaway reaches: 1.5 s leave
 * a loaded machine room for the loads and calls that must finish (each a
 * capability round trip), where 300 ms failed a reinstall at a load of 10.
 */
const TIMEOUT_MS = 1500;
/** Only a realm that never comes up takes this long, however loaded the machine. */
const STARTUP_MS = 120_000;
const MEMORY_BYTES = 32 * 1024 * 1024;
/** Realms a sandbox may start again after failures, per window. */
const MAX_RESTARTS = 1;
/** Longer than the table runs, so no refusal ends inside it. */
const RESTART_WINDOW_MS = 120_000;
/** Requests sent once the plugin's realm keeps dying. */
const STORM = 6;
/** The longest text the host keeps of one plugin value (and its marker). */
const MAX_TEXT = 8192 + "…[+99999999]".length;

/**
 * What an operator's terminal or log reader would act on: control and
 * format characters (bidi controls among them), line and paragraph
 * separators, and lone surrogates.
 */
const CONTROL = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;

/** A plugin value that would forge a log line and repaint a terminal. */
const FORGED =
  "\\u001b[2J\\u001b[31mboom\\r\\n2025-01-01T00:00:00Z INFO admin logged in\\u0085\\u2028\\u202e";

/**
 * The storm plugin: the host's `storm.mode` capability says how its next
 * realm behaves, so the plugin installs well and then fails the way a
 * flaky dependency or a time bomb would.
 */
const STORM_PLUGIN = `
import { capabilities } from "cordon:host";
const mode = await capabilities.call("storm.mode", null);
if (mode === "load-hangs") await new Promise(() => {});
export async function start() {
  if ((await capabilities.call("storm.mode", null)) === "start-throws") {
    throw new Error("cannot start");
  }
}
export const routes = () => [{ method: "GET", path: "/:name" }];
export function handleRequest(req) {
  if (req.params.name === "loop") for (;;) {}
  return { status: 200, headers: [], body: "ok" };
}`;

/** How the realm dies, the mode its new realms see, the path requested. */
const STORMS = [
  ["its start() throws in every new realm", "start-throws", "ok"],
  ["its module never finishes loading again", "load-hangs", "ok"],
];

/** A plugin whose console lines and throws carry FORGED. */
const NOISY_PLUGIN = `
export const routes = () => [{ method: "GET", path: "/:name" }];
export function handleRequest(req) {
  if (req.params.name === "throw") throw new Error("${FORGED}");
  console.log("${FORGED}");
  console.error("x".repeat(20000) + "${FORGED}");
  return { status: 200, headers: [], body: "ok" };
}`;

/** A plugin whose one route path carries FORGED, 100,000 characters long. */
const FORGED_ROUTE_PLUGIN = `
export const routes = () => [
  { method: "GET", path: "/${FORGED}" + "p".repeat(100000) },
  { method: "${FORGED}", path: "/ok" },
];
export const handleRequest = () => ({ status: 200, headers: [], body: "ok" });`;

/** Every string in `value` (messages, names, causes), with where it is. */
function stringsOf(value, where = "", seen = new Set()) {
  if (typeof value === "string") return [[where, value]];
  if (typeof value !== "object" || value === null || seen.has(value)) {
    return [];
  }
  seen.add(value);
  const found = [];
  for (const key of ["message", "name", "cause"]) {
    if (key in value) {
      found.push(...stringsOf(value[key], `${where}.${key}`, seen));
    }
  }
  return found;
}

/** Throws unless every string of `value` is one bounded, escaped line. */
function assertOperatorSafe(value, what) {
  for (const [where, text] of stringsOf(value)) {
    assert.ok(
      !CONTROL.test(text),
      `${what}${where} holds a control character: ${
        JSON.stringify(text.slice(0, 200))
      }`,
    );
    assert.ok(
      text.length <= 4 * MAX_TEXT,
      `${what}${where} is ${text.length} characters long`,
    );
  }
}

/**
 * Registers the table.
 *
 * @param api `createPluginHost`, `createSandboxedVmPluginModule`,
 * `createPluginSandbox`, `identifyAnonymously` of the build under test,
 * and `tiers`, the tiers to run on this runtime.
 * @param test Registers one test: `test(name, fn)`, `fn` given `{ step }`.
 */
export function registerUptimeCases(api, test) {
  const {
    createPluginHost,
    identifyAnonymously,
    tiers,
  } = api;

  function build(tier, id, source, extra = {}) {
    return buildTablePlugin(api, tier, id, source, {
      ...extra,
      limits: {
        timeoutMs: TIMEOUT_MS,
        startupTimeoutMs: STARTUP_MS,
        memoryLimitBytes: MEMORY_BYTES,
        maxRestarts: MAX_RESTARTS,
        restartWindowMs: RESTART_WINDOW_MS,
        ...extra.limits,
      },
    });
  }

  async function call(host, url) {
    const response = await host.fetch(new Request(url));
    const text = await response.text();
    let code = null;
    try {
      code = JSON.parse(text).code ?? null;
    } catch {
      // A plugin's own answer.
    }
    return { status: response.status, headers: response.headers, text, code };
  }

  async function canaryAlive(host) {
    const answer = await call(host, "http://h/plugins/canary/ok");
    assert.deepEqual([answer.status, answer.text], [200, "alive"]);
  }

  for (const tier of tiers) {
    test(`a plugin on the ${tier} tier past its sandbox's maxQueued is answered 503 SANDBOX_BUSY with Retry-After, and serves again once its calls finish`, async () => {
      const host = createPluginHost({ identify: identifyAnonymously });
      let open = () => {};
      const gate = new Promise((resolve) => open = () => resolve("opened"));
      try {
        await host.installPlugin({
          kind: tier,
          module: build(
            tier,
            "gated",
            `import { capabilities } from "cordon:host";
export const routes = () => [{ method: "GET", path: "/:name" }];
export async function handleRequest(req) {
  const body = req.params.name === "hold"
    ? await capabilities.call("gate", null)
    : "ok";
  return { status: 200, headers: [], body };
}`,
            {
              policy: { capabilities: ["gate"] },
              proxies: { capabilities: { gate: () => gate } },
              maxQueued: 0,
            },
          ).module,
        });
        const held = call(host, "http://h/plugins/gated/hold");
        const refused = await call(host, "http://h/plugins/gated/ok");
        assert.deepEqual(
          [refused.status, refused.code],
          [503, "SANDBOX_BUSY"],
          refused.text,
        );
        assert.equal(refused.headers.get("retry-after"), "1");
        open();
        const answered = await held;
        assert.deepEqual([answered.status, answered.text], [200, "opened"]);
        const served = await call(host, "http://h/plugins/gated/ok");
        assert.deepEqual([served.status, served.text], [200, "ok"]);
      } finally {
        await host.dispose();
      }
    });
  }

  for (const tier of tiers) {
    test(`a plugin on the ${tier} tier whose realm keeps dying is restarted at most limits.maxRestarts times a window, then answered 503 SANDBOX_RESTART_LIMITED`, async (t) => {
      const host = createPluginHost({ identify: identifyAnonymously });
      try {
        await host.installPlugin({
          kind: tier,
          module: build(tier, "canary", CANARY).module,
        });
        for (const [name, mode, path] of STORMS) {
          await t.step(name, async () => {
            let next = "ok";
            const { sandbox, module } = build(tier, "storm", STORM_PLUGIN, {
              policy: { capabilities: ["storm.mode"] },
              proxies: { capabilities: { "storm.mode": () => next } },
            });
            await host.installPlugin({ kind: tier, module });
            try {
              next = mode;
              // The realm that served the install dies here.
              const first = await call(host, "http://h/plugins/storm/loop");
              assert.deepEqual([first.status, first.code], [504, "TIMEOUT"]);
              const answers = [];
              for (let i = 0; i < STORM; i++) {
                answers.push(
                  await call(host, `http://h/plugins/storm/${path}`),
                );
              }
              const { realmsStarted, restarts } = sandbox.instruments;
              assert.ok(
                realmsStarted <= 1 + MAX_RESTARTS,
                `${realmsStarted} realms started for ${STORM + 1} requests`,
              );
              assert.equal(restarts, MAX_RESTARTS);
              const last = answers.at(-1);
              assert.deepEqual(
                [last.status, last.code],
                [503, "SANDBOX_RESTART_LIMITED"],
                last.text,
              );
              const retryAfter = Number(last.headers.get("retry-after"));
              assert.ok(
                Number.isInteger(retryAfter) && retryAfter >= 1 &&
                  retryAfter <= RESTART_WINDOW_MS / 1000,
                `Retry-After: ${last.headers.get("retry-after")}`,
              );
              const metrics = module.metrics();
              assert.equal(metrics.restarts, MAX_RESTARTS);
              assert.equal(
                metrics.restartsRefused,
                answers.filter((a) => a.code === "SANDBOX_RESTART_LIMITED")
                  .length,
              );
              await canaryAlive(host);
            } finally {
              await host.uninstallPlugin("storm");
            }
            // Installed again, the plugin has a new budget and serves.
            next = "ok";
            const again = build(tier, "storm", STORM_PLUGIN, {
              policy: { capabilities: ["storm.mode"] },
              proxies: { capabilities: { "storm.mode": () => next } },
            });
            await host.installPlugin({ kind: tier, module: again.module });
            const served = await call(host, "http://h/plugins/storm/ok");
            assert.deepEqual([served.status, served.text], [200, "ok"]);
            await host.uninstallPlugin("storm");
          });
        }
      } finally {
        await host.dispose();
      }
    });

    test(`a plugin on the ${tier} tier whose realm loops at every request is started again for each, past limits.maxRestarts, and each request answers 504 TIMEOUT`, async () => {
      const host = createPluginHost({ identify: identifyAnonymously });
      try {
        const { sandbox, module } = build(tier, "looper", STORM_PLUGIN, {
          policy: { capabilities: ["storm.mode"] },
          proxies: { capabilities: { "storm.mode": () => "ok" } },
        });
        await host.installPlugin({ kind: tier, module });
        const answers = [];
        for (let i = 0; i < MAX_RESTARTS + 3; i++) {
          answers.push(await call(host, "http://h/plugins/looper/loop"));
        }
        assert.deepEqual(
          answers.map((a) => [a.status, a.code]),
          answers.map(() => [504, "TIMEOUT"]),
        );
        const served = await call(host, "http://h/plugins/looper/ok");
        assert.deepEqual([served.status, served.text], [200, "ok"]);
        assert.equal(sandbox.instruments.restarts, MAX_RESTARTS + 3);
        assert.equal(module.metrics().restartsRefused, 0);
      } finally {
        await host.dispose();
      }
    });

    test(`plugin text on the ${tier} tier reaches onLog, onError and install errors as one bounded line without control characters`, async (t) => {
      const logs = [];
      const errors = [];
      const host = createPluginHost({
        identify: identifyAnonymously,
        onError: (error) => errors.push(error),
      });
      try {
        const { module } = build(tier, "noisy", NOISY_PLUGIN, {
          onLog: (entry) => logs.push(entry),
          limits: { timeoutMs: 10_000 },
        });
        await host.installPlugin({ kind: tier, module });
        await t.step("console lines", async () => {
          const answer = await call(host, "http://h/plugins/noisy/log");
          assert.deepEqual([answer.status, answer.text], [200, "ok"]);
          assert.equal(logs.length, 2);
          for (const entry of logs) assertOperatorSafe(entry, "onLog");
          // Escaped, not dropped: the operator still reads what was logged.
          assert.ok(logs[0].message.includes("INFO admin logged in"));
          assert.ok(logs[0].message.includes("\\x1b[2J"));
        });
        await t.step("a thrown message", async () => {
          const answer = await call(host, "http://h/plugins/noisy/throw");
          assert.deepEqual(
            [answer.status, answer.code],
            [502, "BRIDGE_HANDLER_REJECTED"],
          );
          assert.equal(errors.length, 1);
          assertOperatorSafe(errors[0], "onError");
          assert.ok(JSON.stringify(errors[0].cause).includes("admin logged"));
        });
        await t.step(
          "route paths and methods quoted in install errors",
          async () => {
            const { module: forged } = build(
              tier,
              "forged",
              FORGED_ROUTE_PLUGIN,
              { limits: { timeoutMs: 10_000 } },
            );
            await assert.rejects(
              host.installPlugin({ kind: tier, module: forged }),
              (error) => {
                assert.equal(error.code, "BRIDGE_INVALID_PLUGIN_SURFACE");
                assertOperatorSafe(error, "install error");
                return true;
              },
            );
          },
        );
      } finally {
        await host.dispose();
      }
    });
  }

  /**
   * A plugin that waits at the host's `gate` for `/hold`, and whose start()
   * throws while the host's `start.mode` says so.
   */
  const STOPPABLE_PLUGIN = `
import { capabilities } from "cordon:host";
export async function start() {
  if ((await capabilities.call("start.mode", null)) === "throw") {
    throw new Error("cannot start");
  }
}
export const routes = () => [{ method: "GET", path: "/:name" }];
export async function handleRequest(req) {
  if (req.params.name === "hold") await capabilities.call("gate", null);
  return { status: 200, headers: [], body: "ok" };
}`;

  for (const tier of tiers) {
    test(`a plugin on the ${tier} tier stopped with stop() while installed is answered 503 SANDBOX_DISPOSED, as one being uninstalled, and 502 BRIDGE_LIFECYCLE_FAILED only once a start() fails`, async (t) => {
      const errors = [];
      const host = createPluginHost({
        identify: identifyAnonymously,
        onError: (error) => errors.push(error),
      });
      let mode = "ok";
      let reached = () => {};
      const gate = () => {
        reached();
        return new Promise(() => {});
      };
      const { module } = build(tier, "stoppable", STOPPABLE_PLUGIN, {
        policy: { capabilities: ["gate", "start.mode"] },
        proxies: {
          capabilities: { gate, "start.mode": () => mode },
        },
      });
      const url = "http://h/plugins/stoppable/ok";
      const assertStopped = (answer) => {
        assert.deepEqual([answer.status, answer.code], [
          503,
          "SANDBOX_DISPOSED",
        ], answer.text);
        assert.equal(
          JSON.parse(answer.text).detail,
          'Plugin "stoppable" is stopped by its operator: retry later',
        );
        // As the answer to a plugin being uninstalled: no Retry-After.
        assert.equal(answer.headers.get("retry-after"), null);
      };
      try {
        await host.installPlugin({ kind: tier, module });
        await t.step("stop, request, start, request", async () => {
          await module.stop();
          assertStopped(await call(host, url));
          await module.start();
          const served = await call(host, url);
          assert.deepEqual([served.status, served.text], [200, "ok"]);
        });
        await t.step("a request in flight at the stop", async () => {
          const entered = new Promise((resolve) => reached = resolve);
          const held = call(host, "http://h/plugins/stoppable/hold");
          await entered;
          await module.stop();
          assertStopped(await held);
          await module.start();
          const served = await call(host, url);
          assert.deepEqual([served.status, served.text], [200, "ok"]);
        });
        await t.step("a start() that fails after a stop", async () => {
          await module.stop();
          mode = "throw";
          await assert.rejects(module.start(), (error) => {
            assert.equal(error.code, "BRIDGE_LIFECYCLE_FAILED");
            return true;
          });
          const failed = await call(host, url);
          assert.deepEqual(
            [failed.status, failed.code],
            [502, "BRIDGE_LIFECYCLE_FAILED"],
            failed.text,
          );
          mode = "ok";
          await module.start();
          const served = await call(host, url);
          assert.deepEqual([served.status, served.text], [200, "ok"]);
        });
        // The operator's alerts are told the same: a stop is no failure.
        const codes = errors.map((error) => error.code);
        assert.deepEqual(codes, [
          "SANDBOX_DISPOSED",
          "SANDBOX_DISPOSED",
          "BRIDGE_LIFECYCLE_FAILED",
        ]);
      } finally {
        await host.dispose();
      }
    });
  }
}
