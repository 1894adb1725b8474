// This module is browser compatible.

/**
 * Pack discovery's scan of a pack module: the one scanner in pack mode and,
 * where the lexer may have misread a `/` (after a `}`, a name spelled like a
 * keyword, `extends`, `++` or `--`) in a source with text that spells an
 * import (see `misread_imports.ts`), a parser's reading of the imports instead
 * (`parsed_imports.ts`), as the worker and process tiers read guest source.
 * The graph records what a module imports, and its graph digest covers only
 * that: an import the lexer missed would run, and change, unpinned.
 *
 * @module
 */

import { misreadImport } from "./misread_imports.ts";
import { parsedImports } from "./parsed_imports.ts";
import { initScanner, type ModuleScan, scanModule } from "./scan_module.ts";

/**
 * Scans a pack module as pack discovery must: {@linkcode scanModule} in
 * `"pack"` mode, whose specifiers a parser replaces where the lexer may
 * have misread the source. A refusal of the lexer stands; source the
 * parser cannot read either is unreadable at the import in doubt.
 *
 * @param source The pack module's source.
 * @returns The scan, as `packScanFailure()` takes it.
 */
export async function scanPackSource(source: string): Promise<ModuleScan> {
  await initScanner();
  const scan = scanModule(source, { mode: "pack" });
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
