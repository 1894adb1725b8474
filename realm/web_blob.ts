// This module is browser compatible.

/**
 * `Blob` and `File` for a realm whose engine has no host Web APIs (QuickJS,
 * a `node:vm` context), after the File API as Deno gives it, so that packs
 * that measure text (`new Blob([text]).size`) or test for `File` at load
 * time run as they do on the worker tier. The bytes are copied when a blob
 * is made and stay private; `text()`, `arrayBuffer()` and `bytes()` hand
 * out copies. There is no `stream()`: no realm of this kind has
 * `ReadableStream`. Pure computation: nothing here reaches the host. Runs
 * inside a realm: self-contained, turned into source by
 * `realm/realm_source.ts`, and frozen by the realm's lockdown with every
 * other intrinsic.
 *
 * @module
 */

/** What {@linkcode createWebBlob} makes. */
export interface WebBlob {
  Blob: typeof Blob;
  File: typeof File;
  /**
   * For `structuredClone`: a new `Blob` (or `File`) with the bytes, type,
   * name and last modified time of `value`, or `undefined` when `value` is
   * not one of this realm's blobs.
   */
  cloneBlob(value: object): Blob | undefined;
}

/**
 * Makes the realm's `Blob` and `File`. Self-contained: it captures the
 * intrinsics it uses when it is called. Errors carry Deno's messages.
 *
 * @param TextEncoderCtor The realm's `TextEncoder`, for string parts.
 * @param TextDecoderCtor The realm's `TextDecoder`, for `text()`.
 * @returns The two constructors and the clone hook.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createWebBlob } from "./web_blob.ts";
 *
 * const { Blob, File } = createWebBlob(TextEncoder, TextDecoder);
 * const blob = new Blob(["h\u00e9", Uint8Array.of(33)], { type: "Text/Plain" });
 * assert.deepEqual([blob.size, blob.type], [4, "text/plain"]);
 * assert.equal(await blob.slice(1, -1).text(), "\u00e9");
 * const file = new File([blob], "a.txt", { lastModified: 7 });
 * assert.deepEqual([file.name, file.lastModified, file.size], ["a.txt", 7, 4]);
 * ```
 */
