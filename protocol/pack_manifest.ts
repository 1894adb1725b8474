// This module is browser compatible.

import { z } from "./_zod.ts";
import type { Schema } from "./schema.ts";
import { packName as PackNameSchema } from "./_zod_ids.ts";

const RELATIVE_FILE = /^\.\/(?!(?:.*\/)?\.\.?(?:\/|$))[^\\\0]+\.(?:js|mjs)$/;

const PackFileSchema = z.string().regex(
  RELATIVE_FILE,
  "A pack file is ./<path>.js or .mjs inside the pack, without . or .. segments",
);

const SubpathSchema = z.string().regex(
  /^\.(?:\/[A-Za-z0-9_.-]+)*$/,
  "An exported subpath is . or ./name",
);

/** The `cordon` section of a pack manifest. */
export interface PackModules {
  /** Exported subpaths (`.` or `./name`) to pack files (`./file.js`). */
  exports: Record<string, string>;
  /** Helper files exported modules may import (`./lib/helper.js`). */
  internal: string[];
}

/** A validated pack manifest: the fields of `package.json` cordon reads. */
export interface PackManifest {
  /** The pack name, `name` or `@scope/name`. */
  name: string;
  /** The pack version (semver). */
  version: string;
  /** The modules the pack offers to sandboxes. */
  cordon: PackModules;
}

/** A pack manifest as written (`internal` may be omitted). */
export interface PackManifestInput {
  /** The pack name, `name` or `@scope/name`. */
  name: string;
  /** The pack version (semver). */
  version: string;
  /** The modules the pack offers to sandboxes. */
  cordon: { exports: Record<string, string>; internal?: string[] };
}

const packManifest: z.ZodType<PackManifest, PackManifestInput> = z
  .object({
    name: PackNameSchema,
    version: z.string().regex(
      /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/,
      "A pack version is semver: 1.2.3",
    ),
    cordon: z.strictObject({
      exports: z.record(SubpathSchema, PackFileSchema).refine(
        (exports) => Object.keys(exports).length > 0,
        "A pack exports at least one subpath",
      ),
      internal: z.array(PackFileSchema).default([]),
    }),
  });

/**
 * The fields of a pack's `package.json` that cordon reads. Its `cordon`
 * section names which files guest code may import (`exports`, subpath to
 * file) and which helper files those may import in turn (`internal`).
 *
 * @example
 * ```ts
 * import { PackManifestSchema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const manifest = PackManifestSchema.parse({
 *   name: "@acme/math",
 *   version: "1.2.0",
 *   cordon: { exports: { ".": "./index.js" }, internal: ["./lib/round.js"] },
 * });
 * assert.equal(manifest.cordon.exports["."], "./index.js");
 * ```
 */
export const PackManifestSchema: Schema<PackManifest> = packManifest;
