/**
 * The browser leg of the bounds a caller sets on a run and on the pool, and
 * of a run aborted while its catalog reads a body, in Chromium through the
 * bundle, with the answers the Deno tests pin: a remote catalog's fetch
 * aborted with a revoked Proxy once the server has answered, the run's
 * `maxSourceBytes`, `maxContextBytes` and `maxResultBytes`, a context too
 * large for the run's memory to parse, and the pool's turns by requester
 * with its `maxQueuedPerRequester`.
 *
 * @module
 */

import assert from "node:assert/strict";
import { type Page, test } from "@playwright/test";
import { openBundlePage } from "./_fixture_page.ts";

/** What a run resolved to, as far as these tests read it. */
interface RunOutcome {
  ok: boolean;
  value?: unknown;
  code?: string;
  name?: string;
  message?: string;
}

/** Where the page runs: its own thread, or a pool of one Web Worker. */
const KINDS = ["loader", "pool"] as const;

/**
 * Makes the page's runner of `kind` over the empty catalog with `options`
 * as `globalThis.boundedRunner`.
 */
async function makeRunner(
  page: Page,
  kind: (typeof KINDS)[number],
  options: Record<string, number>,
): Promise<void> {
  await page.evaluate(async ({ kind, options }) => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    const catalog = cordon.createRemoteCatalog({ baseUrl: location.origin });
    // deno-lint-ignore no-explicit-any
    (globalThis as any).boundedRunner = kind === "loader"
      ? await cordon.createQuickJSLoader({ ...options, catalog })
      : await cordon.createQuickJSPool({
        ...options,
        catalog,
        size: 1,
        isolation: "worker",
        runnerUrl: new URL("/dist/cordon-runner.js", location.origin),
      });
  }, { kind, options });
}

/**
 * Runs `source` on the page's runner. A context of `{ a }` is made on the
 * page from `a`; one of `doubledLevels` is arrays that each hold the next
 * twice, so its text doubles at each level.
 */
function runOnPage(
  page: Page,
  source: string,
  options: Record<string, number> = {},
  context?: { a: string } | { doubledLevels: number },
): Promise<RunOutcome> {
  return page.evaluate(async ({ source, options, context }) => {
    let made: unknown = undefined;
    if (context !== undefined && "a" in context) made = { a: context.a };
    if (context !== undefined && "doubledLevels" in context) {
      made = 1;
      for (let i = 0; i < context.doubledLevels; i++) made = [made, made];
    }
    // deno-lint-ignore no-explicit-any
    const runner = (globalThis as any).boundedRunner;
    try {
      const { ok, value, error } = await runner.run(source, {
        ...options,
        ...(made === undefined ? {} : { context: made }),
      });
      return ok ? { ok, value } : { ok, ...error };
    } catch (error) {
      return { ok: false, name: (error as Error).name };
    }
  }, { source, options, context });
}

const encoder = new TextEncoder();

/** A guest source of exactly `bytes` bytes of UTF-8, one of them a two-byte character. */
function sourceOf(bytes: number): string {
  const code = 'export default "é";';
  return code + " ".repeat(bytes - encoder.encode(code).length);
}

/** The text of a context `{ a }` whose JSON is exactly `bytes` bytes of UTF-8. */
function contextOf(bytes: number): { a: string } {
  // {"a":"é"} is 10 bytes.
  return { a: `é${"x".repeat(bytes - 10)}` };
}

const GUEST = "export default (context) => context.a.length;";

