import { operatorQuote } from "../protocol/operator_text.ts";
import { fieldOf } from "../protocol/host_fields.ts";
import { copyListOption } from "../protocol/options.ts";

/** What a plugin says about itself. */
export interface PluginManifest {
  /**
   * The plugin's id: 1 to 64 characters of `a-z 0-9 _ -`, starting with a
   * letter or digit. The host serves it under `/plugins/<id>/`.
   */
  id: string;
  /** The plugin's version, such as `1.0.0`. */
  version: string;
  /** A human-readable name. @default {undefined} */
  name?: string;
  /** One line about what it does. @default {undefined} */
  description?: string;
  /**
   * The capability names the plugin is granted; the host passes them to
   * each request as its capability snapshot. @default {[]}
   */
  capabilities?: string[];
}

/** The HTTP methods a route can answer. */
export type HttpMethod =
  | "GET"
  | "HEAD"
  | "POST"
  | "PUT"
  | "PATCH"
  | "DELETE"
  | "OPTIONS";

/** The HTTP methods a route can answer, in a frozen list. */
export const HTTP_METHODS: readonly HttpMethod[] = Object.freeze([
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "PATCH",
  "DELETE",
  "OPTIONS",
]);

/** What a plugin module passes on of each request, whatever its kind. */
export interface PluginRequestOptions {
  /** The largest request body passed to the plugin, in bytes. @default {1048576} */
  maxBodyBytes?: number | undefined;
  /**
   * How long a client may take to send a request's whole body, in
   * milliseconds; a slower one is answered 408 and frees its place with
   * the plugin.
   * @default {30000}
   */
  bodyTimeoutMs?: number | undefined;
  /**
   * Request headers the plugin never sees (lower case).
   * @default {["authorization", "cookie", "proxy-authorization", "x-cordon-principal", "x-cordon-tenant"]}
   */
  redactHeaders?: readonly string[] | undefined;
}

/** What a route handler receives from the host for one request. */
export interface PluginRequestContext {
  /**
   * The web request. Its body has not been read. Its `signal` is not read:
   * a request handed to the plugin is answered whether or not its client
   * is still there.
   */
  request: Request;
  /** The authenticated principal id, or `null`. */
  principalId: string | null;
  /** The tenant id, or `null`. */
  tenantId: string | null;
  /** The capability names the plugin holds for this request. */
  capabilities: readonly string[];
  /** Route parameters, such as `{ id: "42" }` for `/items/:id`. */
  params: Readonly<Record<string, string>>;
}

/**
 * Answers one request. Failures reject with a `CordonError` whose `code`
 * the host turns into a problem response.
 */
export type RouteHandler = (context: PluginRequestContext) => Promise<Response>;

/** One HTTP route of a plugin. */
export interface RouteDefinition {
  /** The method it answers. */
  method: HttpMethod;
  /**
   * The path under the plugin's prefix: `/`, `/echo` or `/items/:id`.
   * Segments starting with `:` are parameters.
   */
  path: string;
  /** The handler. */
  handler: RouteHandler;
}

/** A plugin's counters, for dashboards and alerts. */
export interface PluginMetrics {
  /** `idle`, `running`, `stopped` or `disposed`. */
  state: "idle" | "running" | "stopped" | "disposed";
  /** Requests handled (answered or failed). */
  requests: number;
  /** Requests that failed. */
  failures: number;
  /** Calls that exceeded their time limit. */
  timeouts: number;
  /** Times the plugin's realm was replaced after a failure. */
  restarts: number;
  /**
   * Requests refused with `SANDBOX_RESTART_LIMITED`: the plugin's realm
   * kept failing and had used up its restarts for the window.
   */
  restartsRefused: number;
  /** Proxy calls refused by the policy. */
  denials: number;
  /** Mean request duration, in milliseconds (0 before any request). */
  meanDurationMs: number;
  /** The longest request, in milliseconds. */
  maxDurationMs: number;
}

/**
 * A plugin as a host sees it, whether it runs sandboxed or in-process.
 * `routes` are known once `start()` has resolved. `start`, `stop` and
 * `dispose` are idempotent; while the plugin is stopped or a stop is under
 * way, and after `dispose()`, route handlers reject with
 * `SANDBOX_DISPOSED`. A route of `GET` answers `HEAD` too: the host calls
 * its handler and leaves the body out.
 */
