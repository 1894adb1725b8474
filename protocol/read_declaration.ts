// This module is browser compatible.

/**
 * The declaration check that loads no schema library: `DeclarationSchema`'s
 * rule, read from the JSON Schema that `deno task schemas` writes from it
 * (a test holds that file current) and compiled once into plain functions.
 * It accepts what the zod schema accepts, gives the same data and the same
 * issues, and importing it keeps zod out of a process's first run.
 *
 * @module
 */

import schema from "../schemas/declaration.json" with { type: "json" };
import type { Declaration } from "./declaration.ts";
import type { SafeParseResult } from "./schema.ts";
import { PATTERN_MESSAGES } from "./_id_rules.ts";
import {
  compileJsonParse,
  type JsonParse,
  type JsonSchema,
} from "./_json_schema_check.ts";

let parseDeclaration: JsonParse | undefined;

/**
 * Checks a declaration as `DeclarationSchema` does, without a
 * schema library: `source` is a string; `packages`, when given, is an
 * array of pack names or `{ specifier, packVersion?, graphDigest? }`
 * objects; nothing else is allowed. Returns a new declaration with
 * `packages` defaulted to `[]`, or every problem found.
 *
 * @param value Anything.
 * @returns The checked declaration, or the problems, as `safeParse` does.
 *
 * @example
 * ```ts
 * import { safeParseDeclaration } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const ok = safeParseDeclaration({ source: "export default 1;" });
 * assert.deepEqual(ok.data, { source: "export default 1;", packages: [] });
 *
 * const bad = safeParseDeclaration({ source: "", packages: ["../x"] });
 * assert.deepEqual(bad.error?.issues[0]?.path, ["packages", 0]);
 * ```
 */
export function safeParseDeclaration(
  value: unknown,
): SafeParseResult<Declaration> {
  parseDeclaration ??= compileJsonParse(schema as JsonSchema, {
    patternMessages: PATTERN_MESSAGES,
  });
  return parseDeclaration(value) as SafeParseResult<Declaration>;
}
