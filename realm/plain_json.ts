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

/**
 * Whether `JSON.stringify` writes `value` as the marshalling would: it is
 * built of strings, numbers, booleans, `null`, `undefined`, arrays and
 * objects whose prototype is `Object.prototype`, with no functions (so no
 * `toJSON`), symbols or BigInts, at most `MAX_DEPTH` deep.
 */
function isPlainData(value: unknown, depth = 0): boolean {
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
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (!isPlainData(value[i], depth + 1)) return false;
    }
    return true;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return false;
  const record = value as Record<string, unknown>;
  for (const key in record) {
    if (
      Object.hasOwn(record, key) && !isPlainData(record[key], depth + 1)
    ) {
      return false;
    }
  }
  return true;
}

/**
 * `marshal.toWireJson(value)`, the same text and the same errors, without
 * the replacer's walk when the value is plain data. A getter of the
 * payload runs twice: once here, once in `JSON.stringify`.
 *
 * @throws {Error} What `marshal.toWireJson` throws for values it refuses.
 */
export function payloadJson(value: unknown, marshal: Marshallers): string {
  return isPlainData(value)
    ? JSON.stringify(value) ?? "null"
    : marshal.toWireJson(value);
}
