/**
 * The browser leg of a page that goes offline (Playwright's
 * `context.setOffline`, after which `navigator.onLine` is false): the remote
 * catalog's fetches and the pool's runner script fail without an answer,
 * and their failures say that the browser is offline before naming the
 * causes a page cannot tell apart; once the browser is online again, the
 * same catalog and pool run as before.
 *
 * @module
 */

import assert from "node:assert/strict";
import { test } from "@playwright/test";
import { openBundlePage } from "./_fixture_page.ts";

/** What every failure of a request the offline browser never sent says first. */
const OFFLINE =
  "this browser reports that it is offline (navigator.onLine is false): connect it to a network and run again; otherwise ";

/** What a run resolved to, as far as these tests read it. */
interface RunOutcome {
  ok: boolean;
  value?: unknown;
  code?: string;
  message?: string;
}

test("a remote catalog's fetch fails offline with FETCH_FAILED that says the browser is offline, and runs once it is online", async ({ page, context }) => {
  const { errors } = await openBundlePage(page);
  await page.evaluate(async () => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    // deno-lint-ignore no-explicit-any
    (globalThis as any).offlineLoader = await cordon.createQuickJSLoader({
      catalog: cordon.createRemoteCatalog({ baseUrl: location.origin }),
    });
  });
  const runGreet = () =>
    page.evaluate(async (): Promise<RunOutcome> => {
      // deno-lint-ignore no-explicit-any
      const loader = (globalThis as any).offlineLoader;
      const { ok, value, error } = await loader.run({
        source: 'import { greet } from "greet"; export default greet("Ada");',
        packages: ["greet"],
      });
      return { ok, value, code: error?.code, message: error?.message };
    });
  await context.setOffline(true);
  const offline = await runGreet();
  assert.equal(offline.code, "FETCH_FAILED", JSON.stringify(offline));
  assert.ok(
    offline.message?.includes(
      `: Failed to fetch; ${OFFLINE}check the server URL and that the server is running`,
    ),
    offline.message,
  );
  await context.setOffline(false);
  assert.deepEqual(await runGreet(), {
    ok: true,
    value: "Hello, Ada!",
    code: undefined,
    message: undefined,
  });
  assert.deepEqual(errors, []);
});

test("a pool that starts or replaces a runner offline says the browser is offline, and runs once it is online", async ({ page, context }) => {
  const { errors } = await openBundlePage(page);
  const startPool = () =>
    page.evaluate(async () => {
      // deno-lint-ignore no-explicit-any
      const cordon = (globalThis as any).cordon;
      try {
        // deno-lint-ignore no-explicit-any
        (globalThis as any).offlinePool = await cordon.createQuickJSPool({
          catalog: cordon.createRemoteCatalog({ baseUrl: location.origin }),
          size: 1,
          isolation: "worker",
          runnerUrl: new URL("/dist/cordon-runner.js", location.origin),
        });
        return "started";
      } catch (error) {
        const { code, message } = error as Record<string, string>;
        return `${code}: ${message}`;
      }
    });
  const run = (source: string, timeoutMs: number) =>
    page.evaluate(async ({ source, timeoutMs }): Promise<RunOutcome> => {
      // deno-lint-ignore no-explicit-any
      const pool = (globalThis as any).offlinePool;
      const { ok, value, error } = await pool.run(source, { timeoutMs });
      return { ok, value, code: error?.code, message: error?.message };
    }, { source, timeoutMs });
  const scriptUrl = new URL("/dist/cordon-runner.js", page.url()).href;
  const notLoaded =
    `the runner script ${scriptUrl} did not load: ${OFFLINE}it answered an error status`;

  await context.setOffline(true);
  const refused = await startPool();
  assert.ok(
    refused.startsWith(
      `SANDBOX_UNAVAILABLE: Cannot start the QuickJS pool's runners: ${notLoaded}`,
    ),
    refused,
  );
  await context.setOffline(false);
  assert.equal(await startPool(), "started");

  await context.setOffline(true);
  // Only killing its runner ends this guest, and the pool replaces it.
  const killed = await run(
    "export default Array.prototype.indexOf.call({ length: 2e9 }, 1);",
    50,
  );
  assert.equal(killed.code, "TIMEOUT", JSON.stringify(killed));
  const crashed = await run("export default 1;", 5000);
  assert.equal(crashed.code, "SANDBOX_CRASHED", JSON.stringify(crashed));
  assert.ok(
    crashed.message?.startsWith(
      `The QuickJS runner ended without an answer (${notLoaded}`,
    ),
    crashed.message,
  );
  await context.setOffline(false);
  assert.deepEqual(await run("export default 2;", 5000), {
    ok: true,
    value: 2,
    code: undefined,
    message: undefined,
  });
  assert.deepEqual(errors, []);
});
