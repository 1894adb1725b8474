/**
 * The browser leg of the malformed declaration table
 * (`fixtures/malformed_declarations.ts`, whose names, messages and most
 * reads `deno task bundle` writes to `dist/malformed_declarations.json`):
 * every row run in Chromium on the bundle's in-thread loader and on a pool
 * of one Web Worker, one page per runner kind. The page makes each
 * declaration with the bundled table's own `make()` (a getter, a Proxy or a
 * sparse list a billion long cannot cross as data), so the spec sends only
 * the row's name. Each row must get `DECLARATION_INVALID` with its exact
 * message, read no more often than the row allows, and leave the runner
 * running code; the last test of each kind shows the page ran every row of
 * its own table, so a row the JSON or this spec skipped fails.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type CordonPage,
  readBundleJson,
  testPerRunnerKind as test,
} from "./_fixture_page.ts";
// Type-only, so Node never loads the bundle's entry.
import type {
  DeclarationRunnerKind,
  MalformedDeclarationReport,
} from "./browser_entry.ts";

/** One row of `dist/malformed_declarations.json`. */
interface DeclarationEntry {
  name: string;
  /** The failure's exact message. */
  message: string;
  /** How often the declaration may be read. */
  reads: number;
}

const ENTRIES: readonly DeclarationEntry[] = readBundleJson<
  DeclarationEntry[]
>("malformed_declarations.json");

/** Runs one row on the page and asserts its answers and that the page raised no error. */
async function checkOnPage(
  cordonPage: CordonPage,
  entry: DeclarationEntry,
  kind: DeclarationRunnerKind,
): Promise<void> {
  const before = cordonPage.errors.length;
  const report: MalformedDeclarationReport = await cordonPage.page.evaluate(
    ({ name, kind }) =>
      // deno-lint-ignore no-explicit-any
      (globalThis as any).cordon.runMalformedDeclarationOnPage(
        name,
        kind,
        location.origin,
      ),
    { name: entry.name, kind },
  );
  assert.equal(report.name, entry.name);
  assert.deepEqual(report.actual, {
    code: "DECLARATION_INVALID",
    name: "DeclarationError",
    message: entry.message,
  });
  assert.ok(
    report.reads <= entry.reads,
    `read ${report.reads} times, at most ${entry.reads}`,
  );
  assert.deepEqual(report.after, { ok: true, value: 7 });
  assert.deepEqual(cordonPage.errors.slice(before), []);
}

/** Asserts the page ran every row of its bundled table on `kind`, in order. */
async function checkEveryRowRan(
  cordonPage: CordonPage,
  kind: DeclarationRunnerKind,
): Promise<void> {
  const { ran, table } = await cordonPage.page.evaluate((kind) => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    return {
      ran: cordon.malformedDeclarationsRun(kind) as string[],
      table: (cordon.malformedDeclarations() as { name: string }[]).map((
        row,
      ) => row.name),
    };
  }, kind);
  assert.deepEqual(ran, table);
  assert.equal(ran.length, ENTRIES.length);
}

test.describe("the malformed declaration table on the in-thread loader in Chromium", () => {
  for (const entry of ENTRIES) {
    test(entry.name, async ({ loaderPage }) => {
      await checkOnPage(loaderPage, entry, "loader");
    });
  }
  test("the page ran every row of the table", async ({ loaderPage }) => {
    await checkEveryRowRan(loaderPage, "loader");
  });
});

test.describe("the malformed declaration table on the pool's Web Worker in Chromium", () => {
  for (const entry of ENTRIES) {
    test(entry.name, async ({ poolPage }) => {
      await checkOnPage(poolPage, entry, "pool");
    });
  }
  test("the page ran every row of the table", async ({ poolPage }) => {
    await checkEveryRowRan(poolPage, "pool");
  });
});
