import assert from "node:assert/strict";
import { createVmSandbox } from "../vm/vm_sandbox.ts";
import { createTestCatalog } from "../loader/_test_catalog_test.ts";
import wasmfileVariant from "@jitl/quickjs-wasmfile-release-sync";
import {
  createQuickJSLoader,
  type QuickJSVariant,
} from "../loader/quickjs_loader.ts";
import { realmSource } from "./realm_source.ts";
import { hiddenIntrinsics } from "./hidden_intrinsics.ts";

/**
 * Runs in the guest: whether each well-known intrinsic, reached from
 * `globalThis` or by code, is frozen (`null` when the engine lacks it).
 */
function frozenIntrinsics(): Record<string, boolean | null> {
  const { getOwnPropertyDescriptor, getPrototypeOf, isFrozen } = Object;
  // Error is frozen but for Error.stackTraceLimit, a writable number that
  // cannot be redefined or deleted (see realm/lockdown.ts).
  const isLocked = (value: object): boolean =>
    isFrozen(value) ||
    (value === Error && !Object.isExtensible(value) &&
      Reflect.ownKeys(value).every((key) => {
        const descriptor = getOwnPropertyDescriptor(value, key)!;
        return !descriptor.configurable &&
          (key === "stackTraceLimit"
            ? typeof descriptor.value === "number"
            : !descriptor.writable);
      }));
  const G = globalThis as unknown as Record<string, Record<string, unknown>>;
  const protoOf = (name: string) => () => G[name]!.prototype;
  const reaches: [string, () => unknown][] = [
    ["Object", () => G.Object],
    ["Object.prototype", protoOf("Object")],
    ["Function", () => G.Function],
    ["Function.prototype", protoOf("Function")],
    ["Array", () => G.Array],
    ["Array.prototype", protoOf("Array")],
    ["String.prototype", protoOf("String")],
    ["Number.prototype", protoOf("Number")],
    ["Boolean.prototype", protoOf("Boolean")],
    ["Symbol", () => G.Symbol],
    ["Symbol.prototype", protoOf("Symbol")],
    ["BigInt.prototype", protoOf("BigInt")],
    ["RegExp.prototype", protoOf("RegExp")],
    ["Date.prototype", protoOf("Date")],
    ["Promise", () => G.Promise],
    ["Promise.prototype", protoOf("Promise")],
    ["Error", () => G.Error],
    ["Error.prototype", protoOf("Error")],
    ["EvalError.prototype", protoOf("EvalError")],
    ["RangeError.prototype", protoOf("RangeError")],
    ["ReferenceError.prototype", protoOf("ReferenceError")],
    ["SyntaxError.prototype", protoOf("SyntaxError")],
    ["TypeError.prototype", protoOf("TypeError")],
    ["URIError.prototype", protoOf("URIError")],
    ["AggregateError.prototype", protoOf("AggregateError")],
    ["Map.prototype", protoOf("Map")],
    ["Set.prototype", protoOf("Set")],
    ["WeakMap.prototype", protoOf("WeakMap")],
    ["WeakSet.prototype", protoOf("WeakSet")],
    ["WeakRef.prototype", protoOf("WeakRef")],
    ["FinalizationRegistry.prototype", protoOf("FinalizationRegistry")],
    ["ArrayBuffer.prototype", protoOf("ArrayBuffer")],
    ["DataView.prototype", protoOf("DataView")],
    ["Uint8Array.prototype", protoOf("Uint8Array")],
    ["%TypedArray%", () => getPrototypeOf(G.Int8Array)],
    ["%TypedArray%.prototype", () => getPrototypeOf(G.Int8Array!.prototype)],
    ["JSON", () => G.JSON],
    ["Math", () => G.Math],
    ["Reflect", () => G.Reflect],
    ["Proxy", () => G.Proxy],
    ["Atomics", () => G.Atomics],
    ["Intl", () => G.Intl],
    [
      "%SegmentsPrototype%",
      () =>
        getPrototypeOf(
          new (G.Intl!.Segmenter as unknown as new () => {
            segment(text: string): object;
          })().segment(""),
        ),
    ],
    ["console", () => G.console],
    ["Iterator", () => G.Iterator],
    ["%IteratorPrototype%", () => getPrototypeOf(getPrototypeOf([].values()))],
    ["%ArrayIteratorPrototype%", () => getPrototypeOf([].values())],
    ["%MapIteratorPrototype%", () => getPrototypeOf(new Map().values())],
    ["%SetIteratorPrototype%", () => getPrototypeOf(new Set().values())],
    [
      "%StringIteratorPrototype%",
      () => getPrototypeOf(""[Symbol.iterator]()),
    ],
    [
      "%RegExpStringIteratorPrototype%",
      () => getPrototypeOf(/a/[Symbol.matchAll]("")),
    ],
    ["%GeneratorFunction%", () => getPrototypeOf(function* () {}).constructor],
    [
      "%GeneratorFunction.prototype%",
      () => getPrototypeOf(function* () {}),
    ],
    [
      "%GeneratorPrototype%",
      () => getPrototypeOf(function* () {}).prototype,
    ],
    ["%AsyncFunction.prototype%", () => getPrototypeOf(async function () {})],
    [
      "%AsyncGeneratorFunction.prototype%",
      () => getPrototypeOf(async function* () {}),
    ],
    [
      "%AsyncGeneratorPrototype%",
      () => getPrototypeOf(async function* () {}).prototype,
    ],
    [
      "%AsyncIteratorPrototype%",
      () => getPrototypeOf(getPrototypeOf(async function* () {}).prototype),
    ],
    [
      "%ThrowTypeError%",
      () => getOwnPropertyDescriptor(G.Function!.prototype, "caller")?.get,
    ],
    [
      "%IteratorHelperPrototype%",
      () =>
        getPrototypeOf(
          ([].values() as unknown as { map(fn: unknown): object }).map(
            (item: unknown) => item,
          ),
        ),
    ],
    // QuickJS gives Iterator.concat's iterators a prototype of their own;
    // V8 gives them %IteratorHelperPrototype%.
    [
      "%IteratorConcatPrototype%",
      () =>
        getPrototypeOf(
          (G.Iterator as unknown as { concat(): object }).concat(),
        ),
    ],
    // V8 gives every error, and every object Error.captureStackTrace
    // writes to, an own stack accessor whose getter and setter the realm
    // shares.
    [
      "%ErrorStackGetter%",
      () => getOwnPropertyDescriptor(new Error(), "stack")?.get,
    ],
    [
      "%ErrorStackSetter%",
      () => getOwnPropertyDescriptor(new Error(), "stack")?.set,
    ],
  ];
  const report: Record<string, boolean | null> = {};
  for (const [name, reach] of reaches) {
    let value: unknown;
    try {
      value = reach();
    } catch {
      value = undefined;
    }
    report[name] = (typeof value === "object" && value !== null) ||
        typeof value === "function"
      ? isLocked(value)
      : null;
  }
  return report;
}

