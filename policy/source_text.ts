// This module is browser compatible.

/**
 * The rules on a module's text that come before any lexer or engine, so
 * that a module means the same on every tier:
 *
 * - no NUL character (U+0000): QuickJS reads a module's text only up to
 *   its first NUL, so the rest would silently not exist;
 * - no lone surrogate: UTF-8 cannot carry one, so the tiers that hand
 *   module text to their engine as UTF-8 would read U+FFFD where QuickJS
 *   reads the surrogate.
 *
 * But for one NUL a bundler writes: see {@linkcode withoutBundlerCommentNuls}.
 *
 * @module
 */

/** What is wrong with a module's text, and where. */
export interface TextFlaw {
  /** The 1-based line of the first flaw. */
  line: number;
  /** What is wrong, starting with a verb: "holds a NUL character ...". */
  detail: string;
}

const LONE_SURROGATE =
  /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * The 1-based line of a position in a source.
 *
 * @param source A module's text.
 * @param index A position in it.
 * @returns Its line.
 */
export function lineOf(source: string, index: number): number {
  let line = 1;
  for (let i = source.indexOf("\n"); i !== -1 && i < index;) {
    line++;
    i = source.indexOf("\n", i + 1);
  }
  return line;
}

// `deno bundle` names a module it makes up (a Node built-in a package's
// `browser` field disables, as qs's `util.inspect`) in a comment line with
// a NUL: `// deno:\0deno-browser-disabled:./util.inspect`. That NUL means
// nothing, but QuickJS would stop reading the module at it.
const BUNDLER_COMMENT_NUL = /^(\/\/ deno:)\0/gm;

/**
 * A module's text without the NUL `deno bundle` writes in its comment
 * line for a module it makes up (`// deno:\0deno-browser-disabled:...`),
 * so that a bundled module is read alike on every tier; any other NUL
 * stays for {@linkcode sourceTextFlaw} to refuse.
 *
 * @param source A module's text.
 * @returns The text without those NULs (the same string when it has none).
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { withoutBundlerCommentNuls } from "./source_text.ts";
 *
 * assert.equal(
 *   withoutBundlerCommentNuls("// deno:\0deno-browser-disabled:./a\nvar a;"),
 *   "// deno:deno-browser-disabled:./a\nvar a;",
 * );
 * ```
 */
export function withoutBundlerCommentNuls(source: string): string {
  if (!source.includes("\0")) return source;
  return source.replace(BUNDLER_COMMENT_NUL, "$1");
}

function hex(code: number): string {
  return code.toString(16).toUpperCase().padStart(4, "0");
}

/**
 * The first flaw of a module's text, if it has one.
 *
 * @param source A module's text.
 * @returns The flaw, or `null` when every tier reads the text alike.
 */
export function sourceTextFlaw(source: string): TextFlaw | null {
  const nul = source.indexOf("\0");
  const lone = source.search(LONE_SURROGATE);
  if (nul === -1 && lone === -1) return null;
  if (lone === -1 || (nul !== -1 && nul < lone)) {
    const line = lineOf(source, nul);
    return {
      line,
      detail:
        `holds a NUL character (U+0000) on line ${line}, past which QuickJS cannot read a module; write it as \\x00 in strings and leave it out of comments`,
    };
  }
  const line = lineOf(source, lone);
  const code = hex(source.charCodeAt(lone));
  return {
    line,
    detail:
      `holds a lone surrogate (U+${code}) on line ${line}, which UTF-8 cannot carry, so engines would read it differently; write it as \\u${code} in strings`,
  };
}
