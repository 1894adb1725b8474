/**
 * The browser bundle's engines restore the hardened image. `deno bundle`
 * reprints the realm's functions, whose text the hardening scripts are, so
 * `deno task bundle` stamps the bundle's image with the digest of the
 * bundle's own scripts (tools/stamp_hardened_image.ts); without it no
 * engine of the bundle restores the image.
 *
 * Emscripten writes the page's `navigator.language` into the engine's
 * memory (as LANG) before the fork point, so the fork digest matches only
 * on a page with the language the image was made under, which the image
 * records: these pages take that language, or another one.
 *
 * @module
 */

import { readFileSync } from "node:fs";
import { expect, test } from "@playwright/test";
import { openBundlePage } from "./_fixture_page.ts";

/**
 * The `hostLanguage` of the image `dist/cordon.js` holds, read from its
 * text: the bundle is a page's module, which this Node process does not
 * evaluate.
 */
function bundledImageLanguage(): string {
  const text = readFileSync(
    new URL("../dist/cordon.js", import.meta.url),
    "utf8",
  );
  const found = /\bhostLanguage: ("[^"]*"|null)/.exec(text);
  const language = found === null ? null : JSON.parse(found[1]!);
  if (language === null) {
    throw new Error(
      "dist/cordon.js holds no image made where navigator.language had a value",
    );
  }
  return language;
}

const MAKER_LANGUAGE = bundledImageLanguage();

test.describe("on a page with the language the image was made under", () => {
  test.use({ locale: MAKER_LANGUAGE });

  test("the browser bundle's loader restores the hardened image and gives the fixture table's outcomes in Chromium", async ({ page }) => {
    const { errors, loadError } = await openBundlePage(page);
    expect(loadError).toBeNull();
    const outcome = await page.evaluate(async () => {
      // deno-lint-ignore no-explicit-any
      const cordon = (globalThis as any).cordon;
      const before = cordon.restoredEngineCount();
      const loader = await cordon.createQuickJSLoader({
        catalog: cordon.createRemoteCatalog({ baseUrl: location.origin }),
      });
      const restored = cordon.restoredEngineCount() - before;
      const failed: string[] = [];
      try {
        for (const fixtureCase of cordon.FIXTURE_CASES) {
          const report = await cordon.checkCase(loader, fixtureCase);
          if (!report.pass) failed.push(fixtureCase.name);
        }
      } finally {
        loader[Symbol.dispose]();
      }
      return {
        language: navigator.language,
        restored,
        cases: cordon.FIXTURE_CASES.length,
        failed,
      };
    });
    expect(outcome.language).toBe(MAKER_LANGUAGE);
    expect(outcome.restored).toBe(1);
    expect(outcome.cases).toBeGreaterThan(0);
    expect(outcome.failed).toEqual([]);
    expect(errors).toEqual([]);
  });
});

test.describe("on a page with another language", () => {
  test.use({ locale: "fr-CA" });

  test("the browser bundle's loader hardens its engine itself where the memory at the fork point differs", async ({ page }) => {
    const { loadError } = await openBundlePage(page);
    expect(loadError).toBeNull();
    const outcome = await page.evaluate(async () => {
      // deno-lint-ignore no-explicit-any
      const cordon = (globalThis as any).cordon;
      const before = cordon.restoredEngineCount();
      const loader = await cordon.createQuickJSLoader({
        catalog: cordon.createRemoteCatalog({ baseUrl: location.origin }),
      });
      try {
        const result = await loader.run({ source: "export default 6 * 7;" });
        return {
          restored: cordon.restoredEngineCount() - before,
          value: result.ok ? result.value : result.error.code,
        };
      } finally {
        loader[Symbol.dispose]();
      }
    });
    expect(outcome).toEqual({ restored: 0, value: 42 });
  });
});
