// This module is browser compatible.

/**
 * The one rule for outside text that reaches an operator: a client's
 * request method and target in the delivery server's access log, a
 * plugin's console lines, thrown names and messages and the values quoted in
 * its install errors, what the commands print of packs and packages, and a
 * guest's result as `deno task run` prints it. An operator prints them to a terminal or appends them
 * to a line-based log, where a newline forges a log line, an escape sequence
 * repaints the screen, and a bidi control reorders what a reader sees.
 *
 * @module
 */

/** The most characters of one outside value kept, by default. */
export const MAX_OPERATOR_TEXT_CHARS = 8192;

/**
 * What is escaped: the backslash itself (so every escape reads back to one
 * input), control characters (C0, DEL, C1 with NEL), format characters
 * (bidi embeddings, overrides, isolates and marks, zero-width characters,
 * tags), the line and paragraph separators, and lone surrogates.
 */
const HIDDEN_SET = String.raw`\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}`;
const UNSAFE_SET = String.raw`\\` + HIDDEN_SET;
const UNSAFE = new RegExp(`[${UNSAFE_SET}]`, "u");
/** A run of characters kept as they are, or one character to escape. */
const PIECE = new RegExp(`([^${UNSAFE_SET}]+)|.`, "gsu");
const SHORT_ESCAPES: Record<number, string> = {
  0x09: "\\t",
  0x0a: "\\n",
  0x0d: "\\r",
  0x5c: "\\\\",
};

