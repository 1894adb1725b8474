// This module is browser compatible.

/**
 * The one rule on a module's text that comes before any lexer or engine:
 * QuickJS reads a module's text only up to its first NUL character
 * (U+0000), so a module holding one would run with its end cut off. Every
 * tier refuses such a source, so a module means the same everywhere.
 *
 * @module
 */

function lineAt(source: string, index: number): number {
  let line = 1;
  for (let i = source.indexOf("\n"); i !== -1 && i < index;) {
    line++;
    i = source.indexOf("\n", i + 1);
  }
  return line;
}

/**
 * The 1-based line of a source's first NUL character, if it holds one.
 *
 * @param source A module's text.
 * @returns The line, or `null` when the source holds no NUL.
 */
export function nulLine(source: string): number | null {
  const index = source.indexOf("\0");
  return index === -1 ? null : lineAt(source, index);
}

/**
 * Why a source holding a NUL character is refused, and what to write
 * instead.
 *
 * @param line The line {@linkcode nulLine} gave.
 * @returns The detail, starting with a verb: "holds a NUL character ...".
 */
export function nulDetail(line: number): string {
  return `holds a NUL character (U+0000) on line ${line}, past which QuickJS cannot read a module; write it as \\x00 in strings and leave it out of comments`;
}
