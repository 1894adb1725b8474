import assert from "node:assert/strict";
import {
  MAX_OPERATOR_TEXT_CHARS,
  MAX_QUOTED_CHARS,
  operatorJson,
  operatorQuote,
  operatorText,
} from "./operator_text.ts";

/** What must never reach a log line as it is. */
const UNSAFE_IN_OUTPUT = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;

const SHORT: Record<string, string> = {
  "\\\\": "\\",
  "\\n": "\n",
  "\\r": "\r",
  "\\t": "\t",
};

/** Reads an escaped text back, to show no two inputs share an output. */
function unescape(text: string): string {
  return text.replace(
    /\\(?:[\\nrt]|x([0-9a-f]{2})|u([0-9a-f]{4})|u\{([0-9a-f]+)\})/g,
    (whole, x?: string, u?: string, braced?: string) => {
      const short = SHORT[whole];
      if (short !== undefined) return short;
      const hex = x ?? u ?? braced!;
      return braced === undefined
        ? String.fromCharCode(parseInt(hex, 16))
        : String.fromCodePoint(parseInt(hex, 16));
    },
  );
}

const NASTY: [name: string, input: string, escaped: string][] = [
  ["NUL", "a\0b", "a\\x00b"],
  ["a CSI sequence that clears the screen", "\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"],
  ["an OSC 8 hyperlink", "\x1b]8;;https://x\x07y", "\\x1b]8;;https://x\\x07y"],
  ["CR LF forging a second line", "/a\r\nGET /b 200", "/a\\r\\nGET /b 200"],
  ["tab and backspace", "a\tb\bc", "a\\tb\\x08c"],
  ["DEL", "a\x7f", "a\\x7f"],
  ["the first and last C1 control", "\x80\x9f", "\\x80\\x9f"],
  ["NEL", "a\u0085b", "a\\x85b"],
  ["8-bit CSI", "\u009b31m", "\\x9b31m"],
  ["right-to-left override", "/evil\u202egnp.js", "/evil\\u202egnp.js"],
  [
    "every bidi embedding and override",
    "\u202a\u202b\u202c\u202d\u202e",
    "\\u202a\\u202b\\u202c\\u202d\\u202e",
  ],
  [
    "every bidi isolate",
    "\u2066\u2067\u2068\u2069",
    "\\u2066\\u2067\\u2068\\u2069",
  ],
  ["bidi marks", "\u200e\u200f\u061c", "\\u200e\\u200f\\u061c"],
  ["line and paragraph separators", "a\u2028b\u2029c", "a\\u2028b\\u2029c"],
  [
    "zero-width space and joiner, BOM",
    "\u200b\u200d\ufeff",
    "\\u200b\\u200d\\ufeff",
  ],
  ["a tag character", "a\u{e0041}", "a\\u{e0041}"],
  ["a forged escape", "\\x1b[2J", "\\\\x1b[2J"],
  ["a lone high surrogate", "a\ud800b", "a\\ud800b"],
  ["a lone low surrogate", "a\udc00b", "a\\udc00b"],
  ["surrogates in the wrong order", "\udc00\ud800", "\\udc00\\ud800"],
  ["a high surrogate at the end", "/x\ud83d", "/x\\ud83d"],
  ["percent escapes, kept as sent", "/%1B%E2%80%AE", "/%1B%E2%80%AE"],
];

Deno.test("operatorText() escapes each nasty input into a visible form", () => {
  for (const [name, input, escaped] of NASTY) {
    const out = operatorText(input, 512);
    assert.equal(out, escaped, name);
    assert.doesNotMatch(out, UNSAFE_IN_OUTPUT, name);
    assert.equal(unescape(out), input, name);
  }
});

Deno.test("operatorText() keeps printable text in any script as it is", () => {
  for (
    const text of [
      "/api/sandbox-modules/aB3_-x?digest=sha256-abc%2B%3D",
      "/ünïcödé/日本語/עברית/العربية",
      "emoji 😀 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
      "no-break\u00a0space, ideographic\u3000space, \ufffd",
    ]
  ) {
    assert.equal(operatorText(text, 512), text);
  }
});

