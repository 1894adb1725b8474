// This module is browser compatible.

/**
 * Pack discovery's scan of a pack module: the one scanner in pack mode, then,
 * when it passes, a parser's reading of the whole module
 * (`module_syntax.ts`), so a module that does not parse as an ES module is
 * refused at discovery rather than when a guest runs it. Where the lexer may
 * have misread a `/` (after a `}`, a name spelled like a keyword, `extends`,
 * `++` or `--`) in a source with text that spells an import (see
 * `misread_imports.ts`), the imports are read from that parse instead
 * (`parsed_imports.ts`), as the worker and process tiers read guest source;
 * the parser also reads a module whose strings hold U+2028 or U+2029, which
 * the lexer cannot read past. The graph records what a module imports, and
 * its graph digest covers only that: an import the lexer missed would run,
 * and change, unpinned.
 *
 * @module
 */

import type { Node } from "acorn";
import { misreadImport } from "./misread_imports.ts";
import { importsOfProgram } from "./parsed_imports.ts";
import { type ParsedModule, parseModule } from "./module_syntax.ts";
import { initScanner, type ModuleScan, scanModule } from "./scan_module.ts";

const LINE_SEPARATOR = /[\u2028\u2029]/;

/** The source with the characters at `indexes` made spaces. */
function spacedAt(source: string, indexes: readonly number[]): string {
  let spaced = "";
  let from = 0;
  for (const index of indexes) {
    spaced += source.slice(from, index) + " ";
    from = index + 1;
  }
  return spaced + source.slice(from);
}

/**
 * Scans a module the lexer could not read because a string literal holds
 * U+2028 or U+2029, as editors and bundlers write them and ES2019 allows:
 * the parser's tree gives its imports, and the lexer, given the module with
 * those characters made spaces (a line comment they end keeps them),
 * applies pack mode's other rules, whose refusal stands.
 */
function scanSeparatorsInStrings(source: string, program: Node): ModuleScan {
  const parsed = importsOfProgram(source, program);
  const lexed = scanModule(spacedAt(source, parsed.separatorsInStrings), {
    mode: "pack",
  });
  if (!lexed.readable || lexed.refusal !== null) return lexed;
  return {
    readable: true,
    specifiers: parsed.specifiers,
    refusal: parsed.refusal,
  };
}

/** The scan's refusal of a module that does not parse. */
function syntaxRefusal(parsed: ParsedModule & { ok: false }): ModuleScan {
  return {
    readable: true,
    specifiers: [],
    refusal: { kind: "syntax", ...parsed.error },
  };
}

/**
 * Scans a pack module as pack discovery must: {@linkcode scanModule} in
 * `"pack"` mode, whose refusal stands; then a full parse, whose syntax
 * error is the refusal, and whose imports replace the lexer's where the
 * lexer may have misread the source, or cannot read it for U+2028 or
 * U+2029 in a string. Source the lexer cannot read but the parser can
 * (other than for those separators) stays unreadable.
 *
 * @param source The pack module's source.
 * @returns The scan, as `packScanFailure()` takes it.
 */
export async function scanPackSource(source: string): Promise<ModuleScan> {
  await initScanner();
  const scan = scanModule(source, { mode: "pack" });
  if (scan.readable && scan.refusal !== null) return scan;
  const parsed = await parseModule(source);
  if (!parsed.ok) return syntaxRefusal(parsed);
  if (!scan.readable) {
    return LINE_SEPARATOR.test(source)
      ? scanSeparatorsInStrings(source, parsed.program)
      : scan;
  }
  if (misreadImport(source) === null) return scan;
  const imports = importsOfProgram(source, parsed.program);
  return {
    readable: true,
    specifiers: imports.specifiers,
    refusal: imports.refusal,
  };
}
