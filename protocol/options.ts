// This module is browser compatible.

/**
 * The rules for options objects. {@linkcode readOptions} reads an options
 * object once into a frozen snapshot and refuses a key it does not know
 * (a misspelt limit must not leave the default in place without a word).
 * {@linkcode readIntegerOption} reads one integer option (limits, sizes,
 * counts): missing gives the default, a value of the wrong type is a
 * `TypeError`, and a value that is not an integer in range is a
 * `RangeError`, each with a message that names the option, its range and
 * its unit.
 *
 * @module
 */

import { MAX_OPTIONS_DEPTH } from "./host_fields.ts";

/**
 * The longest delay timers (`setTimeout`, `AbortSignal.timeout`) honour, in
 * milliseconds: the upper bound of every time limit.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * The largest V8 heap cap a sandbox accepts, in bytes (64 GiB): the bound of
 * `memoryLimitBytes` on the worker and process tiers and of a `node:vm`
 * realm.
 */
export const MAX_V8_HEAP_BYTES = 64 * 1024 * 1024 * 1024;

/**
 * The largest memory limit of a QuickJS engine, in bytes (2 GiB - 1): the
 * most its 32-bit WebAssembly build can address and count, on the loader
 * and in the vm tier's QuickJS realm.
 */
export const MAX_QUICKJS_MEMORY_BYTES = 2 * 1024 * 1024 * 1024 - 1;

/** The range, and optionally the unit, of an integer option. */
export interface IntegerRange {
  /** The smallest value allowed. */
  readonly min: number;
  /** The largest value allowed. */
  readonly max: number;
  /** The unit, such as `"milliseconds"` or `"bytes"`; none for a count. */
  readonly unit?: string;
}

/**
 * The range of a time limit in milliseconds: from 1 to the longest delay a
 * timer takes ({@linkcode MAX_TIMER_MS}).
 *
 * @example
 * ```ts
 * import { readIntegerOption, TIMEOUT_MS_RANGE } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(readIntegerOption("serve", "timeoutMs", 500, 1000, TIMEOUT_MS_RANGE), 500);
 * assert.throws(
 *   () => readIntegerOption("serve", "timeoutMs", 0, 1000, TIMEOUT_MS_RANGE),
 *   /Cannot serve: timeoutMs must be an integer from 1 to 2147483647 milliseconds/,
 * );
 * ```
 */
export const TIMEOUT_MS_RANGE: IntegerRange = Object.freeze({
  min: 1,
  max: MAX_TIMER_MS,
  unit: "milliseconds",
});

/**
 * The default of `maxQueued`, the bound on the calls that may wait for a
 * runner (of a QuickJS pool, a worker or process sandbox, a catalog's
 * requests): 100,000. Far above an ordinary burst (a thousand runs handed
 * at once to a pool of two all wait and run), yet a caller that submits
 * faster than the runners finish is refused (`SANDBOX_BUSY`, or
 * `CATALOG_BUSY` for a catalog) long before the waiting calls hold the
 * host's memory.
 */
export const DEFAULT_MAX_QUEUED = 100_000;

/**
 * The range of `maxQueued`: from 0 (no call waits; one that finds every
 * runner busy is refused) to 1,000,000,000.
 *
 * @example
 * ```ts
 * import { MAX_QUEUED_RANGE, readIntegerOption } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.throws(
 *   () => readIntegerOption("create a pool", "maxQueued", -1, 10, MAX_QUEUED_RANGE),
 *   /Cannot create a pool: maxQueued must be an integer from 0 to 1000000000/,
 * );
 * ```
 */
export const MAX_QUEUED_RANGE: IntegerRange = Object.freeze({
  min: 0,
  max: 1_000_000_000,
});

