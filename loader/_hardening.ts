// This module is browser compatible.

/**
 * The code the loader evaluates in every fresh QuickJS context before any
 * pack or guest module: it installs the shared marshalling and the console,
 * makes code generation from strings unusable, removes timers and freezes
 * every reachable intrinsic. It returns the run and describe functions the
 * host calls; neither is reachable from guest code.
 *
 * @module
 */

import { createMarshallers } from "../protocol/mod.ts";

/** The steps of hardening, in the order they run in every context. */
export const HARDENING_STEPS: readonly string[] = Object.freeze([
  "capture the intrinsics cordon's own in-context code uses",
  "install the shared marshalling (createMarshallers)",
  "install console (log, info, warn, error, debug), captured by the host",
  "make eval and the Function, AsyncFunction, GeneratorFunction and AsyncGeneratorFunction constructors throw",
  "remove timers (setTimeout, setInterval, setImmediate and their clear functions)",
  "turn the intrinsic properties ordinary code overrides by assignment into accessors",
  "freeze every intrinsic reachable from globalThis, then globalThis itself",
]);

/**
 * The source text of the setup function. Called in a fresh context as
 * `setup(hostLog, plan)`:
 *
 * - with `plan === null` it hardens everything but the freeze and returns
 *   the roots of the intrinsics, for {@linkcode DISCOVER_SOURCE};
 * - with a plan (the decoded array) it hardens fully and returns
 *   `{ run, describe }`.
 *
 * A freeze plan is a flat array of `[parent, kind, key]` steps that reach
 * every reachable object from the roots (`globalThis` at index 0, then the
 * intrinsics only code reaches, such as the iterator prototypes): kind 0 is a data
 * property, 1 a getter, 2 a setter, 3 the prototype; a symbol key is the
 * index of a well-known symbol in `Object.getOwnPropertyNames(Symbol)`
 * order. Discovering it once per
 * loader and replaying it per run is much cheaper than walking every
 * property descriptor in each context.
 */
