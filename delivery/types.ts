/**
 * The delivery handler's public types and default route prefix, in a module
 * of their own so the handler's private parts can use them without
 * importing the handler.
 *
 * @module
 */

import type { Requester, WireErrorCode } from "../protocol/mod.ts";

export { DEFAULT_DELIVERY_PREFIX } from "../protocol/delivery_prefix.ts";

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
  /**
   * The stable error code when the answer is an error: one of `ErrorCode`,
   * or one this version does not know, which a catalog of another version
   * may have given.
   */
  code?: WireErrorCode;
  /** How long the handler took, in milliseconds. */
  durationMs: number;
}

/** Options of `createDeliveryHandler`. */
export interface DeliveryHandlerOptions {
  /**
   * The path the routes live under: the listing at `prefix` (and
   * `prefix/`), modules at `prefix/:id`. Empty, or starting with `/` and not ending with one.
   *
   * @default {"/api/sandbox-modules"}
   */
  prefix?: string | undefined;
  /**
   * Tells who is asking, for the catalog's entitlement policy. When it is
   * given, answers may differ per requester, so module responses are
   * marked `Cache-Control: private` instead of `public`, and the listing
   * holds only the packs the policy allows the requester (marked `private`
   * too), unless the catalog's policy allows everyone everything. When it
   * throws, rejects or answers no requester (a string, an id that is not a
   * string), the request is answered 503 `DELIVERY_UNAVAILABLE` and the
   * policy is not asked; `undefined` or `null` is the anonymous requester.
   *
   * @default {undefined} (every request is anonymous)
   */
  requester?:
    | ((request: Request) => Requester | Promise<Requester>)
    | undefined;
  /**
   * Called once per request with what was answered, for access logs.
   * The answer does not wait for it: errors it throws, and what a promise
   * it returns rejects with, are ignored.
   *
   * @default {undefined}
   */
  onRequest?: ((info: DeliveryRequestInfo) => void) | undefined;
  /**
   * Request headers a script on another origin may send besides
   * `If-None-Match`, `If-Match` and `Authorization`, which the answer to a CORS
   * preflight lists: for example the header `requester` reads a tenant
   * from, which a remote catalog's `headers` send. Each is a header field
   * name, or `"*"`, which browsers read as any header, since the answers
   * carry no credentials. Names a browser never lets a script set
   * (`Cookie`) change nothing. Responses allow any origin and no
   * credentials, so no header carries a browser's cookies.
   *
   * @default {[]}
   */
  corsRequestHeaders?: readonly string[] | undefined;
  /**
   * How long one request waits for the catalog, in milliseconds: for its
   * `authorizeDelivery` (and the entitlement policy behind it) and for the
   * `requester` hook, in all. Past it, or once the request's `signal`
   * aborts (its client left), the request is answered 503
   * `DELIVERY_UNAVAILABLE` with `Retry-After`, and the `signal` the
   * handler gave `authorizeDelivery` aborts (with a `TimeoutError` that
   * names `catalogTimeoutMs`, or the request's own abort reason), so the
   * catalog can stop its work; one that ignores the signal runs on. A
   * catalog that answers at once, as the disk catalog with its default
   * policy does, is never timed.
   *
   * @default {10000}
   */
  catalogTimeoutMs?: number | undefined;
}

/** A web-standard request handler, as `Deno.serve` takes. */
export type DeliveryHandler = (request: Request) => Promise<Response>;
