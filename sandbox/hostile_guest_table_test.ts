import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { EMPTY_CATALOG } from "../catalog/mod.ts";
import { createQuickJSLoader, createQuickJSPool } from "../loader/mod.ts";
import type { ErrorCode } from "../protocol/error_codes.ts";
import type { JsonValue, SandboxResult } from "../protocol/mod.ts";
import { createProcessSandbox } from "./process_sandbox.ts";
import { createWorkerSandbox } from "./worker_sandbox.ts";
import { withLag } from "./_lag_test.ts";
import {
  assertNothingLeftRunning,
  HAS_PROC,
} from "../vm/node_test/leak_probe.mjs";

// The hostile guest table: guests that attack the time, memory and stack
// limits, the marshalling of results, throws and console arguments, the
// realm's intrinsics and the next run, each with the one outcome every tier
// gives. Where a tier cannot give it by design, the case says so and why,
// with the outcome that tier gives instead (docs/loader.md, docs/sandbox.md).
//
// After every case, on the same loader, pool or sandbox: the next run
// answers right and sees nothing of the hostile one; no message or log line
// carries a host path, a host stack or the host's secret; and, on the tiers
// that run guests off the caller's thread, the caller's event loop kept
// turning (a generous bound, a sanity check and not a timing assertion).
//
// Limits are short so the table runs in seconds.

/** The limit of a guest that must end by its deadline. */
const TIMEOUT_MS = 300;
/**
 * The limit of every other guest, which must end by something else first
 * (a value, a throw, its memory or stack limit), also on a loaded machine.
 */
const CALM_TIMEOUT_MS = 2000;
/** QuickJS tiers: a few MiB. */
const QUICKJS_MEMORY_BYTES = 8 * 1024 * 1024;
/** Worker and process tiers: the smallest V8 heap they start with. */
const V8_MEMORY_BYTES = 16 * 1024 * 1024;
const MAX_LOG_BYTES = 4096;
/** The longest the caller's event loop may stop turning during a case. */
const LAG_BOUND_MS = 1500;

/** Put in the caller's environment; no answer may carry it. */
const SECRET = `hostile-secret-${crypto.randomUUID()}`;
const ROOT = new URL("../", import.meta.url).pathname;

/**
 * The tiers a guest runs on, in Deno. The pool's Web Worker runners are
 * refused in Deno (their `terminate()` cannot stop a long built-in call);
 * browsers run them through the fixture table.
 */
const TIERS = [
  "loader",
  "pool:process",
  "pool:in-thread",
  "worker",
  "process",
] as const;
type Tier = typeof TIERS[number];
/** Tiers whose guests run on the caller's thread: they stall it by design. */
const IN_THREAD: readonly Tier[] = ["loader", "pool:in-thread"];
const V8: readonly Tier[] = ["worker", "process"];

/** What a case must answer: a value, or a code (and, when pinned, a name). */
type Expect =
  | { ok: true; value: JsonValue }
  | { ok: false; code: ErrorCode; name?: string };

/** A tier that gives another answer by design, and why. */
interface Difference {
  tiers: readonly Tier[];
  /** What those tiers answer, or `null` when the case cannot run there. */
  expect: Expect | null;
  /** Another answer those tiers may give instead, when timing decides. */
  orElse?: Expect;
  /** Why, with the doc that says so. */
  why: string;
}

interface HostileCase {
  name: string;
  source: string;
  expect: Expect;
  differs?: Difference;
  context?: JsonValue;
  /** Checks more of an answer than its value or code. */
  check?: (result: SandboxResult) => void;
}

const value = (v: JsonValue): Expect => ({ ok: true, value: v });
const code = (c: ErrorCode, name?: string): Expect => ({
  ok: false,
  code: c,
  ...(name === undefined ? {} : { name }),
});

const TIMEOUT = code("TIMEOUT", "TimeoutError");
const OOM = code("OUT_OF_MEMORY");
const STACK = code("STACK_OVERFLOW");
const GUEST = code("GUEST_ERROR");
const NOT_DATA = code("RESULT_NOT_SERIALIZABLE");
const EVAL = code("GUEST_ERROR", "EvalError");

/** How the V8 tiers answer a giant string that one built-in call makes and drops. */
const V8_DROPS_GIANT_STRINGS: Difference = {
  tiers: V8,
  expect: value(-1),
  orElse: OOM,
  why:
    "V8 lets one built-in call make and drop a string this large under memoryLimitBytes (--max-old-space-size); the heap cap ends a run only when such a string outlives a collection, and the bound on resident memory only when one of its reads, every 50 ms, falls while the string is held (docs/sandbox.md)",
};

/**
 * Every hostile source starts by marking the realm where it can, so the
 * probe that follows shows whether any of it reached the next run.
 */
const MARK = `try { globalThis.leak = "mark"; } catch {}
try { Object.prototype.polluted = 1; } catch {}
try { Array.prototype.polluted = 1; } catch {}
`;

