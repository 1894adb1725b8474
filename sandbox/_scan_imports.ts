/**
 * The static check every run of the worker and process tiers passes before
 * any code runs. Deno loads a program's static module graph without asking
 * for permissions, so the sandbox itself refuses every import: these tiers
 * run guest code without packs. A second line of defence stays in place at
 * run time: guest modules are loaded with `import()` inside a realm without
 * permissions, which Deno does check, and the realm cannot generate code
 * from strings. The lexer can still misread code as text (see
 * `braceThenSlash`), and these tiers have no run-time hook for
 * `import()`, so where it might, text that spells an import call the scan
 * did not find is refused too.
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
import { lineOf } from "../policy/source_text.ts";
import type { FailureDetail } from "../protocol/run_result.ts";
import { guestSyntaxError } from "./_outcome.ts";

function denial(found: ImportDenial): FailureDetail {
  return {
    code: found.code,
    name: IMPORT_DENIED_ERROR_NAME,
    message: found.message,
  };
}

// es-module-lexer guesses whether a `/` after a `}` starts a regular
// expression, and guesses wrong after a function, class or arrow function
// body: in `function () {} / 1; import "x"; 1 / 2` or
// `function () {} / import("x") / 1` it sees no import. QuickJS and
// node:vm check every import when it is linked or called; these tiers
// cannot, so where a `}` is followed by a `/`, text that spells an import
// is refused, a comment or a string included: `import` not followed by
// `.meta`, `export *` and `export { ... } from`. Everything here takes
// time linear in the source's length: it runs on guest text in the
// caller's thread.
const KEYWORD =
  /(?<![\p{ID_Continue}$#\u200c\u200d]|[^.]\.\s*)(?:import|export)(?![\p{ID_Continue}$\u200c\u200d])/gu;
const SPACE = /\s/;
const LINE_END = /[\n\r\u2028\u2029]/g;
const WORD_PART = /[\p{ID_Continue}$\u200c\u200d]/u;

/**
 * Where the comment that starts before `from` ends, found with `find` and
 * kept: the next lookup from inside the same comment reuses it, so a
 * source of many `}` in one long comment is read once.
 */
function commentEnds(find: (from: number) => number) {
  let start = -1;
  let end = -1;
  return (from: number): number => {
    if (from < start || from > end) {
      start = from;
      end = find(from);
    }
    return end;
  };
}

/** Skips spaces and comments from `at`; returns where code resumes. */
function spaceSkipper(source: string): (at: number) => number {
  const blockEnd = commentEnds((from) => {
    const end = source.indexOf("*/", from);
    return end === -1 ? source.length : end + 2;
  });
  const lineEnd = commentEnds((from) => {
    LINE_END.lastIndex = from;
    return LINE_END.exec(source)?.index ?? source.length;
  });
  return (at) => {
    for (;;) {
      while (at < source.length && SPACE.test(source[at]!)) at++;
      if (source.startsWith("/*", at)) at = blockEnd(at + 2);
      else if (source.startsWith("//", at)) at = lineEnd(at + 2);
      else return at;
    }
  };
}

function wordAt(source: string, at: number, word: string): boolean {
  return source.startsWith(word, at) &&
    !WORD_PART.test(source[at + word.length] ?? "");
}

/** Whether a `}` is followed by a `/` that starts no comment. */
function braceThenSlash(source: string, skip: (at: number) => number) {
  for (let i = source.indexOf("}"); i !== -1; i = source.indexOf("}", i + 1)) {
    if (source[skip(i + 1)] === "/") return true;
  }
  return false;
}

/**
 * The first spelling of an import in the text: `"call"` for `import(`,
 * `"other"` for any other import or re-export, with where it starts.
 */
function importSpelling(
  source: string,
  skip: (at: number) => number,
): { kind: "call" | "other"; index: number } | null {
  let close = -1;
  for (const match of source.matchAll(KEYWORD)) {
    const next = skip(match.index + match[0].length);
    if (match[0] === "import") {
      if (source[next] === "(") return { kind: "call", index: match.index };
      if (source[next] === "." && wordAt(source, skip(next + 1), "meta")) {
        continue;
      }
      return { kind: "other", index: match.index };
    }
    if (source[next] === "*") return { kind: "other", index: match.index };
    if (source[next] !== "{") continue;
    if (close < next) close = source.indexOf("}", next);
    if (close === -1) break;
    if (wordAt(source, skip(close + 1), "from")) {
      return { kind: "other", index: match.index };
    }
  }
  return null;
}

function doubtfulImport(source: string): FailureDetail | null {
  const skip = spaceSkipper(source);
  if (!braceThenSlash(source, skip)) return null;
  const found = importSpelling(source, skip);
  if (found === null) return null;
  const line = lineOf(source, found.index);
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
