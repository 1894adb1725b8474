import assert from "node:assert/strict";
import { contextJson } from "./context_json.ts";

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
  ];
  for (const [context, reason] of cases) {
    assert.throws(() => contextJson("run the guest", context), {
      name: "TypeError",
      message: `Cannot run the guest: context must be JSON data, but ${reason}`,
    });
  }
});
