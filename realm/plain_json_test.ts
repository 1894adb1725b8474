import assert from "node:assert/strict";
import { createMarshallers } from "./marshal.ts";
import { payloadJson } from "./plain_json.ts";

const marshal = createMarshallers();

function outcome(run: () => string): { json: string } | { code: unknown } {
  try {
    return { json: run() };
  } catch (error) {
    return { code: (error as { code?: unknown }).code };
  }
}

Deno.test("payloadJson() writes what toWireJson() writes, and refuses what it refuses", () => {
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  let deep: unknown = "leaf";
  for (let i = 0; i < 100; i++) deep = { next: deep };
  const values: unknown[] = [
    undefined,
    null,
    0,
    -0,
    NaN,
    Infinity,
    "text",
    true,
    [1, undefined, "a", null, [2]],
    { a: 1, b: undefined, c: [{ d: "e" }] },
    {
      url: "http://x/y",
      headers: [["a", "b"]],
      bodyBase64: null,
      params: { id: "7" },
    },
    new Date(0),
    { when: new Date(0) },
    { toJSON: () => "mine" },
    Object.assign(Object.create(null), { a: 1 }),
    { boxed: new String("s") },
    [function f() {}],
    { f: () => 1 },
    { s: Symbol("s") },
    { n: 1n },
    cyclic,
    deep,
  ];
  for (const [index, value] of values.entries()) {
    assert.deepEqual(
      outcome(() => payloadJson(value, marshal)),
      outcome(() => marshal.toWireJson(value)),
      `for value ${index}`,
    );
  }
});

Deno.test("payloadJson() refuses a function with RESULT_NOT_SERIALIZABLE", () => {
  assert.throws(
    () => payloadJson({ f: () => 1 }, marshal),
    (error: { code?: unknown }) => error.code === "RESULT_NOT_SERIALIZABLE",
  );
});
