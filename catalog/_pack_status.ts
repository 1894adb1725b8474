// This module is browser compatible.

/**
 * How a declared pack resolves against what is installed. The disk and the
 * remote catalog share it, so a declaration fails with the same status and
 * message word for word on a server and in a browser.
 *
 * @module
 */

import { operatorJson, operatorText } from "../protocol/operator_text.ts";
import type { Declaration } from "../protocol/declaration.ts";
import { RecentMap } from "../protocol/recent.ts";
import { fieldOf } from "../protocol/host_fields.ts";
import { ERROR_CODES, type ErrorCode } from "../protocol/error_codes.ts";
import type {
  ExecutionResolution,
  PackStatus,
  ResolvedModule,
  ResolvedPack,
} from "./types.ts";

/** One entry of a declaration's `packages`, normalised. */
export interface PackRequest {
  name: string;
  packVersion?: string;
  graphDigest?: string;
}

/** The installed version of a pack, as far as a status needs it. */
export interface InstalledPack {
  version: string;
  graphDigest: string;
}

/** A registry remedy, lower-cased to follow a colon in a message. */
export function remedy(code: ErrorCode): string {
  const text = ERROR_CODES[code].remedy;
  return text.charAt(0).toLowerCase() + text.slice(1);
}

// A pin is read from the request itself, and the normalised request holds
// both pins as its own (undefined when absent): neither is read from a key
// a dependency of the host put on Object.prototype.
function readPackRequest(request: unknown): PackRequest {
  if (typeof request === "string") {
    return { name: request, packVersion: undefined, graphDigest: undefined };
  }
  const specifier = typeof request === "object" && request !== null
    ? fieldOf(request, "specifier")
    : undefined;
  if (typeof specifier === "string") {
    const packVersion = fieldOf(request as object, "packVersion");
    const graphDigest = fieldOf(request as object, "graphDigest");
    return {
      name: specifier,
      packVersion: typeof packVersion === "string" ? packVersion : undefined,
      graphDigest: typeof graphDigest === "string" ? graphDigest : undefined,
    };
  }
  throw new TypeError(
    "Cannot resolve the declaration: each package must be a pack name or { specifier }",
  );
}

/**
 * Reads a declaration's packages.
 *
 * @throws {TypeError} When `packages` is not an array of names or pins.
 */
export function declaredPackages(declaration: Declaration): PackRequest[] {
  const packages: unknown = declaration?.packages ?? [];
  if (!Array.isArray(packages)) {
    throw new TypeError(
      "Cannot resolve the declaration: packages must be an array",
    );
  }
  return packages.map(readPackRequest);
}

/**
 * The status of one declared pack. `rejectedAs` is the code discovery
 * rejected an installed folder of that name with, when the catalog knows it.
 */
export function packStatus(
  request: PackRequest,
  installed: InstalledPack | undefined,
  rejectedAs?: string,
): PackStatus {
  const { name } = request;
  if (installed === undefined) {
    return {
      name,
      status: "not-installed",
      code: "PACK_NOT_INSTALLED",
      message: rejectedAs === undefined
        ? `Pack "${name}" is not installed: install it in the packs folder or remove it from the declaration's packages`
        : `Pack "${name}" is not installed: discovery rejected it (${rejectedAs}); fix it as the catalog's diagnostics say, or remove it from the declaration's packages`,
    };
  }
  const { version, graphDigest } = installed;
  if (request.packVersion !== undefined && request.packVersion !== version) {
    return {
      name,
      status: "version-mismatch",
      code: "PACK_VERSION_MISMATCH",
      message: `Pack "${name}" is installed at version ${
        operatorText(version)
      }, but the declaration pins ${operatorJson(request.packVersion)}: ${
        remedy("PACK_VERSION_MISMATCH")
      }`,
    };
  }
  if (
    request.graphDigest !== undefined && request.graphDigest !== graphDigest
  ) {
    return {
      name,
      status: "digest-mismatch",
      code: "PACK_DIGEST_MISMATCH",
      message:
        `Pack "${name}" has graph digest ${graphDigest}, but the declaration pins ${
          operatorJson(request.graphDigest)
        }: ${remedy("PACK_DIGEST_MISMATCH")}`,
    };
  }
  return { name, status: "ok", version, graphDigest };
}

/**
 * A declaration's resolution from its statuses: the packs whose status is
 * ok, with their modules. `lookup` returns an ok pack and its modules.
 *
 * Module ids are opaque, so only a listing vouches that two packs do not
 * share one; a pack whose module id another declared pack already uses is
 * refused (`DIGEST_MISMATCH`) rather than let one pack's imports load the
 * other's module.
 */
