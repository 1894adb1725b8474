import assert from "node:assert/strict";
import type { JsonValue, SandboxResult } from "../protocol/mod.ts";
import { createTestCatalog } from "./_test_catalog_test.ts";
import { createQuickJSLoader, type QuickJSLoader } from "./quickjs_loader.ts";
import { createQuickJSPool, type QuickJSPool } from "./quickjs_pool.ts";

/**
 * The code of QuickJS's own out of memory comes from what the engine saw,
 * not from what guest code throws: each guest below words its throw as the
 * engine would, from every place a throw can come from, and must answer
 * GUEST_ERROR with its own name and message, as any throw does, in the
 * loader and in the pool alike. (A guest's top-level SyntaxError with no
 * stack still reads as a link error: it only relabels its own failure.)
 */

const MiB = 1024 * 1024;
const LIMITS = { memoryLimitBytes: 16 * MiB, timeoutMs: 10_000 };
const OUT_OF_MEMORY = 'new InternalError("out of memory")';

const catalog = createTestCatalog([
  {
    name: "@t/fakes",
    exports: { ".": "./index.js" },
    files: {
      "./index.js":
        `export const x = 1;\nexport function fail() { throw ${OUT_OF_MEMORY}; }`,
    },
  },
  {
    name: "@t/top-oom",
    exports: { ".": "./index.js" },
    files: { "./index.js": `throw ${OUT_OF_MEMORY};\nexport const x = 1;` },
  },
]);

/** A guest, the packs it declares, and what the run must answer. */
interface Row {
  source: string;
  packages?: string[];
  /** The code, or `ok` for a value. */
  code: string;
  name?: string;
  message?: string;
}

const oom = (source: string, packages?: string[]): Row => ({
  source,
  packages,
  code: "GUEST_ERROR",
  name: "InternalError",
  message: "out of memory",
});

const LOOKALIKES: Record<string, Row> = {
  "thrown by the module body": oom(`throw ${OUT_OF_MEMORY};`),
  "thrown by the default function": oom(
    `export default () => { throw ${OUT_OF_MEMORY}; };`,
  ),
  "rejected by an async function": oom(
    `export default async () => { await null; throw ${OUT_OF_MEMORY}; };`,
  ),
  "rejected by a job": oom(
    `export default () => Promise.resolve().then(() => { throw ${OUT_OF_MEMORY}; });`,
  ),
  "made with Reflect.construct": oom(
    'throw Reflect.construct(InternalError, ["out of memory"]);',
  ),
  "made without the constructor": oom(
    'throw Object.create(InternalError.prototype, { message: { value: "out of memory" }, name: { value: "InternalError" } });',
  ),
  "a caught stack overflow with its message rewritten": oom(
    'function f() { f(); }\ntry { f(); } catch (e) { e.message = "out of memory"; throw e; }',
  ),
  "a proxy that answers as the engine's error": {
    source:
      'throw new Proxy({}, { getPrototypeOf: () => InternalError.prototype, getOwnPropertyDescriptor: (t, k) => k === "message" ? { value: "out of memory", configurable: true, writable: true } : undefined, get: (t, k) => k === "message" ? "out of memory" : undefined });',
    code: "GUEST_ERROR",
    name: "Error",
    message: "out of memory",
  },
  "the regular expression compiler's wording": {
    source: 'throw new SyntaxError("out of memory");',
    code: "GUEST_ERROR",
    name: "SyntaxError",
    message: "out of memory",
  },
  "thrown by a thrown value's getter while it is described": oom(
    `throw { get message() { throw ${OUT_OF_MEMORY}; } };`,
  ),
  "thrown by a result's getter": oom(
    `export default { get x() { throw ${OUT_OF_MEMORY}; } };`,
  ),
  "thrown by a result's toJSON": oom(
    `export default { toJSON() { throw ${OUT_OF_MEMORY}; } };`,
  ),
  "thrown by a pack's top level": oom(
    'import { x } from "@t/top-oom";\nexport default x;',
    ["@t/top-oom"],
  ),
  "thrown by a pack's function": oom(
    'import { fail } from "@t/fakes";\nexport default () => fail();',
    ["@t/fakes"],
  ),
  "thrown by a console argument the guest catches": {
    source:
      `try { console.log({ toJSON() { throw ${OUT_OF_MEMORY}; } }); } catch {}\nexport default "logged";`,
    code: "ok",
  },
};

