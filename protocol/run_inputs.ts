// This module is browser compatible.

/**
 * The bounds on what crosses between a run and its caller: the guest
 * source and the context, handed to the run before any guest code runs,
 * and the answer it hands back. Every tier reads, scans, copies and parses
 * them on the caller's thread, outside the guest's own limits, so each is
 * measured first, in time that does not grow with its size: a source or
 * context past its bound is refused with `DECLARATION_INVALID` before the
 * costly work, and an answer past its own is refused with
 * `RESULT_NOT_SERIALIZABLE`, its writing stopped in the guest once past
 * the bound and its bytes counted before it is parsed.
 *
 * @module
 */

import type { IntegerRange, OptionKeys } from "./options.ts";
import { readIntegerOption } from "./options.ts";
import {
  type FailureDetail,
  MAX_RESULT_JSON_CHARS,
  runFailures,
} from "./run_result.ts";

const MIB = 1024 * 1024;

/** The bounds on a run's inputs and its answer, in bytes of UTF-8. */
export interface RunInputBounds {
  /** The most bytes a declaration's source may hold. */
  maxSourceBytes: number;
  /** The most bytes the JSON text of a run's context may hold. */
  maxContextBytes: number;
  /** The most bytes the JSON text of a run's answer may hold. */
  maxResultBytes: number;
}

/** The bound options a factory (its runs' default) and a run take. */
export interface RunInputBoundOptions {
  /**
   * The most bytes of UTF-8 a run's source may hold; a longer one is
   * refused with `DECLARATION_INVALID` before it is scanned or copied.
   *
   * @default {4194304}
   */
  maxSourceBytes?: number | undefined;
  /**
   * The most bytes of UTF-8 the JSON text of a run's context may hold; a
   * larger one is refused with `DECLARATION_INVALID`, its writing stopped
   * once past the bound.
   *
   * @default {4194304}
   */
  maxContextBytes?: number | undefined;
  /**
   * The most bytes of UTF-8 the JSON text of a run's answer (the guest's
   * value) may hold, at most `MAX_RESULT_JSON_CHARS`; a larger one is
   * refused with `RESULT_NOT_SERIALIZABLE`, its writing stopped in the
   * guest once past the bound. Not on the vm tier, whose answers
   * `maxPayloadBytes` bounds.
   *
   * @default {4194304}
   */
  maxResultBytes?: number | undefined;
}

/**
 * The default bounds: 4 MiB of source (four times the largest bundled
 * pack module measured), 4 MiB of context JSON and 4 MiB of answer JSON
 * (each the vm tier's `maxPayloadBytes`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DEFAULT_RUN_INPUT_BOUNDS } from "@cordon/cordon/protocol";
 *
 * assert.equal(DEFAULT_RUN_INPUT_BOUNDS.maxSourceBytes, 4 * 1024 * 1024);
 * assert.equal(DEFAULT_RUN_INPUT_BOUNDS.maxResultBytes, 4 * 1024 * 1024);
 * ```
 */
export const DEFAULT_RUN_INPUT_BOUNDS: Readonly<RunInputBounds> = Object
  .freeze({
    maxSourceBytes: 4 * MIB,
    maxContextBytes: 4 * MIB,
    maxResultBytes: 4 * MIB,
  });

/**
 * The range of the bounds on a run's inputs: up to 1 GiB, past the longest
 * string V8 makes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RUN_INPUT_BYTES_RANGE } from "@cordon/cordon/protocol";
 *
 * assert.equal(RUN_INPUT_BYTES_RANGE.unit, "bytes");
 * ```
 */
export const RUN_INPUT_BYTES_RANGE: IntegerRange = Object.freeze({
  min: 0,
  max: 1024 * MIB,
  unit: "bytes",
});

/**
 * The range of `maxResultBytes`: up to `MAX_RESULT_JSON_CHARS` (128 MiB),
 * as much as an answer's text may hold and still become one string on the
 * caller whatever characters it holds.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MAX_RESULT_JSON_CHARS, RESULT_BYTES_RANGE } from "@cordon/cordon/protocol";
 *
 * assert.equal(RESULT_BYTES_RANGE.max, MAX_RESULT_JSON_CHARS);
 * ```
 */
export const RESULT_BYTES_RANGE: IntegerRange = Object.freeze({
  min: 0,
  max: MAX_RESULT_JSON_CHARS,
  unit: "bytes",
});

/**
 * The names of the bound options, as `readOptions` takes them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RUN_INPUT_BOUND_KEYS } from "@cordon/cordon/protocol";
 *
 * assert.equal(RUN_INPUT_BOUND_KEYS.maxContextBytes, true);
 * ```
 */
export const RUN_INPUT_BOUND_KEYS: OptionKeys<RunInputBounds> = Object.freeze(
  { maxSourceBytes: true, maxContextBytes: true, maxResultBytes: true },
);

/**
 * Reads the bound options of `where`, each by the integer-option rule,
 * falling back to `base`.
 *
 * @param where What was being done, for messages.
 * @param options The options as read, a bound absent or a number.
 * @param base The bounds when an option is absent.
 * @returns The bounds.
 * @throws {TypeError} When a bound is not a number.
 * @throws {RangeError} When a bound is not an integer from 0 to 1 GiB
 * (`maxResultBytes`: to `MAX_RESULT_JSON_CHARS`).
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DEFAULT_RUN_INPUT_BOUNDS, readRunInputBounds } from "@cordon/cordon/protocol";
 *
 * const bounds = readRunInputBounds("run", { maxSourceBytes: 10 }, DEFAULT_RUN_INPUT_BOUNDS);
 * assert.equal(bounds.maxSourceBytes, 10);
 * assert.throws(() => readRunInputBounds("run", { maxContextBytes: -1 }, bounds), RangeError);
 * ```
 */
