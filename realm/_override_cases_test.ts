/**
 * The guest cases of the override mistake that both tiers run, with what
 * they must return: `loader/override_test.ts` runs them on the QuickJS
 * loader, `vm/override_test.ts` on `createVmSandbox()`. Each case is the
 * body of a guest function without parameters; each tier wraps it in the
 * export it calls.
 *
 * @module
 */

/** A guest function body and the value it returns. */
export interface OverrideCase<Expected = unknown> {
  /** The statements of a guest function without parameters. */
  readonly body: string;
  /** What the function returns. */
  readonly expected: Expected;
}

/** The message of an assignment to `key` on an intrinsic. */
export function refusal(key: string): string {
  return `Cannot assign to ${key}: intrinsics are frozen in a sandbox; define it on your own object instead`;
}

/** Assignments ordinary programs make to their own objects. */
export const OVERRIDES: OverrideCase = {
  body: `  function Stack() {}
  Stack.prototype = Object.create(Array.prototype);
  Stack.prototype.constructor = Stack;
  Stack.prototype.push = function (item) { this.items = [...(this.items ?? []), item]; return this.items.length; };
  Stack.prototype.toString = function () { return "stack of " + this.items.length; };
  const stack = new Stack();
  stack.push(1);
  stack.push(2);

  class P extends Promise {}
  P.resolve = (value) => "custom " + value;
  P.all = () => "all mine";

  const arr = [1];
  arr.push = function (item) { return "pushed " + item; };
  arr.join = () => "joined";
  arr.map = () => "mapped";

  const promise = Promise.resolve(1);
  let seen = null;
  promise.then = (onFulfilled) => onFulfilled("replaced then");
  promise.then((got) => { seen = got; });

  const plain = {};
  plain.toString = () => "plain";
  plain.valueOf = () => 41;
  plain.hasOwnProperty = () => "own hasOwnProperty";
  plain.constructor = "not a function";
  const assigned = Object.assign({}, { toString() { return "assigned"; } });

  const err = new Error();
  err.message = "changed message";
  err.name = "Custom";
  const typeError = new TypeError("t");
  typeError.name = "MyTypeError";
  class AppError extends Error {
    constructor(message) { super(message); this.name = "AppError"; }
  }
  AppError.prototype.toString = function () { return "app: " + this.message; };

  const fn = function () { return "plain call"; };
  fn.call = () => "own call";
  fn.bind = () => "own bind";
  fn.toString = () => "own source";
  const named = Object.create(Function.prototype);
  named.name = "named";
  function renamed() {}
  delete renamed.name;
  renamed.name = "renamed";

  // The Buffer polyfill of browser bundles (feross's buffer).
  function Buffer() {}
  Object.setPrototypeOf(Buffer.prototype, Uint8Array.prototype);
  Buffer.prototype.toString = function () { return "buffer of " + this.length; };
  Buffer.prototype.slice = function () { return "own slice"; };
  Buffer.prototype.includes = function () { return "own includes"; };
  const bytes = Object.setPrototypeOf(new Uint8Array([1, 2]), Buffer.prototype);

  // A Date subclass that keeps its own zone (@date-fns/tz's TZDate)
  // assigns every getter and setter, local and UTC, on its prototype.
  class ZonedDate extends Date {}
  for (const method of Object.getOwnPropertyNames(Date.prototype)) {
    if (!/^[gs]et/.test(method)) continue;
    ZonedDate.prototype[method] = function () { return method + " of zone"; };
  }
  ZonedDate.prototype.toLocaleString = function () { return "zoned"; };
  const zoned = new ZonedDate(0);

  const map = Object.create(Map.prototype);
  map.constructor = "map constructor";

  // mutative freezes the Map and Set it hands back after assigning them
  // methods that throw, as immer did before version 10.
  const refuse = () => "frozen";
  const frozenMap = new Map([["k", 1]]);
  frozenMap.set = frozenMap.clear = frozenMap.delete = refuse;
  Object.freeze(frozenMap);
  const frozenSet = new Set([1]);
  frozenSet.add = frozenSet.clear = frozenSet.delete = refuse;
  Object.freeze(frozenSet);

  // core-js 3's internal state.
  const store = new WeakMap();
  store.get = store.get;
  store.has = store.has;
  store.set = store.set;
  const key = {};
  store.set(key, "state");

  // get-intrinsic (behind qs's side-channel) reads a method by descriptor,
  // taking an accessor's getter unless it names an originalValue.
  const intrinsic = (object, name) => {
    const d = Object.getOwnPropertyDescriptor(object, name);
    return d && "get" in d && !("originalValue" in d.get) ? d.get : object[name];
  };
  const callWeakMapGet = Function.prototype.call.bind(intrinsic(WeakMap.prototype, "get"));
  const callToString = Function.prototype.call.bind(intrinsic(Object.prototype, "toString"));

  // TypeScript's __generator helper (tslib 2.7 and later, and code compiled
  // for ES5) makes an Iterator.prototype object and assigns the protocol.
  const made = Object.create((typeof Iterator === "function" ? Iterator : Object).prototype);
  let step = 0;
  made.next = () => (step < 2 ? { value: ++step, done: false } : { value: undefined, done: true });
  made.throw = () => "own throw";
  made.return = () => ({ value: "own return", done: true });
  made[Symbol.iterator] = function () { return this; };

  // p-map's pMapIterable wraps its async generator's return and throw.
  const gen = (function* () { yield 1; yield 2; })();
  const plainReturn = gen.return;
  gen.return = (value) => plainReturn.call(gen, "wrapped " + value);
  const agen = (async function* () { yield 1; })();
  agen.return = () => "own async return";
  agen.throw = () => "own async throw";

  return {
    stack: [String(stack), stack.constructor === Stack, stack instanceof Array, Array.isArray(stack)],
    promiseSubclass: [P.resolve(1), P.all(), Promise.resolve === P.resolve, typeof Promise.all],
    arr: [arr.push(2), arr.join(), arr.map(), arr.length, [].push(9), [1, 2].join("-")],
    promiseThen: [seen, typeof Promise.prototype.then, Object.keys(promise)],
    plain: [String(plain), plain + 1, plain.hasOwnProperty(), plain.constructor, Object.keys(plain)],
    assigned: String(assigned),
    errors: [String(err), String(typeError), new AppError("m").name, String(new AppError("m")), String(new Error("e"))],
    functions: [fn.call(), fn.bind(), fn.toString(), fn(), named.name, renamed.name],
    buffer: [String(bytes), bytes.slice(), bytes.includes(1), new Uint8Array([3, 4]).slice(1)[0], String(new Uint8Array([5, 6]))],
    date: [zoned.getFullYear(), zoned.setUTCHours(1), zoned.getTime(), zoned.toISOString(), zoned.toLocaleString(), new Date(0).getTime()],
    map: [map.constructor, new Map().constructor === Map],
    frozenCollections: [frozenMap.set("k", 2), frozenMap.delete("k"), frozenMap.get("k"), Object.keys(frozenMap), frozenSet.add(2), frozenSet.has(1), frozenSet.size, new Map().set(1, 2).size, new Set().add(1).has(1)],
    weakMap: [store.get(key), store.has(key), Object.keys(store), store.get === WeakMap.prototype.get],
    getIntrinsic: [callWeakMapGet(store, key), callToString([])],
    iteratorProtocol: [[...made], made.throw(), made.return().value, Object.keys(made)],
    generators: [gen.return("x").value, gen.next().done, agen.return(), agen.throw(), Object.keys(agen), [...(function* () { yield 3; })()]],
  };`,
  expected: {
    stack: ["stack of 2", true, true, false],
    promiseSubclass: ["custom 1", "all mine", false, "function"],
    arr: ["pushed 2", "joined", "mapped", 1, 1, "1-2"],
    promiseThen: ["replaced then", "function", ["then"]],
    plain: ["plain", 42, "own hasOwnProperty", "not a function", [
      "toString",
      "valueOf",
      "hasOwnProperty",
      "constructor",
    ]],
    assigned: "assigned",
    errors: [
      "Custom: changed message",
      "MyTypeError: t",
      "AppError",
      "app: m",
      "Error: e",
    ],
    functions: [
      "own call",
      "own bind",
      "own source",
      "plain call",
      "named",
      "renamed",
    ],
    buffer: ["buffer of 2", "own slice", "own includes", 4, "5,6"],
    date: [
      "getFullYear of zone",
      "setUTCHours of zone",
      "getTime of zone",
      "1970-01-01T00:00:00.000Z",
      "zoned",
      0,
    ],
    map: ["map constructor", true],
    frozenCollections: [
      "frozen",
      "frozen",
      1,
      ["delete", "clear", "set"],
      "frozen",
      true,
      1,
      1,
      true,
    ],
    weakMap: ["state", true, ["get", "has", "set"], true],
    getIntrinsic: ["state", "[object Array]"],
    iteratorProtocol: [[1, 2], "own throw", "own return", [
      "next",
      "throw",
      "return",
    ]],
    generators: ["wrapped x", true, "own async return", "own async throw", [
      "return",
      "throw",
    ], [3]],
  },
};

