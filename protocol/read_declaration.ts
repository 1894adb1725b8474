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
import type { FailureDetail } from "./run_result.ts";
import { snapshotDeclaration } from "./_declaration_snapshot.ts";
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

/** A declaration a run may use, or the failure that refuses it. */
export type ReadDeclaration =
  | { ok: true; declaration: Declaration }
  | { ok: false; error: FailureDetail };

/**
 * The longest issue text, and the longest path, a `DECLARATION_INVALID`
 * message repeats.
 */
const MAX_ISSUE_CHARS = 300;

/**
 * Reads a run's declaration as every tier does before anything else: a
 * string is the source of a declaration without packs; anything else is
 * read once into plain data (each property once, a getter called once, a
 * Proxy's `get` trap never; at most one item past the 256 packs a
 * declaration may name) and checked as {@linkcode safeParseDeclaration}
 * does. A declaration is the workflow author's data, so whatever it is,
 * this never throws: what is wrong is a failure with code
 * `DECLARATION_INVALID` whose message names the first field at fault.
 *
 * @param value The declaration as the caller gave it.
 * @returns The checked declaration, a copy, or the failure.
 *
 * @example
 * ```ts
 * import { readDeclaration } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const ok = readDeclaration("export default 1;");
 * assert.deepEqual(ok, {
 *   ok: true,
 *   declaration: { source: "export default 1;", packages: [] },
 * });
 *
 * const bad = readDeclaration({
 *   source: "export default 1;",
 *   get packages(): string[] {
 *     throw new Error("not loaded");
 *   },
 * });
 * assert.equal(bad.ok, false);
 * assert.equal(bad.ok ? "" : bad.error.message, "The declaration is invalid at packages: Cannot be read: it threw not loaded; pass { source, packages } with pack names or { specifier } objects");
 * ```
 */
export function readDeclaration(value: unknown): ReadDeclaration {
  if (typeof value === "string") {
    return { ok: true, declaration: { source: value, packages: [] } };
  }
  const snapshot = snapshotDeclaration(value);
  if (!snapshot.ok) return declarationInvalid(snapshot.problem);
  const parsed = safeParseDeclaration(snapshot.value);
  if (parsed.success) return { ok: true, declaration: parsed.data };
  const first = parsed.error.issues[0];
  return declarationInvalid({
    path: first?.path ?? [],
    message: first?.message ?? "it does not match the schema",
  });
}

function declarationInvalid(
  issue: { path: readonly PropertyKey[]; message: string },
): ReadDeclaration {
  // A path repeats the declaration's own keys, which may be of any length.
  const where = issue.path.length === 0
    ? "the declaration"
    : bounded(issue.path.map(String).join("."));
  const said = bounded(issue.message);
  return {
    ok: false,
    error: {
      code: "DECLARATION_INVALID",
      name: "DeclarationError",
      message:
        `The declaration is invalid at ${where}: ${said}; pass { source, packages } with pack names or { specifier } objects`,
    },
  };
}

function bounded(text: string): string {
  return text.length > MAX_ISSUE_CHARS
    ? `${text.slice(0, MAX_ISSUE_CHARS)}…`
    : text;
}
