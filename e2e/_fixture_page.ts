/**
 * What the browser leg's fixture specs share: the fixture table's names and
 * expectations (`dist/cases.json`, written from `fixtures/cases.ts` by
 * `deno task bundle`, since the specs run in Node and cannot import the
 * table's TypeScript), a `test` whose `cordonPage` is one page per
 * Playwright worker with the bundle loaded, and {@linkcode checkCaseInPage},
 * which runs one case (of the fixture table, or of the shared snippets in
 * `dist/snippets.json`) on that page and asserts its report.
 *
 * @module
 */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { type Browser, type Page, test as base } from "@playwright/test";

/** One case of `dist/cases.json`. */
export interface CaseEntry {
  /** The case's name, a sentence. */
  name: string;
  /** The outcome every leg must produce. */
  expect: unknown;
}

/**
 * What the page's `runFixtureCase`, `runFixtureCaseInPool`,
 * `runSnippetCase` and `runSnippetCaseInPool` answer.
 */
export interface CaseReport {
  /** The case's name. */
  name: string;
  /** Whether the outcome matched the expectation, by the page's comparison. */
  pass: boolean;
  /** The case's expectation. */
  expected: unknown;
  /** The run's outcome, with the fields the expectation checks. */
  actual: unknown;
}

/** The page of a Playwright worker, and every uncaught error it raised. */
export interface CordonPage {
  /** The page, with the bundle loaded as `globalThis.cordon`. */
  page: Page;
  /** The page's uncaught errors so far, in order. */
  errors: string[];
}

/**
 * How the page runs a fixture case (in-thread, on the pool's workers, or
 * over a staged tree) or a shared snippet (in-thread, or on a pool's worker).
 */
export type CaseEntryPoint =
  | "runFixtureCase"
  | "runFixtureCaseInPool"
  | "runFixtureCaseStaged"
  | "runSnippetCase"
  | "runSnippetCaseInPool";

/**
 * Reads a JSON file that `deno task bundle` wrote into `dist/`, with a
 * message that says how to make it when it is missing.
 */
export function readBundleJson<T>(name: string): T {
  const file = new URL(`../dist/${name}`, import.meta.url);
  try {
    return JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new Error(
      `Cannot read dist/${name}: ${error}; run "deno task bundle" first`,
    );
  }
}

/** Every fixture case, in table order. */
export const CASES: readonly CaseEntry[] = Object.freeze(
  readBundleJson<CaseEntry[]>("cases.json"),
);

/** What {@linkcode openBundlePage} saw while the page loaded. */
export interface OpenedPage {
  /** The page's uncaught errors, kept up to date after it returns. */
  errors: string[];
  /** Why the bundle failed to load (`cordonLoadError`), or `null`. */
  loadError: string | null;
}

/**
 * Opens a page of the bundle on `page`, collecting its uncaught errors,
 * and waits until the page says it settled (`cordonSettled`).
 *
 * @param page A page whose `baseURL` is the page server.
 * @param path The page: `/`, or `/csp.html` for a strict Content-Security-Policy.
 * @returns The page's errors and its load error, if any.
 */
export async function openBundlePage(
  page: Page,
  path = "/",
): Promise<OpenedPage> {
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  await page.goto(path);
  await page.waitForFunction(() =>
    (globalThis as { cordonSettled?: boolean }).cordonSettled === true
  );
  const loadError = await page.evaluate(() =>
    (globalThis as { cordonLoadError?: string }).cordonLoadError ?? null
  );
  return { errors, loadError };
}

/**
 * Opens a page of `baseURL` with the bundle loaded, hands it to `use` for a
 * Playwright worker's life and closes it after: what every worker-scoped
 * page fixture of the browser leg does.
 */
export async function withBundlePage(
  browser: Browser,
  baseURL: string | undefined,
  use: (page: CordonPage) => Promise<void>,
): Promise<void> {
  const page = await browser.newPage({ baseURL });
  const { errors, loadError } = await openBundlePage(page);
  if (loadError !== null) throw new Error(loadError);
  await use({ page, errors });
  await page.close();
}

/**
 * Playwright's `test` with a worker-scoped `cordonPage`: one page per
 * worker, so one loader and one pool serve every case, as in Deno.
 */
export const test = base.extend<
  Record<string, never>,
  { cordonPage: CordonPage }
>({
  cordonPage: [
    ({ browser }, use, workerInfo) =>
      withBundlePage(browser, workerInfo.project.use.baseURL, use),
    { scope: "worker" },
  ],
});

/**
 * Playwright's `test` with two worker-scoped pages, `loaderPage` and
 * `poolPage`: one page per runner kind, so a table's runs on the in-thread
 * loader and on the pool never share a page's state.
 */
export const testPerRunnerKind = base.extend<
  Record<string, never>,
  { loaderPage: CordonPage; poolPage: CordonPage }
>({
  loaderPage: [
    ({ browser }, use, workerInfo) =>
      withBundlePage(browser, workerInfo.project.use.baseURL, use),
    { scope: "worker" },
  ],
  poolPage: [
    ({ browser }, use, workerInfo) =>
      withBundlePage(browser, workerInfo.project.use.baseURL, use),
    { scope: "worker" },
  ],
});

/**
 * Runs one fixture case or snippet on the page through `entryPoint` and
 * asserts that it produced exactly the expected outcome (codes and messages
 * included) and that the page raised no uncaught error meanwhile.
 *
 * @param cordonPage The worker's page.
 * @param entry The case.
 * @param entryPoint The bundle's function that runs it.
 * @returns When the case passed.
 * @throws {assert.AssertionError} When the outcome differs or the page raised an error.
 */
export async function checkCaseInPage(
  cordonPage: CordonPage,
  entry: CaseEntry,
  entryPoint: CaseEntryPoint,
): Promise<void> {
  const { page, errors } = cordonPage;
  const before = errors.length;
  // The outcome comes back as JSON text: Playwright's own copy of a page's
  // value assigns each key, so an own "__proto__" key (which a run's JSON
  // answer may hold) became the copy's prototype and left it empty.
  const reportJson: string = await page.evaluate(
    async ({ name, entryPoint }) =>
      JSON.stringify(
        // deno-lint-ignore no-explicit-any
        await (globalThis as any).cordon[entryPoint](name, location.origin),
      ),
    { name: entry.name, entryPoint },
  );
  const report: CaseReport = JSON.parse(reportJson);
  assert.equal(report.name, entry.name);
  assert.deepEqual(report.actual, entry.expect);
  assert.equal(report.pass, true);
  assert.deepEqual(errors.slice(before), []);
}
