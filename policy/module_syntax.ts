// This module is browser compatible.

/**
 * Whether a module parses as an ES module, as the engines decide it: the
 * whole grammar in module code (strict mode, so no `with` statement and no
 * legacy octal; no duplicate export; `await` at top level and `import.meta`
 * allowed; regular expressions checked with their flags), read by acorn.
 * Two rules the grammar alone does not give are added:
 *
 * - `<!--` in code is refused: V8 refuses it in a module ("HTML comments are
 *   not allowed in modules") where the grammar reads `a <!--b` as a
 *   comparison, so such a module runs on the QuickJS tier only;
 * - brackets (`(`, `[`, `{` and `${`) nest at most
 *   {@linkcode MAX_MODULE_NESTING} deep, counted as the tokens are read, so
 *   the parser's recursion stays bounded and the answer does not depend on
 *   how much stack the caller has left. QuickJS, with the loader's default
 *   stack, runs 500 nested arrays and overflows at 700. Nesting of other
 *   forms (a long chain of `!`) that exhausts the parser's stack first is
 *   refused as well, where it stopped.
 *
 * The parser is given two data structures of its own, with the same
 * answers: each scope's declared names in a set, and each regular
 * expression's capture group names by place, so its time stays linear in
 * the module where its own lists made it quadratic.
 *
 * @module
 */

import type { Node, Options, Parser, Token } from "acorn";
import { lineOf } from "./source_text.ts";

/**
 * How deep brackets may nest in a pack module. QuickJS, with the loader's
 * default stack, reads 500 nested arrays and overflows at 700.
 */
export const MAX_MODULE_NESTING = 500;

/** Why a module does not parse, at a 1-based line and column. */
export interface ModuleSyntaxError {
  /** What is wrong, without the position. */
  message: string;
  line: number;
  /** The 1-based column, in UTF-16 code units. */
  column: number;
}

/** The parsed module, or why it does not parse. */
export type ParsedModule =
  | { ok: true; program: Node }
  | { ok: false; error: ModuleSyntaxError };

/** The token types whose value opens or closes a nesting level. */
const OPENERS = new Set(["(", "[", "{", "${"]);
const CLOSERS = new Set([")", "]", "}"]);

/** Thrown from the token hook: the module nests too deep. */
class TooDeep extends Error {
  constructor(readonly at: number) {
    super(`brackets nest deeper than ${MAX_MODULE_NESTING} levels`);
  }
}

/** Thrown from the token hook: `<!--` in code. */
class HtmlComment extends Error {
  constructor(readonly at: number) {
    super("HTML-like comments (<!--) are not allowed in modules");
  }
}

/** Acorn's position suffix, " (3:14)", which the error gives apart. */
const POSITION_SUFFIX = / \(\d+:\d+\)$/;

/** The 1-based line and column of a position. */
function positionOf(source: string, index: number): [number, number] {
  const lineStart = index === 0 ? 0 : source.lastIndexOf("\n", index - 1) + 1;
  return [lineOf(source, index), index - lineStart + 1];
}

/**
 * A token hook that counts bracket nesting and finds `<!--` (a `<`, a `!`
 * and a `--` with nothing between them), throwing at the first breach.
 */
function tokenGuard(
  source: string,
): { onToken: (token: Token) => void; last: () => number } {
  let depth = 0;
  let last = 0;
  // Where a `<` and then a `!` right after it ended, or -1.
  let lessEnd = -1;
  let bangEnd = -1;
  const spells = (token: Token, text: string): boolean =>
    token.end - token.start === text.length &&
    source.startsWith(text, token.start);
  const onToken = (token: Token): void => {
    last = token.start;
    const label = token.type.label;
    if (OPENERS.has(label)) {
      depth++;
      if (depth > MAX_MODULE_NESTING) throw new TooDeep(token.start);
    } else if (CLOSERS.has(label)) depth--;
    if (bangEnd === token.start && spells(token, "--")) {
      throw new HtmlComment(token.start - 2);
    }
    bangEnd = lessEnd === token.start && spells(token, "!") ? token.end : -1;
    lessEnd = spells(token, "<") ? token.end : -1;
  };
  return { onToken, last: () => last };
}

function syntaxError(
  source: string,
  at: number,
  message: string,
): ParsedModule {
  const [line, column] = positionOf(source, Math.min(at, source.length));
  return { ok: false, error: { message, line, column } };
}

/**
 * The names a scope of the parser declares: the parser asks only whether
 * a name is among them (an index past -1), and asked of a plain list that
 * costs a look at every name, so a module declaring a hundred thousand
 * names in one scope (`let v0, v1, …`) took the parser minutes. The set
 * answers at once; the list is kept for what reads it by index.
 */
class DeclaredNames extends Array<string> {
  readonly #names = new Set<string>();

  override push(...names: string[]): number {
    for (const name of names) this.#names.add(name);
    return super.push(...names);
  }

  /** `0` for a declared name, whichever place it has, or `-1`. */
  override indexOf(name: string): number {
    return this.#names.has(name) ? 0 : -1;
  }
}

/** What of the parser's scopes {@linkcode withLinearChecks} replaces. */
interface ParserScope {
  var: string[];
  lexical: string[];
  functions: string[];
}

/**
 * One alternative of a disjunction in a regular expression, as the parser
 * marks it: alternatives of one disjunction share `base`, and `parent` is
 * the alternative the disjunction sits in (`null` at the top).
 */