for (const kind of KINDS) {
  test(`the ${kind} runs a source and a context at their bounds and refuses one byte more with DECLARATION_INVALID`, async ({ page }) => {
    const { errors } = await openBundlePage(page);
    await makeRunner(page, kind, { maxSourceBytes: 64, maxContextBytes: 32 });
    // 64 characters, 65 bytes: only the UTF-8 count refuses it.
    assert.equal(sourceOf(65).length, 64);
    assert.deepEqual(await runOnPage(page, sourceOf(64)), {
      ok: true,
      value: "é",
    });
    assert.deepEqual(await runOnPage(page, sourceOf(65)), {
      ok: false,
      code: "DECLARATION_INVALID",
      name: "DeclarationError",
      message:
        "The declaration is invalid at source: it holds at least 65 bytes of UTF-8, more than maxSourceBytes (64); split the code into packs, or raise maxSourceBytes",
    });
    assert.deepEqual(await runOnPage(page, GUEST, {}, contextOf(32)), {
      ok: true,
      value: 23,
    });
    assert.deepEqual(await runOnPage(page, GUEST, {}, contextOf(33)), {
      ok: false,
      code: "DECLARATION_INVALID",
      name: "DeclarationError",
      message:
        "The run's context is too large: its JSON text holds at least 33 bytes of UTF-8, more than maxContextBytes (32); pass less data, or raise maxContextBytes",
    });
    // A run's own bound comes before its runner's.
    assert.deepEqual(
      await runOnPage(page, GUEST, { maxContextBytes: 40 }, contextOf(40)),
      { ok: true, value: 31 },
    );
    assert.deepEqual(await runOnPage(page, GUEST, { maxSourceBytes: -1 }), {
      ok: false,
      name: "RangeError",
    });
    assert.deepEqual(errors, []);
  });

  test(`the ${kind} answers OUT_OF_MEMORY to a context too large for the run's memory to parse`, async ({ page }) => {
    const { errors } = await openBundlePage(page);
    await makeRunner(page, kind, {});
    const limits = { memoryLimitBytes: 16 * 1024 * 1024, timeoutMs: 10_000 };
    const parsed = await runOnPage(
      page,
      "export default (context) => context === null ? 0 : 1;",
      { ...limits, maxContextBytes: 64 * 1024 * 1024 },
      // 1 MiB of text, which outgrows 16 MiB as QuickJS parses it.
      { doubledLevels: 18 },
    );
    assert.equal(parsed.code, "OUT_OF_MEMORY", JSON.stringify(parsed));
    assert.deepEqual(
      await runOnPage(page, "export default () => { throw null; };", limits),
      {
        ok: false,
        code: "GUEST_ERROR",
        name: "NonErrorThrown",
        message: "Guest code threw a non-Error value: null",
      },
    );
    assert.deepEqual(errors, []);
  });
}

/** The refusal of an answer past `maxResultBytes`, as the Deno tests pin it. */
function resultTooLarge(maxResultBytes: number): RunOutcome {
  return {
    ok: false,
    code: "RESULT_NOT_SERIALIZABLE",
    name: "RangeError",
    message:
      `Cannot return a value whose JSON text holds more than maxResultBytes (${maxResultBytes}) bytes of UTF-8 from a sandbox: return less data, or raise maxResultBytes`,
  };
}

/** A guest whose value's JSON text is exactly `bytes` bytes of UTF-8. */
function resultOf(bytes: number): string {
  return `export default "é${"x".repeat(bytes - 4)}";`;
}

// 64 copies of one 1 KiB string: 65,729 characters of JSON text, counted
// each time the string appears.
const SHARED = 'export default Array(64).fill("x".repeat(1024));';
const SHARED_BYTES = 64 * 1026 + 63 + 2;

/**
 * How the page's runner of `kind` refuses `maxResultBytes` set to `bad`:
 * on a run, and given to its factory.
 */
function refusalsOnPage(
  page: Page,
  kind: (typeof KINDS)[number],
  bad: unknown,
): Promise<{ run: string; factory: string }> {
  return page.evaluate(async ({ kind, bad }) => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    const describe = (error: Error) => `${error.name}: ${error.message}`;
    // deno-lint-ignore no-explicit-any
    const runner = (globalThis as any).boundedRunner;
    const run = await runner.run("export default 1;", { maxResultBytes: bad })
      .then(() => "ran", describe);
    const catalog = cordon.createRemoteCatalog({ baseUrl: location.origin });
    const options = { catalog, maxResultBytes: bad };
    const made = kind === "loader"
      ? cordon.createQuickJSLoader(options)
      : cordon.createQuickJSPool({
        ...options,
        size: 1,
        isolation: "worker",
        runnerUrl: new URL("/dist/cordon-runner.js", location.origin),
      });
    const factory = await made.then(
      async (made: AsyncDisposable & Disposable) => {
        if (kind === "loader") made[Symbol.dispose]();
        else await made[Symbol.asyncDispose]();
        return "made";
      },
      describe,
    );
    return { run, factory };
  }, { kind, bad });
}

