import { CordonError } from "../protocol/cordon_error.ts";
import {
  copyListOption,
  type IntegerRange,
  type OptionKeys,
  readingOption,
  readIntegerOption,
  readOptions,
  TIMEOUT_MS_RANGE,
} from "../protocol/options.ts";
import {
  isThenable,
  settleUnlessAborted,
  settleWithin,
} from "../protocol/deadline.ts";
import { ERROR_CODES, type ErrorCode } from "../protocol/error_codes.ts";
import { callSink, ignoreRejection } from "../protocol/hook_calls.ts";
import { fieldOf } from "../protocol/host_fields.ts";
import { operatorText } from "../protocol/operator_text.ts";
import { PROBLEM_CONTENT_TYPE, problemDocument } from "../protocol/problem.ts";
import { ServerTelemetry } from "../protocol/server_telemetry.ts";
import { CountsByRequester, requesterKey } from "../protocol/requester_key.ts";
import {
  compileRoute,
  type RouteMatcher,
  splitPath,
} from "./_route_pattern.ts";
import {
  type PluginManifest,
  type PluginModule,
  type PluginRequestContext,
  type RouteDefinition,
  validatePluginManifest,
} from "./plugin_module.ts";
import { PLUGIN_TIERS, type PluginTier } from "./plugin_sandbox.ts";
import {
  requestTargetDetail,
  requestTargetProblem,
} from "./_request_target.ts";
import { requestWithUsedBody } from "./_used_body.ts";
import { type HeaderPair, isWellFormedHeader } from "./_http_marshal.ts";

/** A manifest id a module claims, as a message may quote it: it is the module's text. */
function namedId(id: unknown): string {
  if (typeof id === "string") return `"${operatorText(id)}"`;
  if (id === undefined || id === null) return `no id (${id})`;
  return `no id (${typeof id === "object" ? "an object" : `a ${typeof id}`})`;
}

/** How an installed plugin runs: a sandbox tier, or `host` for trusted code. */
export type PluginKind = PluginTier | "host";

const PLUGIN_KINDS: readonly string[] = [...PLUGIN_TIERS, "host"];

/** Who sends a request, as the host's identity layer says. */
export interface PluginIdentity {
  /** The authenticated principal id, or `null`. */
  principalId: string | null;
  /** The tenant id, or `null`. */
  tenantId: string | null;
}

/** Where a failure happened, for {@linkcode PluginHostOptions.onError}. */
export interface PluginErrorContext {
  /** The plugin, when the request reached one. */
  pluginId: string | null;
  /** The request. */
  request: Request;
}

/** Options of {@linkcode createPluginHost}. */
export interface PluginHostOptions {
  /** The path prefix plugins are served under. @default {"/plugins"} */
  basePath?: string | undefined;
  /**
   * Finds who sends a request; the host trusts nothing a client sends
   * unless this says so, and has no default. Pass
   * {@linkcode identifyAnonymously} to serve every caller without an
   * identity, {@linkcode identifyByTrustedHeaders} behind a gateway that
   * authenticates, or your own function. Throwing a `CordonError` with code
   * `PERMISSION_DENIED` answers 403. The host waits for it at most
   * `identifyTimeoutMs`, and not at all once the request's `signal` aborts
   * (its client left): pass that signal on to stop the work itself.
   */
  identify: (request: Request) => PluginIdentity | Promise<PluginIdentity>;
  /**
   * How long the host waits for `identify` per request, in milliseconds.
   * The request holds its place under `maxConcurrentRequests` meanwhile,
   * so an identity backend that stops answering cannot hold a plugin's
   * places for ever: past this the host answers 504 (`TIMEOUT`) and tells
   * `onError`. `identify` itself goes on; the host only stops waiting.
   * @default {10000}
   * @example
   * ```ts
   * import {
   *   createHostPluginModule,
   *   createPluginHost,
   *   type PluginIdentity,
   * } from "@cordon/cordon/plugin";
   * import assert from "node:assert/strict";
   *
   * await using host = createPluginHost({
   *   // An identity backend that does not answer.
   *   identify: () => new Promise<PluginIdentity>(() => {}),
   *   identifyTimeoutMs: 50,
   * });
   * await host.installPlugin({
   *   kind: "host",
   *   module: createHostPluginModule({
   *     manifest: { id: "hello", version: "1.0.0" },
   *     plugin: {
   *       routes: () => [{ method: "GET", path: "/" }],
   *       handleRequest: () => ({ status: 200, headers: [], body: "hi" }),
   *     },
   *   }),
   * });
   * const response = await host.fetch(new Request("http://127.0.0.1/plugins/hello/"));
   * assert.equal(response.status, 504);
   * assert.equal((await response.json()).code, "TIMEOUT");
   * ```
   */
  identifyTimeoutMs?: number | undefined;
  /**
   * The capability snapshot a plugin gets for a request (its
   * `context.capabilities`), for it to tell its caller what it can do. It
   * does not bound `capabilities.call`: what the plugin may call is its
   * sandbox's `policy.capabilities`, for every request alike, and a
   * capability handler is not told which request a call serves. It is
   * given the identity as the host read it from `identify()`'s answer,
   * once: a new frozen object with its `principalId` and `tenantId` only.
   * It answers at once with a list of names: anything else (a promise, a
   * string) or a throw refuses the request with 403 `PERMISSION_DENIED`
   * and tells `onError`.
   * @default {the manifest's capabilities}
   */
  capabilitiesFor?:
    | ((
      manifest: PluginManifest,
      identity: PluginIdentity,
    ) => readonly string[])
    | undefined;
  /**
   * Sees every failure with its full cause (never sent to clients). The
   * answer does not wait for it: what it throws, and what a promise it
   * returns rejects with, are dropped.
   */
  onError?: ((error: unknown, context: PluginErrorContext) => void) | undefined;
  /**
   * The most requests one plugin answers at once. Each holds its body and
   * a share of the plugin's realm, so past this the host answers 503 with
   * `Retry-After` (`PLUGIN_BUSY`) instead of queueing without bound.
   * @default {128}
   */
  maxConcurrentRequests?: number | undefined;
  /**
   * The most requests of one caller that one plugin answers at once, the
   * caller being who `identify` says sends a request: its `principalId`
   * and `tenantId` (every request with neither counts as one caller). Past
   * it the host answers 503 with `Retry-After` (`PLUGIN_BUSY`) while other
   * callers are still served, so one caller cannot take all of a plugin's
   * `maxConcurrentRequests`. A request counts once `identify` has answered
   * for it and until the plugin answers; while `identify` runs it holds a
   * place among `maxConcurrentRequests` only. The default changes nothing
   * unless set: a host whose callers all share one identity (such as
   * {@linkcode identifyAnonymously}) keeps every place it had.
   * @default {maxConcurrentRequests}
   * @example
   * ```ts
   * import {
   *   createHostPluginModule,
   *   createPluginHost,
   *   identifyByTrustedHeaders,
   * } from "@cordon/cordon/plugin";
   * import assert from "node:assert/strict";
   *
   * const gate = Promise.withResolvers<void>();
   * await using host = createPluginHost({
   *   identify: identifyByTrustedHeaders,
   *   maxConcurrentRequestsPerCaller: 1,
   * });
   * await host.installPlugin({
   *   kind: "host",
   *   module: createHostPluginModule({
   *     manifest: { id: "slow", version: "1.0.0" },
   *     plugin: {
   *       routes: () => [{ method: "GET", path: "/" }],
   *       handleRequest: async (req) => {
   *         if (req.tenantId === "acme") await gate.promise;
   *         return { status: 200, headers: [], body: "done" };
   *       },
   *     },
   *   }),
   * });
   * const from = (tenant: string) =>
   *   host.fetch(new Request("http://127.0.0.1/plugins/slow/", {
   *     headers: { "x-cordon-tenant": tenant },
   *   }));
   * const held = from("acme");
   * const refused = await from("acme");
   * assert.equal(refused.status, 503);
   * assert.equal((await refused.json()).code, "PLUGIN_BUSY");
   * const other = await from("globex");
   * assert.equal(await other.text(), "done");
   * gate.resolve();
   * assert.equal(await (await held).text(), "done");
   * ```
   */
  maxConcurrentRequestsPerCaller?: number | undefined;
}

