import { expect, test } from "@playwright/test";
import { openBundlePage } from "./_fixture_page.ts";

test("the browser bundle loads and the remote catalog verifies the fixture packs in Chromium", async ({ page }) => {
  const { errors, loadError } = await openBundlePage(page);
  expect(loadError).toBeNull();

  const outcome = await page.evaluate(async () => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    // A tool that shows the whole catalog asks for the full listing.
    const catalog = cordon.createRemoteCatalog({
      baseUrl: location.origin,
      listing: "full",
    });
    await catalog.prefetch({ source: "", packages: [] });
    const names: string[] = catalog.summaries().map((p: { name: string }) =>
      p.name
    );
    const declaration = { source: "", packages: names };
    await catalog.prefetch(declaration);
    const resolution = catalog.resolveForExecution(declaration);
    return {
      names,
      statuses: resolution.statuses.map((s: { status: string }) => s.status),
      modules: Object.keys(resolution.modules).length,
      subtle: typeof crypto.subtle?.digest,
    };
  });
  expect(outcome.subtle).toBe("function");
  expect(outcome.names.length).toBeGreaterThan(0);
  expect(outcome.statuses).toEqual(outcome.names.map(() => "ok"));
  expect(outcome.modules).toBeGreaterThan(0);
  expect(errors).toEqual([]);
});

test("a tampered module is refused in Chromium before any code runs", async ({ page }) => {
  await openBundlePage(page);
  const result = await page.evaluate(async () => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    // A man in the middle: one module's body changes, its headers stay.
    const catalog = cordon.createRemoteCatalog({
      baseUrl: location.origin,
      async fetch(input: string, init: RequestInit) {
        const response = await fetch(input, init);
        if (!input.includes("?digest=")) return response;
        const text = await response.text();
        return new Response(`console.log("tampered code ran");\n${text}`, {
          status: response.status,
          headers: response.headers,
        });
      },
    });
    const loader = await cordon.createQuickJSLoader({ catalog });
    try {
      return await loader.run({
        source:
          'console.log("guest code ran");\nimport { add } from "@cordon-fixtures/math";\nexport default add(1, 2);',
        packages: ["@cordon-fixtures/math"],
      });
    } finally {
      loader[Symbol.dispose]();
    }
  });
  expect(result.ok).toBe(false);
  expect(result.error.code).toBe("DIGEST_MISMATCH");
  expect(result.error.message).toContain('of pack "@cordon-fixtures/math"');
  expect(result.logs).toEqual([]);
});

test("a module answer rewritten once and kept by Chromium's HTTP cache is fetched again past the cache, so this and later page loads run", async ({ page }) => {
  await openBundlePage(page);
  const baseUrl = new URL(
    `/once-rewritten/${crypto.randomUUID()}`,
    page.url(),
  ).href;
  const run = () =>
    page.evaluate(async (baseUrl) => {
      // deno-lint-ignore no-explicit-any
      const cordon = (globalThis as any).cordon;
      const loader = await cordon.createQuickJSLoader({
        catalog: cordon.createRemoteCatalog({ baseUrl }),
      });
      try {
        const { ok, value, error, logs } = await loader.run({
          source:
            'import { add } from "@cordon-fixtures/math";\nexport default add(1, 2);',
          packages: ["@cordon-fixtures/math"],
        });
        return { ok, value, code: error?.code, logs };
      } finally {
        loader[Symbol.dispose]();
      }
    }, baseUrl);
  const ran = { ok: true, value: 3, code: undefined, logs: [] };
  expect(await run()).toEqual(ran);
  // A page load later: a new catalog, over the same HTTP cache.
  await openBundlePage(page);
  expect(await run()).toEqual(ran);
});

