// This module is browser compatible.

/**
 * The one static import scanner, on es-module-lexer. Pack discovery, the
 * QuickJS loader and the worker and process tiers all call
 * {@linkcode scanModule}; each rule below is written once, and a mode says
 * which source is scanned:
 *
 * - Both modes: `import.meta` is allowed; `import()` with a literal or a
 *   computed argument (and `import.source()` / `import.defer()`) is refused,
 *   and so is any import with attributes (`with { ... }`, or the older
 *   `assert { ... }` that Node 20 still reads); before
 *   anything else, text the engines read differently is refused: a NUL
 *   character (QuickJS reads a module only up to its first one) or a lone
 *   surrogate (see `source_text.ts`). The lexer reads the source as the
 *   engines do: every Unicode space a space, and U+2028 and U+2029 line
 *   ends (see `lexerText`); one it cannot read so, a line separator in a
 *   string, is unreadable.
 * - `"pack"` (a pack module): source or defer phase imports, TypeScript
 *   type-only imports and bare `require(` calls in code are refused as
 *   well, since a pack module is a vetted plain ES module; a member call
 *   such as `module.require(`, or `require(` in a comment or a string, is
 *   not a CommonJS `require` call and passes.
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
import { operatorText } from "../protocol/operator_text.ts";
import { lineOf, sourceTextFlaw } from "./source_text.ts";

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
  | {
    /** A NUL character or a lone surrogate (see `source_text.ts`). */
    kind: "text";
    line: number;
    detail: string;
  }
  | {
    /** The module does not parse (see `module_syntax.ts`). */
    kind: "syntax";
    line: number;
    /** The 1-based column. */
    column: number;
    /** What the parser found, without the position. */
    message: string;
  };

