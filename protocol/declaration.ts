// This module is browser compatible.

import { z } from "./_zod.ts";
import type { Schema } from "./schema.ts";
import {
  digest as DigestSchema,
  packName as PackNameSchema,
} from "./_zod_ids.ts";
import {
  MAX_DECLARED_PACKS,
  MAX_PACK_VERSION_LENGTH,
  MIN_PACK_VERSION_LENGTH,
} from "./_id_rules.ts";

/** A pack a declaration may import, pinned to a version or graph digest. */
export interface PinnedPackage {
  /** The pack name. */
  specifier: string;
  /** The exact version the pack must have. */
  packVersion?: string;
  /** The graph digest the pack's exported modules must have together. */
  graphDigest?: string;
}

/** One pack a declaration may import: its name, or a pinned package. */
export type PackageRequest = string | PinnedPackage;

const packageRequest: z.ZodType<PackageRequest, PackageRequest> = z
  .union([
    PackNameSchema,
    z.strictObject({
      specifier: PackNameSchema,
      packVersion: z.string().min(MIN_PACK_VERSION_LENGTH).max(
        MAX_PACK_VERSION_LENGTH,
      ).optional(),
      graphDigest: DigestSchema.optional(),
    }),
  ]);

/**
 * One pack a declaration may import: its name, or an object that also pins
 * a version or a graph digest.
 *
 * @example
 * ```ts
 * import { PackageRequestSchema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(PackageRequestSchema.safeParse("@acme/math").success, true);
 * assert.equal(
 *   PackageRequestSchema.safeParse({ specifier: "@acme/math", packVersion: "1.2.0" }).success,
 *   true,
 * );
 * ```
 */
export const PackageRequestSchema: Schema<PackageRequest> = packageRequest;

/** What a Code node says it needs: its source and the packs it may import. */
export interface Declaration {
  /** The guest ES module source; its default export is the result. */
  source: string;
  /** The packs the source may import, at most `MAX_DECLARED_PACKS` (256). */
  packages: PackageRequest[];
}

/** A declaration as callers write it (`packages` may be omitted). */
export interface DeclarationInput {
  /** The guest ES module source; its default export is the result. */
  source: string;
  /** The packs the source may import. @default {[]} */
  packages?: PackageRequest[];
}

const declaration: z.ZodType<Declaration, DeclarationInput> = z
  .strictObject({
    source: z.string(),
    packages: z.array(packageRequest).max(MAX_DECLARED_PACKS).default([]),
  });

/**
 * What a Code node says it needs: its ES module source and the packs it may
 * import.
 *
 * @example
 * ```ts
 * import { DeclarationSchema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const declaration = DeclarationSchema.parse({
 *   source: 'import { add } from "@acme/math"; export default add(1, 2);',
 *   packages: ["@acme/math"],
 * });
 * assert.deepEqual(declaration.packages, ["@acme/math"]);
 * ```
 */
export const DeclarationSchema: Schema<Declaration> = declaration;
