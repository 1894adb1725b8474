import assert from "node:assert/strict";
import { scanPackSource } from "./scan_pack.ts";
import { packScanFailure } from "./scan_module.ts";

const SEPARATORS = ["\u2028", "\u2029"];

Deno.test("scanPackSource() reads the imports of a module whose strings hold U+2028 or U+2029, which the lexer cannot read past", async () => {
  for (const separator of SEPARATORS) {
    const source = [
      'import { a } from "./a.js";',
      `export const s = "x${separator}y", t = 'z${separator}';`,
      'export * from "./b.js";',
    ].join("\r\n");
    assert.deepEqual(await scanPackSource(source), {
      readable: true,
      specifiers: ["./a.js", "./b.js"],
      refusal: null,
    });
  }
  // The parser's reading stands where the lexer would misread a `/`.
  const hidden =
    'export const s = "a\u2028b", f = function () {} / 1; import "./x.js"; // "';
  assert.deepEqual(await scanPackSource(hidden), {
    readable: true,
    specifiers: ["./x.js"],
    refusal: null,
  });
});

Deno.test("scanPackSource() still refuses what pack mode refuses in a module whose strings hold a line separator", async () => {
  const string = 'export const s = "a\u2028b";\n';
  const cases: [string, string, string][] = [
    // A line comment ends at U+2028, as the engines read it.
    [
      `${string}// note\u2028import("./x.js");`,
      "PACK_DYNAMIC_IMPORT",
      "uses import() on line 2",
    ],
    [
      `${string}const x = require("./x.js");`,
      "PACK_DYNAMIC_IMPORT",
      "calls require on line 2",
    ],
    [
      `${string}import j from "./j.js" with { type: "json" };`,
      "IMPORT_ATTRIBUTES",
      "imports with attributes (with { ... }) on line 2",
    ],
    [
      `${string}export const broken = ;`,
      "PACK_MODULE_SYNTAX",
      "is not a valid ES module: Unexpected token at line 2, column 23",
    ],
  ];
  for (const [source, code, detail] of cases) {
    const failure = packScanFailure(await scanPackSource(source), source);
    assert.deepEqual(failure, { code, detail }, source);
  }
});
