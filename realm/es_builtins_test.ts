import assert from "node:assert/strict";
import vm from "node:vm";
import { realmSource } from "./realm_source.ts";
import {
  createTypedArrayWith,
  ES_BUILTINS_STEPS,
  type EsBuiltinsSteps,
} from "./es_builtins.ts";
import { inQuickJS, observe } from "./_differential_test.ts";

/** A base64 or hex call, as data: the method, its input, options, room. */
type Base64Spec = [string, unknown, unknown?, number?];

/**
 * Runs each spec and reports what it gave: bytes, text, `{ read, written }`
 * with the target's bytes after the call, or the error's class and message
 * (with the target's bytes, which a failed `setFrom*` call has partly
 * written). Self-contained: it runs in Deno, in a `node:vm` context and in
 * QuickJS.
 */
function base64Run(specs: Base64Spec[]): unknown[] {
  const U8 = Uint8Array as unknown as Record<
    string,
    (...a: unknown[]) => unknown
  >;
  return specs.map(([op, input, options, room]) => {
    const target = new Uint8Array(room ?? 0).fill(0xaa);
    try {
      if (op === "fromBase64" || op === "fromHex") {
        return ["ok", Array.from(U8[op]!(input, options) as Uint8Array)];
      }
      if (op === "toBase64" || op === "toHex") {
        const bytes = new Uint8Array(input as number[]) as unknown as Record<
          string,
          (options: unknown) => string
        >;
        return ["ok", bytes[op]!(options)];
      }
      const into = target as unknown as Record<
        string,
        (input: unknown, options: unknown) => unknown
      >;
      return ["ok", into[op]!(input, options), Array.from(target)];
    } catch (error) {
      const e = error as Error;
      return ["threw", e.constructor.name, e.message, Array.from(target)];
    }
  });
}

const BASE64_INPUTS = [
  "",
  "A",
  "AA",
  "AAA",
  "AAAA",
  "AA==",
  "AA=",
  "AA===",
  "AB==",
  "AB",
  "ABC=",
  "ABD=",
  "ABD",
  "AQID",
  " A Q I D ",
  "\tAQ\nID\f\r ",
  "AQ ==",
  "AQ= =",
  "AQI =",
  "AQID====",
  "AQ==AQ",
  "AQ== ",
  "+/+/",
  "-_-_",
  "+/8",
  "-_8",
  "*",
  "AQ*",
  "A===",
  "=",
  "==",
  "QUJD",
  "QUJDRA",
  "QUJDRA==",
  "QUJDRA=",
  "QUJDREU",
  "QUJDREU=",
  "QUJDREVG",
  "QUJDREVGRw",
  "_w",
  "_w==",
  "/w==",
  "\u00ff",
  "A\u0100",
  "ZZ==",
  "ZZZ=",
  "ZZZZ",
  "AAAAAAAAAAAA",
  "AAAA AAAA\nAAAA",
  "AAAA\u000b",
  "AAAA\u00a0",
];
const HEX_INPUTS = [
  "",
  "0",
  "00",
  "0g",
  "ff",
  "FF",
  "aBcD",
  "0102zz",
  "01 2",
  "123",
  "zz",
  "0x",
  "\u0660\u0660",
  "deadbeef",
  "DEADBEEF00",
  "01020304",
];
const ALPHABETS = [undefined, "base64", "base64url"];
const LAST_CHUNK = [undefined, "loose", "strict", "stop-before-partial"];
const ROOMS = [0, 1, 2, 3, 4, 5, 8];

function base64Corpus(): Base64Spec[] {
  const specs: Base64Spec[] = [];
  for (const input of BASE64_INPUTS) {
    for (const alphabet of ALPHABETS) {
      for (const lastChunkHandling of LAST_CHUNK) {
        const options = { alphabet, lastChunkHandling };
        specs.push(["fromBase64", input, options]);
        for (const room of ROOMS) {
          specs.push(["setFromBase64", input, options, room]);
        }
      }
    }
  }
  for (const input of HEX_INPUTS) {
    specs.push(["fromHex", input]);
    for (const room of ROOMS) {
      specs.push(["setFromHex", input, undefined, room]);
    }
  }
  for (let length = 0; length <= 7; length++) {
    const bytes = Array.from({ length }, (_, i) => (i * 97 + 251) & 255);
    specs.push(["toHex", bytes]);
    for (const alphabet of ALPHABETS) {
      for (const omitPadding of [undefined, true, false, 1, ""]) {
        specs.push(["toBase64", bytes, { alphabet, omitPadding }]);
      }
    }
  }
  // Wrong inputs and options, in the order the methods check them.
  for (const op of ["fromBase64", "fromHex", "setFromBase64", "setFromHex"]) {
    for (const input of [1, null, undefined, ["AA"]]) {
      specs.push([op, input, undefined, 2]);
    }
  }
  for (const op of ["fromBase64", "setFromBase64", "toBase64"]) {
    for (
      const options of [
        1,
        null,
        "base64",
        { alphabet: "x" },
        { alphabet: "BASE64" },
        { alphabet: null },
        { alphabet: 1 },
        { alphabet: [] },
        { alphabet: {} },
        { lastChunkHandling: "x" },
        { lastChunkHandling: "Strict" },
        { alphabet: "x", lastChunkHandling: "x" },
      ]
    ) {
      specs.push([op, op === "toBase64" ? [1] : "AA", options, 2]);
    }
  }
  return specs;
}

/** A small deterministic generator, so a failure can be replayed. */
function generator(seed: number): (below: number) => number {
  let state = seed >>> 0;
  return (below) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state % below;
  };
}

function base64Fuzz(count: number, seed: number): Base64Spec[] {
  const next = generator(seed);
  const pick = <T>(list: readonly T[]): T => list[next(list.length)]!;
  const CHARS = "AQZaz09+/-_= \t\n*";
  const HEX = "0f9aAF g";
  const specs: Base64Spec[] = [];
  for (let i = 0; i < count; i++) {
    const hex = next(4) === 0;
    let input = "";
    for (let n = next(14); n > 0; n--) input += pick([...(hex ? HEX : CHARS)]);
    const room = next(3) === 0 ? undefined : next(10);
    if (hex) {
      specs.push([
        room === undefined ? "fromHex" : "setFromHex",
        input,
        undefined,
        room,
      ]);
    } else {
      specs.push([
        room === undefined ? "fromBase64" : "setFromBase64",
        input,
        { alphabet: pick(ALPHABETS), lastChunkHandling: pick(LAST_CHUNK) },
        room,
      ]);
    }
  }
  return specs;
}

type Case = () => unknown;

