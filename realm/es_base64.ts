// This module is browser compatible.

/**
 * `Uint8Array`'s base64 and hex methods (ES2026) for a realm whose engine
 * lacks them (QuickJS): `Uint8Array.fromBase64`, `Uint8Array.fromHex` and
 * `toBase64`, `toHex`, `setFromBase64`, `setFromHex` on its prototype, with
 * the standard's options (`alphabet`, `lastChunkHandling`, `omitPadding`),
 * the standard's reading of partial input and the errors V8 gives. Pure
 * computation. Runs inside a realm: self-contained, turned into source by
 * `realm/realm_source.ts`.
 *
 * @module
 */

/** The six methods, by name; the first two are static. */
export interface Base64Methods {
  fromBase64: (string: string, options?: object) => Uint8Array;
  fromHex: (string: string) => Uint8Array;
  toBase64: (this: Uint8Array, options?: object) => string;
  toHex: (this: Uint8Array) => string;
  setFromBase64: (
    this: Uint8Array,
    string: string,
    options?: object,
  ) => { read: number; written: number };
  setFromHex: (
    this: Uint8Array,
    string: string,
  ) => { read: number; written: number };
}

/**
 * Makes the methods. Self-contained: it captures the intrinsics it uses when
 * it is called.
 *
 * @param shown How a message shows a value (`realm/es_builtins.ts`).
 * @returns The methods, each with the name and length V8 gives it.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createBase64Methods } from "./es_base64.ts";
 *
 * const { fromBase64, toHex } = createBase64Methods(String);
 * const bytes = fromBase64("_w", { alphabet: "base64url" });
 * assert.equal(toHex.call(bytes), "ff");
 * ```
 */
