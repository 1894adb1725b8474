/**
 * Entity-tag helpers for conditional requests (RFC 9110 §13.1.1, §13.1.2).
 *
 * A conditional field is `*` alone or a comma list of entity tags
 * (`"tag"` or `W/"tag"`, §8.8.3), with optional whitespace and empty list
 * members (§5.6.1). A field that is neither is malformed, and a malformed
 * field matches nothing, whatever well-formed members it also holds: the
 * server then sends the whole answer (`If-None-Match`) or refuses to go
 * on (`If-Match`). The fields are read in one pass, with no regular
 * expression, so a long field costs its length and nothing throws.
 *
 * @module
 */

const SPACE = 0x20;
const TAB = 0x09;
const COMMA = 0x2c;
const QUOTE = 0x22;
const CAPITAL_W = 0x57;
const SLASH = 0x2f;
const ASTERISK = 0x2a;

/**
 * Whether an `If-None-Match` header matches an entity tag, with the weak
 * comparison RFC 9110 requires for `If-None-Match`: `W/` prefixes are
 * ignored, `*` alone matches any current representation, and a list matches
 * when any member does. A malformed field matches nothing.
 *
 * @param header The `If-None-Match` header value.
 * @param etag The current entity tag, quotes included.
 * @returns `true` when the client's copy is current.
 */
export function ifNoneMatchMatches(header: string, etag: string): boolean {
  if (isWildcard(header)) return true;
  const opaque = etag.startsWith("W/") ? etag.slice(2) : etag;
  return listHoldsTag(header, opaque, false);
}

/**
 * Whether an `If-Match` header matches an entity tag, with the strong
 * comparison RFC 9110 requires for `If-Match`: a `W/` member never
 * matches, nor does any member when the current tag is weak; `*` alone
 * matches any current representation. A malformed field matches nothing.
 *
 * @param header The `If-Match` header value.
 * @param etag The current entity tag, quotes included.
 * @returns `true` when the request may go on; `false` answers `412`.
 */
export function ifMatchMatches(header: string, etag: string): boolean {
  if (isWildcard(header)) return true;
  if (etag.startsWith("W/")) return false;
  return listHoldsTag(header, etag, true);
}

/** Whether a field is `*` alone, with optional whitespace around it. */
function isWildcard(header: string): boolean {
  let start = 0;
  let end = header.length;
  while (start < end && isOws(header.charCodeAt(start))) start++;
  while (end > start && isOws(header.charCodeAt(end - 1))) end--;
  return end - start === 1 && header.charCodeAt(start) === ASTERISK;
}

/** Whether a character is optional whitespace (`OWS`): a space or a tab. */
function isOws(char: number): boolean {
  return char === SPACE || char === TAB;
}

/**
 * Whether a field is a well-formed list of entity tags one of which is
 * `opaque` (a quoted tag without `W/`), weak members left out when
 * `strong` is set. A malformed field holds none.
 */
function listHoldsTag(
  header: string,
  opaque: string,
  strong: boolean,
): boolean {
  let found = false;
  const wellFormed = scanEntityTags(header, (weak, start, end) => {
    if (strong && weak) return;
    if (end - start === opaque.length && header.startsWith(opaque, start)) {
      found = true;
    }
  });
  return wellFormed && found;
}

/**
 * Walks a comma list of entity tags, calling `visit` with each member's
 * quoted tag as `header.slice(start, end)`.
 *
 * @returns `false` when the field is no such list: a member that is not
 * `"…"` or `W/"…"` (an unquoted tag, `W/` alone, `*` in a list, a quote
 * not closed, a character an entity tag may not hold) or two members with
 * no comma between them.
 */
function scanEntityTags(
  header: string,
  visit: (weak: boolean, start: number, end: number) => void,
): boolean {
  const length = header.length;
  let afterMember = false;
  let i = 0;
  while (i < length) {
    const char = header.charCodeAt(i);
    if (isOws(char)) {
      i++;
    } else if (char === COMMA) {
      afterMember = false;
      i++;
    } else {
      if (afterMember) return false;
      const weak = char === CAPITAL_W && header.charCodeAt(i + 1) === SLASH;
      const start = weak ? i + 2 : i;
      if (header.charCodeAt(start) !== QUOTE) return false;
      let close = start + 1;
      while (close < length && isTagChar(header.charCodeAt(close))) close++;
      if (header.charCodeAt(close) !== QUOTE) return false;
      visit(weak, start, close + 1);
      afterMember = true;
      i = close + 1;
    }
  }
  return true;
}

/** Whether a character may stand inside an entity tag's quotes (`etagc`). */
function isTagChar(char: number): boolean {
  return char === 0x21 || (char >= 0x23 && char <= 0x7e) ||
    (char >= 0x80 && char <= 0xff);
}
