// This module is browser compatible.

/**
 * Problem documents (RFC 9457): the one shape, title table and builder every
 * cordon HTTP answer uses for an error, with the stable code in `code` and
 * in the type URI.
 *
 * @module
 */

import { z } from "./_zod.ts";
import type { ErrorCode, WireErrorCode } from "./error_codes.ts";
import type { Schema } from "./schema.ts";

/** The media type of a problem document. */
export const PROBLEM_CONTENT_TYPE = "application/problem+json";

/** A problem document (RFC 9457) with cordon's stable code. */
export interface Problem {
  /** A URI naming the problem type (`urn:cordon:error:<CODE>`). */
  type: string;
  /** A short title. */
  title: string;
  /** The HTTP status. */
  status: number;
  /**
   * The stable error code: one of {@linkcode ErrorCode}, or, from another
   * version of cordon (a remote delivery server), one this version does
   * not know.
   */
  code: WireErrorCode;
  /** What happened and what to do next. */
  detail: string;
}

const problem: z.ZodType<Problem> = z.strictObject({
  type: z.string(),
  title: z.string(),
  status: z.number().int(),
  code: z.string(),
  detail: z.string(),
});

/**
 * The `application/problem+json` body of every delivery error.
 *
 * @example
 * ```ts
 * import { ProblemSchema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const problem = ProblemSchema.parse({
 *   type: "urn:cordon:error:MODULE_NOT_FOUND", title: "Not Found",
 *   status: 404, code: "MODULE_NOT_FOUND", detail: "No module has this id",
 * });
 * assert.equal(problem.status, 404);
 * ```
 */
export const ProblemSchema: Schema<Problem> = problem;

const TITLES: Readonly<Record<number, string>> = Object.freeze({
  400: "Bad Request",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  412: "Precondition Failed",
  413: "Content Too Large",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
});

/**
 * Builds the problem document of an error: the type URI and the code come
 * from `code`, the title from `status`. The detail is the caller's fixed
 * text; never put a path, a cause or request data in it.
 *
 * @param code The stable error code.
 * @param status The HTTP status.
 * @param detail What happened and what to do next.
 * @returns The document, ready for `JSON.stringify`.
 *
 * @example
 * ```ts
 * import { problemDocument } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const problem = problemDocument("MODULE_NOT_FOUND", 404, "No module has this id");
 * assert.equal(problem.type, "urn:cordon:error:MODULE_NOT_FOUND");
 * assert.equal(problem.title, "Not Found");
 * ```
 */
export function problemDocument(
  code: ErrorCode,
  status: number,
  detail: string,
): Problem {
  return {
    type: `urn:cordon:error:${code}`,
    title: TITLES[status] ?? "Error",
    status,
    code,
    detail,
  };
}
