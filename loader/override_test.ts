import assert from "node:assert/strict";
import type { SandboxResult } from "../protocol/mod.ts";
import { createQuickJSLoader } from "./quickjs_loader.ts";
import { createTestCatalog } from "./_test_catalog_test.ts";
import {
  AFTER_WRITES,
  GLOBAL_NAMES,
  INTRINSIC_WRITES,
  OVERRIDES,
  TAMED_ACCESSORS,
  UNCAUGHT_WRITE,
} from "../realm/_override_cases_test.ts";

const catalog = createTestCatalog([
  {
    name: "@t/stack",
    exports: { ".": "./index.js" },
    files: {
      "./index.js": `export function Stack() {}
Stack.prototype = Object.create(Array.prototype);
Stack.prototype.constructor = Stack;
Stack.prototype.push = function (item) { this.top = item; };
Stack.prototype.peek = function () { return this.top; };`,
    },
  },
]);

function value(result: SandboxResult): unknown {
  assert.equal(result.ok, true, JSON.stringify(result));
  return result.ok ? result.value : undefined;
}

/** A module whose default export is a function with this body. */
function sourceOf(body: string): string {
  return `export default function () {\n${body}\n}`;
}

Deno.test("createQuickJSLoader() lets guest code override inherited intrinsic properties on its own objects", async () => {
  using loader = await createQuickJSLoader({ catalog });
  assert.deepEqual(
    value(await loader.run({ source: sourceOf(OVERRIDES.body), packages: [] })),
    OVERRIDES.expected,
  );
});

Deno.test("createQuickJSLoader() lets pack code override an inherited constructor at module level", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const result = await loader.run({
    source: `import { Stack } from "@t/stack";
const stack = new Stack();
stack.push("a");
stack.push("b");
export default [stack.peek(), stack.constructor === Stack, Array.prototype.constructor === Array];`,
    packages: ["@t/stack"],
  });
  assert.deepEqual(value(result), ["b", true, true]);
});

Deno.test("createQuickJSLoader() makes every tamed intrinsic property an accessor that defines an own property on a derived object", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const result = await loader.run({
    source: sourceOf(TAMED_ACCESSORS.body),
    packages: [],
  });
  assert.deepEqual(value(result), TAMED_ACCESSORS.expected);
});

Deno.test("createQuickJSLoader() refuses a write to a tamed intrinsic with a message that says what to do, and changes nothing in this run or the next", async () => {
  using loader = await createQuickJSLoader({ catalog });
  assert.deepEqual(
    value(
      await loader.run({
        source: sourceOf(INTRINSIC_WRITES.body),
        packages: [],
      }),
    ),
    INTRINSIC_WRITES.expected("property is not configurable"),
  );
  const uncaught = await loader.run({
    source: sourceOf(UNCAUGHT_WRITE.body),
    packages: [],
  });
  assert.equal(uncaught.ok, false);
  if (!uncaught.ok) {
    assert.equal(uncaught.error.name, UNCAUGHT_WRITE.expected.name);
    assert.equal(uncaught.error.message, UNCAUGHT_WRITE.expected.message);
  }
  const next = await loader.run({
    source: sourceOf(AFTER_WRITES.body),
    packages: [],
  });
  assert.deepEqual(value(next), AFTER_WRITES.expected);
});

Deno.test("createQuickJSLoader() lets library code find the global object as self, global or globalThis without the Function constructor", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const result = await loader.run({
    source: sourceOf(GLOBAL_NAMES.body),
    packages: [],
  });
  assert.deepEqual(value(result), GLOBAL_NAMES.expected);
});
