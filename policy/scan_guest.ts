// This module is browser compatible.

/**
 * The QuickJS loader's static checks, on the one scanner: the guest source
 * before it runs, through the run's import policy, and each pack module
 * before QuickJS compiles it.
 *
 * @module
 */

import { hasOwnKey } from "../protocol/host_fields.ts";
import {
  dynamicImportDenial,
  IMPORT_DENIED_ERROR_NAME,
  importAttributesDenial,
  type ImportDenial,
} from "./import_specifier.ts";
import {
  GUEST_MODULE_NAME,
  type ImportAllowed,
  type ImportDenied,
  type ImportPolicy,
} from "./import_policy.ts";
import { scanModule, type ScanRefusal } from "./scan_module.ts";

function denial(found: ImportDenial): ImportDenied {
  return {
    ok: false,
    code: found.code,
    name: IMPORT_DENIED_ERROR_NAME,
    message: found.message,
  };
}

/**
 * The denial of a refusal both scan modes make, or `null` for one that
 * only pack mode makes (phase and type-only imports, `require(`). Text no
 * two engines read alike is the guest's syntax error, or the pack
 * module's.
 *
 * @param refusal What the scan refused.
 * @param source Whose source it is: the guest's or a pack module's.
 * @returns The denial, or `null`.
 */
export function refusalDenial(
  refusal: ScanRefusal,
  source: "guest" | "pack" = "guest",
): ImportDenied | null {
  if (refusal.kind === "dynamic") {
    return denial(dynamicImportDenial(refusal.specifier));
  }
  if (refusal.kind === "attributes") {
    return denial(importAttributesDenial(refusal.specifier));
  }
  if (refusal.kind === "text") {
    return {
      ok: false,
      code: source === "guest" ? "GUEST_SYNTAX_ERROR" : "PACK_MODULE_SYNTAX",
      name: "SyntaxError",
      message: `The ${
        source === "guest" ? "guest source" : "pack module"
      } ${refusal.detail}`,
    };
  }
  return null;
}

/**
 * Checks the guest source's imports in source order before any code runs:
 * `import()` (literal or computed) is `IMPORT_DYNAMIC`, an import with
 * attributes is `IMPORT_ATTRIBUTES`, and every static specifier (type-only
 * and phase imports included) goes through the run's import policy.
 *
 * `initScanner()` must have resolved first.
 *
 * @param source The guest source.
 * @param policy The run's import policy.
 * @returns The first denial, or `null` when every import is allowed (or
 * the source cannot be lexed; QuickJS then reports the syntax error).
 */
export function scanGuest(
  source: string,
  policy: ImportPolicy,
): ImportDenied | null {
  const scanned = scanGuestImports(source, policy);
  return hasOwnKey(scanned, "ok") ? scanned : null;
}

/** The guest's static imports, every one allowed. */
export interface GuestImports {
  /** The modules imported, in source order, each once. */
  modules: ImportAllowed[];
  /** The module name each specifier resolved to. */
  names: Map<string, string>;
}

/**
 * Like {@linkcode scanGuest}, and gives the modules the guest imports
 * statically when every import is allowed.
 *
 * @param source The guest source.
 * @param policy The run's import policy.
 * @returns The first denial, or the imports (none when the source cannot
 * be lexed; QuickJS then reports the syntax error).
 */
export function scanGuestImports(
  source: string,
  policy: ImportPolicy,
): ImportDenied | GuestImports {
  const scan = scanModule(source, { mode: "guest" });
  const modules = new Map<string, ImportAllowed>();
  const names = new Map<string, string>();
  if (!scan.readable) return { modules: [], names };
  for (const specifier of scan.specifiers) {
    const decision = policy.resolve(GUEST_MODULE_NAME, specifier);
    if (!decision.ok) return decision;
    names.set(specifier, decision.name);
    if (!modules.has(decision.name)) modules.set(decision.name, decision);
  }
  const refused = scan.refusal === null ? null : refusalDenial(scan.refusal);
  return refused ?? { modules: [...modules.values()], names };
}

/**
 * Checks a pack module for `import()` and import attributes, which pack
 * discovery rejects; the loader checks again because a catalog may be
 * remote. The other pack-mode refusals (phase and type-only imports) are
 * syntax QuickJS refuses itself, and guest realms have no `require`.
 *
 * @param source The module source.
 * @returns The denial, or `null`.
 */
export function scanPackModule(source: string): ImportDenied | null {
  const scan = scanModule(source, { mode: "pack" });
  if (!scan.readable || scan.refusal === null) return null;
  return refusalDenial(scan.refusal, "pack");
}