/** What scanning one module found. */
export type ModuleScan =
  | {
    /** The lexer read the source, or its text was refused first. */
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
// in `require`. Comments and strings are told apart by the lexer (see
// `probedCalls`); dead code is not, so it is refused all the same.
const REQUIRE_CALL =
  /(?<![\p{ID_Continue}$#\u200c\u200d]|[^.]\.\s*)require\s*\(/gu;

/** `import ` is as long as `require`, so positions stay where they were. */
const REQUIRE_PROBE = "import ";

// es-module-lexer reads `import` after a `.` as a property name, and
// counts the spread `...` as one, so `[...import("x")]` and
// `{ ...import("x") }` slip past it although they do import. Comments may
// stand between the dots and `import`, so any source with both is lexed
// again (a plain test: a pattern that skipped comments would take time
// that grows with the square of a hostile source's length).
function mayHideSpreadCall(source: string): boolean {
  return source.includes("...") && source.includes("import");
}

type Entry = ReturnType<typeof parse>[0][number];

// The older spelling of import attributes, `import x from "y" assert
// { ... }`, which Node 20 still reads (V8 there warns only) and the lexer
// does not know: it ends the import at the specifier. Node takes `assert`
// as the clause's keyword where no line break stands between it and the
// specifier (a comment without one may), and takes any space or comment
// between it and `{`. Matched at the end of a static import, in the
// lexer's text, where each Unicode space is a space and each line
// separator a `\n`. Each comment is matched one way only (to its first
// `*/`, or to its line's end), so a failed match never tries another
// reading of the same text: the cost stays linear in what it reads.
const ASSERT_CLAUSE = new RegExp(
  String.raw`(?:[ \t\v\f\u00a0]|/\*(?:[^*\n\r]|\*(?!/))*\*/)*assert` +
    String.raw`(?:\s|/\*(?:[^*]|\*(?!/))*\*/|//[^\n\r]*(?![^\n\r]))*\{`,
  "y",
);

/** Whether a static import ends in an `assert { ... }` clause. */
function hasAssertClause(text: string, entry: Entry): boolean {
  ASSERT_CLAUSE.lastIndex = entry.importEnd;
  return ASSERT_CLAUSE.test(text);
}

// es-module-lexer skips only the ASCII spaces and U+00A0: it reads the
// other spaces the engines skip as part of a word, so in
// `a;\u3000import("x")` or after a byte order mark it sees no import. And
// it ends a line comment only at `\n` or `\r`, where the engines also end
// it at U+2028 and U+2029, so `// note\u2028import("x")` hides one too.
const UNICODE_SPACES = /[\ufeff\u1680\u2000-\u200a\u202f\u205f\u3000]/g;
const LINE_SEPARATORS = /[\u2028\u2029]/g;

/**
 * The text the lexer reads, of the same length as the source: each Unicode
 * space a space and each line separator a `\n`, so it finds the imports the
 * engines find. A line separator in a string (allowed since ES2019) is
 * then a line break the lexer cannot read past: such a source is
 * unreadable, and a tier decides it by other means.
 */
function lexerText(source: string): string {
  return source.replace(UNICODE_SPACES, " ").replace(LINE_SEPARATORS, "\n");
}

/**
 * An entry's specifier as the source spells it: `lexerText` may have made
 * a space of a Unicode space in it, so that one is read again from the
 * source, with its quotes.
 */
function specifierOf(
  source: string,
  text: string,
  entry: Entry,
  specifier: string,
): string {
  const { start, end } = entry;
  if (text.slice(start, end) === source.slice(start, end)) return specifier;
  const [again] = parse(`import ${source.slice(start - 1, end + 1)};`)[0];
  return again?.type === "static" ? again.specifier : specifier;
}

/**
 * The text the lexer reads a second time, of the same length: each `...`
 * spelled `,,,` (an expression follows either, so the lexer's reading of
 * what comes next is the same) and each of `requires` spelled `import `.
 */
function probeOf(source: string, requires: readonly number[]): string {
  let probe = "";
  let from = 0;
  for (const index of requires) {
    probe += source.slice(from, index) + REQUIRE_PROBE;
    from = index + REQUIRE_PROBE.length;
  }
  probe += source.slice(from);
  return probe.replaceAll("...", ",,,");
}

/**
 * Dynamic imports, and bare `require(` calls written as `import (`, in the
 * code of the probe that the first lexing did not report: where a textual
 * match stood in a comment, a string or a regular expression (a JSDoc
 * example, say), the lexer reports nothing. `null` when the probe cannot be
 * read, so that a doubt refuses the module.
 */
function probedCalls(
  source: string,
  requires: readonly number[],
  known: readonly Entry[],
): Entry[] | null {
  let probed: readonly Entry[];
  try {
    [probed] = parse(probeOf(source, requires));
  } catch {
    return null;
  }
  const seen = new Set(known.map((entry) => entry.importStart));
  return probed.filter((entry) =>
    entry.type === "dynamic" && !seen.has(entry.importStart)
  );
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
  const flaw = sourceTextFlaw(source);
  if (flaw !== null) {
    // Before the lexer: what follows a NUL would never run, so nothing
    // may be judged by it.
    return {
      readable: true,
      specifiers: [],
      refusal: { kind: "text", ...flaw },
    };
  }
  const text = lexerText(source);
  let imports: ReturnType<typeof parse>[0];
  try {
    [imports] = parse(text);
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
  const requires = pack
    ? [...source.matchAll(REQUIRE_CALL)].map((match) => match.index)
    : [];
  let entries: readonly Entry[] = imports;
  if (requires.length > 0 || mayHideSpreadCall(source)) {
    const probed = probedCalls(text, requires, imports);
    if (probed === null) {
      const at = requires[0] ?? source.indexOf("...");
      const line = lineOf(source, at);
      return refused(
        requires.length > 0
          ? { kind: "require", line }
          : { kind: "dynamic", specifier: undefined, line },
      );
    }
    entries = [...imports, ...probed].sort((a, b) =>
      a.importStart - b.importStart
    );
  }
  const requireStarts = new Set(requires);
  for (const entry of entries) {
    if (entry.type === "import-meta") continue;
    const line = lineOf.bind(null, source, entry.importStart);
    if (requireStarts.has(entry.importStart)) {
      return refused({ kind: "require", line: line() });
    }
    if (entry.type === "dynamic") {
      return refused({
        kind: "dynamic",
        specifier: entry.glob || entry.specifier === undefined
          ? undefined
          : specifierOf(source, text, entry, entry.specifier),
        line: line(),
      });
    }
    const specifier = specifierOf(source, text, entry, entry.specifier);
    if (
      entry.attributesStart !== -1 || entry.attributes !== null ||
      hasAssertClause(text, entry)
    ) {
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
    case "text":
      return { code: "PACK_MODULE_SYNTAX", detail: refusal.detail };
    case "syntax":
      return {
        code: "PACK_MODULE_SYNTAX",
        detail: `is not a valid ES module: ${
          operatorText(refusal.message)
        } at line ${line}, column ${refusal.column}`,
      };
  }
}