test("a catalog on another origin that answers without CORS fails with FETCH_FAILED that names CORS", async ({ page }) => {
  await openBundlePage(page);
  const consoleErrors: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") consoleErrors.push(message.text());
  });
  const result = await page.evaluate(async () => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    // The same server by another name is another origin.
    const other = new URL(location.href);
    other.hostname = "localhost";
    const catalog = cordon.createRemoteCatalog({
      baseUrl: new URL("/no-cors", other).href,
    });
    const loader = await cordon.createQuickJSLoader({ catalog });
    try {
      return await loader.run({
        source:
          'import { add } from "@cordon-fixtures/math"; export default add(1, 2);',
        packages: ["@cordon-fixtures/math"],
      });
    } finally {
      loader[Symbol.dispose]();
    }
  });
  // Chromium refused it for CORS: the server did answer.
  expect(consoleErrors.some((text) => text.includes("blocked by CORS policy")))
    .toBe(true);
  expect(result.ok).toBe(false);
  expect(result.error.code).toBe("FETCH_FAILED");
  expect(result.error.message).toMatch(
    /^Cannot fetch the catalog listing for pack "@cordon-fixtures\/math" from http:\/\/localhost:\d+\/no-cors\/api\/sandbox-modules\?packs=%40cordon-fixtures%2Fmath: Failed to fetch; .*answers CORS/,
  );
});

test("a catalog on the page's origin that redirects to another origin without CORS fails with FETCH_FAILED that names the redirect and CORS", async ({ page }) => {
  await openBundlePage(page);
  const result = await page.evaluate(async () => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    const catalog = cordon.createRemoteCatalog({
      baseUrl: new URL("/redirect-to-no-cors", location.href).href,
    });
    const loader = await cordon.createQuickJSLoader({ catalog });
    try {
      const { ok, error } = await loader.run({
        source:
          'import { add } from "@cordon-fixtures/math"; export default add(1, 2);',
        packages: ["@cordon-fixtures/math"],
      });
      return { ok, code: error?.code, message: error?.message };
    } finally {
      loader[Symbol.dispose]();
    }
  });
  expect(result.ok).toBe(false);
  expect(result.code).toBe("FETCH_FAILED");
  expect(result.message).toMatch(
    /^Cannot fetch the catalog listing for pack "@cordon-fixtures\/math" from http:\/\/127\.0\.0\.1:\d+\/redirect-to-no-cors\/api\/sandbox-modules\?packs=%40cordon-fixtures%2Fmath: Failed to fetch; check the server URL and that the server is running, that a redirect it answers with, if any, leads to a server that answers CORS requests \(a redirect to another origin makes the request cross-origin\), and that this page's Content-Security-Policy lets it connect there \(add 'self' to connect-src, and the origin a redirect leads to\)$/,
  );
});

test("a catalog on another origin whose answers expose no headers fails with DIGEST_MISMATCH that names Access-Control-Expose-Headers", async ({ page }) => {
  await openBundlePage(page);
  const result = await page.evaluate(async () => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    // The same server by another name is another origin.
    const other = new URL(location.href);
    other.hostname = "localhost";
    const catalog = cordon.createRemoteCatalog({
      baseUrl: new URL("/no-expose", other).href,
    });
    const loader = await cordon.createQuickJSLoader({ catalog });
    try {
      const { ok, error, logs } = await loader.run({
        source:
          'console.log("guest code ran");\nimport { greet } from "greet";\nexport default greet("CORS");',
        packages: ["greet"],
      });
      return { ok, code: error?.code, message: error?.message, logs };
    } finally {
      loader[Symbol.dispose]();
    }
  });
  expect(result).toEqual({
    ok: false,
    code: "DIGEST_MISMATCH",
    message:
      'Refusing module ./index.js of pack "greet": the response has no Repr-Digest header this page may read: it came from another origin, whose answers show a page only the headers their Access-Control-Expose-Headers names (the delivery handler sends *; a proxy or CDN in front of it may drop it); have the server expose Repr-Digest; the module was not cached or run',
    logs: [],
  });
});