const CASES: Case[] = [
  // Uint8Array: receivers, detached and out-of-bounds targets, option order.
  () => Uint8Array.prototype.toHex.call(new Map() as never),
  () => Uint8Array.prototype.toHex.call([] as never),
  () => Uint8Array.prototype.toHex.call(new Int8Array(1) as never),
  () => Uint8Array.prototype.toBase64.call({} as never),
  () => Uint8Array.prototype.toBase64.call(null as never),
  () => Uint8Array.prototype.setFromHex.call({} as never, "00"),
  () => Uint8Array.prototype.setFromBase64.call(1 as never, "AA"),
  () => {
    const view = new Uint8Array(new ArrayBuffer(4));
    view.buffer.transfer();
    return [view.toBase64, view.toHex].map((method) => {
      try {
        return method.call(view);
      } catch (error) {
        return (error as Error).message;
      }
    });
  },
  () => {
    const view = new Uint8Array(new ArrayBuffer(4));
    view.buffer.transfer();
    return view.setFromBase64("AA==");
  },
  () => {
    const buffer = new ArrayBuffer(8, { maxByteLength: 16 });
    const view = new Uint8Array(buffer, 4, 4);
    buffer.resize(2);
    return view.setFromHex("aa");
  },
  () => {
    const buffer = new ArrayBuffer(8, { maxByteLength: 16 });
    const view = new Uint8Array(buffer, 2);
    buffer.resize(6);
    return [view.setFromHex("01020304ff"), Array.from(new Uint8Array(buffer))];
  },
  () => {
    const view = new Uint8Array(new ArrayBuffer(8), 2, 3);
    return [
      view.setFromBase64("AQIDBA=="),
      Array.from(new Uint8Array(view.buffer)),
    ];
  },
  () => {
    const seen: string[] = [];
    const options = {
      get alphabet() {
        seen.push("alphabet");
        return "base64url";
      },
      get lastChunkHandling() {
        seen.push("lastChunkHandling");
        return "strict";
      },
      get omitPadding() {
        seen.push("omitPadding");
        return true;
      },
    };
    Uint8Array.fromBase64("_w==", options as never);
    new Uint8Array(1).toBase64(options as never);
    new Uint8Array(1).setFromBase64("AA==", options as never);
    return seen;
  },
  () => {
    const view = new Uint8Array(4);
    return view.toBase64({
      get alphabet() {
        view.buffer.transfer();
        return "base64";
      },
    } as never);
  },
  () =>
    Object.getPrototypeOf(new Uint8Array(4).setFromHex("00")) ===
      Object.prototype,
  () => Uint8Array.fromBase64("AA==", { alphabet: Symbol("s") } as never),
  () =>
    Uint8Array.fromBase64("AA==", { alphabet: new String("base64") } as never),
  () => Uint8Array.fromBase64("AA==", { alphabet: () => 1 } as never),
  () => new (class extends Uint8Array {})(2).toHex(),
  () => Uint8Array.fromBase64.call(Int8Array, "AA==") instanceof Uint8Array,
  () => Uint8Array.fromHex("ab".repeat(5000)).length,
  () => new Uint8Array(10000).fill(7).toBase64().length,
  // Array.fromAsync.
  () => Array.fromAsync([1, Promise.resolve(2), 3]),
  () => Array.fromAsync({ length: 3, 0: "a", 1: Promise.resolve("b") }),
  () =>
    Array.fromAsync(
      [1, 2],
      (value: number, index: number) => Promise.resolve(value * 10 + index),
    ),
  () =>
    Array.fromAsync([1], function (this: { k: number }, value: number) {
      return value + this.k;
    }, { k: 5 }),
  () => Array.fromAsync([], 1 as never),
  () => Array.fromAsync(null as never),
  () => Array.fromAsync(undefined as never),
  () => Array.fromAsync(5 as never),
  () => Array.fromAsync("ab"),
  () =>
    Array.fromAsync({
      async *[Symbol.asyncIterator]() {
        yield 1;
        yield Promise.resolve(2);
      },
    }),
  () => {
    const closed: string[] = [];
    const iterable = {
      [Symbol.iterator]() {
        let n = 0;
        return {
          next: () => ({ value: n++, done: n > 5 }),
          return: () => {
            closed.push("closed");
            return {};
          },
        };
      },
    };
    return Array.fromAsync(iterable as never, (value: number) => {
      if (value === 2) throw new RangeError("stop");
      return value;
    }).catch((error: Error) => [error.message, closed]);
  },
  () => {
    const closed: string[] = [];
    const iterable = {
      [Symbol.iterator]() {
        let n = 0;
        return {
          next: () => ({
            value: n++ === 1 ? Promise.reject(new Error("no")) : n,
            done: false,
          }),
          return: () => {
            closed.push("closed");
            return {};
          },
        };
      },
    };
    return Array.fromAsync(iterable as never).catch((
      error: Error,
    ) => [error.message, closed]);
  },
  () => Array.fromAsync({ [Symbol.iterator]: () => 1 } as never),
  () =>
    Array.fromAsync({ [Symbol.iterator]: () => ({ next: () => 1 }) } as never),
  () => {
    const made: unknown[] = [];
    function C(this: unknown, ...args: unknown[]) {
      made.push(args);
    }
    return (Array.fromAsync as (...a: unknown[]) => Promise<unknown>).call(C, [
      1,
      2,
    ]).then((out: unknown) => [
      made,
      Object.keys(out as object),
      (out as unknown[]).length,
      out instanceof C,
    ]);
  },
  () => {
    const made: unknown[] = [];
    function C(this: unknown, ...args: unknown[]) {
      made.push(args);
    }
    return (Array.fromAsync as (...a: unknown[]) => Promise<unknown>).call(C, {
      length: 2,
      0: 1,
      1: 2,
    }).then((
      out: unknown,
    ) => [
      made,
      (out as unknown[]).length,
    ]);
  },
  () => (Array.fromAsync as (...a: unknown[]) => unknown).call({}, [1]),
  () => [
    Array.fromAsync.length,
    Array.fromAsync.name,
    "prototype" in Array.fromAsync,
  ],
  // Symbol.dispose and the stacks.
  () => [
    typeof Symbol.dispose,
    String(Symbol.dispose),
    String(Symbol.asyncDispose),
  ],
  () => Object.getOwnPropertyDescriptor(Symbol, "dispose"),
  () => Object.getOwnPropertyDescriptor(Symbol, "asyncDispose"),
  () => [typeof Symbol.metadata, String(Symbol.metadata)],
  () => {
    const order: unknown[] = [];
    const stack = new DisposableStack();
    stack.defer(() => order.push("defer"));
    stack.use({ [Symbol.dispose]: () => order.push("use") });
    stack.adopt("value", (value: string) => order.push(["adopt", value]));
    stack.use(null);
    stack.use(undefined);
    const before = stack.disposed;
    stack.dispose();
    stack.dispose();
    return [order, before, stack.disposed];
  },
  () => {
    const stack = new DisposableStack();
    stack.dispose();
    return ["use", "defer", "adopt", "move"].map((name) => {
      try {
        (stack as unknown as Record<string, () => unknown>)[name]!();
        return "no error";
      } catch (error) {
        return [(error as Error).constructor.name, (error as Error).message];
      }
    });
  },
  () => new DisposableStack().use(1 as never),
  () => new DisposableStack().use({} as never),
  () => new DisposableStack().use({ [Symbol.dispose]: 1 } as never),
  () => new DisposableStack().defer(1 as never),
  () => new DisposableStack().adopt(1, 2 as never),
  () => DisposableStack.prototype.dispose.call({} as never),
  () =>
    Object.getOwnPropertyDescriptor(DisposableStack.prototype, "disposed")!.get!
      .call({}),
  () => (DisposableStack as unknown as () => unknown)(),
  () => (AsyncDisposableStack as unknown as () => unknown)(),
  () => {
    const stack = new DisposableStack();
    stack.defer(() => {
      throw new Error("first");
    });
    stack.defer(() => {
      throw new Error("second");
    });
    stack.defer(() => {
      throw new Error("third");
    });
    stack.dispose();
  },
  () => {
    const order: number[] = [];
    const stack = new DisposableStack();
    stack.defer(() => order.push(1));
    const moved = stack.move();
    moved.defer(() => order.push(2));
    moved.dispose();
    return [
      order,
      stack.disposed,
      moved.disposed,
      moved instanceof DisposableStack,
    ];
  },
  () => {
    class Mine extends DisposableStack {}
    const mine = new Mine();
    return [mine instanceof Mine, mine.move() instanceof Mine, String(mine)];
  },
  async () => {
    const order: unknown[] = [];
    const stack = new AsyncDisposableStack();
    stack.defer(async () => {
      await null;
      order.push("defer");
    });
    stack.use({
      [Symbol.asyncDispose]: async () => void order.push(await "async"),
    });
    stack.use({ [Symbol.dispose]: () => order.push("sync") });
    stack.use(null);
    stack.adopt(3, (value: number) => void order.push(["adopt", value]));
    await stack.disposeAsync();
    await stack.disposeAsync();
    return [order, stack.disposed];
  },
  async () => {
    const stack = new AsyncDisposableStack();
    stack.defer(() => Promise.reject(new Error("a")));
    stack.defer(() => {
      throw new Error("b");
    });
    await stack.disposeAsync();
  },
  () => AsyncDisposableStack.prototype.disposeAsync.call({} as never),
  () => new AsyncDisposableStack().use({} as never),
  () => new AsyncDisposableStack().use(1 as never),
  async () => {
    const stack = new AsyncDisposableStack();
    await stack.disposeAsync();
    return stack.use(null);
  },
  () => {
    const closed: string[] = [];
    function* numbers() {
      try {
        yield 1;
        yield 2;
      } finally {
        closed.push("closed");
      }
    }
    const iterator = numbers();
    iterator.next();
    (iterator as unknown as { [Symbol.dispose](): void })[Symbol.dispose]();
    return [closed, iterator.next()];
  },
  async () => {
    const closed: string[] = [];
    async function* numbers() {
      try {
        yield 1;
      } finally {
        closed.push("closed");
      }
    }
    const iterator = numbers();
    await iterator.next();
    const result = await (iterator as unknown as {
      [Symbol.asyncDispose](): Promise<unknown>;
    })[Symbol.asyncDispose]();
    return [closed, result];
  },
  () => {
    const iterator = Object.create(Iterator.prototype);
    iterator.return = 5;
    return iterator[Symbol.dispose]();
  },
  () => {
    const error = new SuppressedError(1, 2, "m");
    return [
      Reflect.ownKeys(error).filter((key) => key !== "stack"),
      error.message,
      error.name,
      error instanceof Error,
      Object.prototype.toString.call(error),
      Object.getOwnPropertyDescriptor(error, "error"),
    ];
  },
  () => {
    const error = (SuppressedError as unknown as (...a: unknown[]) => Error)(
      1,
      2,
    );
    return [error.message, "message" in error, Object.hasOwn(error, "message")];
  },
  () => {
    class Mine extends SuppressedError {}
    const mine = new Mine(1, 2, { toString: () => "text" } as never);
    return [mine instanceof Mine, mine.message, mine.name];
  },
  // The engine words the failed conversion: its class is compared.
  () => {
    try {
      return new SuppressedError(1, 2, Symbol() as never);
    } catch (error) {
      return (error as Error).constructor.name;
    }
  },
  // Error.captureStackTrace.
  () => {
    const target = { name: "Named", message: "it broke" };
    function outer() {
      inner();
    }
    function inner() {
      Error.captureStackTrace(target, inner);
    }
    outer();
    const stack = (target as { stack?: string }).stack!;
    const d = Object.getOwnPropertyDescriptor(target, "stack")!;
    return [
      stack.split("\n")[0],
      /^ {4}at outer /.test(stack.split("\n")[1]!),
      typeof d.get,
      typeof d.set,
      d.enumerable,
      d.configurable,
      Object.keys(target),
    ];
  },
  () => {
    class Failure extends Error {
      constructor(message: string) {
        super(message);
        this.name = "Failure";
        Error.captureStackTrace(this, Failure);
      }
    }
    function thrower() {
      return new Failure("boom");
    }
    const lines = thrower().stack!.split("\n");
    return [lines[0], /^ {4}at thrower /.test(lines[1]!)];
  },
  () => {
    const target = { message: "one" };
    Error.captureStackTrace(target);
    target.message = "two";
    const first = (target as { stack?: string }).stack!.split("\n")[0];
    target.message = "three";
    return [first, (target as { stack?: string }).stack!.split("\n")[0]];
  },
  () => {
    const target = {};
    function notCalled() {}
    Error.captureStackTrace(target, notCalled);
    return (target as { stack?: string }).stack;
  },
  () => {
    const a = {};
    const b = {};
    Error.captureStackTrace(a);
    Error.captureStackTrace(b);
    const da = Object.getOwnPropertyDescriptor(a, "stack")!;
    const db = Object.getOwnPropertyDescriptor(b, "stack")!;
    (a as { stack?: unknown }).stack = "set";
    const other = {};
    da.set!.call(other, "x");
    return [
      da.get === db.get,
      da.set === db.set,
      da.get!.name,
      da.get!.length,
      da.set!.length,
      (a as { stack?: unknown }).stack,
      da.get!.call({}),
      Object.hasOwn(other, "stack"),
    ];
  },
  () => Error.captureStackTrace(1 as never),
  () => Error.captureStackTrace(null as never),
  () => Error.captureStackTrace(Object.freeze({})),
  () => {
    const target = {};
    Object.defineProperty(target, "stack", { value: 1 });
    Error.captureStackTrace(target);
  },
  () => {
    const targets = [
      { message: "", name: "" },
      { message: "x", name: "" },
      { message: 5, name: undefined },
      function named() {},
      [],
    ];
    return targets.map((target) => {
      Error.captureStackTrace(target);
      return (target as { stack?: string }).stack!.split("\n")[0];
    });
  },
  () => {
    const target = { stack: "old" };
    Error.captureStackTrace(target);
    return typeof Object.getOwnPropertyDescriptor(target, "stack")!.get;
  },
  () => {
    const e = new Error("m");
    Error.captureStackTrace(e);
    return e.stack!.split("\n")[0];
  },
  () => [Error.captureStackTrace.length, Error.captureStackTrace.name],
];

