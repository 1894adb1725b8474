/**
 * The web-standard delivery handler: module bytes by opaque id, with
 * digests, entity tags and caching that stays correct when a pack is
 * re-installed behind a stable id.
 *
 * @module
 */

import type { Span } from "@opentelemetry/api";
import type { SandboxModuleCatalog } from "../catalog/types.ts";
import type {
  AuthorizedDelivery,
  DeliveryRefusal,
  Requester,
} from "../protocol/mod.ts";
import { PREFLIGHT_HEADERS } from "./_cors.ts";
import { ifNoneMatchMatches } from "./_etag.ts";
import { ListingCache } from "./_listing.ts";
import {
  ModuleResponseCache,
  type PreparedModule,
  VARIANT,
} from "./_module_cache.ts";
import { type ProblemKind, ProblemResponses, PROBLEMS } from "./_problem.ts";
import { decodeOnce, queryParam, splitRequestUrl } from "./_request_target.ts";
import {
  type InternalHandlerOptions,
  SHARE_BODYLESS_RESPONSES,
} from "./_shared_responses.ts";
import { DeliveryTelemetry } from "./_telemetry.ts";

/** The default route prefix of {@linkcode createDeliveryHandler}. */
export const DEFAULT_DELIVERY_PREFIX = "/api/sandbox-modules";

/** The route a delivery request matched: the listing, a module, or none. */
export type DeliveryRoute = "listing" | "module" | "none";

/** What {@linkcode DeliveryHandlerOptions.onRequest} learns of a request. */
export interface DeliveryRequestInfo {
  /** The request method. */
  method: string;
  /**
   * The requested path, still percent-encoded, without its query. It is
   * what the client sent (never a filesystem path), so it can be long or
   * odd: clip it before logging.
   */
  path: string;
  /** The route that matched: the listing, a module, or none. */
  route: DeliveryRoute;
  /** The answered status. */
  status: number;
  /** The stable error code when the answer is an error. */
  code?: string;
  /** How long the handler took, in milliseconds. */
  durationMs: number;
}

/** Options of {@linkcode createDeliveryHandler}. */
export interface DeliveryHandlerOptions {
  /**
   * The path the routes live under: the listing at `prefix`, modules at
   * `prefix/:id`. Empty, or starting with `/` and not ending with one.
   *
   * @default {"/api/sandbox-modules"}
   */
  prefix?: string;
  /**
   * Tells who is asking, for the catalog's entitlement policy. When it is
   * given, answers may differ per requester, so module responses are
   * marked `Cache-Control: private` instead of `public`. When it throws,
   * the request is answered 503 `DELIVERY_UNAVAILABLE`.
   *
   * @default {undefined} (every request is anonymous)
   */
  requester?: (request: Request) => Requester | Promise<Requester>;
  /**
   * Called once per request with what was answered, for access logs.
   * Errors it throws are ignored.
   *
   * @default {undefined}
   */
  onRequest?: (info: DeliveryRequestInfo) => void;
}

/** A web-standard request handler, as `Deno.serve` takes. */
export type DeliveryHandler = (request: Request) => Promise<Response>;

