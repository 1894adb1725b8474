// This module is browser compatible.

/**
 * Keeps the realm's locked globals locked against property definitions.
 * QuickJS (the build quickjs-emscripten 0.32 ships) lets
 * `Object.defineProperty`, `Object.defineProperties` and
 * `Reflect.defineProperty` change the value of a non-writable,
 * non-configurable property of the global object, which the language
 * forbids: `Object.defineProperty(globalThis, "JSON", { value: fake })`
 * would replace the `JSON` pack code sees, even on a frozen global object,
 * and so would the same call on a `Proxy` whose target is the global
 * object. Other objects and every other change (writable, configurable,
 * enumerable, an accessor) are refused as they should be, and the engine's
 * other definitions (class fields, `CreateDataProperty`) always ask for a
 * configurable property, which it refuses. So the three definers are
 * replaced by ones that refuse that change, as the language does, and
 * otherwise hand the definition to the original.
 *
 * A definition on the global object that would change a locked global is
 * refused before it is made. On any other object it is made (it is a
 * property of that object, unless the object is a proxy that forwards to
 * the global object), and when the global changed after all, it is put
 * back and the definition refused, before any other code runs: a proxy
 * without a `defineProperty` trap forwards to its target without running
 * code, and a trap can reach the global object only through these
 * definers. Run it before the lockdown, which freezes the replacements
 * with every other intrinsic. In V8 it changes nothing observable but the
 * refusal's message.
 *
 * @module
 */

/**
 * Replaces `Object.defineProperty`, `Object.defineProperties` and
 * `Reflect.defineProperty` of the realm it runs in. Self-contained: it
 * captures the intrinsics it uses when it is called.
 *
 * @example
 * ```ts ignore
 * // Inside a fresh realm, before its lockdown:
 * guardGlobalDefinitions();
 * Object.defineProperty(globalThis, "undefined", { value: 1 }); // throws TypeError
 * ```
 */