/** The built-ins' layout: names, lengths, descriptors. Self-contained. */
function shape(): unknown {
  const describe = (target: object, keys?: PropertyKey[]) =>
    (keys ?? Reflect.ownKeys(target)).map((key) => {
      const d = Object.getOwnPropertyDescriptor(target, key)!;
      return [
        String(key),
        typeof d.value === "function"
          ? `method ${d.value.name} ${d.value.length} ${"prototype" in d.value}`
          : key === "prototype"
          ? "prototype"
          : typeof d.value === "symbol"
          ? String(d.value)
          : typeof d.value === "object"
          ? "object"
          : d.value,
        d.get ? `get ${d.get.name} ${d.get.length}` : "",
        d.set ? "set" : "",
        d.enumerable,
        d.configurable,
        d.writable,
      ];
    });
  const G = globalThis as unknown as Record<string, object>;
  const iteratorProto = Object.getPrototypeOf(
    Object.getPrototypeOf([][Symbol.iterator]()),
  );
  const asyncIteratorProto = Object.getPrototypeOf(
    Object.getPrototypeOf(async function* () {}.prototype),
  );
  return {
    uint8: describe(Uint8Array, ["fromBase64", "fromHex"]),
    uint8Proto: describe(Uint8Array.prototype, [
      "toBase64",
      "setFromBase64",
      "toHex",
      "setFromHex",
    ]),
    array: describe(Array, ["fromAsync"]),
    arrayProto: describe(Array.prototype, [
      "toReversed",
      "toSorted",
      "toSpliced",
      "with",
    ]),
    error: describe(Error, ["captureStackTrace"]),
    symbol: describe(Symbol, ["dispose", "asyncDispose", "metadata"]),
    iterator: describe(iteratorProto, [Symbol.dispose]),
    asyncIterator: describe(asyncIteratorProto, [Symbol.asyncDispose]),
    suppressed: describe(G.SuppressedError!),
    suppressedProto: describe(
      (G.SuppressedError as { prototype: object }).prototype,
    ),
    stack: describe(G.DisposableStack!),
    stackProto: describe(
      (G.DisposableStack as { prototype: object }).prototype,
    ),
    asyncStack: describe(G.AsyncDisposableStack!),
    asyncStackProto: describe(
      (G.AsyncDisposableStack as { prototype: object }).prototype,
    ),
    chain: [
      Object.getPrototypeOf(G.SuppressedError!) === Error,
      Object.getPrototypeOf(
        (G.SuppressedError as { prototype: object }).prototype,
      ) === Error.prototype,
      DisposableStack.prototype[Symbol.dispose] ===
        DisposableStack.prototype.dispose,
      AsyncDisposableStack.prototype[Symbol.asyncDispose] ===
        AsyncDisposableStack.prototype.disposeAsync,
    ],
    globals: ["SuppressedError", "DisposableStack", "AsyncDisposableStack"].map(
      (name) => {
        const d = Object.getOwnPropertyDescriptor(globalThis, name)!;
        return [d.writable, d.enumerable, d.configurable];
      },
    ),
  };
}