const CASES: HostileCase[] = [
  // CPU.
  { name: "a plain endless loop", source: "for (;;) {}", expect: TIMEOUT },
  {
    name: "an endless loop in a sort comparator",
    source: "export default [3, 2, 1].sort(() => { for (;;) {} });",
    expect: TIMEOUT,
  },
  {
    name: "an endless loop in a getter of the result, which the host reads",
    source: "export default { get x() { for (;;) {} } };",
    expect: TIMEOUT,
  },
  {
    name: "an endless loop in a proxy trap of the result",
    source:
      "export default new Proxy({}, { ownKeys() { for (;;) {} }, get() { for (;;) {} } });",
    expect: TIMEOUT,
  },
  {
    name: "an endless loop in toJSON of the result",
    source: "export default { a: { toJSON() { for (;;) {} } } };",
    expect: TIMEOUT,
  },
  {
    name: "an endless loop in a thrown value's message getter",
    source: "throw { get message() { for (;;) {} } };",
    expect: TIMEOUT,
  },
  {
    name: "an endless loop in a thrown value's Symbol.toPrimitive",
    source: "throw { [Symbol.toPrimitive]() { for (;;) {} } };",
    expect: TIMEOUT,
  },
  {
    name: "an endless loop in a thrown proxy's traps",
    source: "throw new Proxy({}, { get() { for (;;) {} } });",
    expect: TIMEOUT,
  },
  {
    name: "an endless loop in toJSON of a console argument",
    source: "console.log({ toJSON() { for (;;) {} } }); export default 1;",
    expect: TIMEOUT,
  },
  {
    name: "an endless loop in a console argument's message getter",
    source:
      "console.log({ name: 'E', get message() { for (;;) {} } }); export default 1;",
    expect: TIMEOUT,
  },
  {
    name:
      "an endless loop in a console argument's toString, called for a symbol-keyed object",
    source:
      "console.log(Object.create(null, { toJSON: { value: 1 } }), { toString() { for (;;) {} }, toJSON: undefined }); export default 1;",
    expect: value(1),
  },
  {
    name: "an endless loop in a proxy console argument's traps",
    source:
      "console.log(new Proxy({}, { get() { for (;;) {} } })); export default 1;",
    expect: TIMEOUT,
  },
  {
    name: "an endless loop in Error.prepareStackTrace",
    source:
      "try { Error.prepareStackTrace = () => { for (;;) {} }; } catch {} throw new Error('own');",
    expect: code("GUEST_ERROR", "Error"),
  },
  {
    name: "an endless loop in a thrown value's stack and cause getters",
    source:
      "throw { name: 'E', message: 'm', get stack() { for (;;) {} }, get cause() { for (;;) {} } };",
    expect: code("GUEST_ERROR", "E"),
  },
  // The Web APIs: Deno's own on V8, cordon's realm code on QuickJS.
  {
    name: "an endless loop in a getter of TextDecoder's options",
    source:
      'export default new TextDecoder("utf-8", { get fatal() { for (;;) {} } }).encoding;',
    expect: TIMEOUT,
  },
  {
    name: "typed array methods replaced before text is decoded",
    source: `try { Uint8Array.prototype.subarray = () => "forged"; } catch {}
try { Object.defineProperty(Uint8Array.prototype, "length", { get: () => 0 }); } catch {}
export default new TextDecoder().decode(new TextEncoder().encode("ok \u2713"));`,
    expect: value("ok \u2713"),
  },
  {
    name:
      "every method and getter of arrays, typed arrays and strings replaced by one that throws, and their species too",
    source: `const boom = () => { throw new Error("tampered"); };
const define = Object.defineProperty;
const targets = [Array.prototype, String.prototype, Uint8Array.prototype,
  Object.getPrototypeOf(Uint8Array.prototype), ArrayBuffer.prototype, Object.prototype];
const pairs = [];
for (let t = 0; t < targets.length; t++) {
  const keys = Reflect.ownKeys(targets[t]);
  for (let k = 0; k < keys.length; k++) pairs[pairs.length] = [targets[t], keys[k]];
}
const count = pairs.length;
for (let i = 0; i < count; i++) {
  if (pairs[i][1] === "constructor") continue;
  try { define(pairs[i][0], pairs[i][1], { get: boom, set: boom, configurable: true }); } catch {}
}
const ctors = [Array, Uint8Array, ArrayBuffer, Promise];
for (let i = 0; i < 4; i++) {
  try { define(ctors[i], Symbol.species, { get: boom, configurable: true }); } catch {}
}
console.log("still here");
export default { answer: ["ok", 1] };`,
    expect: value({ answer: ["ok", 1] }),
    check: (result) =>
      assert.deepEqual(result.logs, [{ level: "log", message: "still here" }]),
  },
  {
    name:
      "Promise.prototype.constructor replaced by a subclass that forges what then() makes",
    source: `class Evil extends Promise {
  constructor(executor) { super((resolve, reject) => executor(() => resolve("forged"), reject)); }
}
try { Object.defineProperty(Promise.prototype, "constructor", { value: Evil }); } catch {}
try { Object.defineProperty(Promise, Symbol.species, { get() { return Evil; } }); } catch {}
export default async () => "ok";`,
    expect: value("ok"),
  },
  {
    name:
      "an integer array disguised as a float array, and an object disguised as an integer array",
    source:
      `const bytes = Object.setPrototypeOf(new Uint8Array(4), Float32Array.prototype);
let fake;
try { crypto.getRandomValues(Object.setPrototypeOf({ length: 4 }, Uint8Array.prototype)); } catch (e) { fake = e.name; }
export default [crypto.getRandomValues(bytes) === bytes, fake];`,
    expect: value([true, "TypeMismatchError"]),
  },
  {
    name: "a proxy of a byte array handed to TextDecoder and crypto",
    source: `const proxy = new Proxy(new Uint8Array(4), {});
const names = [];
try { new TextDecoder().decode(proxy); } catch (e) { names.push(e.name); }
try { crypto.getRandomValues(proxy); } catch (e) { names.push(e.name); }
export default names;`,
    expect: value(["TypeError", "TypeMismatchError"]),
  },
  {
    name:
      "byte arrays whose own buffer, offset and lengths lie to TextDecoder, encodeInto and crypto",
    source: `const lie = (view, props) => {
  for (const key in props) Object.defineProperty(view, key, { value: props[key] });
  return view;
};
const elsewhere = new Uint8Array([0x78, 0x79]);
const lies = { buffer: elsewhere.buffer, byteOffset: 1, byteLength: 1, length: 8 };
const text = new TextDecoder().decode(lie(new Uint8Array([0x6f, 0x6b]), lies));
const into = new TextEncoder().encodeInto("abc", lie(new Uint8Array(1), lies));
let quota;
try { crypto.getRandomValues(lie(new Uint8Array(65537), { byteLength: 8 })); } catch (e) { quota = e.name; }
crypto.getRandomValues(lie(new Uint8Array(4), lies));
export default [text, into, quota, Array.from(elsewhere)];`,
    expect: value(["ok", { read: 1, written: 1 }, "QuotaExceededError", [
      0x78,
      0x79,
    ]]),
  },
  {
    name: "a DOMException named after what Object.prototype holds",
    source:
      `export default ["constructor", "toString", "__proto__"].map((name) => new DOMException("m", name).code);`,
    expect: value([0, 0, 0]),
  },
  {
    name: "a catastrophic regular expression",
    source: `export default /^(a+)+$/.test("a".repeat(34) + "b");`,
    expect: TIMEOUT,
    differs: {
      tiers: IN_THREAD,
      expect: null,
      why:
        "the in-thread loader cannot stop one long built-in call; code from anyone goes to the pool (docs/loader.md, Limits)",
    },
  },
  {
    name: "one long built-in call over a huge array-like",
    source: "export default Array.prototype.indexOf.call({ length: 2e9 }, 1);",
    expect: TIMEOUT,
    differs: {
      tiers: [...IN_THREAD, ...V8],
      expect: null,
      why:
        "the in-thread loader cannot stop one long built-in call (docs/loader.md, Limits); V8 walks only the properties the object has and answers -1 at once, so the case tests nothing there",
    },
  },
  {
    name: "a thenable that resolves with itself",
    source: "const t = { then(resolve) { resolve(t); } }; export default t;",
    expect: TIMEOUT,
  },
  {
    name: "a BigInt that grows without end",
    source: "let x = 3n; for (;;) x = x * 3n + 1n;",
    expect: TIMEOUT,
  },
  {
    name: "a promise job flood",
    source:
      "function again() { Promise.resolve().then(again); } again(); export default new Promise(() => {});",
    expect: TIMEOUT,
  },
  {
    name: "microtask recursion through queueMicrotask or then",
    source:
      "const q = globalThis.queueMicrotask ?? ((f) => Promise.resolve().then(f)); function again() { q(again); } again(); export default 1;",
    // The answer is the default export alone; jobs left behind are dropped.
    expect: value(1),
  },
  {
    name: "an endless async generator",
    source:
      "async function* numbers() { for (let i = 0; ; i++) yield i; } export default (async () => { for await (const _ of numbers()); })();",
    expect: TIMEOUT,
  },
  {
    name: "an endless loop after await",
    source: "await null; for (;;) {}",
    expect: TIMEOUT,
  },
  {
    name: "an endless loop in a finally block",
    source: "try { for (;;) {} } finally { for (;;) {} }",
    expect: TIMEOUT,
  },
  {
    name: "a loop that catches its own timeout and loops on",
    source: "for (;;) { try { for (;;) {} } catch {} }",
    expect: TIMEOUT,
  },
  {
    name: "a catch of the timeout that returns a value",
    source:
      "let v = 'caught'; try { for (;;) {} } catch { v = 'escaped'; } export default v;",
    expect: TIMEOUT,
  },
  {
    name: "an await loop in a catch of the timeout",
    source:
      "try { for (;;) {} } catch { for (;;) await null; } export default 1;",
    expect: TIMEOUT,
  },
  {
    name: "a thenable whose then loops",
    source: "export default { then() { for (;;) {} } };",
    expect: TIMEOUT,
  },
  {
    name: "a promise that never settles",
    source: "export default new Promise(() => {});",
    expect: TIMEOUT,
  },
  // Memory.
  {
    name: "an array of strings that grows without end",
    source: "const a = []; for (let i = 0; ; i++) a.push('x'.repeat(1e4) + i);",
    expect: OOM,
  },
  {
    name: "a Map that grows without end",
    source: "const m = new Map(); for (let i = 0; ; i++) m.set(i, { i });",
    expect: OOM,
  },
  {
    name: "allocation in a caught loop",
    source:
      "const keep = []; for (;;) { try { keep.push(new Array(1e5).fill(keep.length)); } catch {} }",
    expect: OOM,
  },
  {
    name: "spreading an endless generator",
    source:
      "function* forever() { for (let i = 0; ; i++) yield 'item' + i; } export default [...forever()];",
    expect: OOM,
  },
  {
    name: "a giant String.prototype.repeat",
    source: "export default 'abcd'.repeat(2 ** 26).indexOf('z');",
    expect: OOM,
    differs: V8_DROPS_GIANT_STRINGS,
  },
  {
    name: "a giant padStart",
    source: "export default ''.padStart(2 ** 27, 'ab').indexOf('z');",
    expect: OOM,
    differs: V8_DROPS_GIANT_STRINGS,
  },
  {
    name: "a giant Array.prototype.join",
    source:
      "export default new Array(2 ** 22).join('a'.repeat(64)).indexOf('z');",
    expect: OOM,
    differs: V8_DROPS_GIANT_STRINGS,
  },
  {
    name: "typed arrays that grow without end",
    source:
      "const keep = []; for (;;) keep.push(new Uint8Array(1 << 20).fill(1));",
    expect: OOM,
  },
  {
    name: "one typed array of a gigabyte, filled in one call",
    source: "export default new Uint8Array(2 ** 30).fill(1).length;",
    expect: OOM,
  },
  {
    name: "an ArrayBuffer of 2 GiB",
    source: "export default new ArrayBuffer(2 ** 31 - 1).byteLength;",
    expect: OOM,
    differs: {
      tiers: V8,
      expect: value(2 ** 31 - 1),
      why:
        "ArrayBuffer contents live outside V8's heap, bounded only by the OS (docs/sandbox.md); untouched pages cost nothing",
    },
  },
  {
    name: "console output far past maxLogBytes",
    source:
      "for (let i = 0; i < 2000; i++) console.log('x'.repeat(100), i); export default 'done';",
    expect: value("done"),
    check: (result) => {
      assert.equal(result.logsTruncated, true);
      const bytes = result.logs.reduce(
        (sum, entry) => sum + new TextEncoder().encode(entry.message).length,
        0,
      );
      assert.ok(bytes <= MAX_LOG_BYTES, `${bytes} bytes of logs`);
    },
  },
  {
    name: "a flood of empty console lines far past maxLogBytes",
    source:
      "for (let i = 0; i < 2e5; i++) console.log(); export default 'done';",
    expect: value("done"),
    check: (result) => {
      assert.equal(result.logsTruncated, true);
      assert.ok(result.logs.length <= MAX_LOG_BYTES);
    },
  },
  {
    name: "a flood of console lines on every level, with arguments to format",
    source:
      "for (let i = 0; i < 1e5; i++) { console.info(i, { i }); console.debug([i]); console.warn('%s', i); console.error(new Error(String(i))); } export default 'done';",
    expect: value("done"),
    check: (result) => assert.equal(result.logsTruncated, true),
  },
  {
    name: "one console line of a megabyte",
    source: "console.log('y'.repeat(2 ** 20)); export default 1;",
    expect: value(1),
    check: (result) => {
      const [line] = result.logs;
      assert.ok(line === undefined || line.message.length <= 8193);
    },
  },
  {
    name: "a result of a megabyte",
    source: "export default 'z'.repeat(2 ** 20);",
    expect: value("z".repeat(2 ** 20)),
  },
  {
    name:
      "a sparse result array of length 2**32 - 1, alone and inside an object",
    source:
      "const a = []; a.length = 2 ** 32 - 1; a[7] = 1; export default [{ list: a }];",
    expect: NOT_DATA,
    check: (result) => {
      assert.ok(!result.ok);
      assert.match(
        result.error.message,
        /an array of 4294967295 elements .*result\[0\]\.list/,
      );
    },
  },
  {
    name: "a cyclic result",
    source: "const a = { b: {} }; a.b.a = a; export default a;",
    expect: NOT_DATA,
  },
  {
    name: "a result nested ten thousand deep",
    source:
      "let v = []; for (let i = 0; i < 1e4; i++) v = [v]; export default v;",
    expect: STACK,
  },
  {
    name: "a thrown string of a megabyte",
    source: "throw 'e'.repeat(2 ** 20);",
    expect: code("GUEST_ERROR", "NonErrorThrown"),
    check: (result) => {
      assert.ok(!result.ok && result.error.message.length <= 8193);
    },
  },
  {
    name: "a thrown Error whose message is a megabyte",
    source: "throw new Error('m'.repeat(2 ** 20));",
    expect: code("GUEST_ERROR", "Error"),
    check: (result) => {
      assert.ok(!result.ok && result.error.message.length <= 8193);
    },
  },
  {
    name: "a thrown Error whose message and name are throwing getters",
    source:
      "const e = new Error('x'); Object.defineProperty(e, 'message', { get() { throw new Error('inner'); } }); Object.defineProperty(e, 'name', { get() { throw 1; } }); throw e;",
    expect: code("GUEST_ERROR", "NonErrorThrown"),
  },
  // Stack.
  {
    name: "JSON.parse of text nested twenty thousand deep",
    source: "export default JSON.parse('['.repeat(2e4) + ']'.repeat(2e4));",
    expect: STACK,
  },
  {
    name: "a chain of twenty thousand proxies",
    source:
      "let p = {}; for (let i = 0; i < 2e4; i++) p = new Proxy(p, {}); export default p.x;",
    expect: STACK,
  },
  {
    name: "deep recursion in plain calls",
    source: "function f(n) { return f(n + 1) + 1; } export default f(0);",
    expect: STACK,
  },
  {
    name: "deep recursion through async functions",
    source:
      "async function f(n) { return f(n + 1); } export default await f(0);",
    expect: STACK,
  },
  {
    name: "deep recursion in a getter",
    source: "const o = { get x() { return this.x; } }; export default o.x;",
    expect: STACK,
  },
  {
    name: "deep recursion in JSON.stringify through toJSON",
    source:
      "const o = { toJSON() { return JSON.stringify(this); } }; export default JSON.stringify(o);",
    expect: STACK,
  },
  {
    name: "deep recursion in a proxy trap",
    source:
      "const p = new Proxy({}, { get(t, k, r) { return r[k]; } }); export default p.x;",
    expect: STACK,
  },
  {
    name: "deep recursion in Function.prototype.toString",
    source:
      "function f() {} f.toString = function () { return Function.prototype.toString.call(this) + f; }; export default String(f);",
    expect: STACK,
  },
  {
    name: "deep recursion in the result's toJSON",
    source:
      "function deep() { return { toJSON: deep }; } export default deep();",
    expect: STACK,
  },
  {
    name: "a caught stack overflow that answers",
    source:
      "function f() { try { return f(); } catch { return 'bottom'; } } export default f();",
    expect: value("bottom"),
  },
  // Escapes.
  {
    name: "the Function constructor",
    source: "export default Function('return globalThis')();",
    expect: EVAL,
  },
  {
    name: "indirect eval",
    source: "export default (0, eval)('1 + 1');",
    expect: EVAL,
  },
  {
    name: "the Function constructor through an arrow's constructor chain",
    source: "export default (() => {}).constructor('return this')();",
    expect: EVAL,
  },
  {
    name: "the async and generator function constructors",
    source:
      "const kinds = [async () => {}, function* () {}, async function* () {}]; export default kinds.map((f) => { try { f.constructor('return 1'); return 'made'; } catch (e) { return e.name; } });",
    expect: value(["EvalError", "EvalError", "EvalError"]),
  },
  {
    name: "a computed dynamic import",
    source: "export default await import(['no', 'de:fs'].join(''));",
    expect: code("IMPORT_DYNAMIC"),
  },
  {
    name: "the host's working directory and Deno's own path are out of reach",
    source:
      "const read = (name) => { try { return String(globalThis.Deno?.[name]?.() ?? 'none'); } catch (e) { return e.name; } }; const inner = globalThis.Deno?.internal; export default [read('cwd'), read('execPath'), inner === undefined ? 'none' : typeof globalThis.Deno[inner]];",
    expect: value(["none", "none", "none"]),
    differs: {
      tiers: ["process"],
      expect: value(["NotCapable", "NotCapable", "undefined"]),
      why:
        "the process tier keeps Deno (docs/sandbox.md, The guest module); it answers cwd() and execPath() only where the guest may read that path, and holds none of Deno's internals",
    },
  },
  {
    name: "the host's environment is out of reach",
    source:
      "let seen = ''; try { seen = JSON.stringify(globalThis.Deno?.env?.toObject?.() ?? null); } catch { seen = 'denied'; } export default seen.includes('hostile-secret');",
    expect: value(false),
  },
  {
    name: "a stack trace taken inside the default function shows no host file",
    source: `export default async () => {
  await null;
  const stacks = [new Error("sync").stack, await Promise.reject(new Error("async")).catch((e) => e.stack)];
  return stacks.map((stack) => /file:|\\.ts:|ext:/.test(String(stack)) || String(stack).includes(${
      JSON.stringify(ROOT)
    }));
};`,
    expect: value([false, false]),
  },
  {
    name: "import.meta carries no host path",
    source: `export default JSON.stringify(import.meta ?? {}).includes(${
      JSON.stringify(ROOT)
    });`,
    expect: value(false),
  },
  {
    name: "a polluted Object.prototype.toJSON changes no result of the host",
    source:
      "try { Object.prototype.toJSON = () => 'forged'; } catch {} export default { a: 1 };",
    expect: value({ a: 1 }),
    differs: {
      tiers: V8,
      expect: value("forged"),
      why:
        "the worker and process tiers freeze no intrinsics (docs/sandbox.md, Globals): the guest changes its own result only",
    },
  },
  {
    name: "a polluted Object.prototype.then cannot forge or stall the answer",
    source:
      "try { Object.defineProperty(Object.prototype, 'then', { configurable: true, get() { delete Object.prototype.then; return (resolve) => resolve({ ok: false, code: 'PACK_FORBIDDEN', name: 'E', message: 'forged' }); } }); } catch {} export default 'real';",
    expect: value("real"),
  },
  {
    name:
      "replaced JSON, Promise, Array.prototype.push and Object.defineProperty",
    source: `const forge = () => { throw new Error("guest text"); };
for (const [target, key] of [[globalThis, "JSON"], [globalThis, "Promise"], [Array.prototype, "push"], [Object, "defineProperty"], [Object, "keys"], [String.prototype, "slice"], [Array, "isArray"]]) {
  try { target[key] = forge; } catch {}
}
console.log({ a: 1 }, [2]);
export default { a: [1, 2] };`,
    expect: value({ a: [1, 2] }),
  },
  {
    name:
      "setters on Array.prototype and Object.prototype indexes meet the marshaller's copy",
    source:
      "for (const proto of [Array.prototype, Object.prototype]) { try { Object.defineProperty(proto, '0', { configurable: true, set() { throw new Error('guest text'); } }); } catch {} } class Box { constructor() { this.list = [1, { a: 2 }]; } } export default new Box();",
    expect: value({ list: [1, { a: 2 }] }),
  },
  {
    name:
      "an own __proto__ key stays a key when the marshaller copies the result",
    source:
      'class Box { constructor() { this.inner = JSON.parse(\'{"__proto__": {"x": 1}}\'); } } export default new Box();',
    expect: value(JSON.parse('{"inner":{"__proto__":{"x":1}}}')),
  },
  {
    name: "a replaced array iterator meets the marshaller's copy",
    source:
      "try { Array.prototype[Symbol.iterator] = function* () { yield 'forged'; }; } catch {} try { Object.getPrototypeOf([][Symbol.iterator]()).next = () => ({ done: true }); } catch {} class Box { constructor() { this.a = 1; this.b = [2]; } } export default new Box();",
    expect: value({ a: 1, b: [2] }),
  },
  {
    name: "a forged answer written to the process's stdout",
    source:
      'globalThis.Deno?.stdout?.writeSync?.(new TextEncoder().encode(\'{"t":"result","outcome":{"ok":true,"value":"forged"}}\\n\')); export default \'real\';',
    expect: value("real"),
  },
  {
    name: "Deno.exit where there is a Deno",
    source: "globalThis.Deno?.exit?.(0); export default 'after';",
    expect: value("after"),
    differs: {
      tiers: ["process"],
      expect: code("SANDBOX_CRASHED"),
      why:
        "the process tier keeps Deno (docs/sandbox.md, The guest module); a guest that exits its process ends without an answer",
    },
  },
  {
    name: "Symbol.species on a result array",
    source:
      "const a = [1, 2]; a.constructor = { [Symbol.species]: function () { for (;;) {} } }; export default a;",
    expect: value([1, 2]),
  },
  {
    name: "a finalization callback that loops after the result",
    source:
      "new FinalizationRegistry(() => { for (;;) {} }).register({}, 1); let g = []; for (let i = 0; i < 1e4; i++) g.push({ i }); g = null; export default 1;",
    expect: value(1),
  },
  {
    name: "a WeakRef kept on the global",
    source: "globalThis.kept = new WeakRef({}); export default 1;",
    expect: value(1),
  },
  {
    name: "Atomics.wait on a SharedArrayBuffer",
    source:
      "export default typeof Atomics === 'undefined' ? 'none' : Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);",
    expect: value("none"),
    differs: {
      tiers: V8,
      expect: TIMEOUT,
      why:
        "QuickJS has no Atomics; V8 blocks in Atomics.wait until the run's deadline ends it",
    },
  },
  {
    name: "a frozen global object",
    source: "Object.freeze(globalThis); export default 1;",
    expect: value(1),
  },
  {
    name: "a global object without a prototype, made non-extensible",
    source:
      "try { Object.setPrototypeOf(globalThis, null); } catch {} Object.preventExtensions(globalThis); export default 2;",
    expect: value(2),
  },
  {
    name: "a thrown error with a cyclic cause",
    source: "const e = new Error('cause'); e.cause = e; throw e;",
    expect: code("GUEST_ERROR", "Error"),
  },
  // Odd results and throws.
  {
    name: "throw undefined",
    source: "throw undefined;",
    expect: code("GUEST_ERROR", "NonErrorThrown"),
  },
  {
    name: "throw null",
    source: "throw null;",
    expect: code("GUEST_ERROR", "NonErrorThrown"),
  },
  {
    name: "throw an object without a prototype",
    source: "throw Object.create(null);",
    expect: code("GUEST_ERROR", "NonErrorThrown"),
  },
  {
    name: "throw a symbol",
    source: "throw Symbol('s');",
    expect: code("GUEST_ERROR", "NonErrorThrown"),
  },
  {
    name: "throw a proxy whose traps throw",
    source:
      `throw new Proxy({}, { get() { throw new Error("guest text"); } });`,
    expect: code("GUEST_ERROR", "NonErrorThrown"),
  },
  {
    name: "throw a revoked proxy",
    source:
      "const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); throw proxy;",
    expect: code("GUEST_ERROR", "NonErrorThrown"),
  },
  {
    name: "a revoked proxy as the result",
    source:
      "const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); export default proxy;",
    expect: GUEST,
  },
  {
    name: "a revoked proxy inside the result",
    source:
      "const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); export default { a: [proxy] };",
    expect: GUEST,
  },
  {
    name: "a function returning a function",
    source: "export default () => () => 1;",
    expect: NOT_DATA,
  },
  {
    name: "a revoked proxy as a console argument",
    source:
      "const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); console.log(proxy); export default 1;",
    expect: code("GUEST_ERROR", "TypeError"),
  },
  {
    name: "a thenable whose then throws",
    source: "export default { then() { throw new TypeError('then'); } };",
    expect: code("GUEST_ERROR", "TypeError"),
  },
  {
    name: "a default export that is a getter's live binding",
    source:
      "let v = 1; export { v as default }; export const bump = { get x() { v = 2; return 0; } };",
    expect: value(1),
  },
  {
    name: "a result object with a throwing getter",
    source: `export default { get x() { throw new Error("guest text"); } };`,
    expect: code("GUEST_ERROR", "Error"),
  },
];