/**
 * Reads an integer option.
 *
 * @param where What was being done, for messages: `"create the QuickJS pool"`.
 * @param name The option's name.
 * @param value The value given, or `undefined`.
 * @param fallback The value when none was given.
 * @param range The values allowed.
 * @returns The value, or `fallback`.
 * @throws {TypeError} When `value` is given and is not a number.
 * @throws {RangeError} When `value` is not an integer in `range`.
 *
 * @example
 * ```ts
 * import { readIntegerOption } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const range = { min: 1, max: 64 };
 * assert.equal(readIntegerOption("create a pool", "size", undefined, 2, range), 2);
 * assert.equal(readIntegerOption("create a pool", "size", 4, 2, range), 4);
 * assert.throws(
 *   () => readIntegerOption("create a pool", "size", 0, 2, range),
 *   /Cannot create a pool: size must be an integer from 1 to 64/,
 * );
 * ```
 */
export function readIntegerOption(
  where: string,
  name: string,
  value: unknown,
  fallback: number,
  range: IntegerRange,
): number {
  if (value === undefined) return fallback;
  const unit = range.unit === undefined ? "" : ` ${range.unit}`;
  if (typeof value !== "number") {
    throw new TypeError(
      `Cannot ${where}: ${name} must be a number${
        range.unit === undefined ? "" : ` of ${range.unit}`
      }`,
    );
  }
  if (!Number.isInteger(value) || value < range.min || value > range.max) {
    throw new RangeError(
      `Cannot ${where}: ${name} must be an integer from ${range.min} to ${range.max}${unit}`,
    );
  }
  return value;
}

/**
 * The names an options object may hold, each mapped to `true`: written as
 * an object so the compiler checks that it lists every key of `T` and no
 * other.
 */
export type OptionKeys<T> = { readonly [K in keyof Required<T>]: true };

const { getPrototypeOf, getOwnPropertyDescriptor, freeze, keys, create } =
  Object;
const { ownKeys, get } = Reflect;
const OBJECT_PROTOTYPE: object = Object.prototype;

/**
 * Reads an options object once, refusing keys it does not know.
 *
 * An option counts when it is a property of `options` or of a prototype
 * below `Object.prototype`: an object made with
 * `Object.create(defaults)` passes its defaults on, as users expect, while
 * a key someone added to `Object.prototype` itself is neither read nor
 * refused. Every enumerable string key found that way must be one of
 * `known`; symbol keys and non-enumerable keys that are not options are
 * left alone. Each known option present is read once (a getter runs once,
 * a Proxy's `get` trap runs once), and the caller works from the frozen
 * snapshot this returns, so a getter cannot answer one value at the check
 * and another at the use. An option given as `undefined` is the same as
 * one left out.
 *
 * @param where What was being done, for messages: `"create the QuickJS pool"`.
 * @param options The options given, or `undefined` for none.
 * @param known Every option name, each mapped to `true`.
 * @param name The name of a nested options object, such as `"limits"`,
 *   which messages then put before each key (`limits.timeoutMs`).
 * @returns A frozen snapshot with a `null` prototype holding the options
 *   given, without those that were `undefined`.
 * @throws {TypeError} When `options` is not an object, when it holds an
 *   unknown key (the message names the closest known one when one is
 *   near), or when reading it throws.
 *
 * @example
 * ```ts
 * import { readOptions } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * interface PoolOptions {
 *   size?: number;
 *   timeoutMs?: number;
 * }
 * const known = { size: true, timeoutMs: true } as const;
 * const read = (options?: PoolOptions) =>
 *   readOptions("create a pool", options, known);
 *
 * assert.equal(read({ size: 2 }).size, 2);
 * assert.equal(read(Object.create({ size: 3 })).size, 3);
 * assert.throws(
 *   () => read({ timeoutMS: 100 } as PoolOptions),
 *   /Cannot create a pool: unknown option timeoutMS; did you mean timeoutMs\?/,
 * );
 * ```
 */
export function readOptions<T extends object>(
  where: string,
  options: T | undefined,
  known: OptionKeys<T>,
  name = "options",
): Readonly<T> {
  if (options === undefined) return freeze(create(null));
  if (typeof options !== "object" || options === null || isArray(options)) {
    throw new TypeError(`Cannot ${where}: ${name} must be an object`);
  }
  const prefix = name === "options" ? "" : `${name}.`;
  const names = keys(known);
  const present = findOptionNames(where, options, names, prefix);
  const snapshot: Record<string, unknown> = create(null);
  for (const key of present) {
    const value = readOne(where, options, key, prefix);
    if (value !== undefined) snapshot[key] = value;
  }
  return freeze(snapshot) as Readonly<T>;
}

