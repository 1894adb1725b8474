/**
 * Prints the error-code table of `docs/errors.md` from the registry, so the
 * guide cannot drift from `ERROR_CODES`: `deno run tools/error_table.ts`.
 *
 * @module
 */

import { ERROR_CODES } from "../protocol/mod.ts";

/** Renders the registry as a Markdown table, one row per code. */
export function renderErrorTable(): string {
  const rows = Object.entries(ERROR_CODES).map(([code, { meaning, remedy }]) =>
    `| \`${code}\` | ${meaning} | ${remedy} |`
  );
  return ["| code | meaning | what to do |", "| --- | --- | --- |", ...rows]
    .join("\n");
}

if (import.meta.main) console.log(renderErrorTable());