export function readRunInputBounds(
  where: string,
  options: Partial<Record<keyof RunInputBounds, unknown>>,
  base: Readonly<RunInputBounds>,
): RunInputBounds {
  const read = (key: keyof RunInputBounds, range = RUN_INPUT_BYTES_RANGE) =>
    readIntegerOption(where, key, options[key], base[key], range);
  return {
    maxSourceBytes: read("maxSourceBytes"),
    maxContextBytes: read("maxContextBytes"),
    maxResultBytes: read("maxResultBytes", RESULT_BYTES_RANGE),
  };
}

/**
 * The bytes of UTF-8 that `text` takes, counted no further than a little
 * past `max`: a text of more than `max` UTF-16 units is past it at once, so
 * the count costs at most `max` steps whatever the text's length.
 *
 * @param text Any text.
 * @param max The bound.
 * @returns The exact byte count when it is at most `max`; otherwise a
 * count past `max` that the text takes at least.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { utf8BytesUpTo } from "@cordon/cordon/protocol";
 *
 * assert.equal(utf8BytesUpTo("é", 10), 2);
 * assert.equal(utf8BytesUpTo("x".repeat(100), 10), 100);
 * ```
 */
export function utf8BytesUpTo(text: string, max: number): number {
  // Every UTF-16 unit takes at least one byte.
  return text.length > max ? text.length : exactUtf8Bytes(text, max);
}

function exactUtf8Bytes(text: string, max: number): number {
  let bytes = 0;
  for (let i = 0; i < text.length && bytes <= max; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && isLowSurrogate(text, i + 1)) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

function isLowSurrogate(text: string, at: number): boolean {
  const unit = text.charCodeAt(at);
  return unit >= 0xdc00 && unit <= 0xdfff;
}

/**
 * The refusal of a run whose source holds more than `maxSourceBytes`
 * bytes of UTF-8, or `null` when it is within the bound. It costs at most
 * `maxSourceBytes` steps, whatever the source's length.
 *
 * @param source The declaration's source.
 * @param maxSourceBytes The bound.
 * @returns The `DECLARATION_INVALID` failure, or `null`.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sourceOverBound } from "@cordon/cordon/protocol";
 *
 * assert.equal(sourceOverBound("export default 1;", 1024), null);
 * assert.equal(sourceOverBound("x".repeat(2000), 1024)?.code, "DECLARATION_INVALID");
 * ```
 */
export function sourceOverBound(
  source: string,
  maxSourceBytes: number,
): FailureDetail | null {
  const bytes = utf8BytesUpTo(source, maxSourceBytes);
  if (bytes <= maxSourceBytes) return null;
  // The bytes counted, not the characters: a source of fewer characters
  // than the bound can hold more bytes than it.
  return {
    code: "DECLARATION_INVALID",
    name: "DeclarationError",
    message:
      `The declaration is invalid at source: it holds at least ${bytes} bytes of UTF-8, more than maxSourceBytes (${maxSourceBytes}); split the code into packs, or raise maxSourceBytes`,
  };
}

/**
 * The refusal of a run whose context is more than `maxContextBytes` bytes
 * of UTF-8 as JSON text.
 *
 * @param atLeast The bytes counted before the count stopped, past the bound.
 * @param maxContextBytes The bound.
 * @returns The `DECLARATION_INVALID` failure.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { contextOverBound } from "@cordon/cordon/protocol";
 *
 * assert.match(contextOverBound(2000, 1024).message, /at least 2000 bytes/);
 * ```
 */
export function contextOverBound(
  atLeast: number,
  maxContextBytes: number,
): FailureDetail {
  return {
    code: "DECLARATION_INVALID",
    name: "DeclarationError",
    message:
      `The run's context is too large: its JSON text holds at least ${atLeast} bytes of UTF-8, more than maxContextBytes (${maxContextBytes}); pass less data, or raise maxContextBytes`,
  };
}

/**
 * The refusal of a run's answer whose JSON text holds more than
 * `maxResultBytes` bytes of UTF-8, or `null` when it is within the bound:
 * the caller's count over a text the guest already held to as many
 * characters, before it is parsed. It costs at most `maxResultBytes`
 * steps, whatever the text's length.
 *
 * @param json The JSON text of the guest's value.
 * @param maxResultBytes The bound.
 * @returns The `RESULT_NOT_SERIALIZABLE` failure, or `null`.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resultOverBound } from "@cordon/cordon/protocol";
 *
 * assert.equal(resultOverBound('"é"', 4), null);
 * assert.equal(resultOverBound('"é"', 3)?.code, "RESULT_NOT_SERIALIZABLE");
 * ```
 */
export function resultOverBound(
  json: string,
  maxResultBytes: number,
): FailureDetail | null {
  return utf8BytesUpTo(json, maxResultBytes) <= maxResultBytes
    ? null
    : runFailures.resultTooLarge(maxResultBytes);
}