/**
 * Walks `options` and its prototypes down to `Object.prototype`, refusing
 * an enumerable key that is not an option, and returns the options found.
 */
function findOptionNames(
  where: string,
  options: object,
  names: readonly string[],
  prefix: string,
): string[] {
  const seen = new Set<string>();
  const present: string[] = [];
  try {
    let level: object | null = options;
    for (let depth = 0; level !== null && level !== OBJECT_PROTOTYPE; depth++) {
      if (depth === MAX_OPTIONS_DEPTH) {
        throw new TypeError(
          `its prototype chain is deeper than ${MAX_OPTIONS_DEPTH} objects`,
        );
      }
      for (const key of ownKeys(level)) {
        if (typeof key !== "string" || seen.has(key)) continue;
        seen.add(key);
        if (names.includes(key)) {
          present.push(key);
        } else if (getOwnPropertyDescriptor(level, key)?.enumerable) {
          throw new UnknownOption(key);
        }
      }
      level = getPrototypeOf(level);
    }
  } catch (error) {
    if (error instanceof UnknownOption) {
      const near = closestName(error.key, names);
      throw new TypeError(
        `Cannot ${where}: unknown option ${prefix}${error.key}${
          near === undefined ? "" : `; did you mean ${prefix}${near}?`
        }`,
      );
    }
    const what = prefix === "" ? "the options object" : prefix.slice(0, -1);
    throw new TypeError(
      `Cannot ${where}: ${what} could not be read: ${messageOf(error)}`,
      { cause: error },
    );
  }
  return present;
}

/**
 * Copies a list option once, its holes read as `undefined`, so the caller
 * checks and keeps the copy: the entries used are the entries checked,
 * whatever a getter or the array's own methods would answer later.
 *
 * @param where What was being done, for messages: `"create a vm sandbox"`.
 * @param name The option's name, as messages give it: `"policy.fetch"`.
 * @param value The value given.
 * @returns The copy, or `null` when `value` is not an array.
 * @throws {TypeError} When reading it throws (a getter, a Proxy's trap):
 *   `Cannot create a vm sandbox: policy.fetch could not be read: …`.
 *
 * @example
 * ```ts
 * import { copyListOption } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * // deno-lint-ignore no-sparse-arrays
 * assert.deepEqual(copyListOption("serve", "names", ["a", , "b"]), ["a", undefined, "b"]);
 * assert.equal(copyListOption("serve", "names", "a"), null);
 * ```
 */
export function copyListOption(
  where: string,
  name: string,
  value: unknown,
): unknown[] | null {
  if (typeof value !== "object" || value === null || !isArray(value)) {
    return null;
  }
  return readingOption(where, name, () => Array.from(value as unknown[]));
}

/**
 * Runs `read`, which reads the option `name`, and turns what it throws (a
 * getter, a Proxy's trap) into a `TypeError` that names the option.
 *
 * @param where What was being done, for messages: `"create the process sandbox"`.
 * @param name The option's name: `"env"`.
 * @param read Reads the option.
 * @returns What `read` returns.
 * @throws {TypeError} When `read` throws.
 *
 * @example
 * ```ts
 * import { readingOption } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.throws(
 *   () => readingOption("serve", "env", () => { throw new Error("locked"); }),
 *   { name: "TypeError", message: "Cannot serve: env could not be read: locked" },
 * );
 * ```
 */
export function readingOption<T>(
  where: string,
  name: string,
  read: () => T,
): T {
  try {
    return read();
  } catch (error) {
    throw new TypeError(
      `Cannot ${where}: ${name} could not be read: ${messageOf(error)}`,
      { cause: error },
    );
  }
}

/** An unknown key, carried out of the walk to be reported. */
class UnknownOption {
  constructor(readonly key: string) {}
}