/**
 * Every tamed property of the intrinsics is an accessor that defines an own
 * property on a derived object, and its getter's `originalValue` is the
 * value; the function returns what is wrong.
 */
export const TAMED_ACCESSORS: OverrideCase = {
  body: `const tamed = [
  [Object.prototype, ["constructor", "toString", "toLocaleString", "valueOf", "hasOwnProperty", "isPrototypeOf", "propertyIsEnumerable"]],
  [Array.prototype, ["push", "pop", "shift", "unshift", "slice", "splice", "concat", "join", "map", "forEach", "filter", "reduce", "indexOf", "includes", "sort", "reverse", "toString", "constructor"]],
  [Function.prototype, ["constructor", "toString", "call", "apply", "bind", "name"]],
  [String.prototype, ["toString", "valueOf"]],
  [Number.prototype, ["toString", "valueOf"]],
  [Boolean.prototype, ["toString", "valueOf"]],
  [Date.prototype, Object.getOwnPropertyNames(Date.prototype).filter((key) => key !== "toTemporalInstant")],
  [Promise.prototype, ["constructor", "then", "catch", "finally"]],
  [Promise, ["resolve", "reject", "all", "race"]],
  [WeakMap.prototype, ["get", "has", "set"]],
  [Map.prototype, ["set", "clear", "delete"]],
  [Set.prototype, ["add", "clear", "delete"]],
  [Object.getPrototypeOf(Uint8Array.prototype), ["toString", "toLocaleString", "slice", "subarray", "fill", "set", "indexOf", "lastIndexOf", "includes", "join", "reverse", "sort", "map", "forEach", "filter", "reduce", "some", "every", "find", "findIndex", "keys", "values", "entries", "constructor"]],
  ...[Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError, AggregateError, SuppressedError]
    .map((E) => [E.prototype, ["constructor", "name", "message"]]),
  [Error.prototype, ["toString"]],
  ...[Map, Set, WeakMap, RegExp, Date, String, Number, Boolean, Symbol, ArrayBuffer, Uint8Array, DataView]
    .map((C) => [C.prototype, ["constructor"]]),
  [Object.getPrototypeOf(function* () {}), ["constructor"]],
  [Object.getPrototypeOf(async function () {}), ["constructor"]],
  // Node 20's V8 has no Iterator global.
  ...(typeof Iterator === "function" ? [[Iterator.prototype, [Symbol.iterator]]] : []),
  [Object.getPrototypeOf(function* () {}).prototype, ["next", "return", "throw"]],
  [Object.getPrototypeOf(async function* () {}).prototype, ["next", "return", "throw"]],
];
const wrong = [];
for (const [object, keys] of tamed) {
  for (const key of keys) {
    const label = (object.constructor?.name ?? "?") + "." + String(key);
    const descriptor = Object.getOwnPropertyDescriptor(object, key);
    if (typeof descriptor?.set !== "function") { wrong.push(label + " has no setter"); continue; }
    const original = object[key];
    // get-intrinsic reads a tamed property's value from its getter's originalValue.
    if (descriptor.get.originalValue !== original) wrong.push(label + " getter has no originalValue");
    const derived = Object.create(object);
    derived[key] = "mine";
    const own = Object.getOwnPropertyDescriptor(derived, key);
    if (own?.value !== "mine" || !own.writable || !own.enumerable || !own.configurable) wrong.push(label + " not own");
    try { object[key] = "hijacked"; wrong.push(label + " was assigned"); } catch {}
    if (object[key] !== original) wrong.push(label + " changed");
  }
}
return wrong;`,
  expected: [],
};

