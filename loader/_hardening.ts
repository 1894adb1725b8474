// This module is browser compatible.

/**
 * The code the loader evaluates once per WebAssembly module, in the QuickJS
 * context every run then starts from: it installs the shared marshalling and
 * the console, makes code generation from strings unusable, removes timers,
 * gives `Math.random` a state the host reseeds per run, and freezes every
 * reachable intrinsic. It returns the run, describe and reseed functions the
 * host calls; none is reachable from guest code.
 *
 * @module
 */

import { createMarshallers } from "../protocol/mod.ts";
import {
  OVERRIDE_REFUSALS,
  OVERRIDE_TARGETS,
} from "../realm/override_targets.ts";

/** The steps of hardening, in the order they run in every context. */
export const HARDENING_STEPS: readonly string[] = Object.freeze([
  "capture the intrinsics cordon's own in-context code uses",
  "install the shared marshalling (createMarshallers)",
  "install console (log, info, warn, error, debug), captured by the host",
  "make eval and the Function, AsyncFunction, GeneratorFunction and AsyncGeneratorFunction constructors throw",
  "remove timers (setTimeout, setInterval, setImmediate and their clear functions)",
  "replace Math.random by a generator whose state the host reseeds before every run",
  "alias globalThis as self and global, so libraries find the global object without the Function constructor",
  "turn the intrinsic properties ordinary code overrides by assignment (and every intrinsic prototype's constructor) into accessors that define the property on the object assigned to",
  "freeze every intrinsic reachable from globalThis, then globalThis itself",
]);

/**
 * The source text of the setup function, called as `setup(hostLog)` in a
 * fresh context. It hardens the context in the order of
 * {@linkcode HARDENING_STEPS} and returns `{ run, describe, reseed }`.
 *
 * The freeze walks every object reachable from the roots (`globalThis`,
 * then the intrinsics only code reaches, such as the iterator prototypes)
 * through prototypes, data properties and accessors. It runs once per
 * WebAssembly module: every run starts from a copy of the hardened memory.
 */
export const SETUP_SOURCE: string = `(function (hostLog) {
  "use strict";
  const G = globalThis;
  const {
    freeze, getPrototypeOf, setPrototypeOf, getOwnPropertyDescriptor,
    defineProperty,
  } = Object;
  const ownKeys = Reflect.ownKeys;
  const imul = Math.imul;
  const parseJson = JSON.parse;
  const stringifyJson = JSON.stringify;
  const EvalErrorCtor = EvalError;
  const TypeErrorCtor = TypeError;
  const SymbolCtor = Symbol;
  const toText = String;
  const overrideTargets = ${JSON.stringify(Object.entries(OVERRIDE_TARGETS))};
  const refusals = ${JSON.stringify(OVERRIDE_REFUSALS)};

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

  // xoshiro128**. Every run starts from the same memory, so QuickJS's own
  // generator would repeat one sequence; the host reseeds this one per run.
  let s0 = 1, s1 = 0, s2 = 0, s3 = 0;
  const rotl = (x, k) => (x << k) | (x >>> (32 - k));
  const next = () => {
    const result = imul(rotl(imul(s1, 5), 7), 9) >>> 0;
    const t = s1 << 9;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = rotl(s3, 11);
    return result;
  };
  const random = {
    random() {
      return ((next() >>> 5) * 67108864 + (next() >>> 6)) / 9007199254740992;
    },
  }.random;
  defineProperty(G.Math, "random", {
    value: random, writable: true, enumerable: false, configurable: true,
  });
  function reseed(a, b, c, d) {
    s0 = a | 0;
    s1 = b | 0;
    s2 = c | 0;
    s3 = d | 0;
    if ((s0 | s1 | s2 | s3) === 0) s0 = 1;
  }

  // Libraries look for the global object under these names before they
  // fall back to Function("return this")(), which is denied here.
  for (const name of ["self", "global"]) {
    if (!(name in G)) {
      defineProperty(G, name, {
        value: G, writable: true, enumerable: false, configurable: true,
      });
    }
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

  const reached = new G.Set(roots);
  const reach = (value) => {
    if ((typeof value === "object" && value !== null) || typeof value === "function") {
      reached.add(value);
    }
  };
  // A Set iterates what is added during the iteration: a breadth-first
  // walk. Walking again after more roots were added only adds their part.
  function walk() {
    for (const object of reached) {
      reach(getPrototypeOf(object));
      for (const key of ownKeys(object)) {
        const descriptor = getOwnPropertyDescriptor(object, key);
        if ("value" in descriptor) {
          reach(descriptor.value);
        } else {
          reach(descriptor.get);
          reach(descriptor.set);
        }
      }
    }
  }
  walk();

  // The override mistake: assigning a property on one's own object fails
  // when a frozen prototype has it. These properties become accessors whose
  // setter defines an own property on the object assigned to, and refuses
  // with a clear message when that object is an intrinsic.
  function tameOverride(object, key) {
    const descriptor = getOwnPropertyDescriptor(object, key);
    if (descriptor === undefined || !("value" in descriptor)) return;
    const value = descriptor.value;
    // The original is reachable only through the getter from now on.
    reach(value);
    // Accessors from an object literal: they have no prototype to freeze.
    const accessors = getOwnPropertyDescriptor({
      get [key]() {
        return value;
      },
      set [key](next) {
        if (this === object || reached.has(this)) {
          throw new TypeErrorCtor(
            refusals.intrinsic[0] + toText(key) + refusals.intrinsic[1],
          );
        }
        if ((typeof this !== "object" && typeof this !== "function") || this === null) {
          throw new TypeErrorCtor(
            refusals.primitive[0] + toText(key) + refusals.primitive[1],
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
  // The keys by intrinsic name (realm/override_targets.ts); a name this
  // engine lacks is skipped.
  for (const [name, keys] of overrideTargets) {
    let object = G;
    for (const step of name.split(".")) {
      object = (typeof object === "object" && object !== null) ||
          typeof object === "function"
        ? object[step]
        : undefined;
    }
    if ((typeof object !== "object" || object === null) && typeof object !== "function") {
      continue;
    }
    for (const key of keys) tameOverride(object, key);
  }
  // Every intrinsic prototype's constructor (the intrinsics are exactly
  // what the walk reached: no guest object exists yet).
  for (const object of [...reached]) {
    const descriptor = getOwnPropertyDescriptor(object, "constructor");
    if (descriptor !== undefined && typeof descriptor.value === "function") {
      tameOverride(object, "constructor");
    }
  }
  // The new accessors and the originals behind them.
  walk();
  for (const object of reached) freeze(object);

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
  return freeze({ run, describe, reseed });
})`;