Deno.test("operatorText() leaves no unsafe character in, and reads back, any code unit", () => {
  for (let unit = 0; unit <= 0xffff; unit++) {
    const input = `a${String.fromCharCode(unit)}b`;
    const out = operatorText(input, 64);
    assert.doesNotMatch(out, UNSAFE_IN_OUTPUT, unit.toString(16));
    assert.equal(unescape(out), input, unit.toString(16));
  }
  for (const point of [0x1f600, 0xe0001, 0xe007f, 0xf0000, 0x10ffff]) {
    const input = String.fromCodePoint(point);
    const out = operatorText(input, 64);
    assert.doesNotMatch(out, UNSAFE_IN_OUTPUT, point.toString(16));
    assert.equal(unescape(out), input, point.toString(16));
  }
});

Deno.test("operatorText() bounds its output at a character boundary and says how much it left out", () => {
  assert.equal(operatorText("abc", 3), "abc");
  assert.equal(operatorText("abcd", 3), "abc…[+1]");
  assert.equal(
    operatorText("a".repeat(600), 512),
    `${"a".repeat(512)}…[+88]`,
  );
  // An escape is never cut in half.
  assert.equal(operatorText("\x1b".repeat(200), 10), "\\x1b\\x1b…[+198]");
  assert.equal(operatorText("ab\u202e", 7), "ab…[+1]");
  // Nor a surrogate pair; what is left out counts characters.
  assert.equal(operatorText("😀".repeat(10), 3), "😀…[+9]");
  assert.equal(operatorText("", 0), "");
  assert.equal(operatorText("x", 0), "…[+1]");
  for (const [, input] of NASTY) {
    const out = operatorText(input.repeat(100), 40);
    assert.ok(out.replace(/…\[\+\d+\]$/, "").length <= 40, out);
  }
});

Deno.test("operatorText() cuts a huge text at the bound and counts what it left out", () => {
  const long = "x".repeat(MAX_OPERATOR_TEXT_CHARS * 100);
  assert.equal(
    operatorText(long),
    `${"x".repeat(MAX_OPERATOR_TEXT_CHARS)}…[+${MAX_OPERATOR_TEXT_CHARS * 99}]`,
  );
  const escapes = operatorText("\u001b".repeat(MAX_OPERATOR_TEXT_CHARS));
  assert.equal(
    escapes,
    `${"\\x1b".repeat(MAX_OPERATOR_TEXT_CHARS / 4)}…[+${
      MAX_OPERATOR_TEXT_CHARS * 3 / 4
    }]`,
  );
  assert.equal(operatorText("x".repeat(8), 8), "x".repeat(8));
});

Deno.test("operatorJson() gives JSON text that parses to the same value, indented or not, with no character a terminal would act on", () => {
  const nasty = [
    "\u007f\u0085\u009b2J",
    "\u202eexe.txt\u2066\u200b\ufeff",
    "a\u2028b\u2029c",
    "\u{e0041}\u{1f600}",
    "\n\t\r\u001b\\\ud800",
    "plain, ünïcode and 漢字",
  ];
  const value = { nasty, [nasty[1]!]: { nested: nasty } };
  for (const space of [undefined, 2, "\t"]) {
    const text = operatorJson(value, space)!;
    assert.deepEqual(JSON.parse(text), value);
    assert.doesNotMatch(
      text.replace(/\n\t*/g, "").replace(/\n */g, ""),
      /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u,
    );
    assert.ok(text.includes("漢字") && text.includes("\u{1f600}"));
  }
  assert.equal(operatorJson(undefined), undefined);
});

Deno.test("operatorQuote() quotes outside text as JSON with no character a terminal would act on, cut to its length at a character boundary", () => {
  for (const [name, input] of NASTY) {
    const quoted = operatorQuote(input);
    assert.doesNotMatch(quoted, UNSAFE_IN_OUTPUT, name);
    assert.equal(JSON.parse(quoted), input, name);
  }
  assert.equal(
    operatorQuote("\u202eexe.txt\u009b"),
    String.raw`"\u202eexe.txt\u009b"`,
  );
  const huge = "\u001b[2J".repeat(2_500_000);
  const cut = operatorQuote(huge);
  assert.equal(
    cut,
    operatorJson(`${"\u001b[2J".repeat(MAX_QUOTED_CHARS / 4)}…`),
  );
  assert.equal(operatorQuote("ab\u{1f600}", 3), '"ab…"');
  assert.equal(operatorQuote("abc\u{1f600}", 3), '"abc…"');
  assert.equal(operatorQuote("abc", 3), '"abc"');
});
