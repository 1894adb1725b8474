/**
 * The browser leg of the hostile guest table (`fixtures/hostile_guests.ts`,
 * whose names and per-runner answers `deno task bundle` writes to
 * `dist/hostile_cases.json`): every case run in Chromium on the in-thread
 * loader and on the pool's Web Worker runners, one page per runner kind,
 * with the answers the Deno QuickJS tiers give, and a probe after each case
 * that shows the next run sees nothing of it. While a guest on the pool
 * runs out its time, a timer of the page must keep firing; a runner the
 * pool terminated must be replaced by one that answers.
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
import type { HostileGuestReport, HostileRunnerKind } from "./browser_entry.ts";

/** One case of `dist/hostile_cases.json`. */
interface HostileEntry {
  name: string;
  /** The answers each runner may give; empty when it cannot run the case. */
  loader: { ok: boolean; code?: string }[];
  pool: { ok: boolean; code?: string }[];
}

const ENTRIES: readonly HostileEntry[] = readBundleJson<HostileEntry[]>(
  "hostile_cases.json",
);

/** A case the pool ends only by terminating its runner: one long built-in call. */
const KILLED_CASE = "one long built-in call over a huge array-like";
/** A case that answers at once, to show both runners answer after a kill. */
const QUICK_CASE = "throw null";

async function runOnPage(
  cordonPage: CordonPage,
  name: string,
  kind: HostileRunnerKind,
): Promise<HostileGuestReport> {
  // As JSON text: Playwright refuses to carry a value nested as deeply as
  // MAX_NESTING_DEPTH, which a case's expected answer may be.
  const text = await cordonPage.page.evaluate(
    async ({ name, kind }) =>
      JSON.stringify(
        // deno-lint-ignore no-explicit-any
        await (globalThis as any).cordon.runHostileGuest(
          name,
          kind,
          location.origin,
        ),
      ),
    { name, kind },
  );
  return JSON.parse(text) as HostileGuestReport;
}

/** Runs one case and asserts its report and that the page raised no error. */
async function checkOnPage(
  cordonPage: CordonPage,
  entry: HostileEntry,
  kind: HostileRunnerKind,
): Promise<HostileGuestReport> {
  const before = cordonPage.errors.length;
  const report = await runOnPage(cordonPage, entry.name, kind);
  assert.equal(report.name, entry.name);
  assert.equal(
    report.problem,
    null,
    `${entry.name}: expected ${JSON.stringify(report.expected)}, got ${
      JSON.stringify(report.actual)
    }`,
  );
  assert.deepEqual(cordonPage.errors.slice(before), []);
  return report;
}

function endsByTimeout(entry: HostileEntry, kind: HostileRunnerKind): boolean {
  return entry[kind].some((answer) => !answer.ok && answer.code === "TIMEOUT");
}

test.describe("the hostile guest table on the in-thread loader in Chromium", () => {
  for (const entry of ENTRIES) {
    // A case the loader cannot run says why in the table.
    if (entry.loader.length === 0) continue;
    test(entry.name, async ({ loaderPage }) => {
      await checkOnPage(loaderPage, entry, "loader");
    });
  }
});

test.describe("the hostile guest table on the pool's Web Workers in Chromium", () => {
  for (const entry of ENTRIES) {
    if (entry.pool.length === 0) continue;
    test(entry.name, async ({ poolPage }) => {
      const report = await checkOnPage(poolPage, entry, "pool");
      // A guest that runs out its time runs it out off the page's thread.
      if (endsByTimeout(entry, "pool")) {
        assert.ok(report.ticks > 0, "the page's timer never fired");
      }
    });
  }

  test("a runner terminated in a long built-in call is replaced by one that answers", async ({ poolPage }) => {
    const killed = await runOnPage(poolPage, KILLED_CASE, "pool");
    assert.equal(killed.problem, null);
    assert.ok(killed.replaced >= 1, "no runner was replaced");
    assert.ok(killed.ticks > 0, "the page's timer never fired");
    // As many runs at once as the pool has runners: the replacement answers too.
    const reports: HostileGuestReport[] = await poolPage.page.evaluate(
      (name) =>
        Promise.all([1, 2].map(() =>
          // deno-lint-ignore no-explicit-any
          (globalThis as any).cordon.runHostileGuest(
            name,
            "pool",
            location.origin,
          )
        )),
      QUICK_CASE,
    );
    assert.deepEqual(reports.map((report) => report.problem), [null, null]);
  });
});