for (const kind of KINDS) {
  test(`the ${kind} answers a value at maxResultBytes, refuses one byte more and a string repeated past it with RESULT_NOT_SERIALIZABLE, takes a run's own bound first, and refuses a bad bound`, async ({ page }) => {
    const { errors } = await openBundlePage(page);
    await makeRunner(page, kind, { maxResultBytes: 32 });
    assert.deepEqual(await runOnPage(page, resultOf(32)), {
      ok: true,
      value: `é${"x".repeat(28)}`,
    });
    // 32 characters, 33 bytes: only the caller's UTF-8 count refuses it.
    assert.equal(resultOf(33).length - "export default ;".length, 32);
    assert.deepEqual(await runOnPage(page, resultOf(33)), resultTooLarge(32));
    // A run's own bound comes before its runner's, lower or higher.
    assert.deepEqual(
      await runOnPage(page, "export default 1;", { maxResultBytes: 0 }),
      resultTooLarge(0),
    );
    assert.deepEqual(
      await runOnPage(page, resultOf(40), { maxResultBytes: 40 }),
      { ok: true, value: `é${"x".repeat(36)}` },
    );
    const shared = await runOnPage(page, SHARED, {
      maxResultBytes: SHARED_BYTES,
    });
    assert.equal(shared.ok, true, JSON.stringify(shared.code));
    assert.equal(JSON.stringify(shared.value).length, SHARED_BYTES);
    assert.deepEqual(
      await runOnPage(page, SHARED, { maxResultBytes: SHARED_BYTES - 1 }),
      resultTooLarge(SHARED_BYTES - 1),
    );
    // A bad bound is refused as the other bounds are.
    const range =
      /^RangeError: Cannot [^:]+: maxResultBytes must be an integer from 0 to 134217728 bytes$/;
    const past = await refusalsOnPage(page, kind, 2 ** 27 + 1);
    assert.match(past.run, range);
    assert.match(past.factory, range);
    const type =
      /^TypeError: Cannot [^:]+: maxResultBytes must be a number of bytes$/;
    const text = await refusalsOnPage(page, kind, "1");
    assert.match(text.run, type);
    assert.match(text.factory, type);
    assert.deepEqual(errors, []);
  });
}

test("a remote catalog's fetch aborted with a revoked Proxy once the server has answered ends the run and the prefetch with ABORTED, leaving no rejection unhandled", async ({ page }) => {
  const { errors } = await openBundlePage(page);
  const outcome = await page.evaluate(async () => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    const unhandled: string[] = [];
    const onUnhandled = (event: PromiseRejectionEvent) => {
      try {
        unhandled.push(String(event.reason));
      } catch {
        unhandled.push("a reason that cannot be read");
      }
    };
    globalThis.addEventListener("unhandledrejection", onUnhandled);
    const declaration = {
      source: 'import { greet } from "greet"; export default greet("Ada");',
      packages: ["greet"],
    };
    /** A catalog whose fetches abort `controller` once the server answered. */
    const abortingCatalog = (controller: AbortController, matches: string) =>
      cordon.createRemoteCatalog({
        baseUrl: location.origin,
        fetch: async (input: RequestInfo | URL, init?: RequestInit) => {
          const response = await fetch(input, init);
          if (String(input).includes(matches)) {
            const { proxy, revoke } = Proxy.revocable({}, {});
            revoke();
            // The body is still to be read.
            controller.abort(proxy);
          }
          return response;
        },
      });
    const answers: Record<string, string> = {};
    for (const matches of ["/api/sandbox-modules?", "/api/sandbox-modules/"]) {
      const prefetching = new AbortController();
      answers[`prefetch ${matches}`] = await abortingCatalog(
        prefetching,
        matches,
      ).prefetch(declaration, { signal: prefetching.signal }).then(
        () => "resolved",
        (error: { code?: string; cause?: unknown }) =>
          `${error.code} ${error.cause === prefetching.signal.reason}`,
      );
      const running = new AbortController();
      const loader = await cordon.createQuickJSLoader({
        catalog: abortingCatalog(running, matches),
      });
      const result = await loader.run(declaration, { signal: running.signal });
      answers[`run ${matches}`] = result.ok ? "ok" : result.error.code;
      loader[Symbol.dispose]();
    }
    // A rejection is reported unhandled once its turn is over.
    await new Promise((resolve) => setTimeout(resolve, 100));
    globalThis.removeEventListener("unhandledrejection", onUnhandled);
    return { answers, unhandled };
  });
  assert.deepEqual(outcome, {
    answers: {
      "prefetch /api/sandbox-modules?": "ABORTED true",
      "run /api/sandbox-modules?": "ABORTED",
      "prefetch /api/sandbox-modules/": "ABORTED true",
      "run /api/sandbox-modules/": "ABORTED",
    },
    unhandled: [],
  });
  assert.deepEqual(errors, []);
});

