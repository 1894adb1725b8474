/**
 * The browser leg of the fixture table: one Playwright test per case, each
 * run in Chromium through the bundle's QuickJS loader and remote catalog
 * against the page server's delivery routes, and compared with the same
 * expected data `deno test` uses (`dist/cases.json`, written from
 * `fixtures/cases.ts` by `deno task bundle`): codes and messages exactly.
 *
 * @module
 */

import { CASES, checkCaseInPage, test } from "./_fixture_page.ts";

for (const entry of CASES) {
  test(entry.name, async ({ cordonPage }) => {
    await checkCaseInPage(cordonPage, entry, "runFixtureCase");
  });
}
