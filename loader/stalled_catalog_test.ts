import assert from "node:assert/strict";
import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import type { SandboxModuleCatalog } from "../catalog/types.ts";
import type { SandboxResult } from "../protocol/mod.ts";
import { unhandledDuring } from "../protocol/_test_unhandled_test.ts";
import { deferred } from "./_deferred.ts";
import { createTestCatalog } from "./_test_catalog_test.ts";
import { createQuickJSLoader } from "./quickjs_loader.ts";
import { createQuickJSPool } from "./quickjs_pool.ts";

// A catalog written by a user may ignore the signal it is given and never
// settle: the run's timeoutMs and the caller's signal must still end the run.

const packs = createTestCatalog([
  {
    name: "@t/state",
    exports: { ".": "./index.js" },
    files: { "./index.js": "export const mode = 'safe';" },
  },
]);

const DECLARATION = {
  source: 'import { mode } from "@t/state"; export default mode;',
  packages: ["@t/state"],
};

/** What a stalled catalog lets a test see: the signals its calls got. */
interface Stalled {
  catalog: SandboxModuleCatalog;
  /** Resolves with the prefetch's signal once the loader called it. */
  prefetched: Promise<AbortSignal>;
  /**
   * Resolves with the signal `authorizeDelivery` got (`undefined` when it
   * got none) once the loader called it.
   */
  authorized: Promise<AbortSignal | undefined>;
}

/**
 * A catalog whose prefetch ignores its signal and never settles, or (with
 * `stall: "entitlement"`) whose prefetch resolves and whose
 * `authorizeDelivery` never settles.
 */
function stalledCatalog(stall: "prefetch" | "entitlement"): Stalled {
  const called = deferred<AbortSignal>();
  const asked = deferred<AbortSignal | undefined>();
  const never = new Promise<never>(() => {});
  const catalog: SandboxModuleCatalog = {
    ...packs,
    prefetch(_declaration, options) {
      called.resolve(options?.signal ?? new AbortController().signal);
      return stall === "prefetch" ? never : Promise.resolve();
    },
    authorizeDelivery(_moduleId, _requester, options) {
      asked.resolve(options?.signal);
      return never;
    },
  };
  return { catalog, prefetched: called.promise, authorized: asked.promise };
}

function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) =>
    signal.addEventListener("abort", () => resolve(), { once: true })
  );
}