interface Alternative {
  parent: Alternative | null;
  base: Alternative;
}

/** What the parser's regular expression check holds while it reads one. */
interface RegExpState {
  eat(char: number): boolean;
  raise(message: string): never;
  lastStringValue: string;
  branchID: Alternative;
  groupNames: Record<string, unknown>;
}

/** The parser's scope and regular expression methods, which its types leave out. */
interface ScopedParser {
  enterScope(flags: number): void;
  currentScope(): ParserScope;
  regexp_eatGroupName(state: RegExpState): boolean;
}

/**
 * Where the capture groups of one name sit in one pattern: the
 * alternatives holding one directly, and for each alternative the
 * disjunctions in it that hold one.
 */
interface GroupPlaces {
  direct: Set<Alternative>;
  disjunctionsIn: Map<Alternative, Set<Alternative>>;
}

/**
 * Whether a group at `at` could match together with an earlier group of
 * its name: unless some disjunction still open holds the earlier one in
 * another alternative, they can. So it clashes when an alternative `at`
 * sits in holds one directly, or holds one in a disjunction other than
 * the open one `at` goes on into. A walk up `at`'s alternatives, where
 * comparing with each earlier group (as the parser does) took minutes
 * for 1 MiB of `(?<a>x)|`.
 */
function clashes(places: GroupPlaces, at: Alternative): boolean {
  let inner: Alternative | null = null;
  for (let alt: Alternative | null = at; alt !== null; alt = alt.parent) {
    if (places.direct.has(alt)) return true;
    const bases = places.disjunctionsIn.get(alt);
    if (bases !== undefined) {
      const open = inner !== null && bases.has(inner.base) ? 1 : 0;
      if (bases.size > open) return true;
    }
    inner = alt;
  }
  return false;
}

function addPlace(places: GroupPlaces, at: Alternative): void {
  places.direct.add(at);
  for (let alt: Alternative | null = at; alt.parent !== null;) {
    const parent: Alternative = alt.parent;
    let bases = places.disjunctionsIn.get(parent);
    if (bases === undefined) {
      bases = new Set();
      places.disjunctionsIn.set(parent, bases);
    }
    bases.add(alt.base);
    alt = parent;
  }
}

/**
 * The parser, with each scope's declared names held in a
 * {@linkcode DeclaredNames} and each regular expression's repeated capture
 * group names found by place ({@linkcode clashes}): the same answers, in
 * time linear in the module.
 */
function withLinearChecks(base: typeof Parser): typeof Parser {
  const Base = base as unknown as new (
    ...args: unknown[]
  ) => ScopedParser;
  // Per pattern: the parser gives each reading of a pattern new groupNames.
  const placesOf = new WeakMap<object, Map<string, GroupPlaces>>();
  class LinearChecks extends Base {
    /** The parser's own check of a group's name, with its clash found by place. */
    regexp_groupSpecifier(state: RegExpState): void {
      if (!state.eat(0x3f /* ? */)) return;
      if (!this.regexp_eatGroupName(state)) state.raise("Invalid group");
      let byName = placesOf.get(state.groupNames);
      if (byName === undefined) {
        byName = new Map();
        placesOf.set(state.groupNames, byName);
      }
      const name = state.lastStringValue;
      let places = byName.get(name);
      if (places === undefined) {
        places = { direct: new Set(), disjunctionsIn: new Map() };
        byName.set(name, places);
      } else if (clashes(places, state.branchID)) {
        state.raise("Duplicate capture group name");
      }
      addPlace(places, state.branchID);
      // Read elsewhere by the parser: whether a `\k<name>` names a group.
      state.groupNames[name] = true;
    }

    override enterScope(flags: number): void {
      super.enterScope(flags);
      const scope = this.currentScope();
      scope.var = new DeclaredNames();
      scope.lexical = new DeclaredNames();
      scope.functions = new DeclaredNames();
    }
  }
  return LinearChecks as unknown as typeof Parser;
}

let parser: Promise<typeof Parser> | undefined;

/** The parser, loaded when first needed: a loader that never parses never loads it. */
function loadParser(): Promise<typeof Parser> {
  parser ??= import("acorn").then(({ Parser }) =>
    Parser.extend(withLinearChecks)
  );
  return parser;
}

/**
 * Parses `source` as an ES module (see the module doc for the rules).
 *
 * @param source The module's text.
 * @returns The program, or the first syntax error with its position.
 */
export async function parseModule(source: string): Promise<ParsedModule> {
  const parser = await loadParser();
  const guard = tokenGuard(source);
  const options: Options = {
    ecmaVersion: "latest",
    sourceType: "module",
    onToken: guard.onToken,
  };
  try {
    return { ok: true, program: parser.parse(source, options) };
  } catch (error) {
    if (error instanceof TooDeep || error instanceof HtmlComment) {
      return syntaxError(source, error.at, error.message);
    }
    const { pos } = error as { pos?: unknown };
    if (error instanceof SyntaxError && typeof pos === "number") {
      const message = error.message.replace(POSITION_SUFFIX, "");
      return syntaxError(
        source,
        pos,
        message === "Not enough stack space to parse input"
          ? "the module nests too deep to parse"
          : message,
      );
    }
    if (error instanceof RangeError) {
      // The parser's stack ran out where acorn did not catch it itself.
      return syntaxError(
        source,
        guard.last(),
        "the module nests too deep to parse",
      );
    }
    throw error;
  }
}
