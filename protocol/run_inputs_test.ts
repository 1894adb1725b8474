import assert from "node:assert/strict";
import { readContextJson } from "./context_json.ts";
import { sourceOverBound, utf8BytesUpTo } from "./run_inputs.ts";

const encoder = new TextEncoder();

function bytesOf(text: string): number {
  return encoder.encode(text).length;
}

const CONTEXTS: unknown[] = [
  0,
  "",
  'é😀\ud800 \u2028"\\',
  null,
  true,
  [],
  {},
  [undefined, null, NaN, -Infinity, 1e21, -0.5],
  { "": 1, a: undefined, b: [[], {}], "é": "ü" },
  { date: new Date(0), nested: { deeper: [{ x: [1, 2, 3] }] } },
  { toJSON: () => ({ replaced: "x".repeat(40) }) },
  Array.from({ length: 50 }, (_, i) => ({ [`k${i}`]: i % 3 ? i : `v${i}` })),
];

Deno.test("readContextJson() takes a context whose JSON text is exactly its bound and refuses it one byte below", () => {
  for (const context of CONTEXTS) {
    const json = JSON.stringify(context);
    const bytes = bytesOf(json);
    assert.deepEqual(readContextJson("run", context, bytes), {
      ok: true,
      json,
    });
    const refused = readContextJson("run", context, bytes - 1);
    assert.equal(refused.ok, false, json);
    assert.match(
      refused.ok ? "" : refused.error.message,
      new RegExp(
        `^The run's context is too large: its JSON text holds at least \\d+ bytes of UTF-8, more than maxContextBytes \\(${
          bytes - 1
        }\\)`,
      ),
    );
  }
});

Deno.test("readContextJson() stops writing a large context once past its bound", () => {
  let reads = 0;
  const values = Array.from({ length: 10_000 }, () => ({
    get value() {
      reads++;
      return 1;
    },
  }));
  const refused = readContextJson("run", values, 100);
  assert.equal(refused.ok, false);
  assert.ok(reads < 100, `read ${reads} values`);
});

Deno.test("readContextJson() gives no context as null and refuses what is not JSON data as contextJson() does", () => {
  assert.deepEqual(readContextJson("run", undefined, 0), {
    ok: true,
    json: "null",
  });
  assert.throws(
    () => readContextJson("run", { f() {} }, 1024),
    /Cannot run: context must be JSON data, but it holds a function/,
  );
});

Deno.test("utf8BytesUpTo() counts UTF-8 bytes exactly up to the bound", () => {
  for (const text of ["", "abc", "é", "€", "😀", "\ud800", "a😀\udc00é"]) {
    assert.equal(utf8BytesUpTo(text, 100), bytesOf(text), text);
  }
  assert.ok(utf8BytesUpTo("😀😀", 3) > 3);
  assert.equal(utf8BytesUpTo("x".repeat(1000), 10), 1000);
});

Deno.test("sourceOverBound() refuses a source one byte past its bound, in bytes of UTF-8", () => {
  assert.equal(sourceOverBound("€", 3), null);
  assert.equal(
    sourceOverBound("€", 2)?.message,
    "The declaration is invalid at source: it holds at least 3 bytes of UTF-8, more than maxSourceBytes (2); split the code into packs, or raise maxSourceBytes",
  );
  // Fewer characters than the bound, more bytes: the message names the
  // bytes, never a character count below the bound it says it passes.
  const accents = "é".repeat(3000);
  const message = sourceOverBound(accents, 4096)?.message ?? "";
  const atLeast = Number(/at least (\d+) bytes/.exec(message)?.[1]);
  assert.ok(atLeast > 4096 && atLeast <= 6000, message);
  assert.match(message, /more than maxSourceBytes \(4096\)/);
  assert.equal(sourceOverBound("", 0), null);
});
