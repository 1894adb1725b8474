import { CordonError } from "../protocol/cordon_error.ts";
import { type OptionKeys, readOptions } from "../protocol/options.ts";
import type { ErrorCode } from "../protocol/error_codes.ts";
import type { JsonValue, SandboxError } from "../protocol/sandbox_result.ts";
import {
  type HeaderPair,
  PluginRequests,
  type PluginRequestsOptions,
  sandboxAnswerHeaders,
} from "./_http_marshal.ts";
import { readRoutes } from "./_route_pattern.ts";
import {
  type PluginManifest,
  type PluginMetrics,
  type PluginModule,
  type PluginRequestContext,
  type PluginRequestOptions,
  type RouteDefinition,
  validatePluginManifest,
} from "./plugin_module.ts";
import type { VmSandbox } from "../vm/vm_sandbox.ts";
import {
  defaultResponseHeaderPolicy,
  type ResponseHeaderPolicy,
} from "./response_headers.ts";

/** Options of {@linkcode createSandboxedVmPluginModule}. */
export interface SandboxedVmPluginModuleOptions extends PluginRequestOptions {
  /** The sandbox running the plugin. The module owns it from now on. */
  sandbox: VmSandbox;
  /** The plugin's manifest. */
  manifest: PluginManifest;
  /**
   * Which response headers the plugin may set; an answer with another
   * fails with `BRIDGE_RESPONSE_HEADER_DENIED`.
   * @default {defaultResponseHeaderPolicy} (no cookies, hop-by-hop or security headers)
   */
  responseHeaders?: ResponseHeaderPolicy | undefined;
  /**
   * The `content-security-policy` every answer of the plugin carries, its
   * problem answers included, or `false` for none. The default gives a
   * page the plugin answers an opaque origin and no script, so it cannot
   * call other plugins' routes with the user's cookies:
   * `"sandbox allow-scripts"` lets its script run, still in an opaque
   * origin; `false` suits plugins served on origins of their own. Every
   * answer carries `x-content-type-options: nosniff` too.
   * @default {"sandbox"}
   */
  contentSecurityPolicy?: string | false | undefined;
}

const BRIDGE_OPTION_KEYS: OptionKeys<SandboxedVmPluginModuleOptions> = {
  sandbox: true,
  manifest: true,
  responseHeaders: true,
  contentSecurityPolicy: true,
  maxBodyBytes: true,
  bodyTimeoutMs: true,
  redactHeaders: true,
};

/** Sandbox failures that keep their own code when they reach the host. */
const PASSTHROUGH: ReadonlySet<string> = new Set<ErrorCode>([
  "PERMISSION_DENIED",
  "TIMEOUT",
  "OUT_OF_MEMORY",
  "SANDBOX_CRASHED",
  "SANDBOX_DISPOSED",
  "SANDBOX_UNAVAILABLE",
  "SANDBOX_RESTART_LIMITED",
  "SANDBOX_BUSY",
  "BRIDGE_INVALID_PLUGIN_SURFACE",
  "ABORTED",
]);

function asData(error: SandboxError): SandboxError {
  return { code: error.code, name: error.name, message: error.message };
}

function failureError(
  pluginId: string,
  what: string,
  error: SandboxError,
): CordonError {
  if (PASSTHROUGH.has(error.code)) {
    const failed = error.code === "PERMISSION_DENIED"
      ? "was denied a permission"
      : "failed";
    return new CordonError(
      error.code as ErrorCode,
      `Plugin "${pluginId}" ${failed} in ${what}: ${error.message}`,
      { cause: asData(error) },
    );
  }
  if (error.code === "RESULT_NOT_SERIALIZABLE") {
    return new CordonError(
      "BRIDGE_UNMARSHAL_FAILED",
      `Cannot read the answer of plugin "${pluginId}" from ${what}: it is not JSON data; return { status, headers, body }`,
      { cause: asData(error) },
    );
  }
  return new CordonError(
    "BRIDGE_HANDLER_REJECTED",
    `Plugin "${pluginId}" threw in ${what}: the cause has the sandbox-side error`,
    { cause: asData(error) },
  );
}

