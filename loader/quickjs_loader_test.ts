import assert from "node:assert/strict";
import wasmfileVariant from "@jitl/quickjs-wasmfile-release-sync";
import {
  CordonError,
  MAX_NESTING_DEPTH,
  type SandboxResult,
} from "../protocol/mod.ts";
import type { Declaration } from "../protocol/mod.ts";
import type { SandboxModuleCatalog } from "../catalog/types.ts";
import {
  createQuickJSLoader,
  QUICKJS_LOADER_DEFAULTS,
  type QuickJSVariant,
} from "./quickjs_loader.ts";
import { createQuickJSPool } from "./quickjs_pool.ts";
import { withPollutedPrototype } from "../protocol/_test_hostile_test.ts";
import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import { createTestCatalog } from "./_test_catalog_test.ts";
import { runScript } from "../tools/_script_run_test.ts";

const catalog = createTestCatalog([
  {
    name: "@t/state",
    exports: { ".": "./index.js" },
    files: { "./index.js": "export const settings = { mode: 'safe' };" },
  },
  {
    name: "@t/bad",
    exports: {
      "./escape": "./escape.js",
      "./other": "./other.js",
      "./dynamic": "./dynamic.js",
      "./attributes": "./attributes.js",
      "./broken": "./broken.js",
      "./throws": "./throws.js",
    },
    files: {
      "./escape.js": 'import "../../state/index.js";\nexport default 1;',
      "./other.js":
        'import { settings } from "@t/state";\nexport default settings;',
      "./dynamic.js": "export const load = () => import('./escape.js');",
      "./attributes.js":
        'import data from "./escape.js" with { type: "json" };\nexport default data;',
      "./broken.js": "export default );",
      "./throws.js": "throw new Error('pack failed at load');",
    },
  },
]);

function failure(result: SandboxResult): { code: string; message: string } {
  assert.equal(result.ok, false, JSON.stringify(result));
  return result.ok ? { code: "", message: "" } : result.error;
}

function value(result: SandboxResult): unknown {
  assert.equal(result.ok, true, JSON.stringify(result));
  return result.ok ? result.value : undefined;
}

Deno.test("run() answers a denied import and a guest's throw as failures, and a value as a success, when a polluted Object.prototype holds ok, value and code", async () => {
  using loader = await createQuickJSLoader({ catalog });
  await using pool = await createQuickJSPool({ catalog, size: 1 });
  const sources = [
    'import fs from "node:fs"; export default fs;',
    'throw new Error("guest failed");',
    "export default 2;",
  ];
  for (const runner of [loader, pool]) {
    const results = await withPollutedPrototype(
      { ok: true, value: "polluted", code: "polluted" },
      () => Promise.all(sources.map((source) => runner.run(source))),
    );
    assert.deepEqual(
      results.map((result) => result.ok ? result.value : result.error.code),
      ["IMPORT_NODE_BUILTIN", "GUEST_ERROR", 2],
    );
  }
});

Deno.test("createQuickJSLoader() checks its options", async () => {
  await assert.rejects(
    // deno-lint-ignore no-explicit-any
    () => createQuickJSLoader({} as any),
    TypeError,
  );
  await assert.rejects(
    () =>
      createQuickJSLoader({
        catalog,
        variant: { type: "async" } as unknown as QuickJSVariant,
      }),
    TypeError,
  );
  await assert.rejects(
    () => createQuickJSLoader({ catalog, timeoutMs: 0 }),
    RangeError,
  );
  await assert.rejects(
    () => createQuickJSLoader({ catalog, memoryLimitBytes: 1.5 }),
    RangeError,
  );
  await assert.rejects(
    // deno-lint-ignore no-explicit-any
    () => createQuickJSLoader({ catalog, maxLogBytes: "1" as any }),
    TypeError,
  );
});

Deno.test("createQuickJSLoader() and run() refuse a misspelt option, naming the closest one", async () => {
  await assert.rejects(
    () => createQuickJSLoader({ catalog, timeoutMS: 100 } as never),
    {
      name: "TypeError",
      message:
        "Cannot create the QuickJS loader: unknown option timeoutMS; did you mean timeoutMs?",
    },
  );
  using loader = await createQuickJSLoader({ catalog });
  const source = { source: "export default 1" };
  await assert.rejects(
    () => loader.run(source, { memoryLimit: 1e6 } as never),
    {
      name: "TypeError",
      message:
        "Cannot run the declaration: unknown option memoryLimit; did you mean memoryLimitBytes?",
    },
  );
  await assert.rejects(
    () => loader.run(source, { requester: { principalID: "ada" } } as never),
    {
      name: "TypeError",
      message:
        "Cannot run the declaration: unknown option requester.principalID; did you mean requester.principalId?",
    },
  );
});

