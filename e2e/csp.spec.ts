/**
 * The browser leg under a strict Content-Security-Policy, the one the
 * loader's docs advise (`/csp.html`: no `'unsafe-eval'`, only
 * `'wasm-unsafe-eval'`; the pool's runner bundle is served with it too, so
 * its Web Workers obey it): the whole fixture table through the in-thread
 * loader and through the pool, with exactly the expected outcomes and not
 * one violation, console error or uncaught error, in the page or in a
 * worker; and, under stricter policies, the stable code and the message
 * that names the directive to allow, where the loader or the pool cannot
 * work.
 *
 * @module
 */

import assert from "node:assert/strict";
import { test } from "@playwright/test";
import {
  type CaseEntryPoint,
  CASES,
  checkCaseInPage,
  type CordonPage,
  openBundlePage,
} from "./_fixture_page.ts";

const ENTRY_POINTS: readonly [string, CaseEntryPoint][] = [
  ["the loader", "runFixtureCase"],
  ["the pool", "runFixtureCaseInPool"],
];

test("the fixture table runs on the loader and the pool under a strict Content-Security-Policy without one violation", async ({ page, request }) => {
  test.setTimeout(240_000);
  // Reports left by earlier specs, whose pools run the same runner bundle.
  await request.get("/csp-report");
  const consoleErrors: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") {
      consoleErrors.push(`${message.text()} (${message.location().url})`);
    }
  });
  page.on("worker", (worker) => {
    worker.on("console", (message) => {
      if (message.type() === "error") {
        consoleErrors.push(`${worker.url()}: ${message.text()}`);
      }
    });
  });
  const { errors, loadError } = await openBundlePage(page, "/csp.html");
  assert.equal(loadError, null);
  const cordonPage: CordonPage = { page, errors };

  for (const [via, entryPoint] of ENTRY_POINTS) {
    for (const entry of CASES) {
      await test.step(`${via}: ${entry.name}`, async () => {
        await checkCaseInPage(cordonPage, entry, entryPoint);
      });
    }
  }

  const violations = await page.evaluate(() =>
    (globalThis as { cordonViolations?: string[] }).cordonViolations
  );
  // A worker's violations reach only the policy's report-uri; each would
  // have been sent when its worker started, long before the last run ended.
  const reports = await (await request.get("/csp-report")).json();
  assert.deepEqual({ violations, reports, consoleErrors, errors }, {
    violations: [],
    reports: [],
    consoleErrors: [],
    errors: [],
  });
});

/** What the loader and the pool say where WebAssembly may not be compiled. */
const NO_WASM_MESSAGE =
  "Cannot start the QuickJS engine: this context refuses to compile WebAssembly, as a Content-Security-Policy without 'wasm-unsafe-eval' does; add 'wasm-unsafe-eval' to the script-src of the page and of the pool's runner script";

test("without 'wasm-unsafe-eval' the loader and the pool refuse to start with SANDBOX_UNAVAILABLE and say what to allow", async ({ page }) => {
  const { loadError } = await openBundlePage(page, "/csp-no-wasm.html");
  assert.equal(loadError, null);
  const refusals = await page.evaluate(async () => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    const catalog = cordon.createRemoteCatalog({ baseUrl: location.origin });
    const refusal = async (create: () => Promise<unknown>) => {
      try {
        await create();
        return "started";
      } catch (error) {
        const { name, code, message } = error as Record<string, unknown>;
        return { name, code, message };
      }
    };
    return [
      await refusal(() => cordon.createQuickJSLoader({ catalog })),
      await refusal(() =>
        cordon.createQuickJSPool({
          catalog,
          size: 1,
          isolation: "worker",
          runnerUrl: new URL("/dist/no-wasm/cordon-runner.js", location.href),
        })
      ),
    ];
  });
  const expected = {
    name: "CordonError",
    code: "SANDBOX_UNAVAILABLE",
    message: NO_WASM_MESSAGE,
  };
  assert.deepEqual(refusals, [expected, expected]);
});