class SandboxedVmPluginModule implements PluginModule {
  readonly manifest: PluginManifest;
  readonly answerHeaders: readonly HeaderPair[];
  readonly #sandbox: VmSandbox;
  readonly #requests: PluginRequests;
  #routes: readonly RouteDefinition[] = Object.freeze([]);
  #state: PluginMetrics["state"] = "idle";
  /**
   * The last `start()` or `stop()` asked for. Each runs after the one asked
   * for before it, so the last one asked for decides the state: a start
   * asked for while a stop is under way starts the plugin again once the
   * stop is done, instead of finding it running and doing nothing.
   */
  #lifecycle: Promise<void> = Promise.resolve();
  #disposing: Promise<void> | null = null;
  /** Whether the last step asked for is a stop: requests are refused from then on. */
  #stopAsked = false;
  /** Stops asked for so far: a call they end is told the plugin stopped. */
  #stops = 0;
  /**
   * Stops asked for and not yet done. A request that arrives meanwhile is
   * refused as stopped even when a start is asked after the stop: the
   * stop would end the realm it runs in, and the client would read a
   * crash of a plugin its operator only restarted.
   */
  #stopsUnderWay = 0;
  /** Whether the last start ended in failure, which a stop asked for since clears. */
  #startFailed = false;

  constructor(given: SandboxedVmPluginModuleOptions) {
    if (typeof given !== "object" || given === null) {
      throw new TypeError(
        "Cannot create a plugin module: pass { sandbox, manifest }",
      );
    }
    const options = readOptions(
      "create a plugin module",
      given,
      BRIDGE_OPTION_KEYS,
    );
    const { sandbox } = options;
    if (
      typeof sandbox !== "object" || sandbox === null ||
      typeof sandbox.invoke !== "function" ||
      typeof sandbox.start !== "function"
    ) {
      throw new TypeError(
        "Cannot create a plugin module: sandbox must come from createVmSandbox()",
      );
    }
    this.manifest = validatePluginManifest(options.manifest);
    this.answerHeaders = sandboxAnswerHeaders(
      `create plugin "${this.manifest.id}"`,
      options.contentSecurityPolicy,
    );
    // No prototype: a limit or list left out is not read from one.
    this.#requests = new PluginRequests(this.manifest.id, {
      __proto__: null,
      ...options,
      responseHeaders: options.responseHeaders ?? defaultResponseHeaderPolicy,
      answerHeaders: this.answerHeaders,
    } as PluginRequestsOptions);
    this.#sandbox = sandbox;
  }

  get routes(): readonly RouteDefinition[] {
    return this.#routes;
  }

  #assertUsable(): void {
    if (this.#state === "disposed") {
      throw new CordonError(
        "SANDBOX_DISPOSED",
        `Cannot use the disposed plugin "${this.manifest.id}": install it again`,
      );
    }
  }

  /** Runs a step of the sandbox's lifecycle; what it throws is the cause. */
  async #step<T>(verb: string, detail: string, step: () => Promise<T>) {
    try {
      return await step();
    } catch (error) {
      throw new CordonError(
        "BRIDGE_LIFECYCLE_FAILED",
        `Cannot ${verb} plugin "${this.manifest.id}": ${detail}`,
        { cause: error },
      );
    }
  }

  /** Runs `step` once the steps asked for before it are done. */
  #afterEarlierSteps(step: () => Promise<void>): Promise<void> {
    const next = this.#lifecycle.catch(() => {}).then(step);
    this.#lifecycle = next;
    return next;
  }

  async start(): Promise<void> {
    this.#assertUsable();
    this.#stopAsked = false;
    await this.#afterEarlierSteps(async () => {
      this.#assertUsable();
      if (this.#state === "running") return;
      try {
        await this.#startOnce();
        this.#startFailed = false;
      } catch (error) {
        // Unless a stop asked for meanwhile has made the plugin stopped on
        // purpose again.
        if (!this.#stopAsked) this.#startFailed = true;
        throw error;
      }
    });
  }

  async #startOnce(): Promise<void> {
    const id = this.manifest.id;
    const started = await this.#step(
      "start",
      "the sandbox refused to start; see the cause",
      () => this.#sandbox.start(),
    );
    if (!started.ok) {
      throw new CordonError(
        "BRIDGE_LIFECYCLE_FAILED",
        `Cannot start plugin "${id}": ${started.error.message}`,
        { cause: asData(started.error) },
      );
    }
    try {
      const exports = (started.value as { exports?: Record<string, string> })
        ?.exports ?? {};
      const missing = ["routes", "handleRequest"].filter((name) =>
        exports[name] !== "function"
      );
      if (missing.length > 0) {
        throw new CordonError(
          "BRIDGE_INVALID_PLUGIN_SURFACE",
          `Cannot start plugin "${id}": it does not export ${
            missing.map((name) => `${name}()`).join(" and ")
          }; export routes() and handleRequest() from the plugin module`,
          {
            cause: {
              code: "BRIDGE_INVALID_PLUGIN_SURFACE",
              name: "TypeError",
              message: `Missing exports: ${missing.join(", ")}`,
              exports,
            },
          },
        );
      }
      // An optional hook exported as undefined is absent, as a host
      // plugin's is.
      const hooks = ["start", "stop"].filter((name) =>
        Object.hasOwn(exports, name) &&
        exports[name] !== "function" && exports[name] !== "undefined"
      );
      if (hooks.length > 0) {
        throw new CordonError(
          "BRIDGE_INVALID_PLUGIN_SURFACE",
          `Cannot start plugin "${id}": ${
            hooks.length === 1
              ? `its ${hooks[0]} export is not a function`
              : "its start and stop exports are not functions"
          }; export start() and stop() as functions, or leave them out`,
          {
            cause: {
              code: "BRIDGE_INVALID_PLUGIN_SURFACE",
              name: "TypeError",
              message: `Exports that are not functions: ${hooks.join(", ")}`,
              exports,
            },
          },
        );
      }
      if (this.#routes.length === 0) {
        this.#routes = await this.#readRoutes();
      }
    } catch (error) {
      // A plugin that cannot serve does not keep its realm.
      await this.#sandbox.stop();
      throw error;
    }
    this.#state = "running";
  }

  async #readRoutes(): Promise<readonly RouteDefinition[]> {
    const id = this.manifest.id;
    const listed = await this.#sandbox.invoke("routes", null);
    if (!listed.ok) {
      throw new CordonError(
        "BRIDGE_INVALID_PLUGIN_SURFACE",
        `Cannot read the routes of plugin "${id}": routes() failed; see the cause`,
        { cause: asData(listed.error) },
      );
    }
    return readRoutes(
      id,
      listed.value,
      (method, path, context) => this.#handle(method, path, context),
    );
  }

  async #handle(
    method: string,
    path: string,
    context: PluginRequestContext,
  ): Promise<Response> {
    this.#assertUsable();
    const id = this.manifest.id;
    const stops = this.#stops;
    if (
      this.#state !== "running" || this.#stopAsked || this.#stopsUnderWay > 0
    ) {
      if (this.#stoppedOnPurpose()) throw this.#stoppedError(method, path);
      throw new CordonError(
        "BRIDGE_LIFECYCLE_FAILED",
        `Cannot handle ${method} ${path} with plugin "${id}": it is ${this.#state}; start it first`,
        { cause: { state: this.#state } },
      );
    }
    return await this.#requests.answer(context, async (request) => {
      const result = await this.#sandbox.invoke(
        "handleRequest",
        request as unknown as JsonValue,
      ).catch((error) => {
        // The sandbox refuses a payload over its maxPayloadBytes, which a
        // maxBodyBytes larger than it lets through: the request is too big.
        if (!(error instanceof RangeError)) throw error;
        throw new CordonError(
          "BRIDGE_MARSHAL_FAILED",
          `Cannot pass the request to plugin "${id}": it is larger than the sandbox's limits.maxPayloadBytes; send less or raise that limit`,
          { cause: { reason: "payload-too-large" } },
        );
      });
      if (!result.ok) {
        // The sandbox tells a call its stop ended as crashed; the plugin
        // did not fail, its operator stopped it.
        if (
          result.error.code === "SANDBOX_CRASHED" && this.#stops !== stops
        ) {
          throw this.#stoppedError(method, path);
        }
        const error = failureError(
          id,
          `handleRequest() for ${method} ${path}`,
          result.error,
        );
        if (result.error.code === "SANDBOX_RESTART_LIMITED") {
          // The host answers it with Retry-After.
          const { restartAvailableInMs } = this.#sandbox.instruments;
          Object.assign(error.cause as object, { restartAvailableInMs });
        }
        throw error;
      }
      return result.value;
    });
  }

  /**
   * Whether the plugin is not running because its operator stopped it (or
   * is restarting it), not because it never started or its start failed.
   */
  #stoppedOnPurpose(): boolean {
    if (this.#stopAsked || this.#stopsUnderWay > 0) return true;
    return this.#state !== "idle" && !this.#startFailed;
  }

  /**
   * Why a request to a plugin its operator stopped is refused: with the
   * code of a plugin being uninstalled, as the host answers both 503.
   */
  #stoppedError(method: string, path: string): CordonError {
    return new CordonError(
      "SANDBOX_DISPOSED",
      `Cannot handle ${method} ${path} with plugin "${this.manifest.id}": it was stopped with stop(); start() it to serve again`,
      { cause: { state: "stopped" } },
    );
  }

  stop(): Promise<void> {
    if (this.#state === "disposed") return this.#disposing ?? Promise.resolve();
    this.#stopAsked = true;
    this.#stops++;
    this.#stopsUnderWay++;
    this.#startFailed = false;
    return this.#afterEarlierSteps(async () => {
      try {
        if (this.#state === "disposed") return;
        await this.#step("stop", "see the cause", () => this.#sandbox.stop());
        // dispose() may have run meanwhile.
        if ((this.#state as string) !== "disposed") this.#state = "stopped";
      } finally {
        this.#stopsUnderWay--;
      }
    });
  }

  dispose(): Promise<void> {
    this.#disposing ??= (async () => {
      // Disposing the sandbox first ends a start under way at once, which
      // would otherwise run the plugin's module to its deadline.
      const disposed = this.#step(
        "dispose",
        "see the cause",
        () => this.#sandbox.dispose(),
      );
      await this.#lifecycle.catch(() => {});
      this.#state = "disposed";
      await disposed;
    })();
    return this.#disposing;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.dispose();
  }

  metrics(): PluginMetrics {
    return this.#requests.metrics(this.#state, this.#sandbox.instruments);
  }
}

