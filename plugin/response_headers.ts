import {
  HOP_BY_HOP_HEADERS,
  isHopByHopHeader,
} from "../protocol/hop_by_hop.ts";

/** Decides whether a plugin may set a response header (name in lower case). */
export type ResponseHeaderPolicy = (name: string) => boolean;

/**
 * Response headers {@linkcode defaultResponseHeaderPolicy} refuses:
 * cookies, hop-by-hop headers (and any other `proxy-*` one), the headers of the host's security
 * policies (CORS, CSP, HSTS, framing, cross-origin isolation; any other
 * `access-control-*` and `cross-origin-*` one too) and the
 * headers a browser keeps for the whole origin after the response (a
 * network error logging policy and its report endpoints, which would send
 * the plugin reports on every request to the host; a service worker scope
 * wider than the script's own folder; the client hints every later request
 * carries; a compression dictionary, whose id every later request to the
 * paths it matches carries, as a cookie would be; the origin's agent
 * clustering and its sign-in status), and any
 * `sec-*` one, the prefix the web platform keeps for itself (device-bound
 * session registration binds the origin's cookies).
 */
export const DENIED_RESPONSE_HEADERS: readonly string[] = Object.freeze([
  "set-cookie",
  "set-cookie2",
  ...HOP_BY_HOP_HEADERS,
  "proxy-authenticate",
  "alt-svc",
  "clear-site-data",
  "nel",
  "report-to",
  "service-worker-allowed",
  "accept-ch",
  "critical-ch",
  "use-as-dictionary",
  "origin-agent-cluster",
  "set-login",
  "strict-transport-security",
  "content-security-policy",
  "content-security-policy-report-only",
  "x-frame-options",
  "permissions-policy",
  // Its older name, which Chromium still reads without the other.
  "feature-policy",
  "cross-origin-opener-policy",
  "cross-origin-embedder-policy",
  "cross-origin-resource-policy",
  "access-control-allow-origin",
  "access-control-allow-credentials",
  "access-control-allow-headers",
  "access-control-allow-methods",
  "access-control-expose-headers",
  "access-control-max-age",
]);

const DENIED = new Set(DENIED_RESPONSE_HEADERS);

/**
 * Families refused by prefix, whatever their members: CORS grows new
 * `access-control-allow-*` headers (`-private-network`), cross-origin
 * isolation has report-only twins (`cross-origin-opener-policy-report-only`)
 * and the platform's `sec-*` headers keep coming, which a list of names
 * would let through.
 */
const DENIED_PREFIXES: readonly string[] = [
  "access-control-",
  "cross-origin-",
  "sec-",
];

/**
 * The default response header policy: every header but
 * {@linkcode DENIED_RESPONSE_HEADERS} and any other `access-control-*`,
 * `cross-origin-*`, `proxy-*` or `sec-*` one, with which a plugin could plant
 * cookies for the host's origin or weaken its policies.
 *
 * @param name The header's name, in lower case.
 * @returns Whether a plugin may set it.
 * @example
 * ```ts
 * import { defaultResponseHeaderPolicy } from "@cordon/cordon/plugin";
 * import assert from "node:assert/strict";
 *
 * assert.equal(defaultResponseHeaderPolicy("content-type"), true);
 * assert.equal(defaultResponseHeaderPolicy("set-cookie"), false);
 * ```
 */
export function defaultResponseHeaderPolicy(name: string): boolean {
  return !DENIED.has(name) && !isHopByHopHeader(name) &&
    !DENIED_PREFIXES.some((prefix) => name.startsWith(prefix));
}
