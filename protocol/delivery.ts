// This module is browser compatible.

import { z } from "./_zod.ts";
import type { Schema } from "./schema.ts";
import type { WireErrorCode } from "./error_codes.ts";
import {
  digest as DigestSchema,
  moduleId as ModuleIdSchema,
  packName as PackNameSchema,
  packVersion as PackVersionSchema,
} from "./_zod_ids.ts";
import { MODULE_PATH_PATTERN } from "./_id_rules.ts";

/**
 * Who asks for a module's bytes; the entitlement policy reads it. An id
 * given as `undefined` counts as left out, so a hook may write
 * `{ tenantId: request.headers.get("x-tenant") ?? undefined }` under
 * `exactOptionalPropertyTypes` too.
 */
export interface Requester {
  /** The principal (user or service) id, when known. */
  principalId?: string | undefined;
  /** The tenant id, when known. */
  tenantId?: string | undefined;
}

/** The pack a module belongs to. */
export interface PackRef {
  /** The pack name. */
  name: string;
  /** The pack version. */
  version: string;
}

/** A module the catalog agreed to deliver, with its bytes and digests. */
export interface AuthorizedDelivery {
  /** Always `true`: tells a delivery from a refusal. */
  ok: true;
  /** The module's opaque id. */
  moduleId: string;
  /** The module source. */
  content: string;
  /** Always `text/javascript`. */
  mediaType: "text/javascript";
  /** SHA-256 of the UTF-8 bytes of `content`. */
  digest: string;
  /** Digest over this module and its dependency closure. */
  graphDigest: string;
  /** Ids of the modules this one imports directly. */
  dependencyIds: string[];
  /** The pack this module belongs to. */
  pack: PackRef;
  /** The module's file inside its pack, such as `./lib/round.js`. */
  path: string;
}

const PackRefSchema = z.strictObject({
  name: PackNameSchema,
  version: PackVersionSchema,
});

const authorizedDelivery: z.ZodType<AuthorizedDelivery> = z
  .strictObject({
    ok: z.literal(true),
    moduleId: ModuleIdSchema,
    content: z.string(),
    mediaType: z.literal("text/javascript"),
    digest: DigestSchema,
    graphDigest: DigestSchema,
    dependencyIds: z.array(ModuleIdSchema),
    pack: PackRefSchema,
    path: z.string().regex(MODULE_PATH_PATTERN),
  });

/**
 * A module the catalog agreed to deliver. It never carries a filesystem
 * path: `path` is the file's place inside its pack.
 *
 * @example
 * ```ts
 * import { AuthorizedDeliverySchema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const digest = "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";
 * const delivery = AuthorizedDeliverySchema.parse({
 *   ok: true, moduleId: "m1", content: "", mediaType: "text/javascript",
 *   digest, graphDigest: digest, dependencyIds: [],
 *   pack: { name: "math", version: "1.0.0" }, path: "./index.js",
 * });
 * assert.equal(delivery.ok, true);
 * ```
 */
export const AuthorizedDeliverySchema: Schema<AuthorizedDelivery> =
  authorizedDelivery;

/** Why a module was not delivered. */
export type RefusalReason = "not-found" | "forbidden" | "unavailable";

/** A refusal to deliver a module. */
export interface DeliveryRefusal {
  /** Always `false`: tells a refusal from a delivery. */
  ok: false;
  /** Why, in one word. */
  reason: RefusalReason;
  /**
   * The stable error code: one of `ErrorCode`, or, from another
   * version of cordon (a remote delivery server), one this version does
   * not know.
   */
  code: WireErrorCode;
  /** What happened and what to do next. */
  message: string;
}

const deliveryRefusal: z.ZodType<DeliveryRefusal> = z
  .strictObject({
    ok: z.literal(false),
    reason: z.enum(["not-found", "forbidden", "unavailable"]),
    code: z.string(),
    message: z.string(),
  });

