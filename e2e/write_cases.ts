/**
 * Writes `dist/cases.json`: the name and expectation of every fixture case,
 * in table order, so the Playwright spec (which runs in Node and cannot
 * import the table's TypeScript) declares one test per case and compares
 * with the same expected data as `deno test`. `deno task bundle` runs it.
 *
 * @module
 */

import { FIXTURE_CASES } from "../fixtures/cases.ts";

const out = new URL("../dist/cases.json", import.meta.url);
const cases = FIXTURE_CASES.map(({ name, expect }) => ({ name, expect }));
await Deno.mkdir(new URL(".", out), { recursive: true });
await Deno.writeTextFile(out, JSON.stringify(cases, null, 2) + "\n");
console.log(`Wrote ${cases.length} fixture cases to dist/cases.json`);
