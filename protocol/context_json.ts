// This module is browser compatible.

/**
 * The one rule for a run's `context`, the JSON data a guest's
 * default-exported function is called with, on every tier: what
 * `JSON.stringify` writes, except that a function, a symbol or a BigInt
 * anywhere in it is refused instead of being dropped silently, so the guest
 * never sees less than the caller passed.
 *
 * @module
 */

import { countNesting, MAX_NESTING_DEPTH } from "./nesting.ts";
import type { FailureDetail } from "./run_result.ts";
import {
  countPlainJson,
  leastJsonChars,
  stringObjectJsonChars,
  typedArrayJsonChars,
} from "./plain_json.ts";
import { contextOverBound, utf8BytesUpTo } from "./run_inputs.ts";

/** A value `JSON.stringify` would drop or cannot write. */
class NotJsonData extends TypeError {}

/** Thrown to stop writing a context once it is past its bound. */
class OverBound extends Error {
  constructor(readonly counted: number) {
    super("over bound");
  }
}

/**
 * A replacer that refuses what is not data and counts levels as
 * `JSON.stringify` writes them, so a context deeper than the cap is
 * refused before the engine's stack can give out.
 */
function dataOnly(
  maxChars = Infinity,
): (this: unknown, key: string, value: unknown) => unknown {
  const within = countNesting();
  let counted = 0;
  // The first call is for the wrapper `JSON.stringify` puts the value in.
  let root = true;
  return function (this: unknown, key: string, value: unknown): unknown {
    const type = typeof value;
    if (type === "function" || type === "symbol" || type === "bigint") {
      throw new NotJsonData(
        `it holds a ${type === "bigint" ? "BigInt" : type}`,
      );
    }
    if (!within(this, value)) {
      throw new NotJsonData(
        `it is nested deeper than ${MAX_NESTING_DEPTH} levels; pass flatter data`,
      );
    }
    if (maxChars !== Infinity) {
      counted += leastJsonChars(this, key, value, root);
      root = false;
      // A String object's text is written without another call here, a
      // typed array's entries only once the engine has listed them all.
      counted += stringObjectJsonChars(value);
      const ahead = counted + typedArrayJsonChars(value);
      if (ahead > maxChars) throw new OverBound(ahead);
    }
    return value;
  };
}

function reasonOf(error: unknown): string {
  if (error instanceof NotJsonData) return error.message;
  const message = error instanceof Error ? error.message : String(error);
  return `writing it failed: ${message.split("\n", 1)[0]}`;
}

/**
 * The JSON text of a run's context, or `undefined` when there is none.
 * Cycles, values nested deeper than {@linkcode MAX_NESTING_DEPTH} levels,
 * functions, symbols and BigInts are refused; `toJSON` methods (a `Date`'s) run as
 * `JSON.stringify` runs them, and `NaN` and infinities become `null`.
 *
 * @param where What was being done, for messages: `"run the declaration"`.
 * @param context The context given, or `undefined`.
 * @returns The JSON text, or `undefined` for `undefined`.
 * @throws {TypeError} When the context is not JSON data; the message names
 * why.
 *
 * @example
 * ```ts
 * import { contextJson } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(contextJson("run the guest", { a: [1, "b"] }), '{"a":[1,"b"]}');
 * assert.equal(contextJson("run the guest", undefined), undefined);
 * assert.throws(
 *   () => contextJson("run the guest", { callback() {} }),
 *   /Cannot run the guest: context must be JSON data, but it holds a function/,
 * );
 * ```
 */
export function contextJson(
  where: string,
  context: unknown,
): string | undefined {
  if (context === undefined) return undefined;
  const plain = countPlainJson(context, Infinity) !== undefined;
  return writeContext(where, context, plain, Infinity);
}

/**
 * The context's JSON text: by `JSON.stringify` alone when the plain walk
 * vouched for it, else by the checking writer, which throws `OverBound`
 * past `maxChars`. A context that writes no text (its `toJSON()` answers
 * `undefined`; a function or symbol is refused while written) is no JSON
 * data.
 */
function writeContext(
  where: string,
  context: unknown,
  plain: boolean,
  maxChars: number,
): string {
  let json: string | undefined;
  try {
    json = plain
      ? JSON.stringify(context)
      : JSON.stringify(context, dataOnly(maxChars));
  } catch (error) {
    if (error instanceof OverBound) throw error;
    throw new TypeError(
      `Cannot ${where}: context must be JSON data, but ${reasonOf(error)}`,
      { cause: error },
    );
  }
  if (json === undefined) {
    throw new TypeError(
      `Cannot ${where}: context must be JSON data, but its toJSON() answers undefined, which writes no JSON text`,
    );
  }
  return json;
}

/** A run's context as JSON text, or the failure that refuses it. */
export type ReadContext =
  | { ok: true; json: string }
  | { ok: false; error: FailureDetail };

/**
 * The JSON text of a run's context, as {@linkcode contextJson} writes it
 * (`"null"` for none), or a `DECLARATION_INVALID` failure when the text
 * holds more than `maxContextBytes` bytes of UTF-8. The writing stops as
 * soon as the characters written pass the bound, so a context of any size
 * costs the host work in proportion to the bound, not to the context.
 *
 * @param where What was being done, for messages: `"run the declaration"`.
 * @param context The context given, or `undefined`.
 * @param maxContextBytes The bound on the JSON text, in bytes of UTF-8.
 * @returns The JSON text, or the failure.
 * @throws {TypeError} When the context is not JSON data, as
 * {@linkcode contextJson} does.
 *
 * @example
 * ```ts
 * import { readContextJson } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(readContextJson("run", [1, 2], 16), { ok: true, json: "[1,2]" });
 * const refused = readContextJson("run", "x".repeat(100), 16);
 * assert.equal(refused.ok ? "" : refused.error.code, "DECLARATION_INVALID");
 * ```
 */
export function readContextJson(
  where: string,
  context: unknown,
  maxContextBytes: number,
): ReadContext {
  if (context === undefined) return { ok: true, json: "null" };
  const plain = countPlainJson(context, maxContextBytes);
  if (plain?.plain === false) {
    return {
      ok: false,
      error: contextOverBound(plain.counted, maxContextBytes),
    };
  }
  let json: string;
  try {
    json = writeContext(where, context, plain?.plain === true, maxContextBytes);
  } catch (error) {
    if (!(error instanceof OverBound)) throw error;
    return {
      ok: false,
      error: contextOverBound(error.counted, maxContextBytes),
    };
  }
  const bytes = utf8BytesUpTo(json, maxContextBytes);
  return bytes <= maxContextBytes
    ? { ok: true, json }
    : { ok: false, error: contextOverBound(bytes, maxContextBytes) };
}
