import assert from "node:assert/strict";
import { initScanner, scanImports, type ScanResult } from "./_scan.ts";

await initScanner();

function failureOf(result: ScanResult): { code: string; detail: string } {
  assert.equal(result.ok, false, "expected the scan to fail");
  return result as { code: string; detail: string };
}

Deno.test("scanImports() lists static imports and export-from specifiers once, in order", () => {
  const result = scanImports([
    'import { a } from "./a.js";',
    'export * from "./b.js";',
    'export { c } from "./c.js";',
    'import "./a.js";',
    "import * as d from './d.js';",
    "export const meta = import.meta.url;",
  ].join("\n"));
  assert.deepEqual(result, {
    ok: true,
    specifiers: ["./a.js", "./b.js", "./c.js", "./d.js"],
  });
});

Deno.test("scanImports() accepts a module without imports", () => {
  assert.deepEqual(scanImports("export default 42;\n"), {
    ok: true,
    specifiers: [],
  });
});

Deno.test("scanImports() rejects import() with a literal or computed argument", () => {
  for (const call of ['import("./a.js")', "import(name)", "import.source(x)"]) {
    const failure = failureOf(scanImports(`const x = 1;\nawait ${call};`));
    assert.equal(failure.code, "PACK_DYNAMIC_IMPORT");
    assert.equal(failure.detail, "uses import() on line 2");
  }
});

Deno.test("scanImports() rejects require calls, even spaced out", () => {
  for (const call of ['require("fs")', "require ('fs')", "module.require(x)"]) {
    const failure = failureOf(scanImports(`\n\nconst fs = ${call};`));
    assert.equal(failure.code, "PACK_DYNAMIC_IMPORT");
    assert.equal(failure.detail, "calls require on line 3");
  }
});

Deno.test("scanImports() leaves names that merely contain require alone", () => {
  const result = scanImports(
    "export const requirements = 1; export function unrequire() {}",
  );
  assert.deepEqual(result, { ok: true, specifiers: [] });
});

Deno.test("scanImports() rejects import attributes", () => {
  const failure = failureOf(
    scanImports('import data from "./d.js" with { type: "json" };'),
  );
  assert.equal(failure.code, "IMPORT_ATTRIBUTES");
});

Deno.test("scanImports() rejects source and defer phase imports", () => {
  for (
    const source of [
      'import source wasm from "./m.js";',
      'import defer * as lazy from "./m.js";',
    ]
  ) {
    assert.equal(failureOf(scanImports(source)).code, "PACK_MODULE_SYNTAX");
  }
});

Deno.test("scanImports() rejects sources the lexer cannot read", () => {
  const failure = failureOf(
    scanImports('export const a = 1;\nimport x from "./a.js'),
  );
  assert.equal(failure.code, "PACK_MODULE_SYNTAX");
  assert.match(failure.detail, /^cannot be read as an ES module/);
});
