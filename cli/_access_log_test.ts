import assert from "node:assert/strict";
import {
  accessLogLine,
  escapeLogText,
  MAX_LOGGED_TARGET_CHARS,
} from "./_access_log.ts";
import type { DeliveryRequestInfo } from "../delivery/handler.ts";
import { runServer } from "./serve.ts";
import { PrintedLines } from "../delivery/_test_lines_test.ts";

/** What must never reach a log line as it is. */
const UNSAFE_IN_OUTPUT = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;

/** Reads an escaped text back, to show no two inputs share an output. */
function unescape(text: string): string {
  return text.replace(
    /\\(?:\\|x([0-9a-f]{2})|u([0-9a-f]{4})|u\{([0-9a-f]+)\})/g,
    (whole, x?: string, u?: string, braced?: string) => {
      if (whole === "\\\\") return "\\";
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
  ["CR LF forging a second line", "/a\r\nGET /b 200", "/a\\x0d\\x0aGET /b 200"],
  ["tab and backspace", "a\tb\bc", "a\\x09b\\x08c"],
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

Deno.test("escapeLogText() escapes each nasty input into a visible form", () => {
  for (const [name, input, escaped] of NASTY) {
    const out = escapeLogText(input, 512);
    assert.equal(out, escaped, name);
    assert.doesNotMatch(out, UNSAFE_IN_OUTPUT, name);
    assert.equal(unescape(out), input, name);
  }
});

Deno.test("escapeLogText() keeps printable text in any script as it is", () => {
  for (
    const text of [
      "/api/sandbox-modules/aB3_-x?digest=sha256-abc%2B%3D",
      "/ünïcödé/日本語/עברית/العربية",
      "emoji 😀 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
      "no-break\u00a0space, ideographic\u3000space, \ufffd",
    ]
  ) {
    assert.equal(escapeLogText(text, 512), text);
  }
});

Deno.test("escapeLogText() leaves no unsafe character in, and reads back, any code unit", () => {
  for (let unit = 0; unit <= 0xffff; unit++) {
    const input = `a${String.fromCharCode(unit)}b`;
    const out = escapeLogText(input, 64);
    assert.doesNotMatch(out, UNSAFE_IN_OUTPUT, unit.toString(16));
    assert.equal(unescape(out), input, unit.toString(16));
  }
  for (const point of [0x1f600, 0xe0001, 0xe007f, 0xf0000, 0x10ffff]) {
    const input = String.fromCodePoint(point);
    const out = escapeLogText(input, 64);
    assert.doesNotMatch(out, UNSAFE_IN_OUTPUT, point.toString(16));
    assert.equal(unescape(out), input, point.toString(16));
  }
});

Deno.test("escapeLogText() bounds its output at a character boundary and says how much it left out", () => {
  assert.equal(escapeLogText("abc", 3), "abc");
  assert.equal(escapeLogText("abcd", 3), "abc…[+1]");
  assert.equal(
    escapeLogText("a".repeat(600), 512),
    `${"a".repeat(512)}…[+88]`,
  );
  // An escape is never cut in half.
  assert.equal(escapeLogText("\x1b".repeat(200), 10), "\\x1b\\x1b…[+198]");
  assert.equal(escapeLogText("ab\u202e", 7), "ab…[+1]");
  // Nor a surrogate pair; what is left out counts characters.
  assert.equal(escapeLogText("😀".repeat(10), 3), "😀…[+9]");
  assert.equal(escapeLogText("", 0), "");
  assert.equal(escapeLogText("x", 0), "…[+1]");
  for (const [, input] of NASTY) {
    const out = escapeLogText(input.repeat(100), 40);
    assert.ok(out.replace(/…\[\+\d+\]$/, "").length <= 40, out);
  }
});

function info(overrides: Partial<DeliveryRequestInfo>): DeliveryRequestInfo {
  return {
    method: "GET",
    path: "/api/sandbox-modules",
    route: "listing",
    status: 200,
    durationMs: 1.25,
    ...overrides,
  };
}

Deno.test("accessLogLine() writes method, escaped target, status, code and time", () => {
  assert.equal(accessLogLine(info({})), "GET /api/sandbox-modules 200 1.3ms");
  assert.equal(
    accessLogLine(info({
      method: "GE\x1bT",
      path: "/api/sandbox-modules/\u202eabc\r\nGET / 200",
      route: "module",
      status: 404,
      code: "MODULE_NOT_FOUND",
      durationMs: 0.04,
    })),
    "GE\\x1bT /api/sandbox-modules/\\u202eabc\\x0d\\x0aGET / 200 404 MODULE_NOT_FOUND 0.0ms",
  );
});

Deno.test("accessLogLine() clips a long target at 512 characters with a marker", () => {
  const path = `/${"a".repeat(2000)}`;
  const line = accessLogLine(info({ path, route: "none", status: 404 }));
  assert.equal(
    line,
    `GET ${path.slice(0, MAX_LOGGED_TARGET_CHARS)}…[+${
      path.length - MAX_LOGGED_TARGET_CHARS
    }] 404 1.3ms`,
  );
  const method = accessLogLine(info({ method: "X".repeat(100) }));
  assert.match(method, /^X{32}…\[\+68\] \/api\/sandbox-modules 200 /);
});

/** Sends raw bytes as one HTTP/1.1 request and reads the status line. */
async function rawRequest(port: number, target: Uint8Array): Promise<string> {
  const encoder = new TextEncoder();
  using conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(
    new Uint8Array([
      ...encoder.encode("GET "),
      ...target,
      ...encoder.encode(
        " HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n",
      ),
    ]),
  );
  const response = await new Response(conn.readable).text();
  return response.slice(0, response.indexOf("\r\n"));
}

Deno.test("cli/serve.ts logs a request target with a raw bidi override, C1 controls or a line separator escaped", async () => {
  const lines = new PrintedLines();
  const stop = new AbortController();
  const running = runServer(["--port", "0"], {
    print: lines.print,
    printError: lines.print,
    signal: stop.signal,
  });
  try {
    const { line } = await lines.waitFor(/^Listening on http:\/\/\S+$/);
    const port = Number(new URL(line.slice("Listening on ".length)).port);
    const encoder = new TextEncoder();
    // Deno's HTTP parser passes UTF-8 in the target on as it is, so these
    // reach the handler raw.
    const cases: [target: string, logged: string][] = [
      [
        "/api/sandbox-modules/x\u202egnp.js",
        "/api/sandbox-modules/x\\u202egnp.js",
      ],
      [
        "/api/sandbox-modules/a\u0085b\u009b31m",
        "/api/sandbox-modules/a\\x85b\\x9b31m",
      ],
      [
        "/api/sandbox-modules/\u2028\u2066",
        "/api/sandbox-modules/\\u2028\\u2066",
      ],
      [
        "/api/sandbox-modules/%1B[2J%E2%80%AE",
        "/api/sandbox-modules/%1B[2J%E2%80%AE",
      ],
    ];
    for (const [target, logged] of cases) {
      const from = lines.lines.length;
      assert.match(
        await rawRequest(port, encoder.encode(target)),
        /^HTTP\/1\.1 4\d\d /,
      );
      await lines.waitFor(
        new RegExp(
          `^GET ${RegExp.escape(logged)} 404 MODULE_ID_INVALID \\d+\\.\\dms$`,
        ),
        { from },
      );
    }
    // A raw escape byte or lone C1 byte is refused before the handler.
    for (const bytes of [[0x2f, 0x1b, 0x5b, 0x32, 0x4a], [0x2f, 0x85]]) {
      assert.equal(
        await rawRequest(port, new Uint8Array(bytes)),
        "HTTP/1.1 400 Bad Request",
      );
    }
    for (const printed of lines.lines) {
      assert.doesNotMatch(printed, UNSAFE_IN_OUTPUT, JSON.stringify(printed));
    }
  } finally {
    stop.abort();
    assert.equal(await running, 0);
  }
});