Deno.test("QuickJSLoader.run() reads each option once, inherited ones included", async () => {
  using loader = await createQuickJSLoader({ catalog });
  let reads = 0;
  const options = Object.create({ maxLogBytes: 4 }, {
    timeoutMs: {
      enumerable: true,
      get() {
        reads++;
        return reads === 1 ? 1000 : -1;
      },
    },
  });
  const result = await loader.run(
    { source: "console.log('a long line'); export default 2;" },
    options,
  );
  assert.equal(value(result), 2);
  assert.equal(reads, 1);
  assert.equal(result.logsTruncated, true);
});

Deno.test("QuickJSLoader.run() throws for bad options and resolves for bad declarations", async () => {
  using loader = await createQuickJSLoader({ catalog });
  await assert.rejects(
    () => loader.run({ source: "export default 1" }, { timeoutMs: -1 }),
    RangeError,
  );
  await assert.rejects(
    () =>
      loader.run({ source: "export default 1" }, {
        signal: "stop" as unknown as AbortSignal,
      }),
    TypeError,
  );
  await assert.rejects(
    () =>
      loader.run({ source: "export default 1" }, {
        context: 1n as unknown as number,
      }),
    TypeError,
  );
  const invalid = await loader.run(
    { source: 42 } as unknown as Declaration,
  );
  assert.equal(failure(invalid).code, "DECLARATION_INVALID");
  assert.match(
    failure(invalid).message,
    /^The declaration is invalid at source: /,
  );
});

Deno.test("QuickJSLoader.run() and QuickJSPool.run() answer a declaration whose getter throws as DECLARATION_INVALID, calling it once", async () => {
  using loader = await createQuickJSLoader({ catalog });
  await using pool = await createQuickJSPool({ catalog, size: 1 });
  for (const runner of [loader, pool]) {
    let calls = 0;
    const result = await runner.run({
      source: "export default 1;",
      get packages(): string[] {
        calls++;
        throw new Error("not loaded");
      },
    });
    assert.deepEqual(result.ok ? result : result.error, {
      code: "DECLARATION_INVALID",
      name: "DeclarationError",
      message:
        "The declaration is invalid at packages: Cannot be read: it threw not loaded; pass { source, packages } with pack names or { specifier } objects",
    });
    assert.equal(calls, 1);
  }
});

Deno.test("QuickJSLoader.run() takes a plain source as a declaration without packages", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const result = await loader.run("export default (n) => n * 2;", {
    context: 21,
  });
  assert.equal(result.ok && result.value, 42);
  const denied = await loader.run(
    'import { add } from "@acme/undeclared"; export default add(1, 2);',
  );
  assert.equal(failure(denied).code, "IMPORT_UNDECLARED");
});

Deno.test("QuickJSLoader throws SANDBOX_DISPOSED after dispose, and disposing twice is harmless", async () => {
  const loader = await createQuickJSLoader({ catalog });
  assert.equal(loader.disposed, false);
  loader[Symbol.dispose]();
  loader[Symbol.dispose]();
  assert.equal(loader.disposed, true);
  await assert.rejects(
    () => loader.run({ source: "export default 1" }),
    (error: unknown) =>
      error instanceof CordonError && error.code === "SANDBOX_DISPOSED",
  );
});

Deno.test("QuickJSLoader.run() prefetches before it resolves, and a prefetch failure fails the run", async () => {
  const calls: string[] = [];
  const signals: (AbortSignal | undefined)[] = [];
  let refuse = false;
  const prefetching: SandboxModuleCatalog = {
    ...catalog,
    resolveForExecution(declaration) {
      calls.push("resolve");
      return catalog.resolveForExecution(declaration);
    },
    prefetch(_declaration, options) {
      calls.push("prefetch");
      signals.push(options?.signal);
      if (refuse) {
        return Promise.reject(
          new CordonError("FETCH_FAILED", 'Cannot fetch pack "@t/state"'),
        );
      }
      return Promise.resolve();
    },
  };
  using loader = await createQuickJSLoader({ catalog: prefetching });
  const controller = new AbortController();
  const ok = await loader.run({
    source:
      'import { settings } from "@t/state";\nexport default settings.mode;',
    packages: ["@t/state"],
  }, { signal: controller.signal });
  assert.equal(value(ok), "safe");
  assert.deepEqual(calls, ["prefetch", "resolve"]);
  // The prefetch's signal follows the caller's (and the run's deadline).
  assert.equal(signals[0]?.aborted, false);
  controller.abort();
  assert.equal(signals[0]?.aborted, true);
  refuse = true;
  const refused = await loader.run({
    source: "console.log('ran');\nexport default 1;",
    packages: ["@t/state"],
  });
  assert.deepEqual(failure(refused), {
    code: "FETCH_FAILED",
    name: "CordonError",
    message: 'Cannot fetch pack "@t/state"',
  });
  assert.deepEqual(refused.logs, []);
});