/** One turn of the event loop: every microtask queued before it has run. */
function nextTask(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** The run's answer if it settled by now, or `"pending"`. */
async function settledNow(
  run: Promise<SandboxResult>,
): Promise<SandboxResult | "pending"> {
  let answer: SandboxResult | "pending" = "pending";
  run.then((result) => answer = result, () => {});
  await nextTask();
  return answer;
}

function codeOf(answer: SandboxResult | "pending"): string {
  if (answer === "pending") return "pending";
  return answer.ok ? "ok" : answer.error.code;
}

interface Runner extends AsyncDisposable {
  run: Awaited<ReturnType<typeof createQuickJSLoader>>["run"];
}

const RUNNERS: Record<string, (c: SandboxModuleCatalog) => Promise<Runner>> = {
  "createQuickJSLoader()": async (catalog) => {
    const loader = await createQuickJSLoader({ catalog });
    return {
      run: (declaration, options) => loader.run(declaration, options),
      [Symbol.asyncDispose]: () => {
        loader[Symbol.dispose]();
        return Promise.resolve();
      },
    };
  },
  "createQuickJSPool()": (catalog) => createQuickJSPool({ catalog, size: 1 }),
};

for (const [name, create] of Object.entries(RUNNERS)) {
  for (const stall of ["prefetch", "entitlement"] as const) {
    Deno.test(`${name} run() fails with TIMEOUT at its timeoutMs when a user catalog's ${stall} never settles`, async () => {
      const { catalog, prefetched } = stalledCatalog(stall);
      await using runner = await create(catalog);
      const run = runner.run(DECLARATION, { timeoutMs: 20, requester: {} });
      await aborted(await prefetched);
      const answer = await settledNow(run);
      assert.equal(codeOf(answer), "TIMEOUT");
      assert.match(
        answer !== "pending" && !answer.ok ? answer.error.message : "",
        /time limit of 20 ms/,
      );
    });

    Deno.test(`${name} run() fails with ABORTED when its signal aborts while a user catalog's ${stall} never settles`, async () => {
      const { catalog, prefetched } = stalledCatalog(stall);
      await using runner = await create(catalog);
      const controller = new AbortController();
      const run = runner.run(DECLARATION, {
        requester: {},
        signal: controller.signal,
      });
      await prefetched;
      // The entitlement check starts once the prefetch resolved.
      await nextTask();
      controller.abort("gone");
      assert.equal(codeOf(await settledNow(run)), "ABORTED");
    });
  }
}

for (const [name, create] of Object.entries(RUNNERS)) {
  Deno.test(`${name} run() aborts the signal a user catalog's authorizeDelivery got, with a TimeoutError naming timeoutMs, when the run's timeoutMs passes`, async () => {
    const { catalog, authorized } = stalledCatalog("entitlement");
    await using runner = await create(catalog);
    const run = runner.run(DECLARATION, { timeoutMs: 20, requester: {} });
    const signal = await authorized;
    assert.ok(signal instanceof AbortSignal, "authorizeDelivery got no signal");
    await aborted(signal);
    assert.equal(codeOf(await settledNow(run)), "TIMEOUT");
    const reason = signal.reason as DOMException;
    assert.equal(reason.name, "TimeoutError");
    assert.match(reason.message, /timeoutMs \(20 ms\)/);
  });

  Deno.test(`${name} run() aborts the signal a user catalog's authorizeDelivery got, with the caller's reason, when the caller aborts`, async () => {
    const { catalog, authorized } = stalledCatalog("entitlement");
    await using runner = await create(catalog);
    const controller = new AbortController();
    const run = runner.run(DECLARATION, {
      requester: {},
      signal: controller.signal,
    });
    const signal = await authorized;
    assert.equal(signal?.aborted, false);
    controller.abort("gone");
    assert.equal(signal?.aborted, true);
    assert.equal(signal?.reason, "gone");
    assert.equal(codeOf(await settledNow(run)), "ABORTED");
  });
}

/**
 * A disk catalog over the fixture packs whose entitlement policy never
 * answers, and the signal the policy got once it was asked.
 */
async function stalledPolicy(): Promise<{
  catalog: SandboxModuleCatalog;
  asked: Promise<AbortSignal | undefined>;
}> {
  const asked = deferred<AbortSignal | undefined>();
  const catalog = await createDiskCatalog(
    new URL("../fixtures/packs/", import.meta.url),
    {
      entitlement: (_pack, _requester, options) => {
        asked.resolve(options?.signal);
        return new Promise<never>(() => {});
      },
    },
  );
  return { catalog, asked: asked.promise };
}

for (const [name, create] of Object.entries(RUNNERS)) {
  Deno.test(`${name} run() aborts the signal a disk catalog's entitlement policy got, with a TimeoutError naming timeoutMs, when the run's timeoutMs passes`, async () => {
    const { catalog, asked } = await stalledPolicy();
    await using runner = await create(catalog);
    const run = runner.run({
      source: 'import { greet } from "greet"; export default greet("Ada");',
      packages: ["greet"],
    }, { timeoutMs: 20, requester: {} });
    const signal = await asked;
    assert.ok(signal instanceof AbortSignal, "the policy got no signal");
    await aborted(signal);
    assert.equal(codeOf(await settledNow(run)), "TIMEOUT");
    const reason = signal.reason as DOMException;
    assert.equal(reason.name, "TimeoutError");
    assert.match(reason.message, /timeoutMs \(20 ms\)/);
  });
}

for (const stall of ["prefetch", "entitlement"] as const) {
  Deno.test(`createQuickJSPool() run() fails with SANDBOX_DISPOSED when the pool is disposed while a user catalog's ${stall} never settles`, async () => {
    const { catalog, prefetched } = stalledCatalog(stall);
    const pool = await createQuickJSPool({ catalog, size: 1 });
    // A time limit no wait of this test reaches: only the disposal ends it.
    const run = pool.run(DECLARATION, { requester: {}, timeoutMs: 600_000 });
    const signal = await prefetched;
    // The entitlement check starts once the prefetch resolved.
    await nextTask();
    await pool[Symbol.asyncDispose]();
    assert.equal(codeOf(await settledNow(run)), "SANDBOX_DISPOSED");
    // The catalog was told to stop fetching for the pool that is gone.
    assert.equal(signal.aborted, true);
  });
}

/** User catalogs that break the interface, each in its own way. */
const BROKEN: Record<string, Partial<SandboxModuleCatalog>> = {
  "a prefetch that throws a string": {
    prefetch: () => {
      throw "offline";
    },
  },
  "a prefetch that rejects with undefined": {
    prefetch: () => Promise.reject(undefined),
  },
  "a resolveForExecution that throws an object with a throwing getter": {
    resolveForExecution: () => {
      throw {
        get message(): string {
          throw new Error("no message");
        },
      };
    },
  },
  "a resolveForExecution that answers null": {
    resolveForExecution: () => null as never,
  },
  "a resolveForExecution that answers a promise": {
    resolveForExecution: (declaration) =>
      Promise.resolve(packs.resolveForExecution(declaration)) as never,
  },
  "an authorizeDelivery that answers null": {
    authorizeDelivery: () => Promise.resolve(null as never),
  },
  "a resolveForExecution that throws a Proxy whose every trap throws": {
    resolveForExecution: () => {
      throw trapsThrow();
    },
  },
  "an authorizeDelivery that rejects with a Proxy whose every trap throws": {
    authorizeDelivery: () => Promise.reject(trapsThrow()),
  },
  "a resolveForExecution whose modules are null": {
    resolveForExecution: (declaration) => ({
      ...packs.resolveForExecution(declaration),
      modules: null as never,
    }),
  },
  "a resolveForExecution that gives an ok status for a pack it leaves out": {
    resolveForExecution: (declaration) => ({
      ...packs.resolveForExecution(declaration),
      packs: {},
    }),
  },
  "a resolveForExecution whose pack exports a module it leaves out": {
    resolveForExecution: (declaration) => {
      const resolution = packs.resolveForExecution(declaration);
      const pack = resolution.packs["@t/state"]!;
      return {
        ...resolution,
        packs: { [pack.name]: { ...pack, exports: { ".": "m999" } } },
      };
    },
  },
  "a resolveForExecution that resolves a pack the declaration does not name": {
    resolveForExecution: (declaration) => {
      const resolution = packs.resolveForExecution(declaration);
      const pack = resolution.packs["@t/state"]!;
      return {
        ...resolution,
        packs: {
          ...resolution.packs,
          "@t/extra": { ...pack, name: "@t/extra" },
        },
      };
    },
  },
  "a resolveForExecution whose failing status has no message text": {
    resolveForExecution: () => ({
      statuses: [{
        name: "@t/state",
        status: "unavailable",
        code: "DELIVERY_UNAVAILABLE",
        message: 42 as unknown as string,
      }],
      packs: {},
      modules: {},
      installed: [],
    }),
  },
  "an authorizeDelivery whose refusal has no message text": {
    authorizeDelivery: () =>
      Promise.resolve({
        ok: false,
        reason: "unavailable",
        code: "DELIVERY_UNAVAILABLE",
        message: null as unknown as string,
      }),
  },
};

/** A value whose every proxy trap throws, as a hostile catalog may throw. */
function trapsThrow(): object {
  const handler = new Proxy({}, {
    get: () => () => {
      throw new Error("trap");
    },
  });
  return new Proxy({}, handler);
}

for (const [name, create] of Object.entries(RUNNERS)) {
  Deno.test(`${name} run() fails with CATALOG_FAILED, and runs on, when a user catalog breaks the interface`, async (t) => {
    for (const [how, broken] of Object.entries(BROKEN)) {
      await t.step(how, async () => {
        // Broken for the first run only, so the next run shows the runner
        // itself is unharmed.
        let first = true;
        const once = <K extends keyof SandboxModuleCatalog>(key: K) =>
          ((...args: unknown[]) => {
            const method = first && broken[key] ? broken[key] : packs[key];
            return (method as (...a: unknown[]) => unknown)?.apply(packs, args);
          }) as SandboxModuleCatalog[K];
        await using runner = await create({
          resolveForExecution: once("resolveForExecution"),
          authorizeDelivery: once("authorizeDelivery"),
          summaries: once("summaries"),
          prefetch: once("prefetch"),
        });
        const result = await runner.run(DECLARATION, { requester: {} });
        first = false;
        assert.equal(!result.ok && result.error.code, "CATALOG_FAILED");
        assert.match(
          !result.ok ? result.error.message : "",
          /^The catalog failed while preparing the run: .+; fix the catalog, which must implement SandboxModuleCatalog$/,
        );
        const next = await runner.run(DECLARATION, { requester: {} });
        assert.equal(next.ok && next.value, "safe");
      });
    }
  });
}

for (const [name, create] of Object.entries(RUNNERS)) {
  Deno.test(`${name} run() fails with CATALOG_FAILED, not GUEST_ERROR, when a user catalog gives a module no source text`, async () => {
    await using runner = await create({
      resolveForExecution: (declaration) => {
        const resolution = packs.resolveForExecution(declaration);
        const modules = Object.fromEntries(
          Object.entries(resolution.modules).map((
            [id, module],
          ) => [id, { ...module, source: 42 as unknown as string }]),
        );
        return { ...resolution, modules };
      },
      authorizeDelivery: (id, requester) =>
        packs.authorizeDelivery(id, requester),
      summaries: () => packs.summaries(),
    });
    const result = await runner.run(DECLARATION);
    assert.equal(!result.ok && result.error.code, "CATALOG_FAILED");
    assert.match(
      !result.ok ? result.error.message : "",
      /^The catalog gave pack module "[^"]+" no source text \(its source is a number\); fix the catalog, which must implement SandboxModuleCatalog$/,
    );
  });
}

