// This module is browser compatible.

/**
 * `crypto.getRandomValues` and `crypto.randomUUID` for a realm whose engine
 * has no host Web APIs (QuickJS). The bytes come from ChaCha20 (RFC 8439)
 * keyed with 256 bits the host draws from its own cryptographic source
 * before every run, so no two runs share a stream, a run that starts from
 * a copied memory gets a new key, and guest code never reaches the host.
 * Runs inside a realm: self-contained, turned into source by
 * `realm/realm_source.ts`, and frozen by the realm's lockdown.
 *
 * @module
 */

/** What {@linkcode createWebRandom} makes. */
export interface WebRandom {
  /** The realm's `crypto` global: `getRandomValues` and `randomUUID`. */
  crypto: Pick<Crypto, "getRandomValues" | "randomUUID">;
  /**
   * Starts a new stream from a 256-bit key, as eight 32-bit words; the
   * host calls it before every run.
   */
  rekey(key: readonly number[]): void;
}

/**
 * Makes the realm's `crypto`. Until {@linkcode WebRandom.rekey} is called
 * its key is all zeros, so the host must key it before any code draws from
 * it. Self-contained: it captures the intrinsics it uses when it is called.
 *
 * @param DOMExceptionCtor The realm's `DOMException`, for the errors
 * browsers give.
 * @returns The `crypto` object and the function that keys it.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createWebRandom } from "./web_random.ts";
 *
 * const random = createWebRandom(DOMException);
 * random.rekey(Array.from(crypto.getRandomValues(new Uint32Array(8))));
 * const uuid = random.crypto.randomUUID();
 * assert.match(uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
 * ```
 */
