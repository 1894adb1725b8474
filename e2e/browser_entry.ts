// This module is browser compatible.

/**
 * The entry of the browser bundle (`deno task bundle` writes it to
 * `dist/cordon.js`, one ESM file): the QuickJS loader, the remote catalog,
 * the fixture table and its comparison helper, and
 * {@linkcode runFixtureCase} for the Playwright leg. A browser app bundles
 * its own entry the same way, importing `@cordon/cordon/loader` and
 * `@cordon/cordon/catalog/remote`.
 *
 * @module
 */

import { createRemoteCatalog } from "../catalog/remote_catalog.ts";
import { createQuickJSLoader, type QuickJSLoader } from "../loader/mod.ts";
import { type CaseReport, checkCase, FIXTURE_CASES } from "../fixtures/mod.ts";

export * from "../catalog/remote_catalog.ts";
export * from "../loader/mod.ts";
export * from "../fixtures/mod.ts";
export { CordonError, ERROR_CODES } from "../protocol/mod.ts";

const loaders = new Map<string, Promise<QuickJSLoader>>();

/**
 * Runs one case of the fixture table through the QuickJS loader and a
 * remote catalog over the delivery server at `baseUrl`, and compares it
 * with the case's expectation. One loader and catalog per `baseUrl` serve
 * every case of the page, as one loader serves every case of the Deno legs.
 *
 * @param name The case's name.
 * @param baseUrl The delivery server, usually `location.origin`.
 * @returns The report: pass, expected and actual.
 * @throws {RangeError} When no case has this name.
 */
export async function runFixtureCase(
  name: string,
  baseUrl: string,
): Promise<CaseReport> {
  const fixtureCase = FIXTURE_CASES.find((entry) => entry.name === name);
  if (fixtureCase === undefined) {
    throw new RangeError(
      `No fixture case is named ${
        JSON.stringify(name)
      }: rebuild the bundle with "deno task bundle"`,
    );
  }
  let loader = loaders.get(baseUrl);
  if (loader === undefined) {
    loader = createQuickJSLoader({
      catalog: createRemoteCatalog({ baseUrl }),
    });
    loaders.set(baseUrl, loader);
  }
  return checkCase(await loader, fixtureCase);
}