Deno.test("a pack module's syntax error names its file with control, bidi and separator characters escaped", async () => {
  const hidden = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
  const file = "./x\nINFO forged\u001b[2J\u202etxt\u2028\u0085.js";
  using loader = await createQuickJSLoader({
    catalog: createTestCatalog([{
      name: "odd",
      exports: { ".": file },
      files: { [file]: "export default (;" },
    }]),
  });
  const { code, message } = failure(
    await loader.run({
      source: 'import x from "odd";\nexport default x;',
      packages: ["odd"],
    }),
  );
  assert.equal(code, "PACK_MODULE_SYNTAX");
  assert.ok(!hidden.test(message), message);
  assert.ok(
    message.includes(
      String
        .raw`in "cordon-pack:odd@1.0.0/x\nINFO forged\u001b[2J\u202etxt\u2028\u0085.js"; `,
    ),
    message,
  );
});

Deno.test("each run gets a fresh context: pack state changed by one run is pristine in the next", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const declaration = {
    source:
      'import { settings } from "@t/state";\nconst before = settings.mode;\nsettings.mode = "changed";\nexport default [before, settings.mode];',
    packages: ["@t/state"],
  };
  assert.deepEqual(value(await loader.run(declaration)), ["safe", "changed"]);
  assert.deepEqual(value(await loader.run(declaration)), ["safe", "changed"]);
});

Deno.test("a pack module that leaves its pack, imports another pack or uses import() is denied at load", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const run = (subpath: string) =>
    loader.run({
      source: `import x from "@t/bad/${subpath}";\nexport default x;`,
      packages: ["@t/bad", "@t/state"],
    });
  assert.deepEqual(failure(await run("escape")), {
    code: "IMPORT_PATH_ESCAPE",
    name: "ImportDeniedError",
    message:
      'Cannot import "../../state/index.js" from pack "@t/bad" (./escape.js): the specifier leaves the pack; relative imports stay inside their pack, so fix or reinstall the pack',
  });
  assert.equal(failure(await run("other")).code, "IMPORT_PATH_ESCAPE");
  assert.equal(failure(await run("dynamic")).code, "IMPORT_DYNAMIC");
  assert.equal(failure(await run("attributes")).code, "IMPORT_ATTRIBUTES");
  assert.deepEqual(failure(await run("broken")), {
    code: "PACK_MODULE_SYNTAX",
    name: "SyntaxError",
    message:
      "A pack module is not a valid ES module: unexpected token in expression: ')' at line 1, column 16 in \"cordon-pack:@t/bad@1.0.0/broken.js\"; reinstall a vetted version of the pack",
  });
  const throws = await loader.run({
    source: 'import "@t/bad/throws";\nexport default 1;',
    packages: ["@t/bad"],
  });
  assert.deepEqual(failure(throws), {
    code: "GUEST_ERROR",
    name: "Error",
    message: "pack failed at load",
  });
});

Deno.test("an import() denied at run time fails the run even when guest code catches it", async () => {
  using loader = await createQuickJSLoader({ catalog });
  // The lexer cannot read this source, so only the run-time check sees the
  // import(); the guest then swallows the rejection.
  const result = await loader.run({
    source:
      "export const hidden = function () {} / import('node:fs').catch(() => 'swallowed');\nexport default async () => { await null; return 'finished'; };",
  });
  assert.deepEqual(failure(result), {
    code: "IMPORT_DYNAMIC",
    name: "ImportDeniedError",
    message:
      'Cannot import "node:fs" with import() in a sandbox module: dynamic import is denied; use static import declarations of declared packs',
  });
});

