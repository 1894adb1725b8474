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

Deno.test("scanGuestImports() parses source where a `}` before a `/` may have hidden an import from the lexer", async () => {
  // Imports the lexer misses after a function body: a parser finds them.
  const hidden: [string, string][] = [
    ["export const f = function () {} / import('x') / 1;", "IMPORT_DYNAMIC"],
    [
      'export const f = function () {} / 1; import "node:fs"; 1 / 2;',
      "IMPORT_NODE_BUILTIN",
    ],
    // The lexer cannot read this one at all.
    [
      'export const c = class {} / 1; export * from "./x.js"; 1 / 2;',
      "IMPORT_PATH_ESCAPE",
    ],
    [
      'export const f = function () {} / 1; import x from "./x.json" with { type: "json" }; 1 / 2;',
      "IMPORT_ATTRIBUTES",
    ],
  ];
  for (const [source, code] of hidden) {
    assert.equal(await codeOf(source), code, source);
  }
  // Text in comments and strings is not an import, nor is a property.
  for (
    const text of [
      'export const s = "import(x)"; export const t = x.import(1);',
      "export const s = \"export { r } from './x.js'\";",
      '/** Loads it with import("selderee") when asked. */ export const u = 1;',
      "// import x from 'y'\nexport const v = 1;",
    ]
  ) {
    const source = `const r = /a{2}/;\nfunction f() {}\n${text}`;
    assert.equal(await codeOf(source), "clean", source);
  }
});

Deno.test("scanGuestImports() refuses import text where a `}` before a `/` may have misled the lexer and the parser cannot read the source", async () => {
  // `x |>` is syntax the parser does not know.
  const unknown = "export const p = 1 |> 2;";
  assert.equal(
    await codeOf(`const r = /a{2}/; ${unknown} export const s = "import(x)";`),
    "IMPORT_DYNAMIC",
  );
  assert.equal(
    await codeOf(
      `const r = /x{2}/;\n${unknown}\nexport const s = "import y from 'z'";`,
    ),
    "GUEST_SYNTAX_ERROR",
  );
  // Without import text there is nothing to refuse.
  assert.equal(await codeOf(`const r = /a{2}/; ${unknown}`), "clean");
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
    ['import x from "lodash" assert { type: "json" };', "IMPORT_ATTRIBUTES"],
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

Deno.test("scanGuestImports() refuses source nested too deep for the lexer and the parser, without failing itself", async () => {
  for (const [open, close] of [["[", "]"], ["(", ")"]]) {
    const source =
      `const r = /a{2}/;\nexport const s = "import(x)";\nexport const d = ${
        open!.repeat(100_000)
      }1${close!.repeat(100_000)};`;
    const scan = await scanGuestImports(source);
    assert.notEqual(scan.kind, "clean");
    assert.equal(
      scan.kind !== "clean" && scan.failure.code,
      "GUEST_SYNTAX_ERROR",
    );
  }
});

Deno.test("scanGuestImports() finds imports behind Unicode spaces and line separators, and passes a line separator in a string", async () => {
  const cases: [string, string][] = [
    [
      '\uFEFFimport x from "data:text/javascript,export default 1";',
      "IMPORT_DATA",
    ],
    ['export default 1;\u3000import("node:fs");', "IMPORT_DYNAMIC"],
    ['// note\u2028import x from "node:fs";', "IMPORT_NODE_BUILTIN"],
    ['// note\u2029import("node:fs");', "IMPORT_DYNAMIC"],
    // The lexer cannot read these; the parser can, and finds what they import.
    ['export const s = "a\u2028b";', "clean"],
    ['export const s = "a\u2029b";\nimport x from "fs";', "IMPORT_COMPAT"],
  ];
  for (const [source, code] of cases) {
    assert.equal(await codeOf(source), code, JSON.stringify(source));
  }
});

Deno.test("scanGuestImports() quotes a refused specifier with bidi and separator characters escaped", async () => {
  const hidden = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
  // Raw in the string literal (an escape the specifier keeps as written is
  // refused for its backslash), and none the classifier refuses itself.
  const raw = "x\u202etxt\u2028y\u2066";
  const escaped = String.raw`x\u202etxt\u2028y\u2066`;
  for (const prefix of ["./", "greet/"]) {
    const scan = await scanGuestImports(`import "${prefix}${raw}";`);
    assert.ok(scan.kind === "denied");
    const { message } = scan.failure;
    assert.ok(!hidden.test(message), message);
    assert.ok(message.includes(`"${prefix}${escaped}"`), message);
  }
});
