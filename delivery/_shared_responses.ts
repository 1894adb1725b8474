/**
 * The internal switch that lets `serveDelivery` answer bodyless module
 * requests (`304`, `HEAD`) with one prepared `Response` per variant instead
 * of a clone per request.
 *
 * A response handed to an unknown caller must be fresh, because callers
 * (middleware, frameworks) may change its headers, and a change to a shared
 * response would reach every later request. `serveDelivery` hands its
 * responses straight to `Deno.serve`, which only reads a bodyless response
 * (its status and header list) and never marks it used, so there the
 * prepared response can be returned as it is. The switch is a symbol that
 * no public module exports, so only `serveDelivery` can turn it on.
 *
 * @module
 */

/** The option key; `true` shares bodyless module responses. */
export const SHARE_BODYLESS_RESPONSES: unique symbol = Symbol(
  "cordon.delivery.shareBodylessResponses",
);

/** The options only cordon's own server passes to the handler. */
export interface InternalHandlerOptions {
  /**
   * Answer `304` and `HEAD` module requests with the prepared response
   * itself. Only for a caller that hands responses to `Deno.serve`
   * unchanged.
   *
   * @default {false}
   */
  [SHARE_BODYLESS_RESPONSES]?: boolean;
}