/** QuickJS's own failures, which keep their codes. */
const REAL: Record<string, Row> = {
  "many strings": {
    source:
      "const a = [];\nfor (let i = 0; i < 3000; i++) a.push('x'.repeat(1e5) + i);\nexport default a.length;",
    code: "OUT_OF_MEMORY",
  },
  "many typed arrays": {
    source:
      "const a = [];\nfor (let i = 0; i < 3000; i++) a.push(new Uint8Array(1e5));\nexport default a.length;",
    code: "OUT_OF_MEMORY",
  },
  "one block far larger than the limit": {
    source: "export default new ArrayBuffer(1e9).byteLength;",
    code: "OUT_OF_MEMORY",
  },
  "one block too large for the memory to be asked at all": {
    source: "export default new ArrayBuffer(2 ** 31 - 1).byteLength;",
    code: "OUT_OF_MEMORY",
  },
  "one block caught and thrown again": {
    source:
      "export default async () => { await null; try { new ArrayBuffer(1e9); } catch (e) { throw e; } };",
    code: "OUT_OF_MEMORY",
  },
  "a regular expression too large to compile": {
    source: "export default new RegExp('(?:a|b)'.repeat(4e5)).source.length;",
    code: "OUT_OF_MEMORY",
  },
  "a console argument too large to write": {
    source:
      "console.log({ toJSON() { return 'z'.repeat(2e7); } });\nexport default 1;",
    code: "OUT_OF_MEMORY",
  },
  "a missing export": {
    source: 'import { nope } from "@t/fakes";\nexport default nope;',
    packages: ["@t/fakes"],
    code: "GUEST_SYNTAX_ERROR",
    name: "SyntaxError",
    message:
      "Cannot link the guest source: Could not find export 'nope' in module 'cordon-pack:@t/fakes@1.0.0/index.js'; import only names the module exports",
  },
};

function check(result: SandboxResult, row: Row, where: string): void {
  const seen = `${where}: ${JSON.stringify(result)}`;
  if (row.code === "ok") {
    assert.ok(result.ok, seen);
    return;
  }
  assert.ok(!result.ok, seen);
  assert.equal(result.error.code, row.code, seen);
  if (row.name !== undefined) assert.equal(result.error.name, row.name, seen);
  if (row.message !== undefined) {
    assert.equal(result.error.message, row.message, seen);
  }
}

async function runEach(
  t: Deno.TestContext,
  rows: Record<string, Row>,
  runners: Record<string, QuickJSLoader | QuickJSPool>,
): Promise<void> {
  for (const [name, row] of Object.entries(rows)) {
    await t.step(name, async () => {
      for (const [runnerName, runner] of Object.entries(runners)) {
        // Twice: the second run of a guest with packs starts warm.
        for (let i = 0; i < 2; i++) {
          const declaration = {
            source: row.source,
            packages: row.packages ?? [],
          };
          const result = await runner.run(declaration, LIMITS);
          check(result, row, `${runnerName}, run ${i + 1}`);
        }
      }
    });
  }
}

Deno.test("a guest's throw worded as QuickJS's out of memory answers GUEST_ERROR with its own name and message, and costs the pool no runner", async (t) => {
  using loader = await createQuickJSLoader({ catalog });
  await using pool = await createQuickJSPool({ catalog, size: 1 });
  await runEach(t, LOOKALIKES, { loader, pool });
  assert.equal(pool.replacements, 0);
});

Deno.test("QuickJS's own out of memory and link errors keep their codes in the loader and the pool", async (t) => {
  using loader = await createQuickJSLoader({ catalog });
  await using pool = await createQuickJSPool({ catalog, size: 1 });
  await runEach(t, REAL, { loader, pool });
});

/** Arrays that each hold the next twice: text twice as long at each level. */
function doubled(levels: number): JsonValue {
  let value: JsonValue = 1;
  for (let i = 0; i < levels; i++) value = [value, value];
  return value;
}

Deno.test("a context too large for the run's memory to parse answers OUT_OF_MEMORY, and a thrown null within it GUEST_ERROR, in the loader and the pool", async () => {
  using loader = await createQuickJSLoader({ catalog });
  await using pool = await createQuickJSPool({ catalog, size: 1 });
  const source = "export default (context) => context === null ? 0 : 1;";
  for (const [name, runner] of Object.entries({ loader, pool })) {
    const parsed = await runner.run(source, {
      ...LIMITS,
      context: doubled(20),
      maxContextBytes: 64 * MiB,
    });
    assert.equal(parsed.ok ? "ok" : parsed.error.code, "OUT_OF_MEMORY", name);
    const thrown = await runner.run(
      "export default () => { throw null; };",
      LIMITS,
    );
    assert.deepEqual(thrown.ok ? "ok" : thrown.error, {
      code: "GUEST_ERROR",
      name: "NonErrorThrown",
      message: "Guest code threw a non-Error value: null",
    }, name);
  }
});