Deno.test("every intrinsic guest code can reach is frozen, and every global locked, before pack or guest code runs", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const result = await loader.run({
    source:
      `const { getOwnPropertyDescriptor, getPrototypeOf, isFrozen } = Object;
const roots = [
  globalThis,
  getPrototypeOf(function* () {}),
  getPrototypeOf(async function () {}),
  getPrototypeOf(async function* () {}),
  getPrototypeOf([][Symbol.iterator]()),
  getPrototypeOf(new Map()[Symbol.iterator]()),
  getPrototypeOf(new Set()[Symbol.iterator]()),
  getPrototypeOf(""[Symbol.iterator]()),
  getPrototypeOf("a".matchAll(/a/g)),
  getPrototypeOf(Iterator.from({ next() { return { done: true }; } })),
  getPrototypeOf([].values().map((item) => item)),
  Object.prototype.hasOwnProperty,
  Object.prototype.toString,
  Error.prototype.toString,
];
const seen = new Set();
const open = [];
const todo = [...roots];
while (todo.length > 0) {
  const object = todo.pop();
  if (seen.has(object)) continue;
  seen.add(object);
  // The global object takes new globals; its own properties are locked.
  // Error is checked below: it keeps stackTraceLimit writable.
  if (object !== globalThis && object !== Error && !isFrozen(object)) {
    open.push(String(object.name ?? object));
  }
  const proto = getPrototypeOf(object);
  if (proto !== null) todo.push(proto);
  for (const key of Reflect.ownKeys(object)) {
    const descriptor = getOwnPropertyDescriptor(object, key);
    for (const child of [descriptor.value, descriptor.get, descriptor.set]) {
      if ((typeof child === "object" && child !== null) || typeof child === "function") {
        todo.push(child);
      }
    }
  }
}
const unlocked = Reflect.ownKeys(globalThis).filter((key) => {
  const { configurable, writable } = getOwnPropertyDescriptor(globalThis, key);
  return configurable || writable === true;
}).map(String);
const errorOpen = {
  extensible: Object.isExtensible(Error),
  unlocked: Reflect.ownKeys(Error).filter((key) => {
    const { configurable, writable } = getOwnPropertyDescriptor(Error, key);
    return configurable || writable === true;
  }).map(String),
};
export default { checked: seen.size, open, unlocked, errorOpen };`,
  });
  const { checked, open, unlocked, errorOpen } = value(result) as {
    checked: number;
    open: string[];
    unlocked: string[];
    errorOpen: unknown;
  };
  assert.deepEqual(open, []);
  assert.deepEqual(unlocked, []);
  // Code sets and restores Error.stackTraceLimit; it cannot be redefined.
  assert.deepEqual(errorOpen, {
    extensible: false,
    unlocked: ["stackTraceLimit"],
  });
  assert.ok(checked > 500, `${checked} objects checked`);
});

Deno.test("guest code can catch a QuickJS stack overflow and go on", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const result = await loader.run({
    source:
      "function depth(n) { return depth(n + 1) + 1; }\nlet caught = 'no';\ntry { depth(0); } catch (error) { caught = error.message; }\nexport default caught;",
  });
  assert.equal(value(result), "stack overflow");
});

Deno.test("a stack overflow of the host's own stack fails the run and the loader keeps working", async () => {
  using loader = await createQuickJSLoader({ catalog });
  for (
    const source of [
      "async function deeper(n) { return await deeper(n + 1); }\nexport default deeper(0);",
      "let nested = {};\nfor (let i = 0; i < 200000; i++) nested = { nested };\nexport default JSON.stringify(nested).length;",
    ]
  ) {
    const result = await loader.run({ source }, {
      maxStackSizeBytes: 4 * 1024 * 1024,
    });
    assert.equal(failure(result).code, "STACK_OVERFLOW");
    assert.equal(
      value(await loader.run({ source: "export default 'alive';" })),
      "alive",
    );
  }
});

Deno.test("JSON.parse that meets QuickJS's own stack limit is a stack overflow, whatever the host's stack holds", async () => {
  using loader = await createQuickJSLoader({ catalog });
  // A limit small enough that QuickJS's check, not the host's stack, ends it.
  const result = await loader.run({
    source:
      "export default JSON.parse('['.repeat(2e4) + ']'.repeat(2e4)).length;",
  }, { maxStackSizeBytes: 64 * 1024 });
  assert.equal(failure(result).code, "STACK_OVERFLOW");
});

Deno.test("a guest that catches its stack overflow gets its value at the largest maxStackSizeBytes, where the thread's native stack holds less", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const result = await loader.run({
    source:
      "function f() { try { return f(); } catch { return 'bottom'; } }\nexport default f();",
  }, { maxStackSizeBytes: 4 * 1024 * 1024 });
  assert.equal(value(result), "bottom");
});

Deno.test("runs after an out-of-memory failure start with their own memory", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const bomb = await loader.run(
    { source: "const grown = [];\nfor (;;) grown.push(grown.length);" },
    { memoryLimitBytes: 8 * 1024 * 1024 },
  );
  assert.equal(failure(bomb).code, "OUT_OF_MEMORY");
  assert.match(failure(bomb).message, /memory limit of 8388608 bytes/);
  const next = await loader.run(
    { source: "export default new Uint8Array(4 * 1024 * 1024).length;" },
    { memoryLimitBytes: 8 * 1024 * 1024 },
  );
  assert.equal(value(next), 4 * 1024 * 1024);
});