export function createBase64Methods(
  shown: (value: unknown) => string,
): Base64Methods {
  "use strict";
  const { getOwnPropertyDescriptor, getPrototypeOf } = Object;
  const { apply } = Reflect;
  const Uint8ArrayCtor = Uint8Array;
  const TypeErrorCtor = TypeError;
  const SyntaxErrorCtor = SyntaxError;
  const arrayJoin = Array.prototype.join;
  const typedArrayProto = getPrototypeOf(Uint8Array.prototype) as object;
  const tagOf = getOwnPropertyDescriptor(typedArrayProto, Symbol.toStringTag)!
    .get!;
  const lengthOf = getOwnPropertyDescriptor(typedArrayProto, "length")!.get!;
  // It validates its receiver first: a detached or out-of-bounds view throws.
  const validate = (typedArrayProto as { at: () => unknown }).at;

  const BASE64 =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const BASE64URL =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const HEX = "0123456789abcdef";
  const BAD_CHARACTER =
    "Found a character that cannot be part of a valid base64 string.";
  const SINGLE =
    "The base64 input terminates with a single character, excluding padding (=).";
  const EXTRA_BITS = "The base64 input terminates with non-zero padding bits.";
  const BAD_HEX = "Input string must contain hex characters in even length";

  /** Throws V8's error unless `view` is a Uint8Array. */
  function checked(view: unknown, method: string, setter: boolean): void {
    if (apply(tagOf, view, []) !== "Uint8Array") {
      throw new TypeErrorCtor(
        setter
          ? "this is not a typed array."
          : `Method Uint8Array.prototype.${method} called on incompatible receiver ${
            shown(view)
          }`,
      );
    }
  }

  function inBounds(view: unknown, method: string): number {
    try {
      apply(validate, view, [0]);
    } catch {
      throw new TypeErrorCtor(
        `Cannot perform Uint8Array.prototype.${method} on a detached or out-of-bounds ArrayBuffer`,
      );
    }
    return apply(lengthOf, view, []);
  }

  function text(value: unknown): string {
    if (typeof value !== "string") {
      throw new TypeErrorCtor("input argument must be a string");
    }
    return value;
  }

  function optionsOf(options: unknown): Record<string, unknown> {
    if (options === undefined) return {};
    if (typeof options !== "object" && typeof options !== "function") {
      throw new TypeErrorCtor("invalid_argument");
    }
    if (options === null) throw new TypeErrorCtor("invalid_argument");
    return options as Record<string, unknown>;
  }

  function choice(value: unknown, allowed: string[], fallback: string) {
    if (value === undefined) return fallback;
    for (const one of allowed) if (value === one) return one;
    throw new TypeErrorCtor(`invalid option ${shown(value)}`);
  }

  function alphabetOf(options: Record<string, unknown>): string {
    return choice(options.alphabet, ["base64", "base64url"], "base64");
  }

  function encode(view: Uint8Array, length: number, alphabet: string) {
    const table = alphabet === "base64" ? BASE64 : BASE64URL;
    const parts: string[] = [];
    let i = 0;
    for (; i + 2 < length; i += 3) {
      const n = (view[i]! << 16) | (view[i + 1]! << 8) | view[i + 2]!;
      parts.push(
        table[n >> 18]! + table[(n >> 12) & 63]! + table[(n >> 6) & 63]! +
          table[n & 63]!,
      );
    }
    if (i < length) {
      const n = (view[i]! << 16) | (i + 1 < length ? view[i + 1]! << 8 : 0);
      parts.push(
        table[n >> 18]! + table[(n >> 12) & 63]! +
          (i + 1 < length ? table[(n >> 6) & 63]! + "=" : "=="),
      );
    }
    return apply(arrayJoin, parts, [""]) as string;
  }

  function sextet(code: number): number {
    if (code >= 65 && code <= 90) return code - 65;
    if (code >= 97 && code <= 122) return code - 71;
    if (code >= 48 && code <= 57) return code + 4;
    return code === 43 ? 62 : code === 47 ? 63 : -1;
  }

  function isSpace(code: number): boolean {
    return code === 9 || code === 10 || code === 12 || code === 13 ||
      code === 32;
  }

  interface Decoded {
    read: number;
    bytes: number[];
    error: string | null;
  }

  /** Appends a chunk's bytes; its extra bits must be zero when `strict`. */
  function decodeChunk(
    chunk: number[],
    bytes: number[],
    strict: boolean,
  ): boolean {
    const size = chunk.length;
    const n = (chunk[0]! << 18) | (chunk[1]! << 12) |
      ((chunk[2] ?? 0) << 6) | (chunk[3] ?? 0);
    if (strict && (size === 2 ? n & 0xffff : size === 3 ? n & 0xff : 0)) {
      return false;
    }
    bytes.push(n >> 16);
    if (size > 2) bytes.push((n >> 8) & 255);
    if (size > 3) bytes.push(n & 255);
    return true;
  }

  /** The standard's FromBase64. */
  function fromBase64Text(
    string: string,
    alphabet: string,
    lastChunk: string,
    maxLength: number,
  ): Decoded {
    const bytes: number[] = [];
    let read = 0;
    const stop = (error: string | null): Decoded => ({ read, bytes, error });
    if (maxLength === 0) return stop(null);
    const length = string.length;
    let chunk: number[] = [];
    let index = 0;
    const skip = () => {
      while (index < length && isSpace(string.charCodeAt(index))) index++;
    };
    for (;;) {
      skip();
      if (index === length) {
        if (chunk.length > 0) {
          if (lastChunk === "stop-before-partial") return stop(null);
          if (lastChunk === "strict" || chunk.length === 1) {
            return stop(SINGLE);
          }
          decodeChunk(chunk, bytes, false);
        }
        read = length;
        return stop(null);
      }
      let code = string.charCodeAt(index++);
      if (code === 61) {
        if (chunk.length < 2) return stop(BAD_CHARACTER);
        skip();
        if (chunk.length === 2) {
          if (index === length) {
            return stop(
              lastChunk === "stop-before-partial"
                ? null
                : lastChunk === "strict"
                ? SINGLE
                : BAD_CHARACTER,
            );
          }
          if (string.charCodeAt(index) === 61) {
            index++;
            skip();
          }
        }
        if (index < length) return stop(BAD_CHARACTER);
        if (!decodeChunk(chunk, bytes, lastChunk === "strict")) {
          return stop(EXTRA_BITS);
        }
        read = length;
        return stop(null);
      }
      if (alphabet === "base64url") {
        if (code === 43 || code === 47) return stop(BAD_CHARACTER);
        if (code === 45) code = 43;
        else if (code === 95) code = 47;
      }
      const value = sextet(code);
      if (value < 0) return stop(BAD_CHARACTER);
      const remaining = maxLength - bytes.length;
      if (
        (remaining === 1 && chunk.length === 2) ||
        (remaining === 2 && chunk.length === 3)
      ) {
        return stop(null);
      }
      chunk.push(value);
      if (chunk.length === 4) {
        decodeChunk(chunk, bytes, false);
        chunk = [];
        read = index;
        if (bytes.length === maxLength) return stop(null);
      }
    }
  }

  /** The standard's FromHex. */
  function fromHexText(string: string, maxLength: number): Decoded {
    const bytes: number[] = [];
    let read = 0;
    const length = string.length;
    if (length % 2 !== 0) return { read, bytes, error: BAD_HEX };
    while (read < length && bytes.length < maxLength) {
      const high = hexit(string.charCodeAt(read));
      const low = hexit(string.charCodeAt(read + 1));
      if (high < 0 || low < 0) return { read, bytes, error: BAD_HEX };
      read += 2;
      bytes.push((high << 4) | low);
    }
    return { read, bytes, error: null };
  }

  function hexit(code: number): number {
    if (code >= 48 && code <= 57) return code - 48;
    code |= 32;
    return code >= 97 && code <= 102 ? code - 87 : -1;
  }

  function made(decoded: Decoded): Uint8Array {
    if (decoded.error !== null) throw new SyntaxErrorCtor(decoded.error);
    const out = new Uint8ArrayCtor(decoded.bytes.length);
    for (let i = 0; i < out.length; i++) out[i] = decoded.bytes[i]!;
    return out;
  }

  function written(view: Uint8Array, decoded: Decoded) {
    const { bytes } = decoded;
    for (let i = 0; i < bytes.length; i++) view[i] = bytes[i]!;
    if (decoded.error !== null) throw new SyntaxErrorCtor(decoded.error);
    return { read: decoded.read, written: bytes.length };
  }

  const MAX = 9007199254740991;
  const LAST_CHUNK = ["loose", "strict", "stop-before-partial"];

  return {
    fromBase64(string: string, ...rest: (object | undefined)[]): Uint8Array {
      const input = text(string);
      const opts = optionsOf(rest[0]);
      const alphabet = alphabetOf(opts);
      const lastChunk = choice(opts.lastChunkHandling, LAST_CHUNK, "loose");
      return made(fromBase64Text(input, alphabet, lastChunk, MAX));
    },
    fromHex(string: string): Uint8Array {
      return made(fromHexText(text(string), MAX));
    },
    toBase64(this: Uint8Array, ...rest: (object | undefined)[]): string {
      checked(this, "toBase64", false);
      const opts = optionsOf(rest[0]);
      const alphabet = alphabetOf(opts);
      const omitPadding = !!opts.omitPadding;
      const out = encode(this, inBounds(this, "toBase64"), alphabet);
      if (!omitPadding) return out;
      let end = out.length;
      while (end > 0 && out.charCodeAt(end - 1) === 61) end--;
      return out.slice(0, end);
    },
    toHex(this: Uint8Array): string {
      checked(this, "toHex", false);
      const length = inBounds(this, "toHex");
      const parts: string[] = [];
      for (let i = 0; i < length; i++) {
        parts.push(HEX[this[i]! >> 4]! + HEX[this[i]! & 15]!);
      }
      return apply(arrayJoin, parts, [""]) as string;
    },
    setFromBase64(
      this: Uint8Array,
      string: string,
      ...rest: (object | undefined)[]
    ): { read: number; written: number } {
      checked(this, "setFromBase64", true);
      const input = text(string);
      const opts = optionsOf(rest[0]);
      const alphabet = alphabetOf(opts);
      const lastChunk = choice(opts.lastChunkHandling, LAST_CHUNK, "loose");
      const room = inBounds(this, "setFromBase64");
      const decoded = fromBase64Text(input, alphabet, lastChunk, room);
      // When it stops early, V8 reads the next chunk still: an error there
      // is thrown, and white space alone up to the end counts as read.
      if (room > 0 && decoded.error === null && decoded.read < input.length) {
        const rest = input.slice(decoded.read);
        const next = fromBase64Text(rest, alphabet, lastChunk, 3);
        decoded.error = next.error;
        if (next.bytes.length === 0 && next.read === rest.length) {
          decoded.read = input.length;
        }
      }
      return written(this, decoded);
    },
    setFromHex(
      this: Uint8Array,
      string: string,
    ): { read: number; written: number } {
      checked(this, "setFromHex", true);
      const input = text(string);
      return written(this, fromHexText(input, inBounds(this, "setFromHex")));
    },
  };
}