/** What runs after every case; it sees nothing of the case before it. */
const PROBE = `console.log("probe");
const marks = ["leak", "kept"].filter((k) => k in globalThis);
const polluted = "polluted" in {} || "polluted" in [] || "then" in {} || "toJSON" in {};
const list = []; list.push(3, 1, 2);
export default async (context) => ({
  marks, polluted, json: JSON.stringify({ a: [1] }), sorted: list.sort(),
  keys: Object.keys({ b: 1 }), awaited: await Promise.resolve(7), context,
  random: Math.random(),
});`;
const PROBE_CONTEXT = { n: 1 };
const PROBE_VALUE = {
  marks: [],
  polluted: false,
  json: '{"a":[1]}',
  sorted: [1, 2, 3],
  keys: ["b"],
  awaited: 7,
  context: PROBE_CONTEXT,
};

interface Runs extends AsyncDisposable {
  run(
    source: string,
    options: { context?: JsonValue; timeoutMs: number; maxLogBytes: number },
  ): Promise<SandboxResult>;
}

async function createTier(tier: Tier): Promise<Runs> {
  const quickjs = {
    catalog: EMPTY_CATALOG,
    memoryLimitBytes: QUICKJS_MEMORY_BYTES,
  };
  switch (tier) {
    case "loader": {
      const loader = await createQuickJSLoader(quickjs);
      return {
        run: (source, options) => loader.run(source, options),
        [Symbol.asyncDispose]: () => {
          loader[Symbol.dispose]();
          return Promise.resolve();
        },
      };
    }
    case "pool:process":
    case "pool:in-thread": {
      const isolation = tier.slice("pool:".length) as "process" | "in-thread";
      // Two runners: the probe after a killed run need not wait for its
      // replacement, which later cases meet in turn.
      return await createQuickJSPool({ ...quickjs, size: 2, isolation });
    }
    case "worker":
      return createWorkerSandbox({
        pool: 2,
        concurrency: 2,
        memoryLimitBytes: V8_MEMORY_BYTES,
      });
    case "process":
      return createProcessSandbox({
        concurrency: 1,
        memoryLimitBytes: V8_MEMORY_BYTES,
      });
  }
}

