/**
 * What a client's request URL and Host header may hold for the plugin host
 * to route the request: the one rule the host and the Node listener share.
 *
 * @module
 */

import { isHostHeader } from "../protocol/host_header.ts";

/** A `.` or `..` segment as the URL parser reads one (`%2e` is a dot too). */
const DOT_SEGMENT = /^(?:\.|%2e){1,2}$/i;

/** User info in a URL's authority: `http://user:pass@host/`. */
const USER_INFO = /^[A-Za-z][A-Za-z0-9+.-]*:[/\\]{2}[^/\\?#]*@/;

/**
 * A character a request target cannot hold (RFC 9112 §3.2: visible ASCII
 * only). Node's parser refuses such a target itself; Deno passes UTF-8
 * bytes on, read as Latin-1.
 */
const NOT_VISIBLE_ASCII = /[^\x21-\x7e]/;

/**
 * The schemes of a URL a server takes (RFC 9112 §3.2.2): the runtimes
 * route a target in absolute form of any scheme the URL parser reads with
 * a host (`javascript://host/plugins/a/`), and the plugin would read that
 * URL as its own.
 */
const HTTP_SCHEME = /^https?:/i;

/**
 * Methods the Fetch standard forbids, so Node's `Request` cannot carry
 * them, while Deno's server hands them on.
 */
const FORBIDDEN_METHODS: ReadonlySet<string> = new Set([
  "CONNECT",
  "TRACE",
  "TRACK",
]);

/**
 * Why the host cannot route a request as its client sent it, or `null`.
 * The URL is read as sent, before the URL parser resolves it (a URL the
 * parser cannot read is refused too): the parser
 * reads `/plugins/a/%2e%2e/b/` as `/plugins/b/`, so a gateway that let the
 * client reach plugin `a` only would let it reach `b`, and `b` would see a
 * URL under `a`.
 *
 * @param url The request's URL as the runtime built it from the request
 * line (Deno keeps it as sent; a `Request` built in-process is resolved).
 * @param host The Host header, or `null` when there is none.
 * @param method The request's method.
 * @returns A sentence for the client, or `null` when the request is fine.
 */
export function requestTargetProblem(
  url: string,
  host: string | null,
  method: string,
): string | null {
  if (host !== null && !isHostHeader(host)) {
    return "its Host header is not host[:port]";
  }
  if (FORBIDDEN_METHODS.has(method.toUpperCase())) {
    return "its method is one a web Request cannot carry";
  }
  if (NOT_VISIBLE_ASCII.test(url)) {
    return "its target holds characters that are not visible ASCII";
  }
  if (USER_INFO.test(url)) return "its URL holds user info";
  if (!HTTP_SCHEME.test(url)) {
    return "its target's scheme is not http or https";
  }
  // A request target has no fragment (RFC 9112 §3.2), but both runtimes
  // hand one on, and the plugin would read it in its URL.
  if (url.includes("#")) return "its target holds a fragment (#)";
  const end = url.search(/[?#]/);
  const path = end === -1 ? url : url.slice(0, end);
  // The parser reads a backslash as a slash in http: and https: URLs.
  if (path.split(/[/\\]/).some((segment) => DOT_SEGMENT.test(segment))) {
    return "its path holds . or .. segments";
  }
  // A bad port, for one.
  if (!URL.canParse(url)) return "its URL cannot be read";
  return null;
}

/**
 * The detail of the 400 `REQUEST_INVALID` answer for `problem`, the same
 * from the host and from the Node listener.
 */
export function requestTargetDetail(problem: string): string {
  return `The request cannot be routed: ${problem}; send the path a URL parser resolves to, with a Host of host[:port]`;
}
