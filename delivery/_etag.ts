/**
 * Entity-tag helpers for conditional requests (RFC 9110 §13.1.2).
 *
 * @module
 */

/**
 * Whether an `If-None-Match` header matches an entity tag, with the weak
 * comparison RFC 9110 requires for `If-None-Match`: `W/` prefixes are
 * ignored, `*` alone matches any current representation, and a list matches
 * when any member does. A malformed member (a `*` inside a list among them)
 * ends the list without matching.
 *
 * @param header The `If-None-Match` header value.
 * @param etag The current strong entity tag, quotes included.
 * @returns `true` when the client's copy is current.
 */
export function ifNoneMatchMatches(header: string, etag: string): boolean {
  if (header === etag || header.trim() === "*") return true;
  const opaque = etag.startsWith("W/") ? etag.slice(2) : etag;
  const length = header.length;
  let i = 0;
  while (i < length) {
    const char = header.charCodeAt(i);
    // Skip list separators and optional whitespace.
    if (char === 0x2c || char === 0x20 || char === 0x09) {
      i++;
      continue;
    }
    if (char === 0x57 && header.charCodeAt(i + 1) === 0x2f) i += 2; // "W/"
    if (header.charCodeAt(i) !== 0x22) return false;
    const close = header.indexOf('"', i + 1);
    if (close < 0) return false;
    if (header.slice(i, close + 1) === opaque) return true;
    i = close + 1;
  }
  return false;
}
