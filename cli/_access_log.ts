/**
 * The delivery server's access log line, and the one rule for putting text
 * a client sent into a log: escaped, so it cannot move the cursor, recolour
 * or clear a terminal, forge a line, or reorder what a reader sees, and
 * bounded in length.
 *
 * @module
 */

import type { DeliveryRequestInfo } from "../delivery/handler.ts";

/** The longest request target kept in a log line, in characters. */
export const MAX_LOGGED_TARGET_CHARS = 512;
/** The longest request method kept in a log line, in characters. */
export const MAX_LOGGED_METHOD_CHARS = 32;

/**
 * What is escaped: the escape character itself, control characters (C0,
 * DEL, C1 with NEL), format characters (bidi embeddings, overrides,
 * isolates and marks, zero-width characters, tags), the line and
 * paragraph separators, and lone surrogates.
 */
const UNSAFE = /[\\\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;

/**
 * Makes client-sent text safe to write into a log line: each unsafe
 * character becomes a visible escape (`\\`, `\x1b`, `\x85`, `\u202e`,
 * `\u{e0041}`) and the result is cut, at a character boundary, to at most
 * `maxChars` characters plus a marker that says how many characters of the
 * input were left out, such as `…[+1488]`.
 *
 * @param text The text as the client sent it.
 * @param maxChars The most characters of escaped text to keep.
 * @returns The escaped, bounded text.
 *
 * @example
 * ```ts
 * import { escapeLogText } from "./_access_log.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(escapeLogText("/a\u001b[2Jb\u202e", 64), "/a\\x1b[2Jb\\u202e");
 * assert.equal(escapeLogText("abcdef", 3), "abc…[+3]");
 * ```
 */
export function escapeLogText(text: string, maxChars: number): string {
  if (text.length <= maxChars && !UNSAFE.test(text)) return text;
  let out = "";
  let i = 0;
  while (i < text.length) {
    const point = text.codePointAt(i)!;
    const char = String.fromCodePoint(point);
    const piece = UNSAFE.test(char) ? escapeOne(point) : char;
    if (out.length + piece.length > maxChars) break;
    out += piece;
    i += char.length;
  }
  if (i === text.length) return out;
  let left = 0;
  for (; i < text.length; left++) i += text.codePointAt(i)! > 0xffff ? 2 : 1;
  return `${out}…[+${left}]`;
}

/**
 * Formats one access log line: method, target, status, error code when
 * there is one, and the handler's time, such as
 * `GET /api/sandbox-modules/abc 404 MODULE_NOT_FOUND 0.3ms`. The method and
 * target are escaped and bounded by {@linkcode escapeLogText}.
 *
 * @param info What the handler answered.
 * @returns The line, without a line break.
 */
export function accessLogLine(info: DeliveryRequestInfo): string {
  const code = info.code === undefined ? "" : ` ${info.code}`;
  return `${escapeLogText(info.method, MAX_LOGGED_METHOD_CHARS)} ${
    escapeLogText(info.path, MAX_LOGGED_TARGET_CHARS)
  } ${info.status}${code} ${info.durationMs.toFixed(1)}ms`;
}

function escapeOne(point: number): string {
  if (point === 0x5c) return "\\\\";
  const hex = point.toString(16);
  if (point <= 0xff) return `\\x${hex.padStart(2, "0")}`;
  if (point <= 0xffff) return `\\u${hex.padStart(4, "0")}`;
  return `\\u{${hex}}`;
}
