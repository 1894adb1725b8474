/**
 * Makes the source of an injected function smaller without changing its
 * tokens: a process-tier child parses its whole main module, a `data:` URL,
 * on every run, so every kilobyte of comments and indentation costs it.
 *
 * @module
 */

/**
 * Drops blank lines, comment-only lines and indentation from a function's
 * source. A line that starts inside a template literal is kept as it is,
 * so no string changes. Template literals are found by counting backticks,
 * so a source whose backticks are not all template delimiters (an escaped
 * backtick, one in a quoted string or a regular expression, one after a
 * `//` comment on a line of code, a block comment) is refused rather than
 * risked.
 *
 * @param source A function's source, from `toString()`.
 * @returns The same code, smaller.
 * @throws {SyntaxError} When the source has a backtick this cannot place,
 * or a block comment.
 */
export function compactSource(source: string): string {
  const kept: string[] = [];
  let inTemplate = false;
  for (const line of source.split("\n")) {
    if (!inTemplate) {
      const code = line.trimStart();
      if (code === "" || code.startsWith("//")) continue;
      refuseUnplaceableBackticks(code);
      kept.push(code);
    } else {
      kept.push(line);
    }
    for (const char of line) {
      if (char === "`") inTemplate = !inTemplate;
    }
  }
  if (inTemplate) {
    throw new SyntaxError("Cannot compact a source with an unclosed template");
  }
  return kept.join("\n");
}

function refuseUnplaceableBackticks(code: string): void {
  if (
    code.includes("/*") || code.includes("\\`") ||
    /(["'/])[^"'/`]*`[^"'/`]*\1/.test(code) || /\/\/.*`/.test(code)
  ) {
    throw new SyntaxError(
      `Cannot compact this line, whose backticks may not be template delimiters: ${code}`,
    );
  }
}
