// This module is browser compatible.

/**
 * The fast way to a run's context text: a walk that reads the context
 * without running any of its code (no getter, no Proxy trap, no `toJSON`,
 * no `valueOf`), finds it is plain data and counts what the checking
 * writer would count, so `JSON.stringify` can write it without a
 * replacer, whose call per value made a large context cost the caller's
 * thread about fifty times the plain writing. Whatever the walk cannot
 * vouch for is left, untouched, to the checking writer.
 *
 * Telling a Proxy apart without asking it takes the runtime's own
 * built-in (`node:util`'s `types`, on Deno and Node); where there is none,
 * as in a browser, the walk vouches for nothing.
 *
 * @module
 */

import { MAX_NESTING_DEPTH } from "./nesting.ts";
import { leastJsonChars } from "./run_inputs.ts";

const { getPrototypeOf, hasOwn, keys } = Object;
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

/** What the walk found. */
export type PlainCount =
  /** Plain data whose least JSON length is `counted`, at most the bound. */
  | { plain: true; counted: number }
  /** Plain data up to the value that took the count to `counted`, past the bound. */
  | { plain: false; counted: number }
  /** Something the walk does not vouch for; nothing of it was run. */
  | undefined;

/** The holder `JSON.stringify` puts the whole value in. */
const ROOT_HOLDER = {};

/** Returned from a visit: the walk stops, leaving the value to the writer. */
const UNSURE = -1;
/** Returned from a visit: the count passed the bound. */
const PAST = -2;
const DONE = 0;

class PlainWalk {
  counted = 0;
  readonly #ancestors = new Set<object>();

  constructor(readonly max: number, readonly checks: SlotChecks) {}

  /**
   * One value as the checking writer meets it, in its order: the kind's
   * refusals, the nesting cap, the count, then a cycle; a value it would
   * refuse or could run code for is left to it.
   */
  visit(holder: object, key: string, value: unknown, depth: number): number {
    const type = typeof value;
    if (type === "function" || type === "symbol" || type === "bigint") {
      return UNSURE;
    }
    const container = type === "object" && value !== null;
    if (container && !this.#isPlainContainer(value as object)) return UNSURE;
    if (container && depth === MAX_NESTING_DEPTH) return UNSURE;
    this.counted += leastJsonChars(holder, key, value, holder === ROOT_HOLDER);
    if (this.counted > this.max) return PAST;
    if (!container) return DONE;
    const object = value as object;
    if (this.#ancestors.has(object)) return UNSURE;
    this.#ancestors.add(object);
    const found = isArray(object)
      ? this.#visitItems(object, depth + 1)
      : this.#visitMembers(object, depth + 1);
    this.#ancestors.delete(object);
    return found;
  }

  /**
   * An array or object of the usual prototype, with no own `toJSON`, and
   * not a Proxy, a boxed primitive or raw JSON: asked in that order, so a
   * Proxy is never asked anything.
   */
  #isPlainContainer(object: object): boolean {
    if (this.checks.isProxy(object)) return false;
    if (this.checks.isBoxedPrimitive(object)) return false;
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
      if (getterOf.call(items, i) !== undefined) return UNSURE;
      const found = this.visit(items, "", items[i], depth);
      if (found !== DONE) return found;
    }
    return DONE;
  }

  /** Each own enumerable member, in `JSON.stringify`'s order, as items. */
  #visitMembers(record: object, depth: number): number {
    const members = record as Record<string, unknown>;
    for (const name of keys(members)) {
      if (getterOf.call(members, name) !== undefined) return UNSURE;
      const found = this.visit(members, name, members[name], depth);
      if (found !== DONE) return found;
    }
    return DONE;
  }
}

/**
 * Whether `JSON.stringify(value)` writes `value` as the checking writer
 * would, and the least JSON length that writer counts; read without
 * running any code of the value's, so whatever answer, the writer that
 * follows is the only one to run it. The walk costs at most about `max`
 * steps: each value it visits counts at least one character.
 *
 * @param value The context, not `undefined`.
 * @param max The bound on the count, in characters.
 * @returns The count, plain or past the bound, or `undefined` when the
 * checking writer must decide.
 */
export function countPlainJson(value: unknown, max: number): PlainCount {
  if (SLOT_CHECKS === undefined) return undefined;
  // A toJSON they hold would apply to every plain object or array, and
  // a hole is looked up through them.
  if (
    hasOwn(OBJECT_PROTOTYPE, "toJSON") || hasOwn(ARRAY_PROTOTYPE, "toJSON") ||
    getPrototypeOf(ARRAY_PROTOTYPE) !== OBJECT_PROTOTYPE
  ) {
    return undefined;
  }
  const walk = new PlainWalk(max, SLOT_CHECKS);
  let found: number;
  try {
    found = walk.visit(ROOT_HOLDER, "", value, 0);
  } catch {
    // An exotic object's own read threw (a module namespace's binding
    // not yet set): the writer meets it itself.
    return undefined;
  }
  if (found === UNSURE) return undefined;
  return { plain: found === DONE, counted: walk.counted };
}