export function createWebBlob(
  TextEncoderCtor: typeof TextEncoder,
  TextDecoderCtor: typeof TextDecoder,
): WebBlob {
  "use strict";
  const { defineProperty, getOwnPropertyDescriptor, getPrototypeOf } = Object;
  const { apply, ownKeys } = Reflect;
  const isPrototypeOf = Object.prototype.isPrototypeOf;
  const TypeErrorCtor = TypeError;
  const StringCtor = String;
  const Uint8ArrayCtor = Uint8Array;
  const WeakMapCtor = WeakMap;
  const BigIntCtor = BigInt;
  const NumberCtor = Number;
  const asIntN = BigInt.asIntN;
  const { max, min, floor, round, trunc } = Math;
  const now = Date.now;
  const isView = ArrayBuffer.isView;
  const iteratorSymbol: typeof Symbol.iterator = Symbol.iterator;
  const resolved = Promise.resolve();
  const then = Promise.prototype.then;
  const arrayPush = Array.prototype.push;
  const uint8Set = Uint8Array.prototype.set;
  const subarray = Uint8Array.prototype.subarray;
  const bufferSlice = ArrayBuffer.prototype.slice;
  const regExpTest = RegExp.prototype.test;
  const stringReplace = String.prototype.replace;
  const PRINTABLE = /^[\x20-\x7e]*$/;
  // Deno's native line endings on Linux: CR LF, CR and LF become LF.
  const LINE_BREAK = /\r\n?/g;
  const encoder = new TextEncoderCtor();
  const encode = encoder.encode;
  const decoder = new TextDecoderCtor();
  const wellFormed = new TextDecoderCtor("utf-8", { ignoreBOM: true });
  const decode = decoder.decode;
  // A view's own properties may shadow these getters: read its slots.
  const getterOf = (proto: object, key: PropertyKey) =>
    getOwnPropertyDescriptor(proto, key)?.get;
  const typedArrayProto = getPrototypeOf(Uint8Array.prototype) as object;
  const typedArrayTag = getterOf(typedArrayProto, Symbol.toStringTag)!;
  const slotGetters = (proto: object) =>
    ["buffer", "byteOffset", "byteLength"].map((key) => getterOf(proto, key)!);
  const typedArraySlots = slotGetters(typedArrayProto);
  const dataViewSlots = slotGetters(DataView.prototype);
  const typedArrayBytes = typedArraySlots[2]!;
  const bufferBytes = getterOf(ArrayBuffer.prototype, "byteLength")!;
  const sharedBytes = getterOf(
    (globalThis as { SharedArrayBuffer?: { prototype: object } })
      .SharedArrayBuffer?.prototype ?? {},
    "byteLength",
  );

  // Internal state lives in weak maps rather than private fields, so no
  // bundler rewrites it into helpers outside this self-contained function.
  const blobs = new WeakMapCtor<object, { bytes: Uint8Array; type: string }>();
  const files = new WeakMapCtor<
    object,
    { name: string; lastModified: number }
  >();
  function stateOf<T>(map: WeakMap<object, T>, value: unknown): T {
    const state = map.get(value as object);
    if (state === undefined) throw new TypeErrorCtor("Illegal invocation");
    return state;
  }

  function isObject(value: unknown): value is Record<PropertyKey, unknown> {
    return (typeof value === "object" && value !== null) ||
      typeof value === "function";
  }

  function hasSlot(getter: (() => unknown) | undefined, value: unknown) {
    if (getter === undefined) return false;
    try {
      apply(getter, value, []);
      return true;
    } catch {
      return false;
    }
  }

  /** Web IDL's DOMString, with the words V8 uses for a symbol. */
  function toText(value: unknown): string {
    if (typeof value === "symbol") {
      throw new TypeErrorCtor("Cannot convert a Symbol value to a string");
    }
    return `${value}`;
  }

  /** Web IDL's ToNumber, with the words V8 uses. */
  function toNumber(value: unknown): number {
    const kind = typeof value === "bigint" ? "BigInt" : "Symbol";
    if (typeof value === "bigint" || typeof value === "symbol") {
      throw new TypeErrorCtor(`Cannot convert a ${kind} value to a number`);
    }
    return +(value as number);
  }

  /** Web IDL's `[Clamp] long long`, as Deno bounds it (safe integers). */
  function clampLongLong(value: unknown): number {
    const x = toNumber(value);
    if (x !== x) return 0;
    const bounded = min(max(x, -9007199254740991), 9007199254740991);
    const rounded = bounded - floor(bounded) === 0.5
      ? 2 * round(bounded / 2)
      : round(bounded);
    return rounded === 0 ? 0 : rounded;
  }

  /** Web IDL's `long long`: wrapped into 64 bits. */
  function longLong(value: unknown): number {
    const x = trunc(toNumber(value));
    if (x !== x || x === 0 || x === Infinity || x === -Infinity) return 0;
    if (x >= -9223372036854775808 && x < 9223372036854775808) return x;
    return NumberCtor(asIntN(64, BigIntCtor(x)));
  }

  /** An index from the end when negative, clamped to the blob. */
  function relative(at: number, size: number): number {
    return at < 0 ? max(size + at, 0) : min(at, size);
  }

  /** A type as the File API keeps it: lowercased printable ASCII, or "". */
  function normalizeType(type: string): string {
    return apply(regExpTest, PRINTABLE, [type]) ? type.toLowerCase() : "";
  }

  type Part = string | Uint8Array | ArrayBuffer | ArrayBufferView;

  /** A view's bytes, read from its slots: the buffer first, as Deno. */
  function viewSlot(view: ArrayBufferView, slot: number): unknown {
    const typed = apply(typedArrayTag, view, []) !== undefined;
    return apply((typed ? typedArraySlots : dataViewSlots)[slot]!, view, []);
  }

  /** A BlobPart, converted as Deno's Web IDL union converts one. */
  function toPart(value: unknown, context: string): Part {
    if (typeof value === "object" && value !== null) {
      if (apply(isPrototypeOf, BlobClass.prototype, [value])) {
        const state = blobs.get(value);
        if (state === undefined) {
          throw new TypeErrorCtor(`${context} is not of type Blob`);
        }
        return state.bytes;
      }
      if (hasSlot(bufferBytes, value)) return value as ArrayBuffer;
      if (hasSlot(sharedBytes, value)) {
        throw new TypeErrorCtor(`${context} is not an ArrayBuffer`);
      }
      if (isView(value)) {
        if (hasSlot(sharedBytes, viewSlot(value, 0))) {
          throw new TypeErrorCtor(
            `${context} is a view on a SharedArrayBuffer, which is not allowed`,
          );
        }
        return value;
      }
    }
    return toText(value);
  }

  /** Web IDL's `sequence<BlobPart>`, read as Deno's converter reads it. */
  function toParts(value: unknown, prefix: string): Part[] {
    const refuse = () =>
      new TypeErrorCtor(
        `${prefix}: Argument 1 can not be converted to sequence.`,
      );
    const method = isObject(value) ? value[iteratorSymbol] : undefined;
    if (typeof method !== "function") throw refuse();
    const iterator: unknown = apply(method, value, []);
    const parts: Part[] = [];
    for (;;) {
      const next = isObject(iterator) ? iterator.next : undefined;
      if (typeof next !== "function") throw refuse();
      const step = apply(next, iterator, []) as IteratorResult<unknown>;
      if (step === undefined) throw refuse();
      if (!isObject(step)) {
        throw new TypeErrorCtor(`Iterator result ${step} is not an object`);
      }
      if (step.done === true) return parts;
      const context = `${prefix}: Argument 1, index ${parts.length}`;
      apply(arrayPush, parts, [toPart(step.value, context)]);
    }
  }

  /**
   * A BlobPropertyBag (argument 2) or FilePropertyBag (argument 3), its
   * members read in Web IDL's order.
   */
  function toOptions(value: unknown, prefix: string, argument: number) {
    if (value !== undefined && value !== null && !isObject(value)) {
      throw new TypeErrorCtor(
        `${prefix}: Argument ${argument} can not be converted to a dictionary`,
      );
    }
    const bag = (value ?? {}) as Record<string, unknown>;
    const options: { type: string; native: boolean; lastModified?: number } = {
      type: "",
      native: false,
    };
    const endings = bag.endings;
    if (endings !== undefined) {
      const text = StringCtor(endings);
      if (text !== "transparent" && text !== "native") {
        throw new TypeErrorCtor(
          `${prefix}: The provided value '${text}' is not a valid enum value of type EndingType`,
        );
      }
      options.native = text === "native";
    }
    const lastModified = argument === 3 ? bag.lastModified : undefined;
    if (lastModified !== undefined) {
      options.lastModified = longLong(lastModified);
    }
    const type = bag.type;
    if (type !== undefined) options.type = normalizeType(toText(type));
    return options;
  }

  /** The bytes of the parts, copied into one new array. */
  function join(parts: Part[], native: boolean): Uint8Array {
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i]!;
      let chunk: Uint8Array;
      if (typeof part === "string") {
        const text = native
          ? apply(stringReplace, part, [LINE_BREAK, "\n"])
          : part;
        chunk = apply(encode, encoder, [text]);
      } else if (!isView(part)) {
        // Deno copies the buffer, so a detached one fails as its copy does.
        const length: number = apply(bufferBytes, part, []);
        chunk = length === 0
          ? new Uint8ArrayCtor(apply(bufferSlice, part, [0]) as ArrayBuffer)
          : new Uint8ArrayCtor(part as ArrayBuffer, 0, length);
      } else {
        chunk = new Uint8ArrayCtor(
          viewSlot(part, 0) as ArrayBuffer,
          viewSlot(part, 1) as number,
          viewSlot(part, 2) as number,
        );
      }
      apply(arrayPush, chunks, [chunk]);
      size += apply(typedArrayBytes, chunk, []) as number;
    }
    const bytes = new Uint8ArrayCtor(size);
    for (let i = 0, at = 0; i < chunks.length; i++) {
      apply(uint8Set, bytes, [chunks[i], at]);
      at += apply(typedArrayBytes, chunks[i], []) as number;
    }
    return bytes;
  }

  /** The bytes of `blob`, in a later job, as Deno's reads resolve. */
  function later<T>(blob: unknown, read: (bytes: Uint8Array) => T): Promise<T> {
    return apply(then, resolved, [() => read(stateOf(blobs, blob).bytes)]);
  }

  // A token only this code holds: given it, the constructor makes a blob
  // without state, which File, slice() and cloning then give their own.
  const STATELESS = {};
  const BlobClass = class Blob {
    constructor(blobParts: unknown = undefined, options: unknown = undefined) {
      if (blobParts === STATELESS) return;
      const prefix = "Failed to construct 'Blob'";
      const parts = blobParts === undefined ? [] : toParts(blobParts, prefix);
      const { type, native } = toOptions(options, prefix, 2);
      blobs.set(this, { bytes: join(parts, native), type });
    }
    get size(): number {
      return apply(typedArrayBytes, stateOf(blobs, this).bytes, []);
    }
    get type(): string {
      return stateOf(blobs, this).type;
    }
    slice(
      start: unknown = undefined,
      end: unknown = undefined,
      contentType: unknown = undefined,
    ): Blob {
      const { bytes } = stateOf(blobs, this);
      const from = start === undefined ? undefined : clampLongLong(start);
      const to = end === undefined ? undefined : clampLongLong(end);
      const type = contentType === undefined ? "" : toText(contentType);
      const size: number = apply(typedArrayBytes, bytes, []);
      const first = from === undefined ? 0 : relative(from, size);
      const last = to === undefined ? size : relative(to, size);
      const blob = new BlobClass(STATELESS);
      const part = apply(subarray, bytes, [first, max(last, first)]);
      blobs.set(blob, { bytes: part, type: normalizeType(type) });
      return blob as unknown as Blob;
    }
    text(): Promise<string> {
      return later(this, (bytes) => apply(decode, decoder, [bytes]));
    }
    arrayBuffer(): Promise<ArrayBuffer> {
      return later(
        this,
        (bytes) => apply(typedArraySlots[0]!, new Uint8ArrayCtor(bytes), []),
      );
    }
    bytes(): Promise<Uint8Array> {
      return later(this, (bytes) => new Uint8ArrayCtor(bytes));
    }
  };

  const FileClass = class File extends BlobClass {
    constructor(
      fileBits: unknown,
      fileName: unknown,
      options: unknown = undefined,
    ) {
      const prefix = "Failed to construct 'File'";
      if (arguments.length < 2) {
        throw new TypeErrorCtor(
          `${prefix}: 2 arguments required, but only ${arguments.length} present`,
        );
      }
      const parts = toParts(fileBits, prefix);
      const name: string = apply(decode, wellFormed, [
        apply(encode, encoder, [toText(fileName)]),
      ]);
      const { type, native, lastModified } = toOptions(options, prefix, 3);
      const bytes = join(parts, native);
      super(STATELESS);
      blobs.set(this, { bytes, type });
      files.set(this, { name, lastModified: lastModified ?? now() });
    }
    get name(): string {
      return stateOf(files, this).name;
    }
    get lastModified(): number {
      return stateOf(files, this).lastModified;
    }
  };

  // Members as Web IDL lays them out: enumerable, with the platform's tags.
  // Names come from literals: a minifier renames the classes themselves.
  for (
    const [ctor, name] of [[BlobClass, "Blob"], [FileClass, "File"]] as const
  ) {
    defineProperty(ctor, "name", { value: name });
    const proto = ctor.prototype;
    for (const key of ownKeys(proto)) {
      if (key === "constructor") continue;
      const descriptor = getOwnPropertyDescriptor(proto, key)!;
      descriptor.enumerable = true;
      defineProperty(proto, key, descriptor);
    }
    defineProperty(proto, Symbol.toStringTag, {
      value: name,
      configurable: true,
    });
  }

  function cloneBlob(value: object): Blob | undefined {
    const state = blobs.get(value);
    if (state === undefined) return undefined;
    const file = files.get(value);
    const copy = file === undefined
      ? new BlobClass(STATELESS)
      : new FileClass([], file.name, { lastModified: file.lastModified });
    blobs.set(copy, state);
    return copy as unknown as Blob;
  }

  return {
    Blob: BlobClass as unknown as typeof Blob,
    File: FileClass as unknown as typeof File,
    cloneBlob,
  };
}
