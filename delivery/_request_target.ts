/**
 * Splits a request URL into its raw path and query without building a
 * `URL` object, and without normalising `..` or percent escapes: the
 * handler must judge exactly what the client sent.
 *
 * @module
 */

/** The raw path and query of a request URL. */
export interface RequestTarget {
  /** The path, still percent-encoded, starting with `/`. */
  path: string;
  /** The query without its `?`, or `""`. */
  query: string;
}

/**
 * Splits an absolute request URL (`http://host:port/path?query`) into its
 * raw path and query.
 *
 * @param url The absolute URL of a request, as `Request.url` gives it.
 * @returns The raw path (at least `/`) and query.
 */
export function splitRequestUrl(url: string): RequestTarget {
  const schemeEnd = url.indexOf("://");
  const authorityStart = schemeEnd < 0 ? 0 : schemeEnd + 3;
  let pathStart = url.indexOf("/", authorityStart);
  if (pathStart < 0) pathStart = url.length;
  let end = url.indexOf("#", pathStart);
  if (end < 0) end = url.length;
  const queryStart = url.indexOf("?", pathStart);
  if (queryStart >= 0 && queryStart < end) {
    return {
      path: pathStart === queryStart ? "/" : url.slice(pathStart, queryStart),
      query: url.slice(queryStart + 1, end),
    };
  }
  return {
    path: pathStart === end ? "/" : url.slice(pathStart, end),
    query: "",
  };
}

/**
 * Decodes percent escapes once, never throwing.
 *
 * @param text The raw text.
 * @returns The decoded text, or `undefined` when the escapes are malformed
 * or decode to bytes that are not UTF-8.
 */
export function decodeOnce(text: string): string | undefined {
  if (!text.includes("%")) return text;
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/**
 * Reads one parameter of a raw query with plain percent-decoding, so a `+`
 * stays a `+` (form decoding would turn it into a space, and `+` occurs in
 * base64 digests).
 *
 * @param query The raw query without `?`.
 * @param name The parameter name.
 * @returns Every value in order (`""` for one given without `=`), none when
 * absent, or `null` when the escapes of one are malformed.
 */
export function queryParam(
  query: string,
  name: string,
): string[] | null {
  const values: string[] = [];
  if (query === "") return values;
  for (const part of query.split("&")) {
    const eq = part.indexOf("=");
    const key = eq < 0 ? part : part.slice(0, eq);
    if (key !== name) continue;
    const value = eq < 0 ? "" : decodeOnce(part.slice(eq + 1));
    if (value === undefined) return null;
    values.push(value);
  }
  return values;
}