// The probe as guest source, built where all realm source is built.
const PROBE_SOURCE = realmSource(
  (library: { frozenIntrinsics: typeof frozenIntrinsics }) =>
    library.frozenIntrinsics(),
  { frozenIntrinsics },
  null,
);

/**
 * Runs in the guest: how many objects a full walk from `globalThis` and the
 * hidden intrinsics reaches, through prototypes, data properties and
 * accessors, and the paths of those that are not frozen (but for
 * `globalThis` itself, which no tier freezes: its own properties are
 * locked instead, see {@linkcode globalLockBreaches}). A walk of its
 * own, from scratch, so it checks the lockdown's walk rather than repeats
 * it.
 */
function unfrozenReachable(library: {
  hiddenIntrinsics: typeof hiddenIntrinsics;
}): { reached: number; unfrozen: string[] } {
  const { getOwnPropertyDescriptor, getPrototypeOf, isFrozen } = Object;
  const ownKeys = Reflect.ownKeys;
  // Error is frozen but for Error.stackTraceLimit, a writable number that
  // cannot be redefined or deleted (see realm/lockdown.ts).
  const isLocked = (value: object): boolean =>
    isFrozen(value) ||
    (value === Error && !Object.isExtensible(value) &&
      Reflect.ownKeys(value).every((key) => {
        const descriptor = getOwnPropertyDescriptor(value, key)!;
        return !descriptor.configurable &&
          (key === "stackTraceLimit"
            ? typeof descriptor.value === "number"
            : !descriptor.writable);
      }));
  const paths = new Map<object, string>([[globalThis, "globalThis"]]);
  library.hiddenIntrinsics().forEach((hidden, i) => {
    if (!paths.has(hidden)) paths.set(hidden, `hidden[${i}]`);
  });
  const reach = (value: unknown, path: string) => {
    if (
      ((typeof value === "object" && value !== null) ||
        typeof value === "function") && !paths.has(value)
    ) {
      paths.set(value, path);
    }
  };
  for (const [object, path] of paths) {
    reach(getPrototypeOf(object), `${path}.__proto__`);
    for (const key of ownKeys(object)) {
      const descriptor = getOwnPropertyDescriptor(object, key)!;
      const at = `${path}.${String(key)}`;
      reach(descriptor.value, at);
      reach(descriptor.get, `${at}<get>`);
      reach(descriptor.set, `${at}<set>`);
    }
  }
  const unfrozen: string[] = [];
  for (const [object, path] of paths) {
    if (object !== globalThis && !isLocked(object)) unfrozen.push(path);
  }
  return { reached: paths.size, unfrozen };
}