function escapeOne(point: number): string {
  const short = SHORT_ESCAPES[point];
  if (short !== undefined) return short;
  const hex = point.toString(16);
  if (point <= 0xff) return `\\x${hex.padStart(2, "0")}`;
  if (point <= 0xffff) return `\\u${hex.padStart(4, "0")}`;
  return `\\u{${hex}}`;
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

/** A high surrogate, which may start a pair: one character of two units. */
const HIGH_SURROGATE = /[\uD800-\uDBFF]/;

/** Characters (code points) of `text` from `index` on. */
function charactersFrom(text: string, index: number): number {
  // Text with no pair has a character per unit, which a native scan tells
  // at once: the loop below held the host's thread 12 to 35 ms to count
  // what it left out of a plugin's 3 MB capability name.
  if (!HIGH_SURROGATE.test(text.slice(index))) return text.length - index;
  let count = 0;
  for (let i = index; i < text.length; i++, count++) {
    const pair = isHighSurrogate(text.charCodeAt(i)) &&
      (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
    if (pair) i++;
  }
  return count;
}

/**
 * Makes outside text safe to print on one line: each unsafe character
 * becomes a visible escape (`\\`, `\n`, `\r`, `\t`, `\x1b`, `\x85`,
 * `\u202e`, `\ud800`, `\u{e0041}`), so no two texts print alike, and the
 * result is cut, at a character boundary and never inside an escape, to at
 * most `maxChars` characters plus a marker that says how many characters of
 * the input were left out, such as `…[+1488]`. Printable text in any script
 * is kept as it is.
 *
 * @param text The text as a client or a plugin sent it.
 * @param maxChars The most characters of escaped text kept. @default {8192}
 * @returns The text, escaped and bounded.
 * @example
 * ```ts
 * import { operatorText } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(
 *   operatorText("\u001b[2Jok\nINFO forged"),
 *   "\\x1b[2Jok\\nINFO forged",
 * );
 * assert.equal(operatorText("C:\\tmp\u202e"), "C:\\\\tmp\\u202e");
 * assert.equal(operatorText("abcdef", 3), "abc…[+3]");
 * ```
 */
export function operatorText(
  text: string,
  maxChars: number = MAX_OPERATOR_TEXT_CHARS,
): string {
  if (text.length <= maxChars && !UNSAFE.test(text)) return text;
  // Escaping never shortens, so no more of the input than this can be kept
  // (one unit more shows whether a pair is cut): a huge text costs no more
  // to escape than a short one.
  const head = text.slice(0, maxChars + 1);
  let out = "";
  let i = 0;
  PIECE.lastIndex = 0;
  for (let match; (match = PIECE.exec(head)) !== null;) {
    const [piece, safe] = match;
    const room = maxChars - out.length;
    if (safe !== undefined && safe.length > room) {
      const take = isHighSurrogate(safe.charCodeAt(room - 1)) ? room - 1 : room;
      out += safe.slice(0, take);
      i += take;
      break;
    }
    const kept = safe ?? escapeOne(piece.codePointAt(0)!);
    if (kept.length > room) break;
    out += kept;
    i += piece.length;
  }
  return i === text.length ? out : `${out}…[+${charactersFrom(text, i)}]`;
}

/**
 * A character of {@linkcode HIDDEN_SET} that JSON text may hold as it is:
 * `JSON.stringify` escapes C0 and lone surrogates itself, and its own
 * indentation is made of C0 (line feeds, tabs), which must stay.
 */
const HIDDEN_IN_JSON = new RegExp(
  String.raw`(?![\0-\x1f])[${HIDDEN_SET}]`,
  "gu",
);

function unicodeEscapes(character: string): string {
  let out = "";
  for (let i = 0; i < character.length; i++) {
    out += `\\u${character.charCodeAt(i).toString(16).padStart(4, "0")}`;
  }
  return out;
}

/**
 * `JSON.stringify` for a terminal: the same JSON text, which parses to the
 * same value, with each character that {@linkcode operatorText} escapes and
 * JSON keeps as it is (DEL, C1, format characters, the line and paragraph
 * separators) written as a `\u` escape, so a value cannot repaint the
 * screen or reorder what a reader sees. Nothing is cut.
 *
 * @param value A JSON-safe value, such as a sandbox result.
 * @param space The indentation, as `JSON.stringify` takes it.
 * @returns The JSON text, or `undefined` where `JSON.stringify` gives none.
 * @example
 * ```ts
 * import { operatorJson } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const value = { name: "evil\u202etxt.exe", csi: "\u009b2J" };
 * const text = operatorJson(value)!;
 * assert.equal(text, String.raw`{"name":"evil\u202etxt.exe","csi":"\u009b2J"}`);
 * assert.deepEqual(JSON.parse(text), value);
 * ```
 */
export function operatorJson(
  value: unknown,
  space?: string | number,
): string | undefined {
  // Every such character stands inside a string, where a \u escape means it.
  return JSON.stringify(value, null, space)?.replace(
    HIDDEN_IN_JSON,
    unicodeEscapes,
  );
}

/** The most characters of one outside value a quote keeps, by default. */
export const MAX_QUOTED_CHARS = 200;

/**
 * Outside text as a message quotes it: in JSON quotes, with the escapes of
 * {@linkcode operatorJson} (a newline, an escape sequence, a C1 control, a
 * bidi control or a line separator cannot forge or reorder the line the
 * message ends up in), and cut to at most `maxChars` characters, never
 * inside a surrogate pair, and `…` inside the quotes, so a huge name does
 * not make a huge message.
 *
 * @param text The text as a client, a package or a command line gave it.
 * @param maxChars The most characters of `text` kept. @default {200}
 * @returns The quoted text, which `JSON.parse` reads back when not cut.
 * @example
 * ```ts
 * import { operatorQuote } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(operatorQuote("guest.js"), '"guest.js"');
 * assert.equal(
 *   operatorQuote("a\u001b[2J\nb\u202e\u009b"),
 *   String.raw`"a\u001b[2J\nb\u202e\u009b"`,
 * );
 * assert.equal(operatorQuote("abcdef", 3), '"abc…"');
 * ```
 */
export function operatorQuote(
  text: string,
  maxChars: number = MAX_QUOTED_CHARS,
): string {
  if (text.length <= maxChars) return operatorJson(text)!;
  const cut = isHighSurrogate(text.charCodeAt(maxChars - 1))
    ? maxChars - 1
    : maxChars;
  return operatorJson(`${text.slice(0, cut)}…`)!;
}
