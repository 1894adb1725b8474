/**
 * Writes `dist/cases.json`, the name and expectation of every fixture case,
 * `dist/snippets.json`, the name and expected outcome (as
 * `expectedSnippetOutcome` projects it) of every shared snippet, and
 * `dist/hostile_cases.json`, the name of every hostile guest with the
 * answers each browser runner may give, and
 * `dist/malformed_declarations.json`, the name, exact message and most reads
 * of every malformed declaration (the declarations themselves the page
 * makes with the bundled table's own `make()`, as most cannot cross as
 * data), all in table order, so the
 * Playwright specs (which run in Node and cannot import the tables'
 * TypeScript) declare one test per case and compare with the same expected
 * data as `deno test`. `deno task bundle` runs it.
 *
 * @module
 */

import { FIXTURE_CASES } from "../fixtures/cases.ts";
import { expectationsOf, HOSTILE_GUESTS } from "../fixtures/hostile_guests.ts";
import { malformedDeclarations } from "../fixtures/malformed_declarations.ts";
import { expectedSnippetOutcome } from "../fixtures/run_snippets.ts";
import { SNIPPETS } from "../fixtures/snippets.ts";

const DIST = new URL("../dist/", import.meta.url);

async function write(name: string, data: unknown[]): Promise<void> {
  await Deno.mkdir(DIST, { recursive: true });
  await Deno.writeTextFile(
    new URL(name, DIST),
    JSON.stringify(data, null, 2) + "\n",
  );
  console.log(`Wrote ${data.length} cases to dist/${name}`);
}

await write(
  "cases.json",
  FIXTURE_CASES.map(({ name, expect }) => ({ name, expect })),
);
await write(
  "snippets.json",
  SNIPPETS.map((snippet) => ({
    name: snippet.name,
    expect: expectedSnippetOutcome(snippet),
  })),
);
await write(
  "hostile_cases.json",
  HOSTILE_GUESTS.map((guest) => ({
    name: guest.name,
    loader: expectationsOf(guest, "browser:loader"),
    pool: expectationsOf(guest, "browser:pool"),
  })),
);
await write(
  "malformed_declarations.json",
  malformedDeclarations().map(({ name, message, reads }) => ({
    name,
    message,
    reads,
  })),
);