export function createWebRandom(
  DOMExceptionCtor: new (message?: string, name?: string) => Error,
): WebRandom {
  "use strict";
  const { getOwnPropertyDescriptor, getPrototypeOf, defineProperty } = Object;
  const { apply } = Reflect;
  const Uint8ArrayCtor = Uint8Array;
  const Uint32ArrayCtor = Uint32Array;
  const isView = ArrayBuffer.isView;
  // A view's own properties may shadow these getters: read its slots.
  const typedArrayProto = getPrototypeOf(Uint8Array.prototype) as object;
  const getterOf = (key: PropertyKey) =>
    getOwnPropertyDescriptor(typedArrayProto, key)!.get!;
  const typedArrayTag = getterOf(Symbol.toStringTag);
  const typedArrayBuffer = getterOf("buffer");
  const typedArrayOffset = getterOf("byteOffset");
  const typedArrayBytes = getterOf("byteLength");
  const TypeErrorCtor = TypeError;
  const INTEGER_ARRAYS = [
    "Int8Array",
    "Uint8Array",
    "Uint8ClampedArray",
    "Int16Array",
    "Uint16Array",
    "Int32Array",
    "Uint32Array",
    "BigInt64Array",
    "BigUint64Array",
  ];
  const MAX_BYTES = 65536;
  const HEX = "0123456789abcdef";

  // "expand 32-byte k", the key, a 64-bit block counter and a zero nonce.
  const state = new Uint32ArrayCtor(16);
  state.set([0x61707865, 0x3320646e, 0x79622d32, 0x6b206574]);
  const working = new Uint32ArrayCtor(16);
  const block = new Uint8ArrayCtor(64);
  let used = 64;

  function quarterRound(
    x: Uint32Array,
    a: number,
    b: number,
    c: number,
    d: number,
  ) {
    x[a] = x[a]! + x[b]!;
    x[d] = rotate(x[d]! ^ x[a]!, 16);
    x[c] = x[c]! + x[d]!;
    x[b] = rotate(x[b]! ^ x[c]!, 12);
    x[a] = x[a]! + x[b]!;
    x[d] = rotate(x[d]! ^ x[a]!, 8);
    x[c] = x[c]! + x[d]!;
    x[b] = rotate(x[b]! ^ x[c]!, 7);
  }

  function rotate(value: number, bits: number): number {
    return (value << bits) | (value >>> (32 - bits));
  }

  /** The next 64 bytes of the stream, into `block`. */
  function nextBlock(): void {
    working.set(state);
    for (let round = 0; round < 10; round++) {
      quarterRound(working, 0, 4, 8, 12);
      quarterRound(working, 1, 5, 9, 13);
      quarterRound(working, 2, 6, 10, 14);
      quarterRound(working, 3, 7, 11, 15);
      quarterRound(working, 0, 5, 10, 15);
      quarterRound(working, 1, 6, 11, 12);
      quarterRound(working, 2, 7, 8, 13);
      quarterRound(working, 3, 4, 9, 14);
    }
    for (let i = 0; i < 16; i++) {
      const word = (working[i]! + state[i]!) >>> 0;
      block[4 * i] = word & 0xff;
      block[4 * i + 1] = (word >>> 8) & 0xff;
      block[4 * i + 2] = (word >>> 16) & 0xff;
      block[4 * i + 3] = word >>> 24;
    }
    state[12] = state[12]! + 1;
    if (state[12] === 0) state[13] = state[13]! + 1;
    used = 0;
  }

  function fill(bytes: Uint8Array): void {
    for (let i = 0; i < bytes.length; i++) {
      if (used === 64) nextBlock();
      bytes[i] = block[used++]!;
    }
  }

  function rekey(key: readonly number[]): void {
    // A missing word would key the stream with zeros, which anyone can
    // predict: refuse anything but eight numbers.
    let words = 0;
    for (let i = 0; i < 8; i++) if (typeof key[i] === "number") words++;
    if (key.length !== 8 || words !== 8) {
      throw new TypeErrorCtor(
        "Cannot key crypto: pass eight 32-bit words from a cryptographic source",
      );
    }
    for (let i = 0; i < 8; i++) state[4 + i] = key[i]! >>> 0;
    state.fill(0, 12);
    used = 64;
  }

  const crypto = {
    getRandomValues<T extends ArrayBufferView | null>(array: T): T {
      if (arguments.length === 0) {
        throw new TypeErrorCtor(
          "Failed to execute 'getRandomValues' on 'Crypto': 1 argument required, but only 0 present",
        );
      }
      const tag = isView(array) ? apply(typedArrayTag, array, []) : undefined;
      if (typeof tag !== "string" || !INTEGER_ARRAYS.includes(tag)) {
        throw new DOMExceptionCtor(
          "The provided value is not an integer-type TypedArray",
          "TypeMismatchError",
        );
      }
      const length: number = apply(typedArrayBytes, array, []);
      if (length > MAX_BYTES) {
        throw new DOMExceptionCtor(
          `The ArrayBufferView's byte length (${length}) exceeds the number of bytes of entropy available via this API (${MAX_BYTES})`,
          "QuotaExceededError",
        );
      }
      // A detached or out-of-bounds view has no bytes to fill.
      if (length === 0) return array;
      fill(
        new Uint8ArrayCtor(
          apply(typedArrayBuffer, array, []),
          apply(typedArrayOffset, array, []),
          length,
        ),
      );
      return array;
    },
    randomUUID(): `${string}-${string}-${string}-${string}-${string}` {
      const bytes = new Uint8ArrayCtor(16);
      fill(bytes);
      bytes[6] = (bytes[6]! & 0x0f) | 0x40;
      bytes[8] = (bytes[8]! & 0x3f) | 0x80;
      let text = "";
      for (let i = 0; i < 16; i++) {
        if (i === 4 || i === 6 || i === 8 || i === 10) text += "-";
        text += HEX[bytes[i]! >> 4]! + HEX[bytes[i]! & 15]!;
      }
      return text as `${string}-${string}-${string}-${string}-${string}`;
    },
  };
  defineProperty(crypto, Symbol.toStringTag, {
    value: "Crypto",
    configurable: true,
  });
  return { crypto, rekey };
}
