import assert from "node:assert/strict";
import { MAX_OPERATOR_TEXT_CHARS, operatorText } from "./operator_text.ts";

Deno.test("operatorText() escapes what a terminal or a line-based log acts on, and keeps tabs, backslashes and other text", () => {
  assert.equal(
    operatorText("a\tb\\n\u001b[31mred\r\nforged\u0085\u009b2J\u007f"),
    "a\tb\\n\\u001b[31mred\\r\\nforged\\u0085\\u009b2J\\u007f",
  );
  assert.equal(
    operatorText("x\u2028y\u2029z\u202eevil\u2066\u200f"),
    "x\\u2028y\\u2029z\\u202eevil\\u2066\\u200f",
  );
  assert.equal(operatorText("plain é ☃ 😀"), "plain é ☃ 😀");
});

Deno.test("operatorText() writes lone surrogates as U+FFFD, a pair cut by the bound too", () => {
  assert.equal(operatorText("a\ud800b\udc00"), "a\ufffdb\ufffd");
  assert.equal(operatorText("ab😀", 3), "ab\ufffd…");
});

Deno.test("operatorText() bounds the text after escaping it", () => {
  const long = "x".repeat(MAX_OPERATOR_TEXT_CHARS * 100);
  assert.equal(operatorText(long).length, MAX_OPERATOR_TEXT_CHARS + 1);
  const escapes = "\u001b".repeat(MAX_OPERATOR_TEXT_CHARS);
  const bounded = operatorText(escapes);
  assert.equal(bounded.length, MAX_OPERATOR_TEXT_CHARS + 1);
  assert.ok(bounded.endsWith("…"));
  assert.equal(operatorText("x".repeat(8), 8), "x".repeat(8));
});
