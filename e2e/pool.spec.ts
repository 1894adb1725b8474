/**
 * The browser leg of the QuickJS pool: every case of the fixture table run
 * in Chromium on the pool's Web Workers (started from the runner bundle,
 * `dist/cordon-runner.js`), with exactly the loader's expected codes and
 * messages; then adversarial guests that only a killable worker stops,
 * each run while a 10 ms interval of the page counts how often the page's
 * own event loop turns, to show the guest never held the page's thread.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  CASES,
  checkCaseInPage,
  type CordonPage,
  test,
} from "./_fixture_page.ts";
// Type-only, so Node never loads the bundle's entry.
import type { PoolRunReport } from "./browser_entry.ts";

/** The serializable options a spec passes to the page's `runInPool`. */
interface RunLimitOptions {
  timeoutMs?: number;
  memoryLimitBytes?: number;
}

const MIB = 1024 * 1024;

function timeoutMessage(timeoutMs: number): string {
  return `The run exceeded its time limit of ${timeoutMs} ms: make the code finish sooner or raise timeoutMs`;
}

/** Runs `source` on the page's pool. */
async function runGuest(
  cordonPage: CordonPage,
  source: string,
  options: RunLimitOptions,
): Promise<PoolRunReport> {
  return await cordonPage.page.evaluate(({ source, options }) => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    return cordon.runInPool(source, options, location.origin);
  }, { source, options });
}

/** Guests that only a killable runner stops, or that catch their interrupt. */
const RUNAWAYS: readonly { name: string; source: string }[] = [
  {
    name: "a guest stuck in a long built-in call",
    source: "export default Array.prototype.indexOf.call({length: 2e9}, 1);",
  },
  {
    name: "a guest that catches every interrupt and spins again",
    source:
      "function spin(){for(;;){}} function again(){ return Promise.resolve().then(spin).catch(again); } export default () => again();",
  },
];

/**
 * Asserts the run ended with `code` and `message`, and that the page's
 * interval fired while it ran, so the guest never held the page's thread
 * (a guest looping on the page's thread would leave it at zero). How long
 * either took is the benchmarks' business, not a test's.
 */
function assertEndedOffThread(
  report: PoolRunReport,
  expected: { code: string; message: string },
): void {
  const { result, ticks } = report;
  assert.equal(result.ok, false, JSON.stringify(result));
  if (result.ok) return;
  assert.equal(result.error.code, expected.code);
  assert.equal(result.error.message, expected.message);
  assert.ok(ticks >= 1, "the page's interval never fired while the guest ran");
}

