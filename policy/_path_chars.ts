// This module is browser compatible.

const ENCODED_PATH_CHAR = /%(?:2e|2f|5c)/i;

/**
 * Whether a specifier hides a dot, slash or backslash in percent-encoding
 * (`%2e`, `%2f`, `%5c`, any case). Relative imports that do are refused
 * everywhere: by `classifySpecifier` and by `resolvePackImport`.
 *
 * @param text The specifier as written.
 * @returns `true` when it contains one.
 */
export function hasEncodedPathChar(text: string): boolean {
  return ENCODED_PATH_CHAR.test(text);
}
