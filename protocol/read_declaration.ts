// This module is browser compatible.

/**
 * The declaration check that needs no schema library: what a run does with
 * the declaration it is given. `DeclarationSchema` (zod, for the
 * published JSON Schema and for callers who compose schemas) accepts
 * exactly the same values and gives the same data; a test holds the two
 * equal over a table of valid and invalid declarations. Importing this
 * module loads no schema, which keeps a process's first run fast.
 *
 * @module
 */

import type { Declaration, PackageRequest } from "./declaration.ts";
import type { SafeParseResult, SchemaError, SchemaIssue } from "./schema.ts";
import {
  DIGEST_MESSAGE,
  DIGEST_PATTERN,
  MAX_PACK_NAME_LENGTH,
  MAX_PACK_VERSION_LENGTH,
  MIN_PACK_VERSION_LENGTH,
  PACK_NAME_MESSAGE,
  PACK_NAME_PATTERN,
} from "./_id_rules.ts";

type Path = readonly PropertyKey[];

const { getPrototypeOf, keys } = Object;
const { isArray } = Array;

const DECLARATION_KEYS: readonly string[] = ["source", "packages"];
const PINNED_KEYS: readonly string[] = [
  "specifier",
  "packVersion",
  "graphDigest",
];

/** What a value is, in the words of a schema's type errors. */
function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (isArray(value)) return "array";
  if (typeof value === "number" && Number.isNaN(value)) return "NaN";
  if (typeof value !== "object") return typeof value;
  const prototype: unknown = getPrototypeOf(value);
  const constructor = (value as { constructor?: { name?: unknown } })
    .constructor;
  return prototype !== Object.prototype && prototype !== null &&
      typeof constructor?.name === "string"
    ? constructor.name
    : "object";
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !isArray(value);
}

function typeIssue(path: Path, expected: string, value: unknown): SchemaIssue {
  return {
    code: "invalid_type",
    path,
    message: `Invalid input: expected ${expected}, received ${kindOf(value)}`,
  };
}

function unknownKeys(value: object, known: readonly string[], path: Path) {
  const extra = keys(value).filter((key) => !known.includes(key));
  if (extra.length === 0) return [];
  const list = extra.map((key) => JSON.stringify(key)).join(", ");
  return [{
    code: "unrecognized_keys",
    path,
    message: `Unrecognized key${extra.length === 1 ? "" : "s"}: ${list}`,
  }];
}

/** The problems of a pack name that is a string; none when it is valid. */
function packNameIssues(name: string, path: Path): SchemaIssue[] {
  const issues: SchemaIssue[] = [];
  if (!PACK_NAME_PATTERN.test(name)) {
    issues.push({ code: "invalid_format", path, message: PACK_NAME_MESSAGE });
  }
  if (name.length > MAX_PACK_NAME_LENGTH) {
    issues.push({
      code: "too_big",
      path,
      message:
        `Too big: expected string to have <=${MAX_PACK_NAME_LENGTH} characters`,
    });
  }
  return issues;
}

function packVersionIssues(version: string, path: Path): SchemaIssue[] {
  if (version.length < MIN_PACK_VERSION_LENGTH) {
    return [{
      code: "too_small",
      path,
      message:
        `Too small: expected string to have >=${MIN_PACK_VERSION_LENGTH} characters`,
    }];
  }
  if (version.length > MAX_PACK_VERSION_LENGTH) {
    return [{
      code: "too_big",
      path,
      message:
        `Too big: expected string to have <=${MAX_PACK_VERSION_LENGTH} characters`,
    }];
  }
  return [];
}

/**
 * A pinned package's problems, or `null` when one of its fields has the
 * wrong type: the entry is then neither a name nor a pinned package.
 */
function pinnedIssues(
  entry: Record<string, unknown>,
  path: Path,
): SchemaIssue[] | null {
  const { specifier, packVersion, graphDigest } = entry;
  if (typeof specifier !== "string") return null;
  if (packVersion !== undefined && typeof packVersion !== "string") return null;
  if (graphDigest !== undefined && typeof graphDigest !== "string") return null;
  return [
    ...packNameIssues(specifier, [...path, "specifier"]),
    ...(packVersion === undefined
      ? []
      : packVersionIssues(packVersion, [...path, "packVersion"])),
    ...(graphDigest === undefined || DIGEST_PATTERN.test(graphDigest) ? [] : [{
      code: "invalid_format",
      path: [...path, "graphDigest"],
      message: DIGEST_MESSAGE,
    }]),
    ...unknownKeys(entry, PINNED_KEYS, path),
  ];
}

/** The fields of a valid pinned package, copied as a schema copies them. */
function copyPinned(entry: Record<string, unknown>): PackageRequest {
  const copy: Record<string, unknown> = {};
  for (const key of PINNED_KEYS) if (key in entry) copy[key] = entry[key];
  return copy as unknown as PackageRequest;
}

function packageIssues(entry: unknown, path: Path): SchemaIssue[] {
  const issues = typeof entry === "string"
    ? packNameIssues(entry, path)
    : isRecord(entry)
    ? pinnedIssues(entry, path)
    : null;
  return issues ?? [{ code: "invalid_union", path, message: "Invalid input" }];
}

function failure(issues: SchemaIssue[]): SafeParseResult<Declaration> {
  const error = new TypeError(
    issues.map((issue) => issue.message).join("; "),
  ) as TypeError & { issues: readonly SchemaIssue[] };
  error.issues = issues;
  return { success: false, error: error as SchemaError };
}

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
  if (!isRecord(value)) return failure([typeIssue([], "object", value)]);
  const { source, packages } = value;
  const issues: SchemaIssue[] = [];
  if (typeof source !== "string") {
    issues.push(typeIssue(["source"], "string", source));
  }
  if (packages !== undefined && !isArray(packages)) {
    issues.push(typeIssue(["packages"], "array", packages));
  } else if (packages !== undefined) {
    for (let i = 0; i < packages.length; i++) {
      issues.push(...packageIssues(packages[i], ["packages", i]));
    }
  }
  issues.push(...unknownKeys(value, DECLARATION_KEYS, []));
  if (issues.length > 0) return failure(issues);
  const entries = (packages ?? []) as unknown[];
  return {
    success: true,
    data: {
      source: source as string,
      packages: entries.map((entry) =>
        typeof entry === "string" ? entry : copyPinned(entry as never)
      ),
    },
  };
}