export const SETUP_SOURCE: string = `(function (hostLog, plan) {
  "use strict";
  const G = globalThis;
  const {
    freeze, getPrototypeOf, setPrototypeOf, getOwnPropertyDescriptor,
    defineProperty, getOwnPropertyNames,
  } = Object;
  const parseJson = JSON.parse;
  const stringifyJson = JSON.stringify;
  const EvalErrorCtor = EvalError;
  const TypeErrorCtor = TypeError;
  const SymbolCtor = Symbol;
  const toText = String;

  const marshal = (${createMarshallers.toString()})();

  const consoleObject = {};
  for (const level of marshal.levels) {
    const method = {
      [level](...args) {
        hostLog(level, marshal.formatLogArgs(args));
      },
    }[level];
    defineProperty(consoleObject, level, {
      value: method, writable: true, enumerable: true, configurable: true,
    });
  }
  defineProperty(G, "console", {
    value: consoleObject, writable: true, enumerable: false, configurable: true,
  });

  function refusal(what, remedy) {
    return new EvalErrorCtor(
      "Cannot use " + what +
        " in a sandbox: code generation from strings is denied; " + remedy,
    );
  }
  const tamedEval = {
    eval(code) {
      throw refusal("eval", "write the code directly");
    },
  }.eval;
  defineProperty(G, "eval", {
    value: tamedEval, writable: true, enumerable: false, configurable: true,
  });
  function tameConstructor(prototype, name) {
    const original = prototype.constructor;
    const tamed = function () {
      throw refusal("the " + name + " constructor", "write the function directly");
    };
    defineProperty(tamed, "name", { value: name });
    defineProperty(tamed, "prototype", {
      value: prototype, writable: false, enumerable: false, configurable: false,
    });
    setPrototypeOf(tamed, getPrototypeOf(original));
    defineProperty(prototype, "constructor", {
      value: tamed, writable: false, enumerable: false, configurable: true,
    });
    return tamed;
  }
  const FunctionPrototype = getPrototypeOf(function () {});
  defineProperty(G, "Function", {
    value: tameConstructor(FunctionPrototype, "Function"),
    writable: true, enumerable: false, configurable: true,
  });
  tameConstructor(getPrototypeOf(async function () {}), "AsyncFunction");
  tameConstructor(getPrototypeOf(function* () {}), "GeneratorFunction");
  tameConstructor(getPrototypeOf(async function* () {}), "AsyncGeneratorFunction");

  for (const name of [
    "setTimeout", "setInterval", "setImmediate",
    "clearTimeout", "clearInterval", "clearImmediate",
  ]) {
    delete G[name];
  }

  const overridden = [];
  function tameOverride(object, key) {
    const descriptor = getOwnPropertyDescriptor(object, key);
    if (descriptor === undefined || !("value" in descriptor)) return;
    const value = descriptor.value;
    overridden.push(value);
    // Accessors from an object literal: they have no prototype to freeze.
    const accessors = getOwnPropertyDescriptor({
      get [key]() {
        return value;
      },
      set [key](next) {
        if (this === object) {
          throw new TypeErrorCtor(
            "Cannot assign to " + toText(key) +
              " of a frozen intrinsic: intrinsics are frozen in a sandbox; define the property on your own object",
          );
        }
        defineProperty(this, key, {
          value: next, writable: true, enumerable: true, configurable: true,
        });
      },
    }, key);
    defineProperty(object, key, {
      get: accessors.get,
      set: accessors.set,
      enumerable: descriptor.enumerable,
      configurable: descriptor.configurable,
    });
  }
  const overrides = [
    [G.Object.prototype, [
      "constructor", "toString", "toLocaleString", "valueOf",
      "hasOwnProperty", "isPrototypeOf", "propertyIsEnumerable",
    ]],
    [FunctionPrototype, ["toString"]],
    [G.Array.prototype, ["toString"]],
  ];
  for (const ErrorType of [
    G.Error, G.EvalError, G.RangeError, G.ReferenceError, G.SyntaxError,
    G.TypeError, G.URIError, G.AggregateError, G.InternalError,
  ]) {
    if (typeof ErrorType === "function") {
      overrides.push([ErrorType.prototype, ["constructor", "name", "message", "toString"]]);
    }
  }
  for (const [object, keys] of overrides) {
    for (const key of keys) tameOverride(object, key);
  }

  const symbols = [];
  for (const name of getOwnPropertyNames(SymbolCtor)) {
    if (typeof SymbolCtor[name] === "symbol") symbols.push(SymbolCtor[name]);
  }

  // Intrinsics no property path from globalThis reaches: only code does.
  const roots = [G];
  for (const reach of [
    () => getPrototypeOf(function* () {}),
    () => getPrototypeOf(async function () {}),
    () => getPrototypeOf(async function* () {}),
    () => getPrototypeOf([][SymbolCtor.iterator]()),
    () => getPrototypeOf(new G.Map()[SymbolCtor.iterator]()),
    () => getPrototypeOf(new G.Set()[SymbolCtor.iterator]()),
    () => getPrototypeOf(""[SymbolCtor.iterator]()),
    () => getPrototypeOf(/a/[SymbolCtor.matchAll]("")),
    () => getPrototypeOf(G.Iterator.from({ next() { return { done: true }; } })),
    () => getPrototypeOf([].values().map((item) => item)),
  ]) {
    let found = null;
    try {
      found = reach();
    } catch {
      // This engine lacks the feature: nothing to freeze.
    }
    roots.push(
      (typeof found === "object" && found !== null) || typeof found === "function"
        ? found
        : G,
    );
  }

  if (plan === null) return roots;

  const objects = roots.slice();
  let count = objects.length;
  for (let i = 0; i < plan.length; i += 3) {
    const parent = objects[plan[i]];
    const kind = plan[i + 1];
    let key = plan[i + 2];
    if (typeof key === "number") key = symbols[key];
    objects[count++] = kind === 0
      ? parent[key]
      : kind === 3
      ? getPrototypeOf(parent)
      : kind === 1
      ? getOwnPropertyDescriptor(parent, key).get
      : getOwnPropertyDescriptor(parent, key).set;
  }
  for (let i = overridden.length - 1; i >= 0; i--) freeze(overridden[i]);
  for (let i = objects.length - 1; i >= 0; i--) freeze(objects[i]);

  async function run(namespace, contextJson) {
    let value;
    try {
      value = namespace.default;
      if (typeof value === "function") {
        value = await value(
          contextJson === undefined ? undefined : parseJson(contextJson),
        );
      } else {
        value = await value;
      }
    } catch (thrown) {
      return stringifyJson({ ok: false, error: marshal.describeThrown(thrown) });
    }
    try {
      return stringifyJson({ ok: true, value: marshal.toWireValue(value) });
    } catch (thrown) {
      const error = marshal.describeThrown(thrown);
      if (
        typeof thrown === "object" && thrown !== null &&
        thrown.code === "RESULT_NOT_SERIALIZABLE"
      ) {
        error.code = "RESULT_NOT_SERIALIZABLE";
      }
      return stringifyJson({ ok: false, error });
    }
  }
  function ownText(object, key) {
    const descriptor = getOwnPropertyDescriptor(object, key);
    return descriptor !== undefined && typeof descriptor.value === "string"
      ? descriptor.value
      : null;
  }
  function describe(thrown) {
    const detail = marshal.describeThrown(thrown);
    if (typeof thrown === "object" && thrown !== null) {
      // Own data properties only: reading them runs no guest code.
      detail.stack = ownText(thrown, "stack");
      detail.fileName = ownText(thrown, "fileName");
    }
    return stringifyJson(detail);
  }
  return freeze({ run, describe });
})`;

