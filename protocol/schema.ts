// This module is browser compatible.

/** One problem a schema found in a value. */
export interface SchemaIssue {
  /** The kind of problem, such as `invalid_type`. */
  readonly code: string;
  /** Where in the value, as keys from the root. */
  readonly path: readonly PropertyKey[];
  /** What is wrong. */
  readonly message: string;
}

/** The error a schema throws or returns: every issue it found. */
export interface SchemaError extends Error {
  /** The problems, in the order found. */
  readonly issues: readonly SchemaIssue[];
}

/** The answer of {@linkcode Schema.safeParse}. */
export type SafeParseResult<T> =
  | { readonly success: true; readonly data: T; readonly error?: undefined }
  | {
    readonly success: false;
    readonly data?: undefined;
    readonly error: SchemaError;
  };

/**
 * A validator of one wire shape. At run time every schema is a zod 4
 * schema; this interface is the part of it cordon promises. The JSON
 * Schema of each shape is in `schemas/`, written by `deno task schemas`.
 *
 * @typeParam T The validated value's type.
 *
 * @example
 * ```ts
 * import { ModuleIdSchema, type Schema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const schema: Schema<string> = ModuleIdSchema;
 * const result = schema.safeParse("../x");
 * assert.equal(result.success, false);
 * assert.ok(result.error?.issues.length);
 * ```
 */
export interface Schema<T> {
  /** Returns the valid value, or throws a {@linkcode SchemaError}. */
  parse(data: unknown): T;
  /** Returns the valid value or the error, without throwing. */
  safeParse(data: unknown): SafeParseResult<T>;
}
