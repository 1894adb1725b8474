/**
 * The static check every run of the worker and process tiers passes before
 * any code runs. Deno loads a program's static module graph without asking
 * for permissions, so the sandbox itself refuses every import: these tiers
 * run guest code without packs. A second line of defence stays in place at
 * run time: guest modules are loaded with `import()` inside a realm without
 * permissions, which Deno does check, and the realm cannot generate code
 * from strings. The lexer can still misread code as text (see
 * `policy/misread_imports.ts`), and these tiers have no run-time hook for
 * imports, so where it might, text that spells an import the scan did not
 * find is refused too.
 *
 * @module
 */

import {
  classifySpecifier,
  IMPORT_DENIED_ERROR_NAME,
  type ImportDenial,
} from "../policy/import_specifier.ts";
import { refusalDenial } from "../policy/scan_guest.ts";
import { initScanner, scanModule } from "../policy/scan_module.ts";
import { misreadImport } from "../policy/misread_imports.ts";
import type { FailureDetail } from "../protocol/run_result.ts";
import { guestSyntaxError } from "./_outcome.ts";

function denial(found: ImportDenial): FailureDetail {
  return {
    code: found.code,
    name: IMPORT_DENIED_ERROR_NAME,
    message: found.message,
  };
}

function doubtfulImport(source: string): FailureDetail | null {
  const found = misreadImport(source);
  if (found === null) return null;
  const line = found.line;
  if (found.kind === "call") {
    return {
      code: "IMPORT_DYNAMIC",
      name: IMPORT_DENIED_ERROR_NAME,
      message:
        `Cannot use import() in a sandbox module: line ${line} spells an import call after code the scan may misread (a \`}\` followed by a \`/\`), which this tier refuses even in a comment or a string; dynamic import is denied; use static import declarations of declared packs`,
    };
  }
  return {
    code: "GUEST_SYNTAX_ERROR",
    name: "SyntaxError",
    message:
      `Cannot check the guest source's imports: line ${line} spells an import after code the scan may misread (a \`}\` followed by a \`/\`), and this tier refuses that even in a comment or a string; put the function or class expression before the \`/\` in parentheses, or reword the text`,
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
  await initScanner();
  const scan = scanModule(source, { mode: "guest" });
  if (!scan.readable) {
    const position = /@:(\d+):(\d+)/.exec(scan.message);
    return {
      kind: "unreadable",
      failure: guestSyntaxError(
        position === null
          ? "the source could not be parsed"
          : `parse error at line ${position[1]}, column ${position[2]}`,
      ),
    };
  }
  // Every static import is refused, so the first one is the answer.
  const first = scan.specifiers[0];
  if (first !== undefined) return { kind: "denied", failure: refusalOf(first) };
  const refused = scan.refusal === null ? null : refusalDenial(scan.refusal);
  if (refused === null) {
    const unseen = doubtfulImport(source);
    return unseen === null
      ? { kind: "clean" }
      : { kind: "denied", failure: unseen };
  }
  const { code, name, message } = refused;
  return { kind: "denied", failure: { code, name, message } };
}

// These tiers run guest code without packs, so every static import is
// refused: denied forms with the classifier's code, the rest here.
function refusalOf(specifier: string): FailureDetail {
  const kind = classifySpecifier(specifier);
  if (kind.kind === "denied") return denial(kind);
  if (kind.kind === "relative") {
    return {
      code: "IMPORT_PATH_ESCAPE",
      name: IMPORT_DENIED_ERROR_NAME,
      message: `Cannot import ${
        JSON.stringify(specifier.slice(0, 200))
      } from a sandbox module: guest source has no relative imports; import declared packs by name`,
    };
  }
  return {
    code: "IMPORT_UNDECLARED",
    name: IMPORT_DENIED_ERROR_NAME,
    message: `Cannot import ${
      JSON.stringify(specifier.slice(0, 200))
    } from a sandbox module: this sandbox runs guest code without packs, so no pack is declared; run it on the QuickJS tier with "${kind.pack}" in the declaration's packages`,
  };
}
