/**
 * A conformance harness for host bridges that run a sandboxed plugin: it
 * drives a bridge through five checks (route registration, request round
 * trip, lifecycle, error propagation, capability gate) and returns a
 * report, so it works with any test framework.
 *
 * ```ts ignore
 * import { runVmHostBridgeConformance } from "@cordon/cordon/plugin/testing";
 * import { createSandboxedVmPluginModule } from "@cordon/cordon/plugin";
 * import { createVmSandbox } from "@cordon/cordon/vm";
 * import assert from "node:assert/strict";
 *
 * const report = await runVmHostBridgeConformance({
 *   buildBridge: (plugin) =>
 *     createSandboxedVmPluginModule({
 *       manifest: plugin.manifest,
 *       sandbox: createVmSandbox({
 *         pluginId: plugin.pluginId,
 *         pluginModule: plugin.pluginModule,
 *         policy: plugin.policy,
 *         proxies: plugin.proxies,
 *       }),
 *     }),
 * });
 * assert.equal(report.passed, true);
 * ```
 *
 * @module
 */

import type { JsonValue } from "../protocol/sandbox_result.ts";
import {
  readIntegerOption,
  readOptions,
  TIMEOUT_MS_RANGE,
} from "../protocol/options.ts";
import { settleWithin } from "../protocol/deadline.ts";
import { conformancePluginSource, fingerprint } from "./_conformance_plugin.ts";
import type { VmHostProxies } from "../vm/vm_sandbox.ts";
import type {
  PluginManifest,
  PluginModule,
  RouteDefinition,
} from "./plugin_module.ts";
import type { VmPluginPolicy } from "../vm/vm_policy.ts";
import type { VmPluginSource } from "../vm/vm_sandbox.ts";

/**
 * The plugin the harness asks a bridge to host. Pass its fields to the
 * sandbox as they are: `pluginId`, `pluginModule`, `policy`, `proxies`.
 */
export interface ConformancePlugin {
  /** The plugin's id. */
  pluginId: string;
  /** The plugin's manifest. */
  manifest: PluginManifest;
  /** The plugin module (it imports `cordon:host`). */
  pluginModule: VmPluginSource;
  /** Grants `conformance.record` and nothing else. */
  policy: VmPluginPolicy;
  /** Implements `conformance.record` (and `conformance.forbidden`). */
  proxies: VmHostProxies;
}

/** Options of {@linkcode runVmHostBridgeConformance}. */
export interface VmHostBridgeConformanceOptions {
  /**
   * Builds a bridge (a plugin module) around a sandbox that runs `plugin`.
   * Called once per group of checks; the harness disposes what it builds.
   */
  buildBridge(plugin: ConformancePlugin): PluginModule | Promise<PluginModule>;
  /** Time each check may take, in milliseconds. @default {30000} */
  timeoutMs?: number;
}

/** The five checks, by name. */
export type ConformanceCheckName =
  | "route registration"
  | "request round trip"
  | "lifecycle"
  | "error propagation"
  | "capability gate";

/** The outcome of one check. */
export interface ConformanceCheck {
  /** Which check. */
  name: ConformanceCheckName;
  /** Whether the bridge behaved. */
  passed: boolean;
  /** What was seen, in one sentence. */
  detail: string;
}

/** The outcome of a conformance run. */
export interface ConformanceReport {
  /** Whether every check passed. */
  passed: boolean;
  /** One entry per check, in a fixed order. */
  checks: ConformanceCheck[];
}

const EXPECTED_ROUTES = [
  "POST /conformance/echo/:item",
  "GET /conformance/throw",
  "GET /conformance/denied",
  "DELETE /conformance/items/:id",
];

class CheckFailure extends Error {}

function expect(condition: boolean, detail: string): void {
  if (!condition) throw new CheckFailure(detail);
}

function describeError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return `${error.name}${
      typeof code === "string" ? ` (${code})` : ""
    }: ${error.message}`;
  }
  return String(error);
}

