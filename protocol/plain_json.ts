// This module is browser compatible.

/**
 * The one walk over JSON data on the host, and the rules it counts by. It
 * reads a value without running any of its code (no getter, no Proxy
 * trap, no `toJSON`, no `valueOf`), counts the least length of its JSON
 * text and finds whether it is plain data, which `JSON.stringify` writes
 * as the checking writer would: a run's context (`context_json.ts`) and a
 * vm `invoke()` payload are then written by `JSON.stringify` alone, where
 * a replacer's call per value made a large context cost the caller's
 * thread about fifty times the plain writing. Whatever the walk cannot
 * vouch for is left, unread, to the checking writer.
 *
 * Telling a Proxy apart without asking it takes the runtime's own
 * built-in (`node:util`'s `types`, on Deno and Node); where there is none,
 * as in a browser, the walk vouches for nothing.
 *
 * @module
 */

import { MAX_NESTING_DEPTH } from "./nesting.ts";

const { getPrototypeOf, hasOwn, keys } = Object;
const { apply, getOwnPropertyDescriptor } = Reflect;
// Annex B's lookup answers a getter without calling it, and unlike a
// property's descriptor allocates nothing.
const { __lookupGetter__: getterOf } = Object.prototype as unknown as {
  __lookupGetter__(this: object, key: PropertyKey): unknown;
};
const { isArray } = Array;
const OBJECT_PROTOTYPE = Object.prototype;
const ARRAY_PROTOTYPE = Array.prototype;
const isRawJson = (JSON as { isRawJSON?: (value: unknown) => boolean })
  .isRawJSON;
/** The getter of `%TypedArray%.prototype.length`; throws for others. */
const typedArrayLength = getOwnPropertyDescriptor(
  getPrototypeOf(Uint8Array.prototype)!,
  "length",
)!.get!;
/** `String.prototype.valueOf`; throws unless given a string or `String`. */
const stringValueOf = String.prototype.valueOf;

/** The built-ins that read an object's kind from its internal slots. */
interface SlotChecks {
  isProxy(value: unknown): boolean;
  isBoxedPrimitive(value: unknown): boolean;
}

const SLOT_CHECKS = findSlotChecks();

