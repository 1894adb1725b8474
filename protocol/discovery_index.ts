// This module is browser compatible.

import { z } from "./_zod.ts";
import type { Schema } from "./schema.ts";
import {
  digest as DigestSchema,
  moduleId as ModuleIdSchema,
  packName as PackNameSchema,
} from "./_zod_ids.ts";
import { PACK_FILE_PATTERN } from "./_id_rules.ts";
import { type PackDiagnostic, PackDiagnosticSchema } from "./delivery.ts";
import { compileJsonCheck, type JsonSchema } from "./_json_schema_check.ts";

/**
 * What proves one file of a pack unchanged since discovery read it, as
 * `lstat` reported it then: `[path, size, mtimeMs, ctimeMs, dev, ino]`.
 * `path` is `package.json` or a declared `./file.js`; sizes are bytes,
 * times milliseconds since the epoch; `ctimeMs`, `dev` and `ino` are `null`
 * where the system does not report them.
 */
export type FileProof = [
  path: string,
  size: number,
  mtimeMs: number,
  ctimeMs: number | null,
  dev: number | null,
  ino: number | null,
];

/**
 * One module of an indexed pack: `[path, id, digest, graphDigest,
 * dependencies]`, where `dependencies` are positions in the pack's
 * `modules` list.
 */
export type IndexedModule = [
  path: string,
  id: string,
  digest: string,
  graphDigest: string,
  dependencies: number[],
];

/** What discovery concluded about one pack folder. */
export type DiscoveryOutcome =
  | {
    /** The pack was installed. */
    ok: true;
    /** The pack name. */
    name: string;
    /** The pack version. */
    version: string;
    /** The pack's graph digest. */
    graphDigest: string;
    /** The manifest's exported subpaths to pack files. */
    exports: Record<string, string>;
    /** Every module, sorted by path, as the catalog lists them. */
    modules: IndexedModule[];
  }
  | {
    /** The pack was rejected. */
    ok: false;
    /** The pack name its manifest declared, when it was read. */
    name?: string;
    /** Why it was rejected. */
    diagnostic: PackDiagnostic;
  };

/** One pack folder of a discovery index: one line of the index file. */
export interface DiscoveryIndexPack {
  /** The folder relative to the packs folder, `/`-separated: `@acme/math`. */
  folder: string;
  /** Every file discovery read for this pack, `package.json` first. */
  files: FileProof[];
  /** What discovery concluded from those files. */
  outcome: DiscoveryOutcome;
}

/**
 * The first line of the discovery index a disk catalog keeps with
 * `indexPath`. Each further line is a {@linkcode DiscoveryIndexPack}. The
 * index lets a restart over an unchanged packs folder read and hash
 * nothing again.
 */
export interface DiscoveryIndexHeader {
  /** The layout's version; this is layout 1. */
  format: 1;
  /** The discovery rules that derived the outcomes; another value is stale. */
  rules: string;
  /** The module size cap the outcomes were derived under. */
  maxModuleBytes: number;
  /**
   * When discovery started, in milliseconds since the epoch. A file changed
   * within a couple of seconds before it may have changed again after its
   * proof was taken, so its proof is not trusted.
   */
  scannedAt: number;
}

const PACK_FILE = new RegExp(
  `^(?:package\\.json|${PACK_FILE_PATTERN.source.slice(1, -1)})$`,
);
const count = z.number().int().nonnegative();

const fileProof: z.ZodType<FileProof> = z.tuple([
  z.string().regex(PACK_FILE),
  count,
  z.number(),
  z.number().nullable(),
  count.nullable(),
  count.nullable(),
]);

const indexedModule: z.ZodType<IndexedModule> = z.tuple([
  z.string().regex(PACK_FILE),
  ModuleIdSchema,
  DigestSchema,
  DigestSchema,
  z.array(count),
]);

const discoveryIndexPack: z.ZodType<DiscoveryIndexPack> = z.strictObject({
  folder: z.string().min(1),
  files: z.array(fileProof).min(1),
  outcome: z.discriminatedUnion("ok", [
    z.strictObject({
      ok: z.literal(true),
      name: PackNameSchema,
      version: z.string(),
      graphDigest: DigestSchema,
      exports: z.record(z.string(), z.string().regex(PACK_FILE)),
      modules: z.array(indexedModule),
    }),
    z.strictObject({
      ok: z.literal(false),
      name: z.string().optional(),
      diagnostic: PackDiagnosticSchema as unknown as z.ZodType<PackDiagnostic>,
    }),
  ]),
});

const discoveryIndexHeader: z.ZodType<DiscoveryIndexHeader> = z.strictObject({
  format: z.literal(1),
  rules: z.string(),
  maxModuleBytes: z.number().int().positive(),
  scannedAt: z.number(),
});

/**
 * Validates the first line of a disk catalog's discovery index file
 * (`indexPath`).
 *
 * @example
 * ```ts
 * import { DiscoveryIndexHeaderSchema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const header = DiscoveryIndexHeaderSchema.parse({
 *   format: 1, rules: "r", maxModuleBytes: 1024, scannedAt: 0,
 * });
 * assert.equal(header.format, 1);
 * assert.equal(DiscoveryIndexHeaderSchema.safeParse({ format: 2 }).success, false);
 * ```
 */
export const DiscoveryIndexHeaderSchema: Schema<DiscoveryIndexHeader> =
  discoveryIndexHeader;

/**
 * Validates one pack line of a disk catalog's discovery index file.
 *
 * @example
 * ```ts
 * import { DiscoveryIndexPackSchema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const pack = DiscoveryIndexPackSchema.parse({
 *   folder: "broken",
 *   files: [["package.json", 2, 0, null, null, null]],
 *   outcome: {
 *     ok: false,
 *     diagnostic: { pack: "broken", code: "PACK_MANIFEST_INVALID", message: "Bad" },
 *   },
 * });
 * assert.equal(pack.outcome.ok, false);
 * ```
 */
export const DiscoveryIndexPackSchema: Schema<DiscoveryIndexPack> =
  discoveryIndexPack;

let packLineCheck: ((value: unknown) => boolean) | undefined;

/**
 * Whether a parsed pack line of a discovery index matches
 * {@linkcode DiscoveryIndexPackSchema}: the same rule, checked by a
 * function compiled once from the schema's JSON Schema, which copies
 * nothing and reports no issues. A restart reads ten thousand such lines,
 * where a zod parse of each cost about a second; use the schema's
 * `safeParse` where the issues matter.
 *
 * @param value A parsed JSON value.
 * @returns Whether it is a valid pack line.
 *
 * @example
 * ```ts
 * import { isDiscoveryIndexPack } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const line = {
 *   folder: "broken",
 *   files: [["package.json", 2, 0, null, null, null]],
 *   outcome: {
 *     ok: false,
 *     diagnostic: { pack: "broken", code: "PACK_MANIFEST_INVALID", message: "Bad" },
 *   },
 * };
 * assert.equal(isDiscoveryIndexPack(line), true);
 * assert.equal(isDiscoveryIndexPack({ ...line, files: [] }), false);
 * ```
 */
export function isDiscoveryIndexPack(
  value: unknown,
): value is DiscoveryIndexPack {
  packLineCheck ??= compileJsonCheck(
    z.toJSONSchema(discoveryIndexPack, { io: "input" }) as JsonSchema,
  );
  return packLineCheck(value);
}