function withTimeout<T>(
  work: T | Promise<T>,
  timeoutMs: number,
  what: string,
): Promise<T> {
  return settleWithin(work, timeoutMs, () => {
    throw new CheckFailure(`${what} took over ${timeoutMs} ms`);
  });
}

interface Recorder {
  plugin: ConformancePlugin;
  events: string[];
  forbiddenCalls: number;
}

function makePlugin(nonce: string, index: number): Recorder {
  const pluginId = `conformance-${index}`;
  const recorder: Recorder = {
    plugin: {
      pluginId,
      manifest: {
        id: pluginId,
        version: "1.0.0",
        name: "cordon bridge conformance plugin",
        capabilities: ["conformance.record"],
      },
      pluginModule: {
        kind: "source",
        source: conformancePluginSource(nonce),
        identifier: `${pluginId}.js`,
      },
      policy: { capabilities: ["conformance.record"] },
      proxies: {
        capabilities: {
          "conformance.record": (args: JsonValue) => {
            const event = (args as { event?: unknown } | null)?.event;
            recorder.events.push(String(event));
            return null;
          },
          "conformance.forbidden": () => {
            recorder.forbiddenCalls++;
            return null;
          },
        },
      },
    },
    events: [],
    forbiddenCalls: 0,
  };
  return recorder;
}

function findRoute(
  module: PluginModule,
  method: string,
  path: string,
): RouteDefinition {
  const route = module.routes.find((r) =>
    r.method === method && r.path === path
  );
  if (route === undefined) {
    throw new CheckFailure(`the bridge does not register ${method} ${path}`);
  }
  return route;
}

function context(request: Request, params: Record<string, string> = {}) {
  return {
    request,
    principalId: "conformance-principal",
    tenantId: "conformance-tenant",
    capabilities: ["conformance.record"],
    params,
  };
}

function checkRoutes(module: PluginModule): string {
  const listed = module.routes.map((r) => `${r.method} ${r.path}`);
  const missing = EXPECTED_ROUTES.filter((r) => !listed.includes(r));
  const extra = listed.filter((r) => !EXPECTED_ROUTES.includes(r));
  expect(
    missing.length === 0,
    `routes() lists ${EXPECTED_ROUTES.join(", ")} but the bridge is missing ${
      missing.join(", ")
    }`,
  );
  expect(extra.length === 0, `the bridge adds routes ${extra.join(", ")}`);
  expect(
    module.routes.every((r) => typeof r.handler === "function"),
    "a registered route has no handler function",
  );
  return `the bridge registers the ${EXPECTED_ROUTES.length} routes the plugin lists`;
}

async function checkRoundTrip(
  module: PluginModule,
  nonce: string,
): Promise<string> {
  const route = findRoute(module, "POST", "/conformance/echo/:item");
  const body = `héllo ${nonce}`;
  const response = await route.handler(context(
    new Request("http://127.0.0.1/plugins/conformance/conformance/echo/42", {
      method: "POST",
      headers: { "x-conformance": nonce, "content-type": "text/plain" },
      body,
    }),
    { item: "42" },
  ));
  expect(response instanceof Response, "the handler did not return a Response");
  expect(
    response.status === 201,
    `the plugin answered 201 but the bridge returned ${response.status}`,
  );
  expect(
    response.headers.get("x-conformance-echo") === nonce,
    "the request header did not reach the plugin or the response header did not come back",
  );
  const data = await response.json() as Record<string, unknown>;
  expect(data.method === "POST", "the method did not reach the plugin");
  expect(data.body === body, "the body did not reach the plugin intact");
  expect(
    data.fingerprint ===
      fingerprint(new TextEncoder().encode(body + nonce)),
    "the answer was not computed by the sandboxed plugin",
  );
  expect(data.header === nonce, "the header did not reach the plugin");
  expect(
    data.principalId === "conformance-principal",
    "the principal id did not reach the plugin",
  );
  expect(
    data.tenantId === "conformance-tenant",
    "the tenant id did not reach the plugin",
  );
  expect(
    JSON.stringify(data.capabilities) === '["conformance.record"]',
    "the capability snapshot did not reach the plugin",
  );
  expect(
    (data.params as Record<string, unknown> | null)?.item === "42",
    "the route parameters did not reach the plugin",
  );
  return "body, headers, principal, tenant, capabilities and params reached the sandbox and its response came back";
}

