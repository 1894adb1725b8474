// This module is browser compatible.

/**
 * Hop-by-hop header fields (RFC 9110 §7.6.1) belong to one connection, so
 * whatever passes a message on drops them: the plugin host when it hands a
 * client's request to a plugin, and when it fetches for a plugin. Runtimes
 * differ on them (Deno's fetch sends `Upgrade` and `Connection` as given,
 * Node's refuses them), so they are dropped before either sees them.
 *
 * @module
 */

/**
 * The fields that are hop-by-hop by name; any `proxy-*` field is too (see
 * {@linkcode isHopByHopHeader}).
 */
export const HOP_BY_HOP_HEADERS: readonly string[] = Object.freeze([
  "connection",
  "keep-alive",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

const HOP_BY_HOP = new Set(HOP_BY_HOP_HEADERS);

/**
 * Whether a field is hop-by-hop by its name alone: one of
 * {@linkcode HOP_BY_HOP_HEADERS} or any `proxy-*` field. (A message's
 * `Connection` can name more; {@linkcode endToEndHeaders} drops those too.)
 *
 * @param name The field's name, in lower case.
 * @returns Whether it belongs to one connection.
 * @example
 * ```ts
 * import { isHopByHopHeader } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(isHopByHopHeader("upgrade"), true);
 * assert.equal(isHopByHopHeader("proxy-authenticate"), true);
 * assert.equal(isHopByHopHeader("content-type"), false);
 * ```
 */
export function isHopByHopHeader(name: string): boolean {
  return HOP_BY_HOP.has(name) || name.startsWith("proxy-");
}

/**
 * The end-to-end fields of a message: its headers without the hop-by-hop
 * ones (`Connection`, `Keep-Alive`, `TE`, `Trailer`, `Transfer-Encoding`,
 * `Upgrade`, any `Proxy-*`) and without the fields its `Connection` names.
 *
 * @param headers The message's headers.
 * @returns The fields to pass on, as pairs with lower-case names, in order.
 *
 * @example
 * ```ts
 * import { endToEndHeaders } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const headers = new Headers({
 *   connection: "upgrade, x-hop",
 *   upgrade: "h2c",
 *   "x-hop": "1",
 *   "proxy-authorization": "Basic eDp5",
 *   accept: "text/plain",
 * });
 * assert.deepEqual(endToEndHeaders(headers), [["accept", "text/plain"]]);
 * ```
 */
export function endToEndHeaders(headers: Headers): [string, string][] {
  const named = new Set(HOP_BY_HOP);
  for (const option of (headers.get("connection") ?? "").split(",")) {
    named.add(option.trim().toLowerCase());
  }
  const kept: [string, string][] = [];
  for (const [name, value] of headers) {
    if (!named.has(name) && !isHopByHopHeader(name)) {
      kept.push([name, value]);
    }
  }
  return kept;
}

const FIELD_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Whether a header field's name is one HTTP allows (RFC 9110 §5.1: a
 * token). Runtimes differ on the others: Node's client hands on a name
 * with a space that Deno's refuses.
 *
 * @param name The field's name.
 * @returns Whether it is a token.
 *
 * @example
 * ```ts
 * import { isFieldName } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(isFieldName("x-request-id"), true);
 * assert.equal(isFieldName("x bad"), false);
 * ```
 */
export function isFieldName(name: string): boolean {
  return FIELD_NAME.test(name);
}
