/**
 * How long a result's JSON text may be on the worker and process tiers, and
 * what answers a longer one: a run's `maxResultBytes` and the failure of
 * `protocol/`, as plain data that the self-contained programs of this
 * folder receive with each run as JSON, and the caller's own count of the
 * text they send before it is parsed.
 *
 * @module
 */

import { resultOverBound } from "../protocol/run_inputs.ts";
import { runFailures } from "../protocol/run_result.ts";
import type {
  RealmFailureCode,
  RealmOutcome,
  ResultLimit,
} from "./_guest_realm.ts";

/**
 * A result's bound, as the worker host and the process child apply it:
 * the guest realm's own, whose `maxChars` is the run's `maxResultBytes`,
 * since each UTF-16 code unit takes a byte of UTF-8 at least.
 */
export type ResultBound = ResultLimit;

/**
 * The bound of a run's `maxResultBytes`, with its failure.
 *
 * @param maxResultBytes The most bytes of UTF-8 a result's text may hold.
 * @returns The bound.
 */
export function resultBound(maxResultBytes: number): ResultBound {
  const { code, name, message } = runFailures.resultTooLarge(maxResultBytes);
  return {
    maxChars: maxResultBytes,
    refusal: { ok: false, code: code as RealmFailureCode, name, message },
  };
}

/**
 * Reads a result line whose value's text follows `prefix` as the sender
 * writes one (`…"value":TEXT}}`), counting the text's bytes of UTF-8
 * against `maxResultBytes` before it is parsed: the sender held it to as
 * many characters, so the count costs no more than that.
 *
 * @param line One line, or frame, of the sender's output.
 * @param prefix What comes before the value's text.
 * @param maxResultBytes The run's bound.
 * @returns The outcome, or `undefined` when the line is not one such.
 * @throws {SyntaxError} When the value's text is not JSON.
 */
export function readValueLine(
  line: string,
  prefix: string,
  maxResultBytes: number,
): RealmOutcome | undefined {
  if (!line.startsWith(prefix) || !line.endsWith("}}")) return undefined;
  const text = line.slice(prefix.length, -2);
  const refused = resultOverBound(text, maxResultBytes);
  if (refused === null) return { ok: true, value: JSON.parse(text) };
  const { code, name, message } = refused;
  return { ok: false, code: code as RealmFailureCode, name, message };
}
