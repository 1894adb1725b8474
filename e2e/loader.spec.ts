/**
 * The browser leg of the fixture table: one Playwright test per case, each
 * run in Chromium through the bundle's QuickJS loader and remote catalog
 * against the page server's delivery routes, and compared with the same
 * expected data `deno test` uses (`dist/cases.json`, written from
 * `fixtures/cases.ts` by `deno task bundle`): codes and messages exactly.
 *
 * @module
 */

import { expect, type Page, test as base } from "@playwright/test";
import { readFileSync } from "node:fs";

interface CaseEntry {
  name: string;
  expect: unknown;
}

interface CaseReport {
  name: string;
  pass: boolean;
  expected: unknown;
  actual: unknown;
}

function readCases(): CaseEntry[] {
  const file = new URL("../dist/cases.json", import.meta.url);
  try {
    return JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new Error(
      `Cannot read dist/cases.json: ${error}; run "deno task bundle" first`,
    );
  }
}

const CASES = readCases();

/** One page per worker, so one loader serves every case, as in Deno. */
const test = base.extend<
  Record<string, never>,
  { cordonPage: { page: Page; errors: string[] } }
>({
  cordonPage: [async ({ browser }, use, workerInfo) => {
    const baseURL = workerInfo.project.use.baseURL;
    const page = await browser.newPage({ baseURL });
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(String(error)));
    await page.goto("/");
    await page.waitForFunction(() =>
      (globalThis as { cordonSettled?: boolean }).cordonSettled === true
    );
    const loadError = await page.evaluate(() =>
      (globalThis as { cordonLoadError?: string }).cordonLoadError ?? null
    );
    if (loadError !== null) throw new Error(loadError);
    await use({ page, errors });
    await page.close();
  }, { scope: "worker" }],
});

for (const entry of CASES) {
  test(entry.name, async ({ cordonPage }) => {
    const { page, errors } = cordonPage;
    const before = errors.length;
    const report: CaseReport = await page.evaluate(
      ({ name }) =>
        // deno-lint-ignore no-explicit-any
        (globalThis as any).cordon.runFixtureCase(name, location.origin),
      { name: entry.name },
    );
    expect(report.name).toBe(entry.name);
    expect(report.actual).toStrictEqual(entry.expect);
    expect(report.pass).toBe(true);
    expect(errors.slice(before)).toEqual([]);
  });
}