/**
 * A shape without what the loader's lockdown changes: flags, each
 * prototype's constructor, and the error prototype's name and message,
 * which it turns into accessors as it does for every error prototype.
 */
function loosen(layout: Record<string, unknown[][]>): unknown {
  const tamed = (key: string, row: unknown[]) =>
    row[0] === "constructor" ||
    (key === "suppressedProto" && (row[0] === "name" || row[0] === "message"));
  const loose: Record<string, unknown> = {};
  for (const [key, rows] of Object.entries(layout)) {
    loose[key] = key === "chain" || key === "globals"
      ? undefined
      : rows.filter((row) => !tamed(key, row)).map((row) => row.slice(0, 5));
  }
  return loose;
}

const text = (fn: (...args: never[]) => unknown) => String(fn);

function program(cases: Case[]): string {
  return `(async () => {
  const observe = (${text(observe)});
  const cases = [${cases.map(text).join(",\n")}];
  const results = [];
  for (const make of cases) results.push(await observe(make));
  return JSON.stringify([results, (${text(shape)})()]);
})()`;
}

function base64Program(specs: Base64Spec[]): string {
  return `JSON.stringify((${text(base64Run)})(${JSON.stringify(specs)}))`;
}

/**
 * A fresh `node:vm` context whose V8 built-ins of this kind are deleted
 * (all but the symbols, which are not configurable) and replaced by the
 * realm's.
 */
function vmRealm(): { run(source: string): Promise<string> } {
  function entry(steps: EsBuiltinsSteps) {
    const G = globalThis as unknown as Record<
      string,
      Record<PropertyKey, unknown>
    >;
    for (const key of ["fromBase64", "fromHex"]) delete G.Uint8Array![key];
    for (const key of ["toBase64", "toHex", "setFromBase64", "setFromHex"]) {
      delete (G.Uint8Array!.prototype as Record<string, unknown>)[key];
    }
    delete G.Array!.fromAsync;
    delete G.Error!.captureStackTrace;
    delete G.SuppressedError;
    delete G.DisposableStack;
    delete G.AsyncDisposableStack;
    delete (Object.getPrototypeOf(
      Object.getPrototypeOf([][Symbol.iterator]()),
    ) as Record<symbol, unknown>)[Symbol.dispose];
    delete (Object.getPrototypeOf(
      Object.getPrototypeOf(async function* () {}.prototype),
    ) as Record<symbol, unknown>)[Symbol.asyncDispose];
    steps.installEsBuiltins(steps, globalThis);
  }
  const context = vm.createContext({});
  vm.runInContext(
    realmSource(entry, { ...ES_BUILTINS_STEPS }, null),
    context,
  )();
  return { run: (source) => Promise.resolve(vm.runInContext(source, context)) };
}

async function denoAnswer(cases: Case[]): Promise<[unknown[], unknown]> {
  const results = [];
  for (const make of cases) results.push(await observe(make));
  return JSON.parse(JSON.stringify([results, shape()]));
}

/**
 * A base64 answer without the message of a `SyntaxError`: V8 words some
 * misplaced padding by heuristics of its decoder ("Q =\n0A" ends "with a
 * single character", "A=B" has "a character that cannot be part" of one).
 */
function unworded(answer: unknown): unknown {
  return Array.isArray(answer) && answer[1] === "SyntaxError"
    ? [answer[0], answer[1], answer[3]]
    : answer;
}

/**
 * Asserts QuickJS's answers are Deno's, but that a refusal of a case whose
 * label `engineWords` matches is compared by its kind and class only:
 * QuickJS words its own refusals.
 */
function assertSameButEngineWords(
  labels: readonly string[],
  inQuick: unknown[],
  theirs: unknown[],
  engineWords: RegExp,
): void {
  const byClass = (answers: unknown[]) =>
    answers.map((answer, i) =>
      engineWords.test(labels[i]!) && Array.isArray(answer) &&
        answer[0] === "threw"
        ? answer.slice(0, 2)
        : answer
    );
  assert.deepEqual(
    differences(labels, byClass(inQuick), byClass(theirs)),
    [],
  );
}

/** Each entry where `mine` and Deno's differ, beside both answers. */
function differences(
  labels: readonly unknown[],
  mine: unknown[],
  theirs: unknown[],
  loose = false,
): unknown[] {
  assert.equal(mine.length, theirs.length);
  const found: unknown[] = [];
  for (let i = 0; i < mine.length; i++) {
    try {
      assert.deepEqual(
        loose ? unworded(mine[i]) : mine[i],
        loose ? unworded(theirs[i]) : theirs[i],
      );
    } catch {
      found.push({ case: labels[i], realm: mine[i], deno: theirs[i] });
    }
  }
  return found;
}

const BASE64_CORPUS = base64Corpus();
const CASE_LABELS = CASES.map(text);

Deno.test("Uint8Array base64 and hex in a node:vm context answer as Deno's for every alphabet, last chunk handling, room and wrong input", async () => {
  assert.ok(BASE64_CORPUS.length > 2000, `${BASE64_CORPUS.length} specs`);
  const expected = JSON.parse(JSON.stringify(base64Run(BASE64_CORPUS)));
  const mine = JSON.parse(await vmRealm().run(base64Program(BASE64_CORPUS)));
  assert.deepEqual(differences(BASE64_CORPUS, mine, expected), []);
});

Deno.test("Uint8Array base64 and hex inside QuickJS answer as Deno's for the same corpus", async () => {
  const expected = JSON.parse(JSON.stringify(base64Run(BASE64_CORPUS)));
  const mine = JSON.parse(await inQuickJS(base64Program(BASE64_CORPUS)));
  assert.deepEqual(differences(BASE64_CORPUS, mine, expected), []);
});

Deno.test("Uint8Array base64 and hex answer as Deno's for 3,000 seeded random inputs in node:vm and QuickJS", async () => {
  const specs = base64Fuzz(3000, 20260702);
  const expected = JSON.parse(JSON.stringify(base64Run(specs)));
  const threw = expected.filter((row: unknown[]) => row[0] === "threw").length;
  assert.ok(threw > 300 && threw < 2700, `${threw} of 3,000 threw`);
  const inVm = JSON.parse(await vmRealm().run(base64Program(specs)));
  assert.deepEqual(differences(specs, inVm, expected, true), []);
  const inQuick = JSON.parse(await inQuickJS(base64Program(specs)));
  assert.deepEqual(differences(specs, inQuick, expected, true), []);
});

Deno.test("Array.fromAsync, the disposal built-ins and Error.captureStackTrace in a node:vm context answer as Deno's", async () => {
  const [mine] = JSON.parse(await vmRealm().run(program(CASES)));
  const [theirs] = await denoAnswer(CASES);
  assert.deepEqual(differences(CASE_LABELS, mine, theirs), []);
});

Deno.test("Array.fromAsync, the disposal built-ins and Error.captureStackTrace inside QuickJS answer as Deno's", async () => {
  const [mine] = JSON.parse(await inQuickJS(program(CASES)));
  const [theirs] = await denoAnswer(CASES);
  assert.deepEqual(differences(CASE_LABELS, mine, theirs), []);
});

Deno.test("the installed built-ins are laid out as Deno's: names, lengths, descriptors, chains and the globals' flags", async () => {
  const [, deno] = await denoAnswer([]);
  const [, inVm] = JSON.parse(await vmRealm().run(program([])));
  const [, inQuick] = JSON.parse(await inQuickJS(program([])));
  assert.deepEqual(inVm, deno);
  // QuickJS's lockdown freezes the members and turns each prototype's
  // constructor into an accessor: the rest must match.
  assert.deepEqual(
    loosen(inQuick as Record<string, unknown[][]>),
    loosen(deno as Record<string, unknown[][]>),
  );
});