test("a policy whose worker-src refuses the runner fails the pool's start with SANDBOX_UNAVAILABLE that names worker-src", async ({ page }) => {
  const { errors, loadError } = await openBundlePage(
    page,
    "/csp-no-worker.html",
  );
  assert.equal(loadError, null);
  const refusal = await page.evaluate(async () => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    const runnerUrl = new URL("/dist/cordon-runner.js", location.href);
    try {
      await cordon.createQuickJSPool({
        catalog: cordon.createRemoteCatalog({ baseUrl: location.origin }),
        size: 1,
        isolation: "worker",
        runnerUrl,
      });
      return "started";
    } catch (error) {
      const { name, code, message } = error as Record<string, unknown>;
      return { name, code, message };
    }
  });
  const runnerUrl = new URL("/dist/cordon-runner.js", page.url()).href;
  assert.deepEqual(refusal, {
    name: "CordonError",
    code: "SANDBOX_UNAVAILABLE",
    message:
      `Cannot start the QuickJS pool's runners: the runner script ${runnerUrl} did not load: it answered an error status, was not served as JavaScript (text/javascript), could not be fetched, or the page's Content-Security-Policy refused it (allow its origin in worker-src, or in script-src where worker-src is not set); serve a bundle of @cordon/cordon/loader/runner from this page's origin as JavaScript and pass its runnerUrl`,
  });
  assert.deepEqual(errors, []);
});

test("a delivery server on an origin the page's connect-src refuses fails the run with FETCH_FAILED that names connect-src", async ({ page }) => {
  const { errors, loadError } = await openBundlePage(page, "/csp.html");
  assert.equal(loadError, null);
  // The same server by another name is another origin, which the page's
  // `connect-src 'self'` refuses.
  const other = new URL(page.url());
  other.hostname = "localhost";
  const result = await page.evaluate(async (baseUrl) => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    const loader = await cordon.createQuickJSLoader({
      catalog: cordon.createRemoteCatalog({ baseUrl }),
    });
    try {
      const { ok, error } = await loader.run({
        source: 'import { greet } from "greet";\nexport default greet("CSP");',
        packages: ["greet"],
      });
      return { ok, code: error?.code, message: error?.message };
    } finally {
      loader[Symbol.dispose]();
    }
  }, other.origin);
  assert.deepEqual(result, {
    ok: false,
    code: "FETCH_FAILED",
    message:
      `Cannot fetch the catalog listing for pack "greet" from ${other.origin}/api/sandbox-modules?packs=greet: Failed to fetch; check the server URL, that the server is running and, as it is on another origin than this page, that it answers CORS requests (the delivery handler does; a proxy in front of it may not), and that this page's Content-Security-Policy lets it connect there (add ${other.origin} to connect-src)`,
  });
  assert.deepEqual(errors, []);
});

