import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import type { DeclarationInput, SandboxResult } from "../protocol/mod.ts";
import {
  createTestCatalog,
  frozenCatalog,
  type TestPack,
} from "./_test_catalog_test.ts";
import { createQuickJSLoader } from "./quickjs_loader.ts";
import { createQuickJSPool } from "./quickjs_pool.ts";

/**
 * Guests that try to leave something behind for the runs after them, or to
 * change what pack code sees, against a pack with state everywhere a guest
 * can reach: a top-level `Map`, an exported object, a class, a function
 * that reads a global lazily, and a module-level counter.
 */
const PACKS: TestPack[] = [{
  name: "@t/stateful",
  exports: { ".": "./index.js" },
  files: {
    "./index.js": `import { cache } from "./cache.js";
let calls = 0;
export const settings = { mode: "safe" };
export class Shape { area() { return 1; } }
export function count() { return ++calls; }
export function remember(key, value) { cache.set(key, value); return cache.size; }
export function hook() {
  return typeof globalThis.packHook === "function" ? globalThis.packHook() : "none";
}
export function serialize(value) { return JSON.stringify(value); }`,
    "./cache.js": "export const cache = new Map([['seed', 1]]);",
  },
}];

const PACKAGES = ["@t/stateful"];

/**
 * What a run sees of everything a guest could have touched: the pack's
 * state, the global object's own names and prototype, and a pack function
 * that reads a global only when called. A function, so it looks when it
 * is called, not when its module was evaluated.
 */
const FINGERPRINT = `import * as pack from "@t/stateful";
import { settings, Shape, count, remember, hook, serialize } from "@t/stateful";
export default () => {
  const globals = Reflect.ownKeys(globalThis).map(String).sort();
  return {
    settings: JSON.stringify(settings),
    shape: [new Shape().area(), Object.getOwnPropertyNames(Shape.prototype)],
    calls: [count(), count()],
    cacheSize: remember("probe", 1),
    hook: hook(),
    serialized: serialize({ a: [1] }),
    namespace: Object.keys(pack),
    globals: globals.length + ":" + globals.join(",").length,
    globalProto: Object.getPrototypeOf(globalThis) === Object.prototype,
    leaked: [typeof leaked, typeof packHook, typeof fromProto],
  };
};`;

/** Each one tries to leave state behind, then ends in its own way. */
const SPOILERS: Record<string, string> = {
  "writes every piece of pack state":
    `import { settings, Shape, count, remember } from "@t/stateful";
settings.mode = "changed"; settings.extra = true;
Shape.prototype.area = () => 99; Shape.prototype.added = 1;
for (let i = 0; i < 10; i++) { count(); remember("k" + i, i); }
export default 1;`,
  "adds globals and a global that pack code reads lazily":
    `globalThis.leaked = 1; globalThis.packHook = () => "hooked";
export default 1;`,
  "swaps the global object's prototype for a proxy":
    `Object.setPrototypeOf(globalThis, new Proxy({ fromProto: 1 }, {
  get: (target, key) => key === "packHook" ? () => "hooked" : Reflect.get(target, key),
}));
export default 1;`,
  "keeps pack objects in weak collections and a finalization registry":
    `import { settings, remember } from "@t/stateful";
globalThis.leaked = [new WeakMap([[settings, 1]]), new WeakRef(settings)];
new FinalizationRegistry(() => remember("finalized", 1)).register({}, 0);
let garbage = []; for (let i = 0; i < 1e5; i++) garbage.push({ i }); garbage = null;
export default 1;`,
  "leaves jobs pending that write pack state after its result":
    `import { remember, settings } from "@t/stateful";
function again(n) { remember("job" + n, n); settings.mode = "job"; return Promise.resolve(n + 1).then(again); }
export default () => { Promise.resolve(0).then(again); return 1; };`,
  "writes pack state, then never settles":
    `import { remember } from "@t/stateful";
remember("pending", 1);
export default new Promise(() => {});`,
  "writes pack state, then loops past its deadline":
    `import { remember, settings } from "@t/stateful";
remember("loop", 1); settings.mode = "loop";
for (;;) {}`,
  "writes pack state, then runs out of memory":
    `import { remember } from "@t/stateful";
remember("oom", 1);
const a = []; for (;;) a.push("x".repeat(1e5) + a.length);`,
  "writes pack state, then throws": `import { remember } from "@t/stateful";
remember("throw", 1);
throw new Error("boom");`,
};

interface Runs {
  run(
    declaration: DeclarationInput,
    options?: {
      context?: unknown;
      timeoutMs?: number;
      memoryLimitBytes?: number;
      maxLogBytes?: number;
    },
  ): Promise<SandboxResult>;
}

function valueOf(result: SandboxResult): unknown {
  assert.equal(result.ok, true, JSON.stringify(result));
  return result.ok ? result.value : undefined;
}

/** Runs every spoiler, and the fingerprint after each, on `runs`. */
async function nothingLeaks(runs: Runs): Promise<void> {
  const fingerprint = { source: FINGERPRINT, packages: PACKAGES };
  // One memory limit for every run, so they all share one engine. The
  // spoilers that loop or never settle end at the short time limit; the
  // fingerprint must answer, after a replaced runner's start or a cold
  // pack graph too, so its limit only bounds a run that never does.
  const memoryLimitBytes = 16 * 1024 * 1024;
  const limits = { timeoutMs: 300, memoryLimitBytes };
  const calm = { timeoutMs: 30_000, memoryLimitBytes };
  const pristine = valueOf(await runs.run(fingerprint, calm)) as {
    hook: string;
    calls: number[];
    cacheSize: number;
  };
  // The pack's state as a fresh evaluation leaves it.
  assert.equal(pristine.hook, "none");
  assert.deepEqual(pristine.calls, [1, 2]);
  assert.equal(pristine.cacheSize, 2);
  for (const [name, source] of Object.entries(SPOILERS)) {
    await runs.run({ source, packages: PACKAGES }, limits);
    assert.deepEqual(
      valueOf(await runs.run(fingerprint, calm)),
      pristine,
      `after a guest that ${name}`,
    );
  }
}