Deno.test("installEsBuiltins() keeps the built-ins a realm already has", () => {
  function entry(steps: EsBuiltinsSteps) {
    const before = [
      Uint8Array.fromBase64,
      Array.fromAsync,
      Error.captureStackTrace,
      globalThis.DisposableStack,
      Symbol.dispose,
    ];
    steps.installEsBuiltins(steps, globalThis);
    const after = [
      Uint8Array.fromBase64,
      Array.fromAsync,
      Error.captureStackTrace,
      globalThis.DisposableStack,
      Symbol.dispose,
    ];
    return before.every((value, i) => value === after[i]);
  }
  const source = realmSource(entry, { ...ES_BUILTINS_STEPS }, null);
  assert.equal(vm.runInNewContext(source)(), true);
});

Deno.test("installEsBuiltins() makes SharedArrayBuffer.prototype.grow refuse, in a node:vm realm as in QuickJS, whose own grow kept the first allocation", () => {
  function entry(steps: EsBuiltinsSteps) {
    steps.installEsBuiltins(steps, globalThis);
    const buffer = new SharedArrayBuffer(16, { maxByteLength: 64 });
    const grow = SharedArrayBuffer.prototype.grow;
    let thrown: unknown;
    try {
      buffer.grow(64);
    } catch (error) {
      thrown = error;
    }
    return {
      name: (thrown as Error).name,
      message: (thrown as Error).message,
      byteLength: buffer.byteLength,
      shape: [grow.name, grow.length],
    };
  }
  const source = realmSource(entry, { ...ES_BUILTINS_STEPS }, null);
  const result = vm.runInNewContext(source)();
  assert.equal(result.name, "TypeError");
  assert.match(result.message, /^Cannot grow a SharedArrayBuffer in a sandbox/);
  assert.equal(result.byteLength, 16);
  assert.deepEqual([...result.shape], ["grow", 1]);
});

Deno.test("installEsBuiltins() gives Function.prototype the decorator metadata proposal's null Symbol.metadata, so core-js 3 need not define it on a frozen realm", async () => {
  // Deno leaves it undefined until core-js defines it as null.
  const program = `JSON.stringify([
    Object.getOwnPropertyDescriptor(Function.prototype, Symbol.metadata),
    (class {})[Symbol.metadata],
  ])`;
  const expected = [
    { value: null, writable: false, enumerable: false, configurable: false },
    null,
  ];
  assert.deepEqual(JSON.parse(await vmRealm().run(program)), expected);
  assert.deepEqual(JSON.parse(await inQuickJS(program)), expected);
});

/** The engine's own `%TypedArray%.prototype.with`, which the tests wrap. */
const TYPED_ARRAY_WITH = Object.getPrototypeOf(Uint8Array.prototype).with;

Deno.test("createTypedArrayWith() refuses an index below minus the length with a RangeError, where the engine's own counted it from the end a second time", () => {
  const withAt = createTypedArrayWith(TYPED_ARRAY_WITH, [Uint8Array]);
  assert.throws(() => withAt.call(new Uint8Array(3), -4, 1), RangeError);
  assert.throws(() => withAt.call(new Uint8Array(3), -Infinity, 1), RangeError);
  assert.deepEqual([...withAt.call(new Uint8Array(3), -3, 1) as Uint8Array], [
    1,
    0,
    0,
  ]);
});

Deno.test("createTypedArrayWith() keeps the length it took first when a valueOf grows a length-tracking view's buffer, as the standard's copy does", () => {
  const withAt = createTypedArrayWith(TYPED_ARRAY_WITH, [Uint8Array]);
  const buffer = new ArrayBuffer(4, { maxByteLength: 16 });
  const grown = {
    valueOf() {
      buffer.resize(8);
      return 7;
    },
  };
  const copy = withAt.call(new Uint8Array(buffer), 0, grown) as Uint8Array;
  assert.deepEqual([...copy], [7, 0, 0, 0]);
  const bigBuffer = new ArrayBuffer(16, { maxByteLength: 64 });
  const bigCopy = withAt.call(new BigInt64Array(bigBuffer), 1, {
    valueOf() {
      bigBuffer.resize(32);
      return 5n;
    },
  }) as BigInt64Array;
  assert.deepEqual([...bigCopy], [0n, 5n]);
});

Deno.test("createTypedArrayWith() refuses with the engine's RangeError an index that a valueOf detaching or shrinking the buffer put out of range, as the standard checks the index after the value, where the engine's own then threw a TypeError for the detached buffer", () => {
  const withAt = createTypedArrayWith(TYPED_ARRAY_WITH, [
    Uint8Array,
    BigInt64Array,
  ]);
  const changing = <T>(change: () => void, value: T) => ({
    valueOf() {
      change();
      return value;
    },
  });
  const cases: (() => unknown)[] = [
    () => {
      const buffer = new ArrayBuffer(2);
      return withAt.call(
        new Uint8Array(buffer),
        0,
        changing(() => buffer.transfer(), 1),
      );
    },
    () => {
      const buffer = new ArrayBuffer(16);
      return withAt.call(
        new BigInt64Array(buffer),
        1,
        changing(() => buffer.transfer(), 1n),
      );
    },
    () => {
      const buffer = new ArrayBuffer(8, { maxByteLength: 8 });
      return withAt.call(
        new Uint8Array(buffer, 2, 4),
        0,
        changing(() => buffer.resize(3), 1),
      );
    },
    () => {
      const buffer = new ArrayBuffer(4, { maxByteLength: 4 });
      return withAt.call(
        new Uint8Array(buffer),
        3,
        changing(() => buffer.resize(1), 1),
      );
    },
  ];
  for (const make of cases) {
    assert.throws(make, {
      name: "RangeError",
      message: "Invalid typed array index",
    }, String(make));
  }
  // Deno's own, for the same cases, agrees.
  const buffer = new ArrayBuffer(2);
  assert.throws(
    () =>
      new Uint8Array(buffer).with(
        0,
        changing(() => buffer.transfer(), 1) as never,
      ),
    { name: "RangeError", message: "Invalid typed array index" },
  );
  // An index still in range after the valueOf is written as before.
  const shrunk = new ArrayBuffer(4, { maxByteLength: 4 });
  const copy = withAt.call(
    new Uint8Array(shrunk),
    0,
    changing(() => shrunk.resize(2), 7),
  ) as Uint8Array;
  assert.deepEqual([...copy], [7, 0, 0, 0]);
});

Deno.test("a QuickJS realm's typed-array with() refuses an index below minus the length, and one a valueOf detached the buffer under, and keeps the first length of a view whose buffer grew", async () => {
  const program = `(() => {
    const out = [];
    try {
      out.push(String(new Uint8Array(3).with(-4, 1)));
    } catch (error) {
      out.push(error.name);
    }
    const buffer = new ArrayBuffer(4, { maxByteLength: 16 });
    const grown = { valueOf() { buffer.resize(8); return 7; } };
    out.push(String(new Uint8Array(buffer).with(0, grown)));
    const gone = new ArrayBuffer(2);
    const detach = { valueOf() { gone.transfer(); return 1; } };
    try {
      out.push(String(new Uint8Array(gone).with(0, detach)));
    } catch (error) {
      out.push(error.name);
    }
    return JSON.stringify(out);
  })()`;
  assert.deepEqual(JSON.parse(await inQuickJS(program)), [
    "RangeError",
    "7,0,0,0",
    "RangeError",
  ]);
});

/**
 * The copying methods of arrays on receivers whose elements run code: each
 * case answers the copy and the log of what was read, in order.
 */
