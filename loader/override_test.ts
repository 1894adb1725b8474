import assert from "node:assert/strict";
import type { SandboxResult } from "../protocol/mod.ts";
import { createQuickJSLoader, type QuickJSLoader } from "./quickjs_loader.ts";
import { createTestCatalog } from "./_test_catalog_test.ts";
import * as cases from "../realm/_override_cases_test.ts";

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

/** Runs a module whose default export is a function with this body. */
function runBody(loader: QuickJSLoader, body: string): Promise<SandboxResult> {
  return loader.run({
    source: `export default function () {\n${body}\n}`,
    packages: [],
  });
}

Deno.test("createQuickJSLoader() lets guest code override inherited intrinsic properties on its own objects", async () => {
  using loader = await createQuickJSLoader({ catalog });
  assert.deepEqual(
    value(await runBody(loader, cases.OVERRIDES.body)),
    cases.OVERRIDES.expected,
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
  assert.deepEqual(
    value(await runBody(loader, cases.TAMED_ACCESSORS.body)),
    cases.TAMED_ACCESSORS.expected,
  );
});

Deno.test("createQuickJSLoader() refuses a write to a tamed intrinsic with a message that says what to do, and changes nothing in this run or the next", async () => {
  using loader = await createQuickJSLoader({ catalog });
  assert.deepEqual(
    value(await runBody(loader, cases.INTRINSIC_WRITES.body)),
    cases.INTRINSIC_WRITES.expected("property is not configurable"),
  );
  const uncaught = await runBody(loader, cases.UNCAUGHT_WRITE.body);
  assert.equal(uncaught.ok, false);
  if (!uncaught.ok) {
    assert.equal(uncaught.error.name, cases.UNCAUGHT_WRITE.expected.name);
    assert.equal(uncaught.error.message, cases.UNCAUGHT_WRITE.expected.message);
  }
  assert.deepEqual(
    value(await runBody(loader, cases.AFTER_WRITES.body)),
    cases.AFTER_WRITES.expected,
  );
});

Deno.test("createQuickJSLoader() lets library code find the global object as self, global or globalThis without the Function constructor", async () => {
  using loader = await createQuickJSLoader({ catalog });
  assert.deepEqual(
    value(await runBody(loader, cases.GLOBAL_NAMES.body)),
    cases.GLOBAL_NAMES.expected,
  );
});
