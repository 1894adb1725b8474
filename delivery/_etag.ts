/**
 * Entity-tag helpers for conditional requests (RFC 9110 §13.1.1, §13.1.2).
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
  return listHoldsTag(header, opaque, false);
}

/**
 * Whether an `If-Match` header matches an entity tag, with the strong
 * comparison RFC 9110 requires for `If-Match`: a `W/` member never
 * matches, nor does any member when the current tag is weak; `*` alone
 * matches any current representation.
 *
 * @param header The `If-Match` header value.
 * @param etag The current entity tag, quotes included.
 * @returns `true` when the request may go on; `false` answers `412`.
 */
export function ifMatchMatches(header: string, etag: string): boolean {
  if (header.trim() === "*") return true;
  if (etag.startsWith("W/")) return false;
  return listHoldsTag(header, etag, true);
}

/**
 * Whether a comma-separated list of entity tags holds `opaque` (a quoted
 * tag without `W/`), skipping weak members when `strong` is set.
 */
function listHoldsTag(
  header: string,
  opaque: string,
  strong: boolean,
): boolean {
  const length = header.length;
  let i = 0;
  while (i < length) {
    const char = header.charCodeAt(i);
    // Skip list separators and optional whitespace.
    if (char === 0x2c || char === 0x20 || char === 0x09) {
      i++;
      continue;
    }
    const weak = char === 0x57 && header.charCodeAt(i + 1) === 0x2f; // "W/"
    if (weak) i += 2;
    if (header.charCodeAt(i) !== 0x22) return false;
    const close = header.indexOf('"', i + 1);
    if (close < 0) return false;
    if (!(strong && weak) && header.slice(i, close + 1) === opaque) return true;
    i = close + 1;
  }
  return false;
}
