// This module is browser compatible.

/**
 * The JSON text of plain data, without the marshalling's walk. Most
 * payloads (a plugin request the host built itself, say) and most answers
 * of trusted code are plain data, which `JSON.stringify` writes as they
 * are; only the rest needs the marshalling's replacer, which costs every
 * value a call from the engine back into JavaScript.
 *
 * @module
 */

import type { Marshallers } from "./marshal.ts";

/** Deeper values are left to the marshalling, which also finds cycles. */
const MAX_DEPTH = 64;

/** How many more values a walk may visit. */
interface Budget {
  left: number;
}

/**
 * Whether `JSON.stringify` writes `value` as the marshalling would: it is
 * built of strings, numbers, booleans, `null`, `undefined`, arrays and
 * objects whose prototype is `Object.prototype`, with no functions (so no
 * `toJSON`, which is looked for before any entry), symbols or BigInts, at
 * most `MAX_DEPTH` deep.
 */
function isPlainData(value: unknown, budget: Budget, depth = 0): boolean {
  // Each value visited writes a character at least: a walk past the
  // bound is left to the marshalling, which stops there.
  if (--budget.left < 0) return false;
  switch (typeof value) {
    case "string":
    case "boolean":
    case "number":
    case "undefined":
      return true;
    case "object":
      break;
    default:
      return false;
  }
  if (value === null) return true;
  if (depth === MAX_DEPTH) return false;
  // What toJSON answers is written instead: left to the marshalling, which
  // counts it, where walking the value itself could take without end.
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") {
    return false;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (!isPlainData(value[i], budget, depth + 1)) return false;
    }
    return true;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return false;
  const record = value as Record<string, unknown>;
  for (const key in record) {
    if (
      Object.hasOwn(record, key) &&
      !isPlainData(record[key], budget, depth + 1)
    ) {
      return false;
    }
  }
  return true;
}

/**
 * `marshal.toWireJson(value)`, the same text and the same errors, without
 * the replacer's walk when the value is plain data. A getter of the
 * payload runs twice: once here, once in `JSON.stringify`. A value with
 * more than `maxValues` values in it is left to the marshalling (give its
 * `maxJsonChars`, as each value writes a character at least).
 *
 * @throws {Error} What `marshal.toWireJson` throws for values it refuses.
 */
export function payloadJson(
  value: unknown,
  marshal: Marshallers,
  maxValues = Infinity,
): string {
  return isPlainData(value, { left: maxValues })
    ? JSON.stringify(value) ?? "null"
    : marshal.toWireJson(value);
}
