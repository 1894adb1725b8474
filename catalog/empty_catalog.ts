// This module is browser compatible.

import type { Declaration } from "../protocol/declaration.ts";
import type { SandboxModuleCatalog } from "./types.ts";
import { declaredPackages, packStatus, remedy } from "./_pack_status.ts";

/**
 * A catalog with no packs, for code that imports nothing: every declared
 * pack resolves as not installed and every module id is unknown.
 *
 * @example
 * ```ts
 * import { EMPTY_CATALOG } from "@cordon/cordon/catalog";
 * import assert from "node:assert/strict";
 *
 * const resolution = EMPTY_CATALOG.resolveForExecution({ source: "", packages: ["greet"] });
 * assert.equal(resolution.statuses[0]?.status, "not-installed");
 * assert.equal((await EMPTY_CATALOG.authorizeDelivery("m1")).ok, false);
 * ```
 */
export const EMPTY_CATALOG: SandboxModuleCatalog = Object.freeze({
  resolveForExecution: (declaration: Declaration) => ({
    statuses: declaredPackages(declaration).map((request) =>
      packStatus(request, undefined)
    ),
    packs: {},
    modules: {},
    installed: [],
  }),
  authorizeDelivery: () =>
    Promise.resolve({
      ok: false as const,
      reason: "not-found" as const,
      code: "MODULE_NOT_FOUND",
      message: `No installed module has this id: ${remedy("MODULE_NOT_FOUND")}`,
    }),
  summaries: () => [],
});