test.describe("createQuickJSPool() in Web Workers", () => {
  for (const entry of CASES) {
    test(entry.name, async ({ cordonPage }) => {
      await checkCaseInPage(cordonPage, entry, "runFixtureCaseInPool");
    });
  }

  for (const { name, source } of RUNAWAYS) {
    test(`${name} ends at the time limit while the page keeps running`, async ({ cordonPage }) => {
      const before = cordonPage.errors.length;
      const timeoutMs = 300;
      const report = await runGuest(cordonPage, source, { timeoutMs });
      assertEndedOffThread(report, {
        code: "TIMEOUT",
        message: timeoutMessage(timeoutMs),
      });
      assert.deepEqual(cordonPage.errors.slice(before), []);
    });
  }

  test("a guest killed inside a long built-in call keeps the lines it logged before", async ({ cordonPage }) => {
    const before = cordonPage.errors.length;
    const timeoutMs = 300;
    const report = await runGuest(
      cordonPage,
      "console.log('before'); console.warn('still', 2); export default Array.prototype.indexOf.call({length: 2e9}, 1);",
      { timeoutMs },
    );
    assertEndedOffThread(report, {
      code: "TIMEOUT",
      message: timeoutMessage(timeoutMs),
    });
    assert.deepEqual(report.result.logs, [
      { level: "log", message: "before" },
      { level: "warn", message: "still 2" },
    ]);
    assert.equal(report.result.logsTruncated, false);
    assert.deepEqual(cordonPage.errors.slice(before), []);
  });

  test("a guest that allocates past its memory limit ends with out of memory while the page keeps running", async ({ cordonPage }) => {
    const before = cordonPage.errors.length;
    const memoryLimitBytes = 16 * MIB;
    // The pool's default, written out: the guest must end by memory first.
    const timeoutMs = 5000;
    const report = await runGuest(
      cordonPage,
      'const a=[]; for (let i=0;i<3000;i++) a.push("x".repeat(1e5)); export default a.length;',
      { memoryLimitBytes, timeoutMs },
    );
    assertEndedOffThread(report, {
      code: "OUT_OF_MEMORY",
      message:
        `The run exceeded its memory limit of ${memoryLimitBytes} bytes: use less memory or raise memoryLimitBytes`,
    });
    assert.deepEqual(cordonPage.errors.slice(before), []);
  });

  test("a runner script that never answers fails the pool's start with the start timeout it ran out", async ({ cordonPage }) => {
    const refusal = await cordonPage.page.evaluate(async () => {
      // deno-lint-ignore no-explicit-any
      const cordon = (globalThis as any).cordon;
      try {
        await cordon.createQuickJSPool({
          catalog: cordon.createRemoteCatalog({ baseUrl: location.origin }),
          size: 1,
          isolation: "worker",
          // A module that loads and never says it is ready.
          runnerUrl: "data:text/javascript,",
          startTimeoutMs: 200,
        });
        return "started";
      } catch (error) {
        const { code, message } = error as Record<string, string>;
        return { code, message };
      }
    });
    assert.equal(typeof refusal, "object", String(refusal));
    if (typeof refusal !== "object") return;
    assert.equal(refusal.code, "SANDBOX_UNAVAILABLE");
    assert.match(
      refusal.message,
      /^Cannot start the QuickJS pool's runners: it did not start within 200 ms; /,
    );
  });

  for (
    const [what, path] of [
      ["answers 404", "/dist/missing/cordon-runner.js"],
      ["is served as text/plain", "/dist/wrong-type/cordon-runner.js"],
    ]
  ) {
    test(`a runner script that ${what} fails the pool's start with a message that names its URL and what to check`, async ({ cordonPage }) => {
      const refusal = await cordonPage.page.evaluate(async (path) => {
        // deno-lint-ignore no-explicit-any
        const cordon = (globalThis as any).cordon;
        try {
          await cordon.createQuickJSPool({
            catalog: cordon.createRemoteCatalog({ baseUrl: location.origin }),
            size: 1,
            isolation: "worker",
            runnerUrl: new URL(path, location.origin),
          });
          return "started";
        } catch (error) {
          const { code, message } = error as Record<string, string>;
          return { code, message, url: new URL(path, location.origin).href };
        }
      }, path);
      assert.equal(typeof refusal, "object", String(refusal));
      if (typeof refusal !== "object") return;
      assert.equal(refusal.code, "SANDBOX_UNAVAILABLE");
      assert.ok(
        refusal.message.startsWith(
          `Cannot start the QuickJS pool's runners: the runner script ${refusal.url} did not load: it answered an error status, was not served as JavaScript (text/javascript), could not be fetched, or the page's Content-Security-Policy refused it (allow its origin in worker-src, or in script-src where worker-src is not set); `,
        ),
        refusal.message,
      );
      assert.match(
        refusal.message,
        /; serve a bundle of @cordon\/cordon\/loader\/runner from this page's origin as JavaScript and pass its runnerUrl$/,
      );
    });
  }

  test("an aborted signal ends a computing guest promptly while the page keeps running", async ({ cordonPage }) => {
    const before = cordonPage.errors.length;
    const report: PoolRunReport = await cordonPage.page.evaluate(() => {
      // deno-lint-ignore no-explicit-any
      const cordon = (globalThis as any).cordon;
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 100);
      return cordon.runInPool(
        "for(;;){}",
        { timeoutMs: 10_000, signal: controller.signal },
        location.origin,
      );
    });
    assertEndedOffThread(report, {
      code: "ABORTED",
      message: "The run was aborted by its caller",
    });
    assert.deepEqual(cordonPage.errors.slice(before), []);
  });
});
