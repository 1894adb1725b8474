/**
 * The CORS and method headers every delivery response shares.
 *
 * @module
 */

import { isFieldName } from "../protocol/hop_by_hop.ts";
import { operatorJson } from "../protocol/operator_text.ts";
import { copyListOption } from "../protocol/options.ts";

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

/**
 * The request headers every preflight answer allows: the conditional
 * headers the routes honour (`If-None-Match` for 304, `If-Match` for 412)
 * and `Authorization` for a `requester` hook. The others the routes read
 * (`Host`, `Accept-Encoding`) are ones a browser sets itself.
 */
const ALLOWED_REQUEST_HEADERS: readonly string[] = Object.freeze([
  "If-None-Match",
  "If-Match",
  "Authorization",
]);

/**
 * Headers of the answer to a CORS preflight (`OPTIONS`), allowing
 * {@linkcode ALLOWED_REQUEST_HEADERS} and `extra`, checked already.
 */
export function preflightHeaders(
  extra: readonly string[],
): [string, string][] {
  const allowed = [...ALLOWED_REQUEST_HEADERS];
  for (const name of extra) {
    const known = allowed.some((kept) =>
      kept.toLowerCase() === name.toLowerCase()
    );
    if (!known) allowed.push(name);
  }
  return [
    ["access-control-allow-origin", "*"],
    ["access-control-allow-methods", "GET, HEAD"],
    ["access-control-allow-headers", allowed.join(", ")],
    ["access-control-max-age", "86400"],
    ["allow", ALLOWED_METHODS],
  ];
}

/**
 * `corsRequestHeaders` as given, checked: an array of header field names.
 *
 * @throws {TypeError} When it is not, or reading it throws.
 */
export function readCorsRequestHeaders(
  value: unknown,
): readonly string[] {
  if (value === undefined) return [];
  // Copied once, a hole read as undefined: every() skips a sparse array's
  // holes, which then reached the preflight answer and threw there.
  const names = copyListOption(
    "create a delivery handler",
    "corsRequestHeaders",
    value,
  );
  if (
    names === null ||
    !names.every((name) => typeof name === "string" && isFieldName(name))
  ) {
    throw new TypeError(
      `Cannot create a delivery handler: corsRequestHeaders must be an array of header field names, such as ["X-Tenant"]; got ${
        operatorJson(value) ?? typeof value
      }`,
    );
  }
  return names as string[];
}
