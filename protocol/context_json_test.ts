import assert from "node:assert/strict";
import { contextJson, readContextJson } from "./context_json.ts";
import { MAX_NESTING_DEPTH } from "./nesting.ts";

Deno.test("contextJson() writes JSON data as JSON.stringify does", () => {
  assert.equal(contextJson("run", undefined), undefined);
  assert.equal(contextJson("run", null), "null");
  assert.equal(
    contextJson("run", { a: [1, "b", true, null], at: new Date(0) }),
    '{"a":[1,"b",true,null],"at":"1970-01-01T00:00:00.000Z"}',
  );
  assert.equal(contextJson("run", { n: NaN, u: undefined }), '{"n":null}');
});

Deno.test("contextJson() refuses what JSON.stringify would drop or cannot write, naming why", () => {
  const cases: [unknown, string][] = [
    [() => 1, "it holds a function"],
    [{ deep: [{ f() {} }] }, "it holds a function"],
    [{ s: Symbol("x") }, "it holds a symbol"],
    [Symbol("x"), "it holds a symbol"],
    [[2n], "it holds a BigInt"],
    [{
      toJSON() {
        throw new Error("no\nsecond line");
      },
    }, "writing it failed: no"],
    [
      { toJSON: () => undefined },
      "its toJSON() answers undefined, which writes no JSON text",
    ],
  ];
  for (const [context, reason] of cases) {
    const message =
      `Cannot run the guest: context must be JSON data, but ${reason}`;
    assert.throws(() => contextJson("run the guest", context), {
      name: "TypeError",
      message,
    });
    assert.throws(() => readContextJson("run the guest", context, 1024), {
      name: "TypeError",
      message,
    });
  }
});

function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

Deno.test("contextJson() takes a context nested MAX_NESTING_DEPTH deep and refuses one level more, naming the cap", () => {
  assert.equal(
    contextJson("run", nested(MAX_NESTING_DEPTH)),
    "[".repeat(MAX_NESTING_DEPTH) + "1" + "]".repeat(MAX_NESTING_DEPTH),
  );
  for (const depth of [MAX_NESTING_DEPTH + 1, 20_000, 200_000]) {
    assert.throws(() => contextJson("run the guest", nested(depth)), {
      name: "TypeError",
      message:
        `Cannot run the guest: context must be JSON data, but it is nested deeper than ${MAX_NESTING_DEPTH} levels; pass flatter data`,
    });
  }
});

Deno.test("contextJson() counts the levels of what toJSON answers and of siblings apart", () => {
  const wide = {
    a: nested(MAX_NESTING_DEPTH - 1),
    b: nested(MAX_NESTING_DEPTH - 1),
  };
  assert.ok(contextJson("run", wide)!.length > 0);
  assert.throws(
    () =>
      contextJson("run", { a: { toJSON: () => nested(MAX_NESTING_DEPTH) } }),
    /nested deeper than/,
  );
});

Deno.test("readContextJson() refuses a typed array or a String object past the bound before the engine lists or writes it whole", () => {
  // A billion entries listed as keys, or a String's 100 million
  // characters six times over as escapes, would take gigabytes.
  const cases: unknown[] = [
    new Uint8Array(1e9),
    { data: new Float64Array(1e8) },
    new String("\u0000".repeat(1e8)),
    [new String("x".repeat(600)), new String("x".repeat(600))],
  ];
  for (const context of cases) {
    const read = readContextJson("run", context, 1024);
    assert.equal(read.ok ? "" : read.error.code, "DECLARATION_INVALID");
  }
  assert.deepEqual(readContextJson("run", new Uint8Array(2), 1024), {
    ok: true,
    json: '{"0":0,"1":0}',
  });
  assert.deepEqual(readContextJson("run", [new String("ab")], 1024), {
    ok: true,
    json: '["ab"]',
  });
});

Deno.test("readContextJson() counts a String object whose own toString or Symbol.toPrimitive gives its text by that text, not by the string it holds", () => {
  // JSON.stringify writes ToString of a String object, which runs these.
  const held = "x".repeat(100);
  const cases: [unknown, string][] = [
    [Object.assign(new String(held), { toString: () => "a" }), '"a"'],
    [[Object.assign(new String(held), { toString: () => "a" })], '["a"]'],
    [
      {
        k: Object.assign(new String(held), { [Symbol.toPrimitive]: () => "" }),
      },
      '{"k":""}',
    ],
  ];
  for (const [context, json] of cases) {
    assert.equal(JSON.stringify(context), json);
    const bytes = new TextEncoder().encode(json).length;
    assert.deepEqual(readContextJson("run", context, bytes), {
      ok: true,
      json,
    });
    const refused = readContextJson("run", context, bytes - 1);
    assert.equal(refused.ok ? "" : refused.error.code, "DECLARATION_INVALID");
  }
  class Text extends String {}
  class Shown extends String {
    override toString() {
      return "a";
    }
  }
  assert.deepEqual(readContextJson("run", [new Shown(held)], 5), {
    ok: true,
    json: '["a"]',
  });
  // Without such a method the string it holds is what is written, and a
  // large one is still refused before the engine writes it.
  const plain = readContextJson(
    "run",
    [new String(held), new Text(held)],
    1024,
  );
  assert.deepEqual(plain, { ok: true, json: `["${held}","${held}"]` });
  const large = readContextJson("run", [new Text("\u0000".repeat(1e8))], 1024);
  assert.equal(large.ok ? "" : large.error.code, "DECLARATION_INVALID");
});
