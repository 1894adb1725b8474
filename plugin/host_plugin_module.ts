import { CordonError } from "../protocol/cordon_error.ts";
import {
  type OptionKeys,
  readIntegerOption,
  readOptions,
  TIMEOUT_MS_RANGE,
} from "../protocol/options.ts";
import type {
  SerializedRequest,
  SerializedResponse,
} from "../protocol/bridge_messages.ts";
import { settleUnlessAborted, settleWithin } from "../protocol/deadline.ts";
import { PluginRequests, type PluginRequestsOptions } from "./_http_marshal.ts";
import { readRoutes } from "./_route_pattern.ts";
import {
  type HttpMethod,
  type PluginManifest,
  type PluginMetrics,
  type PluginModule,
  type PluginRequestContext,
  type PluginRequestOptions,
  type RouteDefinition,
  validatePluginManifest,
} from "./plugin_module.ts";
import type { ResponseHeaderPolicy } from "./response_headers.ts";
import { createMarshallers } from "../realm/marshal.ts";

/**
 * The marshalling a sandboxed plugin's answer goes through in its realm:
 * a host plugin's answer is read as the same data, and what it refuses is
 * told from other throws as there, by identity.
 */
const { toWireValue, isRefusal } = createMarshallers();

/** A route as a plugin lists it: method and path, no handler. */
export interface PluginRouteSpec {
  /** The method it answers. */
  method: HttpMethod;
  /** The path under the plugin's prefix, such as `/items/:id`. */
  path: string;
}

/** The functions of an in-process plugin. */
export interface HostPluginImplementation {
  /** Lists the plugin's routes. */
  routes(): PluginRouteSpec[] | Promise<PluginRouteSpec[]>;
  /** Answers one request. */
  handleRequest(
    request: SerializedRequest,
  ): SerializedResponse | Promise<SerializedResponse>;
  /** Runs once at start. @default {undefined} */
  start?(): void | Promise<void>;
  /** Runs at stop and dispose. @default {undefined} */
  stop?(): void | Promise<void>;
}

/** Options of {@linkcode createHostPluginModule}. */
export interface HostPluginModuleOptions extends PluginRequestOptions {
  /** The plugin's manifest. */
  manifest: PluginManifest;
  /** The plugin's functions. */
  plugin: HostPluginImplementation;
  /**
   * Which response headers the plugin may set; an answer with another
   * fails with `BRIDGE_RESPONSE_HEADER_DENIED`. Pass a sandboxed plugin's
   * policy to have the same handler answer alike in both kinds.
   * @default {() => true} (trusted code sets any header)
   */
  responseHeaders?: ResponseHeaderPolicy | undefined;
  /**
   * Time the plugin's `stop()` gets at uninstall and dispose, as a
   * sandboxed plugin's does: past it the plugin is uninstalled all the
   * same and the uninstall rejects with `BRIDGE_LIFECYCLE_FAILED`. Trusted
   * code cannot be stopped, so a `stop()` still running is left to finish.
   * @default {1000}
   */
  stopTimeoutMs?: number | undefined;
  /**
   * Time the plugin's `handleRequest()` gets per request, in milliseconds,
   * as a sandboxed plugin's call gets its sandbox's `timeoutMs`: past it
   * the request answers 504 (`TIMEOUT`) and gives back its place among the
   * host's `maxConcurrentRequests`, so a handler waiting on a backend that
   * never answers cannot hold the plugin's places for ever. Trusted code
   * cannot be stopped, so a `handleRequest()` still running is left to
   * finish.
   * @default {30000}
   */
  timeoutMs?: number | undefined;
}

const HOST_MODULE_OPTION_KEYS: OptionKeys<HostPluginModuleOptions> = {
  manifest: true,
  plugin: true,
  responseHeaders: true,
  maxBodyBytes: true,
  bodyTimeoutMs: true,
  redactHeaders: true,
  stopTimeoutMs: true,
  timeoutMs: true,
};