Deno.test("an abort signal ends a run before it starts and while it waits", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const early = new AbortController();
  early.abort();
  const before = await loader.run(
    { source: "console.log('never');\nexport default 1;" },
    { signal: early.signal },
  );
  assert.equal(failure(before).code, "ABORTED");
  assert.deepEqual(before.logs, []);

  const late = new AbortController();
  const pending = loader.run(
    {
      source: "console.log('waiting');\nexport default new Promise(() => {});",
    },
    { signal: late.signal, timeoutMs: 60_000 },
  );
  await new Promise((resolve) => setTimeout(resolve, 20));
  late.abort();
  const during = await pending;
  assert.deepEqual(failure(during), {
    code: "ABORTED",
    name: "AbortError",
    message: "The run was aborted by its caller",
  });
  assert.deepEqual(during.logs, [{ level: "log", message: "waiting" }]);
});

Deno.test("runs that wait do not block other runs of the same loader", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const waiting = loader.run(
    { source: "export default new Promise(() => {});" },
    { timeoutMs: 300 },
  );
  const quick = await loader.run({
    source: "export default (context) => context.n + 1;",
  }, { context: { n: 1 } });
  assert.equal(value(quick), 2);
  assert.equal(failure(await waiting).code, "TIMEOUT");
});

Deno.test("per-run limits override the loader's defaults", async () => {
  using loader = await createQuickJSLoader({ catalog, maxLogBytes: 4 });
  const capped = await loader.run({
    source: "console.log('abcd');\nconsole.log('e');\nexport default 1;",
  });
  assert.deepEqual(capped.logs, [{ level: "log", message: "abcd" }]);
  assert.equal(capped.logsTruncated, true);
  const wider = await loader.run({
    source: "console.log('abcd');\nconsole.log('e');\nexport default 1;",
  }, { maxLogBytes: 100 });
  assert.equal(wider.logs.length, 2);
  assert.equal(wider.logsTruncated, false);
  assert.equal(wider.metrics.tier, "quickjs");
  assert.ok(wider.metrics.durationMs >= 0);
});

Deno.test("a loader built on the wasmfile variant gives the same answers", async () => {
  using loader = await createQuickJSLoader({
    catalog,
    variant: wasmfileVariant as unknown as QuickJSVariant,
  });
  const result = await loader.run({
    source:
      'import { settings } from "@t/state";\nexport default settings.mode;',
    packages: ["@t/state"],
  });
  assert.equal(value(result), "safe");
  assert.equal(
    failure(await loader.run({ source: "export default eval('1');" })).code,
    "GUEST_ERROR",
  );
});

const wasmfile = wasmfileVariant as unknown as QuickJSVariant;

/** Creates a loader on `variant` and returns why it was refused. */
async function refusalOf(variant: unknown): Promise<CordonError> {
  const error = await createQuickJSLoader({
    catalog,
    variant: variant as QuickJSVariant,
  }).then((loader) => {
    loader[Symbol.dispose]();
    return new Error("the loader was created");
  }, (error: unknown) => error);
  assert.ok(error instanceof CordonError, String(error));
  assert.equal(error.code, "QUICKJS_VARIANT_UNSUPPORTED");
  assert.match(error.message, /release sync build of quickjs-emscripten 0\.32/);
  return error;
}

Deno.test("createQuickJSLoader() refuses what is no variant object with a TypeError", async () => {
  for (const variant of [{}, "@jitl/quickjs-wasmfile-release-sync", 1]) {
    await assert.rejects(
      createQuickJSLoader({ catalog, variant: variant as QuickJSVariant }),
      TypeError,
    );
  }
});

Deno.test("createQuickJSLoader() refuses a variant whose reading throws with a TypeError that names it", async () => {
  const variant = new Proxy(wasmfile, {
    get(target, key, receiver) {
      if (key === "type") throw new Error("trap refused");
      return Reflect.get(target, key, receiver);
    },
  });
  await assert.rejects(
    createQuickJSLoader({ catalog, variant }),
    new TypeError(
      "Cannot create the QuickJS loader: variant could not be read: trap refused",
    ),
  );
});

Deno.test("createQuickJSLoader() reads each field of a variant once, so the build checked is the build started", async () => {
  const reads = { type: 0, importFFI: 0, importModuleLoader: 0 };
  const variant = {
    get type() {
      return reads.type++ === 0 ? "sync" : "async";
    },
    get importFFI() {
      reads.importFFI++;
      return wasmfile.importFFI;
    },
    get importModuleLoader() {
      return reads.importModuleLoader++ === 0
        ? wasmfile.importModuleLoader
        : () => Promise.reject(new Error("read again"));
    },
  };
  using loader = await createQuickJSLoader({
    catalog,
    variant: variant as unknown as QuickJSVariant,
  });
  assert.deepEqual(reads, { type: 1, importFFI: 1, importModuleLoader: 1 });
  const result = await loader.run({ source: "export default 6 * 7;" });
  assert.equal(result.ok && result.value, 42);
});