function findSlotChecks(): SlotChecks | undefined {
  try {
    const host = globalThis as {
      process?: { getBuiltinModule?: (name: string) => unknown };
    };
    const util = host.process?.getBuiltinModule?.("node:util") as
      | { types?: Partial<SlotChecks> }
      | undefined;
    const { isProxy, isBoxedPrimitive } = util?.types ?? {};
    return typeof isProxy === "function" &&
        typeof isBoxedPrimitive === "function"
      ? { isProxy, isBoxedPrimitive }
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The least number of characters `JSON.stringify` writes for `value` as
 * the member `key` of `holder`: its key, its comma, a container's brackets
 * less the comma its first member does not have. Summed over the members
 * a writing visits, it never passes the text's length, so a writing can
 * stop as soon as the sum passes a bound.
 *
 * @param holder The object or array that holds `value`.
 * @param key Its key there.
 * @param value The value, after any `toJSON`.
 * @param root Whether `value` is the whole value written.
 * @returns The least number of characters: `,"a":"xy"` is 9.
 */
export function leastJsonChars(
  holder: unknown,
  key: string,
  value: unknown,
  root: boolean,
): number {
  const inArray = isArray(holder);
  const type = typeof value;
  // Left out of an object, written as null in an array.
  if (value === undefined || type === "function" || type === "symbol") {
    return inArray ? 5 : 0;
  }
  const keyed = root || inArray ? 0 : key.length + 3;
  const comma = root ? 0 : 1;
  switch (type) {
    case "string":
      return keyed + comma + (value as string).length + 2;
    case "object":
      return keyed + comma + (value === null ? 4 : 1);
    case "boolean":
      return keyed + comma + 4;
    default:
      return keyed + comma + 1;
  }
}

/** Each typed array entry `"i":d` and its comma take six characters. */
const LEAST_CHARS_PER_ENTRY = 6;

/**
 * The least number of characters `JSON.stringify` writes for the entries
 * of a typed array, `0` for anything else: the engine lists each entry as
 * a string key before any replacer sees the first (a 100 MB `Uint8Array`
 * took 37 s and 4.8 GB to refuse under a 4 MiB bound), so a writing that
 * counts must look this far ahead. Read from internal slots: no getter or
 * Proxy trap runs.
 */
export function typedArrayJsonChars(value: unknown): number {
  if (!ArrayBuffer.isView(value)) return 0;
  try {
    return LEAST_CHARS_PER_ENTRY * apply(typedArrayLength, value, []);
  } catch {
    // A DataView: written as {}.
    return 0;
  }
}

/**
 * The least number of characters `JSON.stringify` writes for a `String`
 * object, its text and quotes, past the one {@linkcode leastJsonChars}
 * gives every object; `0` for anything else. No replacer sees its text,
 * so this adds to a count. Read from internal slots and descriptors:
 * nothing runs. The text is its `ToString`, which runs a `toString` or
 * `Symbol.toPrimitive` put in place of the built-in: of such a String
 * only its quotes are sure.
 */
export function stringObjectJsonChars(value: unknown): number {
  if (typeof value !== "object" || value === null) return 0;
  let held: string;
  try {
    held = apply(stringValueOf, value, []) as string;
  } catch {
    return 0;
  }
  return writesHeldString(value) ? held.length + 1 : 1;
}

const STRING_PROTOTYPE = String.prototype;
const stringToString = String.prototype.toString;

/**
 * Whether a String object's `ToString` is the string it holds: no
 * `Symbol.toPrimitive` on its chain and the built-in `toString` the first
 * one found, a subclass's prototypes between. Asks descriptors only, and
 * never a Proxy, so nothing runs; where a Proxy cannot be told apart, only
 * a String of the usual prototype is vouched for.
 */
function writesHeldString(object: object): boolean {
  let link: object | null = object;
  while (link !== STRING_PROTOTYPE) {
    if (link === null || overridesToString(link)) return false;
    link = getPrototypeOf(link);
    const asksProxy = link !== STRING_PROTOTYPE && link !== null;
    if (asksProxy && SLOT_CHECKS?.isProxy(link) !== false) return false;
  }
  if (overridesToPrimitive(STRING_PROTOTYPE, OBJECT_PROTOTYPE)) return false;
  const found = getOwnPropertyDescriptor(STRING_PROTOTYPE, "toString");
  return found !== undefined && found.value === stringToString;
}

function overridesToString(holder: object): boolean {
  return hasOwn(holder, "toString") || hasOwn(holder, Symbol.toPrimitive);
}

function overridesToPrimitive(...holders: object[]): boolean {
  return holders.some((holder) => hasOwn(holder, Symbol.toPrimitive));
}

/** What the walk found. */
export interface JsonCount {
  /**
   * Whether every value is plain data the walk read, so `JSON.stringify`
   * alone writes it as the checking writer would.
   */
  plain: boolean;
  /**
   * The least JSON length of what the walk visited: of the whole value
   * when at most the bound, else a count past the bound where it stopped.
   */
  counted: number;
}

/** The holder `JSON.stringify` puts the whole value in. */
const ROOT_HOLDER = {};

/** Returned from a visit: the walk stops, leaving the value to the writer. */
const UNSURE = -1;
/** Returned from a visit: the count passed the bound. */
const PAST = -2;
const DONE = 0;

/**
 * The walk. Stopping at the first value it cannot vouch for, it meets
 * values in the checking writer's order, so a context it cannot vouch for
 * is written as if it never ran. Counting on, it skips such a value as the
 * least it surely writes, unread and unwalked, and goes on: an `invoke()`
 * payload's refusal at its bound then precedes its writing.
 */
class PlainWalk implements JsonCount {
  plain = true;
  counted = 0;
  readonly #ancestors = new Set<object>();

  constructor(
    readonly max: number,
    readonly countsOn: boolean,
    readonly checks: SlotChecks | undefined,
  ) {}

  /**
   * One value as the checking writer meets it, in its order: the kind's
   * refusals, the nesting cap, the count, then a cycle.
   */
  visit(holder: object, key: string, value: unknown, depth: number): number {
    const type = typeof value;
    const container = type === "object" && value !== null;
    if (
      container
        ? depth === MAX_NESTING_DEPTH ||
          !this.#isPlainContainer(value as object)
        : type === "function" || type === "symbol" || type === "bigint"
    ) {
      return this.#skip(
        leastJsonChars(holder, key, value, holder === ROOT_HOLDER) +
          stringObjectJsonChars(value) + typedArrayJsonChars(value),
      );
    }
    this.counted += leastJsonChars(holder, key, value, holder === ROOT_HOLDER);
    if (this.counted > this.max) return PAST;
    if (!container) return DONE;
    const object = value as object;
    if (this.#ancestors.has(object)) return this.#skip(0);
    this.#ancestors.add(object);
    const found = isArray(object)
      ? this.#visitItems(object, depth + 1)
      : this.#visitMembers(object, depth + 1);
    this.#ancestors.delete(object);
    return found;
  }

  /** A value the walk cannot vouch for, which surely writes `chars`. */
  #skip(chars: number): number {
    if (!this.countsOn) return UNSURE;
    this.plain = false;
    this.counted += chars;
    return this.counted > this.max ? PAST : DONE;
  }

  /**
   * An array or object of the usual prototype, with no own `toJSON`, and
   * not a Proxy, a boxed primitive or raw JSON: asked in that order, so a
   * Proxy is never asked anything.
   */
  #isPlainContainer(object: object): boolean {
    const { checks } = this;
    if (checks === undefined || checks.isProxy(object)) return false;
    if (checks.isBoxedPrimitive(object)) return false;
    if (isRawJson !== undefined && isRawJson(object)) return false;
    const prototype = getPrototypeOf(object);
    const usual = isArray(object)
      ? prototype === ARRAY_PROTOTYPE
      : prototype === OBJECT_PROTOTYPE || prototype === null;
    return usual && !hasOwn(object, "toJSON");
  }

  /**
   * Each item, read only where no getter answers for it (its own or, for
   * a hole, a prototype's), so reading it runs nothing.
   */
  #visitItems(items: unknown[], depth: number): number {
    const length = items.length;
    for (let i = 0; i < length; i++) {
      const found = getterOf.call(items, i) !== undefined
        ? this.#skip(0)
        : this.visit(items, "", items[i], depth);
      if (found !== DONE) return found;
    }
    return DONE;
  }

  /** Each own enumerable member, in `JSON.stringify`'s order, as items. */
  #visitMembers(record: object, depth: number): number {
    const members = record as Record<string, unknown>;
    for (const name of keys(members)) {
      const found = getterOf.call(members, name) !== undefined
        ? this.#skip(0)
        : this.visit(members, name, members[name], depth);
      if (found !== DONE) return found;
    }
    return DONE;
  }
}