/** `Array.isArray`, where a revoked Proxy counts as not an array. */
function isArray(value: object): boolean {
  try {
    return Array.isArray(value);
  } catch {
    return false;
  }
}

function readOne(
  where: string,
  options: object,
  key: string,
  prefix: string,
): unknown {
  try {
    return get(options, key);
  } catch (error) {
    throw new TypeError(
      `Cannot ${where}: reading option ${prefix}${key} threw: ${
        messageOf(error)
      }`,
      { cause: error },
    );
  }
}

/**
 * What was thrown, as text: an error's message, or the value itself, and
 * a fixed phrase when reading either throws (a Proxy, a getter). An error
 * made in another realm (a frame, a `node:vm` context) is worded as a
 * local one is, by its message alone, and its `message` is read once.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { messageOf } from "./options.ts";
 *
 * assert.equal(messageOf(new Error("closed")), "closed");
 * assert.equal(messageOf("closed"), "closed");
 * ```
 *
 * @param error What was thrown.
 * @returns Its text.
 */
export function messageOf(error: unknown): string {
  try {
    return isError(error) ? String(error.message) : String(error);
  } catch {
    return "a value that cannot be read as text";
  }
}

/** `Error.isError`, where the runtime has it (not Node 20). */
const errorBrand = (Error as { isError?: (value: unknown) => boolean })
  .isError;

/** The longest prototype chain searched for an error's prototype. */
const MAX_PROTOTYPE_DEPTH = 64;

/**
 * Whether a value is an error of any realm. `Error.isError` asks its
 * internal slot and runs no code of the value's; without it, an error of
 * another realm is known by an `Error.prototype` in its prototype chain,
 * read through descriptors, so no getter of the value's is called here and
 * its `message` getter runs once, when it is read.
 */
function isError(value: unknown): value is Error {
  if (value instanceof Error) return true;
  if (typeof value !== "object" || value === null) return false;
  if (errorBrand !== undefined) return errorBrand(value);
  let prototype = getPrototypeOf(value);
  for (let depth = 0; prototype !== null; depth++) {
    if (depth >= MAX_PROTOTYPE_DEPTH) return false;
    if (isErrorPrototype(prototype)) return true;
    prototype = getPrototypeOf(prototype);
  }
  return false;
}

/**
 * Whether an object looks like some realm's `Error.prototype`: its own
 * `name` is the data `"Error"`, its own `message` is data, and its
 * prototype is an `Object.prototype` (whose prototype is null).
 */
function isErrorPrototype(prototype: object): boolean {
  const name = getOwnPropertyDescriptor(prototype, "name");
  const message = getOwnPropertyDescriptor(prototype, "message");
  const above = getPrototypeOf(prototype);
  return name?.value === "Error" && message !== undefined &&
    "value" in message && above !== null && getPrototypeOf(above) === null;
}

/**
 * The known name a mistyped key most likely meant: the same letters in
 * another case, a name the key starts (a unit left off, as in
 * `memoryLimit`), the same name in the singular (`capability`), or one
 * within a few edits.
 */
function closestName(
  key: string,
  names: readonly string[],
): string | undefined {
  const lower = key.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const name of names) {
    const candidate = name.toLowerCase();
    const distance = (lower.length >= 4 && candidate.startsWith(lower)) ||
        singular(lower) === singular(candidate)
      ? 1
      : editDistance(lower, candidate);
    if (distance < bestDistance) {
      best = name;
      bestDistance = distance;
    }
  }
  const allowed = Math.max(1, Math.floor(key.length / 5));
  return bestDistance <= allowed ? best : undefined;
}

/** A lower-case name without its plural ending. */
function singular(name: string): string {
  return name.replace(/ies$/, "y").replace(/s$/, "");
}

/**
 * Edit distance where swapping two neighbouring letters counts as one edit
 * (optimal string alignment), as in `singal` for `signal`.
 */
function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      let best = Math.min(previous[j]! + 1, row[j - 1]! + 1, substitution);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, before[j - 2]! + 1);
      }
      row.push(best);
    }
    before = previous;
    previous = row;
  }
  return previous[b.length]!;
}
