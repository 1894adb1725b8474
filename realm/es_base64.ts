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
  const fromCharCode = String.fromCharCode;
  const Uint8ArrayCtor = Uint8Array;
  const TypeErrorCtor = TypeError;
  const SyntaxErrorCtor = SyntaxError;
  const arrayJoin = Array.prototype.join;
  const typedArrayProto = getPrototypeOf(Uint8Array.prototype) as object;
  const tagOf = getOwnPropertyDescriptor(typedArrayProto, Symbol.toStringTag)!
    .get!;
  const lengthOf = getOwnPropertyDescriptor(typedArrayProto, "length")!.get!;
  const bufferOf = getOwnPropertyDescriptor(typedArrayProto, "buffer")!.get!;
  // It validates its receiver first: a detached or out-of-bounds view throws.
  const validate = (typedArrayProto as { at: () => unknown }).at;

  const BASE64 =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const BASE64URL =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const HEX = "0123456789abcdef";
  const BASE64_CODES = codesOf(BASE64);
  const BASE64URL_CODES = codesOf(BASE64URL);
  const HEX_CODES = codesOf(HEX);
  const EQUALS = 61;
  // Characters a piece of text is joined from.
  const PIECE = 8192;
  const BAD_CHARACTER =
    "Found a character that cannot be part of a valid base64 string.";
  const SINGLE =
    "The base64 input terminates with a single character, excluding padding (=).";
  const EXTRA_BITS = "The base64 input terminates with non-zero padding bits.";
  const BAD_HEX = "Input string must contain hex characters in even length";

  function codesOf(alphabet: string): Uint8Array {
    const codes = new Uint8ArrayCtor(alphabet.length);
    for (let i = 0; i < alphabet.length; i++) codes[i] = alphabet.charCodeAt(i);
    return codes;
  }

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

  /**
   * Base64 of `view`'s first `length` bytes, padded unless `omitPadding`.
   * Its characters are written into bytes sized first and joined a piece
   * at a time: a string per three bytes held some 40 bytes of heap per
   * byte encoded until the join.
   */
  function encode(
    view: Uint8Array,
    length: number,
    alphabet: string,
    omitPadding: boolean,
  ): string {
    const table = alphabet === "base64" ? BASE64_CODES : BASE64URL_CODES;
    const whole = length - length % 3;
    const left = length - whole;
    const tail = left === 0 ? 0 : omitPadding ? left + 1 : 4;
    const out = new Uint8ArrayCtor((whole / 3) * 4 + tail);
    let at = 0;
    for (let i = 0; i < whole; i += 3) {
      const n = (view[i]! << 16) | (view[i + 1]! << 8) | view[i + 2]!;
      out[at++] = table[n >> 18]!;
      out[at++] = table[(n >> 12) & 63]!;
      out[at++] = table[(n >> 6) & 63]!;
      out[at++] = table[n & 63]!;
    }
    if (left > 0) {
      const n = (view[whole]! << 16) | (left > 1 ? view[whole + 1]! << 8 : 0);
      out[at++] = table[n >> 18]!;
      out[at++] = table[(n >> 12) & 63]!;
      if (left > 1) out[at++] = table[(n >> 6) & 63]!;
      while (at < out.length) out[at++] = EQUALS;
    }
    return textOf(out);
  }

  /** Lowercase hex of `view`'s first `length` bytes, as `encode` builds. */
  function encodeHex(view: Uint8Array, length: number): string {
    const out = new Uint8ArrayCtor(length * 2);
    for (let i = 0; i < length; i++) {
      out[2 * i] = HEX_CODES[view[i]! >> 4]!;
      out[2 * i + 1] = HEX_CODES[view[i]! & 15]!;
    }
    return textOf(out);
  }

  /**
   * The text whose character codes are `codes`, joined a piece of `PIECE`
   * characters at a time, as `String.fromCharCode` takes them at once.
   */
  function textOf(codes: Uint8Array): string {
    const buffer = apply(bufferOf, codes, []) as ArrayBuffer;
    const parts: string[] = [];
    for (let at = 0; at < codes.length; at += PIECE) {
      const size = codes.length - at < PIECE ? codes.length - at : PIECE;
      const piece = new Uint8ArrayCtor(buffer, at, size);
      parts.push(apply(fromCharCode, null, piece) as string);
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

  /**
   * Where a decode stopped: the characters read, the bytes written into
   * its output and the error it met, if any.
   */
  interface Decoded {
    read: number;
    written: number;
    error: string | null;
  }

  /**
   * The most bytes base64 `string` can decode to: six bits for each
   * character that is neither white space nor padding. For valid input
   * it is the exact count, so `fromBase64` rarely copies its bytes.
   */
  function base64Bound(string: string): number {
    let count = 0;
    for (let i = 0; i < string.length; i++) {
      const code = string.charCodeAt(i);
      if (code !== 61 && !isSpace(code)) count++;
    }
    const bits = count * 6;
    return (bits - bits % 8) / 8;
  }

  /**
   * Writes a chunk of `size` sextets, packed in `n`, at `out[at]`; its
   * extra bits must be zero when `strict`. Returns the bytes written, or
   * -1 for extra bits that are not zero.
   */
  function decodeChunk(
    n: number,
    size: number,
    out: Uint8Array,
    at: number,
    strict: boolean,
  ): number {
    if (strict && (size === 2 ? n & 0xffff : size === 3 ? n & 0xff : 0)) {
      return -1;
    }
    out[at] = n >> 16;
    if (size > 2) out[at + 1] = (n >> 8) & 255;
    if (size > 3) out[at + 2] = n & 255;
    return size - 1;
  }

  /**
   * The standard's FromBase64 over `string` from index `from`, writing at
   * most `maxLength` bytes into `out`, which has room for them (or for
   * every byte the text holds, when fewer). `read` counts from `from`.
   */
  function fromBase64Text(
    string: string,
    from: number,
    alphabet: string,
    lastChunk: string,
    out: Uint8Array,
    maxLength: number,
  ): Decoded {
    let read = 0;
    let written = 0;
    const stop = (error: string | null): Decoded => ({ read, written, error });
    if (maxLength === 0) return stop(null);
    const length = string.length;
    // The chunk being read: `size` sextets, packed from the top of `n`.
    let n = 0;
    let size = 0;
    let index = from;
    const skip = () => {
      while (index < length && isSpace(string.charCodeAt(index))) index++;
    };
    const finish = (strict: boolean): boolean => {
      const count = decodeChunk(n, size, out, written, strict);
      if (count < 0) return false;
      written += count;
      return true;
    };
    for (;;) {
      skip();
      if (index === length) {
        if (size > 0) {
          if (lastChunk === "stop-before-partial") return stop(null);
          if (lastChunk === "strict" || size === 1) return stop(SINGLE);
          finish(false);
        }
        read = length - from;
        return stop(null);
      }
      let code = string.charCodeAt(index++);
      if (code === 61) {
        if (size < 2) return stop(BAD_CHARACTER);
        skip();
        if (size === 2) {
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
        if (!finish(lastChunk === "strict")) return stop(EXTRA_BITS);
        read = length - from;
        return stop(null);
      }
      if (alphabet === "base64url") {
        if (code === 43 || code === 47) return stop(BAD_CHARACTER);
        if (code === 45) code = 43;
        else if (code === 95) code = 47;
      }
      const value = sextet(code);
      if (value < 0) return stop(BAD_CHARACTER);
      const remaining = maxLength - written;
      if ((remaining === 1 && size === 2) || (remaining === 2 && size === 3)) {
        return stop(null);
      }
      n |= value << (18 - 6 * size);
      size++;
      if (size === 4) {
        finish(false);
        n = size = 0;
        read = index - from;
        if (written === maxLength) return stop(null);
      }
    }
  }

  /** The standard's FromHex, writing at most `maxLength` bytes into `out`. */
  function fromHexText(
    string: string,
    out: Uint8Array,
    maxLength: number,
  ): Decoded {
    let read = 0;
    let written = 0;
    const length = string.length;
    if (length % 2 !== 0) return { read, written, error: BAD_HEX };
    while (read < length && written < maxLength) {
      const high = hexit(string.charCodeAt(read));
      const low = hexit(string.charCodeAt(read + 1));
      if (high < 0 || low < 0) return { read, written, error: BAD_HEX };
      read += 2;
      out[written++] = (high << 4) | low;
    }
    return { read, written, error: null };
  }

  function hexit(code: number): number {
    if (code >= 48 && code <= 57) return code - 48;
    code |= 32;
    return code >= 97 && code <= 102 ? code - 87 : -1;
  }

  /** `out` cut to the bytes decoded, or the decode's error thrown. */
  function made(decoded: Decoded, out: Uint8Array): Uint8Array {
    if (decoded.error !== null) throw new SyntaxErrorCtor(decoded.error);
    if (decoded.written === out.length) return out;
    const buffer = apply(bufferOf, out, []) as ArrayBuffer;
    return new Uint8ArrayCtor(new Uint8ArrayCtor(buffer, 0, decoded.written));
  }

  /** The decode's counts, or its error thrown once its bytes are written. */
  function written(decoded: Decoded) {
    if (decoded.error !== null) throw new SyntaxErrorCtor(decoded.error);
    return { read: decoded.read, written: decoded.written };
  }

  const MAX = 9007199254740991;
  const LAST_CHUNK = ["loose", "strict", "stop-before-partial"];

  return {
    fromBase64(string: string, ...rest: (object | undefined)[]): Uint8Array {
      const input = text(string);
      const opts = optionsOf(rest[0]);
      const alphabet = alphabetOf(opts);
      const lastChunk = choice(opts.lastChunkHandling, LAST_CHUNK, "loose");
      // Into bytes sized first: an array of numbers held 8 to 16 bytes of
      // heap per byte decoded.
      const out = new Uint8ArrayCtor(base64Bound(input));
      return made(fromBase64Text(input, 0, alphabet, lastChunk, out, MAX), out);
    },
    fromHex(string: string): Uint8Array {
      const input = text(string);
      const out = new Uint8ArrayCtor(input.length % 2 ? 0 : input.length / 2);
      return made(fromHexText(input, out, MAX), out);
    },
    toBase64(this: Uint8Array, ...rest: (object | undefined)[]): string {
      checked(this, "toBase64", false);
      const opts = optionsOf(rest[0]);
      const alphabet = alphabetOf(opts);
      const omitPadding = !!opts.omitPadding;
      return encode(this, inBounds(this, "toBase64"), alphabet, omitPadding);
    },
    toHex(this: Uint8Array): string {
      checked(this, "toHex", false);
      return encodeHex(this, inBounds(this, "toHex"));
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
      const decoded = fromBase64Text(input, 0, alphabet, lastChunk, this, room);
      // When it stops early, V8 reads the next chunk still: an error there
      // is thrown, and white space alone up to the end counts as read.
      const from = decoded.read;
      if (room > 0 && decoded.error === null && from < input.length) {
        const scratch = new Uint8ArrayCtor(3);
        const next = fromBase64Text(
          input,
          from,
          alphabet,
          lastChunk,
          scratch,
          3,
        );
        decoded.error = next.error;
        if (next.written === 0 && next.read === input.length - from) {
          decoded.read = input.length;
        }
      }
      return written(decoded);
    },
    setFromHex(
      this: Uint8Array,
      string: string,
    ): { read: number; written: number } {
      checked(this, "setFromHex", true);
      const input = text(string);
      const room = inBounds(this, "setFromHex");
      return written(fromHexText(input, this, room));
    },
  };
}