/** How a plugin is installed. */
export interface InstallPluginOptions {
  /**
   * The tier of a sandboxed plugin module (see `createPluginSandbox()`),
   * or `host` for trusted code.
   */
  kind: PluginKind;
  /** The plugin module. The host owns it once it is installed. */
  module: PluginModule;
  /** The manifest; must match the module's. @default {module.manifest} */
  manifest?: PluginManifest | undefined;
}

/** An installed plugin, as the host lists it. */
export interface InstalledPlugin {
  /** The plugin's id. */
  id: string;
  /** How it runs. */
  kind: PluginKind;
  /** Its manifest. */
  manifest: PluginManifest;
  /** Its routes, as full paths such as `GET /plugins/echo/echo`. */
  routes: { method: string; path: string }[];
}

/** A running plugin host. The caller owns it and must dispose it. */
export interface PluginHost extends AsyncDisposable {
  /**
   * Answers a request: a plugin's route, or a problem document. Bound, so
   * `Deno.serve(host.fetch)` works. Each request gets an OpenTelemetry
   * server span named after the route it matched, continued from its
   * `traceparent`, or names the server span already active after it
   * (docs/overview.md, "Telemetry").
   */
  readonly fetch: (request: Request) => Promise<Response>;
  /**
   * Starts a plugin module and serves its routes. The host owns the module
   * from then on, and disposes it when its start fails.
   *
   * @param options The kind, the module and, optionally, its manifest.
   * @returns The installed plugin with its full route paths.
   * @throws {TypeError} When an option is unknown or has the wrong type,
   * the manifest is malformed or names another id than the module's, the
   * module's `answerHeaders` are not well-formed `[name, value]` pairs, or
   * a plugin with this id is installed.
   * @throws {CordonError} `SANDBOX_DISPOSED` when the host is disposed; the
   * module's start failure otherwise: cordon's plugin modules fail with
   * `BRIDGE_LIFECYCLE_FAILED` (the plugin cannot load or start) or
   * `BRIDGE_INVALID_PLUGIN_SURFACE` (no `routes()`/`handleRequest()`, or
   * malformed routes).
   */
  installPlugin(options: InstallPluginOptions): Promise<InstalledPlugin>;
  /**
   * Stops serving a plugin and disposes it; `false` when it was not there.
   * An install of that id under way is ended (its module disposed, so the
   * install rejects with `SANDBOX_DISPOSED`, or for a sandboxed plugin
   * whose start had begun `BRIDGE_LIFECYCLE_FAILED` with that cause): a
   * `start()` that never settles cannot hold the uninstall.
   */
  uninstallPlugin(id: string): Promise<boolean>;
  /** The installed plugins. */
  plugins(): InstalledPlugin[];
  /**
   * Uninstalls every plugin, and ends the installs under way. From then on
   * `fetch` answers every request 503 `SANDBOX_DISPOSED`, so clients of a
   * server still shutting down retry. Disposing twice is harmless.
   */
  dispose(): Promise<void>;
}

interface Entry {
  kind: PluginKind;
  module: PluginModule;
  manifest: PluginManifest;
  routes: { route: RouteDefinition; match: RouteMatcher }[];
  /** Requests under way, from routing to the plugin's answer. */
  inFlight: number;
  /**
   * Those requests whose caller is known, by the caller's key; a key is
   * dropped once it has none, so callers seen once leave nothing behind.
   */
  inFlightByCaller: CountsByRequester;
  /** The module's answerHeaders, as read once at install. */
  answerHeaders: readonly HeaderPair[];
}

