// This module is browser compatible.

import { z } from "./_zod.ts";
import type { Schema } from "./schema.ts";
import {
  npmName as NpmNameSchema,
  packName as PackNameSchema,
  packVersion as PackVersionSchema,
} from "./_zod_ids.ts";
import {
  PACK_FILE_PATTERN,
  SEMVER_PATTERN,
  SUBPATH_MESSAGE,
  SUBPATH_PATTERN,
} from "./_id_rules.ts";

const PackFileSchema = z.string().regex(
  PACK_FILE_PATTERN,
  "A pack file is ./<path>.js or .mjs inside the pack, without empty, . or .. segments, backslashes or control characters",
);

const SubpathSchema = z.string().regex(SUBPATH_PATTERN, SUBPATH_MESSAGE);

/** One npm package version a pack was built from. */
export interface NpmPackageRef {
  /**
   * The npm name, `name` or `@scope/name`: a pack name for the package
   * itself; a bundled dependency's may be any name npm took (`JSONStream`).
   */
  name: string;
  /** The exact version fetched. */
  version: string;
  /** The registry's integrity hash the tarball matched, `sha512-<base64>`. */
  integrity: string;
}

/** Why one entry point of a pack cannot work, as the pack command found. */
export interface PackEntryProblems {
  /** The exported subpath, `.` or `./name`. */
  subpath: string;
  /** One reason per problem, naming what the sandbox lacks. */
  problems: string[];
}

/** Where a pack built by `deno task pack` came from. */
export interface NpmOrigin extends NpmPackageRef {
  /** The package's licence, as its `package.json` states it. */
  license: string;
  /** The dependencies inlined into the pack's modules. */
  bundled: NpmPackageRef[];
  /**
   * What the pack command refused, present only when the pack was written
   * anyway (`--force`).
   */
  report?: PackEntryProblems[];
}

/** The `cordon` section of a pack manifest. */
export interface PackModules {
  /** Exported subpaths (`.` or `./name`) to pack files (`./file.js`). */
  exports: Record<string, string>;
  /** Helper files exported modules may import (`./lib/helper.js`). */
  internal: string[];
  /** The npm package the pack was built from, when it was. */
  npm?: NpmOrigin;
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
  cordon: {
    exports: Record<string, string>;
    internal?: string[];
    npm?: NpmOrigin;
  };
}

const NpmPackageRefSchema = z.strictObject({
  name: PackNameSchema,
  version: z.string().regex(SEMVER_PATTERN, "An npm version is semver: 1.2.3"),
  integrity: z.string().regex(
    /^sha(?:512|256|1)-[A-Za-z0-9+/]+=*$/,
    "An integrity hash is sha512-<base64>",
  ),
});

// A dependency is inlined, never declared, so it keeps any name npm took.
const BundledRefSchema = NpmPackageRefSchema.extend({ name: NpmNameSchema });

const NpmOriginSchema = z.strictObject({
  ...NpmPackageRefSchema.shape,
  license: z.string().max(200),
  bundled: z.array(BundledRefSchema),
  report: z.array(z.strictObject({
    subpath: SubpathSchema,
    problems: z.array(z.string()).min(1),
  })).optional(),
});

const packManifest: z.ZodType<PackManifest, PackManifestInput> = z
  .object({
    name: PackNameSchema,
    version: PackVersionSchema,
    cordon: z.strictObject({
      // A refinement does not reach the JSON Schema, so the same rule is
      // also written in its keyword for clients that validate with that.
      exports: z.record(SubpathSchema, PackFileSchema).refine(
        (exports) => Object.keys(exports).length > 0,
        "A pack exports at least one subpath",
      ).meta({ minProperties: 1 }),
      internal: z.array(PackFileSchema).default([]),
      npm: NpmOriginSchema.optional(),
    }),
  });

/**
 * The fields of a pack's `package.json` that cordon reads. Its `cordon`
 * section names which files guest code may import (`exports`, subpath to
 * file) and which helper files those may import in turn (`internal`).
 * A pack built by `deno task pack` also records the npm package it came
 * from (`npm`: name, version, licence, the registry's integrity hash and
 * the dependencies bundled into it).
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
