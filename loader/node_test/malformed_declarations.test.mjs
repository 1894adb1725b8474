// The malformed declaration table (fixtures/malformed_declarations.ts) on
// Node, on the Node build's in-thread loader and on its pool of one
// worker_threads runner (`deno task build:node` writes the build and the
// table to dist/node/), as sandbox/declaration_parity_test.ts runs it in
// Deno and e2e/malformed_declarations.spec.ts in Chromium: each row's
// declaration is made here by the table's own `make()` (a getter, a Proxy or
// a sparse list a billion long is this thread's own object), must get
// DECLARATION_INVALID with the row's exact message, be read no more often
// than the row allows and leave the runner running code. The last test of
// each runner shows it ran every row, so a row skipped here fails.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import vm from "node:vm";
import {
  createQuickJSLoader,
  createQuickJSPool,
  EMPTY_CATALOG,
  malformedDeclarations,
  runMalformedDeclaration,
  RUNNER_URL,
} from "./_node_pool.mjs";

const TABLE = malformedDeclarations();

/** Declares one test per row on the runner `open()` makes, and the count after them. */
function declareTable(open) {
  let runner;
  const ran = [];
  before(async () => {
    runner = await open();
  });
  // The pool is disposed asynchronously, the in-thread loader at once.
  after(() =>
    Symbol.asyncDispose in runner
      ? runner[Symbol.asyncDispose]()
      : runner[Symbol.dispose]()
  );

  for (const row of TABLE) {
    test(row.name, async () => {
      const report = await runMalformedDeclaration(runner, row);
      ran.push(row.name);
      assert.deepEqual(report.actual, {
        code: "DECLARATION_INVALID",
        name: "DeclarationError",
        message: row.message,
      });
      assert.ok(
        report.reads <= row.reads,
        `read ${report.reads} times, at most ${row.reads}`,
      );
      assert.deepEqual(report.after, { ok: true, value: 7 });
    });
  }

  test("every row of the table ran", () => {
    assert.deepEqual(ran, TABLE.map((row) => row.name));
  });
}

describe("the malformed declaration table on the Node build's in-thread loader", () => {
  declareTable(() => createQuickJSLoader({ catalog: EMPTY_CATALOG }));
});

describe("the malformed declaration table on the Node build's pool of worker_threads runners", () => {
  declareTable(() =>
    createQuickJSPool({
      catalog: EMPTY_CATALOG,
      size: 1,
      isolation: "worker",
      runnerUrl: RUNNER_URL,
    })
  );
});

test("a declaration made in another node:vm realm is refused in the words one made here is, its error's message read once", async () => {
  const made = vm.runInNewContext(`
    const error = new Error("x");
    let reads = 0;
    Object.defineProperty(error, "message", {
      get() { reads++; return "trap"; },
    });
    class Record { source = "export default 1;"; }
    ({
      throwing: { get source() { throw error; } },
      map: { source: "export default 1;", packages: new Map() },
      record: new Record(),
      reads: () => reads,
    })
  `);
  const loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
  const messageOf = async (declaration) => {
    const result = await loader.run(declaration);
    return result.ok ? "accepted" : result.error.message;
  };
  try {
    const remedy =
      "pass { source, packages } with pack names or { specifier } objects";
    assert.equal(
      await messageOf(made.throwing),
      `The declaration is invalid at source: Cannot be read: it threw trap; ${remedy}`,
    );
    assert.equal(made.reads(), 1);
    assert.equal(
      await messageOf(made.map),
      `The declaration is invalid at packages: Invalid input: expected array, received Map; ${remedy}`,
    );
    assert.equal(
      await messageOf(made.record),
      `The declaration is invalid at the declaration: Invalid input: expected object, received an object of class Record; ${remedy}`,
    );
  } finally {
    loader[Symbol.dispose]();
  }
});