Deno.test("createQuickJSLoader() refuses an asyncify build with QUICKJS_VARIANT_UNSUPPORTED", async () => {
  // What every @jitl/quickjs-*-asyncify build is: a variant of type "async".
  const error = await refusalOf({ ...wasmfile, type: "async" });
  assert.match(error.message, /asyncify/);
});

Deno.test("createQuickJSLoader() refuses a build that cannot start with QUICKJS_VARIANT_UNSUPPORTED, and keeps why", async (t) => {
  // A build of another quickjs-emscripten version, or a debug build, fails
  // on the way too (0.31.0 while the loader finds its stack, a debug build
  // in the hardening), each with an error of its own.
  const builds: Record<string, unknown> = {
    "its module loader rejects": {
      ...wasmfile,
      importModuleLoader: () => Promise.reject(new Error("no such file")),
    },
    "its module loader answers no module": {
      ...wasmfile,
      importModuleLoader: () => Promise.resolve(42),
    },
    "its module throws": {
      ...wasmfile,
      importModuleLoader: () =>
        Promise.resolve(() => {
          throw new Error("not compiled for this environment");
        }),
    },
  };
  for (const [name, build] of Object.entries(builds)) {
    await t.step(name, async () => {
      const error = await refusalOf(build);
      assert.ok(error.cause instanceof Error);
    });
  }
});

Deno.test("createQuickJSLoader() names the exit of a build that exits on its way up, as a debug build's sanitizer does", async () => {
  // Emscripten ends a program with an ExitStatus, an object with a message
  // that is no Error: its refusal read "failed to start: [object Object]".
  const exitStatus = {
    name: "ExitStatus",
    message: "Program terminated with exit(23)",
    status: 23,
  };
  const exits = {
    ...wasmfile,
    importModuleLoader: () =>
      Promise.resolve(() => {
        throw exitStatus;
      }),
  };
  const error = await refusalOf(exits);
  assert.match(
    error.message,
    /failed to start: Program terminated with exit\(23\);/,
  );
  assert.equal(error.cause, exitStatus);
});

Deno.test("createQuickJSLoader() refuses a build whose memory it cannot cap, where its memory limit would not hold", async () => {
  // As the asm.js build (no WebAssembly memory at all) and a debug build
  // (another allocator) are: the memory the loader caps is not the one
  // QuickJS allocates in, and QuickJS's own limit counts 8 bytes an
  // allocation, so a guest could take gigabytes under a 16 MiB limit.
  const ownMemory = {
    ...wasmfile,
    importModuleLoader: async () => {
      const load = await wasmfile.importModuleLoader() as (
        options: Record<string, unknown>,
      ) => Promise<unknown>;
      return ({ wasmMemory: _, ...options }: Record<string, unknown>) =>
        load(options);
    },
  };
  const error = await refusalOf(ownMemory);
  assert.match(error.message, /memory/);
});

Deno.test("createQuickJSLoader() refuses a build without QuickJS's equality, as quickjs-ng's are", async () => {
  // quickjs-ng's C interface answers -1 ("not implemented") for equality,
  // which the loader asks when a run's memory ran out: such a run ended as
  // SANDBOX_CRASHED instead of OUT_OF_MEMORY, and quickjs-ng's guests see
  // other intrinsics (performance, Iterator.zip, Error.prepareStackTrace).
  const withoutEquality = {
    ...wasmfile,
    importFFI: async () => {
      const ffi = await wasmfile.importFFI() as new (
        module: unknown,
      ) => { QTS_IsEqual: () => number };
      return class extends ffi {
        constructor(module: unknown) {
          super(module);
          this.QTS_IsEqual = () => -1;
        }
      };
    },
  };
  const error = await refusalOf(withoutEquality);
  assert.match(error.message, /quickjs-ng/);
});

Deno.test("QUICKJS_LOADER_DEFAULTS are the documented limits", () => {
  assert.deepEqual({ ...QUICKJS_LOADER_DEFAULTS }, {
    timeoutMs: 5000,
    memoryLimitBytes: 64 * 1024 * 1024,
    maxStackSizeBytes: 256 * 1024,
    maxLogBytes: 64 * 1024,
  });
  assert.ok(Object.isFrozen(QUICKJS_LOADER_DEFAULTS));
});

Deno.test("a run under way when the loader is disposed still finishes", async () => {
  const loader = await createQuickJSLoader({ catalog });
  const pending = loader.run(
    { source: "export default new Promise(() => {});" },
    { timeoutMs: 100 },
  );
  loader[Symbol.dispose]();
  assert.equal(failure(await pending).code, "TIMEOUT");
});

