/**
 * The browser leg on hosts other than a plain page's main thread: a
 * cross-origin isolated page (`Cross-Origin-Embedder-Policy:
 * require-corp`), a dedicated Web Worker and an iframe of another origin.
 * On each the in-thread loader and the pool run a declared pack, as the
 * loader guide says a page that keeps cordon away from scripts it does not
 * control may run it; where the isolated page's runner script lacks the
 * header its workers need, the pool's start says so.
 *
 * @module
 */

import assert from "node:assert/strict";
import { test } from "@playwright/test";
import { openBundlePage } from "./_fixture_page.ts";

const DECLARATION = {
  source: 'import { greet } from "greet";\nexport default greet("host");',
  packages: ["greet"],
};

/** What the loader and the pool give for {@linkcode DECLARATION}. */
const RAN = { ok: true, value: "Hello, host!", code: undefined };

/**
 * Runs a declaration on a loader and a pool of the page's own origin, the
 * pool's runner from `runnerPath` there.
 */
async function runOnLoaderAndPool(
  { declaration, runnerPath }: { declaration: unknown; runnerPath: string },
) {
  // deno-lint-ignore no-explicit-any
  const cordon = (globalThis as any).cordon;
  const catalog = cordon.createRemoteCatalog({ baseUrl: location.origin });
  const outcome = async (
    create: () => Promise<
      { run(d: unknown): Promise<unknown>; [Symbol.dispose](): void }
    >,
  ) => {
    try {
      const runner = await create();
      try {
        const { ok, value, error } = await runner.run(declaration) as {
          ok: boolean;
          value?: unknown;
          error?: { code: string };
        };
        return { ok, value, code: error?.code };
      } finally {
        runner[Symbol.dispose]();
      }
    } catch (error) {
      const { name, code, message } = error as Record<string, unknown>;
      return { name, code, message };
    }
  };
  return {
    loader: await outcome(() => cordon.createQuickJSLoader({ catalog })),
    pool: await outcome(() =>
      cordon.createQuickJSPool({
        catalog,
        size: 1,
        isolation: "worker",
        runnerUrl: new URL(runnerPath, location.origin),
      })
    ),
  };
}

const RUNNER_PATH = "/dist/cordon-runner.js";

test("on a cross-origin isolated page the loader runs, and the pool runs from a runner script sent with its Cross-Origin-Embedder-Policy and refuses one without, with SANDBOX_UNAVAILABLE that names the header", async ({ page }) => {
  const { errors, loadError } = await openBundlePage(page, "/isolated.html");
  assert.equal(loadError, null);
  const isolated = await page.evaluate(() => globalThis.crossOriginIsolated);
  const withHeader = await page.evaluate(runOnLoaderAndPool, {
    declaration: DECLARATION,
    runnerPath: "/dist/isolated/cordon-runner.js",
  });
  const withoutHeader = await page.evaluate(runOnLoaderAndPool, {
    declaration: DECLARATION,
    runnerPath: RUNNER_PATH,
  });
  const runnerUrl = new URL(RUNNER_PATH, page.url()).href;
  assert.deepEqual({ isolated, withHeader, withoutHeader }, {
    isolated: true,
    withHeader: { loader: RAN, pool: RAN },
    withoutHeader: {
      loader: RAN,
      pool: {
        name: "CordonError",
        code: "SANDBOX_UNAVAILABLE",
        message:
          `Cannot start the QuickJS pool's runners: the runner script ${runnerUrl} did not load: it answered an error status, was not served as JavaScript (text/javascript), could not be fetched, was served without the Cross-Origin-Embedder-Policy this cross-origin isolated page requires of its workers (send Cross-Origin-Embedder-Policy: require-corp with the runner script), or the page's Content-Security-Policy refused it (allow its origin in worker-src, or in script-src where worker-src is not set); serve a bundle of @cordon/cordon/loader/runner from this page's origin as JavaScript and pass its runnerUrl`,
      },
    },
  });
  assert.deepEqual(errors, []);
});

test("in a dedicated Web Worker the loader and a pool the worker starts run a declared pack", async ({ page }) => {
  const { errors, loadError } = await openBundlePage(page);
  assert.equal(loadError, null);
  const outcomes = await page.evaluate((declaration) => {
    const worker = new Worker("/worker-host.js", { type: "module" });
    return new Promise((resolve) => {
      worker.onerror = (event) => resolve({ workerError: event.message });
      worker.onmessage = ({ data }) => {
        if (data === "ready") worker.postMessage(declaration);
        else {
          worker.terminate();
          resolve(data);
        }
      };
    });
  }, DECLARATION);
  assert.deepEqual(outcomes, { loader: RAN, pool: RAN });
  assert.deepEqual(errors, []);
});

test("in an iframe of another origin the loader and the pool run a declared pack from that origin", async ({ page }) => {
  const { errors, loadError } = await openBundlePage(page);
  assert.equal(loadError, null);
  // The same server by another name is another origin.
  const other = new URL(page.url());
  other.hostname = "localhost";
  await page.evaluate((src) =>
    new Promise((resolve) => {
      const frame = document.createElement("iframe");
      frame.onload = resolve;
      frame.src = src;
      document.body.append(frame);
    }), other.href);
  const frame = page.frames().find((f) => f.url() === other.href);
  assert.ok(frame, `no frame of ${other.href}`);
  await frame.waitForFunction(() =>
    (globalThis as { cordonSettled?: boolean }).cordonSettled === true
  );
  const outcomes = await frame.evaluate(runOnLoaderAndPool, {
    declaration: DECLARATION,
    runnerPath: RUNNER_PATH,
  });
  assert.deepEqual(outcomes, { loader: RAN, pool: RAN });
  assert.deepEqual(errors, []);
});