/**
 * A module's `answerHeaders`, checked: a list of well-formed header pairs,
 * copied, so the module cannot change them later.
 *
 * @throws {TypeError} When they are anything else.
 */
function readAnswerHeaders(
  module: PluginModule,
  pluginId: string,
): readonly HeaderPair[] {
  // Read as an option is: a module that has none adds none that a
  // dependency put on Object.prototype.
  const given = fieldOf(module, "answerHeaders");
  if (given === undefined) return [];
  // Each pair is copied before it is checked, so the headers added to
  // answers are the ones checked, whatever a getter answers later.
  const where = `install plugin "${pluginId}"`;
  const name = "its module's answerHeaders";
  const listed = copyListOption(where, name, given);
  const pairs = listed === null
    ? null
    : readingOption(where, name, () => listed.map(copyPair));
  if (
    pairs === null ||
    !pairs.every((pair) =>
      pair !== null && typeof pair[0] === "string" &&
      typeof pair[1] === "string" && isWellFormedHeader(pair[0], pair[1])
    )
  ) {
    throw new TypeError(
      `Cannot install plugin "${pluginId}": its module's answerHeaders must be a list of [name, value] pairs of well-formed headers`,
    );
  }
  return Object.freeze(
    (pairs as [string, string][]).map((pair) => Object.freeze(pair)),
  );
}

/** A listed pair's two entries, each read once, or `null` for no pair. */
function copyPair(pair: unknown): [unknown, unknown] | null {
  return Array.isArray(pair) && pair.length === 2 ? [pair[0], pair[1]] : null;
}

/**
 * `response` with each of a plugin's answer headers it lacks. A sandboxed
 * plugin's answers carry them already; the problems the host answers for
 * it do not, and a browser renders those on the host's origin as well.
 */
function withAnswerHeaders(
  response: Response,
  answerHeaders: readonly HeaderPair[],
): Response {
  const missing = answerHeaders.filter(([name]) => !response.headers.has(name));
  // A network error has no headers a browser reads, and no copy of it can
  // be built: it goes out as it is.
  if (missing.length === 0 || response.type === "error") return response;
  try {
    // In place, so the answer's headers keep their order on the wire.
    for (const [name, value] of missing) response.headers.append(name, value);
    return response;
  } catch {
    // The headers of a Response from fetch() cannot change: a copy can.
  }
  const headers = new Headers(response.headers);
  for (const [name, value] of missing) headers.append(name, value);
  return new Response(response.body, {
    status: response.status,
    statusText: response.statusText,
    headers,
  });
}

const STATUS: Partial<Record<ErrorCode, number>> = {
  PLUGIN_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  PERMISSION_DENIED: 403,
  BRIDGE_MARSHAL_FAILED: 400,
  BRIDGE_RESPONSE_HEADER_DENIED: 502,
  TIMEOUT: 504,
  SANDBOX_DISPOSED: 503,
  SANDBOX_UNAVAILABLE: 503,
  SANDBOX_RESTART_LIMITED: 503,
  SANDBOX_BUSY: 503,
};

/**
 * What clients read after `Plugin "<id>"` for each code: fixed text, never
 * a cause or a path. Other codes give their registry remedy.
 */
const PUBLIC_DETAIL: Partial<Record<ErrorCode, string>> = {
  PERMISSION_DENIED:
    "was denied a permission it needs for this request: grant it in the plugin's policy or contact the operator",
  TIMEOUT: "did not answer within its time limit: retry later",
  OUT_OF_MEMORY: "exceeded its memory limit: retry later",
  BRIDGE_MARSHAL_FAILED:
    "cannot receive this request: send a smaller or readable body",
  SANDBOX_DISPOSED:
    "is being uninstalled, or its host is shutting down: retry later",
  SANDBOX_UNAVAILABLE:
    "could not start its sandbox on this host, which lacks room for it (file descriptors, processes or memory) or cannot run its tier: retry later",
  SANDBOX_RESTART_LIMITED:
    "kept failing and is paused: retry after the Retry-After delay",
  SANDBOX_BUSY:
    "has as many calls waiting as its sandbox's maxQueued allows: retry shortly",
};

/**
 * What clients read of a plugin still installed whose module was stopped
 * (or disposed) by its operator: the code and status of a plugin being
 * uninstalled, as both come back once the operator acts.
 */
const OPERATOR_STOPPED_DETAIL = "is stopped by its operator: retry later";

/** What clients read of a plugin whose realm will not start again. */
const STOPPED_DETAIL =
  "could not start and stays stopped until its operator restarts it: do not retry";

function publicDetail(code: ErrorCode, pluginId: string): string {
  const detail = PUBLIC_DETAIL[code] ??
    `failed to answer (${code}): ${ERROR_CODES[code].remedy}`;
  return `Plugin "${pluginId}" ${detail}`;
}

/** Milliseconds until a paused plugin may restart, as its sandbox said. */
function restartWaitMs(error: CordonError): unknown {
  return (error.cause as { restartAvailableInMs?: unknown } | undefined)
    ?.restartAvailableInMs;
}

/**
 * The `CordonError` a hook or a plugin failed with, or `undefined` for any
 * other value: one that cannot even be asked its class (a proxy whose
 * every read throws) is another value, not a fault of the host's.
 */