Deno.test("no guest leaves state for the next run, with its pack graph warm and its plan kept, in-thread and pooled", async (t) => {
  await t.step("in-thread, packs a catalog may change", async () => {
    using loader = await createQuickJSLoader({
      catalog: createTestCatalog(PACKS),
    });
    await nothingLeaks(loader);
  });
  await t.step("in-thread, frozen packs whose plans are kept", async () => {
    using loader = await createQuickJSLoader({
      catalog: frozenCatalog(createTestCatalog(PACKS)),
    });
    await nothingLeaks(loader);
  });
  await t.step("a pool of one runner", async () => {
    await using pool = await createQuickJSPool({
      catalog: frozenCatalog(createTestCatalog(PACKS)),
      size: 1,
    });
    await nothingLeaks(pool);
  });
});

Deno.test("a global a guest adds or inherits is seen by pack functions it calls, in its own run only", async () => {
  using loader = await createQuickJSLoader({
    catalog: frozenCatalog(createTestCatalog(PACKS)),
  });
  const hooked = `import { hook, serialize } from "@t/stateful";
globalThis.packHook = () => "hooked";
export default [hook(), serialize([1])];`;
  // Packs are vetted and called by the guest anyway: a global the guest
  // adds is the guest's own input to them, as an argument would be; the
  // realm's own globals (JSON here) stay the realm's.
  assert.deepEqual(
    valueOf(await loader.run({ source: hooked, packages: PACKAGES })),
    ["hooked", "[1]"],
  );
  const plain = `import { hook } from "@t/stateful"; export default hook();`;
  assert.equal(
    valueOf(await loader.run({ source: plain, packages: PACKAGES })),
    "none",
  );
});

Deno.test("two loaders over one disk catalog keep each other's runs apart", async () => {
  const catalog = await createDiskCatalog(
    fileURLToPath(new URL("../fixtures/packs", import.meta.url)),
  );
  using first = await createQuickJSLoader({ catalog });
  using second = await createQuickJSLoader({ catalog });
  const declaration = {
    source: `import { add } from "@cordon-fixtures/math";
export default (context) => {
  globalThis.marks = (globalThis.marks ?? 0) + 1;
  return [add(context.run, 1), globalThis.marks];
};`,
    packages: ["@cordon-fixtures/math"],
  };
  for (let run = 0; run < 3; run++) {
    const options = { context: { run } };
    for (const loader of [first, second]) {
      assert.deepEqual(valueOf(await loader.run(declaration, options)), [
        run + 1,
        1,
      ]);
    }
  }
});

Deno.test("a guest's own throw null stays its error; null after an allocation the limit refused is OUT_OF_MEMORY", async () => {
  using loader = await createQuickJSLoader({ catalog: createTestCatalog([]) });
  const limits = { memoryLimitBytes: 16 * 1024 * 1024 };
  const own = await loader.run(
    "const a = []; for (let i = 0; i < 1e5; i++) a.push('x' + i); throw null;",
    limits,
  );
  assert.deepEqual(!own.ok && [own.error.code, own.error.name], [
    "GUEST_ERROR",
    "NonErrorThrown",
  ]);
  const refused = await loader.run(
    "export default 'a'.repeat(3e6).split('').length;",
    limits,
  );
  assert.equal(!refused.ok && refused.error.code, "OUT_OF_MEMORY");
  // Caught, the refusal is the guest's to handle.
  const caught = await loader.run(
    "try { 'a'.repeat(3e6).split(''); } catch {} export default 'handled';",
    limits,
  );
  assert.equal(caught.ok && caught.value, "handled");
});

Deno.test("console calls with empty messages stay within maxLogBytes, in-thread and pooled", async () => {
  const catalog = createTestCatalog([]);
  using loader = await createQuickJSLoader({ catalog });
  await using pool = await createQuickJSPool({ catalog, size: 1 });
  const source =
    "for (let i = 0; i < 1e5; i++) { console.log(); console.info(''); } export default 1;";
  for (const runs of [loader, pool] as Runs[]) {
    const result = await runs.run({ source }, { maxLogBytes: 1000 });
    assert.equal(valueOf(result), 1);
    // An empty entry counts as one byte.
    assert.equal(result.logs.length, 1000);
    assert.equal(result.logsTruncated, true);
  }
});

Deno.test("a pack whose top-level code runs out of memory in localeCompare is OUT_OF_MEMORY, in-thread and pooled", async () => {
  // localeCompare's normalisation fails without making an error, and
  // QuickJS throws its uninitialized marker from the pack's top level.
  const catalog = createTestCatalog([{
    name: "@t/compares",
    exports: { ".": "./index.js" },
    files: {
      "./index.js": "export const order = 'a'.repeat(1e6).localeCompare('b');",
    },
  }]);
  const declaration: DeclarationInput = {
    source: 'import { order } from "@t/compares"; export default order;',
    packages: ["@t/compares"],
  };
  const limits = { memoryLimitBytes: 8 * 1024 * 1024 };
  using loader = await createQuickJSLoader({ catalog });
  await using pool = await createQuickJSPool({
    catalog,
    size: 1,
    isolation: "in-thread",
  });
  for (const runs of [loader, pool]) {
    const result = await runs.run(declaration, limits);
    assert.equal(!result.ok && result.error.code, "OUT_OF_MEMORY");
  }
});