export interface PluginModule extends AsyncDisposable {
  /** What the plugin says about itself. */
  readonly manifest: PluginManifest;
  /** The plugin's routes (empty before `start()`). */
  readonly routes: readonly RouteDefinition[];
  /**
   * Headers every answer of the plugin carries, as `[name, value]` pairs:
   * the module sets them on the answers of its routes, and the plugin host
   * adds each one an answer lacks, its problem answers for the plugin
   * included. A sandboxed plugin's are `content-security-policy: sandbox`
   * and `x-content-type-options: nosniff` unless its operator says
   * otherwise.
   * @default {undefined} (none)
   */
  readonly answerHeaders?: readonly (readonly [string, string])[];
  /** Loads the plugin and reads its routes. */
  start(): Promise<void>;
  /** Stops the plugin; `start()` brings it back. */
  stop(): Promise<void>;
  /** Stops the plugin for good. */
  dispose(): Promise<void>;
  /** The plugin's counters. */
  metrics(): PluginMetrics;
}

const ID = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** The most characters of a refused id a message quotes. */
const MAX_SHOWN_ID_CHARS = 80;

/**
 * A refused id as a message shows it: a string clipped and quoted with
 * operatorQuote, as a manifest may come from a plugin's package, and any
 * other value by its type, as JSON.stringify throws on a bigint or a cycle.
 */
function shownId(id: unknown): string {
  if (id === undefined) return "undefined";
  if (typeof id !== "string") return `of type ${typeof id}`;
  return operatorQuote(id, MAX_SHOWN_ID_CHARS);
}

/**
 * Checks a manifest's shape and returns a frozen copy.
 *
 * @param value The manifest to check.
 * @returns The manifest, frozen, with a `null` prototype.
 * @throws {TypeError} When a field is missing or malformed.
 *
 * @example
 * ```ts
 * import { validatePluginManifest } from "@cordon/cordon/plugin";
 * import assert from "node:assert/strict";
 *
 * const manifest = validatePluginManifest({ id: "echo", version: "1.0.0" });
 * assert.equal(manifest.id, "echo");
 * assert.throws(() => validatePluginManifest({ id: "../x", version: "1" }), TypeError);
 * ```
 */
export function validatePluginManifest(value: unknown): PluginManifest {
  if (typeof value !== "object" || value === null) {
    throw new TypeError("Cannot read the plugin manifest: pass an object");
  }
  // Each field is read from the manifest or a prototype of its own, and
  // the copy has no prototype: a capability list the manifest leaves out
  // is not one a dependency of the host put on Object.prototype.
  const id = fieldOf(value, "id");
  const version = fieldOf(value, "version");
  const capabilities = fieldOf(value, "capabilities");
  if (typeof id !== "string" || !ID.test(id)) {
    throw new TypeError(
      `Cannot use plugin id ${
        shownId(id)
      }: use 1 to 64 characters of a-z, 0-9, _ and -, starting with a letter or digit`,
    );
  }
  if (typeof version !== "string" || version === "") {
    throw new TypeError(
      `Cannot read the manifest of plugin "${id}": version must be a non-empty string`,
    );
  }
  const copy: PluginManifest = Object.assign(Object.create(null), {
    id,
    version,
  });
  for (const key of ["name", "description"] as const) {
    const field = fieldOf(value, key);
    if (field === undefined) continue;
    if (typeof field !== "string") {
      throw new TypeError(
        `Cannot read the manifest of plugin "${id}": ${key} must be a string`,
      );
    }
    copy[key] = field;
  }
  if (capabilities !== undefined) {
    // Copied before it is checked: the names kept are the names checked,
    // whatever a getter or the array's own methods would answer later.
    const names = copyListOption(
      `read the manifest of plugin "${id}"`,
      "capabilities",
      capabilities,
    );
    if (names === null || !names.every((name) => typeof name === "string")) {
      throw new TypeError(
        `Cannot read the manifest of plugin "${id}": capabilities must be a list of names`,
      );
    }
    copy.capabilities = Object.freeze(names) as string[];
  }
  return Object.freeze(copy);
}