const ARRAY_COPY_CASES: Case[] = [
  () => [1, 2, 3].toReversed(),
  () => [, 2, , 4].toReversed(),
  () => [3, 1, 2].toSorted(),
  () => [3, 1, 10, 2].toSorted((a, b) => (b as number) - (a as number)),
  () => [, 3, undefined, 1].toSorted(),
  () => [1, 2, 3].toSorted(1 as never),
  () => [1, 2, 3].toSorted({} as never),
  () => Reflect.apply(Array.prototype.toSpliced, [1, 2, 3, 4, 5], []),
  () => ([1, 2, 3, 4, 5] as unknown[]).toSpliced(1),
  () => ([1, 2, 3, 4, 5] as unknown[]).toSpliced(-2, 1, "a", "b"),
  () => ([1, 2, 3, 4, 5] as unknown[]).toSpliced(1, -1, "a"),
  () => ([1, 2, 3, 4, 5] as unknown[]).toSpliced(1, Infinity),
  () =>
    Reflect.apply(Array.prototype.toSpliced, [1, 2, 3, 4, 5], [
      undefined,
      undefined,
    ]),
  () => ([1, 2, 3, 4, 5] as unknown[]).toSpliced(NaN, 2.7),
  () => ([1, 2, 3, 4, 5] as unknown[]).toSpliced(-Infinity, 1),
  () => ([1, 2, 3] as unknown[]).with(0, "a"),
  () => ([1, 2, 3] as unknown[]).with(-1, "a"),
  () => ([1, 2, 3] as unknown[]).with(-3.9, "a"),
  () => ([1, 2, 3] as unknown[]).with(3, "a"),
  () => ([1, 2, 3] as unknown[]).with(-4, "a"),
  () => ([1, 2, 3] as unknown[]).with(Infinity, "a"),
  () => ([1, 2, 3] as unknown[]).with(NaN, "a"),
  () => ([1, 2, 3] as unknown[]).with("1" as never, "a"),
  () => ([1, 2, 3] as unknown[]).with(Symbol() as never, "a"),
  () => ([1, 2, 3] as unknown[]).with(1n as never, "a"),
  () => ([] as unknown[]).with(0, 1),
  () => Reflect.apply(Array.prototype.toReversed, null, []),
  () => Reflect.apply(Array.prototype.with, undefined, [0, 1]),
  () => Reflect.apply(Array.prototype.toSorted, null, []),
  () => Reflect.apply(Array.prototype.toSpliced, undefined, []),
  () => Reflect.apply(Array.prototype.toReversed, "abc", []),
  () => Reflect.apply(Array.prototype.with, "abc", [1, "x"]),
  () => Reflect.apply(Array.prototype.toSpliced, 7, [0, 0, "x"]),
  () =>
    Reflect.apply(Array.prototype.toSorted, { length: 3, 0: "b", 2: "a" }, []),
  () => Reflect.apply(Array.prototype.toReversed, { length: -1 }, []),
  () =>
    Reflect.apply(Array.prototype.toReversed, { length: "2", 0: 1, 1: 2 }, []),
  () => Reflect.apply(Array.prototype.toReversed, { length: 2 ** 32 }, []),
  () =>
    Reflect.apply(Array.prototype.with, { length: 2 ** 32 }, [2 ** 32 + 1, 0]),
  () =>
    Reflect.apply(Array.prototype.toSpliced, { length: 2 ** 53 - 1 }, [
      0,
      0,
      1,
    ]),
  () =>
    Reflect.apply(Array.prototype.toSpliced, { length: 2 ** 40 }, [0, 0, 1]),
  () => [
    Reflect.apply(Array.prototype.toSpliced, { length: 2 ** 40 }, [0, 2 ** 40]),
  ],
  () => {
    const log: unknown[] = [];
    const target = { length: 3, 0: "a", 1: "b", 2: "c" };
    const proxy = new Proxy(target, {
      get(t, key, receiver) {
        log.push(["get", String(key)]);
        return Reflect.get(t, key, receiver);
      },
      has(t, key) {
        log.push(["has", String(key)]);
        return Reflect.has(t, key);
      },
    });
    const arrays = Array.prototype as unknown as Record<
      string,
      (...args: unknown[]) => unknown
    >;
    const out = [
      arrays.toReversed!.call(proxy),
      arrays.toSorted!.call(proxy),
      arrays.toSpliced!.call(proxy, 1, 1, "x"),
      arrays.with!.call(proxy, 1, "y"),
    ];
    return [out, log];
  },
  () => {
    const log: unknown[] = [];
    const items = [1, 2, 3, 4];
    const index = {
      valueOf() {
        log.push(["index", items.length]);
        items.length = 1;
        return 2;
      },
    };
    const copy = (items as unknown[]).with(index as never, "z");
    return [copy, log, items.length];
  },
  () => {
    const items = [1, 2, 3, 4];
    const copy = (items as unknown[]).toSpliced(
      {
        valueOf() {
          items.length = 0;
          return 1;
        },
      } as never,
      { valueOf: () => 1 } as never,
      "s",
    );
    return [copy, items.length];
  },
  () => {
    const like = {
      length: 3,
      get 0() {
        like.length = 0;
        return "first";
      },
      1: "second",
    };
    return [
      Reflect.apply(Array.prototype.toReversed, like, []),
      like.length,
      Reflect.apply(Array.prototype.toSorted, { ...like, length: 3 }, []),
    ];
  },
  () => {
    const items = [5, 1, 4];
    return [
      items.toSorted((a, b) => {
        items.length = 0;
        return (a as number) - (b as number);
      }),
      items.length,
    ];
  },
];

Deno.test("Array.prototype's toReversed, toSorted, toSpliced and with answer as Deno's in a node:vm context and inside QuickJS, for receivers whose elements run code", async () => {
  const [theirs] = await denoAnswer(ARRAY_COPY_CASES);
  const [inVm] = JSON.parse(await vmRealm().run(program(ARRAY_COPY_CASES)));
  const [inQuick] = JSON.parse(await inQuickJS(program(ARRAY_COPY_CASES)));
  const labels = ARRAY_COPY_CASES.map(text);
  assert.deepEqual(differences(labels, inVm, theirs), []);
  // QuickJS words its own failed conversions (a symbol or a BigInt index).
  assertSameButEngineWords(labels, inQuick, theirs, /Symbol\(\)|1n/);
});

/**
 * The typed arrays' sort() with a comparison function: each case answers
 * the elements after the sort, or what it threw.
 */
