// This module is browser compatible.

/**
 * The one static import scanner, on es-module-lexer. Pack discovery, the
 * QuickJS loader and the worker and process tiers all call
 * {@linkcode scanModule}; each rule below is written once, and a mode says
 * which source is scanned:
 *
 * - Both modes: `import.meta` is allowed; `import()` with a literal or a
 *   computed argument (and `import.source()` / `import.defer()`) is refused,
 *   and so is any import with attributes (`with { ... }`), and a NUL
 *   character (U+0000) anywhere: QuickJS reads a module's text up to its
 *   first NUL, so a module holding one would run with its end cut off.
 * - `"pack"` (a pack module): source or defer phase imports, TypeScript
 *   type-only imports and bare `require(` calls are refused as well, since a
 *   pack module is a vetted plain ES module; a member call such as
 *   `module.require(` is not CommonJS `require` and passes.
 * - `"guest"` (guest source): phase and type-only imports are ordinary
 *   static imports that the caller's import policy decides by specifier;
 *   `require(` is not scanned (guest code has no `require`, and the
 *   text check would refuse guest strings that merely mention it).
 *
 * @module
 */

// The JavaScript build, not the WebAssembly one: it lexes as fast once
// warm, and a fresh process loads and compiles it in about half the time
// (5.5 against 9.5 ms before the first result).
import { init, parse } from "es-module-lexer/js";
import type { ErrorCode } from "../protocol/error_codes.ts";
import { nulDetail, nulLine } from "./source_text.ts";

/** Which rules {@linkcode scanModule} applies. */
export type ScanMode = "pack" | "guest";

/** Options of {@linkcode scanModule}. */
export interface ScanOptions {
  /** `"pack"` for a pack module, `"guest"` for guest source. */
  mode: ScanMode;
}

/** The first construct the scan refused, with its 1-based line. */
export type ScanRefusal =
  | {
    /** `import()`, `import.source()` or `import.defer()`. */
    kind: "dynamic";
    /** The literal specifier, or `undefined` for a computed argument. */
    specifier: string | undefined;
    line: number;
  }
  | { kind: "attributes"; specifier: string; line: number }
  | { kind: "phase"; phase: string; specifier: string; line: number }
  | { kind: "type-only"; specifier: string; line: number }
  | { kind: "require"; line: number }
  | { kind: "nul"; line: number };

/** What scanning one module found. */
export type ModuleScan =
  | {
    /** The lexer read the source, or a NUL character refused it first. */
    readable: true;
    /**
     * Static import and export-from specifiers in source order, each once,
     * that come before {@linkcode refusal}: a caller that decides them in
     * order and then reports the refusal keeps source order.
     */
    specifiers: string[];
    /** The first refused construct, or `null`. */
    refusal: ScanRefusal | null;
  }
  | {
    /** The lexer could not read the source. */
    readable: false;
    /** Where the lexer stopped, when it says. */
    index: number | undefined;
    /** The lexer's message. */
    message: string;
  };

let ready: Promise<void> | undefined;

/**
 * Compiles the lexer once; later calls share the same promise. The
 * JavaScript build compiles on its first parse, so this parses an empty
 * module: a caller that starts it next to other work (the loader, while its
 * WebAssembly compiles) pays that before the first scan, not during it.
 */
export function initScanner(): Promise<void> {
  ready ??= init().then(() => void parse(""));
  return ready;
}

