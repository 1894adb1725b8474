// This module is browser compatible.

/**
 * `structuredClone` for a realm whose engine has none (QuickJS, a
 * `node:vm` context): the HTML structured clone algorithm as Deno gives it
 * through V8's serializer, so a guest that deep-copies with
 * `structuredClone(item)` gets the answer it gets on the worker tier.
 * Pure computation: nothing here reaches the host. Runs inside a realm:
 * self-contained, turned into source by `realm/realm_source.ts`, and frozen
 * by the realm's lockdown with every other intrinsic.
 *
 * @module
 */

import type { WebBlob } from "./web_blob.ts";

/** The options `structuredClone` takes, as Web IDL's dictionary. */
export interface CloneOptions {
  /** Array buffers whose bytes move to the clone; they are detached. */
  transfer?: Iterable<unknown>;
}

/** The realm's `structuredClone`. */
export type StructuredClone = <T>(value: T, options?: CloneOptions) => T;

/**
 * Makes the realm's `structuredClone`. Self-contained: it captures the
 * intrinsics it uses when it is called.
 *
 * It clones what Deno clones, in the order Deno reads it: primitives,
 * boxed primitives, `Date`, `RegExp`, array buffers (resizable too), typed
 * arrays and `DataView` (views of one buffer share one cloned buffer),
 * `Map`, `Set`, arrays (holes and extra properties kept), errors and plain
 * objects (own enumerable string keys, getters called in order), and the
 * realm's `Blob` and `File` when `blobs` is given; cycles and shared
 * references keep their shape. It refuses functions, symbols, weak
 * collections, promises, iterators and `arguments` with a
 * `DataCloneError`. `transfer` detaches the array buffers it lists.
 *
 * @param DOMExceptionCtor The realm's `DOMException`, for the errors Deno
 * gives and to clone its instances.
 * @param blobs The realm's `Blob` and its clone hook, to clone its blobs.
 * @param platformPrototypes The prototypes of the realm's platform objects
 * that the HTML standard does not let a clone copy (`URL`,
 * `URLSearchParams`): an object that inherits from one is refused with
 * Deno's `DataCloneError`, where it would be cloned as a plain object.
 * @returns The realm's `structuredClone`.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createStructuredClone } from "./web_clone.ts";
 *
 * const clone = createStructuredClone(DOMException);
 * const item = { when: new Date(0), tags: new Set(["a"]) };
 * const copy = clone({ item, again: item });
 * assert.equal(copy.again, copy.item);
 * assert.deepEqual(copy.item, item);
 * assert.throws(() => clone(() => 1), { name: "DataCloneError" });
 * ```
 */