/**
 * The source text of the discovery function, evaluated once per loader in
 * a context `setup(hostLog, null)` prepared: `discover(roots)` walks every
 * property descriptor and prototype from the roots and returns the freeze
 * plan as JSON text. It throws if an intrinsic has a symbol key that is not
 * a well-known symbol, since a plan could not name it.
 */
export const DISCOVER_SOURCE: string = `(function (roots) {
  "use strict";
  const { getPrototypeOf, getOwnPropertyDescriptor, getOwnPropertyNames } = Object;
  const ownKeys = Reflect.ownKeys;
  const wellKnown = new Map();
  for (const name of getOwnPropertyNames(Symbol)) {
    if (typeof Symbol[name] === "symbol") wellKnown.set(Symbol[name], wellKnown.size);
  }
  const index = new Map();
  const reached = [];
  for (let i = 0; i < roots.length; i++) {
    if (!index.has(roots[i])) index.set(roots[i], i);
    reached.push(roots[i]);
  }
  const steps = [];
  const add = (child, parent, kind, key) => {
    if (!((typeof child === "object" && child !== null) || typeof child === "function")) return;
    if (index.has(child)) return;
    index.set(child, reached.length);
    reached.push(child);
    steps.push(index.get(parent), kind, key);
  };
  for (let i = 0; i < reached.length; i++) {
    const object = reached[i];
    add(getPrototypeOf(object), object, 3, "");
    for (const own of ownKeys(object)) {
      let key = own;
      if (typeof own === "symbol") {
        key = wellKnown.get(own);
        if (key === undefined) throw new TypeError("An intrinsic has a symbol key that is not well known");
      }
      const descriptor = getOwnPropertyDescriptor(object, own);
      if ("value" in descriptor) {
        add(descriptor.value, object, 0, key);
      } else {
        add(descriptor.get, object, 1, key);
        add(descriptor.set, object, 2, key);
      }
    }
  }
  return JSON.stringify(steps);
})`;