export function executionResolution(
  statuses: PackStatus[],
  lookup: (
    name: string,
  ) => { pack: ResolvedPack; modules: readonly ResolvedModule[] },
  installed: readonly string[],
): ExecutionResolution {
  const failed = new Set(
    statuses.filter((s) => s.status !== "ok").map((s) => s.name),
  );
  const found = new Map(
    statuses.filter((s) => s.status === "ok" && !failed.has(s.name))
      .map((s) => [s.name, lookup(s.name)]),
  );
  const combined = combinedModules(
    [...found].map(([name, resolved]) => [name, resolved.modules]),
  );
  const packs: Record<string, ResolvedPack> = {};
  const checked = statuses.map((status): PackStatus => {
    const resolved = found.get(status.name);
    if (resolved === undefined) return status;
    const refused = combined.refused.get(status.name);
    if (refused !== undefined) return { ...refused };
    packs[status.name] = resolved.pack;
    return status;
  });
  return { statuses: checked, packs, modules: combined.modules, installed };
}

/** Declared packs' modules by id, and the packs refused for a shared id. */
interface CombinedModules {
  modules: Record<string, ResolvedModule>;
  refused: Map<string, PackStatus>;
}

/**
 * The combinations of module lists made lately, so that a declaration of
 * several packs costs a run what one pack does, not a walk over every
 * module of each (1,500 modules beside another pack took about 1 ms).
 */
const MAX_COMBINATIONS = 64;
const combinations = new RecentMap<string, CombinedModules>({
  maxEntries: MAX_COMBINATIONS,
});
const listNumbers = new WeakMap<readonly ResolvedModule[], number>();
let lastListNumber = 0;

function combinedModules(
  lists: [name: string, modules: readonly ResolvedModule[]][],
): CombinedModules {
  if (lists.length < 2) {
    // A single pack cannot collide with another: its record is shared.
    const modules = lists.length === 0 ? {} : modulesById(lists[0]![1]);
    return { modules, refused: new Map() };
  }
  const key = lists.map(([name, modules]) => {
    let number = listNumbers.get(modules);
    if (number === undefined) {
      listNumbers.set(modules, number = ++lastListNumber);
    }
    return `${number} ${name}`;
  }).join("\n");
  const kept = combinations.get(key);
  if (kept !== undefined) return kept;
  const combined = combine(lists);
  combinations.set(key, combined);
  return combined;
}

function combine(
  lists: [name: string, modules: readonly ResolvedModule[]][],
): CombinedModules {
  const owners = new Map<string, string>();
  const refused = new Map<string, PackStatus>();
  const byPack: Record<string, ResolvedModule>[] = [];
  for (const [name, modules] of lists) {
    const shared = modules.find((module) => owners.has(module.id));
    if (shared !== undefined) {
      refused.set(name, sharedIdStatus(name, shared, owners.get(shared.id)!));
      continue;
    }
    for (const module of modules) owners.set(module.id, name);
    byPack.push(modulesById(modules));
  }
  // Shared between runs, so frozen; merged by defining properties, so an id
  // such as "__proto__" stays an id.
  const modules = Object.freeze(
    Object.fromEntries(byPack.flatMap((record) => Object.entries(record))),
  );
  return { modules, refused };
}

function sharedIdStatus(
  name: string,
  module: ResolvedModule,
  owner: string,
): PackStatus {
  return {
    name,
    status: "unavailable",
    code: "DIGEST_MISMATCH",
    message: `Refusing pack "${name}": its module ${
      operatorText(module.path)
    } has the id "${module.id}" of a module of pack "${owner}"; do not trust this server or proxy; the pack was not run`,
  };
}

/**
 * One pack's modules by id, made once per list of modules: every run
 * resolves its declaration, and copying a large pack's modules each time
 * would make a run's cost grow with its pack.
 */
const modulesByList = new WeakMap<
  readonly ResolvedModule[],
  Record<string, ResolvedModule>
>();

function modulesById(
  modules: readonly ResolvedModule[],
): Record<string, ResolvedModule> {
  let byId = modulesByList.get(modules);
  if (byId === undefined) {
    byId = Object.freeze(
      Object.fromEntries(modules.map((module) => [module.id, module])),
    );
    modulesByList.set(modules, byId);
  }
  return byId;
}
