/**
 * What checking a declaration costs a run, side by side in one process:
 * `safeParseDeclaration` (the loader's check, compiled from the committed
 * JSON Schema, no zod) against `DeclarationSchema.safeParse` (zod, the
 * rule's home), over a declaration without packs, one with three packs and
 * a refused one. Rounds alternate which side goes first; the table reports
 * the median time per check over rounds, and the ratio is the median of
 * the per-round ratios.
 *
 * Run: `deno task bench declaration` or
 * `deno run -A --lock=bench/deno.lock bench/declaration_bench.ts [--rounds 21] [--checks 20000]`.
 *
 * @module
 */

import { DeclarationSchema } from "../protocol/declaration.ts";
import { safeParseDeclaration } from "../protocol/read_declaration.ts";
import { flag, loadAverage, median } from "./_measure.ts";

const ROUNDS = flag("rounds", 21);
const CHECKS = flag("checks", 20_000);
const DIGEST = "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";

const DECLARATIONS: [string, unknown, boolean][] = [
  ["no packs", { source: "export default 1;" }, true],
  ["three packs, one pinned", {
    source: "export default 1;",
    packages: ["math", "@acme/util", {
      specifier: "@acme/dates",
      packVersion: "1.2.3",
      graphDigest: DIGEST,
    }],
  }, true],
  ["refused: a bad name, a bad entry", {
    source: "export default 1;",
    packages: ["Bad", { specifier: 1 }],
  }, false],
];

type Check = (value: unknown) => { success: boolean };

/** Nanoseconds per check of `value`, over `CHECKS` checks. */
function nanosPerCheck(check: Check, value: unknown, expected: boolean) {
  const start = performance.now();
  for (let i = 0; i < CHECKS; i++) {
    if (check(value).success !== expected) throw new Error("wrong answer");
  }
  return (performance.now() - start) * 1e6 / CHECKS;
}

/** The times of `first` and then `second`, in that order. */
function measurePair(
  first: Check,
  second: Check,
  value: unknown,
  expected: boolean,
): number[] {
  const firstNanos = nanosPerCheck(first, value, expected);
  return [firstNanos, nanosPerCheck(second, value, expected)];
}

const zod: Check = (value) => DeclarationSchema.safeParse(value);

console.log(`load average before: ${await loadAverage()}\n`);
console.log(
  "| declaration | safeParseDeclaration | DeclarationSchema.safeParse (zod) | ratio |",
);
console.log("| --- | --- | --- | --- |");
for (const [label, value, expected] of DECLARATIONS) {
  const ours: number[] = [];
  const theirs: number[] = [];
  const ratios: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const [o, z] = round % 2 === 0
      ? measurePair(safeParseDeclaration, zod, value, expected)
      : measurePair(zod, safeParseDeclaration, value, expected).reverse();
    ours.push(o!);
    theirs.push(z!);
    ratios.push(o! / z!);
  }
  console.log(
    `| ${label} | ${median(ours).toFixed(0)} ns | ${
      median(theirs).toFixed(0)
    } ns | ${median(ratios).toFixed(2)}× |`,
  );
}
console.log(`\nload average after: ${await loadAverage()}`);
