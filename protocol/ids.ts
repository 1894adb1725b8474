// This module is browser compatible.

/**
 * Module ids, pack names and exported subpaths, checked without a schema: the checks delivery,
 * the import policy and the loader run per request and per specifier. The
 * zod schemas of the same shapes are in `id_schemas.ts`; both read the
 * rules from `_id_rules.ts`.
 *
 * @module
 */

import {
  MAX_NPM_NAME_LENGTH,
  MAX_PACK_NAME_LENGTH,
  MODULE_ID_PATTERN,
  NPM_NAME_PATTERN,
  PACK_NAME_PATTERN,
  SUBPATH_PATTERN,
} from "./_id_rules.ts";

/** An opaque module id. */
export type ModuleId = string;

/**
 * Whether `value` is a well-formed module id, without a schema's cost: the
 * check delivery runs on every request.
 *
 * @param value Anything.
 * @returns Whether it is 1 to 128 characters of `A-Z a-z 0-9 _ -`.
 *
 * @example
 * ```ts
 * import { isModuleId } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(isModuleId("m_3q2-x"), true);
 * assert.equal(isModuleId("../etc/passwd"), false);
 * ```
 */
export function isModuleId(value: unknown): value is ModuleId {
  return typeof value === "string" && MODULE_ID_PATTERN.test(value);
}

/** A SHA-256 digest in Subresource Integrity form. */
export type Digest = string;

/**
 * Whether `value` is a well-formed pack name, without a schema's cost: the
 * check the import policy and the listing route run per specifier and per
 * request. `PackNameSchema` accepts exactly these.
 *
 * @param value Anything.
 * @returns Whether it is an npm-style lowercase name, plain or scoped, of
 * at most 214 characters.
 *
 * @example
 * ```ts
 * import { isPackName } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(isPackName("@acme/math"), true);
 * assert.equal(isPackName("../math"), false);
 * ```
 */
export function isPackName(value: unknown): value is PackName {
  return typeof value === "string" &&
    value.length <= MAX_PACK_NAME_LENGTH && PACK_NAME_PATTERN.test(value);
}

/** A pack name. */
export type PackName = string;

/**
 * Whether `value` is a name npm has published a package under, as a pack
 * manifest's `cordon.npm.bundled` records a dependency: besides every pack
 * name, the names npm took before its current rules (capitals, `~ ' ! ( )
 * *`, over 214 characters), which a dependency may have but a pack may not.
 *
 * @param value Anything.
 * @returns Whether it is a plain or scoped name of at most 255 URL-safe
 * characters (`A-Z a-z 0-9 - . _ ~ ' ! ( ) *`), not starting with `.` or
 * `_` (nor the part after a scope with `.`).
 *
 * @example
 * ```ts
 * import { isNpmName, isPackName } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(isNpmName("JSONStream"), true);
 * assert.equal(isPackName("JSONStream"), false);
 * assert.equal(isNpmName("../math"), false);
 * ```
 */
export function isNpmName(value: unknown): boolean {
  return typeof value === "string" &&
    value.length <= MAX_NPM_NAME_LENGTH && NPM_NAME_PATTERN.test(value);
}

/**
 * Whether `value` is a subpath a pack may export: `.` or `./name`, without
 * `.` or `..` segments, which no import could name. The pack manifest
 * schema accepts exactly these as `cordon.exports` keys.
 *
 * @param value Anything.
 * @returns Whether it is `.` or `./` and segments of `A-Z a-z 0-9 _ . -`
 * other than `.` and `..`.
 *
 * @example
 * ```ts
 * import { isPackSubpath } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(isPackSubpath("./trig"), true);
 * assert.equal(isPackSubpath("./a/../b"), false);
 * ```
 */
export function isPackSubpath(value: unknown): boolean {
  return typeof value === "string" && SUBPATH_PATTERN.test(value);
}
