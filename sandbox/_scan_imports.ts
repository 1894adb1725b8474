/**
 * The static check every run of the worker and process tiers passes before
 * any code runs. Deno loads a program's static module graph without asking
 * for permissions, so the sandbox itself refuses every import: these tiers
 * run guest code without packs. A second line of defence stays in place at
 * run time: guest modules are loaded with `import()` inside a realm without
 * permissions, which Deno does check, and the realm cannot generate code
 * from strings. The lexer can misread code as text and text as code (see
 * `policy/misread_imports.ts`), and these tiers have no run-time hook for
 * imports, so where it might, or where it cannot read the source, a full
 * parser reads the source instead (`policy/parsed_imports.ts`); only source the
 * parser cannot read either keeps the lexer's cautious answer, which
 * refuses import text even in a comment or a string.
 *
 * @module
 */

import {
  classifySpecifier,
  IMPORT_DENIED_ERROR_NAME,
  type ImportDenial,
  quoteSpecifier,
} from "../policy/import_specifier.ts";
import { refusalDenial } from "../policy/scan_guest.ts";
import {
  initScanner,
  scanModule,
  type ScanRefusal,
} from "../policy/scan_module.ts";
import {
  type MisreadImport,
  misreadImport,
} from "../policy/misread_imports.ts";
import {
  firstParsedImport,
  type ParsedImport,
} from "../policy/parsed_imports.ts";
import type { FailureDetail } from "../protocol/run_result.ts";
import { guestSyntaxError } from "./_outcome.ts";

function denial(found: ImportDenial): FailureDetail {
  return {
    code: found.code,
    name: IMPORT_DENIED_ERROR_NAME,
    message: found.message,
  };
}

/** The refusal of import text the scan may have misread. */
function doubtfulImport(found: MisreadImport): FailureDetail {
  const line = found.line;
  if (found.kind === "call") {
    return {
      code: "IMPORT_DYNAMIC",
      name: IMPORT_DENIED_ERROR_NAME,
      message:
        `Cannot use import() in a sandbox module: line ${line} spells an import call after code the scan may misread (a \`}\`, a property or escaped name spelled like a keyword, \`extends\`, \`++\` or \`--\`, followed by a \`/\`) in source that holds syntax its parser does not know, which this tier refuses even in a comment or a string; dynamic import is denied; use static import declarations of declared packs`,
    };
  }
  return {
    code: "GUEST_SYNTAX_ERROR",
    name: "SyntaxError",
    message:
      `Cannot check the guest source's imports: line ${line} spells an import after code the scan may misread (a \`}\`, a property or escaped name spelled like a keyword, \`extends\`, \`++\` or \`--\`, followed by a \`/\`) in source that holds syntax its parser does not know, which this tier refuses even in a comment or a string; put the function or class expression before the \`/\` in parentheses, write such a property right after its dot, or reword the text`,
  };
}

/** What {@linkcode scanGuestImports} found. */
export type ScanResult =
  | { kind: "clean" }
  | { kind: "denied"; failure: FailureDetail }
  | { kind: "unreadable"; failure: FailureDetail };

function deniedBy(refusal: ScanRefusal): ScanResult | null {
  const refused = refusalDenial(refusal);
  if (refused === null) return null;
  const { code, name, message } = refused;
  return { kind: "denied", failure: { code, name, message } };
}

/** The lexer's answer: every static import is refused, the first first. */
function lexedAnswer(
  specifiers: string[],
  refusal: ScanRefusal | null,
): ScanResult {
  const first = specifiers[0];
  if (first !== undefined) return { kind: "denied", failure: refusalOf(first) };
  return (refusal === null ? null : deniedBy(refusal)) ?? { kind: "clean" };
}

function parsedAnswer(parsed: ParsedImport): ScanResult {
  if (parsed.kind === "static") {
    return { kind: "denied", failure: refusalOf(parsed.specifier) };
  }
  if (parsed.kind === "refused") return deniedBy(parsed.refusal)!;
  return { kind: "clean" };
}

function unreadable(lexerMessage: string): ScanResult {
  const position = /@:(\d+):(\d+)/.exec(lexerMessage);
  return {
    kind: "unreadable",
    failure: guestSyntaxError(
      position === null
        ? "the source could not be parsed"
        : `parse error at line ${position[1]}, column ${position[2]}`,
    ),
  };
}

/**
 * Refuses guest source that imports anything. Where the lexer may have
 * misread the source (a `}`, a name spelled like a keyword, `extends`,
 * `++` or `--` before a `/`, and text that spells an import) or could not read it, a parser decides.
 * Source neither can read cannot be checked, so it never runs: it is
 * `unreadable`, and the tier only asks the engine to parse it, for a
 * better message than the lexer's.
 *
 * @param source The guest ES module source.
 * @returns `clean` when the source imports nothing, `denied` with the
 * failure of the first refused import in source order, or `unreadable`
 * with the lexer's syntax failure.
 */
export async function scanGuestImports(source: string): Promise<ScanResult> {
  await initScanner();
  const scan = scanModule(source, { mode: "guest" });
  // Text the engines read differently is refused whatever it imports.
  if (scan.readable && scan.refusal?.kind === "text") {
    return deniedBy(scan.refusal)!;
  }
  const doubt = scan.readable ? misreadImport(source) : null;
  if (scan.readable && doubt === null) {
    return lexedAnswer(scan.specifiers, scan.refusal);
  }
  const parsed = await firstParsedImport(source);
  if (parsed.kind !== "unparsable") return parsedAnswer(parsed);
  if (!scan.readable) return unreadable(scan.message);
  const lexed = lexedAnswer(scan.specifiers, scan.refusal);
  return lexed.kind === "clean"
    ? { kind: "denied", failure: doubtfulImport(doubt!) }
    : lexed;
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
        quoteSpecifier(specifier)
      } from a sandbox module: guest source has no relative imports; import declared packs by name`,
    };
  }
  return {
    code: "IMPORT_UNDECLARED",
    name: IMPORT_DENIED_ERROR_NAME,
    message: `Cannot import ${
      quoteSpecifier(specifier)
    } from a sandbox module: this sandbox runs guest code without packs, so no pack is declared; run it on the QuickJS tier with "${kind.pack}" in the declaration's packages`,
  };
}