const UNFROZEN_PROBE_SOURCE = realmSource(
  (library: {
    hiddenIntrinsics: typeof hiddenIntrinsics;
    unfrozenReachable: typeof unfrozenReachable;
  }) => library.unfrozenReachable(library),
  { hiddenIntrinsics, unfrozenReachable },
  null,
);

/**
 * Runs in the guest: tries every way to replace, redefine or delete each
 * own property of `globalThis` (assignment, the three definers with a new
 * value, also through a proxy of `globalThis`, an accessor, `writable` or
 * `configurable`, a properties map whose keys change between reads, a
 * properties map whose second definition throws,
 * `__defineGetter__`, `Reflect.set` with `globalThis` as the receiver,
 * `Object.assign`, a class field on `globalThis`, `delete`) and names
 * each attempt that changed the property; then adds a global of its own.
 */
function globalLockBreaches(): {
  checked: number;
  breaches: string[];
  extensible: boolean;
  added: boolean;
} {
  "use strict";
  const { defineProperty, defineProperties, getOwnPropertyDescriptor } = Object;
  const { isExtensible, is } = Object;
  const reflectDefine = Reflect.defineProperty;
  const reflectSet = Reflect.set;
  const { assign } = Object;
  const ProxyCtor = Proxy;
  const ownKeys = Reflect.ownKeys;
  const toText = String;
  const G = globalThis as unknown as Record<PropertyKey, unknown>;
  const marker = {};
  // QuickJS forwards a definition on a proxy without traps to its target.
  const viaProxy = new ProxyCtor(G, {});
  const markerGet = () => marker;
  // Lists no key when asked first, and the key afterwards: a definer that
  // checks the keys once and lets the engine read them again is fooled.
  const fickleProperties = (key: PropertyKey) => {
    let reads = 0;
    return new ProxyCtor({ [key]: { value: marker } }, {
      ownKeys: (target) => reads++ === 0 ? [] : ownKeys(target),
    });
  };
  const defineFieldOn = (target: object, key: PropertyKey) =>
    new (class extends (class {
      constructor() {
        return target;
      }
    }) {
      [key] = marker;
    })();
  const same = (a: PropertyDescriptor, b: PropertyDescriptor | undefined) =>
    b !== undefined && is(a.value, b.value) && a.get === b.get &&
    a.set === b.set && a.writable === b.writable &&
    a.enumerable === b.enumerable && a.configurable === b.configurable;
  const breaches: string[] = [];
  const keys = ownKeys(G);
  for (const key of keys) {
    const before = getOwnPropertyDescriptor(G, key)!;
    const attempts: [string, () => unknown][] = [
      ["assignment", () => (G[key] = marker)],
      [
        "Object.defineProperty value",
        () => defineProperty(G, key, { value: marker }),
      ],
      [
        "Object.defineProperty accessor",
        () => defineProperty(G, key, { get: markerGet }),
      ],
      [
        "Object.defineProperty writable",
        () => defineProperty(G, key, { writable: true }),
      ],
      [
        "Object.defineProperty configurable",
        () => defineProperty(G, key, { configurable: true }),
      ],
      [
        "Object.defineProperties value",
        () => defineProperties(G, { [key]: { value: marker } }),
      ],
      [
        "Reflect.defineProperty value",
        () => reflectDefine(G, key, { value: marker }),
      ],
      [
        "Object.defineProperty value through a proxy",
        () => defineProperty(viaProxy, key, { value: marker }),
      ],
      [
        "Object.defineProperties value through a proxy",
        () => defineProperties(viaProxy, { [key]: { value: marker } }),
      ],
      [
        "Reflect.defineProperty value through a proxy",
        () => reflectDefine(viaProxy, key, { value: marker }),
      ],
      [
        "Object.defineProperties with keys that change between reads",
        () => defineProperties(G, fickleProperties(key)),
      ],
      [
        "Object.defineProperties through a proxy, keys that change",
        () => defineProperties(viaProxy, fickleProperties(key)),
      ],
      [
        "Object.defineProperties through a proxy, then a definition that throws",
        () =>
          defineProperties(viaProxy, {
            [key]: { value: marker },
            // Another locked global cannot become an accessor: throws.
            [key === "Math" ? "JSON" : "Math"]: { get: markerGet },
          }),
      ],
      [
        "__defineGetter__",
        () =>
          (G as unknown as {
            __defineGetter__(k: PropertyKey, g: () => unknown): void;
          }).__defineGetter__(key, markerGet),
      ],
      ["Reflect.set onto globalThis", () => reflectSet({}, key, marker, G)],
      [
        "Reflect.set onto a proxy of globalThis",
        () => reflectSet({}, key, marker, viaProxy),
      ],
      ["Object.assign", () => assign(G, { [key]: marker })],
      ["a class field", () => defineFieldOn(G, key)],
      ["a class field through a proxy", () => defineFieldOn(viaProxy, key)],
      ["delete", () => delete G[key]],
    ];
    for (const [how, attempt] of attempts) {
      try {
        attempt();
      } catch {
        // Refused, as it should be; the descriptor says for sure.
      }
      if (!same(before, getOwnPropertyDescriptor(G, key))) {
        breaches.push(`${toText(key)}: ${how}`);
      }
    }
  }
  let added = false;
  try {
    G.addedByTheProbe = marker;
    added = G.addedByTheProbe === marker;
  } catch {
    added = false;
  }
  return { checked: keys.length, breaches, extensible: isExtensible(G), added };
}

