// This module is browser compatible.

/**
 * Keeps the realm's locked globals locked against property definitions.
 * QuickJS (the build quickjs-emscripten 0.32 ships) lets
 * `Object.defineProperty`, `Object.defineProperties` and
 * `Reflect.defineProperty` change the value of a non-writable,
 * non-configurable property of the global object, which the language
 * forbids: `Object.defineProperty(globalThis, "JSON", { value: fake })`
 * would replace the `JSON` pack code sees, even on a frozen global object.
 * Other objects and every other change (writable, configurable, enumerable,
 * an accessor) are refused as they should be. So the three definers are
 * replaced by ones that refuse that change on the global object, as the
 * language does, and otherwise hand the definition to the original
 * unchanged. Run it before the lockdown, which freezes the replacements
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
  const ReflectObject = Reflect;
  const { create, getOwnPropertyDescriptor } = Object;
  const originalDefineProperty = Object.defineProperty;
  const originalDefineProperties = Object.defineProperties;
  const originalReflectDefine = Reflect.defineProperty;
  const { apply, ownKeys } = Reflect;
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

  // ToPropertyKey, once: a computed key of an object literal applies it.
  function propertyKey(key: unknown): PropertyKey {
    return ownKeys({ [key as PropertyKey]: 0 })[0]!;
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
  // The one change QuickJS lets through on its global object.
  function changesLockedValue(
    key: PropertyKey,
    descriptor: PropertyDescriptor,
  ): boolean {
    const current = getOwnPropertyDescriptor(G, key);
    return current !== undefined && "value" in current &&
      !current.writable && !current.configurable && "value" in descriptor &&
      !objectIs(descriptor.value, current.value);
  }
  function refusal(key: PropertyKey): TypeError {
    return new TypeErrorCtor(
      "Cannot redefine " +
        (typeof key === "symbol" ? "a symbol" : toText(key)) +
        ": globals are read-only in a sandbox; define it on your own object instead",
    );
  }
  const definers = {
    defineProperty(object: object, key: PropertyKey, attributes: object) {
      if (
        object !== G || typeof attributes !== "object" || attributes === null
      ) {
        return apply(originalDefineProperty, ObjectCtor, [
          object,
          key,
          attributes,
        ]);
      }
      const property = propertyKey(key);
      const descriptor = plainDescriptor(attributes);
      if (changesLockedValue(property, descriptor)) throw refusal(property);
      return apply(originalDefineProperty, ObjectCtor, [
        G,
        property,
        descriptor,
      ]);
    },
    defineProperties(object: object, properties: object) {
      if (object !== G || properties === null || properties === undefined) {
        return apply(originalDefineProperties, ObjectCtor, [
          object,
          properties,
        ]);
      }
      const source = ObjectCtor(properties) as Record<PropertyKey, unknown>;
      const plain = create(null) as Record<PropertyKey, PropertyDescriptor>;
      for (const key of ownKeys(source)) {
        const own = getOwnPropertyDescriptor(source, key);
        if (own === undefined || !own.enumerable) continue;
        const attributes = source[key];
        if (typeof attributes !== "object" || attributes === null) {
          // The original throws the engine's TypeError for it.
          return apply(originalDefineProperties, ObjectCtor, [G, properties]);
        }
        const descriptor = plainDescriptor(attributes);
        if (changesLockedValue(key, descriptor)) throw refusal(key);
        plain[key] = descriptor;
      }
      return apply(originalDefineProperties, ObjectCtor, [G, plain]);
    },
  };
  const reflectDefiners = {
    defineProperty(object: object, key: PropertyKey, attributes: object) {
      if (
        object !== G || typeof attributes !== "object" || attributes === null
      ) {
        return apply(originalReflectDefine, ReflectObject, [
          object,
          key,
          attributes,
        ]);
      }
      const property = propertyKey(key);
      const descriptor = plainDescriptor(attributes);
      if (changesLockedValue(property, descriptor)) return false;
      return apply(originalReflectDefine, ReflectObject, [
        G,
        property,
        descriptor,
      ]);
    },
  };
  for (
    const [holder, name, replacement] of [
      [ObjectCtor, "defineProperty", definers.defineProperty],
      [ObjectCtor, "defineProperties", definers.defineProperties],
      [ReflectObject, "defineProperty", reflectDefiners.defineProperty],
    ] as const
  ) {
    apply(originalDefineProperty, ObjectCtor, [holder, name, {
      value: replacement,
      writable: true,
      enumerable: false,
      configurable: true,
    }]);
  }
}