// A bare `require(...)` call: a CommonJS dependency the bundler did not
// inline. The sandbox has no `require` binding, so such a call only throws
// when it runs; it is refused anyway as a vetting aid, since a pack that
// needs it is broken on that path. A member call (`module.require(...)`,
// `x?.require(...)`, `this.#require(...)`) calls a property, not
// CommonJS `require`, so it is not matched, nor is a name that merely ends
// in `require`. The check is textual: it also matches `require(` in
// comments and strings, which a lexer-only scan cannot tell apart from a
// call; a false positive costs a rename, never a hole.
const REQUIRE_CALL =
  /(?<![\p{ID_Continue}$#\u200c\u200d]|[^.]\.\s*)require\s*\(/u;

function lineOf(source: string, index: number): number {
  let line = 1;
  for (let i = source.indexOf("\n"); i !== -1 && i < index;) {
    line++;
    i = source.indexOf("\n", i + 1);
  }
  return line;
}

/**
 * Lists a module's static imports and finds the first construct the mode
 * refuses (see the module doc for the rules).
 *
 * {@linkcode initScanner} must have resolved first.
 *
 * @param source The module source.
 * @param options The mode.
 * @returns The specifiers and the refusal, or that the source is unreadable.
 */
export function scanModule(source: string, options: ScanOptions): ModuleScan {
  const pack = options.mode === "pack";
  const nul = nulLine(source);
  if (nul !== null) {
    // Before the lexer: nothing past the NUL would run, so nothing in the
    // source may be judged by what follows it.
    return {
      readable: true,
      specifiers: [],
      refusal: { kind: "nul", line: nul },
    };
  }
  let imports: ReturnType<typeof parse>[0];
  try {
    [imports] = parse(source);
  } catch (error) {
    const index = (error as { idx?: unknown }).idx;
    return {
      readable: false,
      index: typeof index === "number" ? index : undefined,
      message: error instanceof Error ? error.message : String(error),
    };
  }
  const specifiers: string[] = [];
  const seen = new Set<string>();
  const refused = (refusal: ScanRefusal): ModuleScan => ({
    readable: true,
    specifiers,
    refusal,
  });
  for (const entry of imports) {
    if (entry.type === "import-meta") continue;
    const line = lineOf.bind(null, source, entry.importStart);
    if (entry.type === "dynamic") {
      return refused({
        kind: "dynamic",
        specifier: entry.glob ? undefined : entry.specifier,
        line: line(),
      });
    }
    const specifier = entry.specifier;
    if (entry.attributesStart !== -1 || entry.attributes !== null) {
      return refused({ kind: "attributes", specifier, line: line() });
    }
    if (pack && entry.phase !== null) {
      return refused({
        kind: "phase",
        phase: entry.phase,
        specifier,
        line: line(),
      });
    }
    if (pack && entry.typeOnly) {
      return refused({ kind: "type-only", specifier, line: line() });
    }
    if (!seen.has(specifier)) {
      seen.add(specifier);
      specifiers.push(specifier);
    }
  }
  const requireCall = pack ? REQUIRE_CALL.exec(source) : null;
  if (requireCall !== null) {
    return refused({
      kind: "require",
      line: lineOf(source, requireCall.index),
    });
  }
  return { readable: true, specifiers, refusal: null };
}

/** Why pack discovery rejects a module, without the module's name. */
export interface PackScanFailure {
  /** The stable error code. */
  code: ErrorCode;
  /** What is wrong: "uses import() on line 3". */
  detail: string;
}

/**
 * The code and detail pack discovery reports for a `"pack"` mode scan.
 *
 * @param scan The scan of a pack module.
 * @param source The module source, to place a lexer failure.
 * @returns The failure, or `null` when the module passed.
 */
export function packScanFailure(
  scan: ModuleScan,
  source: string,
): PackScanFailure | null {
  if (!scan.readable) {
    const where = scan.index === undefined
      ? ""
      : ` near line ${lineOf(source, scan.index)}`;
    return {
      code: "PACK_MODULE_SYNTAX",
      detail: `cannot be read as an ES module${where}`,
    };
  }
  const refusal = scan.refusal;
  if (refusal === null) return null;
  const line = refusal.line;
  switch (refusal.kind) {
    case "dynamic":
      return {
        code: "PACK_DYNAMIC_IMPORT",
        detail: `uses import() on line ${line}`,
      };
    case "attributes":
      return {
        code: "IMPORT_ATTRIBUTES",
        detail: `imports with attributes (with { ... }) on line ${line}`,
      };
    case "phase":
      return {
        code: "PACK_MODULE_SYNTAX",
        detail: `uses a ${refusal.phase} phase import on line ${line}`,
      };
    case "type-only":
      return {
        code: "PACK_MODULE_SYNTAX",
        detail: `uses a TypeScript type-only import on line ${line}`,
      };
    case "require":
      return {
        code: "PACK_DYNAMIC_IMPORT",
        detail: `calls require on line ${line}`,
      };
    case "nul":
      return { code: "PACK_MODULE_SYNTAX", detail: nulDetail(line) };
  }
}