const MAX_CACHED_MODULES = 4096;
const MAX_CACHED_BYTES = 64 * 1024 * 1024;
const PREFIX_PATTERN = /^(?:\/[^?#\s]*[^/?#\s])?$/;
/**
 * The rule of `ModuleIdSchema`, as a bare pattern: the hot path tests it
 * without zod's overhead (a test keeps the two equal).
 */
const MODULE_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * Creates the delivery handler over a catalog.
 *
 * Routes (under `prefix`):
 * - `GET|HEAD prefix`: the catalog listing as JSON (`CatalogListing`),
 *   revalidated with `If-None-Match`.
 * - `GET|HEAD prefix/:id`: a module's bytes with `Repr-Digest`, a strong
 *   `ETag` from its digest, `X-Cordon-Graph-Digest`,
 *   `X-Cordon-Dependencies` and `X-Cordon-Pack`. The plain URL answers
 *   `no-cache` and 304 to a matching `If-None-Match`; a URL pinned with
 *   `?digest=sha256-…` answers `immutable` when it matches and 404 when
 *   that version is gone.
 * - `OPTIONS`: a CORS preflight answer; other methods get 405.
 *
 * Errors are `application/problem+json` with a stable code and a fixed
 * detail: never an id, a path or a catalog message. The handler never
 * throws; a catalog or requester hook that throws gives 503.
 *
 * Every request is authorized by the catalog: by
 * `catalog.authorizeDeliveryNow` when the catalog has it (the same answer,
 * without a turn of the event loop when it is at hand), else by
 * `catalog.authorizeDelivery`. What the handler keeps is the prepared
 * response of each module version (bytes, digest, headers), reused while
 * the catalog delivers the same content and digests, and bounded to 4,096
 * modules or 64 MiB; every response it returns is a fresh one the caller
 * owns and may change. Each request gets an
 * OpenTelemetry span `cordon.delivery.request`, and, when a meter provider
 * is registered before the handler is created, the counter
 * `cordon.delivery.requests` and the histogram `cordon.delivery.duration`
 * (ms); their attributes name the route template, never the path.
 *
 * @param catalog The catalog that authorizes and supplies modules. The
 * handler borrows it; the caller keeps owning it.
 * @param options The route prefix, requester hook and request hook.
 * @returns The handler.
 * @throws {TypeError} When `prefix` is not a valid path prefix.
 *
 * @example
 * ```ts
 * import { createDeliveryHandler } from "@cordon/cordon/delivery";
 * import type { SandboxModuleCatalog } from "@cordon/cordon/catalog";
 * import assert from "node:assert/strict";
 *
 * const catalog: SandboxModuleCatalog = {
 *   resolveForExecution: () => ({ statuses: [], packs: {}, modules: {}, installed: [] }),
 *   authorizeDelivery: () =>
 *     Promise.resolve({
 *       ok: false, reason: "not-found", code: "MODULE_NOT_FOUND", message: "No",
 *     }),
 *   summaries: () => [],
 * };
 * const handle = createDeliveryHandler(catalog);
 *
 * const listing = await handle(new Request("http://localhost/api/sandbox-modules"));
 * assert.deepEqual(await listing.json(), { packs: [] });
 *
 * const missing = await handle(new Request("http://localhost/api/sandbox-modules/m1"));
 * assert.equal(missing.status, 404);
 * assert.equal((await missing.json()).code, "MODULE_NOT_FOUND");
 * ```
 */
export function createDeliveryHandler(
  catalog: SandboxModuleCatalog,
  options: DeliveryHandlerOptions = {},
): DeliveryHandler {
  const prefix = options.prefix ?? DEFAULT_DELIVERY_PREFIX;
  if (typeof prefix !== "string" || !PREFIX_PATTERN.test(prefix)) {
    throw new TypeError(
      'Cannot create a delivery handler: prefix must be empty or start with "/" and not end with "/", without "?", "#" or spaces',
    );
  }
  const { requester, onRequest } = options;
  const modulePrefix = `${prefix}/`;
  const listingPath = prefix === "" ? "/" : prefix;
  const modules = new ModuleResponseCache({
    scope: requester === undefined ? "public" : "private",
    maxEntries: MAX_CACHED_MODULES,
    maxBytes: MAX_CACHED_BYTES,
    shareBodyless:
      (options as InternalHandlerOptions)[SHARE_BODYLESS_RESPONSES] === true,
  });
  const listings = new ListingCache();
  const problems = new ProblemResponses();
  const telemetry = new DeliveryTelemetry(prefix);
  // Time requests only when someone reads the duration.
  const timed = telemetry.metered || onRequest !== undefined;
  const preflight = new Response(null, {
    status: 204,
    headers: PREFLIGHT_HEADERS.map(([k, v]): [string, string] => [k, v]),
  });

  function fail(
    state: RequestState,
    problem: ProblemKind,
    head: boolean,
  ): Response {
    state.problem = problem;
    return problems.respond(problem, head);
  }

  function refuse(
    state: RequestState,
    refusal: DeliveryRefusal,
    head: boolean,
  ): Response {
    switch (refusal.reason) {
      case "forbidden":
        return fail(state, PROBLEMS.forbidden, head);
      case "not-found":
        return fail(
          state,
          refusal.code === "MODULE_ID_INVALID"
            ? PROBLEMS.idInvalid
            : PROBLEMS.notFound,
          head,
        );
      default:
        return fail(state, PROBLEMS.unavailable, head);
    }
  }

  function serveListing(
    request: Request,
    head: boolean,
  ): Promise<Response> {
    return listings.prepare(catalog.summaries()).then((listing) => {
      const tag = request.headers.get("if-none-match");
      const notModified = tag !== null &&
        ifNoneMatchMatches(tag, listing.etag);
      return listing.respond(notModified, head);
    });
  }

  /** Asks the catalog once, synchronously when it can answer at once. */
  function authorize(
    id: string,
    who: Requester | undefined,
  ): Authorization | PromiseLike<Authorization> {
    return catalog.authorizeDeliveryNow === undefined
      ? catalog.authorizeDelivery(id, who)
      : catalog.authorizeDeliveryNow(id, who);
  }

  /**
   * Answers a module request. Everything the catalog can answer at once
   * (and every module version already prepared) is answered synchronously;
   * only a requester hook, a catalog or a first hashing that waits makes
   * the answer a promise.
   */
  function serveModule(
    request: Request,
    rawId: string,
    query: string,
    head: boolean,
    state: RequestState,
  ): Response | Promise<Response> {
    const id = rawId.includes("/") ? undefined : decodeOnce(rawId);
    if (id === undefined || !MODULE_ID_PATTERN.test(id)) {
      return fail(state, PROBLEMS.idInvalid, head);
    }
    const pinned = queryParam(query, "digest");
    const who = requester === undefined ? undefined : requester(request);
    if (isPromiseLike(who)) {
      return Promise.resolve(who).then((requesterNow) =>
        authorize(id, requesterNow)
      ).then((result) => deliver(request, result, pinned, head, state));
    }
    const result = authorize(id, who);
    return isPromiseLike(result)
      ? Promise.resolve(result).then((ready) =>
        deliver(request, ready, pinned, head, state)
      )
      : deliver(request, result, pinned, head, state);
  }

  function deliver(
    request: Request,
    result: Authorization,
    pinned: string | null | undefined,
    head: boolean,
    state: RequestState,
  ): Response | Promise<Response> {
    if (!result.ok) return refuse(state, result, head);
    const prepared = modules.prepare(result);
    // Only a module's first request (per version) waits for hashing.
    return prepared instanceof Promise
      ? prepared.then((ready) =>
        respondModule(request, ready, pinned, head, state)
      )
      : respondModule(request, prepared, pinned, head, state);
  }

  function respondModule(
    request: Request,
    prepared: PreparedModule | undefined,
    pinned: string | null | undefined,
    head: boolean,
    state: RequestState,
  ): Response {
    if (prepared === undefined) {
      return fail(state, PROBLEMS.unavailable, head);
    }
    if (pinned !== undefined && pinned !== prepared.digest) {
      return fail(state, PROBLEMS.versionGone, head);
    }
    const tag = request.headers.get("if-none-match");
    const notModified = tag !== null && ifNoneMatchMatches(tag, prepared.etag);
    const variant = pinned === undefined
      ? (notModified ? VARIANT.plainNotModified : VARIANT.plain)
      : (notModified ? VARIANT.pinnedNotModified : VARIANT.pinned);
    return prepared.respond(variant, head);
  }

  /**
   * Routes a request. The answer is not finished yet: the caller records
   * it. A promise settles to the answer or rejects with a fault.
   */
  function answer(
    request: Request,
    method: string,
    path: string,
    query: string,
    state: RequestState,
  ): Response | Promise<Response> {
    const isListing = path === listingPath;
    if (!isListing && !path.startsWith(modulePrefix)) {
      return fail(state, PROBLEMS.routeNotFound, method === "HEAD");
    }
    state.route = isListing ? "listing" : "module";
    const head = method === "HEAD";
    if (!head && method !== "GET") {
      if (method === "OPTIONS") return preflight.clone();
      return fail(state, PROBLEMS.methodNotAllowed, false);
    }
    if (isListing) return serveListing(request, head);
    return serveModule(
      request,
      path.slice(modulePrefix.length),
      query,
      head,
      state,
    );
  }

  /** Records a request's answer (span, metrics, hook) and returns it. */
  function finish(
    state: RequestState,
    response: Response,
    error?: unknown,
  ): Response {
    const durationMs = timed ? performance.now() - state.started : NaN;
    const code = state.problem?.code;
    const { method, route } = state;
    const status = response.status;
    telemetry.end(state.span, {
      route,
      status,
      code,
      method: KNOWN_METHODS.has(method) ? method : "_OTHER",
      durationMs,
    }, error);
    if (onRequest !== undefined) {
      try {
        onRequest({
          method,
          path: state.path,
          route,
          status,
          ...(code === undefined ? {} : { code }),
          durationMs,
        });
      } catch {
        // A logging hook must not change the answer.
      }
    }
    return response;
  }

  /** Answers 503 to a request whose catalog, hook or listing failed. */
  function recover(state: RequestState, error: unknown): Response {
    const head = state.method === "HEAD";
    return finish(state, fail(state, PROBLEMS.unavailable, head), error);
  }

  return function handleDelivery(request: Request): Promise<Response> {
    const started = timed ? performance.now() : 0;
    const span = telemetry.start();
    const method = request.method;
    const { path, query } = splitRequestUrl(request.url);
    const state: RequestState = {
      started,
      span,
      method,
      path,
      route: "none",
      problem: undefined,
    };
    let answered: Response | Promise<Response>;
    try {
      answered = answer(request, method, path, query, state);
    } catch (error) {
      return Promise.resolve(recover(state, error));
    }
    if (answered instanceof Promise) {
      return answered.then(
        (response) => finish(state, response),
        (error) => recover(state, error),
      );
    }
    return Promise.resolve(finish(state, answered));
  };
}

/** Whether a value is a promise or another thenable, to be awaited. */
function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | undefined)?.then ===
    "function";
}

/** What the catalog answers to one delivery request. */
type Authorization = AuthorizedDelivery | DeliveryRefusal;

/** One request in flight: what it asked, what matched, how it ended. */
interface RequestState {
  started: number;
  span: Span;
  method: string;
  path: string;
  route: DeliveryRoute;
  problem: ProblemKind | undefined;
}

const KNOWN_METHODS: ReadonlySet<string> = new Set([
  "GET",
  "HEAD",
  "OPTIONS",
  "POST",
  "PUT",
  "PATCH",
  "DELETE",
]);