function expectationOf(
  hostile: HostileCase,
  tier: Tier,
): Expect | null {
  if (hostile.differs?.tiers.includes(tier)) return hostile.differs.expect;
  return hostile.expect;
}

function outcome(result: SandboxResult, expect: Expect): unknown {
  if (result.ok) return { ok: true, value: result.value };
  return {
    ok: false,
    code: result.error.code,
    ...(!expect.ok && expect.name !== undefined
      ? { name: result.error.name }
      : {}),
  };
}

/** Host paths, host stacks and the host's secret: no answer carries them. */
function assertNothingOfTheHost(result: SandboxResult, where: string): void {
  const texts = [
    ...(result.ok ? [] : [result.error.name, result.error.message]),
    ...result.logs.map((entry) => entry.message),
  ];
  for (const text of texts) {
    for (
      const needle of [ROOT, SECRET, "file://", "ext:", ".ts:", Deno.execPath()]
    ) {
      assert.ok(
        !text.includes(needle),
        `${where}: an answer carries ${JSON.stringify(needle)}: ${
          text.slice(0, 300)
        }`,
      );
    }
  }
}

/** Every probe's Math.random(), across tiers and runs. */
const randoms = new Set<unknown>();

/** Runs one case and the probe after it on one tier; returns what went wrong. */
async function runCase(
  runs: Runs,
  tier: Tier,
  hostile: HostileCase,
): Promise<string | null> {
  const expect = expectationOf(hostile, tier);
  if (expect === null) return null;
  const where = `${hostile.name} [${tier}]`;
  try {
    const { result, lagMs } = await withLag(() =>
      runs.run(MARK + hostile.source, {
        context: hostile.context,
        timeoutMs: !expect.ok && expect.code === "TIMEOUT"
          ? TIMEOUT_MS
          : CALM_TIMEOUT_MS,
        maxLogBytes: MAX_LOG_BYTES,
      })
    );
    const orElse = hostile.differs?.tiers.includes(tier)
      ? hostile.differs.orElse
      : undefined;
    const accepted = orElse === undefined ? [expect] : [expect, orElse];
    assert.ok(
      accepted.some((answer) =>
        isDeepStrictEqual(outcome(result, answer), answer)
      ),
      `${where}: expected ${
        accepted.map((answer) => JSON.stringify(answer)).join(" or ").slice(
          0,
          300,
        )
      }, got ${
        JSON.stringify(result.ok ? result.value : result.error).slice(0, 300)
      }`,
    );
    hostile.check?.(result);
    assertNothingOfTheHost(result, where);
    if (!IN_THREAD.includes(tier)) {
      assert.ok(
        lagMs < LAG_BOUND_MS,
        `${where}: the caller's event loop stalled for ${lagMs} ms`,
      );
    }
    const probe = await runs.run(PROBE, {
      context: PROBE_CONTEXT,
      timeoutMs: 5_000,
      maxLogBytes: MAX_LOG_BYTES,
    });
    const { random, ...seen } = (probe.ok ? probe.value : probe.error) as {
      random?: unknown;
    };
    assert.deepEqual(seen, PROBE_VALUE, `${where}: the next run`);
    // A console the case filled or stopped serves the next run afresh.
    assert.deepEqual(
      probe.logs,
      [{ level: "log", message: "probe" }],
      `${where}: the next run's console`,
    );
    // Math.random is seeded anew for every run, on every tier.
    assert.equal(typeof random, "number", `${where}: Math.random`);
    assert.ok(!randoms.has(random), `${where}: Math.random repeated`);
    randoms.add(random);
    return null;
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    return text.split("\n")[0]!;
  }
}

