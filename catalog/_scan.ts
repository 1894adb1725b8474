// This module is browser compatible.

import { init, parse } from "es-module-lexer";
import type { ErrorCode } from "../protocol/mod.ts";

/** The static imports of a module that passed the scan. */
export interface ScanPassed {
  ok: true;
  /** Static import and export-from specifiers, first occurrence order. */
  specifiers: string[];
}

/** Why a module failed the scan. */
export interface ScanFailed {
  ok: false;
  code: ErrorCode;
  /** What is wrong, without the module's name: "uses import() on line 3". */
  detail: string;
}

/** What scanning one module found. */
export type ScanResult = ScanPassed | ScanFailed;

let ready: Promise<void> | undefined;

/** Compiles the lexer once; later calls share the same promise. */
export function initScanner(): Promise<void> {
  ready ??= init();
  return ready;
}

// A conservative check: it also matches `require(` in comments and strings,
// which a lexer-only scan cannot tell apart from a call. Pack modules are
// vetted ES modules, so a false positive costs a rename, never a hole.
const REQUIRE_CALL = /\brequire\s*\(/;

function lineOf(source: string, index: number): number {
  let line = 1;
  for (let i = source.indexOf("\n"); i !== -1 && i < index;) {
    line++;
    i = source.indexOf("\n", i + 1);
  }
  return line;
}

function fail(code: ErrorCode, detail: string): ScanFailed {
  return { ok: false, code, detail };
}

/**
 * Lists a module's static imports, or says why it may not be a pack module:
 * `import()` (and `import.source()` / `import.defer()`), `require`, import
 * attributes, source or defer phase imports, TypeScript type-only imports,
 * and sources the lexer cannot read. `import.meta` is allowed.
 *
 * {@linkcode initScanner} must have resolved first.
 */
export function scanImports(source: string): ScanResult {
  let imports;
  try {
    [imports] = parse(source);
  } catch (error) {
    const index = (error as { idx?: unknown }).idx;
    const where = typeof index === "number"
      ? ` near line ${lineOf(source, index)}`
      : "";
    return fail(
      "PACK_MODULE_SYNTAX",
      `cannot be read as an ES module${where}`,
    );
  }
  const specifiers: string[] = [];
  const seen = new Set<string>();
  for (const entry of imports) {
    if (entry.type === "import-meta") continue;
    const line = (): number => lineOf(source, entry.importStart);
    if (entry.type === "dynamic") {
      return fail("PACK_DYNAMIC_IMPORT", `uses import() on line ${line()}`);
    }
    if (entry.attributesStart !== -1 || entry.attributes !== null) {
      return fail(
        "IMPORT_ATTRIBUTES",
        `imports with attributes (with { ... }) on line ${line()}`,
      );
    }
    if (entry.phase !== null) {
      return fail(
        "PACK_MODULE_SYNTAX",
        `uses a ${entry.phase} phase import on line ${line()}`,
      );
    }
    if (entry.typeOnly) {
      return fail(
        "PACK_MODULE_SYNTAX",
        `uses a TypeScript type-only import on line ${line()}`,
      );
    }
    if (!seen.has(entry.specifier)) {
      seen.add(entry.specifier);
      specifiers.push(entry.specifier);
    }
  }
  const requireCall = REQUIRE_CALL.exec(source);
  if (requireCall !== null) {
    return fail(
      "PACK_DYNAMIC_IMPORT",
      `calls require on line ${lineOf(source, requireCall.index)}`,
    );
  }
  return { ok: true, specifiers };
}
