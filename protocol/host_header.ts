// This module is browser compatible.

/**
 * What a `Host` header may hold (RFC 9110 §7.2: `uri-host [ ":" port ]`),
 * the one rule the delivery server and the plugin host apply before they
 * route a request. Deno's server builds `Request.url` by joining the Host
 * header, as sent, and the request target, so a Host of
 * `h/api/sandbox-modules` would move the target `/x` to
 * `/api/sandbox-modules/x`; RFC 9112 §3.2 has a server answer such a
 * header with 400.
 *
 * @module
 */

/** A name or an IP literal, then an optional port: no user info, path, query or spaces. */
const HOST_HEADER =
  /^(?:[A-Za-z0-9._~!$&'()*+,;=-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]*)?$/;

/**
 * Whether a `Host` header is `host[:port]` and nothing else.
 *
 * @param value The header's value.
 * @returns Whether a server may route by it.
 * @example
 * ```ts
 * import { isHostHeader } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(isHostHeader("127.0.0.1:8000"), true);
 * assert.equal(isHostHeader("[::1]"), true);
 * assert.equal(isHostHeader("h/api/sandbox-modules"), false);
 * assert.equal(isHostHeader("user@h"), false);
 * ```
 */
export function isHostHeader(value: string): boolean {
  return HOST_HEADER.test(value);
}
