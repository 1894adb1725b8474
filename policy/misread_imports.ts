// This module is browser compatible.

/**
 * Import text the lexer may have misread as something else. es-module-lexer
 * guesses whether a `/` starts a regular expression, and guesses wrong in
 * three places:
 *
 * - after a `}` that ends a function, class or arrow function body: in
 *   `function () {} / 1; import "x"; 1 / 2` or
 *   `function () {} / import("x") / 1` it sees no import;
 * - after a name it takes for a keyword such as `return`, `typeof` or
 *   `if (...)`, since it looks at the one character before the word only:
 *   a property with a space or a comment after its dot (`o. return / 1`,
 *   `o.\ntypeof / 1`) or a name whose escape ends just before the word
 *   (`\u{61}return / 1`, the name `areturn`) hides an import the same way;
 * - after `extends`, `++` or `--`, it takes a regular expression for a
 *   division, and a quote in it for the start of a string:
 *   `class A extends /'/.constructor {} import "x"; // '` hides the import.
 *
 * QuickJS and node:vm check every import when it is linked or called; a
 * tier without such a hook, and pack discovery (whose graph must hold every
 * import a module makes), calls {@linkcode misreadImport} after the scan,
 * and where it finds import text, has a parser read the source
 * (`parsed_imports.ts`), whose answer replaces the scan's; where the parser
 * cannot, a clean scan is refused for what this finds, a comment or a
 * string included.
 *
 * @module
 */

import { lineOf } from "./source_text.ts";

// Where a `/` may be misread, text that spells an import is suspect:
// `import` not followed by `.meta`, `export *` and `export { ... } from`. Everything here takes time linear in the
// source's length: it runs on guest text in the caller's thread.
const KEYWORD =
  /(?<![\p{ID_Continue}$#\u200c\u200d]|[^.]\.\s*)(?:import|export)(?![\p{ID_Continue}$\u200c\u200d])/gu;
const SPACE = /\s/;
const LINE_END = /[\n\r\u2028\u2029]/g;
const WORD_PART = /[\p{ID_Continue}$\u200c\u200d]/u;

// The words after which the lexer reads a `/` as the start of a regular
// expression: keywords an expression may follow, and `if`, `while` and
// `for`, whose `( ... )` a statement follows. It takes one for a keyword
// when the character before it is a space or a punctuator other than `.`:
// so it does in `o. return /` and `o./* c */if (1) /`, where the word is a
// property, and in `\u{61}return /`, where the `}` ends an escape and the
// word is the end of a name. It takes `import` so too, whatever follows,
// and reads a static import there: in
// `o. import / 1; export * as "./a.js" from "./b.js"` it takes the name
// "./a.js" for the specifier and misses "./b.js".
const LEXER_KEYWORDS =
  "await|case|debugger|delete|do|else|in|instanceof|new|return|throw|typeof|void|yield|(if|while|for)|(import)";
const WORD_END = "(?![\\p{ID_Continue}$\\u200c\\u200d])";
const KEYWORD_AT = new RegExp(`(?:${LEXER_KEYWORDS})${WORD_END}`, "uy");
// The other way round, the lexer reads a `/` as a division after
// `extends`, where a class heritage may start with a regular expression
// (`class A extends /'/.constructor {}`), and after `++` or `--`, which it
// takes for postfix ones where a prefix one may come before a regular
// expression (`++ /'/.lastIndex`): a quote in it then starts a string.
const DIVISION_GUESSES = ["++", "--", "extends"];
const KEYWORD_AFTER_ESCAPE = new RegExp(
  `(?<=\\\\u\\{[0-9a-fA-F]+\\})(?:${LEXER_KEYWORDS})${WORD_END}`,
  "gu",
);

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
 * Whether `match`, a word the lexer takes for a keyword, is followed by
 * what it then misreads: a `/`, for `if`, `while` and `for` a `(` (whose
 * `)` a `/` may follow), and for `import` anything.
 */
function misreadAfter(
  source: string,
  skip: (at: number) => number,
  match: RegExpExecArray,
): boolean {
  if (match[2] !== undefined) return true;
  const next = source[skip(match.index + match[0].length)];
  return match[1] === undefined ? next === "/" : next === "(";
}

/**
 * Whether a space, a line end or a comment may start at `at`: most code
 * has a name or a punctuator there, which `skip` need not be asked about.
 */
function mayBeSpace(source: string, at: number): boolean {
  const code = source.charCodeAt(at);
  return code <= 32 || code >= 127 || code === 47;
}

/**
 * Whether a property the lexer may take for a keyword follows a `.` and a
 * space or a comment (`o. return /`).
 */
function spacedKeywordProperty(
  source: string,
  skip: (at: number) => number,
): boolean {
  for (let i = source.indexOf("."); i !== -1; i = source.indexOf(".", i + 1)) {
    if (!mayBeSpace(source, i + 1)) continue;
    const at = skip(i + 1);
    // The last dot of a spread: in `... new Set(a)`, `new` is the keyword.
    if (at === i + 1 || source[i - 1] === ".") continue;
    KEYWORD_AT.lastIndex = at;
    const match = KEYWORD_AT.exec(source);
    if (match !== null && misreadAfter(source, skip, match)) return true;
  }
  return false;
}

/** Whether a name ends in a keyword just after an escape (`\u{61}return /`). */
function escapedKeywordName(
  source: string,
  skip: (at: number) => number,
): boolean {
  if (!source.includes("\\u{")) return false;
  for (const match of source.matchAll(KEYWORD_AFTER_ESCAPE)) {
    if (misreadAfter(source, skip, match)) return true;
  }
  return false;
}

/**
 * Whether `extends`, `++` or `--` is followed by a `/` (see
 * DIVISION_GUESSES); a name that ends in `extends` counts too.
 */
function slashAfterDivisionGuess(
  source: string,
  skip: (at: number) => number,
): boolean {
  for (const word of DIVISION_GUESSES) {
    for (let i = source.indexOf(word); i !== -1;) {
      const end = i + word.length;
      const next = mayBeSpace(source, end) ? source[skip(end)] : source[end];
      if (next === "/") return true;
      i = source.indexOf(word, end);
    }
  }
  return false;
}

/** Whether the lexer may read a `/` of the source the wrong way. */
function mayMisreadSlash(
  source: string,
  skip: (at: number) => number,
): boolean {
  return braceThenSlash(source, skip) ||
    spacedKeywordProperty(source, skip) ||
    escapedKeywordName(source, skip) ||
    slashAfterDivisionGuess(source, skip);
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

/** An import the lexer may have misread, from {@linkcode misreadImport}. */
export interface MisreadImport {
  /** `"call"` for `import(`, `"other"` for any other import or re-export. */
  kind: "call" | "other";
  /** Its 1-based line. */
  line: number;
  /** Where it starts in the source. */
  index: number;
}

/**
 * Import text in a source where the lexer may have read code as a regular
 * expression: where a `}` is followed by a `/`, or a property or a name
 * is spelled like a keyword it may take it for (see the module doc).
 *
 * @param source A module's text that the scan found clean.
 * @returns The first such import, or `null`.
 */
export function misreadImport(source: string): MisreadImport | null {
  const skip = spaceSkipper(source);
  if (!mayMisreadSlash(source, skip)) return null;
  const found = importSpelling(source, skip);
  return found === null
    ? null
    : { ...found, line: lineOf(source, found.index) };
}
