/**
 * Prints the error-code table of `docs/errors.md` from the registry, so the
 * guide cannot drift from `ERROR_CODES`: `deno run tools/error_table.ts`.
 *
 * @module
 */

import { ERROR_CODES } from "../protocol/mod.ts";

/** One Markdown table row per code, keyed by the code. */
export function errorTableRows(): Map<string, string> {
  return new Map(
    Object.entries(ERROR_CODES).map((
      [code, { meaning, remedy, where, httpStatuses }],
    ) => [
      code,
      `| \`${code}\` | ${meaning} | ${remedy} | ${where} | ${
        httpStatuses.join(", ")
      } |`,
    ]),
  );
}

/** Renders the registry as a Markdown table, one row per code. */
export function renderErrorTable(): string {
  return [
    "| code | meaning | what to do | where it arises | HTTP |",
    "| --- | --- | --- | --- | --- |",
    ...errorTableRows().values(),
  ].join("\n");
}

if (import.meta.main) console.log(renderErrorTable());