for (const [name, create] of Object.entries(RUNNERS)) {
  Deno.test(`${name} run() names the field a user catalog's resolution lacks`, async () => {
    await using runner = await create({
      ...packs,
      resolveForExecution: (declaration) => {
        const { statuses: _, ...rest } = packs.resolveForExecution(declaration);
        return rest as never;
      },
    });
    const result = await runner.run(DECLARATION);
    assert.equal(!result.ok && result.error.code, "CATALOG_FAILED");
    assert.match(
      !result.ok ? result.error.message : "",
      /: its resolution has statuses that are undefined; fix the catalog/,
    );
  });

  Deno.test(`${name} run() says a user catalog's resolveForExecution answered a promise, and leaves no rejection of it unhandled`, async () => {
    await using runner = await create({
      ...packs,
      resolveForExecution: () =>
        Promise.reject(new Error("resolved too late")) as never,
    });
    let result: SandboxResult | undefined;
    const unhandled = await unhandledDuring(async () => {
      result = await runner.run(DECLARATION);
    });
    assert.deepEqual(unhandled, []);
    assert.equal(result?.ok === false && result.error.code, "CATALOG_FAILED");
    assert.match(
      result?.ok === false ? result.error.message : "",
      /: its resolution is a promise: resolveForExecution answers at once, and a catalog that must wait does so in prefetch; fix the catalog/,
    );
  });

  Deno.test(`${name} run() fails with CATALOG_FAILED when a user catalog's prefetch getter throws`, async () => {
    const catalog = new Proxy(packs, {
      get(target, key, receiver) {
        if (key === "prefetch") throw new Error("no prefetch today");
        return Reflect.get(target, key, receiver);
      },
    });
    await using runner = await create(catalog);
    const result = await runner.run(DECLARATION);
    assert.equal(!result.ok && result.error.code, "CATALOG_FAILED");
    assert.match(
      !result.ok ? result.error.message : "",
      /: Error: no prefetch today; fix the catalog/,
    );
  });

  Deno.test(`${name} run() reads a user catalog's prefetch once, so one its getter gives only later is never called unbounded`, async () => {
    const called = deferred<"called">();
    let reads = 0;
    const catalog = new Proxy(packs, {
      get(target, key, receiver) {
        if (key !== "prefetch") return Reflect.get(target, key, receiver);
        // No prefetch when the run looks, then one that never settles.
        if (reads++ === 0) return undefined;
        return () => {
          called.resolve("called");
          return new Promise<never>(() => {});
        };
      },
    });
    await using runner = await create(catalog);
    const answer = await Promise.race([
      runner.run(DECLARATION),
      called.promise,
    ]);
    assert.notEqual(answer, "called");
    assert.equal(answer !== "called" && answer.ok && answer.value, "safe");
  });
}

