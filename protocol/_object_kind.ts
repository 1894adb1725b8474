// This module is browser compatible.

/**
 * What kind of object a value is, named for a message without running any
 * of its code: a built-in's kind is found by a built-in method that checks
 * the object's internal slots (and never calls a getter or asks a Proxy),
 * and a class instance's class by its prototype's own `constructor` and
 * that constructor's own `name`, read as data properties only. This works
 * the same for an object of another realm (a frame, a `node:vm` context),
 * where `instanceof` would not.
 *
 * @module
 */

const { apply, getOwnPropertyDescriptor, getPrototypeOf } = Reflect;

/**
 * The getter of `%TypedArray%.prototype[Symbol.toStringTag]`: a typed
 * array's own kind (`"Uint8Array"`), `undefined` for anything else.
 */
const typedArrayTag = getOwnPropertyDescriptor(
  getPrototypeOf(Uint8Array.prototype)!,
  Symbol.toStringTag,
)!.get!;

/**
 * Built-in methods that throw unless their receiver has the kind's
 * internal slot, with the name each kind is given.
 */
const BRAND_CHECKS: readonly (readonly [string, (this: unknown) => unknown])[] =
  Object.freeze([
    ["Map", getOwnPropertyDescriptor(Map.prototype, "size")!.get!],
    ["Set", getOwnPropertyDescriptor(Set.prototype, "size")!.get!],
    ["WeakMap", WeakMap.prototype.has as (this: unknown) => unknown],
    ["WeakSet", WeakSet.prototype.has as (this: unknown) => unknown],
    ["Date", Date.prototype.getTime],
    [
      "ArrayBuffer",
      getOwnPropertyDescriptor(ArrayBuffer.prototype, "byteLength")!.get!,
    ],
    ["String object", String.prototype.valueOf],
    ["Number object", Number.prototype.valueOf],
    ["Boolean object", Boolean.prototype.valueOf],
  ].map((entry) => Object.freeze(entry)) as never);

/**
 * Names an object that is not plain data: `"Uint8Array"`, `"Map"`,
 * `"Set"`, `"Date"`, `"String object"` and other built-in kinds, `"an
 * object of class X"` for an instance of a class whose name is plain data,
 * else `"an object of another kind"`.
 *
 * @param value The object.
 * @param prototype Its prototype, as the caller already read it.
 * @returns The kind, in words a message can repeat.
 */
export function kindOf(value: object, prototype: object | null): string {
  return builtInKindOf(value) ?? classKindOf(prototype) ??
    "an object of another kind";
}

function builtInKindOf(value: object): string | undefined {
  const typed = apply(typedArrayTag, value, []) as string | undefined;
  if (typed !== undefined) return typed;
  for (const [kind, check] of BRAND_CHECKS) {
    if (passes(check, value)) return kind;
  }
  return undefined;
}

/**
 * Whether a built-in method accepts the value as its receiver. The methods
 * chosen call nothing of the value's for a receiver of their kind, and
 * throw before calling anything for any other.
 */
function passes(check: (this: unknown) => unknown, value: object): boolean {
  try {
    apply(check, value, []);
    return true;
  } catch {
    return false;
  }
}

/**
 * `"an object of class X"` when the prototype's own `constructor` is a data
 * property holding a function whose own `name` is a data property holding
 * a non-empty string; a getter on either is never called.
 */
function classKindOf(prototype: object | null): string | undefined {
  if (prototype === null) return undefined;
  const constructor = getOwnPropertyDescriptor(prototype, "constructor");
  if (constructor === undefined || !("value" in constructor)) return undefined;
  const owner: unknown = constructor.value;
  if (typeof owner !== "function") return undefined;
  const name = getOwnPropertyDescriptor(owner, "name");
  return name !== undefined && "value" in name &&
      typeof name.value === "string" && name.value !== ""
    ? `an object of class ${name.value}`
    : undefined;
}
