// This module is browser compatible.

/**
 * How values, thrown errors and console arguments become data. Every tier
 * runs these same functions inside its own realm (the QuickJS context, the
 * worker, the subprocess), so one guest value gives one answer everywhere.
 *
 * @module
 */

import type {
  JsonValue,
  LogEntry,
  SandboxError,
} from "../protocol/sandbox_result.ts";

/** A thrown value as data, with the engine's limit codes kept. */
export interface ThrownDetail extends SandboxError {
  /** `GUEST_ERROR`, or the limit the engine's own error reports. */
  code: "GUEST_ERROR" | "STACK_OVERFLOW" | "OUT_OF_MEMORY";
}

/** The marshalling functions a tier installs next to guest code. */
export interface Marshallers {
  /**
   * Turns a guest value into JSON data with `JSON.stringify` semantics
   * (`undefined` at the top becomes `null`, `NaN` becomes `null`, a boxed
   * primitive becomes the primitive it holds), except
   * that functions, symbols, BigInts, cycles, arrays or objects nested
   * deeper than {@linkcode Marshallers.maxDepth} levels, and an object that
   * inherits from a typed array but is none (a Proxy of one, whose entries
   * the engine would list before any could be counted) throw an error
   * whose `code` is `RESULT_NOT_SERIALIZABLE`, naming where. Given
   * `maxJsonChars`, a value whose text would pass it is refused
   * ({@linkcode isTooLarge}) while it is copied, before the copy is whole:
   * a string that appears many times counts each time, as its text does.
   */
  toWireValue(value: unknown, maxJsonChars?: number): JsonValue;
  /**
   * `JSON.stringify(toWireValue(value))`, with the same answers and the same
   * errors: the value is read once, each getter, `toJSON()` and proxy trap
   * running once, and the text is written from its copy. A value whose
   * text passes `maxJsonChars` (this call's, else the one the marshallers
   * were made with) is refused ({@linkcode isTooLarge}): mostly while it
   * is copied, before the copy is whole (a typed array whose least text
   * cannot fit, before its entries are listed), and otherwise once the
   * text is, or when the engine cannot make a string that long.
   */
  toWireJson(value: unknown, maxJsonChars?: number): string;
  /**
   * Whether a thrown value is a refusal of {@linkcode toWireValue} or
   * {@linkcode toWireJson}: told by identity, never by a property a guest
   * value could carry (a getter of the result may throw an object whose
   * `code` says `RESULT_NOT_SERIALIZABLE`).
   */
  isRefusal(thrown: unknown): boolean;
  /**
   * Whether a thrown value is the refusal of {@linkcode toWireJson} for a
   * text longer than `maxJsonChars`, told by identity. It is also a
   * refusal ({@linkcode isRefusal}).
   */
  isTooLarge(thrown: unknown): boolean;
  /**
   * Whether a thrown value is the refusal of {@linkcode toWireValue} or
   * {@linkcode toWireJson} for data nested deeper than
   * {@linkcode Marshallers.maxDepth}, told by identity. It is also a
   * refusal ({@linkcode isRefusal}).
   */
  isTooDeep(thrown: unknown): boolean;
  /**
   * Whether a thrown value is QuickJS's out-of-memory answer, read without
   * running a getter: its error for a failed allocation, or its
   * uninitialized marker, which it throws when a built-in's allocation
   * failed without making an error (localeCompare's or normalize()'s
   * normalisation) and which no guest value is (`typeof` says
   * `"unknown"`), or the `SyntaxError` its regular expression compiler
   * throws when the compiled code does not fit. Always `false` on V8,
   * which ends the realm instead of throwing.
   */
  isOutOfMemory(thrown: unknown): boolean;
  /**
   * Whether a thrown value is an engine's error for an exhausted stack
   * (V8's `RangeError`, QuickJS's `InternalError`, or the `SyntaxError` of
   * QuickJS's parsers), read without running a
   * getter: an object that only carries the same name and message is a
   * guest's throw like any other.
   */
  isStackOverflow(thrown: unknown): boolean;
  /**
   * Describes a thrown value as `{ code, name, message }`: the code is
   * `STACK_OVERFLOW` or `OUT_OF_MEMORY` for the engine's own error
   * ({@linkcode isStackOverflow}, {@linkcode isOutOfMemory}), and
   * `GUEST_ERROR` for anything else. Memory that runs out while the value
   * is read (a getter of its message, its `String()`) is `OUT_OF_MEMORY`
   * too. A thrown array is shown as `String()` shows it, down to
   * {@linkcode Marshallers.maxDepth} levels, and the message says when it
   * was cut there.
   */
  describeThrown(thrown: unknown): ThrownDetail;
  /**
   * Formats console arguments as one line of text. An argument that fails
   * to format is written as a placeholder, except when the engine ran out
   * of memory ({@linkcode isOutOfMemory}), which is thrown on: V8 ends the
   * realm there, and no tier answers as if the line were logged. An
   * argument nested deeper than {@linkcode Marshallers.maxDepth} levels is
   * written as a placeholder that names the cap.
   */
  formatLogArgs(args: readonly unknown[]): string;
  /**
   * The most levels of arrays and objects a value may nest: the protocol's
   * `MAX_NESTING_DEPTH` (256).
   */
  readonly maxDepth: number;
  /** The console levels that are captured. */
  readonly levels: readonly LogEntry["level"][];
}

