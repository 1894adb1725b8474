/**
 * The static check every run of the worker and process tiers passes before
 * any code runs. Deno loads a program's static module graph without asking
 * for permissions, so the sandbox itself refuses every import: these tiers
 * run guest code without packs. A second line of defence stays in place at
 * run time: guest modules are loaded with `import()` inside a realm without
 * permissions, which Deno does check, and the realm cannot generate code
 * from strings, so no `import()` can appear that this scan did not see.
 *
 * @module
 */

import { init, parse } from "es-module-lexer";
import {
  classifySpecifier,
  dynamicImportDenial,
  IMPORT_DENIED_ERROR_NAME,
  importAttributesDenial,
  type ImportDenial,
} from "../protocol/import_specifier.ts";
import type { FailureDetail } from "../protocol/run_result.ts";
import { guestSyntaxError } from "./_outcome.ts";

let ready: Promise<void> | undefined;

function denial(found: ImportDenial): FailureDetail {
  return {
    code: found.code,
    name: IMPORT_DENIED_ERROR_NAME,
    message: found.message,
  };
}

/** What {@linkcode scanGuestImports} found. */
export type ScanResult =
  | { kind: "clean" }
  | { kind: "denied"; failure: FailureDetail }
  | { kind: "unreadable"; failure: FailureDetail };

/**
 * Refuses guest source that imports anything. Source the lexer cannot read
 * cannot be checked, so it never runs: it is `unreadable`, and the tier
 * only asks the engine to parse it, for a better message than the lexer's.
 *
 * @param source The guest ES module source.
 * @returns `clean` when the source imports nothing, `denied` with the
 * failure of the first refused import in source order, or `unreadable`
 * with the lexer's syntax failure.
 */
export async function scanGuestImports(source: string): Promise<ScanResult> {
  await (ready ??= init());
  let imports: ReturnType<typeof parse>[0];
  try {
    [imports] = parse(source);
  } catch (error) {
    const position = /@:(\d+):(\d+)/.exec(
      error instanceof Error ? error.message : "",
    );
    return {
      kind: "unreadable",
      failure: guestSyntaxError(
        position === null
          ? "the source could not be parsed"
          : `parse error at line ${position[1]}, column ${position[2]}`,
      ),
    };
  }
  const refused = firstRefusal(imports);
  return refused === undefined
    ? { kind: "clean" }
    : { kind: "denied", failure: refused };
}

function firstRefusal(
  imports: ReturnType<typeof parse>[0],
): FailureDetail | undefined {
  for (const found of imports) {
    if (found.type === "import-meta") continue;
    if (found.type === "dynamic") {
      return denial(
        dynamicImportDenial(found.glob ? undefined : found.specifier),
      );
    }
    if (found.attributes !== null || found.attributesStart >= 0) {
      return denial(importAttributesDenial(found.specifier));
    }
    const kind = classifySpecifier(found.specifier);
    if (kind.kind === "denied") return denial(kind);
    if (kind.kind === "relative") {
      return {
        code: "IMPORT_PATH_ESCAPE",
        name: IMPORT_DENIED_ERROR_NAME,
        message: `Cannot import ${
          JSON.stringify(found.specifier.slice(0, 200))
        } from a sandbox module: guest source has no relative imports; import declared packs by name`,
      };
    }
    return {
      code: "IMPORT_UNDECLARED",
      name: IMPORT_DENIED_ERROR_NAME,
      message: `Cannot import ${
        JSON.stringify(found.specifier.slice(0, 200))
      } from a sandbox module: this sandbox runs guest code without packs, so no pack is declared; run it on the QuickJS tier with "${kind.pack}" in the declaration's packages`,
    };
  }
  return undefined;
}
