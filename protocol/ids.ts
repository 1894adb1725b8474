// This module is browser compatible.

import { z } from "zod";

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
export const ModuleIdSchema: z.ZodString = z.string().regex(
  /^[A-Za-z0-9_-]{1,128}$/,
  "A module id is 1 to 128 characters of A-Z, a-z, 0-9, _ and -",
);

/** An opaque module id. */
export type ModuleId = z.infer<typeof ModuleIdSchema>;

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
export const DigestSchema: z.ZodString = z.string().regex(
  /^sha256-[A-Za-z0-9+/]{43}=$/,
  "A digest is sha256-<base64> of 32 bytes",
);

/** A SHA-256 digest in Subresource Integrity form. */
export type Digest = z.infer<typeof DigestSchema>;

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
export const PackNameSchema: z.ZodString = z.string().regex(
  /^(?:@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*$/,
  "A pack name is lowercase npm-style: name or @scope/name",
).max(214);

/** A pack name. */
export type PackName = z.infer<typeof PackNameSchema>;
