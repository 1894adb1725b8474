// This module is browser compatible.

/**
 * Pack discovery's scan of a pack module: the one scanner in pack mode and,
 * where the lexer may have misread a `/` (after a `}`, a name spelled like a
 * keyword, `extends`, `++` or `--`) in a source with text that spells an
 * import (see `misread_imports.ts`), a parser's reading of the imports instead
 * (`parsed_imports.ts`), as the worker and process tiers read guest source;
 * the parser also reads a module whose strings hold U+2028 or U+2029, which
 * the lexer cannot read past. The graph records what a module imports, and its graph digest covers only
 * that: an import the lexer missed would run, and change, unpinned.
 *
 * @module
 */

import { misreadImport } from "./misread_imports.ts";
import { parsedImports } from "./parsed_imports.ts";
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
 * the parser reads its imports, and the lexer, given the module with those
 * characters made spaces (a line comment they end keeps them), applies
 * pack mode's other rules, whose refusal stands. Source the parser cannot
 * read either stays unreadable.
 */
async function scanSeparatorsInStrings(
  source: string,
  unreadable: ModuleScan,
): Promise<ModuleScan> {
  const parsed = await parsedImports(source);
  if (parsed.kind === "unparsable") return unreadable;
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

/**
 * Scans a pack module as pack discovery must: {@linkcode scanModule} in
 * `"pack"` mode, whose specifiers a parser replaces where the lexer may
 * have misread the source, or cannot read it for U+2028 or U+2029 in a
 * string. A refusal of the lexer stands; source the parser cannot read
 * either is unreadable at the import in doubt, or where the lexer stopped.
 *
 * @param source The pack module's source.
 * @returns The scan, as `packScanFailure()` takes it.
 */
export async function scanPackSource(source: string): Promise<ModuleScan> {
  await initScanner();
  const scan = scanModule(source, { mode: "pack" });
  if (!scan.readable && LINE_SEPARATOR.test(source)) {
    return await scanSeparatorsInStrings(source, scan);
  }
  if (!scan.readable || scan.refusal !== null) return scan;
  const doubt = misreadImport(source);
  if (doubt === null) return scan;
  const parsed = await parsedImports(source);
  if (parsed.kind === "unparsable") {
    return {
      readable: false,
      index: doubt.index,
      message:
        "an import the lexer may misread after a `}`, a name spelled like a keyword, `extends`, `++` or `--` followed by a `/`, in source the parser cannot read",
    };
  }
  return {
    readable: true,
    specifiers: parsed.specifiers,
    refusal: parsed.refusal,
  };
}