export function guardGlobalDefinitions(): void {
  "use strict";
  const G = globalThis;
  const ObjectCtor = Object;
  const { create, getOwnPropertyDescriptor } = Object;
  // None of the three reads its `this`, so they are called as functions.
  const defineProperty = Object.defineProperty;
  const defineProperties = Object.defineProperties as (
    object: unknown,
    properties: unknown,
  ) => unknown;
  const reflectDefineProperty = Reflect.defineProperty;
  const ownKeys = Reflect.ownKeys;
  const objectIs = Object.is;
  const TypeErrorCtor = TypeError;
  const toText = String;
  const FIELDS = [
    "enumerable",
    "configurable",
    "value",
    "writable",
    "get",
    "set",
  ];

  function isObject(value: unknown): value is object {
    return (typeof value === "object" && value !== null) ||
      typeof value === "function";
  }
  // ToPropertyKey, once: a computed key of an object literal applies it.
  function propertyKey(key: unknown): PropertyKey {
    return typeof key === "string" || typeof key === "symbol"
      ? key
      : ownKeys({ [key as PropertyKey]: 0 })[0]!;
  }
  // The global's value when it is locked (a read-only, non-configurable
  // data property), else `undefined` in an array's stead.
  function lockedGlobal(key: PropertyKey): [unknown] | undefined {
    const current = getOwnPropertyDescriptor(G, key);
    return current !== undefined && "value" in current && !current.writable &&
        !current.configurable
      ? [current.value]
      : undefined;
  }
  // ToPropertyDescriptor's reads, once and in its order, into a plain
  // object the original validates as it would the caller's.
  function plainDescriptor(attributes: object): PropertyDescriptor {
    const plain = create(null) as Record<string, unknown>;
    for (const field of FIELDS) {
      if (field in attributes) {
        plain[field] = (attributes as Record<string, unknown>)[field];
      }
    }
    return plain as PropertyDescriptor;
  }
  function changes(descriptor: PropertyDescriptor, locked: [unknown]): boolean {
    return "value" in descriptor && !objectIs(descriptor.value, locked[0]);
  }
  // Whether a locked global changed; if so, its value is put back (the
  // engine lets the very change that made it through undo it).
  function undone(key: PropertyKey, locked: [unknown]): boolean {
    const now = getOwnPropertyDescriptor(G, key);
    if (now !== undefined && "value" in now && objectIs(now.value, locked[0])) {
      return false;
    }
    defineProperty(G, key, { value: locked[0] });
    return true;
  }
  function refusal(key: PropertyKey): TypeError {
    return new TypeErrorCtor(
      "Cannot redefine " +
        (typeof key === "symbol" ? "a symbol" : toText(key)) +
        ": globals are read-only in a sandbox; define it on your own object instead",
    );
  }
  // One definition; `fail` is how the definer refuses.
  function defineOne(
    define: (o: object, k: PropertyKey, d: PropertyDescriptor) => unknown,
    fail: (key: PropertyKey) => unknown,
    object: object,
    key: unknown,
    attributes: unknown,
  ): unknown {
    if (!isObject(object) || !isObject(attributes)) {
      return define(
        object,
        key as PropertyKey,
        attributes as PropertyDescriptor,
      );
    }
    const property = propertyKey(key);
    const locked = lockedGlobal(property);
    if (locked === undefined) return define(object, property, attributes);
    const descriptor = plainDescriptor(attributes);
    if (!changes(descriptor, locked)) {
      return define(object, property, descriptor);
    }
    if (object === G) return fail(property);
    let result: unknown;
    let changed = false;
    try {
      result = define(object, property, descriptor);
    } finally {
      // Also when the definition throws after the global changed.
      changed = undone(property, locked);
    }
    return changed ? fail(property) : result;
  }
  const throwRefusal = (key: PropertyKey): never => {
    throw refusal(key);
  };
  const refuseQuietly = (): boolean => false;

  const definers = {
    defineProperty(object: object, key: PropertyKey, attributes: object) {
      return defineOne(defineProperty, throwRefusal, object, key, attributes);
    },
    defineProperties(object: object, properties: object) {
      if (
        !isObject(object) || properties === null || properties === undefined
      ) {
        return defineProperties(object, properties);
      }
      // The spec's reads, once, into a plain map of plain descriptors, so
      // a proxy cannot list other keys or give other descriptors to the
      // original than the ones checked here.
      const source = ObjectCtor(properties) as Record<PropertyKey, unknown>;
      const plain = create(null) as Record<PropertyKey, unknown>;
      const watched: [PropertyKey, [unknown]][] = [];
      for (const key of ownKeys(source)) {
        const own = getOwnPropertyDescriptor(source, key);
        if (own === undefined || !own.enumerable) continue;
        const attributes = source[key];
        if (!isObject(attributes)) {
          // The original throws the engine's TypeError for it.
          plain[key] = attributes;
          continue;
        }
        const descriptor = plainDescriptor(attributes);
        const locked = lockedGlobal(key);
        if (locked !== undefined && changes(descriptor, locked)) {
          if (object === G) throwRefusal(key);
          watched.push([key, locked]);
        }
        plain[key] = descriptor;
      }
      let result: unknown;
      let refused: PropertyKey | undefined;
      try {
        result = defineProperties(object, plain);
      } finally {
        // Also when a later definition throws after an earlier one changed
        // a global.
        for (const [key, locked] of watched) {
          if (undone(key, locked) && refused === undefined) refused = key;
        }
      }
      return refused === undefined ? result : throwRefusal(refused);
    },
  };
  const reflectDefiners = {
    defineProperty(object: object, key: PropertyKey, attributes: object) {
      return defineOne(
        reflectDefineProperty,
        refuseQuietly,
        object,
        key,
        attributes,
      );
    },
  };
  for (
    const [holder, name, replacement] of [
      [ObjectCtor, "defineProperty", definers.defineProperty],
      [ObjectCtor, "defineProperties", definers.defineProperties],
      [Reflect, "defineProperty", reflectDefiners.defineProperty],
    ] as const
  ) {
    defineProperty(holder, name, {
      value: replacement,
      writable: true,
      enumerable: false,
      configurable: true,
    });
  }
}