for (const [name, create] of Object.entries(RUNNERS)) {
  Deno.test(`${name} run() scans a pack module again when a user catalog changes its source under the same id and digest`, async () => {
    let changed = false;
    await using runner = await create({
      ...packs,
      resolveForExecution: (declaration) => {
        const resolution = packs.resolveForExecution(declaration);
        if (!changed) return resolution;
        const modules = Object.fromEntries(
          Object.entries(resolution.modules).map(([id, module]) => [id, {
            ...module,
            source:
              `import "./index.js" with { type: "json" };\n${module.source}`,
          }]),
        );
        return { ...resolution, modules };
      },
    });
    const first = await runner.run(DECLARATION);
    assert.equal(first.ok && first.value, "safe");
    changed = true;
    const second = await runner.run(DECLARATION);
    assert.equal(!second.ok && second.error.code, "IMPORT_ATTRIBUTES");
  });
}

for (const [name, create] of Object.entries(RUNNERS)) {
  Deno.test(`${name} run() fails with MODULE_NOT_FOUND when a user catalog's entitlement check no longer finds the declared pack's module`, async () => {
    await using runner = await create({
      ...packs,
      authorizeDelivery: () =>
        Promise.resolve({
          ok: false,
          reason: "not-found",
          code: "MODULE_NOT_FOUND",
          message: "No installed module has this id",
        }),
    });
    const result = await runner.run(DECLARATION, { requester: {} });
    assert.equal(!result.ok && result.error.code, "MODULE_NOT_FOUND");
    assert.equal(
      !result.ok && result.error.message,
      "No installed module has this id",
    );
  });
}