/** Calls a route that must fail: what it threw, or the answer it gave. */
async function callFailing(
  module: PluginModule,
  path: string,
): Promise<{ thrown: unknown; answered: Response | undefined }> {
  const route = findRoute(module, "GET", path);
  try {
    const answered = await route.handler(
      context(new Request(`http://127.0.0.1${path}`)),
    );
    return { thrown: undefined, answered };
  } catch (thrown) {
    return { thrown, answered: undefined };
  }
}

async function checkErrors(
  module: PluginModule,
  nonce: string,
): Promise<string> {
  const { thrown, answered } = await callFailing(module, "/conformance/throw");
  expect(
    answered === undefined,
    `a throwing plugin produced a ${answered?.status} response instead of an error`,
  );
  const error = thrown as { code?: unknown; cause?: { message?: unknown } };
  expect(
    error instanceof Error && error.name === "CordonError",
    `a sandbox throw surfaced as ${describeError(thrown)}, not a CordonError`,
  );
  expect(
    error.code === "BRIDGE_HANDLER_REJECTED",
    `a sandbox throw surfaced with code ${String(error.code)}`,
  );
  expect(
    typeof error.cause?.message === "string" &&
      error.cause.message.includes(nonce),
    "the CordonError's cause does not carry the sandbox-side error",
  );
  return "a sandbox throw surfaced as a CordonError (BRIDGE_HANDLER_REJECTED) whose cause is the sandbox-side error";
}

async function checkCapabilityGate(
  module: PluginModule,
  recorder: Recorder,
): Promise<string> {
  const { thrown, answered } = await callFailing(
    module,
    "/conformance/denied",
  );
  expect(
    recorder.forbiddenCalls === 0,
    "the host ran a capability the policy does not grant",
  );
  expect(
    answered === undefined,
    `a denied capability produced a ${answered?.status} response instead of PERMISSION_DENIED`,
  );
  const code = (thrown as { code?: unknown })?.code;
  expect(
    thrown instanceof Error && code === "PERMISSION_DENIED",
    `a denied capability surfaced as ${describeError(thrown)}`,
  );
  return "a denied capability surfaced as PERMISSION_DENIED and never ran on the host";
}

async function checkLifecycle(
  build: VmHostBridgeConformanceOptions["buildBridge"],
  recorder: Recorder,
): Promise<string> {
  const module = await build(recorder.plugin);
  try {
    const count = (event: string) =>
      recorder.events.filter((e) => e === event).length;
    await Promise.all([module.start(), module.start()]);
    await module.start();
    expect(count("start") >= 1, "start() did not reach the sandboxed plugin");
    expect(
      count("start") === 1,
      `start() reached the plugin ${
        count("start")
      } times over three calls; it must be idempotent`,
    );
    await module.dispose();
    expect(count("stop") >= 1, "dispose() did not reach the sandboxed plugin");
    await module.dispose();
    expect(
      count("stop") === 1,
      `dispose() reached the plugin ${
        count("stop")
      } times over two calls; it must be idempotent`,
    );
    return "start() and dispose() each reached the plugin exactly once over repeated calls";
  } finally {
    await module.dispose().catch(() => {});
  }
}