function cordonErrorOf(error: unknown): CordonError | undefined {
  try {
    return error instanceof CordonError ? error : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a hook's answer is an object that lists its entries. */
function isList(value: unknown): value is Iterable<unknown> {
  return typeof value === "object" && value !== null &&
    typeof (value as { [Symbol.iterator]?: unknown })[Symbol.iterator] ===
      "function";
}

/**
 * Whether a refused call's plugin will not start again by waiting
 * (`limits.maxRestarts` 0): its answer then gives no `Retry-After`.
 */
function stoppedForGood(error: CordonError): boolean {
  return error.code === "SANDBOX_RESTART_LIMITED" &&
    restartWaitMs(error) === Infinity;
}

/**
 * The `Retry-After` of a plugin paused after its realm kept failing: the
 * seconds until it may be restarted, at least 1, and none when waiting
 * never restarts it (`limits.maxRestarts` 0); of a plugin whose
 * sandbox refused the call as busy, 1, as for `PLUGIN_BUSY`.
 */
function retryAfter(error: CordonError): Record<string, string> {
  if (error.code === "SANDBOX_BUSY") return { "retry-after": "1" };
  if (error.code !== "SANDBOX_RESTART_LIMITED" || stoppedForGood(error)) {
    return {};
  }
  const waitMs = restartWaitMs(error);
  const seconds = typeof waitMs === "number" && Number.isFinite(waitMs)
    ? Math.max(1, Math.ceil(waitMs / 1000))
    : 1;
  return { "retry-after": String(seconds) };
}

/**
 * The most body bytes the host counts for a `HEAD` answer's
 * `content-length`; past it the field is left out. A sandboxed plugin's
 * answer is far smaller (`maxPayloadBytes`); a route of another plugin
 * module may stream more.
 */
const HEAD_COUNTED_BYTES = 64 * 1024 * 1024;

/**
 * The answer to a `HEAD`: the route's headers, no body, and the length of
 * the body it leaves out, as a `GET` would send it. Without one Deno.serve
 * sends `content-length: 0` for a body the host left out and the body's
 * length for one it kept, and Node's server neither.
 */
async function headAnswer(response: Response): Promise<Response> {
  const headers = new Headers(response.headers);
  if (response.body !== null && !headers.has("content-length")) {
    let length = 0;
    for await (const chunk of response.body) {
      length += chunk.byteLength;
      // Leaving the loop cancels the body.
      if (length > HEAD_COUNTED_BYTES) break;
    }
    if (length <= HEAD_COUNTED_BYTES) {
      headers.set("content-length", String(length));
    }
  }
  if (!response.bodyUsed) await response.body?.cancel();
  return new Response(null, {
    status: response.status,
    statusText: response.statusText,
    headers,
  });
}

/** `request` with another URL and method; its body moves to the new one. */
function withRequestLine(
  request: Request,
  url: string,
  method: string,
): Request {
  const init = { method, headers: request.headers, signal: request.signal };
  // A web Request refuses a GET or HEAD with a body; the host reads none.
  const body = method === "GET" || method === "HEAD" ? null : request.body;
  // A body a framework already read cannot be handed on, only its state:
  // the Request constructor would throw, and the fetch reject.
  if (body !== null && request.bodyUsed) return requestWithUsedBody(url, init);
  return new Request(url, {
    ...init,
    body,
    // Node's Request takes a streamed body only with this.
    ...(body === null ? {} : { duplex: "half" }),
  } as RequestInit);
}

function problem(
  code: ErrorCode,
  status: number,
  detail: string,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(problemDocument(code, status, detail)), {
    status,
    headers: { "content-type": PROBLEM_CONTENT_TYPE, ...headers },
  });
}

/** The instrumentation scope of the host's server spans. */
const INSTRUMENTATION_SCOPE = "@cordon/cordon/plugin";

/** The route template a request matched, once routing found one. */
interface MatchedRoute {
  route: string | undefined;
}

/** What the host got instead of an identity when it stopped waiting for one. */
const IDENTIFY_TIMED_OUT = Symbol("identify() timed out");
const CLIENT_LEFT = Symbol("the client left");
type Unidentified = typeof IDENTIFY_TIMED_OUT | typeof CLIENT_LEFT;

/**
 * An `identify` for a host that does not know its callers: every request
 * has no principal and no tenant, whatever headers it carries.
 *
 * @param _request The request; nothing of it is trusted.
 * @returns `{ principalId: null, tenantId: null }`.
 * @example
 * ```ts
 * import { identifyAnonymously } from "@cordon/cordon/plugin";
 * import assert from "node:assert/strict";
 *
 * const request = new Request("http://127.0.0.1/", {
 *   headers: { "x-cordon-tenant": "someone-else" },
 * });
 * assert.deepEqual(identifyAnonymously(request), { principalId: null, tenantId: null });
 * ```
 */
export function identifyAnonymously(_request: Request): PluginIdentity {
  return { principalId: null, tenantId: null };
}

/** The range of `maxConcurrentRequests` and its share per caller. */
const CONCURRENT_REQUESTS_RANGE: IntegerRange = Object.freeze({
  min: 1,
  max: 1_000_000,
});

const HOST_OPTION_KEYS: OptionKeys<PluginHostOptions> = {
  basePath: true,
  identify: true,
  identifyTimeoutMs: true,
  capabilitiesFor: true,
  onError: true,
  maxConcurrentRequests: true,
  maxConcurrentRequestsPerCaller: true,
};

/**
 * An `identify` that reads the `x-cordon-principal` and `x-cordon-tenant`
 * headers. Use it only behind a gateway that authenticates every caller,
 * removes those headers from what clients send and sets them itself:
 * anywhere else a client can claim any tenant.
 *
 * @param request The request, as the gateway forwarded it.
 * @returns The principal and tenant the gateway set, or `null` each.
 * @example
 * ```ts
 * import { identifyByTrustedHeaders } from "@cordon/cordon/plugin";
 * import assert from "node:assert/strict";
 *
 * const request = new Request("http://127.0.0.1/", {
 *   headers: { "x-cordon-principal": "ada", "x-cordon-tenant": "acme" },
 * });
 * assert.deepEqual(identifyByTrustedHeaders(request), { principalId: "ada", tenantId: "acme" });
 * ```
 */
export function identifyByTrustedHeaders(request: Request): PluginIdentity {
  return {
    principalId: request.headers.get("x-cordon-principal"),
    tenantId: request.headers.get("x-cordon-tenant"),
  };
}

class PluginHostImpl implements PluginHost {
  readonly fetch: (request: Request) => Promise<Response>;
  readonly #plugins = new Map<string, Entry>();
  /** Installs under way, by id: an uninstall of that id ends them. */
  readonly #installing = new Map<
    string,
    { module: PluginModule; done: Promise<unknown> }
  >();
  readonly #basePath: string;
  readonly #telemetry: ServerTelemetry = new ServerTelemetry(
    INSTRUMENTATION_SCOPE,
  );
  readonly #identify: PluginHostOptions["identify"];
  readonly #identifyTimeoutMs: number;
  readonly #capabilitiesFor: NonNullable<PluginHostOptions["capabilitiesFor"]>;
  readonly #onError: PluginHostOptions["onError"];
  readonly #maxConcurrentRequests: number;
  readonly #maxConcurrentRequestsPerCaller: number;
  /** Modules uninstalled while they started: their install gives up. */
  readonly #uninstalled = new WeakSet<PluginModule>();
  #disposed = false;

  constructor(given: PluginHostOptions) {
    const options = readOptions(
      "create a plugin host",
      given,
      HOST_OPTION_KEYS,
    );
    if (typeof options.identify !== "function") {
      throw new TypeError(
        "Cannot create a plugin host: pass identify, which tells the host who sends a request (identifyAnonymously for no identities, identifyByTrustedHeaders behind an authenticating gateway, or your own)",
      );
    }
    const basePath = (options.basePath ?? "/plugins").replace(/\/+$/, "");
    if (!basePath.startsWith("/") && basePath !== "") {
      throw new TypeError(
        `Cannot use basePath "${options.basePath}": it must start with /`,
      );
    }
    this.#basePath = basePath;
    this.#identify = options.identify;
    this.#capabilitiesFor = options.capabilitiesFor ??
      ((manifest) => manifest.capabilities ?? []);
    this.#onError = options.onError;
    for (const name of ["capabilitiesFor", "onError"] as const) {
      const hook = options[name];
      if (hook !== undefined && typeof hook !== "function") {
        throw new TypeError(
          `Cannot create a plugin host: ${name} must be a function`,
        );
      }
    }
    this.#maxConcurrentRequests = readIntegerOption(
      "create a plugin host",
      "maxConcurrentRequests",
      options.maxConcurrentRequests,
      128,
      CONCURRENT_REQUESTS_RANGE,
    );
    this.#maxConcurrentRequestsPerCaller = readIntegerOption(
      "create a plugin host",
      "maxConcurrentRequestsPerCaller",
      options.maxConcurrentRequestsPerCaller,
      this.#maxConcurrentRequests,
      CONCURRENT_REQUESTS_RANGE,
    );
    this.#identifyTimeoutMs = readIntegerOption(
      "create a plugin host",
      "identifyTimeoutMs",
      options.identifyTimeoutMs,
      10_000,
      TIMEOUT_MS_RANGE,
    );
    this.fetch = (request) => this.#served(request);
  }

  /** A plugin route's path as the host serves it: its template. */
  #routePath(id: string, path: string): string {
    return `${this.#basePath}/${id}${path === "/" ? "" : path}`;
  }

  /** Answers a request inside its server span, and records it. */
  async #served(request: Request): Promise<Response> {
    const telemetry = this.#telemetry;
    const started = telemetry.metered ? performance.now() : 0;
    const span = telemetry.start(request);
    const matched: MatchedRoute = { route: undefined };
    const outcome = (status: number, error?: unknown) => ({
      status,
      route: matched.route,
      durationMs: telemetry.metered ? performance.now() - started : NaN,
      error,
    });
    let response: Response;
    try {
      response = await telemetry.within(
        span,
        () => this.#fetch(request, matched),
      );
    } catch (error) {
      telemetry.end(span, outcome(500, error));
      throw error;
    }
    telemetry.end(span, outcome(response.status));
    return response;
  }

  #report(error: unknown, pluginId: string | null, request: Request): void {
    // A failing error sink does not change the answer.
    callSink(this.#onError, error, { pluginId, request });
  }

  #describe(entry: Entry): InstalledPlugin {
    return {
      id: entry.manifest.id,
      kind: entry.kind,
      manifest: entry.manifest,
      routes: entry.routes.map(({ route }) => ({
        method: route.method,
        path: this.#routePath(entry.manifest.id, route.path),
      })),
    };
  }

  #assertUsable(): void {
    if (this.#disposed) {
      throw new CordonError(
        "SANDBOX_DISPOSED",
        "Cannot install a plugin in a disposed host: create a new host",
      );
    }
  }

  async installPlugin(given: InstallPluginOptions): Promise<InstalledPlugin> {
    this.#assertUsable();
    const options = readOptions("install the plugin", given ?? null, {
      kind: true,
      module: true,
      manifest: true,
    });
    if (!PLUGIN_KINDS.includes(options.kind)) {
      throw new TypeError(
        `Cannot install the plugin: kind must be one of ${
          PLUGIN_KINDS.join(", ")
        }`,
      );
    }
    const module = options.module;
    if (
      typeof module !== "object" || module === null ||
      typeof module.start !== "function" || typeof module.dispose !== "function"
    ) {
      throw new TypeError(
        "Cannot install the plugin: module must be a PluginModule",
      );
    }
    const manifest = validatePluginManifest(
      options.manifest ?? module.manifest,
    );
    if (module.manifest?.id !== manifest.id) {
      throw new TypeError(
        `Cannot install plugin "${manifest.id}": the module's manifest names ${
          namedId(module.manifest?.id)
        }`,
      );
    }
    if (this.#plugins.has(manifest.id) || this.#installing.has(manifest.id)) {
      throw new TypeError(
        `Cannot install plugin "${manifest.id}": a plugin with this id is installed; uninstall it first`,
      );
    }
    const answerHeaders = readAnswerHeaders(module, manifest.id);
    const installing = this.#install(
      options.kind,
      module,
      manifest,
      answerHeaders,
    );
    this.#installing.set(manifest.id, { module, done: installing });
    try {
      return await installing;
    } finally {
      this.#installing.delete(manifest.id);
    }
  }

  async #install(
    kind: PluginKind,
    module: PluginModule,
    manifest: PluginManifest,
    answerHeaders: readonly HeaderPair[],
  ): Promise<InstalledPlugin> {
    try {
      await module.start();
    } catch (error) {
      await module.dispose().catch(() => {});
      throw error;
    }
    if (this.#uninstalled.has(module)) {
      // Disposed again: what a start() that ignored its disposal took.
      await module.dispose().catch(() => {});
      throw new CordonError(
        "SANDBOX_DISPOSED",
        `Cannot install plugin "${manifest.id}": it was uninstalled while it started`,
      );
    }
    const routes = module.routes.map((route) => ({
      route,
      match: compileRoute(route.path),
    }));
    const entry: Entry = {
      kind,
      module,
      manifest,
      routes,
      inFlight: 0,
      inFlightByCaller: new CountsByRequester(),
      answerHeaders,
    };
    if (this.#disposed) await module.dispose().catch(() => {});
    this.#assertUsable();
    this.#plugins.set(manifest.id, entry);
    return this.#describe(entry);
  }

  async uninstallPlugin(id: string): Promise<boolean> {
    const installing = this.#installing.get(id);
    if (installing !== undefined) {
      this.#uninstalled.add(installing.module);
      await installing.module.dispose().catch(() => {});
      await installing.done.catch(() => {});
      // The install may have finished just before this call ended it; a
      // plugin installed under the id since is not this call's to remove.
      if (this.#plugins.get(id)?.module === installing.module) {
        this.#plugins.delete(id);
      }
      return true;
    }
    const entry = this.#plugins.get(id);
    if (entry === undefined) return false;
    this.#plugins.delete(id);
    await entry.module.dispose();
    return true;
  }

  /**
   * What `identify` answers for a request, or why the host stopped waiting
   * for it: the request holds a place with its plugin meanwhile, and a
   * wait without end would hold it for ever. The operator's `identify`
   * goes on; it has the request's signal to stop by. An answer given at
   * once is taken as it is, with no timer and without reading the signal:
   * Deno.serve prints a warning the first time a handler reads one.
   */
  async #identifyInTime(
    request: Request,
  ): Promise<PluginIdentity | Unidentified> {
    const answer = this.#identify(request);
    if (!isThenable(answer)) return answer;
    return await settleWithin<PluginIdentity | Unidentified>(
      settleUnlessAborted<PluginIdentity | Unidentified>(
        answer,
        request.signal,
        () => CLIENT_LEFT,
      ),
      this.#identifyTimeoutMs,
      () => IDENTIFY_TIMED_OUT,
    );
  }

  /**
   * Who sends a request and the capabilities the plugin holds for it, or
   * why the host stopped waiting for `identify`. An identity or a
   * capability list of the wrong shape is the operator's fault, neither the
   * client's nor the plugin's: it throws, and the request is refused as one
   * whose identity is unknown.
   */
  async #caller(
    request: Request,
    manifest: PluginManifest,
  ): Promise<PluginIdentity & { capabilities: string[] } | Unidentified> {
    const identity = await this.#identifyInTime(request);
    if (identity === IDENTIFY_TIMED_OUT || identity === CLIENT_LEFT) {
      return identity;
    }
    // An id identify() left out is null, not one a dependency of the
    // host put on Object.prototype.
    const isObject = typeof identity === "object" && identity !== null;
    const principalId = isObject
      ? fieldOf(identity, "principalId") ?? null
      : null;
    const tenantId = isObject ? fieldOf(identity, "tenantId") ?? null : null;
    if (
      !isObject ||
      (principalId !== null && typeof principalId !== "string") ||
      (tenantId !== null && typeof tenantId !== "string")
    ) {
      throw new TypeError(
        "Cannot identify the request: identify() must return { principalId, tenantId }, each a string or null",
      );
    }
    // The identity as read above, so capabilitiesFor decides for the
    // principal and tenant the plugin is told of, whatever a getter of
    // identify()'s answer would say when read again.
    const read: PluginIdentity = Object.freeze({ principalId, tenantId });
    const answer: unknown = this.#capabilitiesFor(manifest, read);
    // A hook written async answers a promise, which is no list: refused,
    // and its rejection, which nobody waits for, dropped (asked of no
    // list only, as asking costs a thrown TypeError). A string is no list
    // either: it would grant one capability, or each of its letters.
    const capabilities = isList(answer) ? [...answer] : null;
    if (capabilities === null) ignoreRejection(answer);
    if (
      capabilities === null ||
      !capabilities.every((name) => typeof name === "string")
    ) {
      throw new TypeError(
        "Cannot identify the request: capabilitiesFor() must return a list of capability names",
      );
    }
    return { principalId, tenantId, capabilities };
  }

  plugins(): InstalledPlugin[] {
    return [...this.#plugins.values()].map((entry) => this.#describe(entry));
  }

  async #fetch(request: Request, matched: MatchedRoute): Promise<Response> {
    // A server shutting down may still hand on requests after dispose():
    // their clients should retry, not learn that no plugin has the id.
    if (this.#disposed) {
      return problem(
        "SANDBOX_DISPOSED",
        503,
        "The plugin host is shutting down: retry later",
      );
    }
    const refused = requestTargetProblem(
      request.url,
      request.headers.get("host"),
      request.method,
    );
    if (refused !== null) {
      return problem("REQUEST_INVALID", 400, requestTargetDetail(refused));
    }
    const url = new URL(request.url);
    // Deno keeps the URL as its client sent it (`"`, `<`, `{` unescaped, a
    // host in capitals); Node's Request holds it parsed. Plugins see the
    // parsed form on both. Deno keeps the method as sent too: a `get` with
    // a body would reach the plugin with it, and a Request rebuilt for its
    // URL (which reads `get` as GET, which has no body) would throw.
    const method = request.method.toUpperCase();
    if (url.href !== request.url || method !== request.method) {
      request = withRequestLine(request, url.href, method);
    }
    const prefix = `${this.#basePath}/`;
    if (!url.pathname.startsWith(prefix)) {
      return problem(
        "PLUGIN_NOT_FOUND",
        404,
        `No plugin serves this path: plugins live under ${prefix}<id>/`,
      );
    }
    const rest = url.pathname.slice(prefix.length);
    const id = rest.split("/", 1)[0]!;
    const entry = this.#plugins.get(id);
    if (entry === undefined) {
      return problem(
        "PLUGIN_NOT_FOUND",
        404,
        "No installed plugin has this id: install it or check the URL",
      );
    }
    return withAnswerHeaders(
      await this.#route(entry, request, rest.slice(id.length), matched),
      entry.answerHeaders,
    );
  }

  /** Answers a request for a plugin: its route's answer, or a problem. */
  async #route(
    entry: Entry,
    request: Request,
    path: string,
    matched: MatchedRoute,
  ): Promise<Response> {
    const id = entry.manifest.id;
    const segments = splitPath(path);
    const method = request.method.toUpperCase();
    let found:
      | { route: RouteDefinition; params: Record<string, string> }
      | undefined;
    const allowed = new Set<string>();
    for (const { route, match } of entry.routes) {
      const params = segments === null ? null : match(segments);
      if (params === null) continue;
      allowed.add(route.method);
      // A GET route answers HEAD too, so a client told what the path
      // allows learns that (RFC 9110 §10.2.1).
      if (route.method === "GET") allowed.add("HEAD");
      if (route.method === method) {
        found = { route, params };
        break;
      }
      // HEAD falls back to a GET route, whose body is then left out.
      if (method === "HEAD" && route.method === "GET") {
        found ??= { route, params };
      }
    }
    if (found !== undefined) {
      matched.route = this.#routePath(id, found.route.path);
    }
    if (found === undefined) {
      if (allowed.size > 0) {
        return problem(
          "METHOD_NOT_ALLOWED",
          405,
          `Plugin "${id}" does not answer this method here: use ${
            [...allowed].join(" or ")
          }`,
          { allow: [...allowed].join(", ") },
        );
      }
      return problem(
        "PLUGIN_NOT_FOUND",
        404,
        `Plugin "${id}" has no route for this path: check the URL`,
      );
    }
    if (entry.inFlight >= this.#maxConcurrentRequests) {
      return problem(
        "PLUGIN_BUSY",
        503,
        `Plugin "${id}" is answering as many requests as the host allows: retry shortly`,
        { "retry-after": "1" },
      );
    }
    entry.inFlight++;
    try {
      return await this.#answer(entry, request, found.route, found.params);
    } finally {
      entry.inFlight--;
    }
  }

  /** Identifies the caller and has the plugin answer a routed request. */
  async #answer(
    entry: Entry,
    request: Request,
    route: RouteDefinition,
    params: Record<string, string>,
  ): Promise<Response> {
    const id = entry.manifest.id;
    let caller: PluginIdentity & { capabilities: string[] } | Unidentified;
    try {
      caller = await this.#caller(request, entry.manifest);
    } catch (error) {
      this.#report(error, id, request);
      const refused = cordonErrorOf(error)?.code === "PERMISSION_DENIED";
      return problem(
        "PERMISSION_DENIED",
        403,
        `The request's identity ${
          refused ? "was refused" : "could not be established"
        }: sign in again`,
      );
    }
    if (caller === IDENTIFY_TIMED_OUT || caller === CLIENT_LEFT) {
      return this.#unidentified(caller, id, request);
    }
    const key = requesterKey(caller.principalId, caller.tenantId);
    const byCaller = entry.inFlightByCaller;
    if (byCaller.of(key) >= this.#maxConcurrentRequestsPerCaller) {
      return problem(
        "PLUGIN_BUSY",
        503,
        `Plugin "${id}" is answering as many requests of this caller as the host's maxConcurrentRequestsPerCaller allows: retry shortly`,
        { "retry-after": "1" },
      );
    }
    byCaller.add(key, 1);
    try {
      return await this.#handle(entry, request, route, { ...caller, params });
    } finally {
      byCaller.add(key, -1);
    }
  }

  /** Has the plugin answer a request whose caller is known. */
  async #handle(
    entry: Entry,
    request: Request,
    route: RouteDefinition,
    caller: Omit<PluginRequestContext, "request">,
  ): Promise<Response> {
    const id = entry.manifest.id;
    try {
      const response = await route.handler({ request, ...caller });
      if (request.method.toUpperCase() !== "HEAD") return response;
      return await headAnswer(response);
    } catch (error) {
      this.#report(error, id, request);
      const cordonError = cordonErrorOf(error);
      if (cordonError !== undefined) {
        const reason = cordonError.code === "BRIDGE_MARSHAL_FAILED"
          ? (cordonError.cause as { reason?: unknown } | undefined)?.reason
          : undefined;
        // Its body over the bridge's maxBodyBytes, or the whole request
        // over the sandbox's maxPayloadBytes.
        if (reason === "body-too-large" || reason === "payload-too-large") {
          return problem(
            cordonError.code,
            413,
            `Plugin "${id}" cannot receive a body this large: send a smaller one`,
          );
        }
        if (reason === "body-timeout") {
          return problem(
            cordonError.code,
            408,
            `The request's body did not arrive in time for plugin "${id}": send it again`,
            { connection: "close" },
          );
        }
        // By code alone: the same failure of the same handler answers
        // alike as a host plugin and on every tier.
        return problem(
          cordonError.code,
          STATUS[cordonError.code] ?? 502,
          this.#detail(cordonError, entry),
          retryAfter(cordonError),
        );
      }
      return problem(
        "BRIDGE_HANDLER_REJECTED",
        500,
        publicDetail("BRIDGE_HANDLER_REJECTED", id),
      );
    }
  }

  /** What the client reads of a plugin's failure. */
  #detail(error: CordonError, entry: Entry): string {
    const id = entry.manifest.id;
    if (stoppedForGood(error)) return `Plugin "${id}" ${STOPPED_DETAIL}`;
    // A plugin neither uninstalled nor shut down with the host is disposed
    // only by its operator's stop.
    const stillInstalled = !this.#disposed && this.#plugins.get(id) === entry;
    if (error.code === "SANDBOX_DISPOSED" && stillInstalled) {
      return `Plugin "${id}" ${OPERATOR_STOPPED_DETAIL}`;
    }
    return publicDetail(error.code, id);
  }

  /**
   * The answer to a request whose identity the host stopped waiting for,
   * and the reason `onError` is told.
   */
  #unidentified(
    why: Unidentified,
    pluginId: string,
    request: Request,
  ): Response {
    if (why === IDENTIFY_TIMED_OUT) {
      this.#report(
        new CordonError(
          "TIMEOUT",
          `Cannot identify the request: identify() did not settle within ${this.#identifyTimeoutMs} ms; make it answer sooner or raise identifyTimeoutMs`,
        ),
        pluginId,
        request,
      );
      return problem(
        "TIMEOUT",
        504,
        "The request's identity could not be established in time: retry later",
      );
    }
    this.#report(
      new CordonError(
        "ABORTED",
        "Cannot identify the request: its client left before identify() settled; nothing to do unless identify() is slow",
      ),
      pluginId,
      request,
    );
    // No one reads it: the client has gone.
    return problem(
      "ABORTED",
      502,
      "The request's client left before its identity was established: send it again",
    );
  }

  async dispose(): Promise<void> {
    this.#disposed = true;
    const entries = [...this.#plugins.values()];
    this.#plugins.clear();
    // A plugin still installing is disposed too, which ends its start;
    // waiting for its install means no plugin outlives the host.
    const installing = [...this.#installing.values()];
    await Promise.allSettled([
      ...entries.map((entry) => entry.module.dispose()),
      ...installing.map(({ module }) => module.dispose()),
      ...installing.map(({ done }) => done),
    ]);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.dispose();
  }
}

/**
 * Creates a plugin host. Plugins answer under
 * `<basePath>/<plugin id>/<route path>`. Unknown plugins and routes answer
 * 404 with a `PLUGIN_NOT_FOUND` problem document; a request that cannot be
 * routed as sent (a `.` or `..` path segment, a Host header that is not
 * `host[:port]`, a fragment, a scheme other than http or https) 400
 * (`REQUEST_INVALID`); a denied permission, or an
 * identity that `identify` cannot establish, 403 (`PERMISSION_DENIED`); a
 * plugin over its time limit, or an `identify` that does not settle within
 * `identifyTimeoutMs`, 504 (`TIMEOUT`); a plugin already answering
 * `maxConcurrentRequests` requests, or `maxConcurrentRequestsPerCaller` of
 * the request's caller, 503 (`PLUGIN_BUSY`, with `Retry-After`);
 * other plugin failures 502
 * with their code. Problem details are fixed sentences that repeat nothing
 * the client sent: causes, stack traces and host paths go to `onError`
 * only.
 *
 * @param options Prefix, identity and capability hooks.
 * @returns The host. The caller owns it and must dispose it: the realm of
 * each sandboxed plugin it holds keeps the process alive until then, on
 * Deno and Node alike.
 * @throws {TypeError} When an option is unknown or has the wrong type,
 * `identify` is missing or `basePath` does not start with `/`.
 * @throws {RangeError} When `maxConcurrentRequests`,
 * `maxConcurrentRequestsPerCaller` or `identifyTimeoutMs` is not a whole
 * number in its range.
 *
 * @example
 * ```ts
 * import {
 *   createHostPluginModule,
 *   createPluginHost,
 *   identifyAnonymously,
 * } from "@cordon/cordon/plugin";
 * import assert from "node:assert/strict";
 *
 * await using host = createPluginHost({ identify: identifyAnonymously });
 * await host.installPlugin({
 *   kind: "host",
 *   module: createHostPluginModule({
 *     manifest: { id: "hello", version: "1.0.0" },
 *     plugin: {
 *       routes: () => [{ method: "GET", path: "/:name" }],
 *       handleRequest: (req) => ({ status: 200, headers: [], body: `hi ${req.params["name"]}` }),
 *     },
 *   }),
 * });
 * const response = await host.fetch(new Request("http://127.0.0.1/plugins/hello/ada"));
 * assert.equal(await response.text(), "hi ada");
 * const missing = await host.fetch(new Request("http://127.0.0.1/plugins/nope/"));
 * assert.equal(missing.status, 404);
 * ```
 */
export function createPluginHost(options: PluginHostOptions): PluginHost {
  return new PluginHostImpl(options);
}