const twoPacks = createTestCatalog([
  {
    name: "@t/state",
    exports: { ".": "./index.js" },
    files: { "./index.js": "export const mode = 'safe';" },
  },
  {
    name: "@t/other",
    exports: { ".": "./index.js" },
    files: { "./index.js": "export const other = 1;" },
  },
]);

for (const [name, create] of Object.entries(RUNNERS)) {
  Deno.test(`${name} run() aborts the signal of an entitlement check still under way once another pack's check failed the run`, async () => {
    const broken = new Set(Object.values(
      twoPacks.resolveForExecution({ source: "", packages: ["@t/state"] })
        .packs["@t/state"]!.files,
    ));
    const stalled = deferred<AbortSignal | undefined>();
    const catalog: SandboxModuleCatalog = {
      ...twoPacks,
      authorizeDelivery(moduleId, _requester, options) {
        if (broken.has(moduleId)) {
          return Promise.resolve({ nonsense: true } as never);
        }
        stalled.resolve(options?.signal);
        return new Promise<never>(() => {});
      },
    };
    await using runner = await create(catalog);
    const answer = await runner.run({
      source: 'import { mode } from "@t/state"; export default mode;',
      packages: ["@t/state", "@t/other"],
    }, { timeoutMs: 60_000, requester: {} });
    assert.equal(codeOf(answer), "CATALOG_FAILED");
    const signal = await stalled.promise;
    assert.ok(signal instanceof AbortSignal, "authorizeDelivery got no signal");
    assert.equal(signal.aborted, true);
    assert.equal((signal.reason as DOMException).name, "AbortError");
  });
}
