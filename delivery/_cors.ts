/**
 * The CORS and method headers every delivery response shares.
 *
 * @module
 */

/** The methods the delivery routes answer. */
export const ALLOWED_METHODS = "GET, HEAD, OPTIONS";

/**
 * The response headers a browser script on another origin may read: all of
 * them. `*` means every header for requests without credentials, and with
 * `Access-Control-Allow-Origin: *` no request carries credentials.
 */
export const EXPOSED_HEADERS = "*";

/** CORS headers of every response: any origin may read, without credentials. */
export const CORS_HEADERS: readonly (readonly [string, string])[] = Object
  .freeze([
    Object.freeze(["access-control-allow-origin", "*"] as const),
    Object.freeze(["access-control-expose-headers", EXPOSED_HEADERS] as const),
  ]);

/** Headers of the answer to a CORS preflight (`OPTIONS`). */
export const PREFLIGHT_HEADERS: readonly (readonly [string, string])[] = Object
  .freeze([
    Object.freeze(["access-control-allow-origin", "*"] as const),
    Object.freeze(["access-control-allow-methods", "GET, HEAD"] as const),
    Object.freeze(
      [
        "access-control-allow-headers",
        "If-None-Match, Authorization",
      ] as const,
    ),
    Object.freeze(["access-control-max-age", "86400"] as const),
    Object.freeze(["allow", ALLOWED_METHODS] as const),
  ]);
