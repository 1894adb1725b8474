// This module is browser compatible.

/**
 * The zod schemas of module ids, digests and pack names. The checks that
 * need no schema are in `ids.ts`.
 *
 * @module
 */

import type { Schema } from "./schema.ts";
import { digest, moduleId, packName } from "./_zod_ids.ts";

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