/**
 * What turns by requester answer for the runs of `letters` waiting at
 * once: each requester's next run in turn, those out of runs dropping out.
 * Requesters take their first turns in the order `answered` shows: which
 * joined the line first depends on how long each run took to prepare.
 */
function inTurns(letters: string, answered: string): string {
  const left = new Map<string, number>();
  for (const letter of answered) left.set(letter, 0);
  for (const letter of letters) left.set(letter, (left.get(letter) ?? 0) + 1);
  let turns = "";
  while (left.size > 0) {
    for (const [letter, count] of left) {
      turns += letter;
      if (count === 1) left.delete(letter);
      else left.set(letter, count - 1);
    }
  }
  return turns;
}

test("the pool takes waiting runs in turns by requester and refuses one past maxQueuedPerRequester with SANDBOX_BUSY", async ({ page }) => {
  const { errors } = await openBundlePage(page);
  await makeRunner(page, "pool", { maxQueuedPerRequester: 8 });
  const letters = "AAAAAAAABB-";
  const outcome = await page.evaluate(async (letters) => {
    // deno-lint-ignore no-explicit-any
    const pool = (globalThis as any).boundedRunner;
    const holder = new AbortController();
    // Only the pool's ending its runner ends this call.
    const holding = pool.run(
      "export default Array.prototype.indexOf.call({ length: 2e9 }, 1);",
      { timeoutMs: 60_000, signal: holder.signal },
    );
    const answered: string[] = [];
    const waits = [...letters].map((letter, i) =>
      pool.run(`export default ${i};`, {
        ...(letter === "-" ? {} : { requester: { tenantId: letter } }),
      }).then((result: { ok: boolean; value?: number }) => {
        if (result.ok && result.value === i) answered.push(letter);
        else answered.push(`${letter}:${JSON.stringify(result)}`);
      })
    );
    // Their preparations end within the turn: from the next one on, each
    // waits for the runner.
    await new Promise((resolve) => setTimeout(resolve, 0));
    const refused = await pool.run("export default 9;", {
      requester: { tenantId: "A" },
    });
    holder.abort();
    await Promise.all([holding, ...waits]);
    return {
      answered: answered.join(""),
      refused: refused.ok
        ? "ok"
        : `${refused.error.code}: ${refused.error.message}`,
    };
  }, letters);
  assert.equal(
    outcome.refused,
    "SANDBOX_BUSY: The QuickJS pool has as many runs of this requester waiting for a runner as its maxQueuedPerRequester allows (8): retry once this requester's runs finish, or raise maxQueuedPerRequester",
  );
  assert.equal(outcome.answered, inTurns(letters, outcome.answered));
  // First come, first served would answer all eight of A's before B's.
  assert.ok(outcome.answered.indexOf("B") <= 2, outcome.answered);
  assert.deepEqual(errors, []);
});
