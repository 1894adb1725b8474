// This module is browser compatible.

/**
 * Static import scanning with es-module-lexer: the guest source before it
 * runs, and each pack module before QuickJS compiles it.
 *
 * @module
 */

import { init, parse } from "es-module-lexer";
import {
  dynamicImportDenial,
  IMPORT_DENIED_ERROR_NAME,
  importAttributesDenial,
} from "../protocol/mod.ts";
import {
  GUEST_MODULE_NAME,
  type ImportDenied,
  type ImportPolicy,
} from "./import_policy.ts";

let ready: Promise<void> | undefined;

/** Compiles the lexer once; later calls share the promise. */
export function initLexer(): Promise<void> {
  ready ??= init();
  return ready;
}

function denial(
  found: { code: ImportDenied["code"]; message: string },
): ImportDenied {
  return {
    ok: false,
    code: found.code,
    name: IMPORT_DENIED_ERROR_NAME,
    message: found.message,
  };
}

type Imports = ReturnType<typeof parse>[0];

function lex(source: string): Imports | null {
  try {
    return parse(source)[0];
  } catch {
    // QuickJS reports the syntax error with its own message and position.
    return null;
  }
}

/**
 * Checks the guest source's imports in source order before any code runs:
 * `import()` (literal or computed) is `IMPORT_DYNAMIC`, an import with
 * attributes is `IMPORT_ATTRIBUTES`, and every static specifier goes
 * through the run's import policy.
 *
 * {@linkcode initLexer} must have resolved first.
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
  const imports = lex(source);
  if (imports === null) return null;
  for (const entry of imports) {
    if (entry.type === "import-meta") continue;
    if (entry.type === "dynamic") {
      return denial(
        dynamicImportDenial(entry.glob ? undefined : entry.specifier),
      );
    }
    if (entry.typeOnly) continue;
    if (entry.attributesStart !== -1 || entry.attributes !== null) {
      return denial(importAttributesDenial(entry.specifier));
    }
    const decision = policy.resolve(GUEST_MODULE_NAME, entry.specifier);
    if (!decision.ok) return decision;
  }
  return null;
}

/**
 * Checks a pack module for `import()` and import attributes, which pack
 * discovery rejects; the loader checks again because a catalog may be
 * remote.
 *
 * @param source The module source.
 * @returns The denial, or `null`.
 */
export function scanPackModule(source: string): ImportDenied | null {
  const imports = lex(source);
  if (imports === null) return null;
  for (const entry of imports) {
    if (entry.type === "dynamic") {
      return denial(
        dynamicImportDenial(entry.glob ? undefined : entry.specifier),
      );
    }
    if (
      entry.type !== "import-meta" &&
      (entry.attributesStart !== -1 || entry.attributes !== null)
    ) {
      return denial(importAttributesDenial(entry.specifier));
    }
  }
  return null;
}
