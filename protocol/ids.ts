// This module is browser compatible.

import type { Schema } from "./schema.ts";
import {
  digest,
  MAX_PACK_NAME_LENGTH,
  MODULE_ID_PATTERN,
  moduleId,
  PACK_NAME_PATTERN,
  packName,
} from "./_zod_ids.ts";

/**
 * An opaque, URL-safe, stable module id: 1 to 128 characters of
 * `A-Z a-z 0-9 _ -`. Never a path.
 *
 * @example
 * ```ts
 * import { ModuleIdSchema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(ModuleIdSchema.safeParse("m_3q2-x").success, true);
 * assert.equal(ModuleIdSchema.safeParse("../etc/passwd").success, false);
 * ```
 */
export const ModuleIdSchema: Schema<string> = moduleId;

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

/**
 * A SHA-256 digest in Subresource Integrity form: `sha256-<base64>`.
 *
 * @example
 * ```ts
 * import { DigestSchema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const digest = "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";
 * assert.equal(DigestSchema.parse(digest), digest);
 * ```
 */
export const DigestSchema: Schema<string> = digest;

/** A SHA-256 digest in Subresource Integrity form. */
export type Digest = string;

/**
 * A pack name: npm-style, plain (`math`) or scoped (`@acme/math`).
 *
 * @example
 * ```ts
 * import { PackNameSchema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(PackNameSchema.safeParse("@acme/math").success, true);
 * assert.equal(PackNameSchema.safeParse("../math").success, false);
 * ```
 */
export const PackNameSchema: Schema<string> = packName;

/**
 * Whether `value` is a well-formed pack name, without a schema's cost: the
 * check the import policy and the listing route run per specifier and per
 * request. {@linkcode PackNameSchema} accepts exactly these.
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
