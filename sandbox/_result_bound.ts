/**
 * How long a result's JSON text may be on the worker and process tiers, and
 * what answers a longer one: the bound and failure of `protocol/`, as plain
 * data that the self-contained programs of this folder receive as JSON.
 *
 * @module
 */

import { MAX_RESULT_JSON_CHARS, runFailures } from "../protocol/run_result.ts";
import type { RealmFailureCode, RealmOutcome } from "./_guest_realm.ts";

/** A result's bound, as the worker host and the process child apply it. */
export interface ResultBound {
  /** The longest JSON text of a result's value, in UTF-16 code units. */
  maxChars: number;
  /** The realm outcome sent instead of a longer result. */
  refusal: Extract<RealmOutcome, { ok: false }>;
}

/**
 * The bound of `maxChars` characters with its failure.
 *
 * @param maxChars The longest JSON text of a result, in UTF-16 code units.
 * @returns The bound, frozen.
 */
export function resultBound(maxChars: number): ResultBound {
  const { code, name, message } = runFailures.resultTooLarge(maxChars);
  return Object.freeze({
    maxChars,
    refusal: Object.freeze({
      ok: false as const,
      code: code as RealmFailureCode,
      name,
      message,
    }),
  });
}

/** The bound every run of these tiers gets: `MAX_RESULT_JSON_CHARS`. */
export const RESULT_BOUND: ResultBound = resultBound(MAX_RESULT_JSON_CHARS);