async function sweep(tiers: readonly Tier[]): Promise<void> {
  const all = await Promise.all(
    tiers.map(async (tier) => ({ tier, runs: await createTier(tier) })),
  );
  const failures: string[] = [];
  try {
    for (const hostile of CASES) {
      const results = await Promise.all(
        all.map(({ tier, runs }) => runCase(runs, tier, hostile)),
      );
      for (const failure of results) {
        if (failure !== null) failures.push(failure);
      }
    }
  } finally {
    await Promise.all(all.map(({ runs }) => runs[Symbol.asyncDispose]()));
  }
  assert.equal(failures.length, 0, failures.join("\n"));
}

Deno.env.set("CORDON_HOSTILE_SECRET", SECRET);

Deno.test("every hostile guest gets its one outcome on the in-thread QuickJS tiers, and the next run sees nothing of it", async () => {
  await sweep(IN_THREAD);
});

Deno.test("every hostile guest gets its one outcome off the caller's thread, without stalling it, and the next run sees nothing of it", async () => {
  await sweep(TIERS.filter((tier) => !IN_THREAD.includes(tier)));
  // Once every tier is disposed no guest goes on in the background. Linux's
  // /proc is where this is read; CI runs there.
  if (HAS_PROC) await assertNothingLeftRunning("the hostile guest table");
});
