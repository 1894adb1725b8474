// This module is browser compatible.

/**
 * What a run derives from its guest source and the packs it declares
 * alone: the guest scan's decisions and the key of its warm graph. A
 * Code node runs the same source with the same packs again and again, so
 * an executor keeps these and checks, per run, that the catalog still
 * hands out the same packs and modules; only then does it skip the scan.
 *
 * Only frozen packs and modules are trusted this way: an object that
 * cannot change and is the same object as before holds what it held
 * before. A catalog that hands out objects it may change is scanned every
 * run, as before.
 *
 * @module
 */

import { hasOwnKey } from "../protocol/host_fields.ts";
import type { ExecutionResolution, ResolvedPack } from "../catalog/types.ts";
import type {
  ImportAllowed,
  ImportDenied,
  ImportPolicy,
} from "../policy/import_policy.ts";
import { scanGuestImports } from "../policy/scan_guest.ts";
import { RecentMap } from "../protocol/recent.ts";

/** The most plans one executor keeps. */
export const MAX_PLANS = 256;
/** Sources longer than this are scanned every run, so plans stay small. */
const MAX_PLANNED_SOURCE_CHARS = 16 * 1024;

/** A guest source's allowed imports, as its run uses them. */
export interface GuestPlan {
  /** The modules the guest imports statically, in source order, each once. */
  readonly imports: readonly ImportAllowed[];
  /** The module name each static specifier resolved to. */
  readonly names: ReadonlyMap<string, string>;
  /** The key of the warm graph of {@linkcode GuestPlan.imports}. */
  readonly warmKey: string;
}

/** A plan with the resolution parts it was decided from. */
interface KeptPlan extends GuestPlan {
  /** The declared packs, by name, as the scan saw them. */
  readonly packs: readonly (readonly [string, ResolvedPack])[];
}

/** The key of the warm graph of `imports`: names and graph digests. */
function warmKeyOf(imports: readonly ImportAllowed[]): string {
  return imports.map((module) => `${module.name} ${module.module.graphDigest}`)
    .join("\n");
}

/**
 * Frozen, with data properties only: a frozen object's getter could still
 * answer differently from one call to the next.
 */
function isFixed(value: object): boolean {
  if (!Object.isFrozen(value)) return false;
  for (const key of Reflect.ownKeys(value)) {
    if (!("value" in Object.getOwnPropertyDescriptor(value, key)!)) {
      return false;
    }
  }
  return true;
}

function isFixedPack(pack: ResolvedPack): boolean {
  return isFixed(pack) && isFixed(pack.exports);
}

/**
 * Whether `plan` still decides the guest's imports under `resolution`:
 * each pack declared when it was made, and each module it imports, is
 * still the same frozen object. A pack declared since changes no decision
 * the plan holds. The work is one check per declared pack and per
 * imported module, whatever the size of the packs' graphs.
 */
function holdsFor(plan: KeptPlan, resolution: ExecutionResolution): boolean {
  const packs = resolution.packs;
  for (const [name, pack] of plan.packs) {
    if (!Object.hasOwn(packs, name) || packs[name] !== pack) return false;
  }
  const modules = resolution.modules;
  return plan.imports.every(({ module }) =>
    Object.hasOwn(modules, module.id) && modules[module.id] === module
  );
}

/** Whether `plan` may be kept: what it was decided from cannot change. */
function keepable(plan: KeptPlan): boolean {
  return plan.packs.every(([, pack]) => isFixedPack(pack)) &&
    plan.imports.every(({ module }) => isFixed(module));
}

/** The guest plans of one executor, by source, least recently used first. */
export class GuestPlans {
  readonly #plans = new RecentMap<string, KeptPlan>({ maxEntries: MAX_PLANS });

  /**
   * The plan of `source` under `resolution`: kept from an earlier run
   * when it still holds, or made now by scanning `source` with `policy`.
   *
   * @param source The guest source.
   * @param resolution The run's resolution.
   * @param policy The run's import policy, made from `resolution`.
   * @returns The plan, or the scan's first denial.
   */
  planFor(
    source: string,
    resolution: ExecutionResolution,
    policy: ImportPolicy,
  ): GuestPlan | ImportDenied {
    // Asking marks the source as used, whether or not its plan still holds.
    const kept = this.#plans.get(source);
    if (kept !== undefined && holdsFor(kept, resolution)) return kept;
    const scanned = scanGuestImports(source, policy);
    if (hasOwnKey(scanned, "ok")) return scanned;
    const plan: KeptPlan = {
      imports: scanned.modules,
      names: scanned.names,
      warmKey: warmKeyOf(scanned.modules),
      packs: Object.entries(resolution.packs),
    };
    if (
      source.length <= MAX_PLANNED_SOURCE_CHARS &&
      keepable(plan)
    ) {
      this.#plans.set(source, plan);
    }
    return plan;
  }

  /** Drops every plan. */
  clear(): void {
    this.#plans.clear();
  }

  /** How many plans are kept. */
  get size(): number {
    return this.#plans.size;
  }
}