const TYPED_SORT_CASES: Case[] = [
  () => [...new Uint8Array([3, 1, 2]).sort((a, b) => b - a)],
  () => [...new Int16Array([3, -1, 2]).sort()],
  () => [...new Float64Array([NaN, -0, 0, -1, 2]).sort((a, b) => a - b)],
  () => [...new Float64Array([3, 1, 2]).sort(() => NaN)],
  () => [...new Float32Array([3, 1, 2]).sort((a, b) => `${a - b}` as never)],
  () => [
    ...new Int32Array([3, 1, 2]).sort((a, b) =>
      ({ valueOf: () => a - b }) as never
    ),
  ],
  () => [...new BigInt64Array([3n, -1n, 2n]).sort((a, b) => Number(a - b))],
  () => [...new Uint8Array([1, 2]).sort(1 as never)],
  () => [...new Uint8Array([1, 2]).sort({} as never)],
  () => [...new Uint8Array([1, 2]).sort(null as never)],
  () =>
    Reflect.apply(Uint8Array.prototype.sort, [2, 1], [
      (a: number, b: number) => a - b,
    ]),
  () => Reflect.apply(Uint8Array.prototype.sort, {}, [() => 0]),
  () => {
    const pairs = [5, 1, 5, 2, 5, 3, 1, 4, 1, 5];
    const view = new Uint16Array(pairs.map((n, i) => n * 256 + i));
    return [...view.sort((a, b) => (a >> 8) - (b >> 8))];
  },
  () => {
    const buffer = new ArrayBuffer(8);
    const view = new Uint8Array(buffer);
    buffer.transfer();
    return view.sort(() => 0);
  },
  () => {
    const buffer = new ArrayBuffer(8, { maxByteLength: 16 });
    const view = new Uint8Array(buffer, 4, 4);
    buffer.resize(2);
    return view.sort(() => 0);
  },
  () => {
    const buffer = new ArrayBuffer(8);
    const view = new Uint8Array(buffer);
    for (let i = 0; i < 8; i++) view[i] = 8 - i;
    let calls = 0;
    const result = view.sort((a, b) => {
      if (++calls === 2) buffer.transfer();
      return a - b;
    });
    return [result === view, view.length];
  },
  () => {
    const buffer = new ArrayBuffer(16, { maxByteLength: 16 });
    const view = new Uint8Array(buffer);
    for (let i = 0; i < 16; i++) view[i] = i;
    view.sort((a, b) => {
      if (buffer.byteLength === 16) buffer.resize(4);
      return b - a;
    });
    return [...view];
  },
  () => {
    const buffer = new ArrayBuffer(8, { maxByteLength: 16 });
    const view = new Uint8Array(buffer);
    for (let i = 0; i < 8; i++) view[i] = i;
    view.sort((a, b) => {
      if (buffer.byteLength === 8) buffer.resize(16);
      return b - a;
    });
    return [...view];
  },
  () => {
    const buffer = new ArrayBuffer(8, { maxByteLength: 16 });
    const view = new Uint8Array(buffer, 0, 8);
    for (let i = 0; i < 8; i++) view[i] = i;
    view.sort((a, b) => {
      if (buffer.byteLength === 8) buffer.resize(4);
      return b - a;
    });
    return [view.length, [...new Uint8Array(buffer)]];
  },
  () => {
    const view = new Uint8Array([1, 2, 3]);
    const seen: unknown[] = [];
    view.sort(function (this: unknown, a, b) {
      seen.push(typeof this, view.includes(a));
      view[0] = 9;
      return b - a;
    });
    return [[...view], seen.every((x) => x === "undefined" || x === true)];
  },
  () => {
    const view = new Uint8Array([1, 2, 3]);
    try {
      view.sort(() => {
        throw new RangeError("stop");
      });
    } catch (error) {
      return [(error as Error).message, [...view]];
    }
    return "no error";
  },
];

Deno.test("a typed array's sort() with a comparison function answers as Deno's in a node:vm context and inside QuickJS, when the function shrinks, grows or detaches the buffer", async () => {
  const [theirs] = await denoAnswer(TYPED_SORT_CASES);
  const [inVm] = JSON.parse(await vmRealm().run(program(TYPED_SORT_CASES)));
  const [inQuick] = JSON.parse(await inQuickJS(program(TYPED_SORT_CASES)));
  const labels = TYPED_SORT_CASES.map(text);
  assert.deepEqual(differences(labels, inVm, theirs), []);
  // QuickJS words its own refusals: another this, a detached or
  // out-of-bounds view.
  const engineWords = /Reflect\.apply|transfer\(\);\n|resize\(2\)/;
  assertSameButEngineWords(labels, inQuick, theirs, engineWords);
});

/**
 * Typed array constructors under a `new.target` whose `prototype` runs
 * code, and the constructors' own shape.
 */
const TYPED_CONSTRUCTOR_CASES: Case[] = [
  () => {
    const buffer = new ArrayBuffer(16);
    const newTarget = new Proxy(function () {}, {
      get(target, key) {
        if (key === "prototype") buffer.transfer(0);
        return Reflect.get(target, key);
      },
    });
    const view = Reflect.construct(Uint8Array, [buffer, 0, 16], newTarget);
    return [view.length, view[0], view[8]];
  },
  () => {
    const buffer = new ArrayBuffer(16, { maxByteLength: 16 });
    const newTarget = new Proxy(function () {}, {
      get(target, key) {
        if (key === "prototype") buffer.resize(4);
        return Reflect.get(target, key);
      },
    });
    return Reflect.construct(Uint8Array, [buffer, 0, 16], newTarget).length;
  },
  () => {
    const buffer = new ArrayBuffer(16, { maxByteLength: 16 });
    const newTarget = new Proxy(function () {}, {
      get(target, key) {
        if (key === "prototype") {
          buffer.resize(4);
          return Uint8Array.prototype;
        }
        return Reflect.get(target, key);
      },
    });
    const view = Reflect.construct(Uint8Array, [buffer], newTarget);
    buffer.resize(8);
    return [view.length, view instanceof Uint8Array];
  },
  () => {
    const buffer = new ArrayBuffer(16, { maxByteLength: 16 });
    const source = new Uint8Array(buffer).fill(7);
    const newTarget = new Proxy(function () {}, {
      get(target, key) {
        if (key === "prototype") {
          buffer.resize(4);
          return Int8Array.prototype;
        }
        return Reflect.get(target, key);
      },
    });
    return [...Reflect.construct(Uint8Array, [source], newTarget)];
  },
  () => {
    const buffer = new ArrayBuffer(16, { maxByteLength: 16 });
    const source = new Uint8Array(buffer).fill(7);
    const newTarget = new Proxy(function () {}, {
      get(target, key) {
        if (key === "prototype") buffer.resize(4);
        return Reflect.get(target, key);
      },
    });
    return Reflect.construct(Int16Array, [source], newTarget).length;
  },
  () => {
    const log: string[] = [];
    const newTarget = new Proxy(function () {}, {
      get(target, key) {
        log.push(String(key));
        return Reflect.get(target, key);
      },
    });
    Reflect.construct(Float64Array, [[1, 2]], newTarget);
    Reflect.construct(Float64Array, [2], newTarget);
    return log;
  },
  () => {
    class Bytes extends Uint8Array {
      sum() {
        return this.reduce((a, b) => a + b, 0);
      }
    }
    const made = new Bytes([1, 2, 3]);
    return [
      made.sum(),
      made instanceof Bytes,
      made instanceof Uint8Array,
      made.constructor === Bytes,
      made.subarray(1) instanceof Bytes,
      (Bytes.from([4]) as Bytes).sum(),
      new Bytes(2).length,
    ];
  },
  () => {
    const Sub = new Proxy(class extends Uint8Array {}, {});
    const made = new Sub(new ArrayBuffer(4), 1, 2);
    return [made.length, made instanceof Uint8Array, made.byteOffset];
  },
  () => [
    Uint8Array.name,
    Uint8Array.length,
    Uint8Array.BYTES_PER_ELEMENT,
    Uint8Array.prototype.constructor === Uint8Array,
    Object.getPrototypeOf(Uint8Array) === Object.getPrototypeOf(Int8Array),
    new Uint8Array([1]).constructor === Uint8Array,
    [...Uint8Array.of(1, 2)],
    [...BigInt64Array.from([1n])].map(String),
    Object.prototype.toString.call(new Float32Array(1)),
    typeof Uint8Array,
    Array.isArray(new Uint8Array(1)),
    ArrayBuffer.isView(new Uint16Array(1)),
  ],
  () => (Uint8Array as unknown as () => unknown)(),
  () => new Uint8Array(-1),
  () => new Uint8Array(new ArrayBuffer(4), 3, 2),
  () => [...new Uint8Array(new Uint16Array([257, 2]))],
  () => [...new Uint8Array({ length: 2, 0: 5, 1: 6 })],
  () => [...new Uint8Array(new Set([9, 8]))],
];