function describe(error: unknown): { name: string; message: string } {
  return error instanceof Error
    ? { name: error.name, message: error.message }
    : { name: "NonErrorThrown", message: String(error) };
}

class HostPluginModule implements PluginModule {
  readonly manifest: PluginManifest;
  readonly #plugin: HostPluginImplementation;
  readonly #requests: PluginRequests;
  readonly #stopTimeoutMs: number;
  readonly #timeoutMs: number;
  #timeouts = 0;
  #routes: readonly RouteDefinition[] = Object.freeze([]);
  #state: PluginMetrics["state"] = "idle";
  #starting: Promise<void> | undefined;
  /** The first dispose(): every later one waits for it. */
  #disposing: Promise<void> | undefined;
  /** Whether the last start() failed, which a stop() since clears. */
  #startFailed = false;
  /** Whether stop() was called since start() was last called. */
  #stopAsked = false;
  /**
   * Aborts once the module is disposed: a start() or routes() still
   * running is then given up, as trusted code cannot be stopped, so
   * disposing ends an install under way.
   */
  readonly #disposal = new AbortController();

  constructor(given: HostPluginModuleOptions) {
    const options = readOptions(
      "create a plugin module",
      given ?? null,
      HOST_MODULE_OPTION_KEYS,
    );
    this.manifest = validatePluginManifest(options.manifest);
    const plugin = options.plugin;
    if (
      typeof plugin?.routes !== "function" ||
      typeof plugin?.handleRequest !== "function"
    ) {
      throw new TypeError(
        `Cannot create plugin "${this.manifest.id}": plugin must have routes() and handleRequest()`,
      );
    }
    for (const hook of ["start", "stop"] as const) {
      if (plugin[hook] !== undefined && typeof plugin[hook] !== "function") {
        throw new TypeError(
          `Cannot create plugin "${this.manifest.id}": plugin.${hook} must be a function, or left out`,
        );
      }
    }
    this.#plugin = plugin;
    this.#stopTimeoutMs = readIntegerOption(
      "create a plugin module",
      "stopTimeoutMs",
      options.stopTimeoutMs,
      1000,
      TIMEOUT_MS_RANGE,
    );
    this.#timeoutMs = readIntegerOption(
      "create a plugin module",
      "timeoutMs",
      options.timeoutMs,
      30_000,
      TIMEOUT_MS_RANGE,
    );
    // No prototype: a limit, list or answerHeaders left out is not read
    // from one.
    this.#requests = new PluginRequests(this.manifest.id, {
      __proto__: null,
      ...options,
      responseHeaders: options.responseHeaders ?? (() => true),
    } as PluginRequestsOptions);
  }

  #disposedError(action: string): CordonError {
    return new CordonError(
      "SANDBOX_DISPOSED",
      `Cannot ${action} the disposed plugin "${this.manifest.id}": install it again`,
    );
  }

  get routes(): readonly RouteDefinition[] {
    return this.#routes;
  }

  /**
   * Runs the plugin's start() or stop(); what it throws is the cause. A
   * stop() still running after `stopTimeoutMs` is left to finish.
   */
  async #hook(name: "start" | "stop"): Promise<void> {
    let finished: boolean;
    try {
      const running = this.#plugin[name]?.();
      // Whether a stop() settled within stopTimeoutMs; it rejects as it does.
      finished = name === "stop"
        ? await settleWithin(
          Promise.resolve(running).then(() => true),
          this.#stopTimeoutMs,
          () => false,
        )
        : (await running, true);
    } catch (error) {
      throw new CordonError(
        "BRIDGE_LIFECYCLE_FAILED",
        `Cannot ${name} plugin "${this.manifest.id}": its ${name}() threw`,
        { cause: describe(error) },
      );
    }
    if (!finished) {
      throw new CordonError(
        "BRIDGE_LIFECYCLE_FAILED",
        `Cannot stop plugin "${this.manifest.id}": its stop() did not finish within ${this.#stopTimeoutMs} ms`,
      );
    }
  }

  start(): Promise<void> {
    if (this.#state === "disposed") {
      return Promise.reject(this.#disposedError("start"));
    }
    // A start asked after a stop is the operator's last word, also when it
    // joins a start under way that the stop came during.
    this.#stopAsked = false;
    if (this.#state === "running") return Promise.resolve();
    // Callers at once share one start: the hooks run once.
    this.#starting ??= this.#startOnce().finally(() => {
      this.#starting = undefined;
    });
    return this.#starting;
  }

  async #startOnce(): Promise<void> {
    try {
      await this.#startHooks();
      this.#startFailed = false;
    } catch (error) {
      // Unless a stop asked for meanwhile has made the plugin stopped on
      // purpose again, as the operator's last word.
      if (!this.#stopAsked) this.#startFailed = true;
      throw error;
    }
  }

  async #startHooks(): Promise<void> {
    await this.#unlessDisposed(this.#hook("start"));
    if (this.#routes.length === 0) {
      const routes = await this.#unlessDisposed(this.#listRoutes());
      this.#routes = readRoutes(
        this.manifest.id,
        routes,
        (_method, _path, context) => this.#handle(context),
      );
    }
    // A start() that settled as dispose() began still wins the race
    // above: the disposal decides, or the module would run again.
    if (this.#disposal.signal.aborted) throw this.#disposedError("start");
    this.#state = "running";
    // A stop asked while the hooks ran is the operator's last word: the
    // plugin stops once started, as a sandboxed plugin module's stop waits
    // for the start before it, where this one ran on and served.
    if (this.#stopAsked) await this.stop();
  }

  /** Settles as `work` does, or rejects `SANDBOX_DISPOSED` at disposal. */
  #unlessDisposed<T>(work: Promise<T>): Promise<T> {
    return settleUnlessAborted(work, this.#disposal.signal, () => {
      throw this.#disposedError("start");
    });
  }

  /** What the plugin's routes() answers; its throw is the cause. */
  async #listRoutes(): Promise<unknown> {
    try {
      return await this.#plugin.routes();
    } catch (error) {
      throw new CordonError(
        "BRIDGE_INVALID_PLUGIN_SURFACE",
        `Cannot read the routes of plugin "${this.manifest.id}": routes() failed; see the cause`,
        { cause: describe(error) },
      );
    }
  }

  async #handle(context: PluginRequestContext): Promise<Response> {
    // A disposal under way counts as done: its stop() leaves the state
    // "stopped" meanwhile, and a request the host routed before the
    // uninstall is then told to retry, not that the plugin needs a start.
    const disposed = this.#disposal.signal.aborted;
    // Stopped by its operator, with the code of a plugin being uninstalled,
    // as the host answers both 503; only a failed start is a failure.
    const stopped = this.#state === "stopped" && !this.#startFailed;
    if (disposed || stopped) {
      throw new CordonError(
        "SANDBOX_DISPOSED",
        `Cannot use plugin "${this.manifest.id}": ${
          disposed
            ? "it is disposed; install it again"
            : "it was stopped with stop(); start() it to serve again"
        }`,
      );
    }
    if (this.#state !== "running") {
      throw new CordonError(
        "BRIDGE_LIFECYCLE_FAILED",
        `Cannot use plugin "${this.manifest.id}": it is ${this.#state}; start it first`,
      );
    }
    return await this.#requests.answer(context, async (request) => {
      try {
        // The answer as the data a sandboxed plugin's realm would send: a
        // field left `undefined` is no field, a `Date` its JSON text, and
        // what is not data (a function, a BigInt, a cycle) fails as it does
        // there, with a refusal of the marshalling. Read once, by the walk
        // that copies it: a check that read the answer first would run its
        // getters and proxy traps twice, where a sandboxed plugin's run once.
        return toWireValue(await this.#answerInTime(request));
      } catch (error) {
        if (error instanceof CordonError) throw error;
        // A throw of the plugin, or of a getter or toJSON() of its answer.
        const notData = isRefusal(error);
        throw new CordonError(
          notData ? "BRIDGE_UNMARSHAL_FAILED" : "BRIDGE_HANDLER_REJECTED",
          notData
            ? `Cannot read the answer of plugin "${this.manifest.id}" from handleRequest(): it is not JSON data; return { status, headers, body }`
            : `Plugin "${this.manifest.id}" threw in handleRequest(): the cause has the error`,
          { cause: describe(error) },
        );
      }
    });
  }

  /**
   * What handleRequest() answers, or `TIMEOUT` once `timeoutMs` have
   * passed: the request holds a place with the host meanwhile.
   */
  #answerInTime(request: SerializedRequest): Promise<SerializedResponse> {
    return settleWithin(
      this.#plugin.handleRequest(request),
      this.#timeoutMs,
      () => {
        this.#timeouts++;
        throw new CordonError(
          "TIMEOUT",
          `Plugin "${this.manifest.id}" did not answer within ${this.#timeoutMs} ms: make handleRequest() answer sooner or raise timeoutMs`,
        );
      },
    );
  }

  async stop(): Promise<void> {
    // A stop after a failed start, or during one, makes the plugin stopped
    // on purpose.
    if (this.#state !== "disposed") {
      this.#startFailed = false;
      this.#stopAsked = true;
    }
    if (this.#state !== "running") return;
    this.#state = "stopped";
    await this.#hook("stop");
  }

  dispose(): Promise<void> {
    if (this.#disposing !== undefined) {
      // Later callers wait for the same stop; its failure is the first
      // caller's to report.
      return this.#disposing.catch(() => {});
    }
    this.#disposing = this.#disposeOnce();
    return this.#disposing;
  }

  async #disposeOnce(): Promise<void> {
    this.#disposal.abort();
    try {
      await this.stop();
    } finally {
      this.#state = "disposed";
    }
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.dispose();
  }

  metrics(): PluginMetrics {
    return this.#requests.metrics(this.#state, {
      timeouts: this.#timeouts,
      restarts: 0,
      restartsRefused: 0,
      denials: 0,
    });
  }
}