test("where Trusted Types are required the loader runs, and the pool starts from a TrustedScriptURL and refuses a plain URL with SANDBOX_UNAVAILABLE that says so", async ({ page }) => {
  const { errors, loadError } = await openBundlePage(
    page,
    "/csp-trusted-types.html",
  );
  assert.equal(loadError, null);
  const outcomes = await page.evaluate(async () => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    const declaration = {
      source: 'import { greet } from "greet";\nexport default greet("CSP");',
      packages: ["greet"],
    };
    const href = new URL("/dist/cordon-runner.js", location.href).href;
    // deno-lint-ignore no-explicit-any
    const policy = (globalThis as any).trustedTypes.createPolicy("cordon-e2e", {
      createScriptURL: (url: string) => {
        if (!href.endsWith(url)) throw new TypeError(`Not the runner: ${url}`);
        return url;
      },
    });
    const outcome = async (
      create: () => Promise<
        { run(d: unknown): Promise<unknown>; [Symbol.dispose](): void }
      >,
    ) => {
      try {
        const runner = await create();
        try {
          const result = await runner.run(declaration) as {
            ok: boolean;
            value?: unknown;
          };
          return { ok: result.ok, value: result.value };
        } finally {
          runner[Symbol.dispose]();
        }
      } catch (error) {
        const { name, code, message } = error as Record<string, unknown>;
        return { name, code, message };
      }
    };
    const catalog = cordon.createRemoteCatalog({ baseUrl: location.origin });
    const pool = (runnerUrl: unknown) => () =>
      cordon.createQuickJSPool({
        catalog,
        size: 1,
        isolation: "worker",
        runnerUrl,
      });
    return {
      loader: await outcome(() => cordon.createQuickJSLoader({ catalog })),
      plainUrl: await outcome(pool(new URL(href))),
      trustedUrl: await outcome(pool(policy.createScriptURL(href))),
      trustedRelativeUrl: await outcome(
        pool(policy.createScriptURL("/dist/cordon-runner.js")),
      ),
    };
  });
  assert.deepEqual(outcomes, {
    loader: { ok: true, value: "Hello, CSP!" },
    plainUrl: {
      name: "CordonError",
      code: "SANDBOX_UNAVAILABLE",
      message:
        "Cannot start the QuickJS pool's runners: this page requires Trusted Types for scripts (require-trusted-types-for 'script') and runnerUrl is not a TrustedScriptURL; pass as runnerUrl a TrustedScriptURL made by one of the page's Trusted Types policies, or have the page's default policy accept the runner's URL",
    },
    trustedUrl: { ok: true, value: "Hello, CSP!" },
    trustedRelativeUrl: {
      name: "TypeError",
      code: undefined,
      message:
        "Cannot create the QuickJS pool: runnerUrl is a TrustedScriptURL of a relative URL: /dist/cordon-runner.js; make it of an absolute URL",
    },
  });
  assert.deepEqual(errors, []);
});

test("on a page of an opaque origin the loader runs, and the pool's start fails with SANDBOX_UNAVAILABLE that says the origin is opaque and what to allow", async ({ page }) => {
  const { errors, loadError } = await openBundlePage(page, "/sandboxed.html");
  assert.equal(loadError, null);
  const outcomes = await page.evaluate(async () => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    const catalog = cordon.createRemoteCatalog({ baseUrl: location.origin });
    const loader = await cordon.createQuickJSLoader({ catalog });
    const ran = await loader.run({
      source:
        'import { greet } from "greet";\nexport default greet("sandbox");',
      packages: ["greet"],
    });
    loader[Symbol.dispose]();
    try {
      await cordon.createQuickJSPool({
        catalog,
        size: 1,
        isolation: "worker",
        runnerUrl: new URL("/dist/cordon-runner.js", location.href),
      });
      return { origin, loader: ran.value, pool: "started" };
    } catch (error) {
      const { name, code, message } = error as Record<string, unknown>;
      return { origin, loader: ran.value, pool: { name, code, message } };
    }
  });
  const { pool, ...rest } = outcomes;
  assert.deepEqual(rest, { origin: "null", loader: "Hello, sandbox!" });
  assert.equal(typeof pool, "object", String(pool));
  const { name, code, message } = pool as Record<string, string>;
  assert.deepEqual({ name, code }, {
    name: "CordonError",
    code: "SANDBOX_UNAVAILABLE",
  });
  assert.ok(
    message.startsWith("Cannot start the QuickJS pool's runners: ") &&
      message.endsWith(
        "; this page's origin is opaque (a document sandboxed without allow-same-origin, by an iframe's sandbox attribute or a Content-Security-Policy sandbox directive), where a Worker may not start from runnerUrl; add allow-same-origin to the sandbox, or run guests on the page's own thread with createQuickJSLoader(), which cannot stop a long built-in call",
      ),
    message,
  );
  assert.deepEqual(errors, []);
});