const GLOBAL_LOCK_PROBE_SOURCE = realmSource(
  (library: { globalLockBreaches: typeof globalLockBreaches }) =>
    library.globalLockBreaches(),
  { globalLockBreaches },
  null,
);

/**
 * Where the engines may differ, with why; any other difference fails.
 * `quickjs` and `vm` are what each report holds for the name.
 */
const DOCUMENTED_DIFFERENCES: Record<
  string,
  { quickjs: boolean | null; vm: boolean | null; why: string }
> = {
  Atomics: {
    quickjs: null,
    vm: true,
    why: "the QuickJS build has no Atomics (nor SharedArrayBuffer)",
  },
  Intl: {
    quickjs: null,
    vm: true,
    why: "QuickJS has no Intl",
  },
  "%SegmentsPrototype%": {
    quickjs: null,
    vm: true,
    why: "QuickJS has no Intl.Segmenter",
  },
  "%ErrorStackGetter%": {
    quickjs: null,
    vm: true,
    why: "a QuickJS error's stack is a data property",
  },
  "%ErrorStackSetter%": {
    quickjs: null,
    vm: true,
    why: "a QuickJS error's stack is a data property",
  },
};

/**
 * The probe's report in a QuickJS run: by default on an engine restored from
 * the shipped hardened image, with `variant` on one that hardens itself.
 */