/**
 * Wraps trusted in-process plugin functions as a {@linkcode PluginModule}
 * (the `host` kind). Requests are marshalled exactly as for a vm plugin, so
 * a plugin can move between kinds without changes. It costs no isolation
 * and gives none: use it for first-party plugins.
 *
 * @param options The manifest and the plugin's functions.
 * @returns The plugin module; the caller (or the host it is installed in)
 * owns it.
 * @throws {TypeError} When the manifest or functions are malformed.
 * @throws {RangeError} When `maxBodyBytes` is not a whole number of bytes
 * or `bodyTimeoutMs`, `stopTimeoutMs` or `timeoutMs` not a whole number of
 * milliseconds from 1.
 *
 * @example
 * ```ts
 * import { createHostPluginModule } from "@cordon/cordon/plugin";
 * import assert from "node:assert/strict";
 *
 * await using plugin = createHostPluginModule({
 *   manifest: { id: "hello", version: "1.0.0" },
 *   plugin: {
 *     routes: () => [{ method: "GET", path: "/hello" }],
 *     handleRequest: (req) => ({ status: 200, headers: [], body: `hi ${req.tenantId}` }),
 *   },
 * });
 * await plugin.start();
 * const response = await plugin.routes[0]!.handler({
 *   request: new Request("http://127.0.0.1/plugins/hello/hello"),
 *   principalId: null, tenantId: "t1", capabilities: [], params: {},
 * });
 * assert.equal(await response.text(), "hi t1");
 * ```
 */
export function createHostPluginModule(
  options: HostPluginModuleOptions,
): PluginModule {
  return new HostPluginModule(options);
}
