import assert from "node:assert/strict";
import { checkBundle } from "./_pack_checks.ts";

/** The notes on the one entry of a bundle of one module. */
async function notesOf(source: string): Promise<string[]> {
  const [check] = await checkBundle(
    new Map([["index.js", source]]),
    new Map([[".", "index.js"]]),
  );
  return check!.warnings;
}

Deno.test("checkBundle() notes the first eval() in code among comments that each hold one, before, between and after it", async () => {
  const source = [
    "/* eval(a) */ export const x = 1; // eval(b)",
    "/** eval(c) */",
    "export const y = () => eval(d); /* eval(e) */",
    "// eval(f)",
    "",
  ].join("\n");
  const notes = await notesOf(source);
  assert.equal(notes.length, 1);
  assert.match(notes[0]!, /^\.\/index\.js line 3 calls eval/);
  assert.deepEqual(await notesOf("/* eval(a) */ // eval(b)\n"), []);
});

Deno.test("checkBundle() passes over 350,000 comments that each hold a match in one pass, and notes the read in code after them", async () => {
  // Each match was tried against every comment: a module of 80,000 such
  // comments held the packer 10 s, this one minutes.
  const comments = "/*eval(x)*/\n".repeat(350_000);
  const notes = await notesOf(
    `${comments}export const run = (t) => eval(t);\n`,
  );
  assert.equal(notes.length, 1);
  assert.match(notes[0]!, /^\.\/index\.js line 350001 calls eval/);
});