/** Options of {@linkcode createMarshallers}. */
export interface MarshalOptions {
  /**
   * Longest JSON text `toWireJson` writes when its call names none, in
   * UTF-16 code units (never more than its UTF-8 bytes). @default {Infinity}
   */
  maxJsonChars?: number;
}

/**
 * Creates the marshalling functions. The function is self-contained (it
 * refers to nothing outside its body), so tiers inject its source text into
 * a guest realm and call it there before guest code runs; it captures the
 * intrinsics it uses at that moment, so later guest changes to them have no
 * effect.
 *
 * @param options The longest JSON text to write.
 * @returns The marshalling functions, bound to the current realm.
 *
 * @example
 * ```ts
 * import { createMarshallers } from "./marshal.ts";
 * import assert from "node:assert/strict";
 *
 * const { toWireValue, formatLogArgs } = createMarshallers();
 * assert.deepEqual(toWireValue({ a: [1, undefined], b: undefined }), { a: [1, null] });
 * assert.equal(formatLogArgs(["n =", 1, { x: true }]), 'n = 1 {"x":true}');
 * ```
 */
export function createMarshallers(options: MarshalOptions = {}): Marshallers {
  const MAX_TEXT = 8192;
  const maxJsonChars = options.maxJsonChars ?? Infinity;
  // No engine writes a longer array as JSON: V8's strings end below 2**29
  // characters, and each element takes at least two. Refused at once, not
  // walked: a sparse array of length 2**32 - 1 would take the run's whole
  // time or memory, whichever gives out first on its tier.
  const MAX_ARRAY_LENGTH = 2 ** 28;
  // The protocol's MAX_NESTING_DEPTH, which source text cannot import (a
  // test holds the two equal), so every tier refuses the same values with
  // the same message, whatever the stack it runs on holds.
  const MAX_DEPTH = 256;
  const { isArray } = Array;
  const {
    keys,
    freeze,
    create,
    getPrototypeOf,
    setPrototypeOf,
    defineProperty,
    getOwnPropertyDescriptor,
  } = Object;
  const ObjectPrototype = Object.prototype;
  const ArrayPrototype = Array.prototype;
  const StringPrototype = String.prototype;
  const stringValueOf = String.prototype.valueOf;
  const stringToString = String.prototype.toString;
  const toPrimitiveKey = Symbol.toPrimitive;
  const numberValueOf = Number.prototype.valueOf;
  const booleanValueOf = Boolean.prototype.valueOf;
  const bigintValueOf = BigInt.prototype.valueOf;
  const { isView } = ArrayBuffer;
  // The getter of %TypedArray%.prototype.length, which reads the internal
  // slot: no guest getter or Proxy trap runs, and it throws for a DataView.
  const TypedArrayPrototype = getPrototypeOf(Uint8Array.prototype);
  const typedArrayLength = getOwnPropertyDescriptor(
    TypedArrayPrototype,
    "length",
  )!.get!;
  // The protocol's rule (typedArrayJsonChars in protocol/plain_json.ts),
  // which source text cannot import (a test holds the two equal): each
  // typed array entry `"i":d` and its comma take six characters at least.
  const LEAST_CHARS_PER_ENTRY = 6;
  const stringify = JSON.stringify;
  const numberIsFinite = Number.isFinite;
  const toText = String;
  const ErrorCtor = Error;
  // Methods are called through Reflect.apply as captured here: where
  // intrinsics are not frozen (the worker and process tiers), a guest may
  // replace String.prototype.slice or Array.prototype.push for its realm.
  const { apply } = Reflect;
  const sliceText = String.prototype.slice;
  const charCodeAt = String.prototype.charCodeAt;
  const symbolText = Symbol.prototype.toString;
  const hasOwnProperty = ObjectPrototype.hasOwnProperty;
  // QuickJS's own error for a failed allocation; V8 has no such class, and
  // ends the realm instead.
  const InternalErrorCtor =
    (globalThis as { InternalError?: ErrorConstructor }).InternalError;
  const OUT_OF_MEMORY_MESSAGES = [
    "out of memory",
    "out of memory in regexp execution",
  ];
  // QuickJS's regular expression compiler words a failed allocation as a
  // SyntaxError: a pattern whose compiled code outgrows the limit.
  const REGEXP_OUT_OF_MEMORY_MESSAGES = ["out of memory"];
  // Each engine's RangeError for a string longer than it can make: V8's,
  // then QuickJS's.
  const RangeErrorPrototype = RangeError.prototype;
  const STRING_LENGTH_MESSAGES = [
    "Invalid string length",
    "invalid string length",
  ];
  // V8's RangeError for an exhausted stack, known on every engine, so a
  // guest that throws one itself gets one answer everywhere; QuickJS's own
  // is an InternalError, or a SyntaxError when one of its parsers (that of
  // JSON.parse) meets the stack limit.
  const V8_STACK_MESSAGES = ["Maximum call stack size exceeded"];
  const QUICKJS_STACK_MESSAGES = ["stack overflow"];
  const SyntaxErrorPrototype = SyntaxError.prototype;
  // Every refusal made here, by identity: see isRefusal.
  const refusals = new WeakSet<object>();
  const oversized = new WeakSet<object>();
  const overdeep = new WeakSet<object>();
  const addRefusal = WeakSet.prototype.add;
  const hasRefusal = WeakSet.prototype.has;

  // Never between the two halves of a surrogate pair: a lone half would
  // reach the host as U+FFFD.
  function clip(text: string): string {
    if (text.length <= MAX_TEXT) return text;
    const last = apply(charCodeAt, text, [MAX_TEXT - 1]);
    const end = last >= 0xd800 && last <= 0xdbff ? MAX_TEXT - 1 : MAX_TEXT;
    return apply(sliceText, text, [0, end]) + "…";
  }

  // An own data property, as JSON.parse makes it: an assignment would run
  // a setter a guest put on a prototype, and "__proto__" would set the
  // copy's prototype instead.
  function put(target: object, key: string | number, item: unknown): void {
    defineProperty(target, key, {
      value: item,
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }

  function includes(list: readonly unknown[], item: unknown): boolean {
    for (let i = 0; i < list.length; i++) if (list[i] === item) return true;
    return false;
  }

  function ownText(target: object, key: string, text: string): void {
    defineProperty(target, key, {
      value: text,
      writable: true,
      enumerable: false,
      configurable: true,
    });
  }

  // A RESULT_NOT_SERIALIZABLE error, kept among the refusals (isRefusal).
  function refusal(message: string, name: string): Error {
    const error = new ErrorCtor(message);
    // Own data properties: an assignment would run a setter a guest put on
    // Object.prototype, and an inherited name is the guest's to replace
    // where intrinsics are not frozen.
    ownText(error, "code", "RESULT_NOT_SERIALIZABLE");
    ownText(error, "name", name);
    apply(addRefusal, refusals, [error]);
    return error;
  }

  function refuse(kind: string, path: string, remedy: string): never {
    throw refusal(
      `Cannot return ${kind} from a sandbox at ${path}: results must be JSON-safe data; ${remedy}`,
      "Error",
    );
  }

  function tooDeep(path: string): never {
    const error = refusal(
      `Cannot return data nested deeper than ${MAX_DEPTH} levels from a sandbox at ${path}: results must be JSON-safe data; return flatter data, or pass the deeper part as JSON text`,
      "Error",
    );
    apply(addRefusal, overdeep, [error]);
    throw error;
  }

  function isTooDeep(thrown: unknown): boolean {
    return typeof thrown === "object" && thrown !== null &&
      apply(hasRefusal, overdeep, [thrown]) as boolean;
  }

  function isRefusal(thrown: unknown): boolean {
    return typeof thrown === "object" && thrown !== null &&
      apply(hasRefusal, refusals, [thrown]) as boolean;
  }

  // Whether a thrown value is an error of this prototype with one of these
  // messages as its own data property. Read without running a getter: the
  // thrown value may be a guest's.
  function isEngineError(
    thrown: unknown,
    prototype: object | undefined,
    messages: readonly string[],
  ): boolean {
    if (prototype === undefined) return false;
    if (typeof thrown !== "object" || thrown === null) return false;
    try {
      if (getPrototypeOf(thrown) !== prototype) return false;
      const descriptor = getOwnPropertyDescriptor(thrown, "message");
      // A getter's descriptor has no value of its own, and would inherit
      // one a guest put on Object.prototype where it is not frozen.
      return descriptor !== undefined &&
        apply(hasOwnProperty, descriptor, ["value"]) as boolean &&
        includes(messages, descriptor.value);
    } catch {
      // A proxy's trap threw: not the engine's error.
      return false;
    }
  }

  // QuickJS's uninitialized marker, which it throws when a built-in
  // fails without making an error: its Unicode normalisation
  // (localeCompare, normalize()) allocates through a realloc that makes
  // none when refused. No guest value is the marker: `typeof` names no
  // JavaScript type for it.
  function isNoValue(thrown: unknown): boolean {
    const type: string = typeof thrown;
    return type === "unknown";
  }

  function isOutOfMemory(thrown: unknown): boolean {
    if (InternalErrorCtor === undefined) return false;
    return isNoValue(thrown) ||
      isEngineError(
        thrown,
        InternalErrorCtor.prototype,
        OUT_OF_MEMORY_MESSAGES,
      ) ||
      isEngineError(
        thrown,
        SyntaxErrorPrototype,
        REGEXP_OUT_OF_MEMORY_MESSAGES,
      );
  }

  function isStringTooLong(thrown: unknown): boolean {
    return isEngineError(thrown, RangeErrorPrototype, STRING_LENGTH_MESSAGES);
  }

  function isStackOverflow(thrown: unknown): boolean {
    return isEngineError(thrown, RangeErrorPrototype, V8_STACK_MESSAGES) ||
      isEngineError(
        thrown,
        InternalErrorCtor?.prototype,
        QUICKJS_STACK_MESSAGES,
      ) ||
      isEngineError(thrown, SyntaxErrorPrototype, QUICKJS_STACK_MESSAGES);
  }

  // JSON text is counted while it is made, not measured once whole: V8
  // copies each string into the text without a pause where a worker's heap
  // limit could stop it, and Node ends the whole process, not the one
  // worker, when such a copy runs past that limit. The characters the text
  // being made may still take, and its limit:
  let room = Infinity;
  let limit = Infinity;

  // Each caller answers with its own failure (a run's result, a plugin's
  // arguments or answer), told by isTooLarge.
  function tooLarge(): never {
    const error = refusal(
      `Cannot write JSON text longer than ${limit} characters: write less data`,
      "RangeError",
    );
    apply(addRefusal, oversized, [error]);
    throw error;
  }

  function isTooLarge(thrown: unknown): boolean {
    return typeof thrown === "object" && thrown !== null &&
      apply(hasRefusal, oversized, [thrown]) as boolean;
  }

  function spendChars(chars: number): void {
    room -= chars;
    if (room < 0) tooLarge();
  }

  // The least text of a typed array's entries, 0 for any other object,
  // read from internal slots: the engine lists every entry as a key before
  // the first is read (a hundred million took 37 s and 4.8 GB to list), so
  // the bound looks this far ahead, as protocol/plain_json.ts counts them.
  function leastEntryChars(object: object): number {
    if (!isView(object)) return 0;
    try {
      return LEAST_CHARS_PER_ENTRY * apply(typedArrayLength, object, []);
    } catch {
      // A DataView, which lists no entries.
      return 0;
    }
  }

  // The least text of a String object, which JSON.stringify writes without
  // showing it to a replacer: its quotes, and the text it holds when that
  // is its ToString (protocol/plain_json.ts's stringObjectJsonChars).
  // Known by its usual prototype, a read that costs a plain object
  // nothing, where its own check throws for every other object.
  function leastStringChars(object: object, prototype: object | null): number {
    if (prototype !== StringPrototype) return 0;
    let held: string;
    try {
      held = apply(stringValueOf, object, []) as string;
    } catch {
      // An object made from String.prototype, not a String.
      return 0;
    }
    return writesHeldString(object) ? held.length + 2 : 2;
  }

  // Whether a String object of the usual prototype writes the string it
  // holds: no toString or Symbol.toPrimitive of its own or on the way up
  // to Object.prototype, and String.prototype's own toString, as
  // JSON.stringify's ToString would find them. Asks descriptors only.
  function writesHeldString(object: object): boolean {
    const holders = [object, StringPrototype, ObjectPrototype];
    // Indexed, not for-of: a guest may replace the array iterator.
    for (let i = 0; i < holders.length; i++) {
      if (apply(hasOwnProperty, holders[i], [toPrimitiveKey])) return false;
    }
    if (apply(hasOwnProperty, object, ["toString"])) return false;
    const found = getOwnPropertyDescriptor(StringPrototype, "toString");
    // An accessor's descriptor has no own value: reading one would reach a
    // getter a guest may have put on Object.prototype.
    return found !== undefined && apply(hasOwnProperty, found, ["value"]) &&
      found.value === stringToString;
  }

  // Refuses an object whose entries surely take more than the room left,
  // before they are listed.
  function lookAhead(object: object): void {
    if (leastEntryChars(object) > room) tooLarge();
  }

  // An array or object being copied. The walk keeps its own stack of
  // these rather than recursing: a QuickJS frame per level ran out before
  // MAX_DEPTH on a pool's Web Worker in Chromium, whose run stack is capped
  // well under what its thread holds, and nesting then costs memory only.
  interface Container {
    readonly source: Record<string, unknown>;
    readonly path: string;
    readonly level: number;
    // Where `seen` goes back to once this is copied: the first object of
    // the chain of toJSON() answers this container ends.
    readonly depth: number;
    // The keys of an object; null for an array.
    readonly names: string[] | null;
    readonly count: number;
    // What the object's own toJSON read, when it is no function.
    readonly toJSON: unknown;
    readonly copy: Record<string, JsonValue> | JsonValue[];
    index: number;
  }

  // Begins a container's copy, never one's finished copy.
  const PENDING = freeze({});

  // The copy of a value that holds no array or object; for one that does,
  // PENDING with its container pushed. `key` is the value's in its holder
  // ("" for the result), which toJSON() is given, as JSON.stringify gives
  // it. `level` counts the arrays and objects around the value: what a
  // toJSON() answers takes its object's place, at its level, and its object
  // stays in `seen` meanwhile (back to `depth` once the answer is copied),
  // so a toJSON that answers its own object is a cycle, not an endless walk.
  function begin(
    value: unknown,
    key: string,
    path: string,
    level: number,
    seen: unknown[],
    stack: Container[],
    depth: number = seen.length,
  ): JsonValue | undefined | typeof PENDING {
    switch (typeof value) {
      case "undefined":
      case "boolean":
        return value;
      case "string":
        spendChars(value.length);
        return value;
      case "number":
        return numberIsFinite(value) ? (value === 0 ? 0 : value) : null;
      case "bigint":
        return refuse("a BigInt", path, "convert it to a string or number");
      case "symbol":
        return refuse("a symbol", path, "convert it to a string");
      case "function":
        return refuse("a function", path, "return its result instead");
    }
    if (value === null) return null;
    if (includes(seen, value)) {
      return refuse("a cyclic value", path, "remove the cycle");
    }
    const object = value as Record<string, unknown>;
    seen[seen.length] = value;
    const toJSON = object.toJSON;
    if (typeof toJSON === "function") {
      // A call of its own, not a turn of the walk: a chain of toJSON
      // answers that each answer another ends at the engine's stack limit,
      // STACK_OVERFLOW on every tier, where a loop would run to the deadline.
      const answer = apply(toJSON, object, [key]);
      const copied = begin(answer, key, path, level, seen, stack, depth);
      if (copied !== PENDING) seen.length = depth;
      return copied;
    }
    if (!isArray(object)) {
      const primitive = unboxed(object, path);
      if (primitive !== NOT_BOXED) {
        seen.length = depth;
        return begin(primitive, key, path, level, seen, stack);
      }
    }
    if (level === MAX_DEPTH) tooDeep(path);
    stack[stack.length] = container(object, path, level, depth, toJSON);
    return PENDING;
  }

  // What unboxed() answers for an object that holds no primitive.
  const NOT_BOXED = freeze({});

  // The prototype of each kind of boxed primitive, with the built-in that
  // reads its internal slot (and throws for an object without one): no
  // getter or Proxy trap runs.
  const BOXED_PROTOTYPES = [
    StringPrototype,
    Number.prototype,
    Boolean.prototype,
    BigInt.prototype,
  ];
  const SLOT_READERS = [
    stringValueOf,
    numberValueOf,
    booleanValueOf,
    bigintValueOf,
  ];

  // What boxedKind() answers for a chain that reaches a typed array's.
  const TYPED_ARRAY_KIND = BOXED_PROTOTYPES.length;

  // Which kind of boxed primitive an object of this prototype may be: the
  // index of the boxed prototype its chain reaches before
  // Object.prototype, TYPED_ARRAY_KIND for a typed array's, or -1. A class
  // instance's chain ends quickly, and no slot check (which throws for
  // every other object) is tried for it.
  function boxedKind(prototype: object | null): number {
    let link = prototype;
    while (link !== null && link !== ObjectPrototype) {
      for (let i = 0; i < BOXED_PROTOTYPES.length; i++) {
        if (BOXED_PROTOTYPES[i] === link) return i;
      }
      if (link === TypedArrayPrototype) return TYPED_ARRAY_KIND;
      link = getPrototypeOf(link);
    }
    return -1;
  }

  function refuseUnlistable(path: string): never {
    return refuse(
      "an object that inherits from a typed array but is none (a Proxy of one)",
      path,
      "return the typed array itself, or Array.from() of it",
    );
  }

  // The primitive JSON.stringify writes for a boxed primitive, after its
  // toJSON: a String object's ToString and a Number object's ToNumber
  // (which run its toString or valueOf, as JSON.stringify runs them), a
  // Boolean's or BigInt's own value. A boxed primitive whose prototype
  // chain was cut from its kind's is written as the object it is.
  //
  // An object whose chain is a typed array's but which holds none (a
  // Proxy of one) is refused: its entries can be neither counted from a
  // slot nor read before the engine lists each as a key, which took 6.4 s
  // for a Proxy of a million, whatever the bound.
  function unboxed(object: object, path: string): unknown {
    const kind = boxedKind(getPrototypeOf(object));
    if (kind === TYPED_ARRAY_KIND) {
      if (isView(object)) return NOT_BOXED;
      return refuseUnlistable(path);
    }
    if (kind === -1) return NOT_BOXED;
    const reader = SLOT_READERS[kind]!;
    let held: unknown;
    try {
      held = apply(reader, object, []);
    } catch {
      // Made from the prototype, or a Proxy: no primitive inside.
      return NOT_BOXED;
    }
    switch (kind) {
      case 0:
        return toText(object);
      case 1:
        return +(object as unknown as number);
      default:
        return held;
    }
  }

  function container(
    source: Record<string, unknown>,
    path: string,
    level: number,
    depth: number,
    toJSON: unknown,
  ): Container {
    if (isArray(source)) {
      const count = source.length;
      if (count >= MAX_ARRAY_LENGTH) {
        refuse(
          `an array of ${count} elements`,
          path,
          "return a shorter array (sparse arrays are written whole)",
        );
      }
      // Its text takes 2 * count + 1 characters at least (each element
      // one, the commas and brackets the rest): one that cannot fit is
      // refused at once, by toWireValue too, not walked element by element
      // (a sparse array of 2**27 holes ran QuickJS to its deadline and took
      // a worker's whole heap in its copy).
      if (2 * count + 1 > limit) tooLarge();
      // Its brackets and commas take count + 1, less the one character an
      // array in an array's element was already counted for: spending that
      // one twice refused [[1]] under a bound of 5 characters. An array
      // elsewhere is the whole value or a member, whose key's quotes are
      // not counted.
      spendChars(count);
      const copy = bareArray<JsonValue>();
      return {
        source,
        path,
        level,
        depth,
        names: null,
        count,
        toJSON,
        copy,
        index: 0,
      };
    }
    lookAhead(source);
    // Indexed, not for-of: a guest may replace the array iterator.
    const names = keys(source);
    const copy: Record<string, JsonValue> = create(null);
    const count = names.length;
    return { source, path, level, depth, names, count, toJSON, copy, index: 0 };
  }

  // Reads a container's next entry and begins its copy. Each property,
  // toJSON and array length is read once, as guest getters and proxy traps
  // may count their calls or answer otherwise the second time.
  function beginEntry(
    top: Container,
    seen: unknown[],
    stack: Container[],
  ): JsonValue | undefined | typeof PENDING {
    const { source, path, level, names, index } = top;
    if (names === null) {
      // Each element takes a character at least; its comma was counted
      // with its array.
      spendChars(1);
      const item = source[index];
      const key = toText(index);
      return begin(item, key, `${path}[${key}]`, level + 1, seen, stack);
    }
    const key = names[index]!;
    // An own toJSON that is not a function was read already.
    const read = key === "toJSON" ? top.toJSON : source[key];
    return begin(read, key, `${path}.${key}`, level + 1, seen, stack);
  }

  function store(top: Container, item: JsonValue | undefined): void {
    const { names, index } = top;
    top.index = index + 1;
    if (names === null) {
      (top.copy as JsonValue[])[index] = item === undefined ? null : item;
      return;
    }
    if (item === undefined) return;
    const key = names[index]!;
    spendChars(key.length + 1);
    (top.copy as Record<string, JsonValue>)[key] = item;
  }

  // What the copy's text takes is spent as it is made, never more than
  // JSON.stringify writes for it (a string's quotes and escapes are not
  // counted), so a value far over the limit is refused before it is copied
  // whole.
  function convert(value: unknown): JsonValue | undefined {
    const seen = bareArray<unknown>();
    const stack = bareArray<Container>();
    let copied = begin(value, "", "result", 0, seen, stack);
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      if (copied !== PENDING) store(top, copied as JsonValue | undefined);
      if (top.index < top.count) {
        copied = beginEntry(top, seen, stack);
        continue;
      }
      stack.length -= 1;
      seen.length = top.depth;
      const copy = top.copy;
      copied = !dressed ? copy : setPrototypeOf(
        copy,
        isArray(copy) ? ArrayPrototype : ObjectPrototype,
      );
    }
    return copied as JsonValue | undefined;
  }

  // The copy's arrays and objects are made without a prototype and filled
  // by assignment: no setter a guest put on a prototype runs, "__proto__"
  // is an own key, and defineProperty, which V8 makes several times
  // slower, is not needed. Whether the copy being made gets its
  // prototypes once each is whole, as the caller of toWireValue expects;
  // the text toWireJson writes from it is the same either way.
  let dressed = true;

  function bareArray<T>(): T[] {
    const array: T[] = [];
    setPrototypeOf(array, null);
    return array;
  }

  // The copy a value converts to, its text counted against `chars`. A
  // guest's toJSON may make another copy meanwhile (a log line, a host
  // call): each copy keeps its own count and its own kind.
  function copyWithin(
    chars: number,
    value: unknown,
    withPrototypes: boolean,
  ): JsonValue {
    const outerDressed = dressed;
    dressed = withPrototypes;
    try {
      return counting(chars, () => {
        const converted = convert(value);
        return converted === undefined ? null : converted;
      });
    } finally {
      dressed = outerDressed;
    }
  }

  function toWireValue(value: unknown, max: number = Infinity): JsonValue {
    return copyWithin(max, value, true);
  }

  // Thrown while a console argument is written, for one nested too deeply.
  const NOT_SHALLOW = freeze({});

  // The arrays and objects on the way down to the entry JSON.stringify is
  // writing: it writes depth first, so the entry's holder is one of them,
  // and the levels are counted in the walk it makes anyway.
  let containers: unknown[] = [];

  // Whether a value JSON.stringify is about to write stays within
  // MAX_DEPTH levels; an array or object is then kept as a container.
  function withinDepth(holder: unknown, value: unknown): boolean {
    if (typeof value !== "object" || value === null) return true;
    let level = containers.length;
    while (level > 0 && containers[level - 1] !== holder) level--;
    if (level === MAX_DEPTH) return false;
    containers.length = level;
    put(containers, level, value);
    return true;
  }

  // What an entry's key adds to the text: an object's key is written, an
  // array's index is not.
  function keyCost(holder: unknown, key: string): number {
    return isArray(holder) ? 1 : key.length + 1;
  }

  // Never more than JSON.stringify writes for the entry (a string takes
  // its quotes and escapes too), so a text refused for it is too long.
  function entryCost(holder: unknown, key: string, value: unknown): number {
    switch (typeof value) {
      case "undefined":
      case "function":
      case "symbol":
        // Left out of an object, written as null in an array.
        return isArray(holder) ? 1 : 0;
      case "string":
        return keyCost(holder, key) + value.length;
      default:
        return keyCost(holder, key);
    }
  }

  function spend(holder: unknown, key: string, value: unknown): void {
    room -= entryCost(holder, key, value);
    if (room < 0) tooLarge();
    // JSON.stringify lists an object's keys, or writes a String object's
    // text, once this answers.
    if (typeof value === "object" && value !== null) {
      lookAhead(value);
      // Read once: a Proxy's trap may count its calls.
      const prototype = getPrototypeOf(value);
      if (!isView(value) && boxedKind(prototype) === TYPED_ARRAY_KIND) {
        // A log line shows no path: the refusal is its placeholder.
        refuseUnlistable("result");
      }
      if (leastStringChars(value, prototype) > room) tooLarge();
    }
  }

  function counted(this: unknown, key: string, value: unknown): unknown {
    spend(this, key, value);
    if (!withinDepth(this, value)) throw NOT_SHALLOW;
    return value;
  }

  // A guest's toJSON may log or call the host while a text is written:
  // each text keeps its own count.
  function counting<T>(chars: number, write: () => T): T {
    const outerRoom = room;
    const outerLimit = limit;
    const outerContainers = containers;
    room = limit = chars;
    containers = [];
    try {
      return write();
    } finally {
      room = outerRoom;
      limit = outerLimit;
      containers = outerContainers;
    }
  }

  // The count is a floor (a string's escapes are not counted), so a text
  // it let through is measured once whole as well.
  function within(text: string): string {
    if (text.length > limit) tooLarge();
    return text;
  }

  // The copy is data alone, so no guest code runs while it is written, and
  // its text was counted while it was made: an engine error for a string
  // too long is this text's, and means too large.
  function writeCopy(copy: JsonValue): string {
    let text: string;
    try {
      text = stringify(copy);
    } catch (thrown) {
      if (isStringTooLong(thrown)) tooLarge();
      throw thrown;
    }
    return within(text);
  }

  function toWireJson(value: unknown, max: number = maxJsonChars): string {
    // The value is read once, by the walk that copies it: a guest's
    // getters, toJSON() and proxy traps run once, as on every tier.
    const copy = copyWithin(max, value, false);
    if (max === Infinity) return stringify(copy);
    return counting(max, () => writeCopy(copy));
  }

  // A console argument's JSON is written in full only up to this length,
  // then shown as a placeholder: a line shows MAX_TEXT of it anyway.
  const MAX_LOGGED_JSON = 128 * MAX_TEXT;

  function loggedJson(value: unknown): string | undefined {
    try {
      return counting(MAX_LOGGED_JSON, () => stringify(value, counted));
    } catch (thrown) {
      if (thrown === NOT_SHALLOW) {
        return `[value nested deeper than ${MAX_DEPTH} levels]`;
      }
      if (!isTooLarge(thrown)) throw thrown;
      return `[value longer than ${MAX_LOGGED_JSON} characters as JSON]`;
    }
  }

  function safeText(value: unknown): string {
    try {
      return toText(value);
    } catch (thrown) {
      if (isOutOfMemory(thrown)) throw thrown;
      return "[unprintable value]";
    }
  }

  // A thrown array's text, as String() writes it, but written here: join
  // recurses on the engine's stack once per level (QuickJS's gives out
  // near 480), and where intrinsics are not frozen a guest may replace it.
  // An array on the way down to itself is written as "", as V8's join
  // writes it; the walk stops at MAX_DEPTH levels and after MAX_TEXT arrays.
  let cutAtDepth = false;
  let arraysLeft = 0;

  function arrayText(array: readonly unknown[], chain: unknown[]): string {
    if (chain.length === MAX_DEPTH) {
      cutAtDepth = true;
      return "";
    }
    put(chain, chain.length, array);
    let text = "";
    try {
      for (let i = 0; i < array.length; i++) {
        if (text.length > MAX_TEXT || arraysLeft <= 0) return text + "…";
        if (i > 0) text += ",";
        const item = array[i];
        if (item === undefined || item === null || includes(chain, item)) {
          continue;
        }
        if (isArray(item)) {
          arraysLeft--;
          text += arrayText(item, chain);
        } else {
          text += safeText(item);
        }
      }
      return text;
    } finally {
      chain.length -= 1;
    }
  }

  function nonErrorMessage(thrown: unknown): string {
    cutAtDepth = false;
    arraysLeft = MAX_TEXT;
    let text: string;
    try {
      // Array.isArray throws for a revoked proxy.
      text = isArray(thrown) ? arrayText(thrown, []) : toText(thrown);
    } catch (thrown) {
      if (isOutOfMemory(thrown)) throw thrown;
      text = "[unprintable value]";
    }
    return cutAtDepth
      ? `Guest code threw a non-Error value nested deeper than ${MAX_DEPTH} levels, shown to that depth: ${text}`
      : `Guest code threw a non-Error value: ${text}`;
  }

  function limitCodeOf(thrown: unknown): ThrownDetail["code"] {
    if (isStackOverflow(thrown)) return "STACK_OVERFLOW";
    return isOutOfMemory(thrown) ? "OUT_OF_MEMORY" : "GUEST_ERROR";
  }

  // What describeThrown answers for memory that ran out, made when it is
  // needed: describing must not keep a value of its own.
  function outOfMemoryDetail(): ThrownDetail {
    return {
      code: "OUT_OF_MEMORY",
      name: "InternalError",
      message: OUT_OF_MEMORY_MESSAGES[0]!,
    };
  }

  function describeThrown(thrown: unknown): ThrownDetail {
    if (isNoValue(thrown)) return outOfMemoryDetail();
    try {
      return describeValue(thrown);
    } catch (caught) {
      // Memory ran out while the value was read (nonErrorMessage and the
      // getters below throw that on): the run's own end, not the guest's.
      if (isOutOfMemory(caught)) return outOfMemoryDetail();
      throw caught;
    }
  }

  function describeValue(thrown: unknown): ThrownDetail {
    if (typeof thrown === "object" && thrown !== null) {
      const candidate = thrown as { name?: unknown; message?: unknown };
      try {
        // Each read once: a guest's getter may count its calls.
        const message = candidate.message;
        if (typeof message === "string") {
          const name = candidate.name;
          return {
            code: limitCodeOf(thrown),
            name: clip(typeof name === "string" ? name : "Error"),
            message: clip(message),
          };
        }
      } catch (caught) {
        if (isOutOfMemory(caught)) throw caught;
        // A throwing getter: describe the value without its fields.
      }
    }
    return {
      code: "GUEST_ERROR",
      name: "NonErrorThrown",
      message: clip(nonErrorMessage(thrown)),
    };
  }

  function formatOne(arg: unknown): string {
    switch (typeof arg) {
      case "string":
        return arg;
      case "bigint":
        return `${arg}n`;
      case "symbol":
        return safeText(apply(symbolText, arg, []));
      case "function":
        return `[Function ${arg.name || "anonymous"}]`;
      case "object": {
        if (arg === null) return "null";
        // Each read once: a guest's getter may count its calls.
        const message = (arg as { message?: unknown }).message;
        const name = typeof message === "string"
          ? (arg as { name?: unknown }).name
          : undefined;
        if (typeof message === "string" && typeof name === "string") {
          return `${name}: ${message}`;
        }
        try {
          return loggedJson(arg) ?? safeText(arg);
        } catch (thrown) {
          if (isOutOfMemory(thrown)) throw thrown;
          return "[unserializable object]";
        }
      }
      default:
        return safeText(arg);
    }
  }

  function formatLogArgs(args: readonly unknown[]): string {
    let line = "";
    for (let i = 0; i < args.length; i++) {
      line += (i === 0 ? "" : " ") + formatOne(args[i]);
      if (line.length > MAX_TEXT) return clip(line);
    }
    return line;
  }

  return freeze({
    toWireValue,
    toWireJson,
    isRefusal,
    isTooLarge,
    isTooDeep,
    isOutOfMemory,
    isStackOverflow,
    describeThrown,
    formatLogArgs,
    // The protocol's LOG_LEVELS: source text cannot import it.
    levels: freeze(["log", "info", "warn", "error", "debug"] as const),
    maxDepth: MAX_DEPTH,
  }) as Marshallers;
}