/**
 * A walk of `value`, or `undefined` when one cannot vouch for anything
 * here: no slot checks, or a prototype that holds a `toJSON`, which would
 * apply to every plain object or array (a hole is looked up through them).
 */
function walkOf(max: number, countsOn: boolean): PlainWalk {
  const vouches = SLOT_CHECKS !== undefined &&
    !hasOwn(OBJECT_PROTOTYPE, "toJSON") && !hasOwn(ARRAY_PROTOTYPE, "toJSON") &&
    getPrototypeOf(ARRAY_PROTOTYPE) === OBJECT_PROTOTYPE;
  return new PlainWalk(max, countsOn, vouches ? SLOT_CHECKS : undefined);
}

function run(walk: PlainWalk, value: unknown): number {
  try {
    return walk.visit(ROOT_HOLDER, "", value, 0);
  } catch {
    // An exotic object's own read threw (a module namespace's binding not
    // yet set): what was counted still holds, and the writer meets it.
    walk.plain = false;
    return UNSURE;
  }
}

/**
 * Whether `JSON.stringify(value)` writes `value` as the checking writer
 * would, and the least JSON length that writer counts, found by a walk
 * that stops at the first value it cannot vouch for. It costs at most
 * about `max` steps: each value it visits counts at least one character.
 *
 * @param value The context, not `undefined`.
 * @param max The bound on the count, in characters.
 * @returns Plain data's count, a count past the bound (`plain: false`)
 * over plain data up to there, or `undefined` when the checking writer
 * must decide.
 */
export function countPlainJson(
  value: unknown,
  max: number,
): JsonCount | undefined {
  const walk = walkOf(max, false);
  if (walk.checks === undefined) return undefined;
  const found = run(walk, value);
  if (found === UNSURE) return undefined;
  return { plain: found === DONE, counted: walk.counted };
}

/**
 * The least JSON length of `value` and whether it is plain data, by a walk
 * that counts on past what it cannot vouch for: such a value counts the
 * least it surely writes (a typed array's entries, a `String` object's
 * text, one character for any other object), unread and unwalked, so the
 * walk stops past `max` whatever the value holds (a value that repeats
 * one array at every level writes text twice as long at each).
 *
 * @param value Any value.
 * @param max The bound on the count, in characters.
 * @returns The count, at most `max` or past it, and whether `value` is
 * plain data.
 */
export function countJson(value: unknown, max: number): JsonCount {
  const walk = walkOf(max, true);
  if (walk.checks === undefined) walk.plain = false;
  run(walk, value);
  return { plain: walk.plain, counted: walk.counted };
}
