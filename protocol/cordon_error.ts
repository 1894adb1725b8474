// This module is browser compatible.

import type { ErrorCode } from "./error_codes.ts";

/** Options of {@linkcode CordonError}. */
export interface CordonErrorOptions {
  /** The underlying error or data that caused this one. */
  cause?: unknown;
}

/**
 * An error with a stable {@linkcode ErrorCode}, thrown for host-side faults
 * and carried by bridge failures.
 *
 * @example
 * ```ts
 * import { CordonError } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const error = new CordonError("MODULE_NOT_FOUND", "No module has this id");
 * assert.equal(error.code, "MODULE_NOT_FOUND");
 * assert.equal(error.name, "CordonError");
 * ```
 */
export class CordonError extends Error {
  /** The stable code of this error. */
  readonly code: ErrorCode;

  /**
   * Creates an error with a stable code.
   *
   * @param code The stable code.
   * @param message What happened and what to do next.
   * @param options The cause.
   */
  constructor(code: ErrorCode, message: string, options?: CordonErrorOptions) {
    super(message, options);
    this.name = "CordonError";
    this.code = code;
  }
}
