// This module is browser compatible.

/**
 * What a caller hands in as bytes, read by the engine's own slots: whether
 * a value is a `Uint8Array` (of any realm), an `ArrayBuffer` or a
 * `SharedArrayBuffer`, and whether its buffer was transferred or detached,
 * which leaves a view of no bytes that would otherwise read as empty
 * content. The getters are taken when this module loads, so a page script
 * that replaces them later cannot answer for a caller's bytes.
 *
 * @module
 */

import { CordonError } from "../protocol/cordon_error.ts";

const { getOwnPropertyDescriptor, getPrototypeOf } = Object;
const typedArrayPrototype: object = getPrototypeOf(Uint8Array.prototype);

function getterOf(
  target: object,
  key: PropertyKey,
): (this: unknown) => unknown {
  return getOwnPropertyDescriptor(target, key)!.get!;
}

const typedArrayName = getterOf(typedArrayPrototype, Symbol.toStringTag);
const viewBuffer = getterOf(typedArrayPrototype, "buffer");
const viewByteLength = getterOf(typedArrayPrototype, "byteLength");
const arrayBufferByteLength = getterOf(ArrayBuffer.prototype, "byteLength");
const sharedByteLength = typeof SharedArrayBuffer === "function"
  ? getterOf(SharedArrayBuffer.prototype, "byteLength")
  : undefined;
/** `ArrayBuffer.prototype.detached`, where the runtime has it (not Node 20). */
const detachedGetter = getOwnPropertyDescriptor(
  ArrayBuffer.prototype,
  "detached",
)?.get;

/** Whether a getter that checks its receiver's kind accepts `value`. */
function accepts(getter: (this: unknown) => unknown, value: unknown): boolean {
  try {
    getter.call(value);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether `value` is a `Uint8Array` of any realm (a Node `Buffer` is one),
 * told by its internal slots, so a Proxy or an object that only claims
 * the name is not one.
 *
 * @param value Anything.
 * @returns Whether it is a `Uint8Array`.
 */
export function isUint8Array(value: unknown): value is Uint8Array {
  return typedArrayName.call(value) === "Uint8Array";
}

/**
 * Whether `value` is an `ArrayBuffer` or a `SharedArrayBuffer` of any realm.
 *
 * @param value Anything.
 * @returns Whether it is a buffer.
 */
export function isBuffer(value: unknown): value is ArrayBufferLike {
  return accepts(arrayBufferByteLength, value) ||
    (sharedByteLength !== undefined && accepts(sharedByteLength, value));
}

/**
 * Whether a buffer was transferred or detached. Only an `ArrayBuffer` can
 * be; its byte length is then 0, so callers ask only about empty ones.
 */
function isDetachedBuffer(buffer: ArrayBufferLike): boolean {
  if (!accepts(arrayBufferByteLength, buffer)) return false;
  if (detachedGetter !== undefined) return detachedGetter.call(buffer) === true;
  // Without the getter: a view of no bytes can be made on any buffer but a
  // detached one.
  try {
    new Uint8Array(buffer, 0, 0);
    return false;
  } catch {
    return true;
  }
}

/**
 * Whether a `Uint8Array` or buffer holds no bytes because its buffer was
 * transferred or detached. Costs one read of its length unless it is empty.
 *
 * @param bytes A `Uint8Array` or a buffer.
 * @returns Whether its buffer is detached.
 */
export function isDetached(bytes: Uint8Array | ArrayBufferLike): boolean {
  if (isUint8Array(bytes)) {
    return viewByteLength.call(bytes) === 0 &&
      isDetachedBuffer(viewBuffer.call(bytes) as ArrayBufferLike);
  }
  return accepts(arrayBufferByteLength, bytes) &&
    arrayBufferByteLength.call(bytes) === 0 && isDetachedBuffer(bytes);
}

/**
 * The error for bytes whose buffer was transferred or detached.
 *
 * @param action What could not be done, for the message: `"compute a digest"`.
 * @returns A `BYTES_DETACHED` error.
 */
export function bytesDetached(action: string): CordonError {
  return new CordonError(
    "BYTES_DETACHED",
    `Cannot ${action}: the bytes' ArrayBuffer was transferred or detached, so it holds no bytes; pass the bytes before transferring their buffer, or a copy`,
  );
}