Deno.test("a typed array constructor under a new.target whose prototype shrinks or detaches the buffer answers as Deno's in a node:vm context and inside QuickJS, and keeps its shape", async () => {
  const [theirs] = await denoAnswer(TYPED_CONSTRUCTOR_CASES);
  const [inVm] = JSON.parse(
    await vmRealm().run(program(TYPED_CONSTRUCTOR_CASES)),
  );
  const [inQuick] = JSON.parse(
    await inQuickJS(program(TYPED_CONSTRUCTOR_CASES)),
  );
  const labels = TYPED_CONSTRUCTOR_CASES.map(text);
  // The standard reads new.target's prototype before the source's length;
  // V8 reads the length first and copies it, zeros past the shrunk buffer.
  const SOURCE_SHRUNK = 3;
  assert.deepEqual(theirs[SOURCE_SHRUNK], [7, 7, 7, 7, ...Array(12).fill(0)]);
  for (const answers of [inVm, inQuick]) {
    assert.deepEqual(answers[SOURCE_SHRUNK], [7, 7, 7, 7]);
    answers[SOURCE_SHRUNK] = theirs[SOURCE_SHRUNK];
  }
  assert.deepEqual(differences(labels, inVm, theirs), []);
  // QuickJS words its own refusals: a detached or shrunk buffer, a call
  // without new, a bad length or offset.
  const engineWords =
    /transfer\(0\)|resize\(4\);\n\s+return Reflect|Uint8Array\(\)|\(-1\)|, 3, 2\)/;
  assertSameButEngineWords(labels, inQuick, theirs, engineWords);
});

/**
 * BigInt.asUintN: values whose top bit is set at `bits`, negative values
 * narrower and wider than `bits`, and the order and refusals of its
 * conversions.
 */
const AS_UINT_N_CASES: Case[] = [
  () =>
    [0, 1, 31, 32, 63, 64, 65, 127, 128, 129, 1000].map((bits) =>
      [
        BigInt.asUintN(bits, -1n),
        BigInt.asUintN(bits, 2n ** 64n - 1n),
        BigInt.asUintN(bits, -(2n ** 64n)),
        BigInt.asUintN(bits, 2n ** 127n + 12345n),
        BigInt.asUintN(bits, -(2n ** 200n) + 7n),
        BigInt.asUintN(bits, 3n ** 300n),
        BigInt.asUintN(bits, -(3n ** 301n)),
        BigInt.asUintN(bits, 5n),
      ].map(String)
    ),
  () =>
    [0, 1, 63, 64, 65, 1000].map((bits) =>
      [-1n, 2n ** 64n - 1n, -(3n ** 301n)].map((n) =>
        String(BigInt.asIntN(bits, n))
      )
    ),
  () => BigInt.asUintN(2 ** 53 - 1, 5n),
  () => BigInt.asUintN(2 ** 53 - 1, -1n),
  () => BigInt.asUintN(2 ** 53, 1n),
  () => BigInt.asUintN(-1, 1n),
  () => BigInt.asUintN(-0.5, -1n),
  () => BigInt.asUintN(NaN, -1n),
  () => BigInt.asUintN(undefined as never, -1n),
  () => BigInt.asUintN("8" as never, -1n),
  () => BigInt.asUintN(8.9, -1n),
  () => BigInt.asUintN(8, "255" as never),
  () => BigInt.asUintN(8, true as never),
  () => BigInt.asUintN(8, 255 as never),
  () => BigInt.asUintN(8n as never, 1n),
  () => BigInt.asUintN(Symbol() as never, 1n),
  () => {
    const seen: string[] = [];
    const bits = { valueOf: () => (seen.push("bits"), 4) };
    const value = { valueOf: () => (seen.push("value"), -1n) };
    return [String(BigInt.asUintN(bits as never, value as never)), seen];
  },
  () => [BigInt.asUintN.name, BigInt.asUintN.length],
];

Deno.test("BigInt.asUintN answers as Deno's in a node:vm context and inside QuickJS, whose own gave negative numbers", async () => {
  const [theirs] = await denoAnswer(AS_UINT_N_CASES);
  const [inVm] = JSON.parse(await vmRealm().run(program(AS_UINT_N_CASES)));
  const [inQuick] = JSON.parse(await inQuickJS(program(AS_UINT_N_CASES)));
  const labels = AS_UINT_N_CASES.map(text);
  assert.deepEqual(differences(labels, inVm, theirs), []);
  // QuickJS words its own refusals: a BigInt too large, a value that is
  // no BigInt, a BigInt or symbol taken for a number.
  const engineWords = /2 \*\* 53 - 1, -1n|"255"|, 255\)|\(8n,|Symbol\(\)/;
  assertSameButEngineWords(labels, inQuick, theirs, engineWords);
});

/**
 * The iterator helpers' return(): over iterators with and without a
 * `return` method, through `for...of` with `break` and destructuring, and
 * the shape of the methods that make helpers.
 */
const HELPER_RETURN_CASES: Case[] = [
  () => {
    const sources = [
      () => [1, 2, 3].values(),
      () => new Set([1, 2, 3]).values(),
      () => new Map([[1, 1], [2, 2]]).keys(),
      () => "abc"[Symbol.iterator](),
    ];
    const helpers = [
      (it: IteratorObject<unknown>) => it.map((x) => x),
      (it: IteratorObject<unknown>) => it.filter(() => true),
      (it: IteratorObject<unknown>) => it.take(2),
      (it: IteratorObject<unknown>) => it.drop(1),
      (it: IteratorObject<unknown>) => it.flatMap((x) => [x, x]),
    ];
    return sources.flatMap((source) =>
      helpers.map((helper) => {
        const seen = [];
        for (const x of helper(source())) {
          seen.push(x);
          break;
        }
        const [first] = helper(source());
        const fresh = helper(source());
        const started = helper(source());
        started.next();
        return [
          seen,
          first,
          fresh.return!(),
          started.return!(),
          started.next(),
        ];
      })
    );
  },
  () => {
    const closed: unknown[] = [];
    const source = {
      i: 0,
      next() {
        return { value: this.i++, done: false };
      },
      return() {
        closed.push("closed");
        return { value: "r", done: false };
      },
    };
    const helper = Iterator.prototype.map.call(source, (x: number) => x);
    helper.next();
    return [helper.return!(), helper.next(), helper.return!(), closed];
  },
  () => {
    const source = {
      next: () => ({ value: 1, done: false }),
      return: 5,
    };
    const helper = Iterator.prototype.filter.call(source, () => true);
    helper.next();
    return helper.return!();
  },
  () => {
    const source = {
      next: () => ({ value: 1, done: false }),
      return: () => 5,
    };
    const helper = Iterator.prototype.take.call(source, 3);
    helper.next();
    return helper.return!();
  },
  () => {
    const source = {
      next: () => ({ value: 1, done: false }),
      get return(): never {
        throw new TypeError("not a function");
      },
    };
    const helper = Iterator.prototype.drop.call(source, 0);
    helper.next();
    return helper.return!();
  },
  () => Iterator.prototype.map.call({} as never, 1 as never),
  () => Iterator.prototype.map.call(1 as never, () => 1),
  () =>
    Reflect.apply(
      Object.getPrototypeOf([].values().map((x) => x)).return,
      {},
      [],
    ),
  () => {
    const proto = Iterator.prototype as unknown as Record<
      string,
      (...args: never[]) => unknown
    >;
    const helperReturn = Object.getPrototypeOf([].values().map((x) => x))
      .return as (...args: never[]) => unknown;
    return [
      ...["map", "filter", "take", "drop", "flatMap"].map((key) => [
        proto[key]!.name,
        proto[key]!.length,
        "prototype" in proto[key]!,
      ]),
      [helperReturn.name, helperReturn.length],
    ];
  },
];

Deno.test("the iterator helpers' return() closes an iterator without a return method and answers as Deno's in a node:vm context and inside QuickJS, whose own threw", async () => {
  const [theirs] = await denoAnswer(HELPER_RETURN_CASES);
  const [inVm] = JSON.parse(await vmRealm().run(program(HELPER_RETURN_CASES)));
  const [inQuick] = JSON.parse(await inQuickJS(program(HELPER_RETURN_CASES)));
  const labels = HELPER_RETURN_CASES.map(text);
  assert.deepEqual(differences(labels, inVm, theirs), []);
  // QuickJS words its own refusals: a method that is no function, a
  // return() that answers no object, a this that is no object or no
  // helper.
  const engineWords =
    /return: 5|return: \(\)=>5|call\(\{\}, 1\)|call\(1,|, \{\}, \[\]\)/;
  assertSameButEngineWords(labels, inQuick, theirs, engineWords);
});
