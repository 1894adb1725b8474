/**
 * The web-standard delivery handler: module bytes by opaque id, with
 * digests, entity tags and caching that stays correct when a pack is
 * re-installed behind a stable id.
 *
 * @module
 */

import type { SandboxModuleCatalog } from "../catalog/types.ts";
import {
  type OptionKeys,
  readIntegerOption,
  readOptions,
  TIMEOUT_MS_RANGE,
} from "../protocol/options.ts";
import { buildDeliveryHandler } from "./_handler.ts";
import { DEFAULT_CATALOG_TIMEOUT_MS } from "./_catalog_deadline.ts";
import { readCorsRequestHeaders } from "./_cors.ts";
import {
  DEFAULT_DELIVERY_PREFIX,
  type DeliveryHandler,
  type DeliveryHandlerOptions,
} from "./types.ts";

export * from "./types.ts";

const HANDLER_OPTION_KEYS: OptionKeys<DeliveryHandlerOptions> = {
  prefix: true,
  requester: true,
  onRequest: true,
  corsRequestHeaders: true,
  catalogTimeoutMs: true,
};

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
 *   `?digest=sha256-…` answers `immutable` when it matches (`private,
 *   no-cache` with a `requester` hook, so every use is authorized) and 404
 *   when that version is gone.
 * - `OPTIONS`: a CORS preflight answer; other methods get 405.
 *
 * Errors are `application/problem+json` with a stable code and a fixed
 * detail: never an id, a path or a catalog message. The handler never
 * throws; a catalog or requester hook that throws gives 503, as does one
 * that has not answered within `catalogTimeoutMs`, or by the time the
 * request's `signal` aborts (its client left).
 *
 * Every request is authorized by the catalog's `authorizeDelivery` (the
 * on-disk catalog answers from memory, without a turn of the event loop,
 * and its bytes are sent as discovery read them). What the handler keeps
 * is the prepared response of each module version (bytes, digest,
 * headers), reused while the catalog delivers the same content and
 * digests, and bounded to 4,096 modules or 64 MiB; every response it
 * returns is a fresh one the caller owns and may change, but for a
 * module's bytes: a 200's body shares them with the prepared response and
 * every other answer of that module version, so a caller that reads it
 * must not write into the bytes `arrayBuffer()`, `bytes()` or the body's
 * chunks give, nor transfer their buffer (copy them first, with
 * `slice()`), or later answers send what it wrote, or an empty body,
 * under the module's digest. `serveDelivery` hands them to `Deno.serve`
 * only. Each request gets
 * an OpenTelemetry server span named after its route (`GET
 * /api/sandbox-modules/:id`), continued from its `traceparent`, or names
 * the server span already active (Deno's, with `OTEL_DENO=true`) after the
 * route instead; and, when a meter provider is registered before the
 * handler is created, the counter `cordon.delivery.requests`, the histogram
 * `cordon.delivery.duration` (ms) and, for a span it started,
 * `http.server.request.duration` (s). Their attributes name the route
 * template, never the path.
 *
 * @param catalog The catalog that authorizes and supplies modules. The
 * handler borrows it; the caller keeps owning it.
 * @param options The route prefix, requester hook, request hook, the
 * request headers other origins may send and how long a request waits for
 * the catalog.
 * @returns The handler.
 * @throws {TypeError} When `prefix` is not a valid path prefix, or is not
 * written as a request's URL holds it (`/%C3%A9`, not `/é`; no `.` or `..`
 * segment), `corsRequestHeaders` is not an array of header field names, or
 * `catalogTimeoutMs` is not a number.
 * @throws {RangeError} When `catalogTimeoutMs` is not an integer from 1 to
 * 2147483647.
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
  given: DeliveryHandlerOptions = {},
): DeliveryHandler {
  const options = readOptions(
    "create a delivery handler",
    given,
    HANDLER_OPTION_KEYS,
  );
  return buildDeliveryHandler(catalog, {
    prefix: options.prefix ?? DEFAULT_DELIVERY_PREFIX,
    requester: options.requester,
    onRequest: options.onRequest,
    corsRequestHeaders: readCorsRequestHeaders(options.corsRequestHeaders),
    catalogTimeoutMs: readIntegerOption(
      "create a delivery handler",
      "catalogTimeoutMs",
      options.catalogTimeoutMs,
      DEFAULT_CATALOG_TIMEOUT_MS,
      TIMEOUT_MS_RANGE,
    ),
    servedByDeno: false,
  });
}
