// This module is browser compatible.

/**
 * The override taming both lockdowns apply. The override mistake: assigning
 * a property on one's own object fails when a frozen prototype has it. The
 * properties of `realm/override_targets.ts`, and every intrinsic
 * prototype's `constructor`, become accessors whose setter defines an own
 * property on the object assigned to, and refuses with a clear message when
 * that object is an intrinsic; the getter's `originalValue` is the value.
 * Runs inside a realm: self-contained, turned into source by
 * `realm/realm_source.ts`.
 *
 * @module
 */

/** The override rule as plain data, as a realm receives it. */
export interface OverrideRule {
  /** The keys to tame, by intrinsic name (`"Array.prototype"`), in order. */
  readonly targets: readonly (readonly [string, readonly string[]])[];
  /** The refusal messages, each split around the key. */
  readonly refusals: {
    readonly intrinsic: readonly [string, string];
    readonly primitive: readonly [string, string];
  };
}

/**
 * Tames the rule's properties, then the `constructor` of every object in
 * `intrinsics` (call it before any guest object exists). Each original
 * value is added to `intrinsics`, since only the new getter reaches it now,
 * and so are the new getter and setter, so a walk that enters only what
 * the taming added reaches everything it made reachable;
 * a setter refuses an assignment to any object in `intrinsics` (which the
 * caller grows by walking again before it freezes them). A name this
 * engine lacks is skipped, and so is a property that is not a configurable
 * data property. Self-contained: it captures what it uses when called.
 *
 * @param rule The override rule (`realm/override_targets.ts`).
 * @param intrinsics What the lockdown's walk reached; grows in place.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tameOverrides } from "./tame_overrides.ts";
 *
 * const proto = { greet: () => "hi" };
 * (globalThis as Record<string, unknown>).Demo = { prototype: proto };
 * tameOverrides({
 *   targets: [["Demo.prototype", ["greet"]]],
 *   refusals: { intrinsic: ["no ", ""], primitive: ["no ", ""] },
 * }, new Set([proto]));
 * Object.freeze(proto);
 * const own: { greet(): string } = Object.create(proto);
 * own.greet = () => "hello";
 * assert.equal(own.greet(), "hello");
 * assert.throws(() => (proto.greet = () => ""), TypeError);
 * delete (globalThis as Record<string, unknown>).Demo;
 * ```
 */
export function tameOverrides(
  rule: OverrideRule,
  intrinsics: Set<object>,
): void {
  const { defineProperty, getOwnPropertyDescriptor, getPrototypeOf } = Object;
  const apply = Reflect.apply;
  // Captured before the taming turns it into an accessor.
  const hasOwnProperty = Object.prototype.hasOwnProperty;
  const TypeErrorCtor = TypeError;
  const toText = String;
  const refusals = rule.refusals;

  // A rule travels as JSON, so a well-known symbol key is written
  // `@@iterator`. This runs before any guest code, on built-ins as the
  // engine made them.
  const wellKnown = Symbol as unknown as Record<string, symbol>;
  function propertyKey(name: string): PropertyKey {
    return name.slice(0, 2) === "@@" ? wellKnown[name.slice(2)]! : name;
  }
  // The intrinsics a path starts from that no global names.
  const generatorFunction = getPrototypeOf(function* () {});
  const asyncGeneratorFunction = getPrototypeOf(async function* () {});
  const HIDDEN_ROOTS: Record<string, unknown> = {
    "%GeneratorPrototype%": generatorFunction.prototype,
    "%AsyncGeneratorPrototype%": asyncGeneratorFunction.prototype,
  };

  function tameOverride(object: object, key: PropertyKey): void {
    const descriptor = getOwnPropertyDescriptor(object, key);
    if (
      descriptor === undefined || !("value" in descriptor) ||
      !descriptor.configurable
    ) return;
    const value: unknown = descriptor.value;
    const label = typeof key === "symbol"
      ? "[" + key.description + "]"
      : toText(key);
    // The original is reachable only through the getter from now on.
    if (
      (typeof value === "object" && value !== null) ||
      typeof value === "function"
    ) {
      intrinsics.add(value);
    }
    // Accessors from an object literal: they have no prototype to freeze.
    const accessors = getOwnPropertyDescriptor({
      get [key]() {
        return value;
      },
      set [key](next: unknown) {
        if (this === object || intrinsics.has(this as object)) {
          throw new TypeErrorCtor(
            refusals.intrinsic[0] + label + refusals.intrinsic[1],
          );
        }
        if (
          (typeof this !== "object" && typeof this !== "function") ||
          this === null
        ) {
          throw new TypeErrorCtor(
            refusals.primitive[0] + label + refusals.primitive[1],
          );
        }
        if (apply(hasOwnProperty, this, [key])) {
          // Reached through Reflect.set or super: assign as the engine would.
          (this as Record<PropertyKey, unknown>)[key] = next;
        } else {
          defineProperty(this, key, {
            value: next,
            writable: true,
            enumerable: true,
            configurable: true,
          });
        }
      },
    }, key)!;
    // The convention code that reads intrinsics by descriptor relies on
    // (get-intrinsic, behind qs and es-abstract): a getter that stands for
    // a data property names the value as its `originalValue`.
    defineProperty(accessors.get!, "originalValue", {
      value,
      writable: false,
      enumerable: false,
      configurable: false,
    });
    intrinsics.add(accessors.get!);
    intrinsics.add(accessors.set!);
    defineProperty(object, key, {
      get: accessors.get,
      set: accessors.set,
      enumerable: descriptor.enumerable,
      configurable: descriptor.configurable,
    });
  }

  // The keys by intrinsic name; a name this engine lacks is skipped. A
  // `[[Prototype]]` step reaches an intrinsic no global names
  // (`Uint8Array.[[Prototype]].prototype` is %TypedArray%.prototype).
  for (const [name, keys] of rule.targets) {
    const [first, ...rest] = name.split(".");
    let object: unknown = apply(hasOwnProperty, HIDDEN_ROOTS, [first])
      ? HIDDEN_ROOTS[first!]
      : (globalThis as Record<string, unknown>)[first!];
    for (const step of rest) {
      if (
        (typeof object !== "object" || object === null) &&
        typeof object !== "function"
      ) object = undefined;
      else if (step === "[[Prototype]]") object = getPrototypeOf(object);
      else object = (object as Record<string, unknown>)[step];
    }
    if (
      (typeof object !== "object" || object === null) &&
      typeof object !== "function"
    ) continue;
    for (const key of keys) tameOverride(object, propertyKey(key));
  }
  // Every intrinsic prototype's constructor (the intrinsics are exactly
  // what the walk reached: no guest object exists yet).
  for (const object of [...intrinsics]) {
    const descriptor = getOwnPropertyDescriptor(object, "constructor");
    if (descriptor !== undefined && typeof descriptor.value === "function") {
      tameOverride(object, "constructor");
    }
  }
}