export function createStructuredClone(
  DOMExceptionCtor: new (message?: string, name?: string) => Error,
  blobs?: Pick<WebBlob, "Blob" | "cloneBlob">,
  platformPrototypes?: readonly object[],
): StructuredClone {
  "use strict";
  const {
    create,
    defineProperty,
    getOwnPropertyDescriptor,
    getPrototypeOf,
    hasOwn,
    keys: ownKeys,
  } = Object;
  const { apply } = Reflect;
  const isArray = Array.isArray;
  const isView = ArrayBuffer.isView;
  const G = globalThis as unknown as Record<string, unknown>;
  const isError = (Error as { isError?: (value: unknown) => boolean })
    .isError;
  const MapCtor = Map;
  const ArrayCtor = Array;
  const ArrayBufferCtor = ArrayBuffer;
  const Uint8ArrayCtor = Uint8Array;
  const DataViewCtor = DataView;
  const DateCtor = Date;
  const RegExpCtor = RegExp;
  const ObjectCtor = Object;
  const TypeErrorCtor = TypeError;
  const typeErrorProto = TypeError.prototype;
  const isPrototypeOf = Object.prototype.isPrototypeOf;
  const objectToString = Object.prototype.toString;
  const functionToString = Function.prototype.toString;
  const iteratorSymbol = Symbol.iterator;
  const toStringTag = Symbol.toStringTag;
  const symbolDescription = getOwnPropertyDescriptor(
    Symbol.prototype,
    "description",
  )!.get!;
  const stringSlice = String.prototype.slice;
  const stringIndexOf = String.prototype.indexOf;
  const mapGet = Map.prototype.get;
  const mapSet = Map.prototype.set;
  const mapHas = Map.prototype.has;
  const mapForEach = Map.prototype.forEach;
  const mapClear = Map.prototype.clear;
  const setAdd = Set.prototype.add;
  const setForEach = Set.prototype.forEach;
  const arrayPush = Array.prototype.push;
  const uint8Set = Uint8Array.prototype.set;
  const getterOf = (proto: object, key: PropertyKey) =>
    getOwnPropertyDescriptor(proto, key)?.get;
  const typedArrayProto = getPrototypeOf(Uint8Array.prototype) as object;
  const typedArrayTag = getterOf(typedArrayProto, toStringTag)!;
  const typedArrayBuffer = getterOf(typedArrayProto, "buffer")!;
  const typedArrayOffset = getterOf(typedArrayProto, "byteOffset")!;
  const typedArrayBytes = getterOf(typedArrayProto, "byteLength")!;
  const dataViewBuffer = getterOf(DataView.prototype, "buffer")!;
  const dataViewOffset = getterOf(DataView.prototype, "byteOffset")!;
  const dataViewBytes = getterOf(DataView.prototype, "byteLength")!;
  const bufferProto = ArrayBuffer.prototype;
  const bufferBytes = getterOf(bufferProto, "byteLength")!;
  const bufferDetached = getterOf(bufferProto, "detached");
  const bufferResizable = getterOf(bufferProto, "resizable");
  const bufferMaxBytes = getterOf(bufferProto, "maxByteLength");
  const bufferResize = bufferProto.resize as
    | ((this: ArrayBuffer, length: number) => void)
    | undefined;
  const bufferTransfer = (bufferProto as { transfer?: () => ArrayBuffer })
    .transfer;
  const dateTime = Date.prototype.getTime;
  const regExpSource = getterOf(RegExp.prototype, "source")!;
  const REGEXP_FLAGS: [string, string][] = [
    ["hasIndices", "d"],
    ["global", "g"],
    ["ignoreCase", "i"],
    ["multiline", "m"],
    ["dotAll", "s"],
    ["unicode", "u"],
    ["unicodeSets", "v"],
    ["sticky", "y"],
  ];
  const regExpFlags: [() => unknown, string][] = [];
  for (const [key, flag] of REGEXP_FLAGS) {
    const getter = getterOf(RegExp.prototype, key);
    if (getter !== undefined) regExpFlags[regExpFlags.length] = [getter, flag];
  }
  const errorCtors: Record<string, ErrorConstructor> = {
    __proto__: null,
    Error,
    EvalError,
    RangeError,
    ReferenceError,
    SyntaxError,
    TypeError,
    URIError,
  } as unknown as Record<string, ErrorConstructor>;
  const domExceptionName = getterOf(DOMExceptionCtor.prototype, "name");
  const ownGlobal = globalThis;

  // What each intrinsic prototype makes: the first one on an object's
  // chain says what to check the object's slots for.
  const MAP = 1, SET = 2, DATE = 3, REGEXP = 4, BOOLEAN = 5, NUMBER = 6;
  const STRING = 7, BIGINT = 8, BUFFER = 9, SHARED = 10, ERROR = 11;
  const DOM_EXCEPTION = 12, UNCLONEABLE = 13, WEAK_MAP = 14, WEAK_SET = 15;
  const WEAK_REF = 16, REGISTRY = 17, SYMBOL = 18, BLOB = 20, PLATFORM = 21;
  const SetCtor = Set;
  const sharedProto = (G.SharedArrayBuffer as { prototype?: object })
    ?.prototype;
  const sharedBytes = sharedProto === undefined
    ? undefined
    : getterOf(sharedProto, "byteLength");
  const weakMapHas = WeakMap.prototype.has;
  const weakSetHas = WeakSet.prototype.has;
  const weakRefDeref = (G.WeakRef as { prototype?: { deref?: () => unknown } })
    ?.prototype?.deref;
  const registryUnregister = (G.FinalizationRegistry as {
    prototype?: { unregister?: (token: object) => boolean };
  })?.prototype?.unregister;
  const PRIMITIVE_VALUE_OF: Record<number, () => unknown> = {
    [BOOLEAN]: Boolean.prototype.valueOf,
    [NUMBER]: Number.prototype.valueOf,
    [STRING]: String.prototype.valueOf,
    [BIGINT]: BigInt.prototype.valueOf,
    [SYMBOL]: Symbol.prototype.valueOf,
  };

  function isMap(value: object): boolean {
    return hasSlot(mapSize, value);
  }
  function isSet(value: object): boolean {
    return hasSlot(setSize, value);
  }
  const mapSize = getterOf(Map.prototype, "size")!;
  const setSize = getterOf(Set.prototype, "size")!;

  function isModuleNamespace(value: object): boolean {
    const tag = getOwnPropertyDescriptor(value, toStringTag);
    return tag !== undefined && tag.value === "Module" && !tag.writable &&
      !tag.configurable;
  }

  const kinds = new MapCtor<object, number>();
  const kindOf = (name: string, kind: number) => {
    const ctor = G[name] as { prototype?: object } | undefined;
    const proto = ctor?.prototype;
    if (typeof ctor === "function" && proto !== undefined) {
      apply(mapSet, kinds, [proto, kind]);
    }
  };
  kindOf("Map", MAP);
  kindOf("Set", SET);
  kindOf("Date", DATE);
  kindOf("RegExp", REGEXP);
  kindOf("Boolean", BOOLEAN);
  kindOf("Number", NUMBER);
  kindOf("String", STRING);
  kindOf("BigInt", BIGINT);
  kindOf("Symbol", SYMBOL);
  kindOf("ArrayBuffer", BUFFER);
  kindOf("SharedArrayBuffer", SHARED);
  kindOf("WeakMap", WEAK_MAP);
  kindOf("WeakSet", WEAK_SET);
  kindOf("WeakRef", WEAK_REF);
  kindOf("FinalizationRegistry", REGISTRY);
  kindOf("Promise", UNCLONEABLE);
  for (const name of ["AggregateError", "SuppressedError"]) {
    kindOf(name, ERROR);
  }
  for (const name in errorCtors) kindOf(name, ERROR);
  for (const proto of platformPrototypes ?? []) {
    apply(mapSet, kinds, [proto, PLATFORM]);
  }
  apply(mapSet, kinds, [DOMExceptionCtor.prototype, DOM_EXCEPTION]);
  if (blobs !== undefined) apply(mapSet, kinds, [blobs.Blob.prototype, BLOB]);
  // Iterators and generators have no slot a read could check without
  // advancing them: their prototypes alone refuse them, as V8 does.
  const iteratorSources: (() => unknown)[] = [
    () => [].values(),
    () => new MapCtor().entries(),
    () => new Set().values(),
    () => ""[Symbol.iterator](),
    () => (/a/[Symbol.matchAll] as (text: string) => unknown).call(/a/g, ""),
    () => (function* () {})(),
    () => (async function* () {})(),
    () => {
      const from = (G.Iterator as { from?: (it: unknown) => unknown })?.from;
      return from === undefined ? undefined : from({ next() {} });
    },
    () => {
      const it = [].values() as {
        map?: (fn: unknown) => unknown;
      };
      return it.map === undefined ? undefined : it.map(() => 0);
    },
  ];
  for (const make of iteratorSources) {
    let made: unknown;
    try {
      made = make();
    } catch {
      continue;
    }
    if (typeof made !== "object" || made === null) continue;
    let proto = getPrototypeOf(made) as object | null;
    // A generator's own prototype object sits above the shared one.
    if (proto !== null && getPrototypeOf(proto) !== null) {
      const above = getPrototypeOf(proto) as object;
      if (!hasOwn(proto, "next") && hasOwn(above, "next")) proto = above;
    }
    if (proto !== null) apply(mapSet, kinds, [proto, UNCLONEABLE]);
  }

  // The intrinsic prototypes' own constructor and toString, as they are
  // now: a realm's lockdown later turns them into accessors, and V8's
  // messages read data properties only.
  const snapshots = new MapCtor<object, Record<PropertyKey, unknown>>();
  const snapshot = (proto: unknown) => {
    if ((typeof proto !== "object" && typeof proto !== "function") || !proto) {
      return;
    }
    const record = create(null) as Record<PropertyKey, unknown>;
    for (const key of ["constructor", "toString", toStringTag] as const) {
      const descriptor = getOwnPropertyDescriptor(proto, key);
      if (descriptor !== undefined) {
        record[key as string] = "value" in descriptor
          ? descriptor.value
          : undefined;
      }
    }
    apply(mapSet, snapshots, [proto, record]);
  };
  apply(mapForEach, kinds, [(_kind: number, proto: object) => {
    snapshot(proto);
    snapshot(getPrototypeOf(proto));
  }]);
  snapshot(Object.prototype);
  snapshot(Array.prototype);
  snapshot(Function.prototype);
  snapshot(typedArrayProto);
  snapshot(DataView.prototype);

  /** A data property's value found on `value`'s chain, as V8 reads one. */
  function dataProperty(value: object, key: PropertyKey): unknown {
    let object: object | null = value;
    while (object !== null) {
      const record = apply(mapGet, snapshots, [object]) as
        | Record<PropertyKey, unknown>
        | undefined;
      if (record !== undefined && hasOwn(record, key)) {
        return record[key as string];
      }
      const descriptor = getOwnPropertyDescriptor(object, key);
      if (descriptor !== undefined) {
        return "value" in descriptor ? descriptor.value : undefined;
      }
      object = getPrototypeOf(object);
    }
    return undefined;
  }

  /** Whether `body` is `[native code] }` with any white space around. */
  function isNativeBody(body: string): boolean {
    let compact = "";
    for (let i = 0; i < body.length; i++) {
      const char = body[i]!;
      if (char !== " " && char !== "\n" && char !== "\t") compact += char;
      if (compact.length > 13) return false;
    }
    return compact === "[nativecode]}";
  }

  /** `value` as V8's messages show it, without running guest code. */
  function describe(value: unknown): string {
    if (typeof value === "function") {
      let text: string = apply(functionToString, value, []);
      // QuickJS writes a built-in's body over three lines; V8 on one.
      const open = apply(stringIndexOf, text, ["{"]);
      if (open >= 0 && isNativeBody(apply(stringSlice, text, [open + 1]))) {
        const head: string = apply(stringSlice, text, [0, open]);
        text = apply(stringIndexOf, head, ["function bound "]) === 0
          ? "function () { [native code] }"
          : head + "{ [native code] }";
      }
      if (text.length > 128) {
        text = apply(stringSlice, text, [0, 111]) + "...<omitted>..." +
          apply(stringSlice, text, [text.length - 2]);
      }
      return text;
    }
    if (typeof value === "symbol") {
      const description = apply(symbolDescription, value, []);
      return `Symbol(${description === undefined ? "" : description})`;
    }
    const object = value as object;
    if (dataProperty(object, "toString") === objectToString) {
      const ctor = dataProperty(object, "constructor");
      if (typeof ctor === "function") {
        const name = getOwnPropertyDescriptor(ctor, "name")?.value;
        if (typeof name === "string" && name !== "") return `#<${name}>`;
      }
    }
    const tag = dataProperty(object, toStringTag);
    if (typeof tag === "string") return `[object ${tag}]`;
    return `[object ${isArray(object) ? "Array" : "Object"}]`;
  }

  function refuse(value: unknown): never {
    throw new DOMExceptionCtor(
      `${describe(value)} could not be cloned.`,
      "DataCloneError",
    );
  }

  function refuseDetached(): never {
    throw new DOMExceptionCtor(
      "An ArrayBuffer is detached and could not be cloned.",
      "DataCloneError",
    );
  }

  /** Whether `fn` accepts `value` as its receiver. */
  function hasSlot(
    fn: ((...args: never[]) => unknown) | undefined,
    value: object,
    args: unknown[] = [],
  ): boolean {
    if (fn === undefined) return false;
    try {
      apply(fn, value, args);
      return true;
    } catch {
      return false;
    }
  }

  function isDetached(buffer: ArrayBuffer): boolean {
    if (bufferDetached !== undefined) return apply(bufferDetached, buffer, []);
    // Without the getter, a detached buffer is one that no view accepts.
    if (apply(bufferBytes, buffer, []) !== 0) return false;
    try {
      new Uint8ArrayCtor(buffer);
      return false;
    } catch {
      return true;
    }
  }

  function isResizable(buffer: ArrayBuffer): boolean {
    return bufferResizable !== undefined &&
      apply(bufferResizable, buffer, []) === true;
  }

  /**
   * A copy of `buffer`'s bytes, resizable when it is. Not `slice()`: it
   * asks the buffer's `constructor` for a species, which guest code may
   * answer with a buffer it keeps.
   */
  function copyBuffer(buffer: ArrayBuffer): ArrayBuffer {
    if (isDetached(buffer)) refuseDetached();
    const length: number = apply(bufferBytes, buffer, []);
    const copy = isResizable(buffer)
      ? new ArrayBufferCtor(length, {
        maxByteLength: apply(bufferMaxBytes!, buffer, []),
      } as never)
      : new ArrayBufferCtor(length);
    apply(uint8Set, new Uint8ArrayCtor(copy), [new Uint8ArrayCtor(buffer)]);
    return copy;
  }

  /**
   * Whether a view that ends where its resizable buffer ends follows the
   * buffer's length: the buffer grows (or shrinks) by one element and
   * back, its bytes restored, and the view's byte length tells.
   */
  function tracksLength(
    buffer: ArrayBuffer,
    bytesOf: () => number,
    elementSize: number,
  ): boolean {
    const length: number = apply(bufferBytes, buffer, []);
    const before = bytesOf();
    if (length + elementSize <= apply(bufferMaxBytes!, buffer, [])) {
      apply(bufferResize!, buffer, [length + elementSize]);
      const grown = bytesOf();
      apply(bufferResize!, buffer, [length]);
      return grown !== before;
    }
    if (length < elementSize) return false;
    // Copied into an array of its own, as copyBuffer() copies.
    const tail = new Uint8ArrayCtor(elementSize);
    apply(uint8Set, tail, [
      new Uint8ArrayCtor(buffer, length - elementSize, elementSize),
    ]);
    apply(bufferResize!, buffer, [length - elementSize]);
    let shrunk: number;
    try {
      shrunk = bytesOf();
    } catch {
      shrunk = -1;
    }
    apply(bufferResize!, buffer, [length]);
    apply(uint8Set, new Uint8ArrayCtor(buffer), [tail, length - elementSize]);
    return shrunk === before - elementSize;
  }

  /** One object whose contents are still being copied. */
  interface Frame {
    source: object;
    target: object;
    /** Own enumerable keys, or a Map's or Set's entries, key then value. */
    items: unknown[];
    next: number;
    kind: number;
    pendingKey?: unknown;
  }

  // One descriptor for every property a clone defines, its value let go
  // even when the definition throws (a stack that ran out), so it holds no
  // guest object past the call.
  const property = create(null) as PropertyDescriptor;
  property.writable = true;
  property.enumerable = true;
  property.configurable = true;
  const hidden = create(null) as PropertyDescriptor;
  hidden.writable = true;
  hidden.enumerable = false;
  hidden.configurable = true;

  function defineData(target: object, key: string, value: unknown): void {
    property.value = value;
    try {
      defineProperty(target, key, property);
    } finally {
      property.value = undefined;
    }
  }

  function defineHidden(target: object, key: string, value: unknown): void {
    hidden.value = value;
    try {
      defineProperty(target, key, hidden);
    } finally {
      hidden.value = undefined;
    }
  }

  const PLAIN = 0, ARRAY = 19;

  function cloneGraph(root: unknown): unknown {
    const memory = new MapCtor<object, unknown>();
    const frames: Frame[] = [];

    /** The clone of `value`: made now, its contents copied by a frame. */
    function convert(value: unknown): unknown {
      if (typeof value === "symbol" || typeof value === "function") {
        refuse(value);
      }
      if (typeof value !== "object" || value === null) return value;
      if (apply(mapHas, memory, [value])) {
        return apply(mapGet, memory, [value]);
      }
      const made = make(value);
      apply(mapSet, memory, [value, made]);
      return made;
    }

    function push(frame: Frame): void {
      frames[frames.length] = frame;
    }

    function make(value: object): unknown {
      if (isArray(value)) {
        const length = (value as unknown[]).length;
        const copy = new ArrayCtor(length);
        apply(mapSet, memory, [value, copy]);
        push({
          source: value,
          target: copy,
          items: ownKeys(value),
          next: 0,
          kind: ARRAY,
        });
        return copy;
      }
      if (isView(value)) return makeView(value);
      let kind = PLAIN;
      let proto = getPrototypeOf(value) as object | null;
      while (proto !== null) {
        const found = apply(mapGet, kinds, [proto]) as number | undefined;
        if (found !== undefined) {
          kind = found;
          break;
        }
        proto = getPrototypeOf(proto);
      }
      if (kind === PLAIN && isError !== undefined && isError(value)) {
        kind = ERROR;
      }
      switch (kind) {
        case MAP:
        case SET:
          if (kind === MAP ? isMap(value) : isSet(value)) {
            return makeCollection(value, kind);
          }
          break;
        case DATE:
          if (hasSlot(dateTime, value)) {
            return new DateCtor(apply(dateTime, value, []) as number);
          }
          break;
        case REGEXP:
          if (hasSlot(regExpSource, value)) {
            let flags = "";
            for (let i = 0; i < regExpFlags.length; i++) {
              if (apply(regExpFlags[i]![0], value, [])) {
                flags += regExpFlags[i]![1];
              }
            }
            return new RegExpCtor(
              apply(regExpSource, value, []) as string,
              flags,
            );
          }
          break;
        case BOOLEAN:
        case NUMBER:
        case STRING:
        case BIGINT: {
          const valueOf = PRIMITIVE_VALUE_OF[kind]!;
          if (hasSlot(valueOf, value)) {
            return ObjectCtor(apply(valueOf, value, []));
          }
          break;
        }
        case SYMBOL:
          if (hasSlot(PRIMITIVE_VALUE_OF[SYMBOL], value)) refuse(value);
          break;
        case BUFFER:
          if (hasSlot(bufferBytes, value)) {
            return copyBuffer(value as ArrayBuffer);
          }
          break;
        case SHARED:
          // One memory, as Deno's clone shares it: the realm cannot make a
          // second object over it, so the clone is the same object.
          if (hasSlot(sharedBytes, value)) return value;
          break;
        case ERROR:
          if (isError === undefined || isError(value)) {
            return makeError(value);
          }
          break;
        case DOM_EXCEPTION:
          if (hasSlot(domExceptionName, value)) {
            const message = getOwnPropertyDescriptor(value, "message");
            return new DOMExceptionCtor(
              message !== undefined && "value" in message
                ? `${message.value}`
                : "",
              apply(domExceptionName!, value, []) as string,
            );
          }
          if (isError !== undefined && isError(value)) return makeError(value);
          break;
        case WEAK_MAP:
          if (hasSlot(weakMapHas, value, [{}])) refuse(value);
          break;
        case WEAK_SET:
          if (hasSlot(weakSetHas, value, [{}])) refuse(value);
          break;
        case WEAK_REF:
          if (hasSlot(weakRefDeref, value)) refuse(value);
          break;
        case REGISTRY:
          if (hasSlot(registryUnregister, value, [{}])) refuse(value);
          break;
        case BLOB: {
          const copy = blobs!.cloneBlob(value);
          if (copy !== undefined) return copy;
          // Deno's serializer finds no parts on an object that only
          // inherits from Blob.prototype, and says so in V8's words.
          throw new DOMExceptionCtor(
            "Cannot read properties of undefined (reading 'length')",
            "DataCloneError",
          );
        }
        case PLATFORM:
          throw new DOMExceptionCtor(
            "Cannot clone object of unsupported type.",
            "DataCloneError",
          );
        case UNCLONEABLE:
          refuse(value);
      }
      if (
        value === ownGlobal ||
        (hasOwn(value, "callee") &&
          apply(objectToString, value, []) === "[object Arguments]") ||
        (getPrototypeOf(value) === null && isModuleNamespace(value))
      ) {
        refuse(value);
      }
      const copy = {};
      apply(mapSet, memory, [value, copy]);
      push({
        source: value,
        target: copy,
        items: ownKeys(value),
        next: 0,
        kind: PLAIN,
      });
      return copy;
    }

    function makeCollection(value: object, kind: number): object {
      const items: unknown[] = [];
      // The entries as they are now: V8 copies them before it reads any.
      if (kind === MAP) {
        apply(mapForEach, value, [(entry: unknown, key: unknown) => {
          apply(arrayPush, items, [key, entry]);
        }]);
      } else {
        apply(setForEach, value, [(entry: unknown) => {
          apply(arrayPush, items, [entry]);
        }]);
      }
      const copy = kind === MAP ? new MapCtor() : new SetCtor();
      apply(mapSet, memory, [value, copy]);
      push({ source: value, target: copy, items, next: 0, kind });
      return copy;
    }

    function makeError(value: object): Error {
      // V8's order: message's and cause's descriptors, then name, stack.
      const message = getOwnPropertyDescriptor(value, "message");
      const cause = getOwnPropertyDescriptor(value, "cause");
      const name = `${(value as { name?: unknown }).name}`;
      const text = message !== undefined && "value" in message
        ? `${message.value}`
        : undefined;
      const stack = (value as { stack?: unknown }).stack;
      const Ctor = hasOwn(errorCtors, name)
        ? errorCtors[name]!
        : errorCtors.Error!;
      const copy = new Ctor();
      apply(mapSet, memory, [value, copy]);
      defineHidden(
        copy,
        "stack",
        typeof stack === "string" ? stack : undefined,
      );
      if (text !== undefined) defineHidden(copy, "message", text);
      if (cause !== undefined && "value" in cause) {
        defineHidden(copy, "cause", convert(cause.value));
      }
      return copy;
    }

    function makeView(view: ArrayBufferView): ArrayBufferView {
      const tag = apply(typedArrayTag, view, []) as string | undefined;
      const isDataView = tag === undefined;
      const buffer = apply(
        isDataView ? dataViewBuffer : typedArrayBuffer,
        view,
        [],
      ) as ArrayBuffer;
      if (!hasSlot(bufferBytes, buffer)) {
        // A view of shared memory shares it, as its buffer does.
        return view;
      }
      if (isDetached(buffer)) refuseDetached();
      const Ctor = isDataView ? DataViewCtor : G[tag!] as new (
        source: ArrayBuffer | ArrayBufferView,
        offset?: number,
        length?: number,
      ) => ArrayBufferView;
      let offset: number;
      let bytes: number;
      if (isDataView) {
        try {
          offset = apply(dataViewOffset, view, []);
          bytes = apply(dataViewBytes, view, []);
        } catch {
          refuse(view);
        }
      } else {
        offset = apply(typedArrayOffset, view, []);
        bytes = apply(typedArrayBytes, view, []);
        // Out of bounds reads as empty; copying one throws.
        if (bytes === 0 && isResizable(buffer)) {
          try {
            new Ctor(view as never);
          } catch {
            refuse(view);
          }
        }
      }
      const elementSize = isDataView
        ? 1
        : (Ctor as unknown as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT;
      const tracking = isResizable(buffer) &&
        offset + bytes === apply(bufferBytes, buffer, []) &&
        tracksLength(
          buffer,
          () => apply(isDataView ? dataViewBytes : typedArrayBytes, view, []),
          elementSize,
        );
      const copyBuffer = convert(buffer) as ArrayBuffer;
      const copy = tracking ? new Ctor(copyBuffer, offset) : new Ctor(
        copyBuffer,
        offset,
        isDataView ? bytes : bytes / elementSize,
      );
      return copy;
    }

    try {
      const result = convert(root);
      while (frames.length > 0) {
        const frame = frames[frames.length - 1]!;
        const { items } = frame;
        if (frame.next >= items.length) {
          frames.length--;
          continue;
        }
        const item = items[frame.next++];
        if (frame.kind === MAP) {
          if (frame.next % 2 === 1) {
            frame.pendingKey = convert(item);
          } else {
            apply(mapSet, frame.target, [frame.pendingKey, convert(item)]);
            frame.pendingKey = undefined;
          }
          continue;
        }
        if (frame.kind === SET) {
          apply(setAdd, frame.target, [convert(item)]);
          continue;
        }
        const key = item as string;
        // A key a getter deleted is skipped, as V8 skips it.
        if (!hasOwn(frame.source, key)) continue;
        const value = (frame.source as Record<string, unknown>)[key];
        defineData(frame.target, key, convert(value));
      }
      return result;
    } finally {
      // convert() and the functions beside it hold one another through
      // this scope, a cycle that QuickJS frees only when its collector next
      // runs, and a realm that lives across calls may run out of memory
      // first: emptied here, the graph and its copy go as soon as nothing
      // else holds them, whether the clone answered or threw.
      apply(mapClear, memory, []);
      frames.length = 0;
    }
  }

  const PREFIX = "Failed to execute 'structuredClone'";

  /** The transfer list, converted as Web IDL converts a sequence<object>. */
  function transferList(options: unknown): object[] {
    const list: object[] = [];
    if (options === undefined || options === null) return list;
    if (typeof options !== "object" && typeof options !== "function") {
      throw new TypeErrorCtor(
        `${PREFIX}: Argument 2 can not be converted to a dictionary`,
      );
    }
    const transfer = (options as { transfer?: unknown }).transfer;
    if (transfer === undefined) return list;
    const sequence =
      `${PREFIX}: 'transfer' of 'StructuredSerializeOptions' (Argument 2)`;
    const method = (typeof transfer === "object" && transfer !== null) ||
        typeof transfer === "function"
      ? (transfer as { [iteratorSymbol]?: unknown })[iteratorSymbol]
      : undefined;
    if (typeof method !== "function") {
      throw new TypeErrorCtor(`${sequence} can not be converted to sequence.`);
    }
    const iterator = apply(method, transfer, []) as Iterator<unknown>;
    const next = iterator.next;
    for (;;) {
      const step = apply(next, iterator, []) as IteratorResult<unknown>;
      if (step.done) break;
      const item = step.value;
      if (
        (typeof item !== "object" || item === null) &&
        typeof item !== "function"
      ) {
        throw new TypeErrorCtor(
          `${sequence}, index ${list.length} is not an object`,
        );
      }
      list[list.length] = item as object;
    }
    return list;
  }

  return {
    structuredClone(value: unknown, options?: CloneOptions): unknown {
      if (arguments.length >= 1 && options === undefined) {
        if (value === null) return value;
        const type = typeof value;
        if (type !== "object" && type !== "function" && type !== "symbol") {
          return value;
        }
      }
      if (arguments.length < 1) {
        throw new TypeErrorCtor(
          `${PREFIX}: 1 argument required, but only 0 present`,
        );
      }
      const transfer = transferList(options);
      if (transfer.length === 0) {
        try {
          return cloneGraph(value);
        } catch (error) {
          if (apply(isPrototypeOf, typeErrorProto, [error])) {
            throw new DOMExceptionCtor(
              (error as Error).message,
              "DataCloneError",
            );
          }
          throw error;
        }
      }
      const buffers: ArrayBuffer[] = [];
      for (let i = 0; i < transfer.length; i++) {
        if (!hasSlot(bufferBytes, transfer[i]!)) continue;
        const buffer = transfer[i] as ArrayBuffer;
        if (apply(bufferBytes, buffer, []) === 0 && isDetached(buffer)) {
          throw new DOMExceptionCtor(
            `ArrayBuffer at index ${buffers.length} is already detached`,
            "DataCloneError",
          );
        }
        buffers[buffers.length] = buffer;
      }
      if (bufferTransfer === undefined) {
        throw new DOMExceptionCtor(
          "Cannot transfer an ArrayBuffer in this sandbox: this engine cannot detach one; clone without transfer",
          "DataCloneError",
        );
      }
      let result: unknown;
      try {
        // The bytes are copied; the buffers are detached whatever happens,
        // as Deno's are.
        result = cloneGraph(value);
      } finally {
        for (let i = 0; i < buffers.length; i++) {
          if (!isDetached(buffers[i]!)) apply(bufferTransfer, buffers[i], []);
        }
      }
      for (let i = 0; i < transfer.length; i++) {
        if (!hasSlot(bufferBytes, transfer[i]!)) {
          throw new DOMExceptionCtor(
            "Value not transferable",
            "DataCloneError",
          );
        }
      }
      return result;
    },
  }.structuredClone as StructuredClone;
}