Deno.test("a thrown value whose getters never return or never stop allocating still ends the run", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const looping = await loader.run(
    { source: "throw { get message() { for (;;) {} } };" },
    { timeoutMs: 200 },
  );
  assert.equal(failure(looping).code, "TIMEOUT");
  const growing = await loader.run(
    {
      source:
        "throw { get message() { const grown = []; for (;;) grown.push(grown.length); } };",
    },
    { memoryLimitBytes: 8 * 1024 * 1024 },
  );
  // The getter runs out of memory while the value is described: the run
  // ran out of memory, as it would have anywhere else. Memory stayed
  // bounded.
  assert.equal(failure(growing).code, "OUT_OF_MEMORY");
  assert.equal(value(await loader.run({ source: "export default 1;" })), 1);
  const throwing = await loader.run({
    source:
      "throw { get message() { throw new Error('inner'); }, toString() { return 'described'; } };",
  });
  assert.deepEqual(failure(throwing), {
    code: "GUEST_ERROR",
    name: "NonErrorThrown",
    message: "Guest code threw a non-Error value: described",
  });
});

Deno.test("a thrown value's getter holds no more than a few MiB past the run's limit while it is described", async () => {
  using loader = await createQuickJSLoader({ catalog });
  // Each getter keeps what it makes: 1 MB strings, up to 40 of them.
  const holding = await loader.run(
    {
      source: `throw { get message() {
        const kept = [];
        for (let i = 0; i < 40; i++) kept.push("x".repeat(1e6) + i);
        return "held " + kept.length + " MB";
      } };`,
    },
    { memoryLimitBytes: 8 * 1024 * 1024 },
  );
  assert.equal(failure(holding).code, "OUT_OF_MEMORY");
  assert.equal(value(await loader.run({ source: "export default 1;" })), 1);
});

Deno.test("Math.random gives every run its own sequence", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const declaration = {
    source: "export default [Math.random(), Math.random(), Math.random()];",
  };
  const first = value(await loader.run(declaration)) as number[];
  const second = value(await loader.run(declaration)) as number[];
  assert.notDeepEqual(first, second);
  for (const number of [...first, ...second]) {
    assert.ok(number >= 0 && number < 1, String(number));
  }
  assert.equal(
    value(
      await loader.run({
        source:
          "const seen = new Set(); for (let i = 0; i < 1000; i++) seen.add(Math.random()); export default seen.size;",
      }),
    ),
    1000,
  );
});

Deno.test("a run sees nothing earlier runs left behind, whatever ended them", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const fingerprint = {
    source: `import { settings } from "@t/state";
export default [settings.mode, Object.getOwnPropertyNames(globalThis).length,
  typeof globalThis.leaked, [1, 2, 3].map((n) => n * 2)];`,
    packages: ["@t/state"],
  };
  const before = value(await loader.run(fingerprint));
  const spoilers = [
    'import { settings } from "@t/state"; settings.mode = "changed"; globalThis.leaked = 1; export default 1;',
    "const a = []; for (;;) a.push('x'.repeat(4096));",
    "for (;;) {}",
    "const f = () => f(); f();",
    "export default new Promise(() => {});",
    "throw new Error('boom');",
  ];
  for (const source of spoilers) {
    await loader.run({ source, packages: ["@t/state"] }, {
      timeoutMs: 200,
      memoryLimitBytes: 8 * 1024 * 1024,
    });
    assert.deepEqual(value(await loader.run(fingerprint)), before, source);
  }
});

Deno.test("a result nested MAX_NESTING_DEPTH deep, or far past it, is copied or refused within the smallest run stack", async () => {
  // The marshalling's walk keeps its own stack of containers: one QuickJS
  // frame per level ran out before the cap on a pool's Web Worker in
  // Chromium, whose run stack is capped well under its thread's.
  using loader = await createQuickJSLoader({ catalog: createTestCatalog([]) });
  const limits = { maxStackSizeBytes: 32 * 1024 };
  const deep = await loader.run(
    {
      source:
        "let v = []; for (let i = 0; i < 10000; i++) v = [v]; export default v;",
    },
    limits,
  );
  assert.equal(deep.ok ? "value" : deep.error.code, "RESULT_NOT_SERIALIZABLE");
  const atCap = await loader.run(
    {
      source:
        `let v = {}; for (let i = 1; i < ${MAX_NESTING_DEPTH}; i++) v = { a: v }; export default v;`,
    },
    limits,
  );
  assert.equal(atCap.ok ? "value" : atCap.error.code, "value");
});