/**
 * Writes to the intrinsics themselves, and what the intrinsics hold after.
 * The expected value takes the engine's message for a redefinition of a
 * non-configurable property.
 */
export const INTRINSIC_WRITES: OverrideCase<
  (redefinition: string) => unknown
> = {
  body: `  const push = Array.prototype.push;
  const toString = Object.prototype.toString;
  const then = Promise.prototype.then;
  const attempts = {};
  const attempt = (label, write) => {
    try {
      write();
      attempts[label] = "allowed";
    } catch (error) {
      attempts[label] = error.name + ": " + error.message;
    }
  };
  attempt("Array.prototype.push", () => { Array.prototype.push = 1; });
  attempt("Object.prototype.toString", () => { Object.prototype.toString = () => "hijacked"; });
  attempt("Promise.prototype.then", () => { Promise.prototype.then = () => 1; });
  attempt("Promise.resolve", () => { Promise.resolve = () => 1; });
  attempt("Error.prototype.message", () => { Error.prototype.message = "hijacked"; });
  attempt("TypeError.prototype.name", () => { TypeError.prototype.name = "hijacked"; });
  attempt("Function.prototype.call", () => { Function.prototype.call = () => 1; });
  attempt("Map.prototype.constructor", () => { Map.prototype.constructor = null; });
  attempt("Math.toString", () => { Math.toString = () => "hijacked"; });
  attempt("Reflect.set", () => { Reflect.set(Array.prototype, "push", 1); });
  attempt("defineProperty", () => {
    Object.defineProperty(Array.prototype, "push", { value: 1 });
  });
  const descriptor = Object.getOwnPropertyDescriptor(Array.prototype, "push");
  return {
    attempts,
    unchanged: [
      Array.prototype.push === push,
      Object.prototype.toString === toString,
      Promise.prototype.then === then,
      [].push(1, 2),
      String({}),
      Error.prototype.message,
      TypeError.prototype.name,
      Map.prototype.constructor === Map,
      Object.prototype.toString.call(Math),
    ],
    frozen: [
      Object.isFrozen(Array.prototype),
      Object.isFrozen(descriptor.get),
      Object.isFrozen(descriptor.set),
      Object.isFrozen(descriptor.get()),
      Object.isFrozen(Object.getOwnPropertyDescriptor(Object.prototype, "constructor").get()),
    ],
  };`,
  expected: (redefinition) => ({
    attempts: {
      "Array.prototype.push": `TypeError: ${refusal("push")}`,
      "Object.prototype.toString": `TypeError: ${refusal("toString")}`,
      "Promise.prototype.then": `TypeError: ${refusal("then")}`,
      "Promise.resolve": `TypeError: ${refusal("resolve")}`,
      "Error.prototype.message": `TypeError: ${refusal("message")}`,
      "TypeError.prototype.name": `TypeError: ${refusal("name")}`,
      "Function.prototype.call": `TypeError: ${refusal("call")}`,
      "Map.prototype.constructor": `TypeError: ${refusal("constructor")}`,
      "Math.toString": `TypeError: ${refusal("toString")}`,
      "Reflect.set": `TypeError: ${refusal("push")}`,
      // A redefinition bypasses the setter: the engine refuses it.
      "defineProperty": `TypeError: ${redefinition}`,
    },
    unchanged: [
      true,
      true,
      true,
      2,
      "[object Object]",
      "",
      "TypeError",
      true,
      "[object Math]",
    ],
    frozen: [true, true, true, true, true],
  }),
};

/** An uncaught write to a tamed intrinsic: the call fails with this error. */
export const UNCAUGHT_WRITE: OverrideCase<{ name: string; message: string }> = {
  body: `  Array.prototype.push = function () { return "hijacked"; };`,
  expected: { name: "TypeError", message: refusal("push") },
};

/** What the intrinsics hold in a call after the writes. */
export const AFTER_WRITES: OverrideCase = {
  body:
    `  return [[].push(7), typeof Array.prototype.push, String({}), Object.hasOwn(Array.prototype, "evil")];`,
  expected: [1, "function", "[object Object]", false],
};

/**
 * Library code finds the global object as `self`, `global` or `globalThis`
 * without the Function constructor.
 */
export const GLOBAL_NAMES: OverrideCase = {
  body: `  // The detection of lodash and underscore.
  const freeGlobal = typeof global == "object" && global && global.Object === Object && global;
  const freeSelf = typeof self == "object" && self && self.Object === Object && self;
  const root = freeGlobal || freeSelf || Function("return this")();
  return [root === globalThis, self === globalThis, global === globalThis, typeof window, Object.keys(globalThis).includes("self")];`,
  expected: [true, true, true, "undefined", false],
};