async function quickjsReport(
  variant?: QuickJSVariant,
): Promise<Record<string, boolean | null>> {
  using loader = await createQuickJSLoader({
    catalog: createTestCatalog([]),
    ...(variant === undefined ? {} : { variant }),
  });
  const result = await loader.run({
    source: `const probe = ${PROBE_SOURCE};\nexport default () => probe();`,
    packages: [],
  });
  assert.equal(result.ok, true, JSON.stringify(result));
  return (result.ok ? result.value : {}) as Record<string, boolean | null>;
}

/** What a probe's source returns when a vm-tier plugin calls it. */
async function vmProbe(
  probeSource: string,
  isolation?: "quickjs",
): Promise<unknown> {
  const sandbox = createVmSandbox({
    ...(isolation === undefined ? {} : { isolation }),
    pluginId: "lockdown",
    pluginModule: {
      kind: "source",
      source:
        `const probe = ${probeSource};\nexport function report() { return probe(); }`,
      identifier: "lockdown.js",
    },
    limits: { timeoutMs: 3000 },
  });
  try {
    const result = await sandbox.invoke("report");
    assert.equal(result.ok, true, JSON.stringify(result));
    return result.ok ? result.value : {};
  } finally {
    await sandbox.dispose();
  }
}

async function vmReport(): Promise<Record<string, boolean | null>> {
  return await vmProbe(PROBE_SOURCE) as Record<string, boolean | null>;
}

Deno.test("the QuickJS and vm lockdowns freeze the same well-known intrinsics", async () => {
  const quickjs = await quickjsReport();
  assert.deepEqual(
    await quickjsReport(wasmfileVariant as unknown as QuickJSVariant),
    quickjs,
    "an engine restored from the hardened image and one that hardened itself",
  );
  const vm = await vmReport();
  for (const [name, documented] of Object.entries(DOCUMENTED_DIFFERENCES)) {
    assert.deepEqual(
      { quickjs: quickjs[name], vm: vm[name] },
      { quickjs: documented.quickjs, vm: documented.vm },
      `${name}: ${documented.why}`,
    );
    delete quickjs[name];
    delete vm[name];
  }
  assert.deepEqual(vm, quickjs);
  // Everything either engine has is frozen.
  for (const [name, frozen] of Object.entries(quickjs)) {
    assert.notEqual(frozen, false, `${name} is not frozen`);
  }
});

Deno.test("every object reachable from globalThis is frozen after the QuickJS lockdown, restored from the image or hardened in place", async (t) => {
  const variants: [string, QuickJSVariant | undefined][] = [
    ["restored from the hardened image", undefined],
    [
      "hardened in place",
      wasmfileVariant as unknown as QuickJSVariant,
    ],
  ];
  for (const [name, variant] of variants) {
    await t.step(name, async () => {
      using loader = await createQuickJSLoader({
        catalog: createTestCatalog([]),
        ...(variant === undefined ? {} : { variant }),
      });
      const result = await loader.run({
        source:
          `const probe = ${UNFROZEN_PROBE_SOURCE};\nexport default () => probe();`,
        packages: [],
      });
      assert.equal(result.ok, true, JSON.stringify(result));
      const report = (result.ok ? result.value : {}) as {
        reached: number;
        unfrozen: string[];
      };
      // The intrinsics, the tamed accessors and the originals behind them.
      assert.ok(report.reached > 700, `${report.reached} objects reached`);
      assert.deepEqual(report.unfrozen, []);
    });
  }
});

Deno.test("every object reachable from the vm lockdown's intrinsics is frozen, the context's global object aside", async () => {
  const report = await vmProbe(UNFROZEN_PROBE_SOURCE) as {
    reached: number;
    unfrozen: string[];
  };
  assert.ok(report.reached > 700, `${report.reached} objects reached`);
  assert.deepEqual(report.unfrozen, []);
});

