// This module is browser compatible.

/**
 * The intrinsic properties ordinary code overrides by assignment, and the
 * messages a refused assignment carries: plain data, the one home of the
 * rule both lockdowns apply (the QuickJS loader and the vm tier). Each realm
 * receives it as JSON in its setup source; nothing here runs in a realm.
 *
 * Besides these keys, both lockdowns tame the `constructor` of every
 * intrinsic prototype they reach.
 *
 * @module
 */

/** Keys each error prototype has that code assigns on its own errors. */
const ERROR_KEYS: readonly string[] = [
  "constructor",
  "name",
  "message",
  "toString",
];

/**
 * The error constructors whose prototypes get {@linkcode ERROR_KEYS}. An
 * engine that lacks one (only QuickJS has `InternalError`; `SuppressedError`
 * is installed where the engine lacks it, see `es_builtins.ts`) skips it.
 */
const ERROR_CONSTRUCTORS: readonly string[] = [
  "Error",
  "EvalError",
  "RangeError",
  "ReferenceError",
  "SyntaxError",
  "TypeError",
  "URIError",
  "AggregateError",
  "SuppressedError",
  "InternalError",
];

/** The methods of `Date.prototype`, Annex B's included. */
const DATE_METHODS: readonly string[] = [
  "toString",
  "valueOf",
  "toJSON",
  "toISOString",
  "toDateString",
  "toTimeString",
  "toUTCString",
  "toGMTString",
  "toLocaleString",
  "toLocaleDateString",
  "toLocaleTimeString",
  "getTime",
  "getTimezoneOffset",
  "getYear",
  "getDay",
  "getUTCDay",
  "getFullYear",
  "getUTCFullYear",
  "getMonth",
  "getUTCMonth",
  "getDate",
  "getUTCDate",
  "getHours",
  "getUTCHours",
  "getMinutes",
  "getUTCMinutes",
  "getSeconds",
  "getUTCSeconds",
  "getMilliseconds",
  "getUTCMilliseconds",
  "setTime",
  "setYear",
  "setFullYear",
  "setUTCFullYear",
  "setMonth",
  "setUTCMonth",
  "setDate",
  "setUTCDate",
  "setHours",
  "setUTCHours",
  "setMinutes",
  "setUTCMinutes",
  "setSeconds",
  "setUTCSeconds",
  "setMilliseconds",
  "setUTCMilliseconds",
];

/**
 * The keys to tame, by intrinsic name: a global (`"Promise"`) or a global's
 * prototype (`"Array.prototype"`), resolved from the realm's `globalThis`;
 * a `[[Prototype]]` step takes the prototype of what the path reached so far,
 * and `%GeneratorPrototype%` and `%AsyncGeneratorPrototype%` name the
 * prototypes of generator objects, which no path from a global reaches. A
 * key `@@iterator` is the well-known symbol `Symbol.iterator`. A name the
 * realm's engine lacks is skipped. Taming follows this order.
 */
export const OVERRIDE_TARGETS: Readonly<Record<string, readonly string[]>> =
  freezeTable({
    "Object.prototype": [
      "toString",
      "toLocaleString",
      "valueOf",
      "hasOwnProperty",
      "isPrototypeOf",
      "propertyIsEnumerable",
    ],
    "Array.prototype": [
      "push",
      "pop",
      "shift",
      "unshift",
      "slice",
      "splice",
      "concat",
      "join",
      "map",
      "forEach",
      "filter",
      "reduce",
      "reduceRight",
      "some",
      "every",
      "find",
      "findIndex",
      "indexOf",
      "lastIndexOf",
      "includes",
      "sort",
      "reverse",
      "fill",
      "flat",
      "flatMap",
      "keys",
      "values",
      "entries",
      "toString",
      "toLocaleString",
    ],
    // %TypedArray%.prototype, which no global names: the Buffer polyfill
    // browser bundles carry (feross's `buffer`, inside @babel/standalone
    // and many more) sets its prototype to Uint8Array.prototype and
    // defines its own toString, slice, fill, indexOf and the like on it.
    "Uint8Array.[[Prototype]].prototype": [
      "toString",
      "toLocaleString",
      "slice",
      "subarray",
      "fill",
      "set",
      "indexOf",
      "lastIndexOf",
      "includes",
      "join",
      "reverse",
      "sort",
      "map",
      "forEach",
      "filter",
      "reduce",
      "some",
      "every",
      "find",
      "findIndex",
      "keys",
      "values",
      "entries",
    ],
    "Function.prototype": ["toString", "call", "apply", "bind", "name"],
    // Objects made from these prototypes (nunjucks' safe strings are
    // `Object.create(String.prototype)`) get their own conversions.
    "String.prototype": ["toString", "valueOf"],
    "Number.prototype": ["toString", "valueOf"],
    "Boolean.prototype": ["toString", "valueOf"],
    // Every method but the constructor (tamed with every prototype's):
    // a Date subclass that keeps a time zone (@date-fns/tz's TZDate)
    // assigns its own getters and setters, local and UTC, on its prototype.
    "Date.prototype": DATE_METHODS,
    // Not RegExp.prototype's exec, test or toString, though @ltd/j-toml
    // assigns them to its patterns: accessors there cost every pattern the
    // engines' fast paths (regular-expression work in a vm plugin took
    // 1.5 times as long; QuickJS ran out of memory in a large replace).
    "Promise.prototype": ["then", "catch", "finally"],
    // core-js 3 keeps its internal state in a WeakMap and guards it with
    // `store.get = store.get` (and has, set), in its global and pure
    // builds alike.
    "WeakMap.prototype": ["get", "has", "set"],
    // mutative freezes the Map or Set it hands back after assigning it
    // methods that throw (`map.set = map.clear = map.delete = fn`), as
    // immer did before version 10.
    "Map.prototype": ["set", "clear", "delete"],
    "Set.prototype": ["add", "clear", "delete"],
    "Promise": ["resolve", "reject", "all", "allSettled", "any", "race"],
    // TypeScript's `__generator` helper (tslib, and every package compiled
    // for ES5 or with `importHelpers`) makes its generator objects with
    // `Object.create(Iterator.prototype)` where `Iterator` exists and then
    // assigns their `next`, `throw`, `return` and `[Symbol.iterator]`.
    "Iterator.prototype": ["@@iterator"],
    // Code that wraps a generator object's methods (p-map's `pMapIterable`
    // assigns the `return` and `throw` of its async generator).
    "%GeneratorPrototype%": ["next", "return", "throw"],
    "%AsyncGeneratorPrototype%": ["next", "return", "throw"],
    ...Object.fromEntries(
      ERROR_CONSTRUCTORS.map((name) => [`${name}.prototype`, ERROR_KEYS]),
    ),
  });

/**
 * The messages of a refused assignment through a tamed property, each split
 * around the key: `parts[0] + key + parts[1]`.
 */
export const OVERRIDE_REFUSALS: {
  /** The object assigned to is an intrinsic. */
  readonly intrinsic: readonly [string, string];
  /** The value assigned to is a primitive. */
  readonly primitive: readonly [string, string];
} = Object.freeze({
  intrinsic: Object.freeze(
    [
      "Cannot assign to ",
      ": intrinsics are frozen in a sandbox; define it on your own object instead",
    ] as const,
  ),
  primitive: Object.freeze(
    [
      "Cannot assign to ",
      " on a primitive value: only objects have own properties",
    ] as const,
  ),
});

function freezeTable(
  table: Record<string, readonly string[]>,
): Readonly<Record<string, readonly string[]>> {
  for (const keys of Object.values(table)) Object.freeze(keys);
  return Object.freeze(table);
}