/**
 * Runs the five conformance checks against bridges built by
 * `buildBridge`, and reports each one. It never throws for a failing
 * check: inspect `report.passed` and `report.checks`.
 *
 * 1. route registration: the bridge's `routes` after `start()` are exactly
 *    those the plugin's `routes()` lists, each with a handler;
 * 2. request round trip: body, headers, principal, tenant, capability
 *    snapshot and params reach the sandbox, and its response (computed in
 *    the sandbox) comes back as a `Response`;
 * 3. lifecycle: `start()` and `dispose()` reach the sandboxed plugin's
 *    hooks, each exactly once over repeated calls;
 * 4. error propagation: a throw in the sandbox surfaces as a `CordonError`
 *    with code `BRIDGE_HANDLER_REJECTED` whose `cause` is the sandbox-side
 *    error;
 * 5. capability gate: a capability outside the policy surfaces as
 *    `PERMISSION_DENIED` and never runs on the host.
 *
 * @param options How to build a bridge.
 * @returns The report.
 * @throws {TypeError} When `buildBridge` is not a function.
 *
 * @example
 * ```ts ignore
 * import { runVmHostBridgeConformance } from "@cordon/cordon/plugin/testing";
 * import { createSandboxedVmPluginModule } from "@cordon/cordon/plugin";
 * import { createVmSandbox } from "@cordon/cordon/vm";
 * import assert from "node:assert/strict";
 *
 * const report = await runVmHostBridgeConformance({
 *   buildBridge: (plugin) =>
 *     createSandboxedVmPluginModule({
 *       manifest: plugin.manifest,
 *       sandbox: createVmSandbox({
 *         pluginId: plugin.pluginId,
 *         pluginModule: plugin.pluginModule,
 *         policy: plugin.policy,
 *         proxies: plugin.proxies,
 *       }),
 *     }),
 * });
 * assert.deepEqual(report.checks.filter((c) => !c.passed), []);
 * ```
 */
export async function runVmHostBridgeConformance(
  given: VmHostBridgeConformanceOptions,
): Promise<ConformanceReport> {
  const where = "run the conformance checks";
  const { buildBridge, timeoutMs: givenTimeoutMs } = readOptions(
    where,
    given ?? null,
    { buildBridge: true, timeoutMs: true },
  );
  if (typeof buildBridge !== "function") {
    throw new TypeError(
      "Cannot run the conformance checks: pass { buildBridge(plugin) }",
    );
  }
  const timeoutMs = readIntegerOption(
    where,
    "timeoutMs",
    givenTimeoutMs,
    30_000,
    TIMEOUT_MS_RANGE,
  );
  const nonce = crypto.randomUUID();
  const shared = makePlugin(nonce, 1);
  let module: PluginModule | null = null;
  let startError: unknown = null;
  try {
    module = await buildBridge(shared.plugin);
    await withTimeout(module.start(), timeoutMs, "start()");
  } catch (error) {
    startError = error;
  }
  const withModule =
    (body: (m: PluginModule) => string | Promise<string>) => () =>
      startError === null && module !== null ? body(module) : Promise.reject(
        new CheckFailure(
          `the bridge did not start: ${describeError(startError)}`,
        ),
      );
  const plan: [ConformanceCheckName, () => string | Promise<string>][] = [
    ["route registration", withModule(checkRoutes)],
    ["request round trip", withModule((m) => checkRoundTrip(m, nonce))],
    [
      "lifecycle",
      () => checkLifecycle(buildBridge, makePlugin(nonce, 2)),
    ],
    ["error propagation", withModule((m) => checkErrors(m, nonce))],
    ["capability gate", withModule((m) => checkCapabilityGate(m, shared))],
  ];
  const checks: ConformanceCheck[] = [];
  for (const [name, check] of plan) {
    try {
      const detail = await withTimeout(check(), timeoutMs, name);
      checks.push({ name, passed: true, detail });
    } catch (error) {
      checks.push({
        name,
        passed: false,
        detail: error instanceof CheckFailure
          ? error.message
          : `the check failed with ${describeError(error)}`,
      });
    }
  }
  await (module as PluginModule | null)?.dispose().catch(() => {});
  return { passed: checks.every((check) => check.passed), checks };
}
