/**
 * The browser leg on a page that is not a secure context: the page server
 * (and nginx over a staged tree) reached as `http://insecure.test:<port>`,
 * a name Chromium maps to 127.0.0.1, so the page has no Web Crypto
 * (`crypto.subtle`), as a site served over plain http meets it. Catalogs
 * that must check digests refuse with `WEB_CRYPTO_UNAVAILABLE`, which says
 * to serve the page over https or from localhost, and never run a module
 * they could not check; runs without packs work, in engines hardened as
 * on a secure page.
 *
 * @module
 */

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Page, test } from "@playwright/test";
import config from "./playwright.config.ts";
import { openBundlePage } from "./_fixture_page.ts";
import { stageFixturePacks, startNginx, type StaticServer } from "./nginx.ts";

const INSECURE_HOST = "insecure.test";

const launchOptions = config.use?.launchOptions ?? {};
test.use({
  launchOptions: {
    ...launchOptions,
    args: [
      ...(launchOptions.args ?? []),
      `--host-resolver-rules=MAP ${INSECURE_HOST} 127.0.0.1`,
    ],
  },
});

const WEB_CRYPTO_MESSAGE =
  /^Cannot check the digests of sandbox modules: this page has no Web Crypto \(crypto\.subtle\), which browsers give only to secure contexts; serve the page over https, or from localhost while developing$/;

/** The same origin as `baseURL`, by a name that is not a secure context. */
function insecureOrigin(baseURL: string): string {
  const url = new URL(baseURL);
  url.hostname = INSECURE_HOST;
  return url.origin;
}

async function openInsecurePage(page: Page, origin: string) {
  const opened = await openBundlePage(page, `${origin}/`);
  assert.equal(opened.loadError, null);
  const secure = await page.evaluate(() => ({
    isSecureContext,
    subtle: typeof crypto.subtle,
  }));
  assert.deepEqual(secure, { isSecureContext: false, subtle: "undefined" });
  return opened;
}

test.describe("a page that is not a secure context", () => {
  let work: string | undefined;
  let nginx: StaticServer | undefined;

  test.afterAll(async () => {
    await nginx?.stop();
    if (work !== undefined) await rm(work, { recursive: true, force: true });
  });

  test("the remote catalog, the loader and the pool refuse packs with WEB_CRYPTO_UNAVAILABLE and run no module", async ({ page, baseURL }) => {
    const { errors } = await openInsecurePage(page, insecureOrigin(baseURL!));
    const outcome = await page.evaluate(async () => {
      // deno-lint-ignore no-explicit-any
      const cordon = (globalThis as any).cordon;
      const declaration = {
        source:
          'console.log("guest code ran");\nimport { add } from "@cordon-fixtures/math";\nexport default add(1, 2);',
        packages: ["@cordon-fixtures/math"],
      };
      const catalog = () =>
        cordon.createRemoteCatalog({ baseUrl: location.origin });
      let prefetch: unknown;
      try {
        await catalog().prefetch(declaration);
        prefetch = "prefetched";
      } catch (error) {
        const { name, code, message } = error as Record<string, string>;
        prefetch = { name, code, message };
      }
      const loader = await cordon.createQuickJSLoader({ catalog: catalog() });
      const pool = await cordon.createQuickJSPool({
        catalog: catalog(),
        size: 1,
        isolation: "worker",
        runnerUrl: new URL("/dist/cordon-runner.js", location.origin),
      });
      try {
        return {
          prefetch,
          loader: await loader.run(declaration),
          pool: await pool.run(declaration),
        };
      } finally {
        loader[Symbol.dispose]();
        await pool[Symbol.asyncDispose]();
      }
    });
    assert.equal(typeof outcome.prefetch, "object", String(outcome.prefetch));
    const prefetch = outcome.prefetch as Record<string, string>;
    assert.equal(prefetch.name, "CordonError");
    assert.equal(prefetch.code, "WEB_CRYPTO_UNAVAILABLE");
    assert.match(prefetch.message, WEB_CRYPTO_MESSAGE);
    for (const result of [outcome.loader, outcome.pool]) {
      assert.equal(result.ok, false, JSON.stringify(result));
      assert.equal(result.error.code, "WEB_CRYPTO_UNAVAILABLE");
      assert.match(result.error.message, WEB_CRYPTO_MESSAGE);
      assert.deepEqual(result.logs, []);
    }
    assert.deepEqual(errors, []);
  });

  test("the staged catalog refuses packs with WEB_CRYPTO_UNAVAILABLE and runs no module", async ({ page, baseURL }) => {
    work = await mkdtemp(join(tmpdir(), "cordon-insecure-e2e-"));
    const tree = join(work, "tree");
    stageFixturePacks(tree);
    nginx = await startNginx({ treeDir: tree });
    const { errors } = await openInsecurePage(page, insecureOrigin(baseURL!));
    const result = await page.evaluate(async (indexUrl) => {
      // deno-lint-ignore no-explicit-any
      const cordon = (globalThis as any).cordon;
      const loader = await cordon.createQuickJSLoader({
        catalog: cordon.createStagedCatalog({ indexUrl }),
      });
      try {
        return await loader.run({
          source:
            'console.log("guest code ran");\nimport { add } from "@cordon-fixtures/math";\nexport default add(1, 2);',
          packages: ["@cordon-fixtures/math"],
        });
      } finally {
        loader[Symbol.dispose]();
      }
    }, `${insecureOrigin(nginx.origin)}/index.json`);
    assert.equal(result.ok, false, JSON.stringify(result));
    assert.equal(result.error.code, "WEB_CRYPTO_UNAVAILABLE");
    assert.match(result.error.message, WEB_CRYPTO_MESSAGE);
    assert.deepEqual(result.logs, []);
    assert.deepEqual(errors, []);
  });

  test("runs without packs work on the loader and the pool, in engines as hardened as on a secure page", async ({ page, baseURL }) => {
    const { errors } = await openInsecurePage(page, insecureOrigin(baseURL!));
    const results = await page.evaluate(async () => {
      // deno-lint-ignore no-explicit-any
      const cordon = (globalThis as any).cordon;
      const source =
        "export default [Object.isFrozen(Array.prototype), Object.isFrozen(globalThis.Object), typeof crypto.getRandomValues, 1 + 1];";
      const catalog = cordon.createRemoteCatalog({ baseUrl: location.origin });
      const loader = await cordon.createQuickJSLoader({ catalog });
      const pool = await cordon.createQuickJSPool({
        catalog,
        size: 1,
        isolation: "worker",
        runnerUrl: new URL("/dist/cordon-runner.js", location.origin),
      });
      try {
        return [
          await loader.run({ source, packages: [] }),
          await pool.run({ source, packages: [] }),
        ];
      } finally {
        loader[Symbol.dispose]();
        await pool[Symbol.asyncDispose]();
      }
    });
    for (const result of results) {
      assert.equal(result.ok, true, JSON.stringify(result));
      assert.deepEqual(result.value, [true, true, "function", 2]);
    }
    assert.deepEqual(errors, []);
  });
});
