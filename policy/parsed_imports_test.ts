import assert from "node:assert/strict";
import { firstParsedImport } from "./parsed_imports.ts";

Deno.test("firstParsedImport() finds the first import in source order, of every form", async () => {
  const cases: [string, unknown][] = [
    ['export const f = function () {} / 1; import "a"; 1 / 2;', {
      kind: "static",
      specifier: "a",
    }],
    ['export * from "b";', { kind: "static", specifier: "b" }],
    ['export { x } from "c";', { kind: "static", specifier: "c" }],
    ["const f = function () {} / import('d') / 1;", {
      kind: "refused",
      refusal: { kind: "dynamic", specifier: "d", line: 1 },
    }],
    ["\nconst n = 'e';\nexport default import(n);", {
      kind: "refused",
      refusal: { kind: "dynamic", specifier: undefined, line: 3 },
    }],
    ['import j from "f.json" with { type: "json" };', {
      kind: "refused",
      refusal: { kind: "attributes", specifier: "f.json", line: 1 },
    }],
    // The tree is walked last node first: the answer is still the first
    // in the source.
    ['import "early";\nconst g = () => import("late");', {
      kind: "static",
      specifier: "early",
    }],
  ];
  for (const [source, expected] of cases) {
    assert.deepEqual(await firstParsedImport(source), expected, source);
  }
});

Deno.test("firstParsedImport() passes import text in comments, strings, templates and regular expressions", async () => {
  const source = [
    "const r = /import('x')/;",
    "const f = function () {} / 2; // import('y')",
    '/* export * from "z" */ const s = "import a from \'b\'";',
    "const t = `import(${1})`;",
    "export default [r, f, s, t, import.meta.url, { import: 1 }.import];",
  ].join("\n");
  assert.deepEqual(await firstParsedImport(source), { kind: "none" });
});

Deno.test("firstParsedImport() reports source it cannot read, without failing itself", async () => {
  for (
    const source of [
      "export default 1 |> f;",
      "import defer * as ns from 'x';",
      `export default ${"[".repeat(100_000)}${"]".repeat(100_000)};`,
    ]
  ) {
    assert.deepEqual(
      await firstParsedImport(source),
      { kind: "unparsable" },
      source.slice(0, 40),
    );
  }
});
