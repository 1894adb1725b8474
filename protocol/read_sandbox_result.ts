// This module is browser compatible.

/**
 * The sandbox result check that loads no schema library:
 * `SandboxResultSchema`'s rule, read from the JSON Schema that
 * `deno task schemas` writes from it (a test holds that file current) and
 * compiled once into plain functions. A QuickJS pool holds every runner's
 * answer to it, since a runner runs guest code, without loading zod.
 *
 * @module
 */

import schema from "../schemas/sandbox_result.json" with { type: "json" };
import type { SandboxResult } from "./sandbox_result.ts";
import {
  compileJsonCheck,
  type JsonCheck,
  type JsonSchema,
} from "./_json_schema_check.ts";

let checkResult: JsonCheck | undefined;

/**
 * Says whether a value is a sandbox result, as `SandboxResultSchema`'s
 * `safeParse` would, without a schema library and without copying it: a
 * success with a JSON value, or a failure with its code, name and message,
 * each with its logs and metrics. A value nested deeper than the stack can
 * check is not one.
 *
 * @param value Anything: parsed JSON, or a structured clone.
 * @returns Whether `value` is a sandbox result.
 *
 * @example
 * ```ts
 * import { isSandboxResult } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const result = {
 *   ok: true,
 *   value: 2,
 *   logs: [],
 *   logsTruncated: false,
 *   metrics: { tier: "quickjs", durationMs: 0.2 },
 * };
 * assert.equal(isSandboxResult(result), true);
 * assert.equal(isSandboxResult({ ...result, value: undefined }), false);
 * ```
 */
export function isSandboxResult(value: unknown): value is SandboxResult {
  checkResult ??= compileJsonCheck(schema as JsonSchema);
  try {
    return checkResult(value);
  } catch {
    // Only the stack runs out here: a check allocates nothing.
    return false;
  }
}