Deno.test("a run whose limit is far below its engine's gets three quarters of it, first on the engine or not", async () => {
  // Emscripten grows the memory by at least 5% of its length at a time, so
  // on an engine sized for more, the room of a small limit lay within one
  // step that passed the maximum: a 2 MiB run on the default engine, or an
  // 8 MiB run on a 1 GiB one, could not grow the memory at all.
  const holds = (mebibytes: number) =>
    `const keep = []; for (let i = 0; i < ${
      mebibytes * 4
    }; i++) keep.push(new Uint8Array(192 * 1024)); export default keep.length;`;
  const cases: [number, number[]][] = [[64, [2, 4, 8, 16]], [1024, [8, 32]]];
  for (const [engineMiB, limitsMiB] of cases) {
    using loader = await createQuickJSLoader({
      catalog,
      memoryLimitBytes: engineMiB * 1024 * 1024,
    });
    for (const limitMiB of limitsMiB) {
      const result = await loader.run({ source: holds(limitMiB) }, {
        memoryLimitBytes: limitMiB * 1024 * 1024,
      });
      assert.equal(
        result.ok && result.value,
        limitMiB * 4,
        `${limitMiB} MiB on an engine of ${engineMiB} MiB: ${
          JSON.stringify(result.ok ? result.value : result.error)
        }`,
      );
    }
  }
});

Deno.test("createQuickJSLoader() with the wasmfile build, on a host that may not read its WebAssembly file, answers SANDBOX_UNAVAILABLE naming --allow-read, not an unsupported build", async () => {
  const loaderUrl = new URL("./quickjs_loader.ts", import.meta.url).href;
  const emptyUrl = new URL("../catalog/empty_catalog.ts", import.meta.url).href;
  const answer = await runScript(`
import { createQuickJSLoader } from ${JSON.stringify(loaderUrl)};
import { EMPTY_CATALOG } from ${JSON.stringify(emptyUrl)};
import wasmfile from "@jitl/quickjs-wasmfile-release-sync";
try {
  await createQuickJSLoader({ catalog: EMPTY_CATALOG, variant: wasmfile });
  console.log(JSON.stringify({ created: true }));
} catch (error) {
  console.log(JSON.stringify({ code: error.code, message: error.message }));
}`) as { code?: string; message?: string };
  assert.equal(answer.code, "SANDBOX_UNAVAILABLE", JSON.stringify(answer));
  assert.match(answer.message ?? "", /may not read its WebAssembly file/);
  assert.match(answer.message ?? "", /--allow-read/);
});

Deno.test("a run over the disk catalog answers PACK_FILE_CHANGED for a pack whose file changed since discovery", async () => {
  const packs = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${packs}/greet`);
    await Deno.writeTextFile(
      `${packs}/greet/package.json`,
      JSON.stringify({
        name: "greet",
        version: "1.0.0",
        cordon: { exports: { ".": "./index.js" } },
      }),
    );
    await Deno.writeTextFile(
      `${packs}/greet/index.js`,
      'export const greet = (name) => "hi " + name;',
    );
    const catalog = await createDiskCatalog(packs);
    await Deno.writeTextFile(
      `${packs}/greet/index.js`,
      'export const greet = (name) => "bye " + name;',
    );
    using loader = await createQuickJSLoader({ catalog });
    const result = await loader.run({
      source: 'import { greet } from "greet"; export default greet("x");',
      packages: ["greet"],
    });
    assert.equal(result.ok === false && result.error.code, "PACK_FILE_CHANGED");
  } finally {
    await Deno.remove(packs, { recursive: true });
  }
});

Deno.test("createQuickJSLoader() refuses a catalog that is none with a TypeError naming catalog and what it lacks, where a catalog whose reads throw rejected with what it threw", async () => {
  const where = "Cannot create the QuickJS loader";
  const { proxy: revoked, revoke } = Proxy.revocable({}, {});
  revoke();
  const cases: [unknown, string | RegExp][] = [
    [
      null,
      `${where}: catalog must be a SandboxModuleCatalog, an object with resolveForExecution, authorizeDelivery and summaries methods; got null`,
    ],
    [
      "catalog",
      `${where}: catalog must be a SandboxModuleCatalog, an object with resolveForExecution, authorizeDelivery and summaries methods; got string`,
    ],
    [
      {},
      `${where}: catalog must be a SandboxModuleCatalog: it has no resolveForExecution, authorizeDelivery and summaries methods; implement them`,
    ],
    [
      { ...catalog, summaries: undefined },
      `${where}: catalog must be a SandboxModuleCatalog: it has no summaries method; implement it`,
    ],
    [
      new Proxy(catalog, {
        get() {
          throw new Error("the catalog's store is closed");
        },
      }),
      `${where}: reading catalog.resolveForExecution threw: the catalog's store is closed`,
    ],
    [
      revoked,
      new RegExp(`^${where}: reading catalog.resolveForExecution threw: `),
    ],
  ];
  for (const [given, message] of cases) {
    await assert.rejects(
      () => createQuickJSLoader({ catalog: given as SandboxModuleCatalog }),
      { name: "TypeError", message },
    );
  }
});
