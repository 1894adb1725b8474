// This module is browser compatible.

/**
 * Checks JSON that came from outside (a server, a file someone else wrote)
 * against a schema, however far from it the value is.
 *
 * @module
 */

import type { SafeParseResult, Schema, SchemaError } from "../protocol/mod.ts";

/**
 * What a value gets when it breaks its schema in more places than can be
 * listed: zod collects every issue with one spread call, and a value with
 * hundreds of thousands of wrong entries (a listing of 1,000,000 numbers)
 * makes that call throw `RangeError` instead of answering.
 */
function tooManyIssues(cause: RangeError): SchemaError {
  const error = new Error(
    "The value breaks its schema in more places than can be listed",
    { cause },
  ) as Error & { issues: SchemaError["issues"] };
  error.issues = [{
    code: "too_many_issues",
    path: [],
    message: "it breaks the schema in more places than can be listed",
  }];
  return error;
}

/**
 * zod 4's parse context that stops each array and object at its first
 * wrong member (the one its own `validate` passes).
 */
interface FirstIssueSchema<T> {
  safeParse(
    value: unknown,
    context: { abortEarly: true },
  ): SafeParseResult<T>;
}

/**
 * `schema.safeParse(value)`, which also answers, rather than throws, for a
 * value with more issues than zod can gather.
 *
 * @param schema The schema the value must match.
 * @param value The parsed JSON.
 * @param options `firstIssue`: stop at the first wrong member of each
 * array and object, for a body a server sent. zod otherwise builds an
 * issue for every missing field of every entry before it answers: a
 * listing of 1,000,000 `{}` (3 MB) took 14 s and 1.2 GB, on the thread
 * whose timers would end the run.
 * @returns The schema's answer.
 */
export function parseUntrusted<T>(
  schema: Schema<T>,
  value: unknown,
  options: { firstIssue?: boolean } = {},
): SafeParseResult<T> {
  try {
    return options.firstIssue === true
      ? (schema as unknown as FirstIssueSchema<T>).safeParse(value, {
        abortEarly: true,
      })
      : schema.safeParse(value);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    return { success: false, error: tooManyIssues(error) };
  }
}
