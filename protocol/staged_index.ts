// This module is browser compatible.

import { z } from "./_zod.ts";
import type { Schema } from "./schema.ts";
import {
  digest as DigestSchema,
  packName as PackNameSchema,
} from "./_zod_ids.ts";
import { type PackSummary, PackSummarySchema } from "./delivery.ts";
import { isModuleId, isPackName } from "./ids.ts";

/**
 * One pack of a staged tree's index: enough to pick the packs a declaration
 * names and to check their pins, and the digest of the pack's own index
 * file (a {@linkcode PackSummary} as JSON), which is also its name.
 */
export interface StagedPackEntry {
  /** The pack name. */
  name: string;
  /** The pack version. */
  version: string;
  /** The pack's graph digest, as its pack index gives it. */
  graphDigest: string;
  /**
   * SHA-256 of the pack index file's bytes, `sha256-<base64>`. The file
   * lives at {@linkcode stagedPackIndexPath}`(name)`.
   */
  indexDigest: string;
}

/**
 * The `index.json` at the root of a staged tree: every staged pack, sorted
 * by name, one version each.
 */
export interface StagedIndex {
  /** The layout's version; this is layout 1. */
  format: 1;
  /** The staged packs, sorted by name. */
  packs: StagedPackEntry[];
}

const stagedPackEntry: z.ZodType<StagedPackEntry> = z.strictObject({
  name: PackNameSchema,
  version: z.string().min(1),
  graphDigest: DigestSchema,
  indexDigest: DigestSchema,
});

const stagedIndex: z.ZodType<StagedIndex> = z.strictObject({
  format: z.literal(1),
  packs: z.array(stagedPackEntry),
});

/**
 * Validates the `index.json` of a staged tree.
 *
 * @example
 * ```ts
 * import { StagedIndexSchema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const index = StagedIndexSchema.parse({ format: 1, packs: [] });
 * assert.deepEqual(index.packs, []);
 * assert.equal(StagedIndexSchema.safeParse({ packs: [] }).success, false);
 * ```
 */
export const StagedIndexSchema: Schema<StagedIndex> = stagedIndex;

/**
 * Validates one pack index file of a staged tree: the pack's summary,
 * exactly as a delivery server lists it.
 *
 * @example
 * ```ts
 * import { StagedPackSchema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const result = StagedPackSchema.safeParse({ name: "greet", version: "1.0.0" });
 * assert.equal(result.success, false);
 * ```
 */
export const StagedPackSchema: Schema<PackSummary> = PackSummarySchema;

/** The staged tree's index file, relative to the tree's root. */
export const STAGED_INDEX_FILE: string = "index.json";

function digestToken(digest: string): string {
  const match = /^sha256-([A-Za-z0-9+/]{43})=$/.exec(digest);
  if (match === null) {
    throw new TypeError(
      "Cannot name a staged file: expected a digest sha256-<base64> of 32 bytes",
    );
  }
  return match[1]!.replaceAll("+", "-").replaceAll("/", "_");
}

/**
 * Where a module's bytes live in a staged tree, relative to its root:
 * `modules/<id>.<digest in base64url>.js`. The path changes whenever the
 * bytes do, so a host may cache it forever.
 *
 * @param moduleId The module's id.
 * @param digest The module's digest, `sha256-<base64>`.
 * @returns The relative path.
 * @throws {TypeError} When `digest` is not a SHA-256 digest, or the id is
 * malformed.
 *
 * @example
 * ```ts
 * import { stagedModulePath } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const digest = `sha256-${"A".repeat(42)}/=`;
 * assert.equal(stagedModulePath("abc", digest), `modules/abc.${"A".repeat(42)}_.js`);
 * ```
 */
export function stagedModulePath(moduleId: string, digest: string): string {
  if (!isModuleId(moduleId)) {
    throw new TypeError(
      "Cannot name a staged file: the module id is malformed",
    );
  }
  return `modules/${moduleId}.${digestToken(digest)}.js`;
}

/**
 * Where a pack index file lives in a staged tree, relative to its root:
 * `packs/<name>.json` (`packs/@scope/name.json` for a scoped pack). It is
 * named by the pack so a client can fetch it while `index.json` is still
 * on its way; `index.json` pins its bytes with `indexDigest`.
 *
 * @param packName The pack's name.
 * @returns The relative path.
 * @throws {TypeError} When `packName` is not a pack name.
 *
 * @example
 * ```ts
 * import { stagedPackIndexPath } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(stagedPackIndexPath("@acme/math"), "packs/@acme/math.json");
 * assert.throws(() => stagedPackIndexPath("../x"), TypeError);
 * ```
 */
export function stagedPackIndexPath(packName: string): string {
  if (!isPackName(packName)) {
    throw new TypeError(
      "Cannot name a staged file: the pack name is malformed",
    );
  }
  return `packs/${packName}.json`;
}
