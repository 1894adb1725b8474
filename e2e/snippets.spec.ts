/**
 * The browser leg of the shared snippet set (`fixtures/snippets.ts`, whose
 * names and expected outcomes `deno task bundle` writes to
 * `dist/snippets.json`): every snippet run in Chromium on the bundle's
 * in-thread QuickJS loader and on a pool of one Web Worker, with its
 * context, time limit and abort timing, and compared as the Deno parity
 * test compares the worker, process and QuickJS tiers (`snippetOutcomeOf`):
 * the code always, the name and message where the snippet pins them, the
 * value, the console lines and `logsTruncated`.
 *
 * @module
 */

import {
  type CaseEntry,
  checkCaseInPage,
  readBundleJson,
  test,
} from "./_fixture_page.ts";

const SNIPPETS: readonly CaseEntry[] = readBundleJson<CaseEntry[]>(
  "snippets.json",
);

test.describe("the shared snippets on the in-thread loader in Chromium", () => {
  for (const entry of SNIPPETS) {
    test(entry.name, async ({ cordonPage }) => {
      await checkCaseInPage(cordonPage, entry, "runSnippetCase");
    });
  }
});

test.describe("the shared snippets on the pool's Web Worker in Chromium", () => {
  for (const entry of SNIPPETS) {
    test(entry.name, async ({ cordonPage }) => {
      await checkCaseInPage(cordonPage, entry, "runSnippetCaseInPool");
    });
  }
});
