import assert from "node:assert/strict";
import { scanGuestImports } from "./_scan_imports.ts";

async function codeOf(source: string): Promise<string> {
  const scan = await scanGuestImports(source);
  return scan.kind === "clean" ? "clean" : scan.failure.code;
}

Deno.test("scanGuestImports() passes source without imports", async () => {
  assert.equal(await codeOf("export default import.meta.url;"), "clean");
  assert.equal(
    await codeOf(
      'const text = "import x from \'fs\'"; // import("y")\nexport default text;',
    ),
    "clean",
  );
});

Deno.test("scanGuestImports() refuses import-call text where a `}` before a `/` may have hidden a call from the lexer, and only there", async () => {
  assert.equal(
    await codeOf("export const f = function () {} / import('x') / 1;"),
    "IMPORT_DYNAMIC",
  );
  assert.equal(
    await codeOf(
      'export const re = /a{2}/; export const s = "import(x)"; export const t = x.import(1);',
    ),
    "IMPORT_DYNAMIC",
  );
  assert.equal(
    await codeOf("export const re = /a{2}/; export const t = x.import(1);"),
    "clean",
  );
  assert.equal(
    await codeOf('export const s = "import(x)"; export default 1;'),
    "clean",
  );
  // Exports that load nothing, and import.meta, are not imports.
  assert.equal(
    await codeOf(
      "const r = /x{2}/;\nexport { r };\nexport default import /* c */ . meta.url;",
    ),
    "clean",
  );
  // Text that could load a module is refused, even in a string and with
  // comments between its words: the lexer may have misread real code so.
  for (
    const text of [
      'export { r } /* c */ from "./x.js"',
      'export * from "./x.js"',
      'import /* c */ x from "./x.js"',
      "import defer * as x from 'y'",
    ]
  ) {
    const source = `const r = /x{2}/;\nexport const s = ${
      JSON.stringify(text)
    };`;
    assert.equal(await codeOf(source), "GUEST_SYNTAX_ERROR", source);
  }
});

Deno.test("scanGuestImports() refuses every import before the code runs", async () => {
  const cases: [string, string][] = [
    ['import x from "/etc/hostname";', "IMPORT_FILE"],
    ['import x from "file:///etc/hostname";', "IMPORT_FILE"],
    ['import x from "../../etc/hostname";', "IMPORT_PATH_ESCAPE"],
    ['import x from "./helper.js";', "IMPORT_PATH_ESCAPE"],
    [
      'import x from "/etc/hostname" with { type: "text" };',
      "IMPORT_ATTRIBUTES",
    ],
    ['import x from "./x.bin" with { type: "bytes" };', "IMPORT_ATTRIBUTES"],
    ['import x from "data:text/javascript,export default 1";', "IMPORT_DATA"],
    ['import x from "blob:null/0000";', "IMPORT_BLOB"],
    ['import fs from "node:fs";', "IMPORT_NODE_BUILTIN"],
    ['import fs from "fs";', "IMPORT_COMPAT"],
    ['import _ from "npm:lodash";', "IMPORT_NPM"],
    ['import p from "jsr:@std/path";', "IMPORT_JSR"],
    ['import m from "https://example.com/m.js";', "IMPORT_REMOTE"],
    ['import m from "lodash";', "IMPORT_UNDECLARED"],
    ['export * from "node:os";', "IMPORT_NODE_BUILTIN"],
    ['export { x } from "./x.js";', "IMPORT_PATH_ESCAPE"],
    ['export default await import("node:fs");', "IMPORT_DYNAMIC"],
    ["const name = 'fs'; export default import(name);", "IMPORT_DYNAMIC"],
    ['export default import.source("x");', "IMPORT_DYNAMIC"],
    ['import defer * as ns from "x";', "IMPORT_UNDECLARED"],
    ['import "\\u0066s";', "IMPORT_COMPAT"],
  ];
  for (const [source, code] of cases) {
    assert.equal(await codeOf(source), code, source);
  }
});

Deno.test("scanGuestImports() names the first refused import in its message", async () => {
  const scan = await scanGuestImports(
    'import a from "node:os";\nimport b from "fs";',
  );
  assert.equal(scan.kind, "denied");
  assert.match(
    scan.kind === "denied" ? scan.failure.message : "",
    /^Cannot import "node:os" from a sandbox module: /,
  );
});

Deno.test("scanGuestImports() reports source it cannot read as unreadable", async () => {
  const scan = await scanGuestImports("export default }");
  assert.equal(scan.kind, "unreadable");
  assert.equal(
    scan.kind === "unreadable" && scan.failure.code,
    "GUEST_SYNTAX_ERROR",
  );
  assert.match(
    scan.kind === "unreadable" ? scan.failure.message : "",
    /at line 1, column \d+; fix the syntax error$/,
  );
});