Deno.test("no guest can replace, redefine or delete a global, and every tier takes new globals", async (t) => {
  const expectHeld = (report: unknown) => {
    const held = report as {
      checked: number;
      breaches: string[];
      extensible: boolean;
      added: boolean;
    };
    assert.deepEqual(held.breaches, []);
    assert.equal(held.extensible, true);
    assert.equal(held.added, true);
    assert.ok(held.checked > 40, `${held.checked} globals checked`);
  };
  const quickjsRun = async (variant?: QuickJSVariant) => {
    using loader = await createQuickJSLoader({
      catalog: createTestCatalog([]),
      ...(variant === undefined ? {} : { variant }),
    });
    const result = await loader.run({
      source:
        `const probe = ${GLOBAL_LOCK_PROBE_SOURCE};\nexport default () => probe();`,
      packages: [],
    });
    assert.equal(result.ok, true, JSON.stringify(result));
    return result.ok ? result.value : null;
  };
  await t.step("QuickJS, restored from the hardened image", async () => {
    expectHeld(await quickjsRun());
  });
  await t.step("QuickJS, hardened in place", async () => {
    expectHeld(
      await quickjsRun(wasmfileVariant as unknown as QuickJSVariant),
    );
  });
  await t.step("vm", async () => {
    expectHeld(await vmProbe(GLOBAL_LOCK_PROBE_SOURCE));
  });
  await t.step("vm with the quickjs isolation", async () => {
    expectHeld(await vmProbe(GLOBAL_LOCK_PROBE_SOURCE, "quickjs"));
  });
});

/**
 * Runs in the guest: what code that lowers `Error.stackTraceLimit` around
 * the errors it makes (as joi does) sees, and whether anything else about
 * `Error` can change.
 */
function stackTraceLimitUse(): Record<string, unknown> {
  "use strict";
  const ErrorCtor = Error as ErrorConstructor & { stackTraceLimit: unknown };
  const initial = ErrorCtor.stackTraceLimit;
  const saved = ErrorCtor.stackTraceLimit;
  ErrorCtor.stackTraceLimit = 0;
  const quiet = {} as { stack?: string };
  Error.captureStackTrace(quiet);
  ErrorCtor.stackTraceLimit = saved;
  const loud = {} as { stack?: string };
  Error.captureStackTrace(loud);
  const refused = (change: () => void): boolean => {
    try {
      change();
      return false;
    } catch (error) {
      return error instanceof TypeError;
    }
  };
  return {
    initial,
    quiet: quiet.stack,
    loud: loud.stack?.startsWith("Error\n    at "),
    restored: ErrorCtor.stackTraceLimit,
    refusals: [
      refused(() => {
        (ErrorCtor as unknown as Record<string, unknown>).added = 1;
      }),
      refused(() => {
        (ErrorCtor as unknown as Record<string, unknown>).captureStackTrace =
          null;
      }),
      refused(() => {
        delete (ErrorCtor as { stackTraceLimit?: unknown }).stackTraceLimit;
      }),
      refused(() =>
        Object.defineProperty(ErrorCtor, "stackTraceLimit", { get: () => 1 })
      ),
    ],
  };
}

const STACK_TRACE_LIMIT_SOURCE = realmSource(
  (library: { stackTraceLimitUse: typeof stackTraceLimitUse }) =>
    library.stackTraceLimitUse(),
  { stackTraceLimitUse },
  null,
);

Deno.test("code may set and restore Error.stackTraceLimit on every tier, as joi does around its errors, and nothing else of Error changes", async (t) => {
  const expected = {
    initial: 10,
    quiet: "Error",
    loud: true,
    restored: 10,
    refusals: [true, true, true, true],
  };
  await t.step("QuickJS", async () => {
    using loader = await createQuickJSLoader({
      catalog: createTestCatalog([]),
    });
    const result = await loader.run({
      source:
        `const probe = ${STACK_TRACE_LIMIT_SOURCE};\nexport default () => probe();`,
      packages: [],
    });
    assert.deepEqual(result.ok && result.value, expected);
  });
  await t.step("vm", async () => {
    assert.deepEqual(await vmProbe(STACK_TRACE_LIMIT_SOURCE), expected);
  });
  await t.step("vm with the quickjs isolation", async () => {
    assert.deepEqual(
      await vmProbe(STACK_TRACE_LIMIT_SOURCE, "quickjs"),
      expected,
    );
  });
});