/**
 * A refusal to deliver a module: not found, forbidden by the entitlement
 * policy, or unavailable.
 *
 * @example
 * ```ts
 * import { DeliveryRefusalSchema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const refusal = DeliveryRefusalSchema.parse({
 *   ok: false, reason: "forbidden", code: "DELIVERY_FORBIDDEN", message: "No",
 * });
 * assert.equal(refusal.reason, "forbidden");
 * ```
 */
export const DeliveryRefusalSchema: Schema<DeliveryRefusal> = deliveryRefusal;

/** One module of an installed pack, as the catalog lists it. */
export interface ModuleSummary {
  /** The module's opaque id. */
  id: string;
  /** The module's file inside its pack, such as `./index.js`. */
  path: string;
  /** The subpaths that export this module (empty for internal helpers). */
  exportedAs: string[];
  /** SHA-256 of the module's bytes. */
  digest: string;
  /** Digest over the module and its dependency closure. */
  graphDigest: string;
  /** Ids of the modules this one imports directly. */
  dependencyIds: string[];
}

/** An installed pack, as the catalog lists it. */
export interface PackSummary {
  /** The pack name. */
  name: string;
  /** The pack version. */
  version: string;
  /** Digest over every exported module's graph digest, in subpath order. */
  graphDigest: string;
  /** The pack's modules, exported and internal. */
  modules: ModuleSummary[];
}

const ModuleSummarySchema = z.strictObject({
  id: ModuleIdSchema,
  path: z.string().regex(MODULE_PATH_PATTERN),
  exportedAs: z.array(z.string()),
  digest: DigestSchema,
  graphDigest: DigestSchema,
  dependencyIds: z.array(ModuleIdSchema),
});

const packSummary: z.ZodType<PackSummary> = z.strictObject({
  name: PackNameSchema,
  version: PackVersionSchema,
  graphDigest: DigestSchema,
  modules: z.array(ModuleSummarySchema),
});

/**
 * An installed pack and its modules, as `GET /api/sandbox-modules` lists it.
 *
 * @example
 * ```ts
 * import { PackSummarySchema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const digest = "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";
 * const summary = PackSummarySchema.parse({
 *   name: "math", version: "1.0.0", graphDigest: digest, modules: [],
 * });
 * assert.equal(summary.name, "math");
 * ```
 */
export const PackSummarySchema: Schema<PackSummary> = packSummary;

/** The body of `GET /api/sandbox-modules`. */
export interface CatalogListing {
  /** The installed packs. */
  packs: PackSummary[];
}

const catalogListing: z.ZodType<CatalogListing> = z.strictObject({
  packs: z.array(packSummary),
});

/**
 * The body of `GET /api/sandbox-modules`: every installed pack.
 *
 * @example
 * ```ts
 * import { CatalogListingSchema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(CatalogListingSchema.parse({ packs: [] }), { packs: [] });
 * ```
 */
export const CatalogListingSchema: Schema<CatalogListing> = catalogListing;

/** Why a pack (or one of its files) was rejected at discovery. */
export interface PackDiagnostic {
  /** The pack's folder, relative to the packs folder (never absolute). */
  pack: string;
  /**
   * The stable error code: one of `ErrorCode`, or, from another
   * version of cordon (the discovery index it wrote), one this version does
   * not know.
   */
  code: WireErrorCode;
  /** What is wrong and what to do. */
  message: string;
}

const packDiagnostic: z.ZodType<PackDiagnostic> = z.strictObject({
  pack: z.string(),
  code: z.string(),
  message: z.string(),
});

/**
 * Why a pack was rejected at discovery. `pack` is relative to the packs
 * folder, never absolute.
 *
 * @example
 * ```ts
 * import { PackDiagnosticSchema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const d = PackDiagnosticSchema.parse({
 *   pack: "broken", code: "PACK_MANIFEST_INVALID", message: "Bad",
 * });
 * assert.equal(d.pack, "broken");
 * ```
 */
export const PackDiagnosticSchema: Schema<PackDiagnostic> = packDiagnostic;
