// This module is browser compatible.

/**
 * The one rule for plugin-controlled text that reaches an operator: console
 * lines, thrown names and messages, and plugin values quoted in errors. An
 * operator prints them to a terminal or appends them to a line-based log,
 * where a newline forges a log line and an escape sequence repaints the
 * screen or hides what came before.
 *
 * @module
 */

/** The most characters of one plugin value the host keeps, by default. */
export const MAX_OPERATOR_TEXT_CHARS = 8192;

/**
 * What a terminal or a log reader acts on: C0 controls but the tab, DEL,
 * C1 controls, the line and paragraph separators, and the bidi controls
 * that reorder what a reader sees (Trojan Source).
 */
const CONTROL =
  // deno-lint-ignore no-control-regex
  /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function escapeControl(char: string): string {
  if (char === "\n") return "\\n";
  if (char === "\r") return "\\r";
  return `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`;
}

/**
 * Makes plugin-controlled text safe to print: one line, each control
 * character written as an escape (`\n`, `\r`, `\u001b`, ...), lone
 * surrogates as U+FFFD, and at most `maxChars` characters (then `…`). The
 * tab and the backslash are kept as they are, so the text still reads as
 * the plugin wrote it.
 *
 * @param text The plugin's text.
 * @param maxChars The most characters kept. @default {8192}
 * @returns The text, escaped and bounded.
 * @example
 * ```ts
 * import { operatorText } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(
 *   operatorText("\u001b[2Jok\nINFO forged"),
 *   "\\u001b[2Jok\\nINFO forged",
 * );
 * assert.equal(operatorText("x".repeat(10), 4), "xxxx…");
 * ```
 */
export function operatorText(
  text: string,
  maxChars: number = MAX_OPERATOR_TEXT_CHARS,
): string {
  // Clipped before escaping, so a huge text costs no more than a short one.
  const head = text.length > maxChars ? text.slice(0, maxChars) : text;
  const escaped = head.toWellFormed().replace(CONTROL, escapeControl);
  if (escaped.length <= maxChars && head.length === text.length) {
    return escaped;
  }
  return escaped.slice(0, maxChars).toWellFormed() + "…";
}