/**
 * Turns a vm sandbox into a host plugin module. At `start()` the bridge
 * starts the sandbox, checks that the plugin exports `routes()` and
 * `handleRequest()`, and reads its routes. Each route handler marshals the
 * request context (URL, method, headers, body, principal, tenant,
 * capability snapshot, route parameters) into a `SerializedRequest`, calls
 * `handleRequest()` in the sandbox, and builds a `Response` from its
 * `SerializedResponse`. Every answer carries
 * `content-security-policy: sandbox` (see `contentSecurityPolicy`) and
 * `x-content-type-options: nosniff`: a page the plugin answers on the host's
 * origin runs no script there.
 *
 * Failures reject with a `CordonError` whose `cause` is the sandbox-side
 * error as data: `BRIDGE_INVALID_PLUGIN_SURFACE`, `BRIDGE_MARSHAL_FAILED`,
 * `BRIDGE_UNMARSHAL_FAILED`, `BRIDGE_HANDLER_REJECTED`,
 * `BRIDGE_LIFECYCLE_FAILED`, `PERMISSION_DENIED` for a denied capability,
 * host or path, and `TIMEOUT`, `OUT_OF_MEMORY` or `SANDBOX_CRASHED` for
 * budget overruns. The module owns the sandbox; disposing the module
 * disposes it.
 *
 * @param options The sandbox and the manifest.
 * @returns The plugin module.
 * @throws {TypeError} When the sandbox or manifest has the wrong shape, or
 * `contentSecurityPolicy` is neither `false` nor a well-formed header value.
 * @throws {RangeError} When `maxBodyBytes` or `bodyTimeoutMs` is out of range.
 *
 * @example
 * ```ts ignore
 * import { createSandboxedVmPluginModule } from "@cordon/cordon/plugin";
 * import { createVmSandbox } from "@cordon/cordon/vm";
 * import assert from "node:assert/strict";
 *
 * const source = `
 *   export function routes() { return [{ method: "GET", path: "/hello" }]; }
 *   export function handleRequest(req) {
 *     return { status: 200, headers: [], body: "hello " + req.principalId };
 *   }`;
 * await using plugin = createSandboxedVmPluginModule({
 *   manifest: { id: "hello", version: "1.0.0" },
 *   sandbox: createVmSandbox({
 *     pluginId: "hello",
 *     pluginModule: { kind: "source", source, identifier: "hello.js" },
 *   }),
 * });
 * await plugin.start();
 * const response = await plugin.routes[0]!.handler({
 *   request: new Request("http://127.0.0.1/plugins/hello/hello"),
 *   principalId: "ada", tenantId: null, capabilities: [], params: {},
 * });
 * assert.equal(await response.text(), "hello ada");
 * ```
 */
export function createSandboxedVmPluginModule(
  options: SandboxedVmPluginModuleOptions,
): PluginModule {
  return new SandboxedVmPluginModule(options);
}
